"""``torch.backends.mps``: Apple's Metal devices, which jitgrad does not support."""

from __future__ import annotations


def is_available() -> bool:
    """Whether an MPS device can be used: never."""
    return False


def is_built() -> bool:
    """Whether this build supports MPS: no."""
    return False
