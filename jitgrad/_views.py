"""Views' autograd history: a view remembers the view ops that made it from its base
(``Tensor._view_chain``); when the base changes in place (through itself or another view), the
view's ``grad_fn`` is remade from the base's new history by replaying that chain, as torch
does."""

from __future__ import annotations

from typing import Any

from .ops import registry

_NOGRAD_VIEW_HINT = (
    "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
    "your code by moving both the view and the inplace either both inside the no_grad block (if "
    "you don't want the inplace to be tracked) or both outside (if you want the inplace to be "
    "tracked).")


def replay_view(t: Any, chain: tuple) -> Any:
    """Applies a view's chain of view ops (``Tensor._view_chain``) to ``t``, with jitgrad ops."""
    for op, rest, params, i in chain:
        t = registry.apply(op, t, *rest, **dict(params))
        if i is not None:
            t = t[i]
    return t


def _refresh_view(t: Any) -> None:
    """Remakes a view's ``grad_fn`` from its base's current history, after an in-place op
    changed the base (through it, another view, or the base itself), as torch does."""
    base = t._base
    if not (base._requires_grad or base._grad_fn is not None):
        t._view_version = t._vc[0]
        return
    if t._view_nograd:
        if registry.state.grad_enabled:
            raise RuntimeError(
                "A view was created in no_grad mode and its base or another view of its base has "
                "been modified inplace with grad mode enabled. " + _NOGRAD_VIEW_HINT)
        return
    t._view_version = t._vc[0]
    prev = registry.state.grad_enabled
    registry.state.grad_enabled = True
    try:
        fresh = replay_view(base, t._view_chain)
    finally:
        registry.state.grad_enabled = prev
    t._grad_fn, t._output_nr = fresh._grad_fn, fresh._output_nr
