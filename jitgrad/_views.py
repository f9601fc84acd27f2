"""Views' autograd history: a view remembers the view ops that made it from its base
(``Tensor._view_chain``); when the base changes in place (through itself or another view), the
view's ``grad_fn`` is remade from the base's new history by replaying that chain, as torch
does."""

from __future__ import annotations

import re
from typing import Any

from .ops import registry
from .ops.op_fields import INFERENCE_VIEW, MULTI_OUTPUT_VIEW, NO_GRAD_VIEW

# torch's advice after a refused in-place change of a view, by how the view was made
_AMBIGUOUS = ("Given that this use case is ambiguous and error-prone, it is forbidden. You can "
              "clarify your code by moving both the view and the inplace either both inside the "
              "{} block (if you don't want the inplace to be tracked) or both outside (if you "
              "want the inplace to be tracked).")
_HINTS = {
    NO_GRAD_VIEW: _AMBIGUOUS.format("no_grad"),
    INFERENCE_VIEW: _AMBIGUOUS.format("inference_mode"),
    MULTI_OUTPUT_VIEW: "This view is the output of a function that returns multiple views. Such "
                       "functions do not allow the output views to be modified inplace. You "
                       "should replace the inplace operation by an out-of-place one.",
}


def view_rebase_error(t: Any, direct: bool) -> RuntimeError:
    """torch's error for an in-place change of (``direct``) or under (its base or another view
    of it) a view that may not be rebased; it names the view's node as torch does."""
    how = "is being" if direct else "its base or another view of its base has been"
    fn = t._grad_fn
    creation = t._view_creation
    if fn is not None:
        name = type(fn if fn._named else fn._named_as_torch()).__name__
        output = f"Output {t._output_nr} of {re.sub(r'Backward[0-9]*$', '', name)}"
        if creation == MULTI_OUTPUT_VIEW:
            return RuntimeError(f"{output} is a view and {how} modified inplace. "
                                f"{_HINTS[creation]}")
        made = f"{output} is a view of a view which was created in"  # (an op on such a view)
    else:
        made = "A view was created in"
    if creation == INFERENCE_VIEW:
        msg = f"{made} inference mode and {how} modified inplace in normal mode."
    else:
        msg = f"{made} no_grad mode and {how} modified inplace with grad mode enabled."
    return RuntimeError(f"{msg} {_HINTS[creation]}")


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
    if t._view_creation is not None:
        if registry.state.grad_enabled:
            raise view_rebase_error(t, direct=False)
        return
    t._view_version = t._vc[0]
    prev = registry.state.grad_enabled
    registry.state.grad_enabled = True
    try:
        fresh = replay_view(base, t._view_chain)
    finally:
        registry.state.grad_enabled = prev
    t._grad_fn, t._output_nr = fresh._grad_fn, fresh._output_nr
