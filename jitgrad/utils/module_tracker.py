"""``torch.utils.module_tracker``: which modules are running (forward, or their backward)."""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from typing import Any

from ..autograd import engine
from ..autograd.graph import register_multi_grad_hook
from ..nn._module_hooks import register_module_forward_hook, register_module_forward_pre_hook
from ..tensor import Tensor
from ._pytree import tree_flatten

logger = logging.getLogger(__name__)

__all__ = ["ModuleTracker"]


class ModuleTracker:
    """A context manager that tracks the ``nn.Module`` hierarchy while it runs.

    ``parents`` is the set of the fully qualified names (as in the state dict, under the
    outermost module's class name) of the modules whose forward, or backward, is running now;
    it always holds ``"Global"``. ``is_bw`` says whether a backward pass is running. As in
    torch, a module's backward is entered when the gradients of its outputs are computed and
    left when those of its inputs are (a hook on each), and ``parents`` is reset to
    ``{"Global"}`` at the end of each backward pass.

    Example::

        with ModuleTracker() as tracker:
            mod(x)  # tracker.parents, read inside mod's forward, names mod
    """

    parents: set[str]

    def __init__(self) -> None:
        self.parents = {"Global"}
        self._known_modules: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._seen_modules: weakref.WeakSet = weakref.WeakSet()
        self._has_callback = False
        self._hooks: list = []

    def _maybe_set_engine_callback(self) -> None:
        if self._has_callback:
            return

        def callback() -> None:
            self.parents = {"Global"}
            self._has_callback = False

        engine.queue_callback(callback)
        self._has_callback = True

    @property
    def is_bw(self) -> bool:
        """Whether a backward pass is running now."""
        return engine.current_graph_task_id() != -1

    def _get_mod_name(self, mod: Any) -> str:
        if mod not in self._known_modules:
            self._known_modules[mod] = type(mod).__name__
        mod_name = self._known_modules[mod]
        if mod not in self._seen_modules:
            for name, submod in mod.named_children():
                self._known_modules[submod] = f"{mod_name}.{name}"
                self._get_mod_name(submod)
            self._seen_modules.add(mod)
        return mod_name

    def _get_append_fn(self, name: str, is_bw: bool) -> Callable:
        def fn(*args: Any) -> None:
            if is_bw:
                self._maybe_set_engine_callback()
            if name in self.parents:
                logger.info("The module hierarchy tracking seems to be broken as this Module was "
                            "already entered. %s during %s", name,
                            "backward" if is_bw else "forward")
            self.parents.add(name)

        return fn

    def _get_pop_fn(self, name: str, is_bw: bool) -> Callable:
        def fn(*args: Any) -> None:
            if name in self.parents:
                self.parents.remove(name)
            else:
                logger.info("The Module hierarchy tracking is confused as we're exiting a Module "
                            "that was never entered. %s during %s", name,
                            "backward" if is_bw else "forward")

        return fn

    def _fw_pre_hook(self, mod: Any, input: Any) -> None:  # noqa: A002 - torch's name
        name = self._get_mod_name(mod)
        self._get_append_fn(name, False)()
        args, _ = tree_flatten(input)
        tensors = [a for a in args if isinstance(a, Tensor) and a.requires_grad]
        if tensors:
            self._hooks.append(register_multi_grad_hook(tensors, self._get_pop_fn(name, True)))

    def _fw_post_hook(self, mod: Any, input: Any, output: Any) -> None:  # noqa: A002
        name = self._get_mod_name(mod)
        self._get_pop_fn(name, False)()
        args, _ = tree_flatten(output)
        tensors = [a for a in args if isinstance(a, Tensor) and a.requires_grad]
        if tensors:
            self._hooks.append(register_multi_grad_hook(tensors,
                                                        self._get_append_fn(name, True)))

    def __enter__(self) -> ModuleTracker:
        self._fw_pre_handle = register_module_forward_pre_hook(self._fw_pre_hook)
        self._fw_post_handle = register_module_forward_hook(self._fw_post_hook)
        return self

    def __exit__(self, *args: Any) -> None:
        self._fw_pre_handle.remove()
        self._fw_post_handle.remove()
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()
