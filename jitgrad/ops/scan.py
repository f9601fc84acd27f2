"""Scans along a dim: cumsum and cumprod.

Integer and bool inputs accumulate in int64 (as torch's sum), unless ``dtype`` says otherwise.
Floating inputs accumulate as torch's CPU kernels do: float32 (and complex64) in double, the
16-bit floats in float32, each rounded once to the result's dtype (so long float32 scans equal
torch's bit for bit).
``cumprod``'s VJP and JVP are exact where the input has zeros (torch's ``cumprod_backward``):
positions before the first zero of a line use the division formula; the first zero gets the
cumulative product with that zero taken out; positions after it get zero.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ._shape import axis_alias, wrap_dim
from .registry import LINEAR, OPAQUE, apply, defop
from .surface import public
from .memory_formats import row_major


def _scan_dtype(d: dtypes.dtype, dtype: dtypes.dtype | None) -> dtypes.dtype:
    if dtype is not None:
        return dtype
    return dtypes.int64 if dtypes.is_integral(d, include_bool=True) else d


def _scan_meta(x, dim, dtype=None):
    return tuple(x.shape), _scan_dtype(x.dtype, dtype)


def _accumulate_dtype(out_dt: np.dtype) -> np.dtype:
    """The dtype torch's CPU scans accumulate in (``acc_type<T, false>``): double for float32
    (and complex double for complex64), float for the 16-bit floats, the result's otherwise."""
    if out_dt == np.float32:
        return np.dtype(np.float64)
    if out_dt == np.complex64:
        return np.dtype(np.complex128)
    if (out_dt.kind == "f" and out_dt.itemsize == 2) or out_dt == dtypes.bfloat16.np:
        return np.dtype(np.float32)
    return out_dt


def _scan_impl(fn):
    def impl(x, dim, dtype=None):
        out_dt = np.dtype(_scan_dtype(dtypes.from_numpy_dtype(x.dtype), dtype).np)
        if x.ndim == 0:
            return x.astype(out_dt)
        acc_dt = _accumulate_dtype(out_dt)
        if acc_dt == out_dt:
            return fn(x, axis=dim, dtype=out_dt)
        # (the input is converted to the result's dtype first, as torch's ``dtype=`` does)
        return fn(x.astype(out_dt).astype(acc_dt), axis=dim).astype(out_dt)
    return impl


def reverse_cumsum(g, dim: int):
    """``flip(cumsum(flip(g)))`` along ``dim``: the sum of ``g`` from each position on."""
    if g.ndim == 0:
        return g
    return g.sum(dim=dim, keepdim=True) - cumsum(g, dim) + g


def _cumsum_vjp(g, ans, x, dim, dtype=None):
    return reverse_cumsum(g, dim)


def _zero_structure(x, dim):
    """(positions before the line's first zero, the first zero itself, x with that zero
    replaced by one), as tensors."""
    from .elementwise import where

    is_zero = x == 0
    count = cumsum(is_zero, dim)
    before = count == 0
    first = is_zero & (count == 1)
    return before, first, where(first, 1, x)


def _cumprod_vjp(g, ans, x, dim, dtype=None):
    from .elementwise import where
    from .registry import state

    if x.ndim == 0 or x.shape[dim] <= 1:
        return g
    if state.grad_enabled:  # recording a double backward: torch's differentiable formula
        return _cumprod_vjp_differentiable(g, x, dim)
    before, first, x_out = _zero_structure(x, dim)
    safe = where(before, x, 1)
    head = reverse_cumsum(g * ans.conj(), dim) / safe.conj()
    at_zero = reverse_cumsum(g * cumprod(x_out, dim).conj(), dim)
    return where(before, head, where(first, at_zero, 0))


def _cumprod_vjp_differentiable(g, x, dim):
    """O(n^2) but differentiable everywhere, zeros included (torch's cumprod_backward under
    grad mode): the gradient at k is sum_{j >= k} g_j * prod_{i <= j, i != k} x_i."""
    from .movement import cat, stack

    n = x.shape[dim]
    grads = []
    for k in range(n):
        pieces = []
        if k > 0:
            before = x.narrow(dim, 0, k).prod(dim=dim, keepdim=True)
            pieces.append(before)
        if k < n - 1:
            after = cumprod(x.narrow(dim, k + 1, n - k - 1), dim)
            pieces.append(after * before if k > 0 else after)
        if k == 0:
            from .creation import ones

            shape = list(x.shape)
            shape[dim] = 1
            pieces.insert(0, ones(tuple(shape), dtype=x.dtype, device=x.device))
        omitted = cat(pieces, dim) if len(pieces) > 1 else pieces[0]
        grads.append((g.narrow(dim, k, n - k) * omitted.conj()).sum(dim=dim))
    return stack(grads, dim)


def _cumprod_jvp(tangents, ans, x, dim, dtype=None):
    from .elementwise import where

    t = tangents[0]
    if x.ndim == 0:
        return t
    before, first, x_out = _zero_structure(x, dim)
    safe = where(before, x, 1)
    head = ans * cumsum(t / safe, dim)
    t_zero = where(first, t, 0).sum(dim=dim, keepdim=True)
    return where(before, head, cumprod(x_out, dim) * t_zero)


CUMSUM = defop("cumsum", row_major(_scan_impl(np.cumsum)), kind=OPAQUE,
               meta=_scan_meta,
               vjp=(_cumsum_vjp,), jvp=LINEAR, saved_names={"dim": ("param", "dim")})
CUMPROD = defop("cumprod", row_major(_scan_impl(np.cumprod)), kind=OPAQUE, meta=_scan_meta,
                save=(0,),
                save_output=True, vjp=(_cumprod_vjp,), jvp=_cumprod_jvp,
                saved_names={"dim": ("param", "dim"), "self": ("input", 0),
                             "result": ("output", 0)})


@public("cumsum", method=True, inplace=True)
@axis_alias
def cumsum(input, dim: int, *, dtype=None):  # noqa: A002
    """Cumulative sum along ``dim``."""
    if dtype is dtypes.bool and input.ndim and input.numel():  # (0-d, empty: no kernel)
        raise NotImplementedError("\"cumsum_out_cpu\" not implemented for 'Bool'")
    return apply(CUMSUM, input, dim=wrap_dim(dim, input.ndim), dtype=dtype)


@public("cumprod", method=True, inplace=True)
@axis_alias
def cumprod(input, dim: int, *, dtype=None):  # noqa: A002
    """Cumulative product along ``dim`` (gradients exact where the input has zeros)."""
    if dtype is dtypes.bool and input.ndim and input.numel():  # (0-d, empty: no kernel)
        raise NotImplementedError("\"cumprod_out_cpu\" not implemented for 'Bool'")
    return apply(CUMPROD, input, dim=wrap_dim(dim, input.ndim), dtype=dtype)
