"""The optimizer hooks torch.optim has: step pre/post hooks (per optimizer and global), and
``state_dict`` / ``load_state_dict`` pre/post hooks. ``Optimizer`` inherits them from
``OptimizerHooks``; its ``__init__`` wraps the class's ``step`` once, as torch patches it."""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable
from itertools import chain
from typing import Any

from .._hooks import RemovableHandle, add_hook

_global_pre_hooks: OrderedDict = OrderedDict()
_global_post_hooks: OrderedDict = OrderedDict()

_HOOK_DICTS = ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
               "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
               "_optimizer_load_state_dict_pre_hooks", "_optimizer_load_state_dict_post_hooks")


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Registers ``hook(optimizer, args, kwargs) -> None | (args, kwargs)``, run before every
    optimizer's ``step`` (``args`` starts with the optimizer)."""
    return add_hook(_global_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Registers ``hook(optimizer, args, kwargs)``, run after every optimizer's ``step``."""
    return add_hook(_global_post_hooks, hook)


def _with_step_hooks(step: Callable) -> Callable:
    @functools.wraps(step)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        self = args[0]
        for hook in chain(_global_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(f"{step} must return None or a tuple of (new_args, "
                                       f"new_kwargs), but got {result}.")
                args, kwargs = result
        out = step(*args, **kwargs)
        for hook in chain(self._optimizer_step_post_hooks.values(), _global_post_hooks.values()):
            hook(self, args, kwargs)
        return out

    wrapper.hooked = True
    return wrapper


class OptimizerHooks:
    """The hook registrations of ``Optimizer``."""

    def _init_hooks(self) -> None:
        for name in _HOOK_DICTS:
            self.__dict__.setdefault(name, OrderedDict())
        cls = type(self)
        if not getattr(cls.step, "hooked", False):
            cls.step = _with_step_hooks(cls.step)

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Registers ``hook(optimizer, args, kwargs) -> None | (args, kwargs)``, run before
        this optimizer's ``step``."""
        return add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Registers ``hook(optimizer, args, kwargs)``, run after this optimizer's ``step``."""
        return add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable,
                                     prepend: bool = False) -> RemovableHandle:
        """Registers ``hook(optimizer)``, run before ``state_dict()`` builds the dict."""
        return add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable,
                                      prepend: bool = False) -> RemovableHandle:
        """Registers ``hook(optimizer, state_dict) -> None | state_dict``, run on the dict
        ``state_dict()`` returns."""
        return add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable,
                                          prepend: bool = False) -> RemovableHandle:
        """Registers ``hook(optimizer, state_dict) -> None | state_dict``, run on the dict
        ``load_state_dict`` is given, before it is loaded."""
        return add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable,
                                           prepend: bool = False) -> RemovableHandle:
        """Registers ``hook(optimizer)``, run after ``load_state_dict`` has loaded."""
        return add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def _run_state_dict_pre_hooks(self) -> None:
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)

    def _run_state_dict_post_hooks(self, state_dict: dict) -> dict:
        for hook in self._optimizer_state_dict_post_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def _run_load_state_dict_pre_hooks(self, state_dict: dict) -> dict:
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def _run_load_state_dict_post_hooks(self) -> None:
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)
