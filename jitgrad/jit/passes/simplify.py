"""Algebraic simplification by the ops' declared facts (``OpDef.identity``, ``passthrough``,
``involution``): ``x*1``, ``x+0``, ``x-0``, ``x/1``, ``x**1``, ``--x``, identity casts, copies
and reshapes. A rewrite applies only when the result has exactly the type of the value it is
replaced by (no broadcast or promotion hidden in it) and not under ``no_grad``. A ``view`` or
``reshape`` that only drops the kept dimensions of a ``sum_dim(keepdim=True)`` read by nothing
else (the gradient of a broadcast bias: sum to ``(1, n)``, then view as ``(n,)``) becomes the
``sum_dim`` with ``keepdim=False``: a fused kernel writes that shape itself, and no view runs
between kernels."""

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


def _unkept_sum(e: Eqn, producer: dict, readers: dict) -> Eqn | None:
    """``sum_dim(x, dims, keepdim=False)`` for ``e = view(sum_dim(x, dims, keepdim=True))``
    when the view only drops the kept dimensions and nothing else reads the sum, else None."""
    if e.op.name not in ("view", "reshape") or e.nograd or not isinstance(e.inputs[0], Var):
        return None
    inner = producer.get(e.inputs[0])
    if (inner is None or inner.op.name != "sum_dim" or not inner.params.get("keepdim")
            or inner.nograd or readers.get(inner.outputs[0], 0) != 1):
        return None
    kept = inner.outputs[0]
    dims = {d % len(kept.shape) for d in inner.params["dims"]} if kept.shape else set()
    unkept = tuple(n for d, n in enumerate(kept.shape) if d not in dims)
    out = e.outputs[0]
    if not dims or tuple(out.shape) != unkept or out.dtype is not kept.dtype:
        return None
    return Eqn(inner.op, inner.inputs, {**inner.params, "keepdim": False}, e.outputs, e.source,
               e.nograd)


def simplify(graph: Graph) -> Graph:
    """Replaces identity equations by their input (dce then removes what became dead)."""
    sub: dict[Var, Var] = {}
    producer: dict[Var, Eqn] = {}
    readers: dict[Var, int] = {}
    for e in graph.eqns:
        for x in e.in_vars():
            readers[x] = readers.get(x, 0) + 1
    for v in graph.outvars:
        if isinstance(v, Var):
            readers[v] = readers.get(v, 0) + 1
    eqns = []
    for e in graph.eqns:
        inputs = [sub.get(x, x) if isinstance(x, Var) else x for x in e.inputs]
        e = Eqn(e.op, inputs, e.params, e.outputs, e.source, e.nograd)
        e = _unkept_sum(e, producer, readers) or e
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
