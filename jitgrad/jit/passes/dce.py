"""Dead-code elimination: drop equations (and constants) no output depends on."""

from __future__ import annotations

from ..._ir import Graph, Var


def dce(graph: Graph) -> Graph:
    """Keeps only the equations that the graph's outputs need (all ops are pure)."""
    live = {v for v in graph.outvars if isinstance(v, Var)}
    kept = []
    for e in reversed(graph.eqns):
        if any(v in live for v in e.outputs):
            kept.append(e)
            live.update(e.in_vars())
    kept.reverse()
    consts = {v: t for v, t in graph.consts.items() if v in live}
    return graph.replace(eqns=kept, consts=consts)
