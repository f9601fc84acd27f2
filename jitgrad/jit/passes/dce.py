"""Dead-code elimination: drop equations (and constants) no output depends on.

A ``cond`` equation some of whose outputs are unused keeps only the used ones: each branch
sub-graph drops those outputs and whatever computed only them (the VJP of a ``cond`` computes
a gradient for every floating operand; the ones no input needs go here). A ``cond`` that
returns residuals for its backward (``n_res``) is kept whole: before the VJP pass nothing reads
them yet.
"""

from __future__ import annotations

from ..._ir import Eqn, Graph, Var


def dce(graph: Graph) -> Graph:
    """Keeps only the equations that the graph's outputs need (all ops are pure)."""
    live = {v for v in graph.outvars if isinstance(v, Var)}
    kept = []
    for e in reversed(graph.eqns):
        if any(v in live for v in e.outputs):
            if e.op.name == "cond" and not e.params.get("n_res") and \
                    not all(v in live for v in e.outputs):
                e = _prune_cond(e, live)
            kept.append(e)
            live.update(e.in_vars())
    kept.reverse()
    consts = {v: t for v, t in graph.consts.items() if v in live}
    return graph.replace(eqns=kept, consts=consts)


def _prune_cond(e: Eqn, live: set) -> Eqn:
    """``e`` (a ``cond``) with only its ``live`` outputs, its branches pruned to match."""
    keep = [i for i, v in enumerate(e.outputs) if v in live]
    branches = tuple(dce(g.replace(outvars=[g.outvars[i] for i in keep]))
                     for g in e.params["branches"])
    return Eqn(e.op, e.inputs, {**e.params, "branches": branches},
               [e.outputs[i] for i in keep], e.source, e.nograd)
