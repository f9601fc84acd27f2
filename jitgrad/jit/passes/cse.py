"""Common-subexpression elimination: one equation per distinct (op, inputs, params)."""

from __future__ import annotations

from typing import Any

from ..._ir import Eqn, Graph, Var


def _lit_key(x: Any) -> Any:
    if isinstance(x, Var):
        return ("v", x.id)
    return ("l", type(x).__name__, x)


def cse(graph: Graph) -> Graph:
    """Replaces repeated computations by the first one's outputs."""
    sub: dict[Var, Var] = {}
    seen: dict[Any, Eqn] = {}
    eqns = []
    for e in graph.eqns:
        inputs = [sub.get(x, x) if isinstance(x, Var) else x for x in e.inputs]
        try:
            if e.op.nondeterministic:  # two draws with equal params are different values
                raise TypeError
            key = (e.op, tuple(_lit_key(x) for x in inputs),
                   tuple(sorted(e.params.items())), e.nograd)
            hash(key)
        except TypeError:
            key = None
        prev = seen.get(key) if key is not None else None
        if prev is not None:
            for old, new in zip(e.outputs, prev.outputs):
                sub[old] = new
            continue
        new_e = Eqn(e.op, inputs, e.params, e.outputs, e.source, e.nograd)
        if key is not None:
            seen[key] = new_e
        eqns.append(new_e)
    outvars = [sub.get(v, v) if isinstance(v, Var) else v for v in graph.outvars]
    return graph.replace(eqns=eqns, outvars=outvars)
