"""Order a fused graph's equations to keep fewer bytes alive at once.

The trace order is the order the user wrote; after fusion it often computes a large value long
before it is read (a forward that computes every layer's residual first, a backward that
starts every gradient before finishing one). ``schedule`` is a greedy list scheduler: of the
equations whose inputs exist, it runs next the one that frees the most bytes net of what it
allocates (ties: the earlier in trace order). Memory is modelled by storage: a view's output
shares its input's storage, which is freed when its last reader has run (a graph output is
never freed). The new order is kept only if its simulated peak is lower than the trace
order's, so the pass never makes a program worse by its own measure. Random draws keep their
relative order (a reordering would change which numbers each draw gets).
"""

from __future__ import annotations

import numpy as np

from ..._ir import Eqn, Graph, Var

MAX_EQNS = 2000  # above this many equations the trace order is kept (the scheduler is O(n^2))


def _nbytes(v: Var) -> int:
    return int(np.prod(v.shape, dtype=np.int64)) * v.dtype.itemsize


class _Memory:
    """The storage model of one graph: which storage each value lives in, and its bytes."""

    def __init__(self, graph: Graph) -> None:
        self.storage: dict[Var, int] = {}
        self.size: list[int] = []
        self.members: list[list[Var]] = []
        pinned = set(graph.invars) | set(graph.consts)
        pinned.update(v for v in graph.outvars if isinstance(v, Var))
        for e in graph.eqns:
            for v in e.outputs:
                src = e.in_vars()[0] if e.op.view and e.in_vars() else None
                if src is not None and src in self.storage:
                    s = self.storage[src]
                else:
                    s = len(self.size)
                    self.size.append(0 if src is not None else _nbytes(v))
                    self.members.append([])
                self.storage[v] = s
                self.members[s].append(v)
        self.pinned_storage = {self.storage[v] for v in pinned if v in self.storage}

    def allocates(self, e: Eqn) -> int:
        return sum(self.size[self.storage[v]] for v in e.outputs
                   if self.members[self.storage[v]][0] is v)

    def frees(self, e: Eqn, readers: dict[Var, int], dead: set[Var]) -> list[int]:
        """The storages that running ``e`` next would free."""
        gone = {v for v in set(e.in_vars()) if v in self.storage
                and readers[v] == e.in_vars().count(v)}
        gone.update(v for v in e.outputs if readers.get(v, 0) == 0)
        freed = []
        for s in {self.storage[v] for v in gone}:
            if s in self.pinned_storage:
                continue
            if all(m in dead or m in gone for m in self.members[s]):
                freed.append(s)
        return freed


def _readers(graph: Graph) -> dict[Var, int]:
    readers: dict[Var, int] = {}
    for e in graph.eqns:
        for v in e.in_vars():
            readers[v] = readers.get(v, 0) + 1
    return readers


def peak_bytes(graph: Graph, order: list[Eqn] | None = None) -> int:
    """The most bytes the values computed by ``graph``'s equations hold at once, run in
    ``order`` (default: the graph's)."""
    mem = _Memory(graph)
    readers = _readers(graph)
    dead: set[Var] = set()
    live = peak = 0
    for e in graph.eqns if order is None else order:
        live += mem.allocates(e)
        peak = max(peak, live)
        for s in mem.frees(e, readers, dead):
            live -= mem.size[s]
        for v in e.in_vars():
            readers[v] -= 1
            if readers[v] == 0:
                dead.add(v)
        dead.update(v for v in e.outputs if readers.get(v, 0) == 0)
    return peak


def _greedy_order(graph: Graph) -> list[Eqn]:
    mem = _Memory(graph)
    readers = _readers(graph)
    producer = {v: k for k, e in enumerate(graph.eqns) for v in e.outputs}
    waiting = [len({producer[v] for v in e.in_vars() if v in producer}) for e in graph.eqns]
    consumers: list[list[int]] = [[] for _ in graph.eqns]
    for k, e in enumerate(graph.eqns):
        for p in {producer[v] for v in e.in_vars() if v in producer}:
            consumers[p].append(k)
    draws = [k for k, e in enumerate(graph.eqns) if e.op.nondeterministic or not e.outputs]
    draw_set, next_draw = set(draws), 0
    ready = {k for k, n in enumerate(waiting) if n == 0}
    dead: set[Var] = set()
    order: list[Eqn] = []
    while ready:
        def score(k: int) -> tuple:
            e = graph.eqns[k]
            freed = sum(mem.size[s] for s in mem.frees(e, readers, dead))
            return (mem.allocates(e) - freed, k)

        allowed = [k for k in ready
                   if k not in draw_set or (next_draw < len(draws) and k == draws[next_draw])]
        k = min(allowed, key=score)
        ready.discard(k)
        if next_draw < len(draws) and k == draws[next_draw]:
            next_draw += 1
        e = graph.eqns[k]
        order.append(e)
        for v in e.in_vars():
            readers[v] -= 1
            if readers[v] == 0:
                dead.add(v)
        dead.update(v for v in e.outputs if readers.get(v, 0) == 0)
        for c in consumers[k]:
            waiting[c] -= 1
            if waiting[c] == 0:
                ready.add(c)
    return order


def schedule(graph: Graph) -> Graph:
    """``graph`` with its equations reordered to lower its peak memory (or unchanged)."""
    if len(graph.eqns) < 3 or len(graph.eqns) > MAX_EQNS:
        return graph
    order = _greedy_order(graph)
    if order == graph.eqns or peak_bytes(graph, order) >= peak_bytes(graph):
        return graph
    return graph.replace(eqns=order)
