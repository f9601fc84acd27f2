"""Recompute cheap pointwise values in the backward instead of saving them.

After ``partition`` the forward saves every value a VJP rule reads. With a fusing backend a
pointwise value is nearly free to recompute inside the backward's loops, while saving it costs
a write in the forward and a read in the backward. Two policies choose what to save, both by
bytes:

* ``"mincut"`` (the default), AOTAutograd's partitioner: a flow network in which every forward
  value costs its bytes to save, values the backward needs drain to the sink, and values that
  only the forward can produce (inputs, results of non-cheap equations) come from the source.
  A minimum cut is the cheapest set of saved values from which the backward can recompute
  everything else through cheap equations.
* ``"greedy"``: a saved value produced by a cheap equation is replaced by the values it can be
  recomputed from (walking back through cheap equations) whenever that does not increase the
  bytes saved.

For W1 both save only ``x`` and ``y``. ``benchmarks/recompute_policies.py`` compares them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import numpy as np

from ..._ir import Eqn, Graph, Var
from .dce import dce

MAX_CHAIN = 64  # equations the greedy policy recomputes for one saved value, at most
POLICIES = ("mincut", "greedy")
POLICY = "mincut"  # the policy ``recompute`` uses when none is given


def _nbytes(v: Var) -> int:
    return int(np.prod(v.shape, dtype=np.int64)) * v.dtype.itemsize


def recompute(fwd: Graph, bwd: Graph, cheap: Callable[[Eqn], bool],
              policy: str | None = None) -> tuple[Graph, Graph]:
    """The forward saving fewer values and the backward that recomputes the rest."""
    policy = POLICY if policy is None else policy
    if policy not in POLICIES:
        raise ValueError(f"recompute policy must be one of {POLICIES}, got {policy!r}")
    n_user = len(fwd.outvars) - fwd.n_saved
    residuals = list(fwd.outvars[n_user:])
    producer = {v: e for e in fwd.eqns for v in e.outputs}
    choose = _mincut_saved if policy == "mincut" else _greedy_saved
    saved = choose(fwd, residuals, producer, cheap)
    if saved == set(residuals):
        return fwd, bwd
    return _replay_in_backward(fwd, bwd, residuals, producer, saved)


def _greedy_saved(fwd: Graph, residuals: list[Var], producer: dict, cheap: Callable) -> set:
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
    return saved


def _mincut_saved(fwd: Graph, residuals: list[Var], producer: dict, cheap: Callable) -> set:
    # Node 2k is value k "computed", 2k+1 is value k "available to the backward"; the edge
    # between them costs the value's bytes (saving it). Recomputing a cheap equation's output
    # needs its inputs available: an infinite edge from each input's second node to the
    # output's first node.
    values = list(fwd.invars) + [v for e in fwd.eqns for v in e.outputs]
    index = {v: k for k, v in enumerate(values)}
    source, sink = 2 * len(values), 2 * len(values) + 1
    net = _FlowNetwork(2 * len(values) + 2)
    # bytes first; among cuts of equal bytes, the one saving later values (less to recompute)
    n = len(values)
    scale = n * (n + 1)
    for v, k in index.items():
        net.add_edge(2 * k, 2 * k + 1, _nbytes(v) * scale + (n - k))
        e = producer.get(v)
        if e is None or not cheap(e):
            net.add_edge(source, 2 * k, _FlowNetwork.INF)
        else:
            for w in e.in_vars():
                if w in index:
                    net.add_edge(2 * index[w] + 1, 2 * k, _FlowNetwork.INF)
    for v in residuals:
        net.add_edge(2 * index[v] + 1, sink, _FlowNetwork.INF)
    reachable = net.min_cut_source_side(source, sink)
    return {v for v, k in index.items() if 2 * k in reachable and 2 * k + 1 not in reachable}


class _FlowNetwork:
    """Dinic's max-flow on integer capacities; enough for graphs of a few thousand values."""

    INF = 1 << 256  # above any cut: capacities are Python ints

    def __init__(self, n: int) -> None:
        self.head: list[list[int]] = [[] for _ in range(n)]
        self.to: list[int] = []
        self.cap: list[int] = []

    def add_edge(self, u: int, v: int, cap: int) -> None:
        self.head[u].append(len(self.to))
        self.to.append(v)
        self.cap.append(cap)
        self.head[v].append(len(self.to))
        self.to.append(u)
        self.cap.append(0)

    def _levels(self, s: int) -> list[int]:
        level = [-1] * len(self.head)
        level[s] = 0
        queue = deque([s])
        while queue:
            u = queue.popleft()
            for e in self.head[u]:
                if self.cap[e] > 0 and level[self.to[e]] < 0:
                    level[self.to[e]] = level[u] + 1
                    queue.append(self.to[e])
        return level

    def _augment(self, s: int, t: int, level: list[int], cursor: list[int]) -> int:
        # iterative DFS along the level graph; returns the flow pushed on one path
        path: list[int] = []
        u = s
        while True:
            if u == t:
                pushed = min(self.cap[e] for e in path)
                for e in path:
                    self.cap[e] -= pushed
                    self.cap[e ^ 1] += pushed
                return pushed
            edges = self.head[u]
            while cursor[u] < len(edges):
                e = edges[cursor[u]]
                if self.cap[e] > 0 and level[self.to[e]] == level[u] + 1:
                    break
                cursor[u] += 1
            else:
                if not path:
                    return 0
                level[u] = -1  # dead end: prune it
                e = path.pop()
                u = self.to[e ^ 1]
                cursor[u] += 1
                continue
            path.append(edges[cursor[u]])
            u = self.to[edges[cursor[u]]]

    def min_cut_source_side(self, s: int, t: int) -> set[int]:
        """Runs max-flow from ``s`` to ``t``; returns the nodes still reachable from ``s``."""
        while True:
            level = self._levels(s)
            if level[t] < 0:
                break
            cursor = [0] * len(self.head)
            while self._augment(s, t, level, cursor):
                pass
        return {u for u, d in enumerate(self._levels(s)) if d >= 0}


def _replay_in_backward(fwd: Graph, bwd: Graph, residuals: list[Var], producer: dict,
                        saved: set) -> tuple[Graph, Graph]:
    # the backward recomputes, in forward order, every cheap equation between what is saved
    # and what it reads
    n_user = len(fwd.outvars) - fwd.n_saved
    needed: set[Var] = {v for v in residuals if v not in saved}
    stack = list(needed)
    while stack:
        u = stack.pop()
        for w in producer[u].in_vars():
            if w not in saved and w not in needed and w not in fwd.consts:
                needed.add(w)
                stack.append(w)
    replay = [e for e in fwd.eqns if any(v in needed for v in e.outputs)]
    # a replayed equation may read a constant of the forward: the backward reads it too
    consts = {**bwd.consts, **{w: fwd.consts[w] for e in replay for w in e.in_vars()
                               if w in fwd.consts}}
    order = list(fwd.invars) + [v for e in fwd.eqns for v in e.outputs]
    new_saved = [v for v in order if v in saved]
    for v in new_saved:
        if v not in fwd.invars:
            v.hint = "saved"
    tangents = bwd.invars[len(residuals):]
    bwd = dce(bwd.replace(invars=new_saved + list(tangents), eqns=replay + list(bwd.eqns),
                          consts=consts))
    out = dce(fwd.replace(outvars=list(fwd.outvars[:n_user]) + new_saved, n_saved=len(new_saved)))
    return out, bwd
