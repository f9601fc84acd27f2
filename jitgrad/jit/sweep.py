"""The reverse sweep over recorded equations: which values depend differentiably on some
seeds (``active_vars``), and the cotangents propagated backwards through the equations by each
op's own VJP rule (``backward_sweep``, through ``ops.vjp_apply.run_vjp`` as the eager engine runs
them).

It sits below the jit's ``Trace``: the VJP pass (``passes.vjp``) runs it to build the joint
graph, a custom Function's backward traced inside the jit (``custom_function``) and
``jitgrad.func`` (``grad`` inside ``jit``) run it on what they recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from ..ops.registry import state
from ..ops.vjp_apply import run_vjp
from .._ir import Eqn, Var
from .._tracer import Trace, source


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
    from ..ops.creation import zeros

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
                res = run_vjp(op, grads, ans, inputs, e.params, needs)
                for x, g in zip(e.inputs, res):
                    if g is None or not isinstance(x, Var):
                        continue
                    ct[x] = g if x not in ct else ct[x] + g
    finally:
        state.grad_enabled = prev
    return ct
