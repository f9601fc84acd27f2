"""Where a tensor's memory lives, for other processes and for the GPU: ``share_memory_``,
``is_shared``, ``pin_memory``, ``is_pinned``.

``share_memory_`` moves a CPU tensor's data into an anonymous shared mapping (``mmap``), so that
processes forked after the call (the ``fork`` start method, Linux's default before Python 3.14)
and the parent see each other's in-place writes, as in torch's Hogwild training. A tensor sent
to a *spawned* process is pickled, a copy. Pinned memory is page-locked host memory for fast
copies to a GPU: with a usable CUDA device it comes from numba-cuda, without one ``pin_memory``
raises torch's error.
"""

from __future__ import annotations

import mmap
from typing import Any

import numpy as np

from .surface import public


def _mapping_of(array: np.ndarray) -> Any:
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    return base


@public((), method="share_memory_")
def share_memory_(self):
    """Moves the data to memory shared with processes forked from now on (a no-op for cuda
    tensors and tensors already shared). Returns ``self``."""
    if self.is_cuda or is_shared(self):
        return self
    data = self._data
    mapping = mmap.mmap(-1, max(data.nbytes, 1))
    shared = np.frombuffer(mapping, dtype=data.dtype, count=data.size).reshape(data.shape)
    shared[...] = data
    self._data = shared
    return self


@public((), method="is_shared")
def is_shared(self) -> bool:
    """Whether the data is in shared memory (``share_memory_``; cuda tensors are shared)."""
    return self.is_cuda or isinstance(_mapping_of(self._data), mmap.mmap)


@public((), method="pin_memory")
def pin_memory(self, device: Any = None):
    """A copy in page-locked host memory (a CPU tensor; needs a usable CUDA device)."""
    from ..device import check_device

    if self.is_cuda:
        raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
    try:
        check_device("cuda")
    except RuntimeError:  # (cuda_unavailable: no usable GPU, or no numba-cuda)
        raise RuntimeError("Cannot access accelerator device when none is available.") from None
    from numba import cuda as numba_cuda

    from ..tensor import _new

    pinned = numba_cuda.pinned_array(self.shape, dtype=self._data.dtype)
    pinned[...] = self._data
    out = _new(pinned, self.dtype)
    out._pinned = True
    return out


@public((), method="is_pinned")
def is_pinned(self, device: Any = None) -> bool:
    """Whether the data is in page-locked host memory (``pin_memory``)."""
    return getattr(self, "_pinned", False)
