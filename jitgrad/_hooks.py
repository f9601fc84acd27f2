"""``RemovableHandle``: what registering a hook returns (tensor, node and module hooks)."""

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
