"""Algebraic simplification by the ops' declared facts (``OpDef.identity``, ``passthrough``,
``involution``): ``x*1``, ``x+0``, ``x-0``, ``x/1``, ``x**1``, ``--x``, identity casts, copies
and reshapes. A rewrite applies only when the result has exactly the type of the value it is
replaced by (no broadcast or promotion hidden in it) and not under ``no_grad``."""

from __future__ import annotations

from typing import Any

from ..._ir import Eqn, Graph, Var


def _is(x: Any, value: float) -> bool:
    return not isinstance(x, Var) and type(x) in (int, float) and x == value


def _identity_source(e: Eqn, producer: dict) -> Any:
    """The value ``e`` equals by its op's simplification facts (``OpDef.identity``,
    ``passthrough``, ``involution``), or None."""
    op, ins = e.op, e.inputs
    if op.passthrough:
        return ins[0]
    for where, value in op.identity.items():
        if type(where) is str:  # a param: op(x, param=value) == x
            if _is(e.params.get(where), value):
                return ins[0]
        elif _is(ins[where], value):  # an operand: op(value, y) == y, op(x, value) == x
            return ins[1 - where]
    if op.involution:
        inner = producer.get(ins[0])
        if inner is not None and inner.op is op and not inner.nograd:
            return inner.inputs[0]
    return None


def simplify(graph: Graph) -> Graph:
    """Replaces identity equations by their input (dce then removes what became dead)."""
    sub: dict[Var, Var] = {}
    producer: dict[Var, Eqn] = {}
    eqns = []
    for e in graph.eqns:
        inputs = [sub.get(x, x) if isinstance(x, Var) else x for x in e.inputs]
        e = Eqn(e.op, inputs, e.params, e.outputs, e.source, e.nograd)
        if not e.nograd and len(e.outputs) == 1:
            src = _identity_source(e, producer)
            out = e.outputs[0]
            if isinstance(src, Var) and src.shape == out.shape and src.dtype is out.dtype:
                sub[out] = src
                continue
        for v in e.outputs:
            producer[v] = e
        eqns.append(e)
    outvars = [sub.get(v, v) if isinstance(v, Var) else v for v in graph.outvars]
    return graph.replace(eqns=eqns, outvars=outvars)
