"""``rng``: one random draw (``rand``, ``randn``, ``randint``, ``randperm``) as an op.

Eager calls run it through ``apply`` like every other op; inside ``jit`` it becomes an ``rng``
equation, so every call of the compiled function draws fresh numbers, from the same generator
and in the same way as eager mode. It is ``nondeterministic``: CSE never merges two draws, and
the draws of a forward are saved for a recomputation of the backward.
"""

from __future__ import annotations

import math
from typing import Any

from .. import dtypes
from .registry import OPAQUE, apply, defop


def _rng_impl(*, kind: str, shape: tuple, dtype: dtypes.dtype, generator: Any = None,
              low: float = 0, high: float = 1, device: str | None = None):
    from .._generator import default_generator

    if device is not None:  # "cuda": drawn on the device (backends/cuda_random)
        from .._cuda_array import HOOKS

        return HOOKS["draw"](kind, shape, dtype, generator, low, high)
    # read at run time: manual_seed is respected; the draws are torch's (``_torch_stream``)
    stream = (generator or default_generator())._host()
    n = math.prod(shape)
    if kind == "permutation":
        return stream.permutation(n).astype(dtype.np)
    if kind == "integers":
        return stream.integers(n, dtype, low, high).reshape(shape)
    if kind in ("exponential", "cauchy"):  # (rate 1 / standard; float64, then rounded)
        flat = stream.exponential(n, 1.0) if kind == "exponential" else stream.cauchy(n, 0., 1.)
        return flat.astype(dtype.np).reshape(shape)
    part = dtype.to_real() if dtype.is_complex else dtype  # (torch: the real view's draws)
    if kind == "uniform":  # (on [low, high): [0, 1) by default)
        flat = stream.uniform(n * (2 if dtype.is_complex else 1), part, float(low), float(high))
    else:
        std = math.sqrt(0.5) if dtype.is_complex else 1.0
        flat = stream.normal(n * (2 if dtype.is_complex else 1), part, 0.0, std)
    if dtype.is_complex:
        flat = flat.astype(part.np).view(dtype.np)
    return flat.reshape(shape)


RNG = defop("rng", _rng_impl, kind=OPAQUE, differentiable=False, nondeterministic=True,
            meta=lambda **p: (tuple(p["shape"]), p["dtype"]))


def sample(kind: str, shape: tuple, dtype: dtypes.dtype, generator: Any = None,
           requires_grad: bool = False, device: Any = None, **params: Any) -> Any:
    """A draw of ``kind`` ("uniform" on ``[low, high)``, by default ``[0, 1)``, "normal",
    "exponential", "cauchy", "integers" with ``low``/``high``, or "permutation" of
    ``shape[0]`` elements): eager
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
