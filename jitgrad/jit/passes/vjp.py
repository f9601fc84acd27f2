"""The VJP pass: differentiate a forward graph by applying each OpDef's own VJP rule.

The forward equations are replayed into a fresh trace; then a reverse sweep applies each op's
rule (through ``ops.vjp_apply.run_vjp``, which also undoes broadcasting and casts, exactly as the
eager engine does) to tracer values, so the rules' ops are recorded as the backward equations.
Cotangents reaching the same value are summed. The result is the *joint* graph:
``(primals, tangents) -> (outputs, grads)``, which ``partition`` splits in two.

The reverse sweep itself (``active_vars``, ``backward_sweep``) is ``jit.sweep``, below the
jit's ``Trace``: custom Functions traced by the jit (``custom_function``) and ``jitgrad.func``
(``grad`` inside ``jit``) run it too.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...tensor import Tensor
from ..._ir import Graph, Var
from ..._tracer import active, replay
from ..sweep import active_vars, backward_sweep
from ..staging import Trace


@dataclass(frozen=True)
class Joint:
    """The joint graph ``(primals, tangents) -> (outputs, grads)`` and where its parts end."""

    graph: Graph
    n_fwd_eqns: int  # the forward's equations come first
    n_primals: int
    n_outputs: int
    tangent_slots: list[int]  # the outputs that take a tangent, in the order of the tangents


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
