"""``affine_grid`` (2-d and 3-d) and ``grid_sample`` (2-d and 3-d), composed of jitgrad ops:
differentiable w.r.t. the input, the grid and ``theta`` (the Spatial Transformer tutorial
trains through both)."""

from __future__ import annotations

import warnings
from typing import Any

from ..ops.autocast_policy import FP32, autocast_policy
from .. import dtypes
from ..errors import user_stacklevel
from ..ops.creation import ones, zeros, zeros_like
from ..ops.ranges import linspace
from ..ops.movement import stack
from ..ops.registry import OPAQUE, apply, defop
from ..tensor import Tensor
from ._functional_resample import cubic_taps

__all__ = ["affine_grid", "grid_sample"]

_ALIGN_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since "
    "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
    "documentation of grid_sample for details.")


def _base(n: int, align_corners: bool, like: Tensor) -> Tensor:
    """torch's linspace_from_neg_one: ``n`` steps over [-1, 1] (shrunk by ``(n - 1) / n``
    without ``align_corners``), the single step 0."""
    if n <= 1:
        return zeros(n, dtype=like.dtype, device=like.device)
    steps = linspace(-1.0, 1.0, n, dtype=like.dtype, device=like.device)
    return steps if align_corners else steps * ((n - 1) / n)


def affine_grid(theta: Tensor, size: Any, align_corners: bool | None = None) -> Tensor:
    """The sampling grid of the affine maps ``theta`` for an output of ``size``: ``(N, H, W,
    2)`` (x, y) for ``(N, 2, 3)`` maps and a 4-d size ``(N, C, H, W)``, ``(N, D, H, W, 3)``
    (x, y, z) for ``(N, 3, 4)`` maps and a 5-d size, in [-1, 1] coordinates."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=user_stacklevel())
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    given, size = size, list(size)  # (torch's messages print the size as it was given)
    if len(size) == 4:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError("Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{given}. Got {theta.shape}.")
    elif len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError("Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{given}. Got {theta.shape}.")
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      UserWarning, stacklevel=user_stacklevel())
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:  # (torch's batched product of the base and theta)
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{size[0]}, {len(size) - 1}] but got: [{theta.shape[0]}, "
                           f"{len(size) - 1}].")
    return apply(AFFINE_GRID, theta, size=tuple(size), align_corners=bool(align_corners))


def _base_grid(spatial: list, align_corners: bool, like: Tensor) -> Tensor:
    """The ``(1, m, k + 1)`` homogeneous coordinates (x, y[, z], 1) of the output's locations."""
    k = len(spatial)
    axes = []  # x varies along the last spatial dim, y along the one before, z the first
    for i, n in enumerate(reversed(spatial)):
        shape = [1] * k
        shape[k - 1 - i] = n
        axes.append(_base(n, align_corners, like).reshape(shape).expand(*spatial))
    base = stack(axes + [ones(*spatial, dtype=like.dtype, device=like.device)], -1)
    m = 1
    for n in spatial:
        m *= n
    return base.reshape(1, m, k + 1)


def _affine_grid_decompose(theta: Tensor, size: tuple, align_corners: bool) -> Tensor:
    spatial = list(size[2:])
    grid = _base_grid(spatial, align_corners, theta) @ theta.transpose(1, 2)
    return grid.reshape(theta.shape[0], *spatial, len(spatial))


def _affine_grid_impl(theta: Any, size: tuple, align_corners: bool) -> Any:
    """The grid in NumPy, each step as the composed ops round it (the cuda and jit runs)."""
    import numpy as np

    from ..ops.ranges import _linspace_values

    dt = theta.dtype
    spatial = list(size[2:])
    k = len(spatial)
    coords = []
    for n in spatial:
        if n <= 1:
            coords.append(np.zeros(n, dt))
            continue
        steps = _linspace_values(-1.0, 1.0, n, dt)
        coords.append(steps if align_corners else steps * dt.type((n - 1) / n))
    axes = np.meshgrid(*coords, indexing="ij")  # (z,) y, x: each of the spatial shape
    base = np.stack(list(reversed(axes)) + [np.ones(spatial, dt)], -1)
    grid = np.matmul(base.reshape(1, -1, k + 1), np.swapaxes(theta, 1, 2))
    return grid.reshape([theta.shape[0]] + spatial + [k])


def _affine_grid_vjp(g: Tensor, ans: Any, theta: Any, size: tuple, align_corners: bool) -> Tensor:
    # (the base recomputed from the size: the node keeps no tensor, as torch's)
    spatial = list(size[2:])
    k = len(spatial)
    flat = g.reshape(g.shape[0], -1, k)
    return flat.transpose(1, 2) @ _base_grid(spatial, align_corners, g)


AFFINE_GRID = defop(
    "affine_grid_generator", _affine_grid_impl, kind=OPAQUE,
    meta=lambda theta, size, align_corners: (
        (theta.shape[0],) + tuple(size[2:]) + (len(size) - 2,), theta.dtype),
    vjp=(_affine_grid_vjp,), jvp=lambda ts, ans, theta, size, align_corners:
        _affine_grid_decompose(ts[0], size, align_corners),
    decompose=_affine_grid_decompose, node_name="AffineGridGeneratorBackward0")


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
    [-1, 1]), or ``(N, C, D, H, W)`` input at ``(N, Do, Ho, Wo, 3)`` ones (x, y, z): ``mode``
    ``"bilinear"`` (trilinear in 3-d), ``"nearest"`` or ``"bicubic"`` (2-d); ``padding_mode``
    ``"zeros"``, ``"border"`` or ``"reflection"`` for locations outside the input."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if mode == "bicubic" and input.dim() == 5:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=user_stacklevel())
        align_corners = False
    k = input.dim() - 2
    if input.dim() not in (4, 5) or grid.dim() != input.dim():
        raise NotImplementedError("grid_sample: jitgrad supports 4-D input with a (N, H, W, 2) "
                                  "grid and 5-D input with a (N, D, H, W, 3) grid, got input "
                                  f"{list(input.shape)}, grid {list(grid.shape)}")
    if grid.shape[-1] != k:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {k} in last dimension, "
                           f"but got grid with sizes {list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError("grid_sampler(): expected grid and input to have same batch size, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    sizes = tuple(reversed(input.shape[2:]))  # (w, h[, d]), the order of the grid's coordinates
    coords = [_unnormalize(grid[..., i], n, align_corners) for i, n in enumerate(sizes)]
    sampler = _Taps(input, grid, sizes)
    if mode == "bicubic":  # (padding applies to each tap's coordinates, not to the location)
        x0, y0 = coords[0].floor(), coords[1].floor()
        wx, wy = cubic_taps(coords[0] - x0), cubic_taps(coords[1] - y0)
        xs = [_padded(x0 + (i - 1), sizes[0], padding_mode, align_corners) for i in range(4)]
        ys = [_padded(y0 + (j - 1), sizes[1], padding_mode, align_corners) for j in range(4)]
        return sampler.total(((xs[i], ys[j]), wx[i] * wy[j]) for j in range(4) for i in range(4))
    coords = [_padded(c, n, padding_mode, align_corners) for c, n in zip(coords, sizes)]
    if mode == "nearest":  # (the grid's gradient: zero, as torch's backward gives it)
        return sampler.total([([c.round() for c in coords], _zero_grad_one(grid))])
    lows = [c.floor() for c in coords]
    fracs = [c - lo for c, lo in zip(coords, lows)]
    corners = []
    for corner in range(2 ** k):
        ups = [(corner >> i) & 1 for i in range(k)]
        weight = None
        for f, up in zip(fracs, ups):
            factor = f if up else 1 - f
            weight = factor if weight is None else weight * factor
        corners.append(([lo + up for lo, up in zip(lows, ups)], weight))
    return sampler.total(corners)


class _Taps:
    """Sums of ``input`` read at integer tap coordinates, one per grid location, times
    weights; a tap outside the input adds 0 (whatever its weight: a NaN or infinite location
    reads nothing, as torch's kernels skip such taps)."""

    def __init__(self, input: Tensor, grid: Tensor, sizes: tuple[int, ...]) -> None:  # noqa: A002
        n, c = input.shape[:2]
        self.n, self.c, self.sizes = n, c, sizes
        self.out = tuple(grid.shape[1:-1])
        self.m = 1
        for v in self.out:
            self.m *= v
        self.flat = input.reshape(n, c, -1)

    def tap(self, coords: list[Tensor], weight: Tensor) -> Tensor:
        valid, idx = _in_bounds(coords, self.sizes)
        index = idx.reshape(self.n, 1, self.m).expand(self.n, self.c, self.m)
        vals = self.flat.gather(2, index).reshape((self.n, self.c) + self.out)
        return vals * weight.where(valid, 0.0).unsqueeze(1)

    def total(self, taps) -> Tensor:
        out = None
        for coords, weight in taps:
            term = self.tap(coords, weight)
            out = term if out is None else out + term
        return out


def _in_bounds(coords: list[Tensor], sizes: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    """Whether integer tap coordinates (x, y[, z]) lie in an input of ``sizes`` (w, h[, d]),
    and their flat index there (0 where they do not: NaN and infinite ones too)."""
    valid = None
    for c, size in zip(coords, sizes):
        inside = (c >= 0) & (c <= size - 1)
        valid = inside if valid is None else valid & inside
    idx, stride = None, 1
    for c, size in zip(coords, sizes):
        term = c.where(valid, 0.0) * stride
        idx, stride = (term if idx is None else idx + term), stride * size
    return valid, idx.long()


def _zero_grad_one(grid: Tensor) -> Tensor:
    """Ones over the grid's locations whose gradient to the grid is zero."""
    picked = grid[..., 0]
    return picked.where(zeros_like(picked, dtype=dtypes.bool), 1.0)


def _padded(coord: Tensor, n: int, padding_mode: str, align_corners: bool) -> Tensor:
    """An unnormalized coordinate moved into ``[0, n - 1]`` by ``padding_mode`` (zeros: as it
    is; the taps outside read 0)."""
    if padding_mode == "border":
        return _clip(coord, n)
    if padding_mode == "reflection":
        coord = _reflect(coord, 0, n - 1) if align_corners else _reflect(coord, -0.5, n - 0.5)
        return _clip(coord, n)
    return coord


def _clip(coord: Tensor, n: int) -> Tensor:
    """``coord`` clamped into ``[0, n - 1]`` with torch's gradient: 1 strictly inside, 0 on
    the edges too (its kernels count the edges as outside, so that a location on an edge
    pixel's centre gets no pull from the zero beyond it)."""
    inside = (coord > 0) & (coord < n - 1)
    return coord.where(inside, coord.clamp(0, n - 1).detach())
