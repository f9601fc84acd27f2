"""``RemovableHandle``: what registering a hook returns (tensor, node, module and optimizer
hooks), and ``add_hook``, which registers one."""

from __future__ import annotations

import itertools
from collections.abc import Callable

_handle_ids = itertools.count()


class RemovableHandle:
    """Returned by ``register_hook``-style calls; ``remove()`` unregisters the hook."""

    __slots__ = ("_hooks", "id")

    def __init__(self, hooks: dict, hook: Callable) -> None:
        self.id = next(_handle_ids)
        self._hooks = hooks
        hooks[self.id] = hook

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def add_hook(hooks: dict, hook: Callable, prepend: bool = False) -> RemovableHandle:
    """A ``RemovableHandle`` for ``hook`` in ``hooks``, first when ``prepend``."""
    handle = RemovableHandle(hooks, hook)
    if prepend:
        rest = [(k, v) for k, v in hooks.items() if k != handle.id]
        hooks.clear()
        hooks[handle.id] = hook
        hooks.update(rest)
    return handle
