"""torch's fused CPU arithmetic in NumPy: the ops whose kernels round a multiply-add once.

torch's vectorized CPU kernels compute ``add``/``sub`` with ``alpha`` as ``fma(alpha, other,
input)``, ``addcmul`` as ``fma(value * tensor1, tensor2, input)`` and ``lerp`` as
``fma(w, end - self, self)`` for ``|w| < 0.5``, else ``fma(w - 1, end - self, end)``, in the
dtype's op-math type (float32 for float32, float64 for float64); ``addcdiv`` is
``input + value * tensor1 / tensor2``, unfused. The optimizers' updates are made of these ops,
so their trajectories follow torch's to the bit only with the same rounding.

NumPy has no fma. A float32 one is the float64 product (exact) plus the addend, rounded to
float32 (a double rounding that differs from the fused result only when the float64 sum lands
exactly on a float32 tie); a float64 one is the error-free product and sum (Dekker's split,
Knuth's two-sum), exact but for such ties too. Contiguous arrays of one shape take one Numba
pass instead, whose multiply-add LLVM contracts to the CPU's fma, as torch's kernels are
compiled (5-8x faster than the NumPy form); broadcasting operands take the NumPy form. Other
dtypes (float16, bfloat16, complex, integers) keep the unfused arithmetic.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's splitter for float64
FUSED = (np.dtype(np.float32), np.dtype(np.float64))


def _fma64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        p = a * b
        t = _SPLIT * a
        a_hi = t - (t - a)
        t = _SPLIT * b
        b_hi = t - (t - b)
        a_lo, b_lo = a - a_hi, b - b_hi
        err = ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo  # p + err == a*b
        s = p + c
        z = s - p
        out = s + (((p - (s - z)) + (c - z)) + err)
        # (where the split overflows or a value is not finite: the plain product and sum)
        return np.where(np.isfinite(out), out, s)


_HALF = np.dtype(np.float16)


def half_in_float(impl):
    """An impl that computes float16 operands in float32 and rounds the result to float16
    once, as torch's kernels do in their op-math type (several NumPy steps in float16 round
    at each: lerp, addcmul, addcdiv, rsqrt differed by an ulp)."""
    def run(*args, **params):
        if not any(type(a) is np.ndarray and a.dtype == _HALF for a in args):
            return impl(*args, **params)
        wide = [a.astype(np.float32) if type(a) is np.ndarray and a.dtype == _HALF else a
                for a in args]
        out = np.asarray(impl(*wide, **params))
        return out.astype(np.float16) if out.dtype.kind == "f" else out

    run.__name__ = getattr(impl, "__name__", "impl")
    return run


def fma(a: Any, b: Any, c: Any, dtype: np.dtype) -> np.ndarray:
    """``a * b + c`` rounded once to ``dtype`` (float32 or float64), each operand first
    rounded to ``dtype`` (a Python float ``a`` too, as torch's op math takes a scalar)."""
    a, b, c = (np.asarray(v, dtype) for v in (a, b, c))
    if c.ndim and b.shape == c.shape:
        out = np.empty(c.shape, dtype)
        if _kernel_into(out, a, b, c):
            return out
    if dtype == np.float64:
        return np.asarray(_fma64(a, b, c))
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray((a.astype(np.float64) * b + c).astype(np.float32))


def lerp(a: np.ndarray, b: np.ndarray, w: Any, out_dtype: np.dtype) -> np.ndarray:
    """``a + w * (b - a)`` as torch computes it, of ``out_dtype`` (``w`` a float or an
    array)."""
    out_dtype = np.dtype(out_dtype)
    if out_dtype not in FUSED:
        plain = np.where(np.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w))
        return np.asarray(plain).astype(out_dtype, copy=False)
    work = out_dtype.type
    a, b, w = np.asarray(a, work), np.asarray(b, work), np.asarray(w, work)
    with np.errstate(over="ignore", invalid="ignore"):
        diff = b - a
    small = np.abs(w) < 0.5
    if w.ndim == 0:  # (one side for all)
        return fma(w, diff, a, out_dtype) if small else fma(w - work(1), diff, b, out_dtype)
    return fma(np.where(small, w, w - work(1)), diff, np.where(small, a, b), out_dtype)


# ---------------------------------------------------------------- in place, one pass

_COMPILED: dict = {}


def _fma_scalar(out, a, x, y):
    for i in range(out.size):
        out[i] = a * x[i] + y[i]  # (contracted to one fma where the CPU has one)


def _fma_arrays(out, a, x, y):
    for i in range(out.size):
        out[i] = a[i] * x[i] + y[i]


def _lerp_small(a, b, w):
    for i in range(a.size):
        a[i] = w * (b[i] - a[i]) + a[i]


def _lerp_large(a, b, w):
    for i in range(a.size):
        a[i] = w * (b[i] - a[i]) + b[i]


def _kernel_takes(*arrays: np.ndarray) -> bool:
    first = arrays[0]
    return first.dtype in FUSED and first.size > 0 and all(
        x.dtype == first.dtype and x.shape == first.shape and x.flags.c_contiguous
        for x in arrays)


def _kernel(name: str):
    from .nn_kernels import compiled

    return compiled(globals(), name, _COMPILED, {"contract"})


def _kernel_into(out: np.ndarray, a: np.ndarray, x: np.ndarray, y: np.ndarray) -> bool:
    """``out = a * x + y`` by one Numba pass, when the arrays are contiguous float32/float64
    of one shape (``a``: 0-d or such an array); whether it did."""
    if not _kernel_takes(out, x, y) or a.ndim and not _kernel_takes(out, a):
        return False
    flat = (x.reshape(-1), y.reshape(-1))
    if a.ndim:
        _kernel("_fma_arrays")(out.reshape(-1), a.reshape(-1), *flat)
    else:
        _kernel("_fma_scalar")(out.reshape(-1), a[()], *flat)
    return True


def fma_(out: np.ndarray, a: Any, x: np.ndarray, y: np.ndarray) -> None:
    """``out`` set to ``a * x + y`` rounded once (``out`` may be ``x`` or ``y``; ``a`` a number
    or an array)."""
    a = np.asarray(a, out.dtype)  # (float32 arithmetic for float32, as torch's op math)
    if not _kernel_into(out, a, x, y):
        out[...] = fma(a, x, y, out.dtype)


def lerp_(a: np.ndarray, b: np.ndarray, weight: float) -> None:
    """``a`` set to ``lerp(a, b, weight)`` in place (an optimizer's moving averages)."""
    if _kernel_takes(a, b):
        w = a.dtype.type(weight)
        small = abs(w) < 0.5
        _kernel("_lerp_small" if small else "_lerp_large")(
            a.reshape(-1), b.reshape(-1), w if small else w - a.dtype.type(1))
    else:
        a[...] = lerp(a, b, weight, a.dtype)
