"""The tensor ops of issue 15 made public: the Tensor methods and in-place variants of rounding,
sorting, scans, masks, scatters, norms, ``movedim``, ``clone(memory_format=)``, ``random_``,
``new_*`` factories and legacy ``type()``; and torch's memory-format objects.
"""

from __future__ import annotations


import numpy as np

from . import registry
from .einsum import einsum, moveaxis, movedim
from .norms import norm
from .rounding import ceil, fix, floor, isfinite, isinf, isneginf, isposinf, round, trunc  # noqa: A004
from .scan import cumprod, cumsum
from .selection import (argwhere, index_add, masked_fill, masked_scatter, masked_select, nonzero,
                        scatter, scatter_add, tril, triu, where)
from .sorting import argsort, msort, sort, topk

__all__ = ["argsort", "argwhere", "ceil", "channels_last", "clone", "contiguous_format",
           "cumprod", "cumsum", "einsum", "fix", "floor", "index_add", "isfinite", "isinf",
           "isneginf", "isposinf", "masked_fill", "masked_scatter", "masked_select",
           "memory_format", "moveaxis", "movedim", "msort", "nonzero", "norm", "preserve_format",
           "round", "scatter", "scatter_add", "sort", "topk", "tril", "triu", "trunc", "where"]


class memory_format:  # noqa: N801 - named like torch.memory_format
    """A memory layout request (``jitgrad.contiguous_format``, ``jitgrad.preserve_format``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"jitgrad.{self.name}"


preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")

CLONE_CONTIGUOUS = registry.defop(
    "clone_contiguous", lambda x: np.array(x, copy=True, order="C"), kind=registry.POINTWISE,
    node_name="CloneBackward0", vjp=(lambda g, ans, x: g,), jvp=registry.ELEMENTWISE,
    template="{0}")


def clone(input, *, memory_format: memory_format = preserve_format):  # noqa: A002
    """A copy of ``input`` that is recorded by autograd (``CloneBackward0``); with
    ``memory_format=contiguous_format`` the copy is C-contiguous, with ``preserve_format`` it
    keeps the input's layout."""
    from .elementwise import CLONE

    if memory_format is preserve_format or memory_format is None:
        return registry.apply(CLONE, input)
    if memory_format is contiguous_format:
        return registry.apply(CLONE_CONTIGUOUS, input)
    if not isinstance(memory_format, globals()["memory_format"]):
        raise TypeError(f"clone(): argument 'memory_format' must be torch.memory_format, not "
                        f"{type(memory_format).__name__}")
    raise RuntimeError(f"clone(): jitgrad tensors are always strided row-major or in their "
                       f"input's layout; memory_format={memory_format!r} is not supported")


def _axis_alias(fn):
    """``fn`` also accepting torch's NumPy-style alias ``axis=`` for ``dim=``."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if "axis" in kwargs:
            if "dim" in kwargs:
                raise TypeError(f"{fn.__name__}() got both 'dim' and its alias 'axis'")
            kwargs["dim"] = kwargs.pop("axis")
        return fn(*args, **kwargs)
    return wrapper


cumsum, cumprod, sort, argsort, topk = (_axis_alias(f) for f in (cumsum, cumprod, sort, argsort,
                                                                  topk))


def _new_factory(fill):
    def make(self, *size, dtype=None, device=None, requires_grad=False):
        from .creation import _new, _shape

        dt = dtype or self.dtype
        return _new(fill(_shape(size), dt.np), dt, requires_grad)
    return make


def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    from .creation import full

    return full(size, fill_value, dtype=dtype or self.dtype, requires_grad=requires_grad)


def _new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    from .creation import tensor

    return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)


def install(Tensor: type) -> None:  # noqa: N803
    """Attaches the ops above as Tensor methods, with in-place variants."""
    from .. import _legacy
    from ..random import random_
    from .inplace import inplace

    methods = {"round": round, "floor": floor, "ceil": ceil, "trunc": trunc, "fix": fix,
               "isfinite": isfinite, "isinf": isinf, "isposinf": isposinf,
               "isneginf": isneginf, "sort": sort, "argsort": argsort, "msort": msort,
               "topk": topk, "cumsum": cumsum, "cumprod": cumprod, "masked_fill": masked_fill,
               "masked_select": masked_select, "masked_scatter": masked_scatter,
               "nonzero": nonzero, "argwhere": argwhere, "tril": tril, "triu": triu,
               "scatter": scatter, "scatter_add": scatter_add, "index_add": index_add,
               "norm": norm, "movedim": movedim, "moveaxis": moveaxis,
               "clone": clone}
    for name, fn in methods.items():
        setattr(Tensor, name, fn)
    Tensor.random_ = random_
    Tensor.type = _legacy.tensor_type
    Tensor.new_zeros = _new_factory(np.zeros)
    Tensor.new_ones = _new_factory(np.ones)
    Tensor.new_empty = _new_factory(np.empty)
    Tensor.new_full = _new_full
    Tensor.new_tensor = _new_tensor

    def method(name: str, compute) -> None:
        def fn(self, *args, **kwargs):
            return inplace(self, lambda s, *a: compute(s, *a, **kwargs), *args)
        fn.__name__ = name
        fn.__doc__ = f"In-place version of :meth:`{name[:-1]}`."
        setattr(Tensor, name, fn)

    for name in ("round", "floor", "ceil", "trunc", "fix", "cumsum", "cumprod", "masked_fill",
                 "masked_scatter", "tril", "triu", "scatter", "scatter_add", "index_add"):
        method(name + "_", methods[name])
