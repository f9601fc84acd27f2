"""Seeded random tensors: manual_seed, rand, randn, randint (one global NumPy Generator)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes
from .device import check_device
from .ops.creation import _OPTS, _new, _shape, invalid_combination

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


_FLOAT_ONLY = {"rand": "check_uniform_bounds", "randn": "normal_kernel_cpu"}


def _float_dtype(fname: str, dtype: Any) -> dtypes.dtype:
    dt = dtype or dtypes.get_default_dtype()
    if not (dt.is_floating_point or dt.is_complex):
        raise NotImplementedError(
            f'"{_FLOAT_ONLY[fname]}" not implemented for \'{dt._legacy[:-len("Tensor")]}\'')
    return dt


def _sample_size(fname: str, size: tuple, kwargs: dict) -> tuple:
    """``rand(2, 3)``, ``rand((2, 3))`` or ``rand(size=(2, 3))``, with torch's errors."""
    if "size" in kwargs:
        if size:
            raise TypeError(f"{fname}() got multiple values for argument 'size'")
        size = (kwargs.pop("size"),)
    if kwargs:
        raise TypeError(f"{fname}() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if not size:
        sig = "tuple of ints size, " + _OPTS
        raise invalid_combination(fname, (), {}, (sig.format(gen="jitgrad.Generator generator, "),
                                                   sig.format(gen="")))
    return _shape(size)


def rand(*size: Any, dtype: dtypes.dtype | None = None, device: Any = None,
         requires_grad: bool = False, generator: Any = None, **kwargs: Any):
    """Uniform samples on [0, 1): ``rand(2, 3)``, ``rand((2, 3))`` or ``rand(size=(2, 3))``."""
    check_device(device)
    shape = _sample_size("rand", size, kwargs)
    dt = _float_dtype("rand", dtype)
    traced = _traced("uniform", shape, dt, generator)
    if traced is not None:
        return traced
    gen = generator or _generator
    return _new(gen.random(shape).astype(dt.np), dt, requires_grad)


def randn(*size: Any, dtype: dtypes.dtype | None = None, device: Any = None,
          requires_grad: bool = False, generator: Any = None, **kwargs: Any):
    """Standard normal samples: ``randn(2, 3)``, ``randn((2, 3))`` or ``randn(size=(2, 3))``."""
    check_device(device)
    shape = _sample_size("randn", size, kwargs)
    dt = _float_dtype("randn", dtype)
    traced = _traced("normal", shape, dt, generator)
    if traced is not None:
        return traced
    gen = generator or _generator
    return _new(gen.standard_normal(shape).astype(dt.np), dt, requires_grad)


_RANDINT_SIGS = tuple(
    head + _OPTS.format(gen=gen)
    for head in ("int high, tuple of ints size, ", "int low, int high, tuple of ints size, ")
    for gen in ("jitgrad.Generator generator, ", ""))
_MISSING = object()


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _is_size(v: Any) -> bool:
    return isinstance(v, (tuple, list)) and all(_is_int(s) for s in v)


def randint(*args: Any, low: Any = _MISSING, high: Any = _MISSING, size: Any = _MISSING,
            dtype: Any = None, device: Any = None, requires_grad: bool = False,
            generator: Any = None) -> Any:
    """Integers uniformly drawn from [low, high), torch's two overloads:
    ``randint(high, size)`` and ``randint(low=0, high, size)``."""
    given = {k: v for k, v in (("low", low), ("high", high), ("size", size))
             if v is not _MISSING}
    if len(args) > 3 or len(args) == 3 and given:
        raise invalid_combination("randint", args, given, _RANDINT_SIGS)
    # which overload: (low, high, size) when three values are given (or low= is named)
    names = (("low", "high", "size") if len(args) + len(given) >= 3 or "low" in given
             else ("high", "size"))
    bound = dict(given)
    for name, value in zip([n for n in names if n not in given], args):
        bound[name] = value
    missing = [n for n in names if n not in bound]
    if len(missing) == len(names) or missing and not given:
        raise invalid_combination("randint", args, given, _RANDINT_SIGS)
    if missing:
        raise TypeError(f"randint() missing {len(missing)} required positional argument: "
                        + ", ".join(f'"{n}"' for n in missing))
    for pos, name in enumerate(names, 1):
        value = bound[name]
        ok = _is_size(value) if name == "size" else _is_int(value)
        if not ok:
            what = "tuple of ints" if name == "size" else "int"
            if name in given or pos > len(args):
                raise invalid_combination("randint", args, given, _RANDINT_SIGS)
            raise TypeError(f"randint(): argument '{name}' (position {pos}) must be {what}, "
                            f"not {type(value).__name__}")
    lo, hi, shape = int(bound.get("low", 0)), int(bound["high"]), tuple(int(s) for s in
                                                                     bound["size"])
    check_device(device)
    if lo >= hi:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={lo} >= to={hi}")
    dt = dtype or dtypes.int64
    if requires_grad and not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                           "gradients")
    traced = _traced("integers", shape, dt, generator, low=lo, high=hi)
    if traced is not None:
        return traced
    gen = generator or _generator
    return _new(gen.integers(lo, hi, size=shape).astype(dt.np), dt, requires_grad)


def rand_like(input: Any, *, dtype: Any = None, device: Any = None,  # noqa: A002
              requires_grad: bool = False) -> Any:
    """Uniform samples on [0, 1) with ``input``'s shape (and dtype, unless given)."""
    return rand(tuple(input.shape), dtype=dtype or input.dtype, device=device,
                requires_grad=requires_grad)


def randn_like(input: Any, *, dtype: Any = None, device: Any = None,  # noqa: A002
               requires_grad: bool = False) -> Any:
    """Standard normal samples with ``input``'s shape (and dtype, unless given)."""
    return randn(tuple(input.shape), dtype=dtype or input.dtype, device=device,
                 requires_grad=requires_grad)
