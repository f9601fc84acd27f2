"""``torch.utils.dlpack``: ``from_dlpack`` / ``to_dlpack`` (zero-copy exchange with NumPy, torch,
JAX, CuPy ...) and ``DLDeviceType``. The capsules are made by ``jitgrad/_dlpack.py``."""

from __future__ import annotations

from typing import Any

from .._dlpack import DLDeviceType
from ..ops.creation import from_dlpack as _from_dlpack
from ..tensor import Tensor

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


def to_dlpack(tensor: Tensor) -> Any:
    """A DLPack capsule (``"dltensor"``) sharing ``tensor``'s memory (``tensor.__dlpack__()``).

    Args:
        tensor: the tensor to export.

    Returns:
        The capsule; consume it once (``from_dlpack``).
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack(): argument 'tensor' (position 1) must be Tensor, not "
                        f"{type(tensor).__name__}")
    return tensor.__dlpack__()


def from_dlpack(ext_tensor: Any) -> Tensor:
    """A tensor sharing memory with ``ext_tensor``: an object with ``__dlpack__`` (a NumPy
    array, a torch tensor, a CuPy array ...) or a host DLPack capsule (``to_dlpack``'s; a
    device capsule raises: pass the device array itself).

    Args:
        ext_tensor: the object or capsule.

    Returns:
        The tensor (no copy).
    """
    return _from_dlpack(ext_tensor)
