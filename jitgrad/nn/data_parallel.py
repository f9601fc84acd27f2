"""``nn.DataParallel`` (``nn.parallel.DataParallel``): torch's single-process wrapper.

Without a GPU torch keeps ``device_ids = []`` and runs the wrapped module as it is; jitgrad
does the same, and with a GPU it runs on one device: the module is moved to ``device_ids[0]``
and the tensor arguments are moved there (torch's single-device path). Replicating over
several GPUs is not implemented (jitgrad drives one GPU). ``.module`` holds the wrapped module,
so the state_dict keys carry torch's ``module.`` prefix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..tensor import Tensor
from .module import Module

__all__ = ["DataParallel"]


def _device_index(d: Any) -> int:
    if isinstance(d, int):
        return d
    from ..device import device as _device

    dev = d if isinstance(d, _device) else _device(d)
    return dev.index if dev.index is not None else 0


def _to(obj: Any, device: Any) -> Any:
    if isinstance(obj, Tensor):
        return obj.to(device)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_to(o, device) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: _to(v, device) for k, v in obj.items()}
    return obj


class DataParallel(Module):
    """Runs ``module`` on the batch (torch.nn.DataParallel, one device).

    Args:
        module: the module to run.
        device_ids: the GPUs (default: all); at most one in jitgrad.
        output_device: where outputs go (default: ``device_ids[0]``).
        dim: the batch dimension torch scatters along.
    """

    def __init__(self, module: Module, device_ids: Sequence[Any] | None = None,
                 output_device: Any = None, dim: int = 0) -> None:
        super().__init__()
        from .. import cuda

        if not cuda.is_available():
            self.module = module
            self.device_ids: list[int] = []
            return
        if device_ids is None:
            device_ids = list(range(cuda.device_count()))
        if not device_ids:
            raise RuntimeError("no available devices were found")
        if output_device is None:
            output_device = device_ids[0]
        self.dim = dim
        self.module = module
        self.device_ids = [_device_index(d) for d in device_ids]
        if len(self.device_ids) > 1:
            raise NotImplementedError(
                "DataParallel over several GPUs is not implemented in jitgrad (one GPU); pass "
                "device_ids=[0] or use nn.parallel.DistributedDataParallel")
        self.output_device = _device_index(output_device)
        from ..device import device as _device

        self.src_device_obj = _device("cuda", self.device_ids[0])
        self.module.to(self.src_device_obj)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in list(self.module.parameters()) + list(self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError(
                    f"module must have its parameters and buffers on device "
                    f"{self.src_device_obj} (device_ids[0]) but found one of them on device: "
                    f"{t.device}")
        out = self.module(*_to(inputs, self.src_device_obj),
                          **_to(kwargs, self.src_device_obj))
        from ..device import device as _device

        return _to(out, _device("cuda", self.output_device))
