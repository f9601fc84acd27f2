"""The loops of torch's CPU samplers that NumPy cannot run as array passes (``_torch_stream``):
randperm's swaps, the normal sampler's Box-Muller groups and the gamma and Poisson samplers'
rejection loops, compiled with Numba at first use as ``nn_kernels``' kernels are."""

from __future__ import annotations

import math

import numpy as np

from .nn_kernels import compiled

__all__ = ["kernel"]

_COMPILED: dict[str, object] = {}


def kernel(name: str):
    """The compiled kernel ``name`` of this module (compiled, or loaded from cache, once)."""
    return compiled(globals(), name, _COMPILED, helpers=_HELPERS)


def fisher_yates_swaps(perm, offsets):
    # torch's randperm: swap i with i + offsets[i], in order
    for i in range(offsets.size):
        j = i + offsets[i]
        held = perm[i]
        perm[i] = perm[j]
        perm[j] = held


# ---------------------------------------------------------------- torch's normal sampler
# (``_torch_stream``): Box-Muller on groups of 16 uniforms, pairs (j, j + 8), in place. The
# float32 form is torch's AVX2 kernel: Cephes' single-precision log and sincos, with the
# multiply-adds its compiler fuses (a float32 fma is exact through float64: the product of two
# floats is exact there, so the sum is rounded once before the float32 rounding).

_F32 = np.float32
_HELPERS = ("_fma32", "_log32", "_sincos32", "_unit", "_stirling_tail", "_rounded")
_LOG_POLY = (_F32(7.0376836292e-2), _F32(-1.1514610310e-1), _F32(1.1676998740e-1),
             _F32(-1.2420140846e-1), _F32(1.4249322787e-1), _F32(-1.6668057665e-1),
             _F32(2.0000714765e-1), _F32(-2.4999993993e-1), _F32(3.3333331174e-1))


def _fma32(a, b, c):
    return _F32(np.float64(a) * np.float64(b) + np.float64(c))


def _log32(x, bits):
    # x in (0, 1], bits its float32 bits: x = m * 2**e with m in [0.5, 1), e from the bits and
    # m = x * 2**-e (exact), with no call and no branch, so that the loop vectorizes
    e_int = np.int32(bits >> np.uint32(23)) - np.int32(126)
    shift = -e_int  # (in [-1, 23])
    m = x * (_F32(np.int32(1) << max(shift, 0)) * (_F32(0.5) if shift < 0 else _F32(1.0)))
    small = m < _F32(0.707106781186547524)
    x = (m - _F32(1)) + (m if small else _F32(0))
    e = _F32(e_int) - (_F32(1) if small else _F32(0))
    z = x * x
    y = _LOG_POLY[0]
    for k in range(1, 9):
        y = _fma32(y, x, _LOG_POLY[k])
    y = _fma32(y * x, z, e * _F32(-2.12194440e-4))
    y = _fma32(z, _F32(-0.5), y)
    return _fma32(e, _F32(0.693359375), x + y)


def _sincos32(x):
    octant = np.int32(x * _F32(1.27323954473516))
    octant = (octant + 1) & ~1
    y = _F32(octant)
    x = _fma32(y, _F32(-0.78515625), x)
    x = _fma32(y, _F32(-2.4187564849853515625e-4), x)
    x = _fma32(y, _F32(-3.77489497744594108e-8), x)
    z = x * x
    c = _fma32(_fma32(_F32(2.443315711809948e-5), z, _F32(-1.388731625493765e-3)), z,
               _F32(4.166664568298827e-2))
    c = _fma32(c * z, z, -(z * _F32(0.5))) + _F32(1)
    s = _fma32(_fma32(_F32(-1.9515295891e-4), z, _F32(8.3321608736e-3)), z,
               _F32(-1.6666654611e-1))
    s = _fma32(s * z, x, x)
    swap = (octant & 2) != 0
    sin = c if swap else s
    cos = s if swap else c
    sin = -sin if (octant & 4) != 0 else sin
    cos = -cos if (~(octant - 2) & 4) != 0 else cos
    return sin, cos


def box_muller_float32(u1, u1_bits, u2, mean, std, cos_out, sin_out):
    # u1: the 1 - u of each pair's first uniform (u1_bits: its bits), u2: the second
    two_pi = _F32(2.0 * math.pi)
    for k in range(u1.size):
        radius = np.sqrt(_F32(-2) * _log32(u1[k], u1_bits[k]))
        sin, cos = _sincos32(two_pi * u2[k])
        cos_out[k] = _fma32(radius * cos, std, mean)
        sin_out[k] = _fma32(radius * sin, std, mean)


def box_muller16_float64(data):
    # standard normals (the caller scales and shifts them with one rounding, as torch fuses)
    for g in range(0, data.size, 16):
        for j in range(g, g + 8):
            radius = math.sqrt(-2.0 * math.log(1.0 - data[j]))
            theta = 2.0 * math.pi * data[j + 8]
            data[j] = radius * math.cos(theta)
            data[j + 8] = radius * math.sin(theta)


# ---------------------------------------------------------------- torch's gamma sampler
# Marsaglia and Tsang's rejection method as torch's ``sample_gamma`` runs it: float64
# arithmetic, except that for float32 parameters the steps on alpha itself (1 / alpha,
# alpha + 1, alpha - 1/3) are float32 ones; its uniforms are float64 ones and its normals the
# Box-Muller pairs of torch's one-at-a-time sampler (the second one kept for the next draw).
# Each row of the first argument holds one element's parameters. The draws come from
# ``raw``, torch's 32-bit ``random()`` values in order; ``state`` holds (whether a normal is
# kept, that normal, whether the parameters are float32) and is updated; the kernel returns
# how many draws it used, or -1 when they ran out (the caller then gives it more).

def _unit(raw, pos):
    # torch's float64 uniform from random64() = (raw[pos] << 32 | raw[pos + 1]): its low 53 bits
    return (raw[pos] & 0x1FFFFF) * 2.0 ** -21 + raw[pos + 1] * 2.0 ** -53


_THIRD32 = np.float64(np.float32(1.0) / np.float32(3.0))
_SQUEEZE = np.float64(np.float32(0.0331))


def standard_gamma(alpha, raw, out, state):
    pos = 0
    has_normal = state[0] != 0.0
    normal = state[1]
    single = state[2] != 0.0
    for i in range(alpha.shape[0]):
        a = alpha[i, 0]
        scale = 1.0
        if a < 1.0:
            if a == 0.0:
                out[i] = 0.0
                continue
            if pos + 2 > raw.size:
                return -1
            u = _unit(raw, pos)
            pos += 2
            if single:
                power = np.float64(np.float32(1.0) / np.float32(a))
                a = np.float64(np.float32(a) + np.float32(1.0))
            else:
                power = 1.0 / a
                a = a + 1.0
            scale *= (1.0 - u) ** power
        d = np.float64(np.float32(a) - np.float32(_THIRD32)) if single else a - _THIRD32
        c = 1.0 / math.sqrt(9.0 * d)
        while True:
            while True:
                if has_normal:
                    x = normal
                    has_normal = False
                else:
                    if pos + 4 > raw.size:
                        return -1
                    u1 = _unit(raw, pos)
                    u2 = _unit(raw, pos + 2)
                    pos += 4
                    radius = math.sqrt(-2.0 * math.log1p(-u2))
                    theta = 2.0 * math.pi * u1
                    normal = radius * math.sin(theta)
                    has_normal = True
                    x = radius * math.cos(theta)
                y = 1.0 + c * x
                if y > 0:
                    break
            v = y * y * y
            if pos + 2 > raw.size:
                return -1
            u = 1.0 - _unit(raw, pos)
            pos += 2
            xx = x * x
            if u < 1.0 - _SQUEEZE * xx * xx:
                break
            if math.log(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
                break
        out[i] = scale * d * v
    state[0] = 1.0 if has_normal else 0.0
    state[1] = normal
    return pos


# ---------------------------------------------------------------- torch's Poisson sampler
# Hormann's transformed rejection (PTRS) for rates of 10 or more, else the product of
# uniforms; float64 uniforms from ``raw`` as above (``state`` is unused).


def poisson(rates, raw, out, state):
    pos = 0
    for i in range(rates.shape[0]):
        lam = rates[i, 0]
        if lam >= 10.0:
            slam = math.sqrt(lam)
            loglam = math.log(lam)
            b = 0.931 + 2.53 * slam
            a = -0.059 + 0.02483 * b
            invalpha = 1.1239 + 1.1328 / (b - 3.4)
            vr = 0.9277 - 3.6224 / (b - 2)
            while True:
                if pos + 4 > raw.size:
                    return -1
                u = _unit(raw, pos) - 0.5
                v = _unit(raw, pos + 2)
                pos += 4
                us = 0.5 - abs(u)
                k = math.floor((2 * a / us + b) * u + lam + 0.43)
                if us >= 0.07 and v <= vr:
                    break
                if k < 0 or (us < 0.013 and v > us):
                    continue
                if (math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b)
                        <= -lam + k * loglam - math.lgamma(k + 1.0)):
                    break
            out[i] = k
        elif lam == 0.0:
            out[i] = 0.0
        else:
            enlam = math.exp(-lam)
            count = 0
            prod = 1.0
            while True:
                if pos + 2 > raw.size:
                    return -1
                prod *= _unit(raw, pos)
                pos += 2
                if prod > enlam:
                    count += 1
                else:
                    break
            out[i] = count
    return pos


# ---------------------------------------------------------------- torch's binomial sampler
# Inversion by geometric jumps for a mean below 10, else Hormann's BTRS (with torch's log in
# the acceptance test), on the smaller of p and 1 - p; ``single``: float32 count and prob,
# whose own products torch computes in float32. Rows of ``params``: (count, prob).

_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_tail(k):
    if k <= 9:
        return _STIRLING_TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _rounded(x, single):
    return np.float64(np.float32(x)) if single else x


def binomial(params, raw, out, state):
    pos = 0
    single = state[2] != 0.0
    for i in range(params.shape[0]):
        count, prob = params[i, 0], params[i, 1]
        if count <= 0.0 or prob <= 0.0:
            out[i] = 0.0
            continue
        if prob >= 1.0:
            out[i] = count
            continue
        if prob != prob:
            out[i] = np.nan
            continue
        flip = prob > 0.5
        p = _rounded(1.0 - prob, single) if flip else prob
        if _rounded(count * p, single) >= 10.0:
            stddev = math.sqrt(_rounded(_rounded(count * p, single) * _rounded(1 - p, single),
                                        single))
            stddev = _rounded(stddev, single)
            b = 1.15 + 2.53 * stddev
            a = -0.0873 + 0.0248 * b + 0.01 * p
            c = _rounded(count * p, single) + 0.5
            v_r = 0.92 - 4.2 / b
            r = _rounded(p / _rounded(1 - p, single), single)
            alpha = (2.83 + 5.1 / b) * stddev
            m = math.floor(_rounded((count + 1) * p, single))
            while True:
                if pos + 4 > raw.size:
                    return -1
                u = _unit(raw, pos) - 0.5
                v = _unit(raw, pos + 2)
                pos += 4
                us = 0.5 - abs(u)
                k = _rounded(math.floor((2 * a / us + b) * u + c), single)
                if k < 0 or k > count:
                    continue
                if us >= 0.07 and v <= v_r:
                    break
                v = math.log(v * alpha / (a / (us * us) + b))
                bound = ((m + 0.5) * math.log((m + 1) / (r * (count - m + 1)))
                         + _rounded(count + 1, single)
                         * math.log((count - m + 1) / _rounded(count - k + 1, single))
                         + (k + 0.5) * math.log(r * _rounded(count - k + 1, single)
                                                / _rounded(k + 1, single))
                         + _stirling_tail(m) + _stirling_tail(count - m)
                         - _stirling_tail(k) - _stirling_tail(_rounded(count - k, single)))
                if v <= bound:
                    break
        else:
            logprob = _rounded(math.log1p(-p), single)
            geom_sum = 0.0
            k = 0.0
            while True:
                if pos + 2 > raw.size:
                    return -1
                u = _unit(raw, pos)
                pos += 2
                geom_sum += math.ceil(math.log(u) / logprob)
                if geom_sum > count:
                    break
                k += 1.0
        out[i] = _rounded(count - k, single) if flip else k
    return pos
