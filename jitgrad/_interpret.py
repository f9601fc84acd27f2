"""A Graph run on NumPy arrays, equation by equation: the reference semantics of the IR.

Each equation calls its op's NumPy impl (``graph_impl``) with the same promotion casts as
``ops.registry._pointwise_arrays`` (worked out once per equation when the graph is compiled,
since the types are static), and each result is checked to be an array of its ``Var``'s dtype.
The interpreter backend (``backends/interpreter.py``) is this loop; a fused kernel's reference
semantics (``jit.passes.fuse``) and the straight-line Python of ``_pycode`` use it too, which is
why it sits below the autograd graph, next to the IR.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._ir import Eqn, Graph, Var
from .ops import registry
from .ops.registry import POINTWISE
from .tensor import _make


def cast_plan(e: Eqn) -> list:
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


def interpret(graph: Graph) -> Callable[[list], list]:
    """A function mapping the graph's input arrays to its output arrays, equation by equation."""
    slot: dict[Var, int] = {}
    for v in list(graph.invars) + list(graph.consts):
        slot[v] = len(slot)
    steps = []
    for e in graph.eqns:
        plan = cast_plan(e)
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
