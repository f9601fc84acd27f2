"""torch's CPU random numbers: the Mersenne Twister stream of a CPU ``Generator`` and the way
torch's CPU kernels turn it into samples.

``manual_seed(s)`` followed by the same calls gives the numbers torch gives: to the last bit
for uniform, integer, permutation and Bernoulli draws and for float32 normals (torch's AVX2
kernel's float32 ``log`` and ``sincos`` are reproduced here), and for the float64 normal,
exponential, Cauchy, geometric and log-normal samplers up to the last bit of the platform's
``log``, ``sin``, ``cos`` and ``tan``.
What torch does, and so what this module does, per sampler:

- the stream: mt19937 seeded with the seed's low 32 bits; ``random()`` is one 32-bit draw,
  ``random64()`` two, the first one the high half;
- uniform on ``[from, to)``: float64 from ``random64()``'s low 53 bits, the smaller floats
  from ``random()``'s low 24 bits, scaled in float32 (and rounded to the half types);
- normal: a tensor of 16 or more contiguous elements is filled with uniforms and turned into
  normals 16 at a time (Box-Muller on pairs ``(i, i + 8)``; for a remainder, the last 16 are
  made again from 16 new draws, or for the half types from the remainder and new draws), in
  float64 for float64 and float32 otherwise; smaller or strided tensors draw pairs of float64
  uniforms one element at a time, and the generator keeps the unused second normal of a pair
  for the next draw;
- integers in ``[low, high)``: ``random() % (high - low) + low``, ``random64()`` for ranges of
  2**32 or more in int64, float64, float32 and bfloat16;
- permutations: Fisher-Yates, swapping ``i`` with ``i + random() % (n - i)``;
- exponential, geometric, Cauchy: one float64 uniform per element; log-normal: the normal
  sampler's one-at-a-time draws; gamma, Poisson and binomial: torch's rejection loops
  (``ops/rng_kernels``).

Bernoulli draws and ``multinomial`` are built on these uniforms in ``random.py`` (one float64
uniform per element, or a float32 one for float32 probabilities; torch's Intel-only MKL path
for ``bernoulli_(p)`` with a number ``p`` is not followed, its AMD and non-MKL path is).
Where torch's build fuses a multiply and an add (``u * (to - from) + from``, ``x * std +
mean``), so does this module. Strided tensors are filled in memory order, as torch's
iterators visit them (``in_memory_order``). Everything here is NumPy on
``numpy.random.MT19937``, which is the same generator.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["Stream", "in_memory_order"]

_SHIFT32 = np.uint64(32)
_TWO_PI = 2.0 * math.pi


class Stream:
    """A CPU generator's state: the mt19937 bits and torch's cached second normal."""

    def __init__(self, seed: int) -> None:
        self.bits = np.random.MT19937()
        self.bits._legacy_seeding(seed & 0xFFFF_FFFF)
        # NumPy's full-range uint32 integers are the generator's raw 32-bit draws, one each
        self.numpy = np.random.Generator(self.bits)
        self.next_normal: float | None = None

    def get_state(self) -> dict:
        return {"mt19937": self.bits.state, "next_normal": self.next_normal}

    def set_state(self, state: dict) -> None:
        self.bits.state = state["mt19937"]
        self.next_normal = state["next_normal"]

    # ------------------------------------------------------------ raw draws
    def random(self, n: int) -> np.ndarray:
        """``n`` draws of torch's ``random()``: 32 bits each."""
        if n < 4096:  # (the cheaper call; the other is the faster loop)
            return self.bits.random_raw(n).astype(np.uint32)
        return self.numpy.integers(0, 0xFFFF_FFFF, size=n, dtype=np.uint32, endpoint=True)

    def random64(self, n: int) -> np.ndarray:
        """``n`` draws of torch's ``random64()``: two 32-bit draws, the first the high half."""
        pairs = self.random(2 * n).view(np.uint64)  # (little-endian: the first is the low half)
        return (pairs << _SHIFT32) | (pairs >> _SHIFT32)

    def unit_double(self, n: int) -> np.ndarray:
        """Uniforms on [0, 1) from ``random64()``'s low 53 bits (two exact float64 parts)."""
        raw = self.random(2 * n)
        return (raw[0::2] & np.uint32(0x1F_FFFF)) * 2.0 ** -21 + raw[1::2] * 2.0 ** -53

    def unit_float(self, n: int) -> np.ndarray:
        return (self.random(n) & np.uint32(0xFF_FFFF)).astype(np.float32) * np.float32(2.0 ** -24)

    # ------------------------------------------------------------ samplers (flat, in order)
    def uniform(self, n: int, dt: Any, low: float = 0.0, high: float = 1.0) -> np.ndarray:
        """In the floating dtype ``dt`` (a jitgrad dtype), as all samplers here."""
        if (low, high) == (0.0, 1.0) and dt.name in ("float32", "float64"):  # (u * 1 + 0 is u)
            return self.unit_double(n) if dt.name == "float64" else self.unit_float(n)
        if dt.name == "float64":
            return _fma64(self.unit_double(n), float(high) - float(low), float(low))
        # (the half types: float32's draw, rounded; one that rounds up to ``to`` is ``from``)
        lo, hi = np.float32(low), np.float32(high)
        out = _to(_fma(self.unit_float(n), hi - lo, lo), dt)
        if dt.name != "float32":
            top, bottom = _to(np.array([hi, lo]), dt)
            out[out == top] = bottom
        return out

    def normal(self, n: int, dt: Any, mean: float = 0.0, std: float = 1.0,
               contiguous: bool = True) -> np.ndarray:
        if n >= 16 and contiguous:
            return self._normal_fill(n, dt, float(mean), float(std))
        values = self.normal_doubles(n)
        if (mean, std) != (0.0, 1.0):
            values = _fma64(values, float(std), float(mean))
        return _to(values, dt)

    def normal_doubles(self, n: int) -> np.ndarray:
        """``n`` standard normals of torch's one-at-a-time sampler (with the cached second)."""
        out = np.empty(n, np.float64)
        start = 0
        if n and self.next_normal is not None:
            out[0], self.next_normal, start = self.next_normal, None, 1
        pairs = (n - start + 1) // 2
        if pairs:
            u = self.unit_double(2 * pairs)
            radius = np.sqrt(-2.0 * np.log1p(-u[1::2]))
            theta = _TWO_PI * u[0::2]
            both = np.empty(2 * pairs, np.float64)
            both[0::2], both[1::2] = radius * np.cos(theta), radius * np.sin(theta)
            out[start:] = both[:n - start]
            if (n - start) % 2:
                self.next_normal = float(both[-1])
        return out

    def _normal_fill(self, n: int, dt: Any, mean: float, std: float) -> np.ndarray:
        if dt.name == "float64":
            data = self.unit_double(n)
        else:  # (float32 uniforms for the half types too, as torch draws them)
            data = self.unit_float(n)
        full, rest = n // 16 * 16, n % 16
        tail = None
        if rest:
            if dt.name in ("float32", "float64"):  # the last 16 recomputed from 16 new draws
                tail = self.unit_double(16) if dt.name == "float64" else self.unit_float(16)
            else:  # the half types: the last partial group completed with new draws
                tail = np.concatenate([data[full:], self.unit_float(16 - rest)])
        data[:full] = _box_muller16(data[:full], dt, mean, std)
        if rest:
            data[n - 16:] = _box_muller16(tail, dt, mean, std)
        return _to(data, dt)

    def integers(self, n: int, dt: Any, low: int, high: int) -> np.ndarray:
        span = int(high) - int(low)
        wide = span >= 1 << 32 and dt.name in ("int64", "float64", "float32", "bfloat16")
        raw = self.random64(n) if wide else self.random(n)
        values = (raw % np.uint64(span)).astype(np.int64) + np.int64(low)
        return _to(values, dt)

    def permutation(self, n: int) -> np.ndarray:
        perm = np.arange(n, dtype=np.int64)
        if n > 1:
            offsets = (self.random(n - 1) % np.arange(n, 1, -1, dtype=np.uint64)).astype(np.int64)
            _swap_forward(perm, offsets)
        return perm

    def exponential(self, n: int, lambd: float) -> np.ndarray:
        return -1.0 / lambd * np.log(1.0 - self.unit_double(n))

    def geometric(self, n: int, p: float) -> np.ndarray:
        return np.ceil(np.log(self.unit_double(n)) / math.log(1.0 - p))

    def cauchy(self, n: int, median: float, sigma: float) -> np.ndarray:
        return _fma64(sigma, np.tan(math.pi * (self.unit_double(n) - 0.5)), median)

    def log_normal(self, n: int, mean: float, std: float) -> np.ndarray:
        return np.exp(_fma64(self.normal_doubles(n), std, mean))

    def standard_gamma(self, alpha: np.ndarray, single: bool) -> np.ndarray:
        """torch's ``sample_gamma`` for each of ``alpha`` (float64 values; ``single``: the
        parameters are float32 ones), in order: float64 results."""
        state = np.array([self.next_normal is not None, self.next_normal or 0.0, single],
                         np.float64)
        out = self._rejection("standard_gamma", np.reshape(alpha, (-1, 1)), state)
        self.next_normal = float(state[1]) if state[0] else None
        return out

    def poisson(self, rates: np.ndarray) -> np.ndarray:
        """torch's ``sample_poisson`` for each of ``rates`` (float64), in order."""
        return self._rejection("poisson", np.reshape(rates, (-1, 1)), np.zeros(3))

    def binomial(self, count: np.ndarray, prob: np.ndarray, single: bool) -> np.ndarray:
        """torch's ``sample_binomial`` for each (count, prob) (float64 values; ``single``:
        float32 ones), in order."""
        params = np.stack([np.ravel(count), np.ravel(prob)], axis=1)
        return self._rejection("binomial", params, np.array([0.0, 0.0, single]))

    def _rejection(self, name: str, params: np.ndarray, state: np.ndarray) -> np.ndarray:
        """Runs the rejection-sampling kernel ``name`` over the rows of ``params`` on this stream's
        draws: a rejection loop draws an unknown number, so the kernel gets a budget of raw
        draws and says how many it used (or that it ran out: then it runs again, on more)."""
        from .ops.rng_kernels import kernel

        params = np.ascontiguousarray(params, np.float64)  # (one row per element)
        out = np.empty(params.shape[0], np.float64)
        saved, first = self.bits.state, state.copy()
        budget = 12 * params.shape[0] + 64
        while True:
            used = kernel(name)(params, self.random(budget), out, state)
            self.bits.state = saved
            if used >= 0:
                break
            state[:] = first
            budget *= 4
        self.random(used)  # (the draws used, and no more)
        return out



def in_memory_order(flat: np.ndarray, shape: tuple, strides: tuple) -> np.ndarray:
    """The values ``flat``, drawn in the order torch's iterators visit a tensor of these
    ``strides`` (memory order: the largest stride outermost), laid out in ``shape``."""
    dims = [d for d in range(len(shape)) if shape[d] > 1]
    order = sorted(dims, key=lambda d: -abs(strides[d]))
    if order == dims:
        return flat.reshape(shape)
    order += [d for d in range(len(shape)) if shape[d] <= 1]
    laid = flat.reshape([shape[d] for d in order])
    return laid.transpose(np.argsort(order))


def _box_muller16(data: np.ndarray, dt: Any, mean: float, std: float) -> np.ndarray:
    """torch's ``normal_fill_16`` on groups of 16 uniforms: pairs ``(j, j + 8)``; float32 (the
    half types too, rounded at the end) as torch's AVX2 kernel computes it."""
    from .ops.rng_kernels import kernel

    if dt.name == "float64":
        data = np.array(data, np.float64)
        kernel("box_muller16_float64")(data)
        return data if (mean, std) == (0.0, 1.0) else _fma64(data, std, mean)
    groups = np.asarray(data, np.float32).reshape(-1, 16)
    u1 = (np.float32(1) - groups[:, :8]).reshape(-1)
    u2 = np.ascontiguousarray(groups[:, 8:]).reshape(-1)
    cos, sin = np.empty_like(u1), np.empty_like(u1)
    kernel("box_muller_float32")(u1, u1.view(np.uint32), u2, np.float32(mean), np.float32(std),
                                 cos, sin)
    return np.concatenate([cos.reshape(-1, 8), sin.reshape(-1, 8)], axis=1).reshape(-1)


def _fma(a: Any, b: Any, c: Any) -> np.ndarray:
    """``a * b + c`` of float32 values (numbers are rounded to float32 first) with one
    rounding: their float64 product is exact."""
    a, b, c = (np.asarray(v, np.float32).astype(np.float64) for v in (a, b, c))
    return (a * b + c).astype(np.float32)


def _fma64(a: Any, b: Any, c: Any) -> np.ndarray:
    """``a * b + c`` in float64 with one rounding: the product's exact error (Veltkamp's split)
    and the sum's (Knuth's two-sum) added back, so the result is the fused one except when the
    sum of the two errors itself rounds at a tie (a few in 2**50)."""
    a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
    p = a * b
    ta, tb = 134217729.0 * a, 134217729.0 * b  # 2**27 + 1
    a_hi, b_hi = ta - (ta - a), tb - (tb - b)
    a_lo, b_lo = a - a_hi, b - b_hi
    p_err = ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    total = p + c
    back = total - p
    s_err = (p - (total - back)) + (c - back)
    return total + (s_err + p_err)


def _swap_forward(perm: np.ndarray, offsets: np.ndarray) -> None:
    if perm.size > 1 << 14:
        from .ops.rng_kernels import kernel

        kernel("fisher_yates_swaps")(perm, offsets)
        return
    values, steps = perm.tolist(), offsets.tolist()
    for i, z in enumerate(steps):
        j = i + z
        values[i], values[j] = values[j], values[i]
    perm[:] = values


def _to(values: np.ndarray, dt: Any) -> np.ndarray:
    """``values`` in the jitgrad dtype ``dt`` (bfloat16: rounded, kept in float32)."""
    from .dtypes import round_to_bfloat16

    out = values.astype(dt.np)
    return round_to_bfloat16(out) if dt.name == "bfloat16" else out
