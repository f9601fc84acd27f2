"""``torch.nn.functional``'s ``group_norm`` and ``interpolate``, composed of jitgrad ops (so
they are differentiable to any order and traceable by ``jit``; their nodes are the pieces',
where torch records one ``NativeGroupNormBackward0`` / ``UpsampleBilinear2DBackward0``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..ops.creation import tensor
from ..ops.dtype_rules import check_norm_parameters
from ..ops.memory_formats import channels_last, channels_last_3d, follow_channels_last
from ..tensor import Tensor

__all__ = ["group_norm", "interpolate"]


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalizes each of ``num_groups`` groups of channels of ``(N, C, *)`` input over its
    channels and positions (biased variance), then scales by ``weight`` and shifts by ``bias``
    (per channel)."""
    if input.ndim < 2 or input.shape[1] % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    if not input.dtype.is_floating_point:  # (torch's kernel is floating only)
        raise NotImplementedError('"GroupNormKernelImpl" not implemented for '
                                  f"'{input.dtype._scalar_name}'")
    check_norm_parameters(input, weight, bias)
    n, c = input.shape[:2]
    groups = input.reshape(n, num_groups, -1)
    mean = groups.mean(-1, keepdim=True)
    var = groups.var(-1, unbiased=False, keepdim=True)
    out = ((groups - mean) / (var + eps).sqrt()).reshape(input.shape)
    per_channel = (1, c) + (1,) * (input.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(per_channel)
    if bias is not None:
        out = out + bias.reshape(per_channel)
    out = out.to(input.dtype)  # (float32 parameters of a 16-bit input: the input's dtype)
    fmt = {4: channels_last, 5: channels_last_3d}.get(input.ndim)
    if fmt is not None and not input.is_contiguous() and input.is_contiguous(memory_format=fmt):
        return out.contiguous(memory_format=fmt)  # (torch's kernel keeps that layout)
    return out


_MODES = {"nearest": 0, "nearest-exact": 0, "area": 0, "linear": 3, "bilinear": 4, "bicubic": 4,
          "lanczos": 4, "trilinear": 5}


def _sizes(x: Tensor, size: Any, scale_factor: Any, spatial: int,
           recompute_scale_factor: bool | None) -> tuple[list[int], list[float]]:
    """The output sizes and the scales (input over output per dim) torch's kernels use."""
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    shape = list(x.shape[2:])
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != spatial:
                raise ValueError(
                    f"Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {shape} and output size of {size}. Please "
                    "provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                    "(o1, o2, ...,oK) format.")
            if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                       for v in size):
                raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, "
                                "int] or Tuple[int, int, int], but got size with types "
                                f"{[type(v) for v in size]}")
            out = [int(v) for v in size]
        else:
            out = [int(size)] * spatial
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        return out, [i / o if o else 0.0 for i, o in zip(shape, out)]
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != spatial:
            raise ValueError(
                f"Input and scale_factor must have the same number of spatial dimensions, but got "
                f"input with spatial dimensions of {shape} and scale_factor of shape "
                f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
                "and scale_factor in (s1, s2, ...,sK) format.")
        factors = [float(v) for v in scale_factor]
    else:
        factors = [float(scale_factor)] * spatial
    out = [int(math.floor(i * f)) for i, f in zip(shape, factors)]
    if recompute_scale_factor:
        return out, [i / o if o else 0.0 for i, o in zip(shape, out)]
    return out, [1.0 / f if f else 0.0 for f in factors]


def _along(x: Tensor, dim: int, index: np.ndarray) -> Tensor:
    return x.index_select(dim, tensor(index.astype(np.int64), device=x.device))


def _check_interpolate_dtype(input: Tensor, mode: str, antialias: bool) -> None:  # noqa: A002
    """torch's refusal of a non-floating interpolation: uint8 only in the nearest modes and in
    2-d bilinear and bicubic, by the names of its kernels."""
    dt, linear = input.dtype, mode not in ("nearest", "nearest-exact")
    if dt.name == "uint8" and (not linear or input.ndim == 4):
        return
    if antialias:  # (and not for half or bfloat16 either)
        kernel = "compute_index_ranges_weights"
    elif mode == "bicubic":
        kernel = "compute_indices_weights_cubic"
    elif input.ndim == 4:
        kernel = f"upsample_{'bilinear' if linear else 'nearest'}2d_channels_last"
    else:
        kernel = f"compute_indices_weights_{'linear' if linear else 'nearest'}"
    raise NotImplementedError(
        f"\"{kernel}\" not implemented for '{dt._scalar_name}'")


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None,  # noqa: A002
                mode: str = "nearest", align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None, antialias: bool = False) -> Tensor:
    """Resizes ``(N, C, *spatial)`` input to ``size`` (or by ``scale_factor``) with torch's
    sampling: ``nearest``, ``nearest-exact``, ``linear`` (3-D), ``bilinear`` (4-D),
    ``bicubic`` (4-D), ``trilinear`` (5-D), with ``align_corners`` for the interpolating modes;
    ``area`` (the adaptive average pool); ``antialias`` for bilinear and bicubic (4-D), which
    ``lanczos`` (4-D, Lanczos-3) requires. A channels-last input gives a channels-last
    result, as torch's."""
    out = _interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor,
                       antialias)
    return follow_channels_last(out, input)


def _interpolate(input: Tensor, size: Any, scale_factor: Any, mode: str,  # noqa: A002
                 align_corners: bool | None, recompute_scale_factor: bool | None,
                 antialias: bool) -> Tensor:
    if mode not in _MODES:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
            "the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
            f"nearest-exact (got {mode})")
    linear = mode not in ("nearest", "nearest-exact", "area")
    if align_corners is not None and not linear:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    if mode in ("linear", "bilinear", "trilinear") and input.ndim != _MODES[mode] \
            and input.ndim in (3, 4, 5):
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs "
                                  f"{_MODES[mode]}D input")
    if input.ndim not in (3, 4, 5) or mode in ("bicubic", "lanczos") and input.ndim != 4:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
            "the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
            f"nearest-exact (got {mode})")
    if mode == "lanczos" and align_corners:
        raise ValueError("Lanczos mode does not support align_corners=True")
    if mode == "lanczos" and not antialias:
        raise ValueError("Lanczos mode requires antialias=True")
    spatial = input.ndim - 2
    out_sizes, scales = _sizes(input, size, scale_factor, spatial, recompute_scale_factor)
    if mode == "area":  # (torch's area mode is the adaptive average pool to the size)
        from ._functional_extra2 import adaptive_avg_pool1d
        from ._functional_pool import adaptive_avg_pool3d
        from .functional_conv import adaptive_avg_pool2d

        pool = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[spatial - 1]
        return pool(input, out_sizes)
    if any(v <= 0 for v in out_sizes + list(input.shape[2:])):
        names = ("D", "H", "W")[-spatial:]
        sizes = lambda vals: ", ".join(f"{a}: {v}" for a, v in zip(names, vals))  # noqa: E731
        joint = " and" if spatial == 1 else ""  # (torch's 1-d kernel says "and", the others not)
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({sizes(input.shape[2:])}){joint} output ({sizes(out_sizes)})")
    if not input.dtype.is_floating_point or antialias and input.dtype.itemsize == 2:
        _check_interpolate_dtype(input, mode, antialias)
    uint8_bilinear = mode == "bilinear" and input.dtype.name == "uint8"
    if mode in ("bicubic", "lanczos") or antialias or uint8_bilinear:
        from ._functional_resample import resample

        return resample(input, out_sizes, scales, mode, bool(align_corners), antialias)
    if linear and out_sizes == list(input.shape[2:]):
        return input.clone()  # torch's linear kernels copy when no size changes, whatever scale
    x = input  # (a linear mode's input is floating here: uint8 bilinear resampled above)
    # source indices in torch's arithmetic: float32 for nearest, the input's precision
    # (float32 unless float64) for the linear modes, so boundary cases round as torch's do
    acc = np.float64 if linear and input.dtype.itemsize == 8 else np.float32
    for k, (n_in, n_out, scale) in enumerate(zip(input.shape[2:], out_sizes, scales)):
        dim = 2 + k
        if n_in == n_out and (linear or mode == "nearest" and spatial == 2):
            continue  # (torch's linear kernels and its 2-d nearest one copy a dim kept as it is)
        dst, scale = np.arange(n_out, dtype=acc), acc(scale)
        if not linear:
            shift = acc(0.5 if mode == "nearest-exact" else 0.0)
            src = np.minimum(np.floor((dst + shift) * scale), n_in - 1)
            x = _along(x, dim, src)
            continue
        if align_corners:
            src = dst * (acc(n_in - 1) / acc(n_out - 1) if n_out > 1 else acc(0.0))
        else:
            src = np.maximum((dst + acc(0.5)) * scale - acc(0.5), acc(0.0))
        lo = np.minimum(np.floor(src), n_in - 1)
        hi = np.minimum(lo + 1, n_in - 1)
        frac = (src - lo).astype(np.float64)
        weight = tensor(frac.reshape((-1,) + (1,) * (input.ndim - dim - 1)),
                        dtype=x.dtype, device=x.device)
        x = _along(x, dim, lo) * (1 - weight) + _along(x, dim, hi) * weight
    return x
