"""Algebraic simplification: ``x*1``, ``x+0``, ``x-0``, ``x/1``, ``--x``, ``x**1``, identity
casts, copies and reshapes. A rewrite applies only when the result has exactly the type of the
value it is replaced by (no broadcast or promotion hidden in it) and not under ``no_grad``."""

from __future__ import annotations

from typing import Any

from ..ir import Eqn, Graph, Var


def _is(x: Any, value: float) -> bool:
    return not isinstance(x, Var) and type(x) in (int, float) and x == value


def _identity_source(e: Eqn, producer: dict) -> Any:
    name, ins, p = e.op.name, e.inputs, e.params
    if name == "mul":
        if _is(ins[1], 1):
            return ins[0]
        if _is(ins[0], 1):
            return ins[1]
    elif name == "add":
        if _is(ins[1], 0):
            return ins[0]
        if _is(ins[0], 0):
            return ins[1]
    elif name in ("sub", "div"):
        if _is(ins[1], 0 if name == "sub" else 1):
            return ins[0]
    elif name == "pow_scalar":
        if _is(p.get("exponent"), 1):
            return ins[0]
    elif name in ("clone", "to_copy", "view", "expand", "unsafe_view"):
        return ins[0]
    elif name == "neg":
        inner = producer.get(ins[0])
        if inner is not None and inner.op.name == "neg" and not inner.nograd:
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
