"""Structured control flow: ``cond`` and ``while_loop`` (torch.cond, torch.while_loop).

Eagerly they are Python: ``cond`` runs the branch ``pred`` selects (a tensor predicate's
other branch is traced, not run, to check that the outputs agree), ``while_loop`` runs
``body_fn`` while ``cond_fn`` holds, with ordinary autograd (each op records its node, so
gradients flow as through the same code written inline). Under ``jitgrad.jit`` a traced
predicate cannot choose a branch (Python's ``if`` on a tracer raises ``ConcretizationError``),
so the call is handed to the active trace (``Trace.stage_cond`` / ``stage_while``), which traces
the functions into sub-graphs and records ONE equation that holds them
(``jit/control_flow.py``). Under ``vmap`` a batched predicate evaluates both branches and
selects per sample with ``where`` (as JAX does); an unbatched one runs the selected branch.

Operands, outputs and loop carries may be nested tuples, lists and dicts of tensors (pytrees).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import dtypes
from .registry import state
from ..tensor import Tensor

__all__ = ["cond", "while_loop", "flatten", "unflatten", "describe"]


# ---------------------------------------------------------------- pytrees (tuple/list/dict)


def flatten(tree: Any) -> tuple[list, Any]:
    """The leaves of ``tree`` (nested tuples, lists and dicts) and its structure (a spec)."""
    leaves: list = []
    return leaves, _flatten(tree, leaves)


def _flatten(x: Any, leaves: list) -> Any:
    if type(x) in (tuple, list):
        return (type(x), tuple(_flatten(v, leaves) for v in x))
    if type(x) is dict:
        keys = tuple(x)
        return (dict, keys, tuple(_flatten(x[k], leaves) for k in keys))
    leaves.append(x)
    return None


def unflatten(spec: Any, leaves: list) -> Any:
    """The tree of structure ``spec`` holding ``leaves`` (``flatten``'s inverse)."""
    it = iter(leaves)
    return _unflatten(spec, it)


def _unflatten(spec: Any, it: Any) -> Any:
    if spec is None:
        return next(it)
    if spec[0] is dict:
        return {k: _unflatten(s, it) for k, s in zip(spec[1], spec[2])}
    return spec[0](_unflatten(s, it) for s in spec[1])


def describe(spec: Any) -> str:
    """A spec as text: ``(*, [*, *])``, ``{'a': *}``."""
    if spec is None:
        return "*"
    if spec[0] is dict:
        return "{" + ", ".join(f"{k!r}: {describe(s)}" for k, s in zip(spec[1], spec[2])) + "}"
    inner = ", ".join(describe(s) for s in spec[1])
    if spec[0] is tuple:
        return f"({inner},)" if len(spec[1]) == 1 else f"({inner})"
    return f"[{inner}]"


# ---------------------------------------------------------------- checks (torch's texts)


def _check_pred(pred: Any) -> None:
    if not isinstance(pred, (bool, int, float, Tensor)):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if isinstance(pred, Tensor) and pred.numel() != 1:
        raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")


def _check_operands(operands: Any) -> list:
    leaves = flatten(operands)[0] if isinstance(operands, (tuple, list)) else None
    if leaves is None or any(not isinstance(t, Tensor) for t in leaves):
        raise RuntimeError(
            "Expect operands to be a tuple of possibly nested dict/list/tuple that only "
            f"consists of tensor leaves, but got {operands}.")
    return leaves


def _batched(t: Any) -> bool:
    top = state.traces[-1]
    return isinstance(t, Tensor) and t._trace is top


# ---------------------------------------------------------------- cond


def cond(pred: bool | int | float | Tensor, true_fn: Callable, false_fn: Callable,
         operands: tuple | list = ()) -> Any:
    """Conditionally applies ``true_fn`` or ``false_fn`` to ``operands`` (``torch.cond``).

    Eagerly this is ``true_fn(*operands) if pred else false_fn(*operands)`` with ordinary
    autograd; with a tensor ``pred`` the other branch is traced (shapes and dtypes only, not
    run) to check that both return the same structure, shapes and dtypes, as torch does.
    Inside ``jitgrad.jit`` a tensor ``pred`` is staged: both branches are traced into
    sub-graphs of ONE ``cond`` equation, which runs the selected one on each call and is
    differentiable (its backward is a ``cond`` of the branches' backwards). Tensors the
    branches read from their closure become extra operands.

    Args:
        pred: a bool, a number, or a one-element tensor (its truth value picks the branch).
        true_fn: called as ``true_fn(*operands)`` when ``pred`` is true.
        false_fn: called as ``false_fn(*operands)`` otherwise.
        operands: a tuple or list of (possibly nested tuples, lists and dicts of) tensors.

    Returns:
        What the selected branch returns (tensors, or nested tuples, lists and dicts of them).

    Raises:
        RuntimeError: for a ``pred`` that is no bool or one-element tensor, branches that are
            not callable, operands that are not tensors, or (traced) branches whose outputs
            differ in structure, shape or dtype.
    """
    _check_pred(pred)
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")
    if not isinstance(pred, Tensor):  # a Python constant: torch runs the branch
        return true_fn(*operands) if pred else false_fn(*operands)
    leaves = _check_operands(operands)
    if state.traces:
        top = state.traces[-1]
        if top.batching:
            return _cond_batched(pred, true_fn, false_fn, operands)
        return top.stage_cond(pred, true_fn, false_fn, tuple(operands), leaves)
    return _cond_eager(pred, true_fn, false_fn, operands)


def _cond_eager(pred: Tensor, true_fn: Callable, false_fn: Callable, operands: Any,
                check: bool = True) -> Any:
    """Runs the selected branch; with ``check``, the other one is traced (shapes only, never
    run) and the two outputs must agree, as torch checks a tensor predicate's branches."""
    from ..autograd.grad_mode import no_grad

    with no_grad():
        taken = bool(pred.reshape(()).item())
    out = true_fn(*operands) if taken else false_fn(*operands)
    if check:
        other = _abstract_outputs(false_fn if taken else true_fn, operands)
        if other is not None:
            leaves, spec = flatten(out)
            o_leaves, o_spec = other
            if taken:
                check_branch_outputs(spec, o_spec, leaves, o_leaves)
            else:
                check_branch_outputs(o_spec, spec, o_leaves, leaves)
    return out


def _abstract_outputs(fn: Callable, operands: Any) -> tuple | None:
    """``fn``'s output leaves and spec traced on stand-ins of ``operands`` (tracers: shapes and
    dtypes, no values, nothing computed); None if ``fn`` needs values to run."""
    from .. import errors
    from .._tracer import Trace, active

    leaves, spec = flatten(operands)
    T = Trace()
    try:
        with active(T):
            ins = [T.new_input(tuple(t.shape), t.dtype) for t in leaves]
            return flatten(fn(*unflatten(spec, ins)))
    except (errors.ConcretizationError, errors.JitTraceError):
        return None


def _cond_batched(pred: Tensor, true_fn: Callable, false_fn: Callable, operands: Any) -> Any:
    """``cond`` under ``vmap``: an unbatched concrete predicate runs its branch; a batched (or
    traced) one runs both and selects each sample's result with ``where``."""
    from .elementwise import where

    if not _batched(pred) and pred._trace is None:
        return _cond_eager(pred, true_fn, false_fn, operands, check=False)
    t_out, t_spec = flatten(true_fn(*operands))
    f_out, f_spec = flatten(false_fn(*operands))
    check_branch_outputs(t_spec, f_spec, t_out, f_out)
    p = pred.reshape(()) != 0
    return unflatten(t_spec, [where(p, a, b) for a, b in zip(t_out, f_out)])


def check_branch_outputs(t_spec: Any, f_spec: Any, t_out: list, f_out: list) -> None:
    """Raises torch's RuntimeError when the branches' outputs differ in structure, in being
    tensors, in shape or in dtype (naming the output)."""
    if t_spec != f_spec:
        raise RuntimeError(
            "Unmatched output spec from torch.cond branches: true branch tree_spec "
            f"{describe(t_spec)} vs false branch tree_spec {describe(f_spec)}.")
    for i, (a, b) in enumerate(zip(t_out, f_out)):
        ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
        if not (ta and tb):
            if ta or tb or not _same(a, b):
                raise RuntimeError(
                    f"When merging two branches' output in torch.cond, output {i} is "
                    f"{_what(a)} in true_fn but {_what(b)} in false_fn; under jit the branches "
                    "must return tensors (or equal Python values)")
            continue
        if a.dim() != b.dim():
            raise RuntimeError(
                "When merging two branches' output in torch.cond, expected same dim but got "
                f"{a.dim()} and {b.dim()} (output {i}: true_fn gives shape {list(a.shape)}, "
                f"false_fn {list(b.shape)}).")
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(
                "When merging two branches' output in torch.cond, expected same shape but got "
                f"{list(a.shape)} and {list(b.shape)} (output {i}; jit needs static shapes).")
        if a.dtype is not b.dtype:
            raise RuntimeError(
                "When merging two branches' output in torch.cond, expected same dtype but got "
                f"{a.dtype} and {b.dtype} (output {i}).")


def _same(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - incomparable values differ
        return False


def _what(x: Any) -> str:
    if isinstance(x, Tensor):
        return f"a tensor of shape {list(x.shape)}"
    return f"{type(x).__name__} {x!r}"


# ---------------------------------------------------------------- while_loop


def while_loop(cond_fn: Callable, body_fn: Callable, carried_inputs: tuple | list) -> Any:
    """Runs ``body_fn`` on the carry while ``cond_fn`` holds (``torch.while_loop``).

    Semantically::

        def while_loop(cond_fn, body_fn, carried_inputs):
            val = carried_inputs
            while cond_fn(*val):
                val = body_fn(*val)
            return val

    Eagerly that loop runs with ordinary autograd. Inside ``jitgrad.jit`` it is staged as ONE
    ``while_loop`` equation holding the traced ``cond_fn`` and ``body_fn``: the carry must keep
    its structure, shapes and dtypes (loop-invariant), and, as JAX's ``lax.while_loop``, the
    staged loop is not reverse-differentiable (tracing raises when a gradient would flow
    through it: use a Python ``for`` loop with a static trip count, or call the function
    eagerly). Integer leaves of the carry become int64 0-d tensors under jit.

    Args:
        cond_fn: ``cond_fn(*carry)`` returns a boolean scalar tensor or a bool.
        body_fn: ``body_fn(*carry)`` returns the next carry (same structure, shapes, dtypes).
        carried_inputs: a tuple or list of (nested tuples, lists and dicts of) tensors or ints.

    Returns:
        The final carry, with the structure of ``carried_inputs``.

    Raises:
        RuntimeError: for non-callables, carries that are not tensors or ints, a ``cond_fn``
            that returns no boolean scalar, or a carry that changes structure, shape or dtype.
    """
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(
            f"carried_inputs must be a tuple or list but got {type(carried_inputs)}")
    leaves, spec = flatten(carried_inputs)
    if any(not isinstance(t, (Tensor, int)) or isinstance(t, bool) for t in leaves):
        raise RuntimeError(
            "Expect carried_inputs to be a tuple of possibly nested dict/list/tuple that only"
            f"consists of tensor or int leaves, but got {carried_inputs}.")
    if state.traces and not state.traces[-1].batching:
        return state.traces[-1].stage_while(cond_fn, body_fn, carried_inputs, leaves, spec)
    val = carried_inputs
    while check_cond_output(cond_fn(*val)):
        new = body_fn(*val)
        check_body_output(new, val)
        val = new
    return val


def check_cond_output(pred: Any) -> bool:
    """The truth value of what ``cond_fn`` returned; torch's error unless it is a boolean
    scalar tensor or a bool."""
    if isinstance(pred, bool):
        return pred
    if isinstance(pred, Tensor) and pred.dim() == 0 and pred.dtype is dtypes.bool:
        if pred._trace is not None and state.traces and state.traces[-1].batching:
            raise RuntimeError(
                "while_loop under vmap with a predicate that differs between samples is not "
                "supported; make the loop condition independent of the batch")
        return bool(pred.item())
    raise RuntimeError(f"cond_fn must return a boolean scalar tensor or a boolean but got {pred}")


def check_body_output(new: Any, old: Any) -> None:
    """Raises torch's RuntimeError when ``body_fn``'s output does not match the carry in
    structure, shape or dtype."""
    if not isinstance(new, (tuple, list)):
        new = (new,)
    n_leaves, n_spec = flatten(tuple(new))
    o_leaves, o_spec = flatten(tuple(old))
    if len(n_leaves) != len(o_leaves) or n_spec != o_spec:
        raise RuntimeError(
            "Expected body_fn_output and carried_inputs to have same number of outputs but got "
            f"lhs:{describe(n_spec)} and rhs:{describe(o_spec)}")
    for i, (a, b) in enumerate(zip(n_leaves, o_leaves)):
        if not isinstance(b, Tensor):
            continue
        diffs = []
        if not isinstance(a, Tensor):
            diffs.append(f"'type: {type(a).__name__} vs Tensor'")
        else:
            if tuple(a.shape) != tuple(b.shape):
                diffs.append(f"'shape: {a.shape} vs {b.shape}'")
            if a.dtype is not b.dtype:
                diffs.append(f"'dtype: {a.dtype} vs {b.dtype}'")
        if diffs:
            raise RuntimeError(
                "Expected body_fn_output and carried_inputs to have same metadata but found:\n"
                f"pair[{i}] differ in {', '.join(diffs)}")
