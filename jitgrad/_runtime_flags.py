"""torch's process-wide flags at the top level: anomaly detection (``autograd.anomaly``'s
state) and ``warn_always``."""

from __future__ import annotations

from . import _config
from .autograd.anomaly import _anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled

__all__ = ["is_anomaly_check_nan_enabled", "is_anomaly_enabled", "is_warn_always_enabled",
           "set_anomaly_enabled", "set_warn_always"]

def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turns anomaly detection on or off for the process (``autograd.set_detect_anomaly``'s
    state, without a context)."""
    _anomaly.enabled = bool(enabled)
    _anomaly.check_nan = bool(check_nan)


def set_warn_always(b: bool) -> None:
    """When True, the warnings jitgrad gives once per process (the legacy linalg functions'
    deprecations) are given at every call."""
    _config.WARN_ALWAYS[0] = bool(b)


def is_warn_always_enabled() -> bool:
    """Whether ``set_warn_always(True)`` is in effect."""
    return _config.WARN_ALWAYS[0]
