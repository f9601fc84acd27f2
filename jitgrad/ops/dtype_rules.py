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
                f'"{name}_cpu" not implemented for \'{dt._scalar_name}\'')
        return shape, dt
    return meta


# The ops torch runs on its limited-support unsigned dtypes (uint16/32/64) on the CPU: copies,
# casts and views, ``==``/``!=``, ``*``, bitwise and/or/xor, the reductions that accumulate in
# int64, sorting, unique, and the gathers and movements of whole elements. Every other op whose
# computation would be in one of them refuses it with torch's NotImplementedError.
_LIMITED_OK = frozenset((
    "mul", "eq", "ne", "bitwise_and", "bitwise_or", "bitwise_xor", "isnan", "isinf",
    "isfinite", "where", "to_copy", "clone", "clone_contiguous", "clone_channels_last",
    "detach", "conj", "real", "sum", "sum_dim", "prod", "prod_dim", "nansum", "cumsum",
    "cumprod", "copy_", "fill_", "fill_tensor_", "zero_", "sort", "argsort", "unique",
    "unique_consecutive", "unique_dim", "index_select", "repeat", "roll", "diagonal",
    "diagonal_copy", "diag_embed", "flip", "to_device", "copy_slices_view"))
# torch's kernel names in its errors, where they are not ``<op>_cpu``
_LIMITED_KERNELS = {
    "add": "add_stub", "add_alpha": "add_stub", "sub": "add_stub", "sub_alpha": "add_stub",
    "rsub": "add_stub", "max_all": "max_all", "min_all": "min_all", "max_dim": "max_cpu",
    "min_dim": "min_cpu", "amax": "max_values_cpu", "amin": "min_values_cpu",
    "div_floor": "div_floor_cpu", "floor_divide": "div_floor_cpu", "div_trunc": "div_trunc_cpu",
    "remainder_scalar": "remainder_cpu", "pow": "pow", "pow_scalar": "pow",
    "gather": "scatter_gather_tensor_cpu", "scatter": "scatter_gather_tensor_cpu",
    "scatter_add": "scatter_gather_tensor_cpu", "scatter_value": "scatter_gather_tensor_cpu",
    "masked_fill": "masked_fill", "masked_fill_tensor": "masked_fill",
    "masked_select": "masked_select", "index_put": "index_put", "clamp": "clamp_scalar_cpu",
    "clamp_min": "clamp_scalar_cpu", "clamp_max": "clamp_scalar_cpu",
    "nonzero": "nonzero_count_cpu", "isin": "isin_default_cpu", "tril": "tril",
    "triu": "triu", "mm": "addmm_impl_cpu_", "addmm": "addmm_impl_cpu_", "bmm": "bmm",
    "mv": "addmm_impl_cpu_", "dot": "dot"}


def check_limited_uint(op: Any, args: tuple) -> None:
    """Raises torch's error when ``op`` would compute in uint16, uint32 or uint64 and torch has
    no kernel for that (see ``_LIMITED_OK``); a mix of one with another non-floating dtype
    raises torch's promotion error (from ``promote_types``)."""
    limited = None
    for a in args:
        dt = getattr(a, "_dtype", None)
        if dt is not None and dt in dtypes.LIMITED_UINTS:
            limited = dt
            break
    if limited is None or op.name in _LIMITED_OK or op.kind == "movement" and \
            op.name != "index_put":
        return
    if op.kind == "pointwise":
        work = compute_dtype(op, args)[0]  # (a promotion error for a mix of dtypes)
        if work not in dtypes.LIMITED_UINTS:
            return  # computed in a floating dtype: x / 2, x + 1.5, sin(x)
        limited = work
    if op.name in ("mean", "mean_dim"):
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                           "floating point or complex dtype. Got: "
                           f"{limited._scalar_name}")
    kernel = _LIMITED_KERNELS.get(op.name, f"{op.name}_cpu")
    raise NotImplementedError(f'"{kernel}" not implemented for \'{limited._scalar_name}\'')


def _kinds_of(kind: str) -> tuple:
    """The dtypes of one refusal kind of ``refuse_dtypes``."""
    if kind == "complex":
        return tuple(d for d in dtypes.ALL if d.is_complex)
    if kind == "bool":
        return (dtypes.bool,)
    if kind == "integer":  # the integer dtypes, bool not among them
        return tuple(d for d in dtypes.ALL if not (d.is_floating_point or d.is_complex)
                     and d is not dtypes.bool)
    if kind == "half":
        return (dtypes.float16, dtypes.bfloat16)
    if kind in ("float16", "bfloat16"):
        return (getattr(dtypes, kind),)
    raise ValueError(f"unknown dtype kind {kind!r}")


def refuse_dtypes(operands: tuple | None = None, **kinds: Any) -> Any:
    """An op's ``check_operands``: torch's error for the dtypes its kernel is not built for.

    Each keyword is a kind of dtype (``complex``, ``bool``, ``integer`` (bool not among them),
    ``half`` (float16 and bfloat16), ``float16``, ``bfloat16``) and says what torch raises when
    the operands' common dtype is of that kind: a kernel name (``"lt_cpu"`` gives
    ``NotImplementedError: "lt_cpu" not implemented for 'ComplexFloat'``) or an
    ``(exception class, text)`` pair (``{}`` in the text: the dtype's C++ name, ``Long``).
    ``operands``: the positions whose dtype counts (default: all of them, promoted as torch
    does). The returned ``check(args)`` also serves the composite functions that are no op:
    ``check((input,))`` at their top.
    """
    errors: dict = {}
    for kind, error in kinds.items():
        for dt in _kinds_of(kind):
            errors.setdefault(dt, error)
    refused_types = {complex} if any(d.is_complex for d in errors) else set()
    if dtypes.bool in errors:
        refused_types.add(bool)

    def check(args: tuple) -> None:
        if operands is not None:
            args = tuple(args[i] for i in operands if i < len(args))
        for a in args:  # (fast path: no operand of a refused dtype, so neither is their mix)
            if getattr(a, "dtype", None) in errors or type(a) in refused_types:
                break
        else:
            return
        dt = dtypes.result_type(*(a for a in args if hasattr(a, "dtype") or
                                  type(a) in (bool, int, float, complex)))
        error = errors.get(dt)
        if error is None:
            return
        if isinstance(error, str):
            raise NotImplementedError(
                f'"{error}" not implemented for \'{dt._scalar_name}\'')
        cls, text = error
        raise cls(text.format(dt._scalar_name))
    return check


def refuse_bool_bounds(kernel: str, input: Any, *bounds: Any) -> None:  # noqa: A002
    """torch's clamp kernels for number bounds are not built for a bool result (a bool tensor
    clamped by Python bools; ``clamp(0, 1)`` promotes to int64 and computes)."""
    if input.dtype is dtypes.bool and all(b is None or isinstance(b, bool) for b in bounds):
        raise NotImplementedError(f"\"{kernel}_scalar_cpu\" not implemented for 'Bool'")


def check_norm_parameters(input: Any, *parameters: Any) -> None:  # noqa: A002
    """torch's CPU rule for the parameters of batch, layer and group norm (weight, bias,
    running stats): of the input's dtype, or float32 for a float16/bfloat16 input (the mixed
    kernels); anything else is refused, never promoted."""
    first = next((p for p in parameters if p is not None), None)
    if first is None or first.dtype is input.dtype or input.is_cuda:
        return
    for p in parameters:
        if p is not None and p.dtype is not dtypes.float32:
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
    if input.dtype not in (dtypes.bfloat16, dtypes.float16):
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


def half_in_float32(impl: Any) -> Any:
    """An op's ``impl`` computing float16 input in float32 and rounding the result once, as
    torch's single-kernel ops do (float32 op math); NumPy would round after every step."""
    import numpy as np

    def run(*args: Any, **kwargs: Any) -> Any:
        if not any(getattr(a, "dtype", None) == np.float16 for a in args):
            return impl(*args, **kwargs)
        widened = [a.astype(np.float32) if getattr(a, "dtype", None) == np.float16 else a
                   for a in args]
        out = impl(*widened, **kwargs)
        if type(out) is tuple:
            return tuple(o.astype(np.float16) if getattr(o, "dtype", None) == np.float32
                         else o for o in out)
        return out.astype(np.float16)

    run.__name__ = getattr(impl, "__name__", "impl")
    return run
