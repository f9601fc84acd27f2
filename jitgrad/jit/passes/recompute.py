"""Recompute cheap pointwise values in the backward instead of saving them.

After ``partition`` the forward saves every value a VJP rule reads. With a fusing backend a
pointwise value is nearly free to recompute inside the backward's loops, while saving it costs
a write in the forward and a read in the backward. The policy is greedy, by bytes (in the
spirit of AOTAutograd's min-cut partitioner): a saved value produced by a cheap equation is
replaced by the values it can be recomputed from (walking back through cheap equations to
values already saved, inputs, or results of other ops) whenever that does not increase the
bytes saved. For W1 the forward then saves only ``x`` and ``y``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ir import Eqn, Graph, Var
from .dce import dce

MAX_CHAIN = 64  # equations recomputed for one saved value, at most


def _nbytes(v: Var) -> int:
    return int(np.prod(v.shape, dtype=np.int64)) * v.dtype.itemsize


def recompute(fwd: Graph, cheap: Callable[[Eqn], bool]) -> Graph:
    """Returns the forward with fewer saved values; ``extra["backward"]`` recomputes the rest."""
    bwd: Graph = fwd.extra["backward"]
    n_user = len(fwd.outvars) - fwd.n_saved
    residuals = list(fwd.outvars[n_user:])
    producer = {v: e for e in fwd.eqns for v in e.outputs}

    def frontier(v: Var, saved: set) -> set | None:
        found, seen, stack, n = set(), {v}, [v], 0
        while stack:
            u = stack.pop()
            e = producer.get(u)
            if u is not v and (u in saved or e is None or not cheap(e)):
                found.add(u)
                continue
            n += 1
            if n > MAX_CHAIN:
                return None
            for w in e.in_vars():
                if w not in seen:
                    seen.add(w)
                    stack.append(w)
        return found

    saved = set(residuals)
    changed = True
    while changed:
        changed = False
        for v in reversed([r for r in residuals if r in saved]):
            e = producer.get(v)
            if e is None or not cheap(e):
                continue
            front = frontier(v, saved - {v})
            if front is None:
                continue
            if sum(_nbytes(u) for u in front - saved) - _nbytes(v) <= 0:
                saved.discard(v)
                saved |= front
                changed = True
    if saved == set(residuals):
        return fwd
    # the backward recomputes, in forward order, every cheap equation between what is saved
    # and what it reads
    needed: set[Var] = {v for v in residuals if v not in saved}
    stack = list(needed)
    while stack:
        u = stack.pop()
        for w in producer[u].in_vars():
            if w not in saved and w not in needed:
                needed.add(w)
                stack.append(w)
    replay = [e for e in fwd.eqns if any(v in needed for v in e.outputs)]
    order = list(fwd.invars) + [v for e in fwd.eqns for v in e.outputs]
    new_saved = [v for v in order if v in saved]
    for v in new_saved:
        if v not in fwd.invars:
            v.hint = "saved"
    n_res = len(residuals)
    tangents = bwd.invars[n_res:]
    bwd = dce(bwd.replace(invars=new_saved + list(tangents), eqns=replay + list(bwd.eqns)))
    out = dce(fwd.replace(outvars=list(fwd.outvars[:n_user]) + new_saved, n_saved=len(new_saved)))
    return out.replace(extra={**fwd.extra, "backward": bwd})
