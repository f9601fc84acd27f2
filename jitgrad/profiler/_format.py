"""The texts of times and byte counts in profiler tables, and ``DeviceType``."""

from __future__ import annotations

import enum


class DeviceType(enum.IntEnum):
    """Where an event ran (torch's ``DeviceType``; jitgrad's profiler records CPU events)."""

    CPU = 0
    CUDA = 1


def _format_time(time_us: float) -> str:
    """torch's text of a time in microseconds."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us: float, total_time_us: float) -> str:
    if total_time_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_time_us:.2f}%"


def _format_memory(nbytes: int) -> str:
    """torch's text of a byte count."""
    kb, mb, gb = 1024, 1024 ** 2, 1024 ** 3
    if abs(nbytes) >= gb:
        return f"{nbytes * 1.0 / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes * 1.0 / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes * 1.0 / kb:.2f} KB"
    return str(nbytes) + " B"
