"""Anomaly detection: forward tracebacks on nodes, NaN checks in backward."""

from __future__ import annotations

import warnings
from typing import Any

from ._decorator import DecoratorContextManager
from .node import _anomaly


def is_anomaly_enabled() -> bool:
    return _anomaly.enabled


def is_anomaly_check_nan_enabled() -> bool:
    return _anomaly.check_nan


class detect_anomaly(DecoratorContextManager):  # noqa: N801 - torch's name
    """Context manager and decorator that enables anomaly detection for the autograd engine.

    Each node remembers the traceback of the forward call that created it; an error in its
    backward prints that traceback, and (with ``check_nan``) a backward that returns NaN raises.
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = _anomaly.enabled
        self.check_nan = check_nan
        self.prev_check_nan = _anomaly.check_nan
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should "
            "only be enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self) -> None:
        _anomaly.enabled = True
        _anomaly.check_nan = self.check_nan

    def __exit__(self, *args: Any) -> None:
        _anomaly.enabled = self.prev
        _anomaly.check_nan = self.prev_check_nan

    def clone(self) -> detect_anomaly:
        return self


class set_detect_anomaly:  # noqa: N801 - torch's name
    """Turns anomaly detection on or off: as a call or as a context manager."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = _anomaly.enabled
        self.prev_check_nan = _anomaly.check_nan
        _anomaly.enabled = mode
        _anomaly.check_nan = check_nan

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args: Any) -> None:
        _anomaly.enabled = self.prev
        _anomaly.check_nan = self.prev_check_nan
