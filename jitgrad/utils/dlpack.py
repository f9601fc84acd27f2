"""``torch.utils.dlpack``: ``from_dlpack`` / ``to_dlpack`` (zero-copy exchange with NumPy, torch,
JAX, CuPy ...) and ``DLDeviceType``. The capsules are made by ``jitgrad/_dlpack.py``."""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from .._dlpack import capsule_device
from ..ops.creation import from_dlpack as _from_dlpack
from ..tensor import Tensor

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


class DLDeviceType(enum.IntEnum):
    """The DLPack device types (``__dlpack_device__()[0]``)."""

    kDLCPU = 1  # noqa: N815
    kDLCUDA = 2  # noqa: N815
    kDLCUDAHost = 3  # noqa: N815
    kDLOpenCL = 4  # noqa: N815
    kDLVulkan = 7  # noqa: N815
    kDLMetal = 8  # noqa: N815
    kDLVPI = 9  # noqa: N815
    kDLROCM = 10  # noqa: N815
    kDLROCMHost = 11  # noqa: N815
    kDLExtDev = 12  # noqa: N815
    kDLCUDAManaged = 13  # noqa: N815
    kDLOneAPI = 14  # noqa: N815
    kDLWebGPU = 15  # noqa: N815
    kDLHexagon = 16  # noqa: N815
    kDLMAIA = 17  # noqa: N815


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


def _device_name(kind: int) -> str:
    try:
        return DLDeviceType(kind).name
    except ValueError:
        return f"DLPack device type {kind}"


class _Capsule:
    """A legacy (host) DLPack capsule seen as a DLPack object, for NumPy to consume."""

    def __init__(self, capsule: Any) -> None:
        self.capsule = capsule

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple:
        return (DLDeviceType.kDLCPU, 0)


class _Writeable:
    """The memory of a read-only array, offered writeable (and keeping the array alive)."""

    def __init__(self, arr: np.ndarray) -> None:
        face = dict(arr.__array_interface__)
        face["data"] = (face["data"][0], False)
        self.__array_interface__ = face
        self.keep = arr


def _writeable(arr: np.ndarray) -> np.ndarray:
    """NumPy marks what a legacy capsule gives read-only; a tensor from one is writeable in
    torch: the same memory as a writeable array."""
    return arr if arr.flags.writeable else np.asarray(_Writeable(arr))


def from_dlpack(ext_tensor: Any) -> Tensor:
    """A tensor sharing memory with ``ext_tensor``: an object with ``__dlpack__`` (a NumPy
    array, a torch tensor, a CuPy array ...) or a host DLPack capsule (``to_dlpack``'s; a
    device capsule raises: pass the device array itself).

    Args:
        ext_tensor: the object or capsule.

    Returns:
        The tensor (no copy).
    """
    if type(ext_tensor).__name__ == "PyCapsule":
        kind, _ = capsule_device(ext_tensor)
        if kind != DLDeviceType.kDLCPU:
            raise RuntimeError(
                f"from_dlpack: jitgrad reads host ({DLDeviceType.kDLCPU.name}) DLPack capsules "
                f"only, this one is on {_device_name(kind)}: pass the tensor or array itself "
                "(its __dlpack__), not a capsule")
        ext_tensor = _writeable(np.from_dlpack(_Capsule(ext_tensor)))
    return _from_dlpack(ext_tensor)
