"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode (thread-local)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..ops.registry import state
from ._decorator import DecoratorContextManager


def is_grad_enabled() -> bool:
    """Returns True if grad mode is currently enabled (in this thread)."""
    return state.grad_enabled


def is_inference_mode_enabled() -> bool:
    return state.inference


class _NoParensMeta(type):
    # `@no_grad` without parentheses: calling the class on a function decorates it.
    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], bool) \
                and cls in (no_grad, enable_grad):
            return type.__call__(cls)(args[0])
        return type.__call__(cls, *args, **kwargs)


class no_grad(DecoratorContextManager, metaclass=_NoParensMeta):  # noqa: N801
    """Context manager and decorator that disables gradient recording."""

    def __enter__(self) -> None:
        self.prev = state.grad_enabled
        state.grad_enabled = False

    def __exit__(self, *exc: object) -> None:
        state.grad_enabled = self.prev


class enable_grad(DecoratorContextManager, metaclass=_NoParensMeta):  # noqa: N801
    """Context manager and decorator that enables gradient recording."""

    def __enter__(self) -> None:
        self.prev = state.grad_enabled
        state.grad_enabled = True

    def __exit__(self, *exc: object) -> None:
        state.grad_enabled = self.prev


class set_grad_enabled(DecoratorContextManager):  # noqa: N801
    """Sets grad mode on or off: as a function call, context manager or decorator."""

    def __init__(self, mode: bool) -> None:
        if type(mode) is not bool:
            kind = type(mode)
            name = kind.__name__ if kind.__module__ == "builtins" else \
                f"{kind.__module__}.{kind.__name__}"
            raise TypeError(f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, "
                            f"not {name.replace('jitgrad.tensor.', '')}")
        self.prev = state.grad_enabled
        self.mode = mode
        state.grad_enabled = self.mode

    def __call__(self, func: Callable) -> Callable:
        state.grad_enabled = self.prev
        return super().__call__(func)

    def __enter__(self) -> None:
        state.grad_enabled = self.mode

    def __exit__(self, *exc: object) -> None:
        state.grad_enabled = self.prev

    def clone(self) -> set_grad_enabled:
        return self.__class__(self.mode)


class inference_mode(DecoratorContextManager):  # noqa: N801
    """Like no_grad, and tensors created inside are inference tensors (torch.inference_mode)."""

    def __new__(cls, mode: Any = True) -> Any:
        if callable(mode) and not isinstance(mode, bool):  # @inference_mode without parens
            self = super().__new__(cls)
            self.mode = True
            return self(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode

    def __enter__(self) -> None:
        self.prev = (state.grad_enabled, state.inference)
        # As c10's InferenceMode: grad mode is the opposite of the inference flag.
        state.grad_enabled, state.inference = not self.mode, bool(self.mode)

    def __exit__(self, *exc: object) -> None:
        state.grad_enabled, state.inference = self.prev

    def clone(self) -> inference_mode:
        return self.__class__(self.mode)
