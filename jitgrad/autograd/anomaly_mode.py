"""``torch.autograd.anomaly_mode``: ``detect_anomaly`` and ``set_detect_anomaly`` (in
``autograd.anomaly``)."""

from __future__ import annotations

from .anomaly import detect_anomaly, set_detect_anomaly

__all__ = ["detect_anomaly", "set_detect_anomaly"]
