"""In-place ops: compute out of place, write back into the tensor's memory, bump its version.

When autograd records the op, the tensor's ``grad_fn`` is rebased onto the new node (as torch
does for non-views). A view is not rebased: an in-place op on a view while autograd records
raises a clear error instead (torch would rebase the base through CopySlices).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes
from . import registry
from .registry import state

_VIEW_ERROR = (
    "jitgrad does not support in-place operations on a view while autograd records them (torch "
    "would rebase the view's base through CopySlices). Use the out-of-place op (e.g. "
    "`y = x.add(1)` instead of `x.add_(1)`), or clone() the view first.")


def _check(self: Any, args: tuple) -> bool:
    Tensor = registry.Tensor
    if self._is_inference and not state.inference:
        raise RuntimeError(
            "Inplace update to inference tensor outside InferenceMode is not allowed.You can make "
            "a clone to get a normal tensor before doing inplace update.See "
            "https://github.com/pytorch/rfcs/pull/17 for more details.")
    if not state.grad_enabled:
        return False
    if self._grad_fn is None and self._requires_grad:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation.")
    base = self._base
    if base is not None and base._grad_fn is None and base._requires_grad:
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place "
            "operation.")
    recording = self.requires_grad or any(isinstance(a, Tensor) and a.requires_grad
                                          for a in args)
    if recording and base is not None:
        raise RuntimeError(_VIEW_ERROR)
    return recording


def _castable(src: dtypes.dtype, dst: dtypes.dtype) -> bool:
    def rank(d):
        return 3 if d.is_complex else 2 if d.is_floating_point else 1 if d is not dtypes.bool \
            else 0
    return rank(src) <= rank(dst)


def inplace(self: Any, compute: Callable, *args: Any) -> Any:
    """Runs ``compute(self, *args)`` (out of place) and writes the result into ``self``."""
    if self._trace is not None:
        return self._trace.inplace(self, compute(self, *args))
    recording = _check(self, args)
    if recording:
        snap = registry.Tensor.__new__(registry.Tensor)
        snap._init(self._data.copy(), self._dtype, self._requires_grad)
        snap._grad_fn, snap._output_nr = self._grad_fn, self._output_nr
        new = compute(snap, *args)
    else:
        prev = state.grad_enabled
        state.grad_enabled = False
        try:
            new = compute(self, *args)
        finally:
            state.grad_enabled = prev
    if not _castable(new.dtype, self._dtype):
        raise RuntimeError(
            f"result type {_scalar_name(new.dtype)} can't be cast to the desired output type "
            f"{_scalar_name(self._dtype)}")
    if tuple(new.shape) != tuple(self.shape):
        raise RuntimeError(
            f"output with shape {list(self.shape)} doesn't match the broadcast shape "
            f"{list(new.shape)}")
    try:
        np.copyto(self._data, new._data, casting="unsafe")
    except ValueError as e:
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation."
        ) from e
    self._vc[0] += 1
    if recording and new._grad_fn is not None:
        node = new._grad_fn
        self._grad_fn, self._output_nr = node, new._output_nr
        saved = getattr(node, "_out", None)
        if saved is not None and saved._vc is new._vc:  # the node saved its result: that is self
            saved._value, saved._vc, saved._version = self._data, self._vc, self._vc[0]
    return self


def _scalar_name(d: dtypes.dtype) -> str:
    return d._legacy.replace("Tensor", "").replace("Byte", "Byte").replace("Char", "Char")


def _fill(s: Any, value: Any) -> Any:
    if isinstance(value, registry.Tensor) and value.ndim:
        raise RuntimeError(
            "fill_ only supports 0-dimension value tensor but got tensor with "
            f"{value.ndim} dimensions.")
    return (s * 0 + value).to(s.dtype)


def _copy_from(s: Any, src: Any) -> Any:
    if not isinstance(src, registry.Tensor):
        from .creation import tensor

        src = tensor(src)
    out = src.to(s.dtype) if src.dtype is not s.dtype else src
    if tuple(out.shape) != tuple(s.shape):
        out = out.expand(tuple(s.shape))
    return out


def install(Tensor: type) -> None:  # noqa: N803
    """Adds the ``x.op_(...)`` methods to Tensor."""
    def method(name: str, compute: Callable) -> None:
        def fn(self, *args, **kwargs):
            return inplace(self, lambda s, *a: compute(s, *a, **kwargs), *args)
        fn.__name__ = name
        fn.__doc__ = f"In-place version of :meth:`{name[:-1]}`."
        setattr(Tensor, name, fn)

    for name in ("add", "sub", "mul", "div", "pow", "neg", "exp", "log", "sqrt", "rsqrt", "tanh",
                 "sigmoid", "relu", "abs", "sin", "cos", "clamp", "clip", "reciprocal", "sign",
                 "log1p", "expm1", "masked_fill", "index_add", "scatter_add", "erf", "tan"):
        op = getattr(Tensor, name, None)
        if op is not None:
            method(name + "_", op)
    method("zero_", lambda s: _fill(s, 0))
    method("fill_", _fill)
    method("copy_", lambda s, src, non_blocking=False: _copy_from(s, src))

    def uniform_(self, a: float = 0.0, b: float = 1.0, *, generator: Any = None):
        from ..random import default_generator

        gen = generator or default_generator()
        sample = gen.uniform(a, b, size=self._data.shape)
        return self.copy_(registry.Tensor(sample.astype(self._dtype.np)))

    def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator: Any = None):
        from ..random import default_generator

        gen = generator or default_generator()
        sample = gen.normal(mean, std, size=self._data.shape)
        return self.copy_(registry.Tensor(sample.astype(self._dtype.np)))

    def setitem(self, key, value):
        from .indexing import index_put_value

        inplace(self, lambda s, v: index_put_value(s, key, v), value)

    Tensor.uniform_ = uniform_
    Tensor.normal_ = normal_
    Tensor.__setitem__ = setitem
