"""Loop kernels of the convolution, pooling, batch-norm and nll ops, of erf/erfc, of
kthvalue's tie choice, compiled with Numba on first use (``rng_kernels`` holds the random
samplers' loops, compiled the same way).

NumPy runs these ops as several passes over strided views (im2col of an ``as_strided`` window
view, one strided add per kernel position for col2im, a pass per kernel position for max
pooling, several reductions for batch norm); each kernel here is one pass instead. The matrix
products themselves stay in NumPy (BLAS). The kernels are plain Python functions compiled with
``numba.njit(cache=True)`` when first asked for (``kernel(name)``), so ``import jitgrad`` does
not load Numba, and a later process loads the machine code from Numba's cache.

``usable(*arrays)`` says whether the kernels take these arrays (float32 or float64); the ops
keep their NumPy code for every other dtype.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from .._numba_load import load_overload

__all__ = ["kernel", "usable"]

_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_COMPILED: dict[str, object] = {}


def usable(*arrays) -> bool:
    """Whether the kernels handle these arrays (None entries are skipped): float32/float64."""
    return all(a is None or a.dtype in _DTYPES for a in arrays)


# reductions may be reordered (vectorized); no flag that assumes away NaN or inf
_FASTMATH = {"batch_norm": {"reassoc", "contract"}, "batch_norm_backward": {"reassoc", "contract"}}


def kernel(name: str):
    """The compiled kernel ``name`` of this module (compiled, or loaded from cache, once)."""
    return compiled(globals(), name, _COMPILED, _FASTMATH.get(name, False))


def compiled(namespace: dict, name: str, cache: dict, fastmath: Any = False,
             helpers: tuple = (), inline: str = "always"):
    """The function ``namespace[name]`` compiled by Numba (or loaded from its cache) at its
    first call, kept in ``cache``; the ``helpers`` it calls (names in ``namespace``) are
    compiled first, inlined by Numba unless ``inline="never"`` (many helpers calling each other
    compile 5x faster as calls)."""
    fn = cache.get(name)
    if fn is None:
        import numba

        options = {"nogil": True, "error_model": "numpy", "fastmath": fastmath}
        for helper in helpers:
            if not isinstance(namespace[helper], numba.core.dispatcher.Dispatcher):
                namespace[helper] = numba.njit(inline=inline, **options)(namespace[helper])
        try:
            dispatcher = numba.njit(cache=True, **options)(namespace[name])
        except RuntimeError:  # no writable cache location: compile in every process instead
            dispatcher = numba.njit(**options)(namespace[name])

        def fn(*args):
            # the first call loads the cached machine code without Numba's context refresh
            # (``_numba_load``), then the dispatcher stands in for this function
            load_overload(dispatcher, args)
            cache[name] = dispatcher
            return dispatcher(*args)
        cache[name] = fn
    return fn


# ---------------------------------------------------------------- bfloat16


def round_bfloat16(bits, out):
    """``out`` = the float32 bit patterns ``bits`` rounded to bfloat16 (to nearest, ties to
    even; a NaN stays a NaN, made quiet): ``dtypes.round_to_bfloat16``'s passes in one. Whether
    any value changed."""
    changed = False
    for i in range(bits.size):
        b = bits[i]
        if b & 0xFFFF:
            changed = True
        if (b & 0x7F800000) == 0x7F800000 and (b & 0x007FFFFF) != 0:
            out[i] = (b | 0x00400000) & 0xFFFF0000
        else:  # (wider than 32 bits in Numba: the mask drops the carry out, as uint32 does)
            out[i] = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    return changed


def _round_bfloat16(bits, out):
    return kernel("round_bfloat16")(bits, out)


dtypes.bfloat16_loop = _round_bfloat16


# ---------------------------------------------------------------- convolution


def transpose(src, dst):
    """``dst[j, i] = src[i, j]`` for C-contiguous 2-d arrays, in 8x8 tiles (a plain loop
    writes or reads with a stride of a whole row per element)."""
    n_, m_ = src.shape
    nf = n_ - n_ % 8
    mf = m_ - m_ % 8
    for j0 in range(0, mf, 8):
        for i0 in range(0, nf, 8):
            for j in range(8):
                for i in range(8):
                    dst[j0 + j, i0 + i] = src[i0 + i, j0 + j]
    for i in range(nf, n_):
        for j in range(m_):
            dst[j, i] = src[i, j]
    for i in range(nf):
        for j in range(mf, m_):
            dst[j, i] = src[i, j]


def im2col(xt, cols, sh, sw, dh, dw):
    """``cols[c, i, j, oh, ow, n] = xt[c, oh * sh + i * dh, ow * sw + j * dw, n]`` for the
    padded batch-last input ``xt (C, Hp, Wp, N)``: runs of N contiguous values."""
    c_, kh, kw, ho, wo, n_ = cols.shape
    for c in range(c_):
        for i in range(kh):
            for j in range(kw):
                for oh in range(ho):
                    r = oh * sh + i * dh
                    for ow in range(wo):
                        q = ow * sw + j * dw
                        for n in range(n_):
                            cols[c, i, j, oh, ow, n] = xt[c, r, q, n]


def col2im(cols, xt, sh, sw, dh, dw):
    """The adjoint of ``im2col``: sums ``cols`` into the zeroed padded ``xt (C, Hp, Wp, N)``."""
    c_, kh, kw, ho, wo, n_ = cols.shape
    for c in range(c_):
        for i in range(kh):
            for j in range(kw):
                for oh in range(ho):
                    r = oh * sh + i * dh
                    for ow in range(wo):
                        q = ow * sw + j * dw
                        for n in range(n_):
                            xt[c, r, q, n] += cols[c, i, j, oh, ow, n]


# ---------------------------------------------------------------- max pooling


def max_pool(x, out, idx, kh, kw, sh, sw, ph, pw, dh, dw):
    """Max pooling of planes ``x (P, H, W)`` into ``out``/``idx`` ``(P, Ho, Wo)`` as torch's CPU
    kernel: the first largest value of each window, a NaN wins (the last one), and the index is
    ``row * W + col`` in the unpadded plane (the window's first valid position when no value
    exceeds the lowest)."""
    p_, h_, w_ = x.shape
    ho, wo = out.shape[1], out.shape[2]
    for p in range(p_):
        for oh in range(ho):
            rs = oh * sh - ph
            r0 = rs
            while r0 < 0:
                r0 += dh
            for ow in range(wo):
                qs = ow * sw - pw
                q0 = qs
                while q0 < 0:
                    q0 += dw
                best = x[p, r0, q0]
                at = r0 * w_ + q0
                for a in range(kh):  # (no range with a variable step: it divides)
                    r = rs + a * dh
                    if r < 0 or r >= h_:
                        continue
                    for b in range(kw):
                        q = qs + b * dw
                        if q < 0 or q >= w_:
                            continue
                        v = x[p, r, q]
                        take = (v > best) | (v != v)  # (selects, not branches: random data
                        best = v if take else best    # mispredicts half of them)
                        at = r * w_ + q if take else at
                out[p, oh, ow] = best
                idx[p, oh, ow] = at


def max_pool_2x2(x, out, idx):
    """``max_pool`` for the common 2x2 window, stride 2, no padding, no dilation: unrolled
    (the general kernel's loops of two taps cost more than the comparisons)."""
    p_, h_, w_ = x.shape
    ho, wo = out.shape[1], out.shape[2]
    for p in range(p_):
        for oh in range(ho):
            r = 2 * oh
            for ow in range(wo):
                q = 2 * ow
                best = x[p, r, q]
                at = r * w_ + q
                v = x[p, r, q + 1]
                take = (v > best) | (v != v)
                best = v if take else best
                at = at + 1 if take else at
                v = x[p, r + 1, q]
                take = (v > best) | (v != v)
                best = v if take else best
                at = (r + 1) * w_ + q if take else at
                v = x[p, r + 1, q + 1]
                take = (v > best) | (v != v)
                best = v if take else best
                at = (r + 1) * w_ + q + 1 if take else at
                out[p, oh, ow] = best
                idx[p, oh, ow] = at


def max_pool_backward(g, idx, out):
    """``out[p, idx[p, k]] += g[p, k]`` over planes (``g``, ``idx`` ``(P, K)``, ``out``
    ``(P, H*W)`` zeroed)."""
    p_, k_ = g.shape
    for p in range(p_):
        for k in range(k_):
            out[p, idx[p, k]] += g[p, k]


# ---------------------------------------------------------------- batch norm


def batch_norm(x, weight, bias, running_mean, running_var, training, eps, out, mean_out,
               var_out):
    """Batch norm of ``x (N, C, L)`` into ``out``, the statistics used into ``mean_out`` and
    ``var_out`` (the batch's in training, else the running ones)."""
    n_, c_, l_ = x.shape
    m = n_ * l_
    for c in range(c_):
        if training:
            s = 0.0
            for n in range(n_):
                for q in range(l_):
                    s += x[n, c, q]
            mean = s / m
            ss = 0.0
            for n in range(n_):
                for q in range(l_):
                    d = x[n, c, q] - mean
                    ss += d * d
            var = ss / m
        else:
            mean, var = float(running_mean[c]), float(running_var[c])
        scale = weight[c] / math.sqrt(var + eps)
        shift = bias[c]
        for n in range(n_):
            for q in range(l_):
                out[n, c, q] = (x[n, c, q] - mean) * scale + shift
        mean_out[c] = mean
        var_out[c] = var


def batch_norm_backward(g, x, weight, running_mean, running_var, training, eps, gx, gw, gb):
    """The first-order batch-norm backward of ``x (N, C, L)``: ``gx``, and the weight and bias
    gradients ``gw`` (``sum g * xhat``) and ``gb`` (``sum g``) per channel."""
    n_, c_, l_ = x.shape
    m = n_ * l_
    for c in range(c_):
        if training:
            s = 0.0
            for n in range(n_):
                for q in range(l_):
                    s += x[n, c, q]
            mean = s / m
            ss = 0.0
            for n in range(n_):
                for q in range(l_):
                    d = x[n, c, q] - mean
                    ss += d * d
            var = ss / m
        else:
            mean, var = float(running_mean[c]), float(running_var[c])
        rstd = 1.0 / math.sqrt(var + eps)
        gsum = 0.0
        gdot = 0.0
        for n in range(n_):
            for q in range(l_):
                gv = g[n, c, q]
                gsum += gv
                gdot += gv * (x[n, c, q] - mean)
        gxhat = gdot * rstd
        scale = rstd * weight[c]
        if training:
            a = gsum / m
            b = gxhat * rstd / m
            for n in range(n_):
                for q in range(l_):
                    gx[n, c, q] = scale * (g[n, c, q] - a - (x[n, c, q] - mean) * b)
        else:
            for n in range(n_):
                for q in range(l_):
                    gx[n, c, q] = g[n, c, q] * scale
        gw[c] = gxhat
        gb[c] = gsum


# ---------------------------------------------------------------- losses


def nll_loss(logp, target, ignore_index):
    """``(sum of -logp[i, target[i]], rows counted, first out-of-bounds row or -1)`` over the
    rows whose target is not ``ignore_index`` (sums in float64, as the NumPy code)."""
    n_, c_ = logp.shape
    for i in range(n_):  # every target checked before any is read, as the NumPy code
        t = target[i]
        if t != ignore_index and (t < 0 or t >= c_):
            return 0.0, 0.0, i
    total = 0.0
    count = 0.0
    for i in range(n_):
        t = target[i]
        if t != ignore_index:
            total -= np.float64(logp[i, t])
            count += 1.0
    return total, count, -1


# ---------------------------------------------------------------- special functions
# NumPy has no erf (nor lgamma): ``np.vectorize(math.erf)`` costs about 130 ns per element
# (exact GELU's eager forward spent 150 ms on 1e6 values); a compiled loop over libm about 10 ns.
# Small arrays keep the vectorized Python call (no Numba import for a handful of values).
SPECIAL_LOOP_MIN = 4096


def erf_loop(x, out):
    for i in range(x.size):
        out[i] = math.erf(np.float64(x[i]))  # (in double, then rounded: as math.erf)


def erfc_loop(x, out):
    for i in range(x.size):
        out[i] = math.erfc(np.float64(x[i]))


def lgamma_loop(x, out):
    for i in range(x.size):
        out[i] = math.lgamma(np.float64(x[i]))


def _lgamma_scalar(v: float) -> float:
    try:
        return math.lgamma(v)
    except ValueError:  # a pole (0, -1, ...): libm's inf
        return math.inf


_SCALAR = {"erf": math.erf, "erfc": math.erfc, "lgamma": _lgamma_scalar}


def special(name: str, x: np.ndarray) -> np.ndarray:
    """``erf``, ``erfc`` or ``lgamma`` (``name``) of a float array, elementwise, in its
    dtype."""
    scalar = _SCALAR[name]
    if x.size < SPECIAL_LOOP_MIN or x.dtype not in _DTYPES:
        return np.vectorize(scalar, otypes=[x.dtype])(x) if x.size else x.copy()
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty_like(flat)
    kernel(f"{name}_loop")(flat, out)
    return out.reshape(x.shape)


# ---------------------------------------------------------------- kthvalue's tie choice


def quick_select_rows(rows, ks, tied, out):
    """For each row ``tied[t]`` of ``rows``: the index torch's CPU quickselect
    (``quick_select_template``: median of three, NaN largest) gives for its ``ks[r]``-th
    smallest value, into ``out[r]``; which of tied values torch's kthvalue names."""
    n = rows.shape[1]
    vals = np.empty(n, rows.dtype)
    idx = np.empty(n, np.int64)
    for t in range(tied.shape[0]):
        r = tied[t]
        k = ks[r]
        for c in range(n):
            vals[c] = rows[r, c]
            idx[c] = c
        lo, hi = 0, n - 1
        while hi > lo:
            if hi == lo + 1:
                x, y = vals[lo], vals[hi]
                if (x != x and y == y) or x > y:
                    vals[lo], vals[hi] = y, x
                    idx[lo], idx[hi] = idx[hi], idx[lo]
                break
            p = lo + (hi - lo) // 2
            vals[p], vals[lo + 1] = vals[lo + 1], vals[p]
            idx[p], idx[lo + 1] = idx[lo + 1], idx[p]
            for a, b in ((lo + 1, hi), (lo, hi), (lo + 1, lo)):
                x, y = vals[a], vals[b]
                if (x != x and y == y) or x > y:
                    vals[a], vals[b] = y, x
                    idx[a], idx[b] = idx[b], idx[a]
            i, j, piv = lo + 1, hi, vals[lo]
            while True:
                i += 1
                while (piv != piv and vals[i] == vals[i]) or piv > vals[i]:
                    i += 1
                j -= 1
                while (vals[j] != vals[j] and piv == piv) or vals[j] > piv:
                    j -= 1
                if j < i:
                    break
                vals[i], vals[j] = vals[j], vals[i]
                idx[i], idx[j] = idx[j], idx[i]
            vals[lo], vals[j] = vals[j], vals[lo]
            idx[lo], idx[j] = idx[j], idx[lo]
            if j <= k:
                lo = i
            if j >= k:
                hi = j - 1
        out[r] = idx[k]

