"""``torch.accelerator``: the device-agnostic view of the current accelerator (jitgrad's is
CUDA, when usable), as the newer tutorials pick their device:

    device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() \\
        else "cpu"
"""

from __future__ import annotations

from typing import Any

from . import cuda
from .device import device as _device

__all__ = ["current_accelerator", "current_device_index", "current_device_idx", "device_count",
           "is_available", "set_device_index", "set_device_idx", "synchronize"]


def is_available() -> bool:
    """Whether an accelerator (a usable CUDA GPU) is present."""
    return cuda.is_available()


def current_accelerator(check_available: bool = False) -> _device | None:
    """``device("cuda")`` where jitgrad can use CUDA, else None (with ``check_available``, also
    None when it is not available now)."""
    if not cuda.is_available():
        return None
    return _device("cuda")


def device_count() -> int:
    """The number of accelerator devices (0 without one)."""
    return cuda.device_count() if cuda.is_available() else 0


def current_device_index() -> int:
    """The index of the current accelerator device (jitgrad uses device 0)."""
    return cuda.current_device()


current_device_idx = current_device_index


def set_device_index(device: Any, /) -> None:
    """Selects the accelerator device; jitgrad has only device 0.

    Raises:
        RuntimeError: another index was asked for, or there is no accelerator.
    """
    index = device.index if isinstance(device, _device) else device
    if not cuda.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    if index not in (None, 0):
        raise RuntimeError(f"jitgrad uses cuda device 0 only, got index {index}")


set_device_idx = set_device_index


def synchronize(device: Any = None, /) -> None:
    """Waits for the accelerator's queued work (nothing to wait for without one)."""
    if cuda.is_available():
        cuda.synchronize()


def get_device_module(device: Any = None) -> Any:
    """The module of a device type (``jitgrad.cpu``, ``jitgrad.cuda``): ``device``'s, or the
    current accelerator's when None (``jitgrad.cpu`` without one), as ``torch.get_device_module``.

    Args:
        device: a ``jitgrad.device``, a device string, or None.
    """
    import importlib

    if isinstance(device, _device):
        kind = device.type
    elif isinstance(device, str):
        kind = _device(device).type
    elif device is None:
        found = current_accelerator()
        kind = "cpu" if found is None else found.type
    else:
        raise RuntimeError(
            f"Invalid value of device '{device}', expect torch.device, str, or None")
    try:
        return importlib.import_module(f"jitgrad.{kind}")
    except ModuleNotFoundError:
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered as "
                           f"'torch.{kind}'.") from None
