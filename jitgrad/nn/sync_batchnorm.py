"""``nn.SyncBatchNorm``: batch normalization whose statistics are synchronized across
processes in training. Outside an initialized ``jitgrad.distributed`` process group (the
single-process case) it is BatchNorm over any ``(N, C, *)`` input, as torch's is on CPU; in
one, torch's error for a CPU input is raised, and the cross-process reduction (torch's
``sync_batch_norm``, GPU only) is not implemented in jitgrad."""

from __future__ import annotations

from typing import Any

from .. import dtypes
from ..tensor import Tensor
from .batchnorm import _BatchNorm
from .module import Module

__all__ = ["SyncBatchNorm"]


class SyncBatchNorm(_BatchNorm):
    """Batch normalization over ``(N, C, *)`` input with torch's arguments.

    Args:
        num_features: ``C``.
        eps: added to the variance.
        momentum: the running statistics' factor (None: cumulative average).
        affine: learnable ``weight`` and ``bias``.
        track_running_stats: keep ``running_mean`` / ``running_var``.
        process_group: the group synchronized over (None: the whole world).
        device: the parameters' device.
        dtype: the parameters' dtype.
        bias: whether ``bias`` is learnable (with ``affine``).
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 process_group: Any = None, device: Any = None,
                 dtype: dtypes.dtype | None = None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        self._check_input_dim(input)
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        if bn_training and self.training and _distributed_initialized():
            if input.device.type != "cuda":
                raise ValueError("SyncBatchNorm expected input tensor to be on GPU or XPU or "
                                 "privateuseone")
            from ..distributed import get_world_size

            if get_world_size(self.process_group) > 1:
                raise NotImplementedError(
                    "SyncBatchNorm: synchronizing the batch statistics across processes is not "
                    "implemented in jitgrad")
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """Replaces every BatchNorm*d in ``module`` by a SyncBatchNorm sharing its parameters
        and buffers (a BatchNorm ``module`` itself is returned converted).

        Args:
            module: the module.
            process_group: the group the new layers synchronize over.

        Returns:
            ``module`` with its BatchNorms converted (or the new layer).
        """
        out = module
        if isinstance(module, _BatchNorm):
            out = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                module.track_running_stats, process_group,
                                bias=module.bias is not None)
            if module.affine:
                out.weight = module.weight
                out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


def _distributed_initialized() -> bool:
    from ..distributed import is_available, is_initialized

    return is_available() and is_initialized()
