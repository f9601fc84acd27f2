"""Op observers: tools that watch every eager op's computation (``jitgrad.profiler``'s recorder
times each op, ``jitgrad.utils.flop_counter`` counts matrix-product FLOPs) without a second path
through the dispatcher.

An observer is ``wrap(op, impl) -> impl``: while it is installed, each op's ``OpDef.impl`` is the
composition of the installed observers' wrappers around the op's own impl (the first installed
innermost; ``wrap`` may return ``impl`` itself for ops it does not watch). Installing and
removing re-wrap every op once; between, eager ops pay only what the wrappers do, and while none
is installed nothing at all. The backward engine runs each node's rule on tensors (not its
traced program on arrays, which calls impls it captured) while ``ACTIVE`` is non-empty, so the
observers see the ops of the backward too. Ops inside a jit-compiled program are not seen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .registry import OPS

ACTIVE: list = []  # the installed observers, first installed first
_WRAPPED: dict = {}  # op -> (its own impl, the composed impl installed on it)


def _rewrap() -> None:
    for op in list(OPS.values()):
        own, installed = _WRAPPED.get(op, (None, None))
        if own is None or op.impl is not installed:  # (something replaced it meanwhile)
            own = op.impl
        if not ACTIVE:
            op.impl = own
            continue
        impl = own
        for wrap in ACTIVE:
            impl = wrap(op, impl)
        op.impl = impl
        _WRAPPED[op] = (own, impl)
    if not ACTIVE:
        _WRAPPED.clear()


def observe_ops(wrap: Callable[[Any, Callable], Callable]) -> Callable[[], None]:
    """Installs ``wrap(op, impl) -> impl`` around every op's impl.

    Args:
        wrap: called once per op with the op and its current impl; returns the impl to run.

    Returns:
        A function that removes the observer (again: nothing).
    """
    ACTIVE.append(wrap)
    _rewrap()

    def remove() -> None:
        if wrap in ACTIVE:
            ACTIVE.remove(wrap)
            _rewrap()

    return remove
