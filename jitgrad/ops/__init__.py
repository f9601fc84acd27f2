"""The ops: every primitive is one ``defop`` (``registry``), and the public functions
(``jitgrad.exp``, ``jitgrad.ops.exp``), Tensor methods and in-place variants are generated from
the declarations next to them (``surface``)."""

from __future__ import annotations

# Importing the op modules registers their ops and public declarations.
from . import (aten_extras, aten_namespace, arranging, calculus, complex_views, composite, creation,
               custom_namespaces, distances, einsum, elementwise, elementwise2, elementwise3,
               extras, fake_quantize, fft_ops, functions, indexing, inplace, linalg, linalg2,
               linalg_decomp, linalg_legacy, linalg_more, linalg_more2, linalg_pinv, logcumsumexp,
               movement, nn_ops, norms, ranges, reduce, reductions2, reductions3, rounding, scan,
               selection, shape_helpers, sharing, sorting, special_fns, splitting, special24,
               special24_gamma, special24_poly, spectral, storage, surface24, surface24_info,
               surface24_math, surface24_more, torch_extras, torch_extras2, torch_extras3, unique)
from .out_arg import out_variant
from .registry import OPS, OpDef, Public, apply, defop
from .surface import install_namespace, public

aten = aten_namespace.ATEN  # (torch.ops.aten)

__all__ = ["OPS", "OpDef", "Public", "apply", "aten", "defop", "public"]

# jitgrad.ops.exp, ... (the random functions join at jitgrad import)
install_namespace(globals(), variant=out_variant)


def __getattr__(name: str):
    """``jitgrad.ops.<namespace>``: the custom operators of ``jitgrad.library.custom_op``
    (as ``torch.ops.mylib``; consulted only for names that are not this package's own)."""
    ns = custom_namespaces.NAMESPACES.get(name)
    if ns is None:
        raise AttributeError(f"module 'jitgrad.ops' has no attribute {name!r}")
    return ns


def install(namespace: dict, tensor_type: type) -> None:
    """Fills ``jitgrad``'s namespace and the Tensor class from the declarations."""
    from . import numpy_compat
    from .surface import install_tensor

    install_namespace(namespace, variant=out_variant)
    install_namespace(globals(), variant=out_variant)
    aten_namespace.install(namespace)
    install_tensor(tensor_type, inplace.inplace)
    functions.install_operators(tensor_type)
    surface24_more.install(namespace, tensor_type)
    surface24_info.install(namespace, tensor_type)
    storage.install(namespace, tensor_type)
    surface24.install(namespace, tensor_type)  # (aliases and torch.<name>_ of the rest)
    numpy_compat.install(namespace, tensor_type)  # (last: axis=/keepdims= on all of them)
