"""Dead-code elimination: drop equations (and constants) no output depends on.

A ``cond`` equation some of whose outputs are unused keeps only the used ones: each branch
sub-graph drops those outputs and whatever computed only them (the VJP of a ``cond`` computes
a gradient for every floating operand; the ones no input needs go here), and operands that no
branch reads any more are dropped (so the backward saves fewer values). A ``cond`` staged for
differentiation (its ``bwd`` branches share its operands' layout, and its residuals are unread
until the VJP pass) is kept whole.
"""

from __future__ import annotations

from ..._ir import Eqn, Graph, Var


def dce(graph: Graph) -> Graph:
    """Keeps only the equations that the graph's outputs need (all ops are pure)."""
    live = {v for v in graph.outvars if isinstance(v, Var)}
    kept = []
    for e in reversed(graph.eqns):
        if any(v in live for v in e.outputs):
            if e.op.name == "cond" and "bwd" not in e.params:
                e = _prune_cond(e, live)
            kept.append(e)
            live.update(e.in_vars())
    kept.reverse()
    consts = {v: t for v, t in graph.consts.items() if v in live}
    return graph.replace(eqns=kept, consts=consts)


def _prune_cond(e: Eqn, live: set) -> Eqn:
    """``e`` (a ``cond``) with only its ``live`` outputs, its branches pruned to match, and
    only the operands some branch still reads (``e`` itself when nothing goes)."""
    keep = [i for i, v in enumerate(e.outputs) if v in live]
    branches = e.params["branches"]
    if len(keep) < len(e.outputs):
        branches = tuple(dce(g.replace(outvars=[g.outvars[i] for i in keep]))
                         for g in branches)
    read = [set(g.outvars).union(*(q.in_vars() for q in g.eqns)) for g in branches]
    used = [k for k in range(len(branches[0].invars))
            if any(g.invars[k] in r for g, r in zip(branches, read))]
    if len(keep) == len(e.outputs) and len(used) == len(branches[0].invars):
        return e
    branches = tuple(g.replace(invars=[g.invars[k] for k in used]) for g in branches)
    return Eqn(e.op, [e.inputs[0]] + [e.inputs[1 + k] for k in used],
               {**e.params, "branches": branches}, [e.outputs[i] for i in keep], e.source,
               e.nograd)
