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

__all__ = ["allow_in_graph", "compile", "disable", "is_compiling", "is_dynamo_compiling",
           "is_exporting", "list_backends", "reset", "set_stance"]


def is_compiling() -> bool:
    """Whether the code runs inside a jit trace (``torch.compile``'s, ``jit``'s)."""
    return _function.compiling[0] > 0


def is_dynamo_compiling() -> bool:
    """``is_compiling`` (torch keeps both names)."""
    return is_compiling()


def is_exporting() -> bool:
    """False: jitgrad has no ``torch.export``."""
    return False


def compile(*args: Any, **kwargs: Any) -> Any:  # noqa: A001 - torch's name
    """``jitgrad.compile`` (``torch.compiler.compile`` is ``torch.compile``)."""
    return _tc.compile(*args, **kwargs)


def list_backends(exclude_tags: tuple[str, ...] | None = ("debug", "experimental")) -> list[str]:
    """The ``backend=`` names ``compile`` takes, without the debugging ones (``"eager"``,
    ``"aot_eager"``) unless ``exclude_tags`` is None or empty."""
    debug = ("aot_eager", "eager")
    return sorted(b for b in _tc.BACKENDS if not (exclude_tags and "debug" in exclude_tags
                                                  and b in debug))


def allow_in_graph(fn: Callable) -> Callable:
    """Returns ``fn``: jit traces through every function it calls, so each is in the graph."""
    return fn


def disable(fn: Callable | None = None, recursive: bool = True, *,
            reason: str | None = None) -> Callable:
    """Keeps ``fn`` out of compilation: ``compile(fn)`` runs it eagerly, and a compiled
    function calling it falls back to running eagerly (torch breaks the graph there; with
    ``fullgraph=True`` both raise). As a decorator without arguments or with them.

    Args:
        fn: the function (or module) to run eagerly.
        recursive: accepted for torch compatibility (jit traces whole calls, so what ``fn``
            calls runs eagerly with it).
        reason: said in the error a trace through ``fn`` raises.
    """
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    name = getattr(fn, "__qualname__", type(fn).__name__)

    @functools.wraps(fn)
    def run_eagerly(*args: Any, **kwargs: Any) -> Any:
        if is_compiling():
            from .errors import DisabledCallError

            why = f" ({reason})" if reason else ""
            raise DisabledCallError(f"{name} is marked torch.compiler.disable{why}: it runs "
                                    "eagerly and cannot be traced")
        return fn(*args, **kwargs)

    run_eagerly._torchdynamo_disable = True
    return run_eagerly


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
