"""``jitgrad.cpu``: torch.cpu's device functions (the CPU runs every op synchronously)."""

from __future__ import annotations

from typing import Any


def is_available() -> bool:
    """Always True: jitgrad runs on the CPU."""
    return True


def device_count() -> int:
    """The number of CPU devices: 1, as torch counts it."""
    return 1


def current_device() -> str:
    """``"cpu"``, as torch returns it."""
    return "cpu"


def synchronize(device: Any = None) -> None:
    """Waits for the CPU's work: nothing to wait for (CPU ops return when done)."""


def __getattr__(name: str):
    if name == "amp":  # torch.cpu.amp's deprecated names (imported on first use)
        import importlib

        return importlib.import_module(f"{__name__}.amp")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
