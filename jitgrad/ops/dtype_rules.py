"""The shape and dtype rules of pointwise ops: torch's broadcasting and its result-dtype
categories (``SAME``, ``FLOAT``, ``BOOL``). Below the registry, which re-exports them."""

from __future__ import annotations

from typing import Any

from .. import dtypes
from .op_fields import BOOL, SAME


def broadcast_shapes(*shapes: tuple) -> tuple:
    """NumPy/torch broadcasting; raises torch's RuntimeError text on a mismatch (each shape
    against the broadcast of those before it, trailing dims first, as torch's ``infer_size``)."""
    out = tuple(shapes[0]) if shapes else ()
    for s in shapes[1:]:
        ndim = max(len(out), len(s))
        merged = [1] * ndim
        for k in range(ndim - 1, -1, -1):
            a = out[k - ndim + len(out)] if k - ndim + len(out) >= 0 else 1
            b = s[k - ndim + len(s)] if k - ndim + len(s) >= 0 else 1
            if a != b and a != 1 and b != 1:
                raise RuntimeError(
                    f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
                    f"non-singleton dimension {k}")
            merged[k] = b if a == 1 else a
        out = tuple(merged)
    return out


def category_dtype(promote: str, dt: dtypes.dtype) -> dtypes.dtype | None:
    """The result dtype of a pointwise op of category ``promote`` computing in ``dt``, its
    operands' promoted dtype: ``dt`` itself (SAME; FLOAT on a floating or complex dtype), bool
    (BOOL), or None where the op computes in another dtype (FLOAT on integers and bool: the
    default float dtype). The one rule; ``compute_dtype`` and the dispatcher's fast paths ask
    it."""
    if promote == SAME:
        return dt
    if promote == BOOL:
        return dtypes.bool
    return dt if dt.is_floating_point or dt.is_complex else None


def compute_dtype(op: Any, args: tuple) -> tuple[dtypes.dtype, dtypes.dtype]:
    """(dtype the op computes in, dtype of its result) for a pointwise op, by torch's rules."""
    promoted = dtypes.result_type(*(a for i, a in enumerate(args) if i not in op.nonpromoted))
    out = category_dtype(op.promote, promoted)
    if out is None:  # FLOAT on integers: computed in the default float dtype
        promoted = out = dtypes.get_default_dtype()
    return promoted, out


def scalar_type_name(dt: dtypes.dtype) -> str:
    """torch's C++ name of ``dt`` in its error texts (``Float``, ``Long``, ``ComplexDouble``)."""
    return dt._legacy.replace("Tensor", "")


def not_implemented_for(name: str, *kinds: str) -> Any:
    """A pointwise meta raising torch's NotImplementedError for dtypes of the given kinds
    ("int": integers and bool, "float": floating and complex, "complex")."""
    def meta(*args: Any, **params: Any) -> tuple:
        shape = broadcast_shapes(*(a.shape for a in args if hasattr(a, "shape")))
        dt = dtypes.result_type(*args)
        bad = (("int" in kinds and not (dt.is_floating_point or dt.is_complex)) or
               ("float" in kinds and (dt.is_floating_point or dt.is_complex)) or
               ("complex" in kinds and dt.is_complex))
        if bad:
            raise NotImplementedError(
                f'"{name}_cpu" not implemented for \'{scalar_type_name(dt)}\'')
        return shape, dt
    return meta
