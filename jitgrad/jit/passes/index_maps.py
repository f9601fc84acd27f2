"""Move index-map ops (transpose, permute, (un)squeeze, select, slice) up through pointwise ops.

An op whose ``OpDef.index_map`` is set picks each output element from one element of its input
by position alone, so it applies unchanged to any array of its input's shape and commutes with
pointwise ops: ``(a * b + 1).t() == a.t() * b.t() + 1``. Left where it is, it splits a fused
chain in two (the kernel before it writes its result to memory, the kernel after reads it back
through a strided view). Moved up to the chain's inputs, it becomes a zero-copy NumPy view that
the one kernel of the chain reads through its strides: index arithmetic in the loop, no copy
and no second kernel. XLA calls the same rewrite transpose folding.

Only an index map that a kernel reads is moved: a transpose read by ``mm`` (or returned) stays
a view of its producer's result, computed in its natural layout (BLAS reads transposed operands
at no cost, while a kernel iterating in the transposed order reads its inputs strided).
A pointwise producer is moved through when ``pushable`` says so (the backend's fusible,
cheap-to-recompute test) or when the index-map op is its only reader (then nothing is computed
twice). An operand smaller than the result (broadcast) is expanded first: ``expand`` then the
op is a zero-copy view of it (``fuse`` keeps an expand that only views read out of kernels);
0-d operands and literals broadcast to any shape and pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

from ...ops.movement import EXPAND
from ...ops.registry import POINTWISE
from ..._ir import Eqn, Graph, Var
from .dce import dce

MAX_MOVED = 64  # pointwise equations one index-map op is moved through, at most


def push_index_maps(graph: Graph, cheap: Callable[[Eqn], bool],
                    fusible: Callable[[Eqn], bool]) -> Graph:
    """Returns ``graph`` with index-map ops moved up through fusible pointwise producers."""
    readers: dict[Var, int] = {}
    feeds_kernel: set[Var] = set()  # values a fusible equation reads
    for e in graph.eqns:
        fused = fusible(e)
        for v in e.in_vars():
            readers[v] = readers.get(v, 0) + 1
            if fused:
                feeds_kernel.add(v)
    for v in graph.outvars:
        if isinstance(v, Var):
            readers[v] = readers.get(v, 0) + 1
    producer: dict[Var, Eqn] = {}
    out: list[Eqn] = []
    changed = False

    def movable(p: Eqn | None) -> bool:
        if p is None or p.op.kind != POINTWISE or len(p.outputs) != 1 or not fusible(p):
            return False
        return readers.get(p.outputs[0], 0) == 1 or cheap(p)

    def moved(e: Eqn, x: Var, result: Var, budget: list[int], memo: dict) -> Var:
        # ``e``'s op applied to ``x`` (which has e's input shape), as a new value; moved up
        # through x's producer when allowed
        if x in memo:
            return memo[x]
        memo[x] = result
        p = producer.get(x)
        if p is not None and p.op.broadcast and readers.get(x, 0) > 1:
            # an expand that kernels read too: this reader gets an expand of its own, a view
            wide = Var(x.shape, x.dtype, "t")
            out.append(Eqn(p.op, p.inputs, p.params, [wide], p.source, p.nograd))
            x = wide
        if not movable(p) or budget[0] <= 0:
            new = Eqn(e.op, [x], e.params, [result], e.source, e.nograd)
            out.append(new)
            producer[result] = new
            return result
        budget[0] -= 1
        inputs = []
        for u in p.inputs:
            if isinstance(u, Var) and u.shape != ():
                if u.shape != x.shape:  # broadcast: a zero-copy expand view, then the op
                    wide = Var(x.shape, u.dtype, "t")
                    out.append(Eqn(EXPAND, [u], {"shape": tuple(x.shape)}, [wide], p.source))
                    u = wide
                u = moved(e, u, Var(result.shape, u.dtype, "t"), budget, memo)
            inputs.append(u)
        new = Eqn(p.op, inputs, p.params, [result], p.source, p.nograd)
        out.append(new)
        producer[result] = new
        return result

    for e in graph.eqns:
        # only an index map that a kernel reads is moved: one read only by opaque ops (mm)
        # or returned stays a view of its producer's natural layout (BLAS reads it strided)
        p = producer.get(e.inputs[0]) if e.op.index_map and e.outputs[0] in feeds_kernel \
            else None
        if p is not None and (movable(p) or p.op.broadcast and readers.get(e.inputs[0], 0) > 1):
            changed = True
            moved(e, e.inputs[0], e.outputs[0], [MAX_MOVED], {})
            continue
        out.append(e)
        for v in e.outputs:
            producer[v] = e
    if not changed:
        return graph
    return dce(graph.replace(eqns=out))
