"""``interpolate``'s bicubic, anti-aliased and Lanczos modes as separable resampling: along
each spatial dim, the input times an ``(out, in)`` weight matrix built in NumPy with torch's
arithmetic (``upsample_bicubic2d``'s clamped four taps with A = -0.75; the anti-aliased
kernels' filters stretched by the downscale and normalized: bicubic with A = -0.5,
Lanczos-3). Composed of jitgrad ops, so differentiable to any order and traceable by
``jit``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..ops.creation import tensor
from ..tensor import Tensor

__all__ = ["cubic_taps", "resample"]


def _cubic_near(x: Any, a: float) -> Any:
    """The cubic convolution kernel (Keys) for ``0 <= x < 1`` (arrays or tensors)."""
    return ((a + 2) * x - (a + 3)) * x * x + 1


def _cubic_far(x: Any, a: float) -> Any:
    """The cubic convolution kernel for ``1 <= x < 2``."""
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a


def cubic_taps(t: Any, a: float = -0.75) -> list:
    """The weights of the four taps at -1, 0, 1, 2 from ``floor`` for the fraction ``t``
    (arrays or tensors; A = -0.75 is torch's bicubic upsampling and grid sampling)."""
    return [_cubic_far(t + 1, a), _cubic_near(t, a), _cubic_near(1 - t, a), _cubic_far(2 - t, a)]


def _cubic(x: np.ndarray, a: float) -> np.ndarray:
    """The cubic convolution kernel at ``|x|``, 0 from 2 on."""
    x = np.abs(x)
    return np.where(x < 1, _cubic_near(x, a), np.where(x < 2, _cubic_far(x, a), 0.0))


def _source_scale(n_in: int, n_out: int, scale: float, align_corners: bool) -> float:
    """torch's area_pixel_compute_scale (``scale`` is ``1 / scale_factor`` or ``in / out``)."""
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return scale


def _bicubic_weights(n_in: int, n_out: int, scale: float, align_corners: bool) -> np.ndarray:
    """upsample_bicubic2d along one dim: four taps about ``floor(src)``, clamped to the
    input's edge (a clamped tap adds its weight to the edge element)."""
    s = _source_scale(n_in, n_out, scale, align_corners)
    dst = np.arange(n_out, dtype=np.float64)
    src = dst * s if align_corners else s * (dst + 0.5) - 0.5
    base = np.minimum(np.floor(src), n_in - 1)
    t = np.clip(src - base, 0.0, 1.0)
    weights = np.zeros((n_out, n_in))
    rows = np.arange(n_out)
    for k, w in enumerate(cubic_taps(t)):
        np.add.at(weights, (rows, np.clip(base - 1 + k, 0, n_in - 1).astype(np.int64)), w)
    return weights


def _lanczos3(x: np.ndarray) -> np.ndarray:
    """The Lanczos-3 window: ``sinc(x) sinc(x / 3)`` within 3, 0 beyond."""
    return np.where(np.abs(x) < 3.0, np.sinc(x) * np.sinc(x / 3.0), 0.0)


_FILTERS = {  # mode: (half-width of the filter, the filter)
    "bilinear": (1.0, lambda x: np.maximum(0.0, 1.0 - np.abs(x))),
    "bicubic": (2.0, lambda x: _cubic(x, -0.5)),
    "lanczos": (3.0, _lanczos3),
}


def _filter_weights(n_in: int, n_out: int, scale: float, align_corners: bool, mode: str,
                    antialias: bool) -> np.ndarray:
    """torch's separable kernels' weights (_compute_weights_aa): the mode's filter over the
    inputs within its support, normalized; anti-aliased, the filter is stretched by the scale
    when downsampling (and ``align_corners`` moves no centre)."""
    s = _source_scale(n_in, n_out, scale, align_corners)
    half_width, kernel = _FILTERS[mode]
    stretch = s if antialias and s >= 1.0 else 1.0
    support, inv = half_width * stretch, 1.0 / stretch
    delta = 0.5 if align_corners and not antialias else 0.0
    max_taps = int(np.ceil(support)) * 2 + 1
    weights = np.zeros((n_out, n_in))
    for i in range(n_out):
        center = s * (i + 0.5 - delta)
        lo = max(int(center - support + 0.5 + delta), 0)
        taps = min(max(min(int(center + support + 0.5 + delta), n_in) - lo, 0), max_taps)
        w = kernel((np.arange(lo, lo + taps) - center + 0.5 - delta) * inv)
        total = w.sum()
        weights[i, lo:lo + taps] = w / total if total != 0.0 else w
    return weights


def _int16_weights(w: np.ndarray) -> tuple[np.ndarray, int]:
    """torch's uint8 kernels' weights: ``w`` in int16 fixed point with as many fraction bits
    as the largest weight allows (up to 22), rounded half away from zero."""
    bits = 0
    while bits < 22 and int(0.5 + w.max() * (1 << (bits + 1))) < (1 << 15):
        bits += 1
    scaled = w * (1 << bits)
    return np.where(w < 0, np.trunc(scaled - 0.5), np.trunc(scaled + 0.5)), bits


def resample(x: Tensor, out_sizes: list[int], scales: list[float], mode: str,
             align_corners: bool, antialias: bool) -> Tensor:
    """``(N, C, H, W)`` ``x`` resized to ``out_sizes``, one matrix product per changed dim
    (the last first, as torch's separable kernels). uint8 as torch's uint8 kernels (bilinear
    too): int16 fixed-point weights, each pass rounded and clamped to uint8 (exact in
    float64)."""
    integral = not x.dtype.is_floating_point
    y = x.to(dtypes.float64) if integral else x
    for dim in reversed(range(2, x.ndim)):
        n_in, n_out = x.shape[dim], out_sizes[dim - 2]
        if n_in == n_out and (antialias or integral):
            continue  # (the separable kernels skip a dim whose size does not change)
        if mode == "bicubic" and not antialias:
            w = _bicubic_weights(n_in, n_out, scales[dim - 2], align_corners)
        else:  # (anti-aliased, or uint8 bilinear: torch's separable kernel for both)
            w = _filter_weights(n_in, n_out, scales[dim - 2], align_corners, mode, antialias)
        if integral:
            w, bits = _int16_weights(w)
        weights = tensor(w.T, dtype=y.dtype, device=y.device)  # (in, out)
        y = (y.movedim(dim, -1) @ weights).movedim(-1, dim)
        if integral:
            y = ((y + (1 << (bits - 1))) / (1 << bits)).floor().clamp(0, 255)
    if y._base is not None:  # (the last pass's movedim: a fresh row-major result, as torch's)
        y = y.contiguous()
    elif y is x:  # (no size changed: still a new tensor, as torch's)
        y = x.clone()
    return y.to(x.dtype) if integral else y
