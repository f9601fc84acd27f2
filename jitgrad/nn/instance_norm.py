"""InstanceNorm1d/2d/3d, LocalResponseNorm, AdaptiveAvgPool1d and AdaptiveMaxPool1d/2d with
torch.nn's arguments, buffers, state_dict keys and repr (the math is in ``nn.functional``)."""

from __future__ import annotations

import warnings
from typing import Any

from .. import dtypes
from ..tensor import Tensor
from . import _functional_extra as F
from .batchnorm import _BatchNorm
from .module import Module

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LocalResponseNorm",
           "AdaptiveAvgPool1d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d"]


class _InstanceNorm(_BatchNorm):
    """torch's _InstanceNorm: BatchNorm's parameters and buffers, normalizing per sample."""

    _spatial = 1

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device: Any = None,
                 dtype: dtypes.dtype | None = None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        unbatched = self._spatial + 1
        if input.ndim not in (unbatched, unbatched + 1):
            raise ValueError(f"expected {unbatched}D or {unbatched + 1}D input (got "
                             f"{input.ndim}D input)")
        feature_dim = input.ndim - unbatched
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You "
                          "can silence this warning by not passing in num_features, which is "
                          "not used because affine=False", stacklevel=2)
        x = input.unsqueeze(0) if input.ndim == unbatched else input
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if input.ndim == unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of ``(N, C, L)`` or ``(C, L)`` input.

    Args:
        num_features: ``C``.
        eps: added to the variance. Default: 1e-5.
        momentum: the running statistics' update weight. Default: 0.1.
        affine: learn a per-channel weight and bias. Default: False.
        track_running_stats: keep running statistics (used in eval). Default: False.
        device, dtype: where and in which dtype the parameters live.
        bias: learn the bias (with ``affine``). Default: True.
    """

    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of ``(N, C, H, W)`` or ``(C, H, W)`` input (arguments as
    ``InstanceNorm1d``)."""

    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input (arguments as
    ``InstanceNorm1d``)."""

    _spatial = 3


class LocalResponseNorm(Module):
    """Normalizes over ``size`` neighbouring channels:
    ``x / (k + alpha * mean(x^2 over the window)) ** beta``.

    Args:
        size: the number of neighbouring channels.
        alpha: the multiplicative factor. Default: 1e-4.
        beta: the exponent. Default: 0.75.
        k: the additive factor. Default: 1.
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class AdaptiveAvgPool1d(Module):
    """1-d average pooling to a fixed ``output_size``.

    Args:
        output_size: the output length.
    """

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.adaptive_avg_pool1d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class _AdaptiveMaxPoolNd(Module):
    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """1-d max pooling to a fixed ``output_size``.

    Args:
        output_size: the output length.
        return_indices: also return the positions of the maxima. Default: False.
    """

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """2-d max pooling to a fixed ``output_size``.

    Args:
        output_size: an int or a pair (None keeps the input's size along that dim).
        return_indices: also return the flat positions of the maxima. Default: False.
    """

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)
