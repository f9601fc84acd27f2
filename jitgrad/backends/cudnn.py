"""``torch.backends.cudnn``'s switches, as scripts set them. jitgrad's CUDA kernels are its own
(no cuDNN), so the switches are recorded and read back but change nothing, and
``is_available()`` is False."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: torch: use deterministic convolution algorithms (jitgrad's are deterministic already).
deterministic = False
#: torch: let cuDNN time convolution algorithms and pick the fastest (nothing to pick here).
benchmark = False
#: torch: whether cuDNN is used where it could be.
enabled = True
#: torch: TF32 in cuDNN convolutions (jitgrad computes float32 in float32).
allow_tf32 = True
#: torch: how many algorithms cuDNN's benchmark mode tries.
benchmark_limit = 10


def is_available() -> bool:
    """Whether cuDNN can be used: never (jitgrad does not link cuDNN)."""
    return False


def version() -> None:
    """cuDNN's version: None, as torch returns without cuDNN."""
    return None


_FLAGS = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")


def set_flags(_enabled: Any = None, _benchmark: Any = None, _benchmark_limit: Any = None,
              _deterministic: Any = None, _allow_tf32: Any = None) -> tuple:
    """Sets the switches given (not None); returns their previous values, in this order."""
    module = sys.modules[__name__]
    previous = tuple(getattr(module, name) for name in _FLAGS)
    for name, value in zip(_FLAGS, (_enabled, _benchmark, _benchmark_limit, _deterministic,
                                    _allow_tf32)):
        if value is not None:
            setattr(module, name, value)
    return previous


@contextmanager
def flags(enabled: bool = False, benchmark: bool = False, benchmark_limit: int = 10,
          deterministic: bool = False, allow_tf32: bool = True, fp32_precision: str = "none",
          depthwise_kernel: str = "auto") -> Iterator[None]:
    """Sets the switches inside a ``with`` block and restores them after, as torch's."""
    previous = set_flags(enabled, benchmark, benchmark_limit, deterministic, allow_tf32)
    try:
        yield
    finally:
        set_flags(*previous)
