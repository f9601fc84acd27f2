"""The VJP pass: differentiate a forward graph by applying each OpDef's own VJP rule.

The forward equations are replayed into a fresh trace; then a reverse sweep applies each op's
rule (through ``registry.run_vjp``, which also undoes broadcasting and casts, exactly as the
eager engine does) to tracer values, so the rules' ops are recorded as the backward equations.
Cotangents reaching the same value are summed. The result is the *joint* graph:
``(primals, tangents) -> (outputs, grads)``, which ``partition`` splits in two.

``backward_sweep`` is shared with ``jitgrad.func`` (``grad`` inside ``jit``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from ...ops import registry
from ...ops.registry import state
from ...tensor import Tensor
from ..._ir import Eqn, Graph, Var
from ..._tracer import active, replay, source
from ..trace import Trace


@dataclass(frozen=True)
class Joint:
    """The joint graph ``(primals, tangents) -> (outputs, grads)`` and where its parts end."""

    graph: Graph
    n_fwd_eqns: int  # the forward's equations come first
    n_primals: int
    n_outputs: int
    tangent_slots: list[int]  # the outputs that take a tangent, in the order of the tangents


def is_float(v: Var) -> bool:
    return v.dtype.is_floating_point or v.dtype.is_complex


def active_vars(eqns: list[Eqn], seeds: set) -> set:
    """The float values that depend differentiably on ``seeds`` (forward activity analysis)."""
    act = set(seeds)
    for e in eqns:
        if e.nograd or not e.op.differentiable:
            continue
        if any(x in act for x in e.in_vars()):
            act.update(v for v in e.outputs if is_float(v))
    return act


def backward_sweep(trace: Trace | None, eqns: list[Eqn], value_of: Callable[[Var], Any],
                   cts: dict, act: set) -> dict:
    """Propagates the cotangents ``cts`` (Var -> value) backwards through ``eqns``.

    ``value_of`` gives the forward value of a Var (a tracer when recording, an eager tensor
    otherwise). Returns the cotangent of every Var reached.
    """
    from ...ops.creation import zeros

    ct = dict(cts)
    prev = state.grad_enabled
    state.grad_enabled = True
    try:
        for e in reversed(eqns):
            if e.nograd or not e.op.differentiable:
                continue
            gs = [ct.get(v) for v in e.outputs]
            if all(g is None for g in gs):
                continue
            needs = tuple(isinstance(x, Var) and x in act for x in e.inputs)
            if not any(needs):
                continue
            op = e.op
            grads = tuple(g if g is not None else zeros(v.shape, dtype=v.dtype)
                          for g, v in zip(gs, e.outputs))
            inputs = tuple((value_of(x) if i in op.save else x.meta) if isinstance(x, Var) else x
                           for i, x in enumerate(e.inputs))
            ans = None
            if op.save_output:
                outs = [value_of(v) for v in e.outputs]
                ans = outs[0] if op.n_outputs == 1 else tuple(outs)
            # (the cotangent sums too: they carry the user's line of the op, not the caller's)
            with source(trace, e.source) if trace is not None else nullcontext():
                res = registry.run_vjp(op, grads, ans, inputs, e.params, needs)
                for x, g in zip(e.inputs, res):
                    if g is None or not isinstance(x, Var):
                        continue
                    ct[x] = g if x not in ct else ct[x] + g
    finally:
        state.grad_enabled = prev
    return ct


def vjp(graph: Graph, wrt: list[bool]) -> Joint:
    """The joint graph of ``graph`` w.r.t. the inputs flagged in ``wrt``.

    Its inputs are the primals then one tangent per differentiable output; its outputs are the
    forward outputs then one gradient per input (None where ``wrt`` is False or no gradient
    flows).
    """
    T = Trace()
    with active(T):
        ins = [T.new_input(v.shape, v.dtype, hint=v.hint) for v in graph.invars]
        outs = replay(T, graph, ins)
        n_fwd = len(T.eqns)
        primals = list(T.invars)
        act = active_vars(T.eqns, {v for v, w in zip(primals, wrt) if w})
        out_vars = [T.var_of(o) if isinstance(o, Tensor) else o for o in outs]
        cts: dict = {}
        slots = []
        for i, v in enumerate(out_vars):
            if isinstance(v, Var) and v in act:
                t = T.new_input(v.shape, v.dtype, hint="tangents")
                slots.append(i)
                cts[v] = t if v not in cts else cts[v] + t
        ct = backward_sweep(T, T.eqns[:n_fwd], T.value_of, cts, act)
        grads = [T.var_of(ct[v]) if w and v in ct else None for v, w in zip(primals, wrt)]
    consts = {v: t for v, t in T.captured.values()}
    joint = Graph(T.invars, out_vars + grads, T.eqns, consts, "joint")
    return Joint(joint, n_fwd, len(primals), len(out_vars), slots)
