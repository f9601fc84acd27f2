"""GroupNorm and the resizing layers (Upsample, UpsamplingNearest2d, UpsamplingBilinear2d),
with torch.nn's arguments, initialization and repr."""

from __future__ import annotations

from typing import Any

from .. import dtypes
from ..tensor import Tensor
from . import functional_spatial as F
from .layers import _AffineNorm
from .module import Module

__all__ = ["GroupNorm", "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d"]


class GroupNorm(_AffineNorm):
    """Group normalization over ``(N, C, *)`` input: ``num_channels`` split into
    ``num_groups`` groups, each normalized over its channels and positions.

    Args:
        num_groups: the number of groups (divides ``num_channels``).
        num_channels: the channels of the input.
        eps: added to the variance. Default: 1e-5.
        affine: learn a per-channel ``weight`` (ones) and ``bias`` (zeros). Default: True.
        bias: learn the bias (with ``affine``). Default: True.
        device, dtype: where and in which dtype the parameters live.
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, bias: bool = True, device: Any = None,
                 dtype: dtypes.dtype | None = None) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine = eps, affine
        self._affine((num_channels,), affine, bias, device, dtype)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class Upsample(Module):
    """Resizes ``(N, C, *spatial)`` input to ``size`` or by ``scale_factor`` (see
    ``F.interpolate`` for the modes).

    Args:
        size: the output spatial size.
        scale_factor: the multiplier of the spatial size.
        mode: ``'nearest'``, ``'nearest-exact'``, ``'linear'``, ``'bilinear'``,
            ``'trilinear'``. Default: ``'nearest'``.
        align_corners: for the linear modes.
        recompute_scale_factor: sample with the scale the output size implies.
    """

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        self.scale_factor = float(scale_factor) if isinstance(scale_factor, (int, float)) \
            else (tuple(float(f) for f in scale_factor) if scale_factor else None)
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else \
            f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """``Upsample(mode='nearest')`` of 4-D input."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample(mode='bilinear', align_corners=True)`` of 4-D input."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
