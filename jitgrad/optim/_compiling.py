"""What an optimizer step does differently while ``jitgrad.jit`` / ``jitgrad.compile`` traces it.

torch compiles ``opt.step()`` by reading the step counter as a tensor (``_get_value``) and by
initializing the state eagerly (dynamo calls ``_init_group`` outside the graph). The same here:

- state tensors (``step``, ``exp_avg``, momentum buffers) are created eagerly, outside the
  trace (``eager()``), so they are real tensors that the compiled program reads and updates in
  place (captured tensors, written back after each call);
- the step counter is read as a tensor (``get_value``), so the bias corrections are computed
  by the program, not frozen at trace time;
- each parameter's ``grad`` and state tensors are fetched afresh on every call
  (``track``): ``zero_grad()`` and ``backward()`` make a new ``grad`` tensor each step, and
  ``load_state_dict`` new state tensors, without a retrace; a parameter whose ``grad`` was None
  (skipped) is guarded, so one that gets a grad retraces.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .. import errors
from ..ops.registry import state as _state
from ..tensor import Tensor


def trace() -> Any:
    """The jit trace recording the step, or None when it runs eagerly."""
    for t in reversed(_state.traces):
        if not getattr(t, "batching", False):
            return t if hasattr(t, "note_source") else None
    return None


@contextmanager
def eager() -> Iterator[None]:
    """Runs the block eagerly even inside a jit trace (state initialization)."""
    saved = _state.traces[:]
    _state.traces.clear()
    try:
        yield
    finally:
        _state.traces[:] = saved


def get_value(x: Any) -> Any:
    """``x.item()`` eagerly, ``x`` itself while tracing (torch's ``_get_value``)."""
    if isinstance(x, Tensor) and trace() is None:
        return x.item()
    return x


def sub_scaled_(p: Tensor, t: Tensor, lr: Any) -> None:
    """``p.add_(t, alpha=-lr)``; a tensor ``lr`` while tracing is read by the program (an
    ``alpha`` is a number fixed at trace time), with eager mode's rounding of ``lr``."""
    if isinstance(lr, Tensor) and trace() is not None:
        p.sub_(t * lr.to(p.dtype))
    else:
        p.add_(t, alpha=-lr)


def _state_of(opt_ref: Any, p_ref: Any, key: str) -> Any:
    opt, p = opt_ref(), p_ref()
    if opt is None or p is None:
        return None
    s = opt.state.get(p)
    return None if s is None else s.get(key)


def _grad_of(p_ref: Any) -> Any:
    p = p_ref()
    return None if p is None else p.grad


def _has_no_grad(p_ref: Any) -> bool:
    p = p_ref()
    return p is None or p.grad is None


def track(opt: Any, group: dict[str, Any]) -> None:
    """While tracing ``opt.step()``: makes the compiled program fetch each parameter's grad and
    state tensors on every call, and guards which parameters have a grad."""
    tr = trace()
    if tr is None:
        return
    opt_ref = weakref.ref(opt)
    for i, p in enumerate(group["params"]):
        p_ref = weakref.ref(p)
        if p.grad is None:
            tr.note_guard(f"whether optimizer param {i} has no grad",
                          lambda r=p_ref: _has_no_grad(r))
            continue
        tr.note_source(p.grad, lambda r=p_ref: _grad_of(r))
        for key, value in opt.state.get(p, {}).items():
            if isinstance(value, Tensor):
                tr.note_source(value, lambda r=p_ref, k=key: _state_of(opt_ref, r, k))


def _run_step(ref: Any, args: tuple) -> None:
    scheduler = ref()
    if scheduler is not None:
        scheduler.step(*args)


def defer_scheduler_step(scheduler: Any, *args: Any) -> bool:
    """While tracing: runs ``scheduler.step(*args)`` eagerly after each call of the compiled
    program instead (its Python counters must advance on every call), and returns True; an
    optimizer step later in the same traced function then raises (it would read the old lr).
    Eagerly, or when an argument is a traced tensor (``ReduceLROnPlateau``'s metric: its
    ``float()`` then raises, a graph break), returns False."""
    tr = trace()
    if tr is None or any(isinstance(a, Tensor) and a._trace is not None for a in args):
        return False
    tr.defer(lambda r=weakref.ref(scheduler): _run_step(r, args), scheduler.optimizer,
             scheduler)
    return True


def check_not_deferred(opt: Any) -> None:
    """Raises (a graph break) if a deferred scheduler step already updates ``opt``'s lr."""
    tr = trace()
    if tr is not None and id(opt) in tr.deferred_on:
        raise errors.trace_error(
            "optimizer.step() after lr_scheduler.step() in one compiled function: the "
            "scheduler's step runs after the compiled program, so this step would use the old "
            "learning rate; call the scheduler after the optimizer (or outside)")
