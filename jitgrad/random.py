"""Seeded random tensors: manual_seed, rand, randn, randint (one global NumPy Generator)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes
from .device import check_device
from .ops.creation import _new, _shape

_generator = np.random.default_rng()


def manual_seed(seed: int) -> np.random.Generator:
    """Seeds jitgrad's random number generator (rand, randn, randint, dropout)."""
    global _generator
    _generator = np.random.default_rng(int(seed))
    return _generator


def default_generator() -> np.random.Generator:
    return _generator


def _traced(kind: str, size: tuple, dt: dtypes.dtype, generator: Any, **params: Any) -> Any:
    """Inside a jit trace: the draw recorded as an op (fresh numbers on every call)."""
    from .ops.registry import state

    if not state.traces:
        return None
    return state.traces[-1].random(kind, size, dt, generator, **params)


def rand(*size: Any, dtype: dtypes.dtype | None = None, device: Any = None,
         requires_grad: bool = False, generator: Any = None):
    """Uniform samples on [0, 1)."""
    check_device(device)
    dt = dtype or dtypes.get_default_dtype()
    traced = _traced("uniform", _shape(size), dt, generator)
    if traced is not None:
        return traced
    gen = generator or _generator
    return _new(gen.random(_shape(size)).astype(dt.np), dt, requires_grad)


def randn(*size: Any, dtype: dtypes.dtype | None = None, device: Any = None,
          requires_grad: bool = False, generator: Any = None):
    """Standard normal samples."""
    check_device(device)
    dt = dtype or dtypes.get_default_dtype()
    traced = _traced("normal", _shape(size), dt, generator)
    if traced is not None:
        return traced
    gen = generator or _generator
    return _new(gen.standard_normal(_shape(size)).astype(dt.np), dt, requires_grad)


def randint(low: int, high: int | None = None, size: tuple = (), *, dtype: Any = None,
            device: Any = None, requires_grad: bool = False, generator: Any = None):
    """Integers uniformly drawn from [low, high)."""
    check_device(device)
    if high is None:
        low, high = 0, low
    dt = dtype or dtypes.int64
    traced = _traced("integers", tuple(size), dt, generator, low=low, high=high)
    if traced is not None:
        return traced
    gen = generator or _generator
    return _new(gen.integers(low, high, size=tuple(size)).astype(dt.np), dt, requires_grad)


def rand_like(input: Any, *, dtype: Any = None) -> Any:  # noqa: A002
    return rand(tuple(input.shape), dtype=dtype or input.dtype)


def randn_like(input: Any, *, dtype: Any = None) -> Any:  # noqa: A002
    return randn(tuple(input.shape), dtype=dtype or input.dtype)
