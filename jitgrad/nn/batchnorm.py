"""Batch normalisation layers: BatchNorm1d and BatchNorm2d, with running statistics."""

from __future__ import annotations

from typing import Any

from .. import dtypes
from ..ops.creation import ones, tensor, zeros
from ..tensor import Tensor
from . import functional_conv as F
from . import init
from .module import Module
from .parameter import Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d"]


class _BatchNorm(Module):
    """torch's _BatchNorm: affine parameters, running statistics and the momentum rule."""

    _version = 2  # (torch's: version 2 added num_batches_tracked)

    def __init__(self, num_features: int, eps: float = 1e-05, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: dtypes.dtype | None = None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(ones((num_features,), dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(zeros((num_features,), dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros((num_features,), dtype=dtype,
                                                       device=device))
            self.register_buffer("running_var", ones((num_features,), dtype=dtype,
                                                     device=device))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=dtypes.int64,
                                                               device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        # torch's migration: a checkpoint from before num_batches_tracked (version < 2, or a
        # plain dict of weights and running stats) keeps the module's count
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = self.num_batches_tracked if self.num_batches_tracked is not \
                    None else tensor(0, dtype=dtypes.int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, no batches tracked."""
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Resets the running statistics, weight to 1 and bias to 0."""
        self.reset_running_stats()
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative average: a tensor (traceable by jit)
                dt = self.running_mean.dtype if self.running_mean is not None else None
                factor = 1.0 / self.num_batches_tracked.to(dt or dtypes.get_default_dtype())
            else:
                factor = self.momentum
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_running = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_running else None,
                            self.running_var if use_running else None, self.weight, self.bias,
                            bn_training, factor, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of ``(N, C)`` or ``(N, C, L)`` input (torch.nn.BatchNorm1d).

    Args:
        num_features: ``C``.
        eps: added to the variance. Default: 1e-5.
        momentum: the running statistics' update weight; None: a cumulative average.
        affine: learn a per-channel weight and bias. Default: True.
        track_running_stats: keep running statistics (used in eval). Default: True.
        device: only ``None``/``"cpu"``.
        dtype: parameter dtype (default: the default float dtype).
        bias: learn the bias (with ``affine``). Default: True.
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of ``(N, C, H, W)`` input (torch.nn.BatchNorm2d).

    Args:
        num_features: ``C``.
        eps: added to the variance. Default: 1e-5.
        momentum: the running statistics' update weight; None: a cumulative average.
        affine: learn a per-channel weight and bias. Default: True.
        track_running_stats: keep running statistics (used in eval). Default: True.
        device: only ``None``/``"cpu"``.
        dtype: parameter dtype (default: the default float dtype).
        bias: learn the bias (with ``affine``). Default: True.
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim != 4:
            raise ValueError(f"expected 4D input (got {input.ndim}D input)")
