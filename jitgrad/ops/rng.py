"""``rng``: one random draw (``rand``, ``randn``, ``randint``) as an op.

Eager calls run it through ``apply`` like every other op; inside ``jit`` it becomes an ``rng``
equation, so every call of the compiled function draws fresh numbers, from the same generator
and in the same way as eager mode. It is ``nondeterministic``: CSE never merges two draws, and
the draws of a forward are saved for a recomputation of the backward.
"""

from __future__ import annotations

from typing import Any

from .. import dtypes
from .registry import OPAQUE, apply, defop


def _rng_impl(*, kind: str, shape: tuple, dtype: dtypes.dtype, generator: Any = None,
              low: int = 0, high: int = 1, device: str | None = None):
    from .._generator import default_generator

    if device is not None:  # "cuda": drawn on the device (backends/cuda_random)
        from .._cuda_array import HOOKS

        return HOOKS["draw"](kind, shape, dtype, generator, low, high)
    gen = generator or default_generator()  # read at run time: manual_seed is respected
    if kind == "uniform":
        return gen.random(shape).astype(dtype.np)
    if kind == "normal":
        return gen.standard_normal(shape).astype(dtype.np)
    return gen.integers(low, high, size=shape).astype(dtype.np)


RNG = defop("rng", _rng_impl, kind=OPAQUE, differentiable=False, nondeterministic=True,
            meta=lambda **p: (tuple(p["shape"]), p["dtype"]))


def sample(kind: str, shape: tuple, dtype: dtypes.dtype, generator: Any = None,
           requires_grad: bool = False, device: Any = None, **params: Any) -> Any:
    """A draw of ``kind`` ("uniform", "normal" or "integers", with ``low``/``high``): eager
    numbers, or an ``rng`` equation inside ``jit``; on a cuda ``device``, drawn there
    (``backends/cuda_random``: another stream than the CPU's)."""
    if device is not None and device.type == "meta":  # no values to draw
        from .creation import meta_empty as empty

        return empty(tuple(shape), dtype, requires_grad)
    params = dict(kind=kind, shape=tuple(shape), dtype=dtype, **params)
    if generator is not None:
        params["generator"] = generator
    if device is not None and device.type == "cuda":
        params["device"] = "cuda"
    out = apply(RNG, **params)
    if requires_grad and out._trace is None:
        out.requires_grad_(True)
    return out
