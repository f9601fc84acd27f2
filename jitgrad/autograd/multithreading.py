"""``set_multithreading_enabled`` / ``is_multithreading_enabled`` (torch.autograd).

torch runs the backward of device tensors on per-device worker threads unless this is off.
jitgrad's engine always runs the backward on the calling thread, so the setting is recorded
(thread-local, default on, as torch's) and queried, and changes nothing else.
"""

from __future__ import annotations

import threading
from typing import Any

from ._decorator import DecoratorContextManager

__all__ = ["set_multithreading_enabled", "is_multithreading_enabled"]

_local = threading.local()


def is_multithreading_enabled() -> bool:
    """Whether multithreaded backward is enabled on this thread (default True)."""
    return getattr(_local, "enabled", True)


class set_multithreading_enabled(DecoratorContextManager):  # noqa: N801 - torch's name
    """Enables or disables multithreaded backward: as a function call (sets it at once), a
    context manager (restores the previous setting on exit) or a decorator.

    Args:
        mode: enable (True) or disable (False).
    """

    def __init__(self, mode: bool) -> None:
        self.prev = is_multithreading_enabled()
        _local.enabled = bool(mode)
        self.mode = mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        _local.enabled = self.prev

    def clone(self) -> set_multithreading_enabled:
        """A copy (for the decorator form)."""
        return self.__class__(self.mode)
