"""Composite ops: softmax, log_softmax, logsumexp, var, std.

torch records each of these as one node (``SoftmaxBackward0``, ...), so each has an OpDef
(NumPy impl for eager speed, VJP written in jitgrad ops). ``decompose`` gives the same function
in primitives, which the JIT inlines so the pieces fuse with their neighbours.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import dtypes
from ._shape import numel, reduced_shape, reduction_dims, wrap_dim
from .reduce import expand_reduced
from .dtype_rules import half_in_float32
from .registry import OPAQUE, OPS, apply, defop
from .surface import public
from .memory_formats import row_major


def _float_meta(x, **params):
    d = x.dtype
    if not (d.is_floating_point or d.is_complex):
        d = dtypes.get_default_dtype()
    return tuple(x.shape), d


def _softmax_impl(x, dim):
    if x.size == 0:  # (nothing to normalise; np.max has no identity)
        return x.copy()
    x = np.asarray(x, order="C")  # (torch's output is row-major whatever the input's layout)
    m = np.max(x, axis=dim, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=dim, keepdims=True)


def _log_softmax_impl(x, dim):
    if x.size == 0:
        return x.copy()
    x = np.asarray(x, order="C")
    m = np.max(x, axis=dim, keepdims=True)
    s = x - m
    return s - np.log(np.sum(np.exp(s), axis=dim, keepdims=True))


def _softmax_decompose(x, dim):
    e = (x - x.amax(dim, keepdim=True).detach()).exp()
    return e / e.sum(dim, keepdim=True)


def _log_softmax_decompose(x, dim):
    s = x - x.amax(dim, keepdim=True).detach()
    return s - s.exp().sum(dim, keepdim=True).log()


SOFTMAX = defop(
    "softmax", half_in_float32(_softmax_impl), kind=OPAQUE, meta=_float_meta, save_output=True,
    decompose=_softmax_decompose, opmath_backward=True,
    vjp=(lambda g, ans, x, dim: ans * (g - (g * ans).sum(dim, keepdim=True)),),
    jvp=lambda ts, ans, x, dim: ans * (ts[0] - (ts[0] * ans).sum(dim, keepdim=True)),
    saved_names={"dim": ("param", "dim"), "result": ("output", 0)})
LOG_SOFTMAX = defop(
    "log_softmax", half_in_float32(_log_softmax_impl), kind=OPAQUE, meta=_float_meta,
    save_output=True,
    decompose=_log_softmax_decompose, opmath_backward=True,
    vjp=(lambda g, ans, x, dim: g - ans.exp() * g.sum(dim, keepdim=True),),
    jvp=lambda ts, ans, x, dim: ts[0] - (ts[0] * ans.exp()).sum(dim, keepdim=True),
    saved_names={"dim": ("param", "dim"), "result": ("output", 0)})


@row_major
def _logsumexp_impl(x, dims, keepdim):
    if x.dtype.kind in "biu":  # (NumPy's exp of int8 is float16, x - max wraps in uint8)
        x = x.astype(np.float64)
    with np.errstate(divide="ignore"):  # (log(0) is -inf, as torch's, without a warning)
        if x.size == 0:
            return np.log(np.sum(np.exp(x), axis=dims, keepdims=keepdim))
        m = np.max(x, axis=dims, keepdims=True)
        m = np.where(np.isfinite(m), m, 0)
        out = np.log(np.sum(np.exp(x - m), axis=dims, keepdims=True)) + m
    return out if keepdim else np.squeeze(out, axis=dims)


def _logsumexp_decompose(x, dims, keepdim):
    x = x.to(_float_meta(x)[1])
    m = x.amax(dims, keepdim=True).detach()
    out = (x - m).exp().sum(dims, keepdim=True).log() + m
    return out if keepdim else out.squeeze(dims)


def _reduce_float_meta(x, dims, keepdim, **params):
    return reduced_shape(tuple(x.shape), dims, keepdim), _float_meta(x)[1]


LOGSUMEXP = defop(
    "logsumexp", _logsumexp_impl, kind=OPAQUE, meta=_reduce_float_meta, save=(0,),
    save_output=True, decompose=_logsumexp_decompose,
    vjp=(lambda g, ans, x, dims, keepdim: expand_reduced(g, tuple(x.shape), dims, keepdim) * (
        x - expand_reduced(ans, tuple(x.shape), dims, keepdim)).exp().conj(),),
    jvp=lambda ts, ans, x, dims, keepdim: apply(
        OPS["sum_dim"], ts[0] * (x - expand_reduced(ans, tuple(x.shape), dims, keepdim)).exp(),
        dims=dims, keepdim=keepdim, dtype=None),
        saved_names={"dim": ("param", "dims"), "keepdim": ("param", "keepdim"),
                     "self": ("input", 0), "result": ("output", 0)})


def _count(x, dims) -> int:
    return numel(tuple(x.shape[d] for d in dims))


def _var_decompose(x, dims, correction, keepdim):
    centered = x - x.mean(dims, keepdim=True)
    return (centered * centered.conj()).real.sum(dims, keepdim=keepdim) / max(
        _count(x, dims) - correction, 0)


def _var_vjp(g, ans, x, dims, correction, keepdim):
    n = _count(x, dims) - correction
    centered = x - x.mean(dims, keepdim=True)
    return expand_reduced(g, tuple(x.shape), dims, keepdim) * 2 * centered / n


def _std_vjp(g, ans, x, dims, correction, keepdim):
    n = _count(x, dims) - correction
    centered = x - x.mean(dims, keepdim=True)
    shape = tuple(x.shape)
    std = expand_reduced(ans, shape, dims, keepdim)
    # (torch's: no gradient where the std is 0, not 0/0)
    return expand_reduced(g, shape, dims, keepdim) * (centered / (n * std)).masked_fill(
        std == 0, 0.0)


def _var_meta(x, dims, correction, keepdim):
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(
            "std and var only support floating point and complex dtypes")
    return reduced_shape(tuple(x.shape), dims, keepdim), x.dtype.to_real()


def _var_jvp(tangents, ans, x, dims, correction, keepdim):
    # d var = 2 * sum(Re(conj(x - mean) * t)) / (N - correction)
    centered = x - x.mean(dims, keepdim=True)
    s = apply(OPS["sum_dim"], (centered.conj() * tangents[0]).real, dims=dims, keepdim=keepdim,
              dtype=None)
    return s * (2 / (_count(x, dims) - correction))


@row_major
def _np_var(x, dims, correction, keepdim):
    """``np.var``; where no degree of freedom is left, the same values (a sum of squares over
    ``max(N - correction, 0)``) without NumPy's RuntimeWarnings: the public functions warn
    torch's warning instead (``_warn_no_dof``)."""
    dof = _count(x, dims) - correction
    if dof > 0:
        return np.var(x, axis=dims, ddof=correction, keepdims=keepdim)
    centered = x - np.mean(x, axis=dims, keepdims=True) if x.size else x
    ss = np.sum((centered * centered.conj()).real, axis=dims, keepdims=keepdim)
    with np.errstate(divide="ignore", invalid="ignore"):
        return ss / ss.dtype.type(0)


def _warn_no_dof(name: str, x, dims, correction) -> None:
    """torch's warning where ``correction`` leaves no degree of freedom (the reduction factor
    is the input's numel over the output's, 0 for an empty output)."""
    out = numel(reduced_shape(tuple(x.shape), dims, False))
    if (_count(x, dims) if out else 0) - correction <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly "
                      "less than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=3)


VAR = defop("var", lambda x, dims, correction, keepdim: _np_var(
    x, dims, correction, keepdim), kind=OPAQUE, meta=_var_meta, save=(0,),
    decompose=_var_decompose, vjp=(_var_vjp,), jvp=_var_jvp,
    saved_names={"dim": ("param", "dims"), "correction": ("param", "correction"),
                 "keepdim": ("param", "keepdim"), "self": ("input", 0)})
STD = defop("std", lambda x, dims, correction, keepdim: np.sqrt(_np_var(
    x, dims, correction, keepdim)), kind=OPAQUE, meta=_var_meta, save=(0,),
    save_output=True, decompose=lambda x, dims, correction, keepdim: _var_decompose(
        x, dims, correction, keepdim).sqrt(), vjp=(_std_vjp,),
    jvp=lambda ts, ans, x, dims, correction, keepdim: (_var_jvp(
        ts, ans, x, dims, correction, keepdim) / (2 * ans)).masked_fill(ans == 0, 0.0),
        saved_names={"dim": ("param", "dims"), "correction": ("param", "correction"),
                     "keepdim": ("param", "keepdim"), "self": ("input", 0),
                     "result": ("output", 0)})


# ---------------------------------------------------------------- public functions


def _cast_for(input, dtype):  # noqa: A002
    return input if dtype is None or input.dtype is dtype else input.to(dtype)


def _floating_softmax(x, dim: int, name: str) -> bool:
    """torch's refusal of a (log_)softmax of a non-floating tensor: its kernels are floating
    only. True for an empty one, which torch returns (a copy) before the kernel."""
    if x.dtype.is_floating_point:
        return False
    if x.numel() == 0:
        return True
    kernel = f"{name}_lastdim" if dim == x.ndim - 1 or x.ndim == 0 else name
    raise NotImplementedError(f'"{kernel}_kernel_impl" not implemented for '
                              f"'{x.dtype._scalar_name}'")


@public("softmax", method=True)
def softmax(input, dim: int, dtype=None):  # noqa: A002
    """Softmax along ``dim``."""
    x = _cast_for(input, dtype)
    dim = wrap_dim(dim, x.ndim)
    if _floating_softmax(x, dim, "softmax"):
        return x.clone()
    return apply(SOFTMAX, x, dim=dim)


@public("log_softmax", method=True)
def log_softmax(input, dim: int, dtype=None):  # noqa: A002
    """Log of softmax along ``dim``, computed stably."""
    x = _cast_for(input, dtype)
    dim = wrap_dim(dim, x.ndim)
    if _floating_softmax(x, dim, "log_softmax"):
        return x.clone()
    return apply(LOG_SOFTMAX, x, dim=dim)


_NO_DIM = object()


@public("logsumexp", method=True)
def logsumexp(input, dim=_NO_DIM, keepdim: bool = False):  # noqa: A002
    """``log(sum(exp(input), dim))``, computed stably."""
    if dim is _NO_DIM:  # (torch's argument parser's text)
        raise TypeError('logsumexp() missing 1 required positional arguments: "dim"')
    return apply(LOGSUMEXP, input, dims=reduction_dims(dim, input.ndim), keepdim=keepdim)


def _correction(unbiased, correction) -> int:
    if correction is not None:
        return correction
    return 1 if unbiased is None or unbiased else 0


def _var_std(op):
    def fn(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
        if isinstance(dim, bool):  # var(input, unbiased)
            dim, unbiased = None, dim
        dims = reduction_dims(dim, input.ndim)
        correction = _correction(unbiased, correction)
        _warn_no_dof(op.name, input, dims, correction)
        return apply(op, input, dims=dims, correction=correction, keepdim=keepdim)
    return fn


var = _var_std(VAR)
public("var", method=True)(var)
std = _var_std(STD)
public("std", method=True)(std)
var.__name__, std.__name__ = "var", "std"
var.__doc__ = "Variance over ``dim`` with Bessel's ``correction`` (default 1)."
std.__doc__ = "Standard deviation over ``dim`` with Bessel's ``correction`` (default 1)."


# ---------------------------------------------------------------- forward-mode (JVP) rules
