"""More of ``torch.nn.functional``: rrelu / rrelu_, the in-place activation forms torch names
(relu_, hardtanh_, selu_, celu_, threshold_), pdist, the deprecated upsample aliases of
``interpolate``, and the cross-map LRN that ``nn.CrossMapLRN2d`` computes."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .. import dtypes
from .._generator import default_generator
from ..ops.creation import tensor
from ..ops.registry import state
from ..ops.dtype_rules import refuse_dtypes
from ..ops.selection import where
from ..random import rand
from ..tensor import Tensor
from ._functional_act import celu, hardtanh, selu, threshold
from ._functional_core import leaky_relu, relu
from .functional_spatial import interpolate

__all__ = ["rrelu", "rrelu_", "relu_", "hardtanh_", "selu_", "celu_", "threshold_", "pdist",
           "upsample", "upsample_nearest", "upsample_bilinear"]


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,  # noqa: A002
          training: bool = False, inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: in training each non-positive element is multiplied by a slope
    drawn from ``U(lower, upper)`` (the gradient there is that slope); in evaluation the slope
    is ``(lower + upper) / 2`` (``leaky_relu``).

    Args:
        input: the input.
        lower: the lower bound of the slopes.
        upper: the upper bound of the slopes.
        training: draw random slopes (else the mean slope).
        inplace: write the result into ``input``.

    Returns:
        The activation.
    """
    return _rrelu(input, lower, upper, training, inplace)


# (torch's training kernel is built for float32, float64 and bfloat16 only)
_RRELU_CHECK = refuse_dtypes(**dict.fromkeys(("complex", "integer", "bool", "float16"),
                                             "rrelu_with_noise_out_cpu"))


def _rrelu(input: Tensor, lower: float, upper: float, training: bool,  # noqa: A002
           inplace: bool, generator: Any = None) -> Tensor:
    """``rrelu``, its slopes drawn from ``generator`` (``torch.rrelu`` takes one)."""
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace=inplace)
    _RRELU_CHECK((input,))
    if input.device.type == "cpu" and input._trace is None and not state.traces:
        noise = _torch_slopes(input, lower, upper, generator)
    else:  # (traced or on a device: a slope drawn for every element)
        noise = rand(input.shape, dtype=input.dtype, device=input.device,
                     generator=generator) * (upper - lower) + lower
        noise = where(input.detach() > 0, 1.0, noise)
    if inplace:
        from ..ops.inplace import inplace as _inplace

        return _inplace(input, lambda s: s * noise)
    return input * noise


def _torch_slopes(input: Tensor, lower: float, upper: float, generator: Any) -> Tensor:  # noqa: A002
    """torch's CPU slopes: 1 for a positive element, else one float64 uniform draw on
    ``[lower, upper)`` (the bounds in the computation's precision: float32 but for float64),
    in order. (bfloat16: torch multiplies by the float32 slope, jitgrad by the rounded one.)"""
    values = np.asarray(input.detach()._data)
    acc = np.float64 if input.dtype is dtypes.float64 else np.float32
    lo, hi = float(acc(lower)), float(acc(upper))
    stream = (generator or default_generator())._host()
    slopes = np.ones(values.shape, dtype=acc)
    drawn = ~(values > 0)
    slopes[drawn] = stream.unit_double(int(drawn.sum())) * (hi - lo) + lo
    return tensor(slopes, dtype=input.dtype)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,  # noqa: A002
           training: bool = False) -> Tensor:
    """In-place ``rrelu``."""
    return rrelu(input, lower, upper, training, inplace=True)


def relu_(input: Tensor) -> Tensor:  # noqa: A002
    """In-place ``relu``."""
    return relu(input, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:  # noqa: A002
    """In-place ``hardtanh``."""
    return hardtanh(input, min_val, max_val, inplace=True)


def selu_(input: Tensor) -> Tensor:  # noqa: A002
    """In-place ``selu``."""
    return selu(input, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:  # noqa: A002
    """In-place ``celu``."""
    return celu(input, alpha, inplace=True)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:  # noqa: A002
    """In-place ``threshold``."""
    return _threshold(input, threshold, value, inplace=True)


_threshold = threshold


def pdist(input: Tensor, p: float = 2) -> Tensor:  # noqa: A002
    """The ``p``-norm distances between the rows of the ``(N, M)`` ``input``: the upper
    triangle of the distance matrix, row by row (``N * (N - 1) / 2`` values).

    Args:
        input: an ``(N, M)`` tensor.
        p: the norm's order (``>= 0``).

    Returns:
        The distances.
    """
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    if i.size == 0:
        return input.new_zeros(0)
    if input.dtype.name in ("float16", "bfloat16"):  # (torch's kernel: float32, float64 only)
        raise NotImplementedError(
            f"\"pdist\" not implemented for '{input.dtype._scalar_name}'")
    a = input.index_select(0, tensor(i, device=input.device))
    b = input.index_select(0, tensor(j, device=input.device))
    return (a - b).norm(p, dim=1)


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",  # noqa: A002, ANN001
             align_corners: bool | None = None) -> Tensor:
    """Deprecated: ``interpolate`` (warns, as torch)."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:  # noqa: A002, ANN001
    """Deprecated: ``interpolate(..., mode='nearest')`` (warns, as torch)."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:  # noqa: A002, ANN001
    """Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)`` (warns)."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def _cross_map_windows(size: int, channels: int) -> np.ndarray:
    """The (C, C) 0/1 matrix of the channels each channel's scale sums, following the running
    window of torch's ``CrossMapLRN2d`` forward exactly."""
    eye = np.eye(channels)
    pre_pad = int((size - 1) / 2 + 1)
    crop = min(pre_pad, channels)
    rows = np.zeros((channels, channels))
    rows[0] = eye[:crop].sum(0)
    for c in range(1, channels):
        rows[c] = rows[c - 1]
        if c < channels - pre_pad + 1:
            rows[c] += eye[c + pre_pad - 1]
        if c > pre_pad:
            rows[c] -= eye[c - pre_pad]
    return rows


def cross_map_lrn2d(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,  # noqa: A002
                    k: float = 1.0) -> Tensor:
    """``input * (k + alpha / size * (sum of squares over a window of channels)) ** -beta``,
    the window as torch's ``CrossMapLRN2d`` runs it (composed: exact gradient)."""
    if input.ndim != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D instead.")
    w = tensor(_cross_map_windows(size, input.shape[1]), dtype=input.dtype, device=input.device)
    sq = (input * input).permute(0, 2, 3, 1)  # (N, H, W, C)
    scale = (sq @ w.t()).permute(0, 3, 1, 2) * (alpha / size) + k
    return input * scale.pow(-beta)
