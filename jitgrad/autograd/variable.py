"""``torch.autograd.variable``: the deprecated ``Variable`` (Variables are Tensors)."""

from __future__ import annotations

import warnings
from typing import Any

from ..tensor import Tensor

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, other: Any) -> bool:
        return isinstance(other, Tensor)  # every tensor is a Variable, as in torch


class Variable(metaclass=_VariableMeta):
    """Deprecated: Variables are Tensors. ``Variable(data)`` returns a tensor sharing ``data``'s
    values, with ``requires_grad`` set; ``isinstance(t, Variable)`` is True for any tensor."""

    def __new__(cls, data: Any, requires_grad: bool = False, volatile: bool = False) -> Any:
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with "
                          "jitgrad.no_grad():` instead.", UserWarning, stacklevel=2)
        t = data.detach()
        if requires_grad:
            t.requires_grad_(True)
        return t


class _ExecutionEngine:
    """``Variable._execution_engine``: the backward engine's callback queue."""

    @staticmethod
    def queue_callback(callback: Any) -> None:
        """Runs ``callback()`` once the backward pass running now has finished."""
        from .engine import queue_callback

        queue_callback(callback)


Variable._execution_engine = _ExecutionEngine()
