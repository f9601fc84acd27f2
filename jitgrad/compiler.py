"""``jitgrad.compiler``: ``torch.compiler``'s ``is_compiling``, ``set_stance`` and ``reset``, on
``jitgrad.compile`` (which traces with ``jit``).

``is_compiling()`` is True while jit traces a function (a compiled function's Python runs
then, once per input signature). ``set_stance`` changes what compiled functions do on their
next calls: ``"force_eager"`` runs them eagerly, ``"eager_on_recompile"`` runs eagerly where a
call would compile (cached code still runs), ``"fail_on_recompile"`` raises there, and
``"eager_then_compile"`` (and ``"aot_eager_then_compile"``) runs a function's first call
eagerly. It works as a function, a context manager and a decorator, as torch's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .jit import function as _function
from .jit import torch_compile as _tc

__all__ = ["is_compiling", "reset", "set_stance"]


def is_compiling() -> bool:
    """Whether the code runs inside a jit trace (``torch.compile``'s, ``jit``'s)."""
    return _function.compiling[0] > 0


def reset() -> None:
    """Forgets all compiled code (``torch.compiler.reset``; see ``jitgrad._dynamo.reset``)."""
    _tc.reset()


def _forbidden(fn: Any) -> None:
    if is_compiling():  # (torch: stances change only outside compiled regions)
        raise AssertionError(f"Attempt to trace forbidden callable {fn!r}")


def set_stance(stance: str = "default", *, skip_guard_eval_unsafe: bool = False,
               force_backend: str | Callable | None = None) -> _SetStance:
    """Sets the compiler's stance now; as a context manager, restores the previous one on exit;
    as a decorator, sets it only while the decorated function runs.

    Args:
        stance: ``"default"``, ``"force_eager"``, ``"eager_on_recompile"``,
            ``"fail_on_recompile"``, ``"eager_then_compile"`` or ``"aot_eager_then_compile"``
            (an unknown one raises when a compiled function is next called, as in torch).
        skip_guard_eval_unsafe: Accepted for torch compatibility (jitgrad's guards are cheap
            key lookups).
        force_backend: torch compiles with this backend under the ``"default"`` stance;
            jitgrad does not switch backends per stance (pass ``backend=`` to
            ``jitgrad.compile``), so it raises ``NotImplementedError``.

    Returns:
        The stance object (a context manager and a decorator).

    Raises:
        RuntimeError: for ``force_backend`` with a non-default stance (torch's error).
        NotImplementedError: for ``force_backend`` with the default stance.
        AssertionError: inside a compiled region.
    """
    return _SetStance(stance, skip_guard_eval_unsafe=skip_guard_eval_unsafe,
                      force_backend=force_backend)


class _SetStance:
    """What ``set_stance`` returns (torch's ``_dynamo.decorators.set_stance``)."""

    def __init__(self, stance: str = "default", *, skip_guard_eval_unsafe: bool = False,
                 force_backend: str | Callable | None = None) -> None:
        _forbidden(set_stance)
        if force_backend is not None and stance != "default":
            raise RuntimeError("non-default stance cannot have force_backend set")
        if force_backend is not None:
            raise NotImplementedError("jitgrad.compiler.set_stance: force_backend is not "
                                      "supported; pass backend= to jitgrad.compile instead")
        self.stance = stance
        self.prev = _tc.stance[0]
        _tc.stance[0] = stance

    def __call__(self, fn: Callable) -> Callable:
        _tc.stance[0] = self.prev

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            _forbidden(fn)
            with _SetStance(self.stance):
                return fn(*args, **kwargs)

        return wrapper

    def __enter__(self) -> None:
        _forbidden(set_stance)
        _tc.stance[0] = self.stance

    def __exit__(self, *exc: Any) -> None:
        _tc.stance[0] = self.prev
