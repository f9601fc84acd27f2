"""Fusion: group pointwise chains and their reductions into ``kernel`` equations.

A kernel is one loop nest over an *iteration domain* (a shape). Its members are

* pointwise equations whose result has the domain's shape (their operands may be smaller and
  broadcast, or literals), and
* reductions (``op.kind == REDUCE`` with a template) whose operand has the domain's shape.

A reduction's result is a kernel output that no member of the same kernel reads (it is only
complete after the loop). Movement ops (views, expand, transpose, ...) and opaque ops (matmul,
indexing, ...) are kernel boundaries: the program runs them between kernels, views without a
copy. An equation joins the most recent compatible group of one of its producers (vertical
fusion), else the most recent group of its domain (horizontal fusion, which shares the loop and
its loads), as long as no other equation lies on a path between the group and it (which would
make a cycle). The fused graph is scheduled in a topological order of its units.

Which equations a backend can fuse is the backend's call (``fusible``): a dtype it cannot
compile (float16, complex) keeps its equations as single ops, run like the interpreter runs them.
"""

from __future__ import annotations

import heapq
import zlib
from collections.abc import Callable

import numpy as np

from ... import _config
from ..._interpret import interpret
from ...ops import registry
from ...ops.registry import REDUCE, defop
from ..._ir import KERNEL, Eqn, Graph, Var
from .dce import dce



def _kernel_meta(*args, body: Graph, name: str):
    return (tuple(v.shape for v in body.outvars), tuple(v.dtype for v in body.outvars))


def _kernel_impl(*arrays, body: Graph, name: str):
    # The reference semantics of a kernel: its body, run by the interpreter.
    return tuple(interpret(body)(list(arrays)))


KERNEL_OP = registry.OPS.get(KERNEL) or defop(
    KERNEL, _kernel_impl, kind=KERNEL, meta=_kernel_meta, n_outputs=0, differentiable=False)


def is_reduction(e: Eqn) -> bool:
    return e.op.kind == REDUCE and isinstance(e.op.template, registry.ReduceTemplate)


def domain_of(e: Eqn) -> tuple:
    """The iteration domain of a fusible equation: its result's shape, or a reduction's
    operand's shape."""
    return tuple(e.inputs[0].shape) if is_reduction(e) else tuple(e.outputs[0].shape)


# A kernel holds at most this many equations: LLVM's time to compile a loop body grows faster
# than the body (a 650-op kernel of W6 took 20 s, the same ops in kernels of 64 well under 1 s),
# while a kernel boundary costs one dispatch and one intermediate array. JITGRAD_MAX_KERNEL_OPS
# overrides it.
MAX_KERNEL_OPS = _config.max_kernel_ops()
# A kernel of at least MIN_CUT_OPS equations (3/4 of the most) ends where the program's
# content says, not at a fixed count: at the equation with the lowest ``_cut_scores`` among
# the positions where it may end. A program that repeats a pattern (an unrolled loop, a stack
# of equal layers) then cuts every repetition at the same place, and its kernels have equal
# source, compiled once (W6: 126 kernels of 12 distinct sources at fixed cuts).
MIN_CUT_OPS = MAX_KERNEL_OPS * 3 // 4
# A graph of more than LONG_GRAPH equations (an unrolled loop, a deep stack of layers) gets
# kernels of at most half as many: its kernels repeat, so its first call is mostly the compile
# time of its few distinct kernels, which grows faster than their length, while a boundary
# costs it little (such graphs run as compiled chains, a kernel call there is tens of ns).
# W6 N=1600 (value and gradient): first call 2.8 -> 2.4 s, later calls 61 -> 50 us.
LONG_GRAPH = 2048


def kernel_sizes(n_eqns: int) -> tuple[int, int]:
    """(the fewest equations a kernel has before a content cut may end it, the most it holds)
    in a graph of ``n_eqns`` equations."""
    most = MAX_KERNEL_OPS if n_eqns <= LONG_GRAPH else max(MAX_KERNEL_OPS // 2, 1)
    return most * 3 // 4, most
_CUT_WINDOW = 8  # equations whose ops and wiring decide one position's score


class _Group:
    __slots__ = ("id", "domain", "eqns", "reduced", "first", "cut")

    def __init__(self, gid: int, domain: tuple, first: int, cut: int) -> None:
        self.id = gid
        self.domain = domain
        self.eqns: list[Eqn] = []
        self.reduced: set[Var] = set()  # reduction results: not readable inside the group
        self.first = first
        self.cut = cut  # no equation after this position joins once the group is long


def _cut_scores(eqns: list) -> list[int]:
    """A score per position that depends only on the ops, parameters and wiring of the
    equations that end there (the same in every repetition of a pattern; a process-independent
    hash, so kernel sources and their cache files are the same in every run)."""
    made_at: dict = {}
    own = []
    for k, e in enumerate(eqns):
        wiring = tuple(k - made_at[v] if v in made_at and k - made_at[v] < 64 else -1
                       for v in e.in_vars())
        own.append(zlib.crc32(f"{e.op.name}{sorted(e.params.items())}{wiring}".encode()))
        for v in e.outputs:
            made_at[v] = k
    return [zlib.crc32(np.array(own[max(0, k - _CUT_WINDOW + 1):k + 1], np.uint32).tobytes())
            for k in range(len(own))]


def _cut(scores: list, first: int, least: int, most: int) -> int:
    """Where a kernel that starts at position ``first`` ends once it is long: the first
    lowest score among the positions that keep it between ``least`` and ``most`` equations."""
    window = scores[first + least - 1:first + most]
    if not window:
        return len(scores)
    return first + least - 1 + window.index(min(window))


def fuse(graph: Graph, fusible: Callable[[Eqn], bool]) -> Graph:
    """Returns ``graph`` with its fusible equations grouped into ``kernel`` equations."""
    unit_of: dict[Var, object] = {}  # Var -> the _Group, or the index of the single Eqn
    preds: dict[object, set] = {}  # unit -> the units it reads from
    groups: list[_Group] = []
    latest: dict[tuple, _Group] = {}
    singles: dict[int, Eqn] = {}

    def reaches(start: object, target: _Group) -> bool:
        # does ``start`` depend on ``target``? (a walk over the units it reads from)
        seen, stack = set(), [start]
        while stack:
            u = stack.pop()
            if u is target:
                return True
            for p in preds[u]:
                if p not in seen:
                    seen.add(p)
                    stack.append(p)
        return False

    view_only = _expands_read_only_by_boundaries(graph, fusible)
    least, most = kernel_sizes(len(graph.eqns))
    scores = _cut_scores(graph.eqns) if len(graph.eqns) > least else []
    for k, e in enumerate(graph.eqns):
        units = [unit_of[v] for v in e.in_vars() if v in unit_of]
        if not fusible(e) or k in view_only:
            singles[k] = e
            preds[k] = set(units)
            for v in e.outputs:
                unit_of[v] = k
            continue
        dom = domain_of(e)
        candidates = [u for u in reversed(units) if isinstance(u, _Group) and u.domain == dom]
        if dom in latest and latest[dom] not in candidates:
            candidates.append(latest[dom])
        target = None
        for g in candidates:
            if len(g.eqns) >= most or (len(g.eqns) >= least and k > g.cut) \
                    or any(v in g.reduced for v in e.in_vars()):
                continue
            if not any(u is not g and reaches(u, g) for u in units):
                target = g
                break
        if target is None:
            target = _Group(len(groups), dom, k, _cut(scores, k, least, most))
            groups.append(target)
            preds[target] = set()
        target.eqns.append(e)
        preds[target].update(u for u in units if u is not target)
        if is_reduction(e):
            target.reduced.update(e.outputs)
        for v in e.outputs:
            unit_of[v] = target
        latest[dom] = target
    fused = graph.replace(eqns=_schedule(graph, groups, singles, unit_of, preds))
    return rematerialize(fused)


def _expands_read_only_by_boundaries(graph: Graph, fusible: Callable[[Eqn], bool]) -> set[int]:
    # an expand whose readers all run outside kernels stays a zero-copy view: in a kernel of
    # its own it would write the broadcast array out in full
    readers: dict[Var, list[Eqn]] = {}
    for e in graph.eqns:
        for v in e.in_vars():
            readers.setdefault(v, []).append(e)
    returned = {v for v in graph.outvars if isinstance(v, Var)}
    return {k for k, e in enumerate(graph.eqns)
            if e.op.broadcast and e.outputs[0] not in returned and readers.get(e.outputs[0])
            and not any(fusible(r) for r in readers[e.outputs[0]])}


def _schedule(graph: Graph, groups: list[_Group], singles: dict[int, Eqn], unit_of: dict,
              preds: dict) -> list[Eqn]:
    """Kernel equations and single equations in a topological order close to the original."""
    keys: dict[object, int] = {g: g.first for g in groups}
    keys.update((k, k) for k in singles)
    succs: dict[object, list] = {u: [] for u in keys}
    for u, ps in preds.items():
        for p in ps:
            succs[p].append(u)
    waiting = {u: len(preds[u]) for u in keys}
    order = {u: i for i, u in enumerate(keys)}  # a tie-breaker that is never compared by value
    ready = [(keys[u], order[u], u) for u, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    live_out = _used_outside(graph, unit_of)
    out: list[Eqn] = []
    while ready:
        _, _, u = heapq.heappop(ready)
        out.append(_kernel_eqn(u, live_out) if isinstance(u, _Group) else singles[u])
        for s in succs[u]:
            waiting[s] -= 1
            if waiting[s] == 0:
                heapq.heappush(ready, (keys[s], order[s], s))
    if len(out) != len(keys):  # the legality checks above make this unreachable
        raise AssertionError("fuse: the fused graph has a cycle")
    return out


def _used_outside(graph: Graph, unit_of: dict) -> set[Var]:
    """Values a kernel must write out: read by another unit or returned by the graph."""
    used = {v for v in graph.outvars if isinstance(v, Var)}
    for e in graph.eqns:
        mine = unit_of.get(e.outputs[0]) if e.outputs else None
        used.update(v for v in e.in_vars() if unit_of.get(v) is not mine)
    return used


def _kernel_eqn(g: _Group, live_out: set[Var]) -> Eqn:
    defined = {v for e in g.eqns for v in e.outputs}
    inputs: list[Var] = []
    for e in g.eqns:
        for v in e.in_vars():
            if v not in defined and v not in inputs:
                inputs.append(v)
    outputs = [v for e in g.eqns for v in e.outputs if v in live_out]
    name = f"k{g.id}"
    body = Graph(inputs, outputs, g.eqns, name=name)
    source = g.eqns[-1].source
    return Eqn(KERNEL_OP, inputs, {"body": body, "name": name}, outputs, source)


MAX_REMAT = 32  # equations one kernel recomputes for one value it would otherwise read


def rematerialize(graph: Graph) -> Graph:
    """Kernels recompute pointwise values of earlier kernels of the same domain instead of
    reading them, when what the recomputation reads costs no more bytes than the value.

    A kernel that needs ``tanh(h)`` from a kernel before a matmul then reads ``h`` (which it
    may read anyway) instead of ``tanh(h)`` written out to memory; a kernel whose outputs are
    all recomputed by their readers disappears.
    """
    eqns = list(graph.eqns)
    rank: dict[Eqn, int] = {}  # a topological order of every equation, kernel bodies included
    for e in eqns:
        for q in (e.params["body"].eqns if e.op is KERNEL_OP else [e]):
            rank[q] = len(rank)
    most = kernel_sizes(len(rank))[1]
    made_by: dict[Var, tuple[int, Eqn]] = {}  # full-size pointwise value -> (kernel index, eqn)
    for j, e in enumerate(eqns):
        if e.op is KERNEL_OP:
            dom = domain_of(e.params["body"].eqns[0])
            for q in e.params["body"].eqns:
                if not is_reduction(q) and tuple(q.outputs[0].shape) == dom:
                    made_by[q.outputs[0]] = (j, q)
    changed = True
    while changed:
        changed = False
        for j, e in enumerate(eqns):
            if e.op is not KERNEL_OP:
                continue
            body = e.params["body"]
            dom = domain_of(body.eqns[0])
            for v in body.invars:
                src = made_by.get(v)
                if src is None or src[0] >= j or \
                        domain_of(eqns[src[0]].params["body"].eqns[0]) != dom:
                    continue
                chain = _chain(v, eqns[src[0]].params["body"])
                if chain is None:
                    continue
                chain = [q for q in chain if q not in body.eqns]
                if len(chain) + len(body.eqns) > most:
                    continue
                made = {w for q in chain for w in q.outputs}
                reads = {w for q in chain for w in q.in_vars() if w not in made}
                added = [w for w in reads if w not in body.invars]
                if sum(bytes_of(w) for w in added) > bytes_of(v):
                    continue
                eqns[j] = _with_body(e, sorted(chain + body.eqns, key=rank.__getitem__))
                changed = True
                break
    return graph.replace(eqns=_prune_outputs(graph, eqns))


def _chain(v: Var, body: Graph) -> list[Eqn] | None:
    """The equations of ``body`` that compute ``v`` from the body's inputs, in body order."""
    producer = {w: q for q in body.eqns for w in q.outputs}
    need, stack = set(), [v]
    while stack:
        u = stack.pop()
        q = producer.get(u)
        if q is None or q in need:
            continue
        if is_reduction(q):
            return None
        need.add(q)
        if len(need) > MAX_REMAT:
            return None
        stack.extend(q.in_vars())
    return [q for q in body.eqns if q in need]


def free_inputs(eqns: list[Eqn]) -> list[Var]:
    """The values ``eqns`` read that none of them computes, in first-read order."""
    made = {w for q in eqns for w in q.outputs}
    return list(dict.fromkeys(w for q in eqns for w in q.in_vars() if w not in made))


def _with_body(e: Eqn, body_eqns: list[Eqn]) -> Eqn:
    inputs = free_inputs(body_eqns)
    old = e.params["body"]
    body = Graph(inputs, old.outvars, body_eqns, name=old.name)
    return Eqn(KERNEL_OP, inputs, {**e.params, "body": body}, e.outputs, e.source)


def _prune_outputs(graph: Graph, eqns: list[Eqn]) -> list[Eqn]:
    """Drops kernel outputs no one reads any more (and kernels left with none)."""
    used = {v for v in graph.outvars if isinstance(v, Var)}
    for e in eqns:
        used.update(e.in_vars())
    out = []
    for e in eqns:
        if e.op is KERNEL_OP and any(v not in used for v in e.outputs):
            keep = [v for v in e.outputs if v in used]
            if not keep:
                continue
            old = e.params["body"]
            body = dce_body(Graph(old.invars, keep, old.eqns, name=old.name))
            e = Eqn(KERNEL_OP, body.invars, {**e.params, "body": body}, keep, e.source)
        out.append(e)
    return out


def dce_body(body: Graph) -> Graph:
    """A kernel body without the equations its outputs do not need, and without the inputs
    those equations alone read."""
    body = dce(body)
    read = {v for q in body.eqns for v in q.in_vars()}
    return body.replace(invars=[v for v in body.invars if v in read])


def kernel_bodies(graph: Graph) -> list[Graph]:
    """The body graphs of a fused graph's kernels, in program order."""
    return [e.params["body"] for e in graph.eqns if e.op is KERNEL_OP]


def bytes_of(v: Var) -> int:
    return int(np.prod(v.shape, dtype=np.int64)) * v.dtype.itemsize
