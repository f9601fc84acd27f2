"""The ``out=`` argument of ``jitgrad.*`` functions, as torch's: the result is computed as usual,
then written into ``out`` (cast to its dtype where torch allows it, resized with torch's warning
when its shape differs) and ``out`` is returned. Autograd does not record through ``out=``: an
operand or ``out`` that requires grad is an error while grad mode is on, as in torch.

Tensor methods and ``nn.functional`` take no ``out=`` (torch's do not either); neither do the
``jitgrad.*`` functions in ``NO_OUT`` (views, constructors from data, RNG state, predicates).
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any

from .. import _torch_function as _tf
from . import registry
from .arg_errors import invalid_combination
from .inplace import _write
from .out_dtype import BEFORE_CALL, DTYPE_FROM_OUT, check_out_dtypes
from ..dtypes import takes_python_types
from .surface import generated_op, op_function
from .surface24 import NO_OUT as _NO_OUT24

# jitgrad.* functions that torch declares without ``out=``
NO_OUT = frozenset({
    "allclose", "argwhere", "as_tensor", "asarray", "atleast_1d", "atleast_2d", "atleast_3d",
    "bartlett_window", "bincount", "blackman_window", "block_diag", "broadcast_shapes",
    "broadcast_tensors", "cartesian_prod", "cdist", "chunk", "clone", "conj", "corrcoef",
    "cosine_similarity", "count_nonzero", "cov", "cumulative_trapezoid", "det", "diag_embed",
    "diagonal", "einsum", "empty_like", "equal", "expand", "fake_quantize_per_channel_affine",
    "fake_quantize_per_tensor_affine", "flatten", "flip", "fliplr", "flipud",
    "from_dlpack", "from_numpy", "full_like", "get_rng_state", "gradient", "hamming_window",
    "hann_window", "imag", "index_fill", "index_put", "initial_seed", "is_tensor", "isclose",
    "isfinite", "isinf", "isnan", "istft", "kaiser_window", "logdet", "manual_seed", "masked_fill",
    "matrix_exp", "meshgrid", "moveaxis", "movedim", "narrow", "numel", "ones_like",
    "pairwise_distance", "permute", "pinverse", "positive", "rand_like", "randn_like", "ravel",
    "real", "relu", "repeat_interleave", "reshape", "rms_norm", "roll", "rot90", "seed", "select",
    "set_rng_state", "split", "squeeze", "std_mean", "stft", "t", "tensor", "tile", "trace",
    "transpose", "trapezoid", "trapz", "unbind", "unique", "unique_consecutive", "unsqueeze",
    "vander", "var_mean", "view", "zeros_like",
}) | _NO_OUT24
# factories make their values in ``out``'s dtype and on its device, unless told otherwise
FACTORIES = frozenset({"arange", "empty", "eye", "full", "linspace", "normal", "ones", "rand",
                       "randint", "randn", "randperm", "zeros"})

# functions whose out= overload takes an argument their others do not: that argument, its
# position, and torch's signatures for the error (None: torch's "missing ... "dim"")
_OUT_OVERLOAD = {
    "sum": ("dim", 1, ("Tensor input, *, torch.dtype dtype = None",
                       "Tensor input, tuple of ints dim, bool keepdim = False, *, "
                       "torch.dtype dtype = None, Tensor out = None")),
    "prod": ("dim", 1, ("Tensor input, *, torch.dtype dtype = None",
                        "Tensor input, int dim, bool keepdim = False, *, torch.dtype dtype = "
                        "None, Tensor out = None")),
    "argsort": ("stable", None, ("Tensor input, *, bool stable, int dim = -1, bool descending = "
                                 "False, Tensor out = None",
                                 "Tensor input, int dim = -1, bool descending = False")),
    "median": ("dim", 1, None), "nanmedian": ("dim", 1, None), "logsumexp": ("dim", 1, None),
}


def _check_out_overload(fname: str, args: tuple, kwargs: dict, out: Any) -> None:
    needed, position, signatures = _OUT_OVERLOAD[fname]
    if kwargs.get(needed) is not None or position is not None and len(args) > position:
        return
    if signatures is None:
        raise TypeError(f'{fname}() missing 1 required positional arguments: "{needed}"')
    raise invalid_combination(fname, args, {**kwargs, "out": out}, signatures)


_RESIZED = ("An output with one or more elements was resized since it had shape {}, which does "
            "not match the required output shape {}. This behavior is deprecated, and in a "
            "future PyTorch release outputs will not be resized unless they have zero elements. "
            "You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
            "with t.resize_(0).")


def write_out(fname: str, out: Any, result: Any, _checked: bool = False) -> Any:
    """Writes ``result`` (a tensor, or a tuple of them) into ``out`` and returns ``out``."""
    if isinstance(result, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise TypeError(f"{fname}(): argument 'out' must be tuple of {len(result)} Tensors, "
                            f"not {type(out).__name__}")
        check_out_dtypes(fname, list(out), list(result), single=False)
        written = [write_out(fname, o, r, True) for o, r in zip(out, result)]
        return type(result)(*written) if hasattr(result, "_fields") else tuple(written)
    from ..tensor import Tensor  # (the tensor module loads the ops first)

    if not isinstance(out, Tensor):
        raise TypeError(f"{fname}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if not isinstance(result, Tensor):
        raise TypeError(f"{fname}() got an unexpected keyword argument 'out'")
    if registry.state.grad_enabled and (result.requires_grad or out.requires_grad):
        raise RuntimeError(f"{fname}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if out.device != result.device:
        raise RuntimeError(f"Expected out tensor to have device {result.device}, but got "
                           f"{out.device} instead")
    if not _checked:
        check_out_dtypes(fname, [out], [result], single=True)
    if tuple(out.shape) != tuple(result.shape):
        _resize(out, result)
    _write(out, result.detach())
    return out


def _resize(out: Any, result: Any) -> None:
    if out._base is not None:  # torch resizes inside the base's storage; a copy here would not
        raise RuntimeError(f"out= got a view of shape {list(out.shape)} where the result has "
                           f"shape {list(result.shape)}: pass an out tensor of the result's "
                           "shape, or one that is not a view")
    if out.numel() != 0:
        warnings.warn(_RESIZED.format(list(out.shape), list(result.shape)), UserWarning,
                      stacklevel=4)
    # new memory of the result's shape; _write fills it (and checks the dtype) next
    out._data = result.detach().to(out.dtype).clone()._data


def with_out(fname: str, fn: Callable) -> Callable:
    """``fn`` with torch's keyword-only ``out=`` argument (see the module docstring)."""
    takes_dtype = "dtype" in inspect.signature(fn).parameters
    fn = takes_python_types(fn)
    factory = fname in FACTORIES
    dtype_from_out = takes_dtype and fname in DTYPE_FROM_OUT

    @functools.wraps(fn)
    def call(*args: Any, out: Any = None, **kwargs: Any) -> Any:
        if out is None:
            try:
                return fn(*args, **kwargs)
            except Exception:  # (a Tensor-like object met before the protocol was in use)
                if registry.torch_function_live or not _tf.tensor_like_in(args, kwargs):
                    raise
            return _tf.retry_public(fname, args, kwargs)
        if fname in _OUT_OVERLOAD:
            _check_out_overload(fname, args, kwargs, out)
        if fname in BEFORE_CALL:
            BEFORE_CALL[fname](args, out)
        if factory and takes_dtype and hasattr(out, "dtype"):
            kwargs.setdefault("dtype", out.dtype)
            kwargs.setdefault("device", out.device)
        elif dtype_from_out and hasattr(out, "dtype") and kwargs.get("dtype") is None:
            kwargs["dtype"] = out.dtype
        return write_out(fname, out, fn(*args, **kwargs))
    return call


_VARIANTS: dict[Callable, Callable] = {}


def out_variant(name: str, fn: Callable) -> Callable:
    """``jitgrad.<name>``: the declared function ``fn`` with ``out=`` unless torch's has none
    (one object per function, shared by ``jitgrad`` and ``jitgrad.ops``)."""
    if name in NO_OUT:
        return fn
    made = _VARIANTS.get(fn)
    if made is None:
        op = generated_op(fn)
        made = op_function(op, write_out) if op is not None else with_out(name, fn)
        _VARIANTS[fn] = made
    return made
