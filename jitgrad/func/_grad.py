"""``jitgrad.func``: JAX-style function transforms, composable with ``jitgrad.jit``.

``grad``, ``value_and_grad`` and ``vjp`` work in two modes:

* eagerly, through the autograd engine (a primal that already requires grad is used as is,
  and the gradient keeps its graph, so ``grad(grad(f))`` gives second derivatives);
* inside a jit trace, by recording ``f`` and then running the VJP pass's reverse sweep over
  the recorded equations, so ``jit(value_and_grad(f))`` stages forward and backward as one
  program.

As in ``torch.func``, the transforms enable grad inside ``f`` even under ``no_grad()``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..ops.registry import state
from ..tensor import Tensor
from ._pytree import tree_flatten, tree_unflatten


# the transform whose text the errors below give: vjp's, or grad's while it runs vjp
_CALLER = ["vjp(f, *primals)"]
_GRAD = "grad_and_value(f)(*args)"


def _flat_outputs(out: Any) -> list:
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat_outputs(o)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in _flat_outputs(o)]
    if _CALLER[-1] == _GRAD:
        raise RuntimeError(f"{_GRAD}: Expected f(*args) to return a Tensor, got {type(out)}")
    raise RuntimeError(f"{_CALLER[-1]}: expected f(*primals) to return only tensors, got "
                       f"unsupported type {type(out)}")


def _split_aux(res: Any, has_aux: bool) -> tuple[Any, Any]:
    if not has_aux:
        return res, None
    if not (isinstance(res, tuple) and len(res) == 2):
        raise RuntimeError(f"{_CALLER[-1]}: output of function f should be a tuple: (output, "
                           "aux) if has_aux is True")
    for leaf in tree_flatten(res[1])[0]:  # (torch's transforms take tensors in aux only)
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(leaf)}")
    return res


def _check_primals(primals: Sequence) -> None:
    for p in primals:
        if not isinstance(p, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(p)}")


def vjp(func: Callable, *primals: Tensor, has_aux: bool = False) -> tuple:
    """``(func(*primals), vjp_fn[, aux])`` where ``vjp_fn(cotangents)`` returns one gradient
    per primal (zeros where ``func`` does not depend on it).

    Args:
        func: a function of tensors returning a tensor or a tuple/list/dict of tensors (or
            ``(output, aux)`` with ``has_aux``).
        primals: the point at which to differentiate.
        has_aux: whether ``func`` returns an auxiliary value that is not differentiated.
    """
    flat, spec = tree_flatten(primals)
    _check_primals(flat)
    if any(not isinstance(p, Tensor) for p in primals):  # pytrees of tensors (dicts of params)
        def flat_func(*leaves: Tensor) -> Any:
            return func(*tree_unflatten(list(leaves), spec))

        res = vjp(flat_func, *flat, has_aux=has_aux)
        flat_fn = res[1]

        def vjp_fn(cotangents: Any) -> tuple:
            return tree_unflatten(list(flat_fn(cotangents)), spec)

        return (res[0], vjp_fn) + tuple(res[2:])
    if state.traces and state.traces[-1].batching:
        from .vmap import vjp_batched

        return vjp_batched(vjp, func, primals, has_aux)
    if state.traces:
        return _vjp_traced(func, primals, has_aux)
    return _vjp_eager(func, primals, has_aux)


# Set (by ``jacobians.jvp``) while taking a VJP whose results must stay differentiable
# although its primals do not require grad: the VJP of a VJP whose graph reaches outer leaves.
keep_graph = [False]


def _vjp_eager(func: Callable, primals: Sequence, has_aux: bool) -> tuple:
    from ..autograd import grad as autograd_grad
    from ..ops.creation import zeros_like

    # (under no_grad around the transform, torch records nothing at the outer level)
    outer_records = is_grad_enabled()
    nested = keep_graph[0] or outer_records and any(p.requires_grad for p in primals)
    inner = [p if p.requires_grad else _fresh_copy(p) for p in primals]
    own = {id(p) for p in inner}
    _ACTIVE.append(own)
    try:
        with enable_grad():
            out, aux = _split_aux(func(*inner), has_aux)
        outs = _flat_outputs(out)
        # a tensor func closes over (a module's parameter, an enclosing transform's primal)
        # keeps its graph through the gradient, as torch.func's levels keep it
        nested = nested or outer_records and _reaches_outer(outs, own)
    finally:
        _ACTIVE.pop()

    def vjp_fn(cotangents: Any) -> tuple:
        cts = _cotangents_like(cotangents, out)
        pairs = [(o, c) for o, c in zip(outs, cts) if o.requires_grad]
        grads: Sequence = [None] * len(inner)
        differentiable = nested or any(c.requires_grad for c in cts)
        # cotangents batched by a vmap over vjp_fn (jacrev): the rules must run on tensors,
        # where the batching level sees them, so the engine runs as with create_graph
        batched = any(c._trace is not None for c in cts)
        if pairs:
            with enable_grad():  # (the graph is kept: vjp_fn may be called again, as torch's)
                grads = autograd_grad([o for o, _ in pairs], inner,
                                      grad_outputs=[c for _, c in pairs], retain_graph=True,
                                      create_graph=differentiable or batched, allow_unused=True)
            if batched and not differentiable:
                grads = [g.detach() if g is not None else None for g in grads]
        return tuple(g if g is not None else zeros_like(p) for g, p in zip(grads, primals))

    if not nested:
        out = _detach_tree(out)
        aux = _detach_tree(aux)
    return (out, vjp_fn) if not has_aux else (out, vjp_fn, aux)


# The primals' fresh copies that eager transforms differentiate (a finished inner transform's
# copies are its own business), and the copies of the transforms running now, innermost last.
_FRESH: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # id -> copy
_ACTIVE: list = []


def _fresh_copy(p: Tensor) -> Tensor:
    copy = p.detach().requires_grad_(True)
    _FRESH[id(copy)] = copy
    return copy


def _outer(t: Tensor, own: set) -> bool:
    """Whether leaf ``t`` is differentiated outside this transform: not one of its own
    primals, and either the user's or an enclosing transform's primal."""
    if id(t) in own:
        return False
    return _FRESH.get(id(t)) is not t or any(id(t) in level for level in _ACTIVE)


def _reaches_outer(outs: list, own: set) -> bool:
    """Whether the outputs' graph reaches a tensor requiring grad that ``func`` closed over."""
    from ..autograd.node import AccumulateGrad

    stack = []
    for o in outs:
        if o.requires_grad:
            if o.grad_fn is None:
                if _outer(o, own):
                    return True
            else:
                stack.append(o.grad_fn)
    seen = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            if _outer(node.variable, own):
                return True
            continue
        stack.extend(edge[0] for edge in node._next if edge is not None)
    return False


def _cotangents_like(cotangents: Any, out: Any) -> list:
    """The cotangents flattened, after checking that they have the outputs' structure (torch's
    error names both structures)."""
    if _treespec(cotangents) != _treespec(out):
        raise RuntimeError(
            "Expected pytree structure of cotangents to be the same as pytree structure of "
            f"outputs to the function. cotangents: {_treespec(cotangents)}, primal output: "
            f"{_treespec(out)}")
    return _flat_outputs(cotangents)


def _treespec(x: Any) -> str:
    """A nest of tuples/lists/dicts as torch prints its pytree spec: leaves are ``*``."""
    if isinstance(x, tuple):
        inner = ", ".join(_treespec(v) for v in x)
        return f"({inner},)" if len(x) == 1 else f"({inner})"
    if isinstance(x, list):
        return "[" + ", ".join(_treespec(v) for v in x) + "]"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_treespec(v)}" for k, v in x.items()) + "}"
    return "*"


def _detach_tree(out: Any) -> Any:
    if isinstance(out, Tensor):
        return out.detach()
    if isinstance(out, (tuple, list)):
        items = [_detach_tree(o) for o in out]
        return type(out)(*items) if hasattr(out, "_fields") else type(out)(items)
    if isinstance(out, dict):
        return {k: _detach_tree(v) for k, v in out.items()}
    return out


def _vjp_traced(func: Callable, primals: Sequence, has_aux: bool) -> tuple:
    from .._ir import Var
    from ..jit.sweep import active_vars, backward_sweep
    from ..ops.creation import zeros_like

    trace = state.traces[-1]
    # Fresh aliases, so that a primal also captured by func is a constant to this derivative.
    with enable_grad():
        aliases = [trace.as_tracer(p).clone() for p in primals]
        start = len(trace.eqns)
        out, aux = _split_aux(func(*aliases), has_aux)
    eqns = trace.eqns[start:]
    outs = _flat_outputs(out)
    seeds = {a._var for a in aliases}

    def vjp_fn(cotangents: Any) -> tuple:
        cts = _cotangents_like(cotangents, out)
        act = active_vars(eqns, seeds)
        seed_cts: dict = {}
        for o, c in zip(outs, cts):
            v = trace.var_of(o)
            if isinstance(v, Var) and v in act:
                if c._trace is None or not c._trace.batching:  # (vmap over vjp_fn: batched)
                    c = trace.as_tracer(c)
                seed_cts[v] = c if v not in seed_cts else seed_cts[v] + c
        ct = backward_sweep(trace, eqns, trace.value_of, seed_cts, act)
        return tuple(ct[a._var] if a._var in ct else zeros_like(p)
                     for a, p in zip(aliases, primals))

    return (out, vjp_fn) if not has_aux else (out, vjp_fn, aux)


def _argnums(argnums: int | tuple, n: int) -> tuple:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for i in nums:
        if not isinstance(i, int) or not -n <= i < n:
            raise RuntimeError(f"Got argnums={argnums}, but only {n} positional inputs")
    return tuple(i % n for i in nums)


def value_and_grad(func: Callable, argnums: int | tuple = 0, has_aux: bool = False) -> Callable:
    """A function returning ``(func(*args), grads)``; with ``has_aux``, ``((value, aux), grads)``.

    ``grads`` is one tensor for an int ``argnums``, else a tuple. ``func`` must return a
    scalar tensor.
    """
    from ..ops.creation import ones_like

    def wrapper(*args: Any, **kwargs: Any) -> tuple:
        nums = _argnums(argnums, len(args))

        def f(*ps: Tensor) -> Any:
            a = list(args)
            for i, p in zip(nums, ps):
                a[i] = p
            return func(*a, **kwargs)

        _CALLER.append(_GRAD)
        try:
            res = vjp(f, *(args[i] for i in nums), has_aux=has_aux)
        finally:
            _CALLER.pop()
        out, fn = res[0], res[1]
        if not isinstance(out, Tensor):
            raise RuntimeError(f"{_GRAD}: Expected f(*args) to return a Tensor, got {type(out)}")
        if out.ndim != 0:
            raise RuntimeError(f"{_GRAD}: Expected f(*args) to return a scalar Tensor, got "
                               f"tensor with {out.ndim} dims. Maybe you wanted to use the vjp "
                               "or jacrev APIs instead?")
        grads = fn(ones_like(out))
        g = grads[0] if isinstance(argnums, int) else grads
        return ((out, res[2]) if has_aux else out), g

    wrapper.__name__ = f"value_and_grad({getattr(func, '__name__', 'f')})"
    return wrapper


def grad(func: Callable, argnums: int | tuple = 0, has_aux: bool = False) -> Callable:
    """A function returning the gradient of scalar ``func`` w.r.t. ``args[argnums]``
    (``(grads, aux)`` with ``has_aux``)."""
    vg = value_and_grad(func, argnums, has_aux)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    wrapper.__name__ = f"grad({getattr(func, '__name__', 'f')})"
    return wrapper
