"""``jitgrad.nn.attention``: torch.nn.attention's ``SDPBackend`` and ``sdpa_kernel`` (and, in
``bias``, the causal biases).

jitgrad has one implementation of ``scaled_dot_product_attention``, torch's math reference
(softmax of the scaled scores, then the product with ``value``), which serves where torch's
CPU build runs either ``MATH`` or ``FLASH_ATTENTION``. ``sdpa_kernel`` restricts the backends
as torch does: with neither of those two allowed, attention raises torch's error.
"""

from __future__ import annotations

import contextlib
import enum
import threading
from collections.abc import Iterator


class SDPBackend(enum.IntEnum):
    """The backends of ``scaled_dot_product_attention`` (torch's values)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


# the backends jitgrad's implementation stands for (torch's CPU build runs these two)
_RUNNABLE = (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION)
_ALL = tuple(b for b in SDPBackend if b is not SDPBackend.ERROR)


class _Enabled(threading.local):
    def __init__(self) -> None:
        self.backends: tuple = _ALL


_enabled = _Enabled()


def check_backend_enabled() -> None:
    """Raises torch's error when ``sdpa_kernel`` has turned off every backend jitgrad has."""
    if not any(b in _enabled.backends for b in _RUNNABLE):
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This "
                           "is likely due to turning off both the math kernel and the fused "
                           "kernels.")


def flash_enabled() -> bool:
    """Whether ``sdpa_kernel`` allows FLASH_ATTENTION (the kernel torch's CPU build prefers)."""
    return SDPBackend.FLASH_ATTENTION in _enabled.backends


@contextlib.contextmanager
def sdpa_kernel(backends: SDPBackend | list[SDPBackend],
                set_priority: bool = False) -> Iterator[None]:
    """Restricts ``scaled_dot_product_attention`` to ``backends`` inside the block.

    Args:
        backends: one ``SDPBackend`` or a list of them.
        set_priority: accepted for torch's signature (jitgrad has one implementation to pick).
    """
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of "
                             f"SDPBackend instances, got {type(backends).__name__}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    previous = _enabled.backends
    _enabled.backends = tuple(backends)
    try:
        yield
    finally:
        _enabled.backends = previous
