"""Partition the joint graph into a forward that returns residuals and a backward using them.

Policy: save what the VJP rules reference. Every equation the reverse sweep emitted goes to the
backward; every value defined by the forward (a primal or a forward result) that a backward
equation reads becomes a residual: an extra, trailing output of the forward ("saved") and a
leading input of the backward.
"""

from __future__ import annotations

from ..._ir import Eqn, Graph, Var
from .dce import dce
from .vjp import Joint


def partition(j: Joint) -> tuple[Graph, Graph]:
    """The forward graph (outputs, then residuals) and the backward graph (residuals and
    tangents -> gradients)."""
    joint = j.graph
    n_fwd, n_primals, n_out = j.n_fwd_eqns, j.n_primals, j.n_outputs
    primals, tangents = joint.invars[:n_primals], joint.invars[n_primals:]
    outs, grads = joint.outvars[:n_out], joint.outvars[n_out:]
    bwd = dce(Graph(list(tangents), grads, joint.eqns[n_fwd:], joint.consts, "backward"))
    defined_in_bwd = set(tangents) | set(bwd.consts)
    for e in bwd.eqns:
        defined_in_bwd.update(e.outputs)
    used = set()
    for e in bwd.eqns:
        used.update(v for v in e.in_vars() if v not in defined_in_bwd)
    used.update(v for v in grads if isinstance(v, Var) and v not in defined_in_bwd)
    # Random draws are saved too: a recomputation (create_graph) must see the same numbers.
    used.update(v for e in joint.eqns[:n_fwd] if e.op.nondeterministic for v in e.outputs)
    order = list(primals) + [v for e in joint.eqns[:n_fwd] for v in e.outputs]
    residuals = [v for v in order if v in used]
    for v in residuals[:]:
        if v not in primals:
            v.hint = "saved"  # names it when the backward is printed on its own
    bwd = bwd.replace(invars=residuals + list(tangents))
    fwd_eqns = [_plain_cond(e) for e in joint.eqns[:n_fwd]]
    fwd = dce(Graph(list(primals), list(outs) + residuals, fwd_eqns, joint.consts,
                    "forward", n_saved=len(residuals)))
    return fwd, bwd


def _plain_cond(e: Eqn) -> Eqn:
    """A ``cond`` staged for differentiation, once its backward is split off, as a plain
    ``cond`` (its residuals ordinary outputs): ``dce`` then drops the residuals the backward
    does not save (a gradient nobody needs), and a later derivative (``create_graph``)
    differentiates its branches whole."""
    if e.op.name != "cond" or "bwd" not in e.params:
        return e
    return Eqn(e.op, e.inputs, {"branches": e.params["branches"]}, e.outputs, e.source,
               e.nograd)
