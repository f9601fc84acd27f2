"""The reference backend: runs a Graph equation by equation with each ``OpDef.impl``.

This is the NumPy code eager mode runs, with the same promotion casts as
``ops.registry._pointwise_arrays`` (worked out once per equation at compile time, since the
types are static). ``run_eager`` instead dispatches every equation through
``ops.registry.apply`` on tensors, recording autograd: the path used for ``create_graph=True``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..jit.ir import KERNEL, Graph, Var
from ..ops import registry
from ..tensor import _make
from ..ops.registry import POINTWISE

def _cast_plan(e) -> list:
    """Per input: ("v", var, cast dtype or None) or ("l", literal as the impl receives it).

    For pointwise ops this asks ``registry._pointwise_arrays`` itself (on tiny stand-in
    tensors of the right dtype and rank), so the casts are exactly the eager ones.
    """
    op = e.op
    if op.kind != POINTWISE:
        return [("v", x, None) if isinstance(x, Var) else ("l", x) for x in e.inputs]
    stand_ins = []
    for x in e.inputs:
        if isinstance(x, Var):
            stand_ins.append(_make(np.zeros((1,) * len(x.shape), dtype=x.dtype.np), x.dtype))
        else:
            stand_ins.append(x)
    arrays = registry._pointwise_arrays(op, tuple(stand_ins), e.params)[0]
    plan = []
    for x, a in zip(e.inputs, arrays):
        if isinstance(x, Var):
            plan.append(("v", x, None if a.dtype == x.dtype.np else a.dtype))
        else:
            plan.append(("l", a))
    return plan


def compile(graph: Graph) -> Callable[[list], list]:  # noqa: A001 - the backend interface
    """A function mapping the graph's input arrays to its output arrays."""
    slot: dict[Var, int] = {}
    for v in list(graph.invars) + list(graph.consts):
        slot[v] = len(slot)
    steps = []
    for e in graph.eqns:
        plan = _cast_plan(e)
        plan = [(0, slot[p[1]], p[2]) if p[0] == "v" else (1, p[1], None) for p in plan]
        outs = []
        for v in e.outputs:
            slot[v] = len(slot)
            outs.append((slot[v], v.dtype.np))
        steps.append((e.op.graph_impl, plan, e.params, outs, e.op.n_outputs == 1))
    n_in = len(graph.invars)
    consts = list(graph.consts.values())
    out_slots = [slot[v] if isinstance(v, Var) else None for v in graph.outvars]
    n_slots = len(slot)
    steps = [step + (frees,) for step, frees in zip(steps, _dead_after(steps, out_slots))]

    def run(inputs: list) -> list:
        env: list = [None] * n_slots
        env[:n_in] = inputs
        for k, t in enumerate(consts):
            env[n_in + k] = t._data
        for impl, plan, params, outs, single, frees in steps:
            args = []
            for kind, x, cast in plan:
                if kind:
                    args.append(x)
                else:
                    a = env[x]
                    args.append(a if cast is None or a.dtype == cast else a.astype(cast))
            res = impl(*args, **params)
            if single:
                res = (res,)
            for (s, dt), r in zip(outs, res):
                if type(r) is not np.ndarray or r.dtype != dt:
                    r = np.asarray(r, dtype=dt)
                env[s] = r
            for s in frees:  # drop intermediates after their last use, as eager mode does
                env[s] = None
        return [env[s] if s is not None else None for s in out_slots]

    return run


def _dead_after(steps: list, out_slots: list) -> list[tuple]:
    """For each step, the slots no later step reads and the program does not return."""
    last: dict[int, int] = {}
    for i, (_, plan, _, outs, _) in enumerate(steps):
        for kind, x, _ in plan:
            if not kind:
                last[x] = i
        for s, _ in outs:
            last.setdefault(s, i)
    keep = {s for s in out_slots if s is not None}
    frees: list[list] = [[] for _ in steps]
    for s, i in last.items():
        if s not in keep:
            frees[i].append(s)
    return [tuple(f) for f in frees]


def render(graph: Graph) -> str:
    """The interpreter's 'kernel' is the program itself: its printed IR."""
    return graph.format()


def run_eager(graph: Graph, inputs: list, known: dict | None = None) -> list:
    """Runs ``graph`` on tensors through ``registry.apply`` (recording autograd as eager does).

    ``known`` maps Vars to values to use instead of recomputing them (saved random draws).
    """
    state = registry.state  # (grad mode is dispatch state: no import of autograd's API)
    env: dict[Var, object] = dict(zip(graph.invars, inputs))
    env.update(graph.consts)
    known = known or {}
    for e in graph.eqns:
        if e.outputs and all(v in known for v in e.outputs):
            env.update((v, known[v]) for v in e.outputs)
            continue
        args = [env[x] if isinstance(x, Var) else x for x in e.inputs]
        op = e.op
        if op.kind == KERNEL:  # a fused kernel: its body's equations, one by one
            env.update(zip(e.outputs, run_eager(e.params["body"], args)))
            continue
        if op.contiguous_fallback is not None and not args[0].is_contiguous():
            op = op.contiguous_fallback
            args[0] = args[0].clone()
        if e.nograd:
            prev, state.grad_enabled = state.grad_enabled, False
            try:
                out = registry.apply(op, *args, **e.params)
            finally:
                state.grad_enabled = prev
        else:
            out = registry.apply(op, *args, **e.params)
        for v, o in zip(e.outputs, (out,) if e.op.n_outputs == 1 else out):
            env[v] = o
    return [env[v] if isinstance(v, Var) else None for v in graph.outvars]
