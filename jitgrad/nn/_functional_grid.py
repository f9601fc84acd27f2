"""``affine_grid`` (2-d) and ``grid_sample`` (2-d and 3-d), composed of jitgrad ops:
differentiable w.r.t. the input, the grid and ``theta`` (the Spatial Transformer tutorial
trains through both)."""

from __future__ import annotations

import warnings
from typing import Any

from ..ops.autocast_policy import FP32, autocast_policy
from ..ops.creation import linspace, ones
from ..ops.movement import stack
from ..tensor import Tensor

__all__ = ["affine_grid", "grid_sample"]

_ALIGN_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since "
    "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
    "documentation of grid_sample for details.")


def _base(n: int, align_corners: bool, like: Tensor) -> Tensor:
    steps = linspace(-1.0, 1.0, n, dtype=like.dtype, device=like.device)
    return steps if align_corners or n == 1 else steps * ((n - 1) / n)


def affine_grid(theta: Tensor, size: Any, align_corners: bool | None = None) -> Tensor:
    """The sampling grid ``(N, H, W, 2)`` of the affine maps ``theta`` ``(N, 2, 3)`` for an
    output of ``size`` ``(N, C, H, W)`` (x then y, in [-1, 1] coordinates)."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=2)
        align_corners = False
    if not (theta.is_floating_point() or theta.is_complex()):
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) != 4:
        raise NotImplementedError(
            "affine_grid only supports 4D sizes, for 2D affine transformations (jitgrad). Got "
            f"size {size}.")
    if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
        raise ValueError("Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                         f"{size}. Got {theta.shape}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    n, _, h, w = size
    xs = _base(w, align_corners, theta).reshape(1, w).expand(h, w)
    ys = _base(h, align_corners, theta).reshape(h, 1).expand(h, w)
    base = stack([xs, ys, ones(h, w, dtype=theta.dtype, device=theta.device)], -1)
    grid = base.reshape(1, h * w, 3) @ theta.transpose(1, 2)
    return grid.reshape(theta.shape[0], h, w, 2)


def _unnormalize(coord: Tensor, n: int, align_corners: bool) -> Tensor:
    if align_corners:
        return (coord + 1) / 2 * (n - 1)
    return ((coord + 1) * n - 1) / 2


def _reflect(coord: Tensor, lo: float, hi: float) -> Tensor:
    """``coord`` reflected into ``[lo, hi]`` (torch's reflect_coordinates, in twice-units)."""
    if hi <= lo:
        return coord * 0 + lo
    span = hi - lo
    x = (coord - lo).abs()
    flips = (x / span).floor()
    extra = x - flips * span
    even = (flips.remainder(2) == 0)
    return extra.where(even, span - extra) + lo


@autocast_policy(FP32)
def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",  # noqa: A002
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """Samples ``input`` ``(N, C, H, W)`` at the ``grid`` ``(N, Ho, Wo, 2)`` locations (x, y in
    [-1, 1]): ``mode`` ``"bilinear"`` or ``"nearest"``; ``padding_mode`` ``"zeros"``,
    ``"border"`` or ``"reflection"`` for locations outside the input."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if mode == "bicubic" and input.dim() == 5:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if mode == "bicubic":
        raise NotImplementedError("grid_sample: mode='bicubic' is not implemented in jitgrad "
                                  "(bilinear and nearest are)")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=2)
        align_corners = False
    if input.dim() == 5 and grid.dim() == 5:
        return _grid_sample_3d(input, grid, mode, padding_mode, align_corners)
    if input.dim() != 4 or grid.dim() != 4 or grid.shape[-1] != 2:
        raise NotImplementedError("grid_sample: jitgrad supports 4-D input with a (N, H, W, 2) "
                                  f"grid, got input {list(input.shape)}, grid "
                                  f"{list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError("grid_sampler(): expected grid and input to have same batch size, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    n, c, h, w = input.shape
    ho, wo = grid.shape[1], grid.shape[2]
    ix = _unnormalize(grid[..., 0], w, align_corners)
    iy = _unnormalize(grid[..., 1], h, align_corners)
    if padding_mode == "border":
        ix, iy = ix.clamp(0, w - 1), iy.clamp(0, h - 1)
    elif padding_mode == "reflection":
        if align_corners:
            ix, iy = _reflect(ix, 0, w - 1), _reflect(iy, 0, h - 1)
        else:
            ix, iy = _reflect(ix, -0.5, w - 0.5), _reflect(iy, -0.5, h - 0.5)
        ix, iy = ix.clamp(0, w - 1), iy.clamp(0, h - 1)
    flat = input.reshape(n, c, h * w)

    def tap(x: Tensor, y: Tensor) -> Tensor:
        """input at integer (x, y) per grid point, 0 outside: (N, C, Ho, Wo)."""
        valid = (x >= 0) & (x <= w - 1) & (y >= 0) & (y <= h - 1)
        idx = (y.clamp(0, h - 1) * w + x.clamp(0, w - 1)).long().reshape(n, 1, ho * wo)
        vals = flat.gather(2, idx.expand(n, c, ho * wo)).reshape(n, c, ho, wo)
        return vals * valid.unsqueeze(1).to(input.dtype)

    if mode == "nearest":
        return tap(ix.round(), iy.round())
    x0, y0 = ix.floor(), iy.floor()
    wx1, wy1 = ix - x0, iy - y0
    wx0, wy0 = 1 - wx1, 1 - wy1
    return (tap(x0, y0) * (wx0 * wy0).unsqueeze(1) + tap(x0 + 1, y0) * (wx1 * wy0).unsqueeze(1)
            + tap(x0, y0 + 1) * (wx0 * wy1).unsqueeze(1)
            + tap(x0 + 1, y0 + 1) * (wx1 * wy1).unsqueeze(1))


def _padded(coord: Tensor, n: int, padding_mode: str, align_corners: bool) -> Tensor:
    """An unnormalized coordinate moved into ``[0, n - 1]`` by ``padding_mode`` (zeros: as it
    is; the taps outside read 0)."""
    if padding_mode == "border":
        return coord.clamp(0, n - 1)
    if padding_mode == "reflection":
        coord = _reflect(coord, 0, n - 1) if align_corners else _reflect(coord, -0.5, n - 0.5)
        return coord.clamp(0, n - 1)
    return coord


def _grid_sample_3d(input: Tensor, grid: Tensor, mode: str, padding_mode: str,  # noqa: A002
                    align_corners: bool) -> Tensor:
    """``grid_sample`` of ``(N, C, D, H, W)`` input at ``(N, Do, Ho, Wo, 3)`` locations (x, y,
    z): trilinear (``"bilinear"``) over the 8 neighbours, or nearest."""
    if grid.shape[-1] != 3:
        raise RuntimeError("grid_sampler(): expected grid to have size 3 in last dimension, "
                           f"but got grid with sizes {list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError("grid_sampler(): expected grid and input to have same batch size, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    n, c, d, h, w = input.shape
    out = tuple(grid.shape[1:4])
    m = out[0] * out[1] * out[2]
    ix, iy, iz = (_padded(_unnormalize(grid[..., k], size, align_corners), size, padding_mode,
                          align_corners) for k, size in enumerate((w, h, d)))
    flat = input.reshape(n, c, d * h * w)

    def tap(x: Tensor, y: Tensor, z: Tensor) -> Tensor:
        """input at integer (x, y, z) per grid point, 0 outside: (N, C, Do, Ho, Wo)."""
        valid = ((x >= 0) & (x <= w - 1) & (y >= 0) & (y <= h - 1) & (z >= 0) & (z <= d - 1))
        idx = ((z.clamp(0, d - 1) * h + y.clamp(0, h - 1)) * w + x.clamp(0, w - 1)).long()
        vals = flat.gather(2, idx.reshape(n, 1, m).expand(n, c, m)).reshape((n, c) + out)
        return vals * valid.unsqueeze(1).to(input.dtype)

    if mode == "nearest":
        return tap(ix.round(), iy.round(), iz.round())
    x0, y0, z0 = ix.floor(), iy.floor(), iz.floor()
    fx, fy, fz = ix - x0, iy - y0, iz - z0
    total = None
    for dz in (0, 1):
        for dy in (0, 1):
            for dx in (0, 1):
                weight = ((fx if dx else 1 - fx) * (fy if dy else 1 - fy)
                          * (fz if dz else 1 - fz))
                term = tap(x0 + dx, y0 + dy, z0 + dz) * weight.unsqueeze(1)
                total = term if total is None else total + term
    return total
