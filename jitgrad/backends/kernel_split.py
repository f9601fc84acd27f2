"""Splitting kernels that touch too many arrays for LLVM to vectorize their loop.

Horizontal fusion (``jit.passes.fuse``) puts independent chains of one domain in one kernel:
a compiled optimizer step over ten parameters of one shape becomes a kernel or two that read
and write dozens of arrays. LLVM's loop vectorizer must then prove that no store of the loop
overlaps another array, with a runtime check per pair of pointers it cannot tell apart (Numba
passes arrays without ``noalias``), and above a limit of checks it leaves the loop scalar:
measured on Adam's update, a kernel over 3 parameters (21 arrays) ran scalar, 18x slower per
element than over 1 or 2 (7 or 14 arrays). So a kernel whose loop reads and writes more than
``MAX_LOOP_ARRAYS`` arrays is split into kernels of its independent parts (chains that share
no computed value, only inputs), packed in order up to that many arrays each. A part that alone
exceeds the limit stays whole.
"""

from __future__ import annotations

from .._ir import Eqn, Graph, Var
from ..jit.passes.fuse import KERNEL_OP, free_inputs

# Arrays one kernel loop may load from or store to and still vectorize (measured with LLVM 22:
# 14 and 16 did, 20 and 21 did not). Inputs read at one element only are loaded once, before
# the loop, and do not count.
MAX_LOOP_ARRAYS = 16


def split_wide_kernels(fused: Graph) -> Graph:
    """``fused`` with each kernel over more than ``MAX_LOOP_ARRAYS`` arrays replaced by
    kernels of its independent parts (the same graph when none is)."""
    eqns, changed = [], False
    for e in fused.eqns:
        if e.op is KERNEL_OP and _loop_arrays(e.params["body"], e.outputs) > MAX_LOOP_ARRAYS:
            parts = _split(e)
            changed |= len(parts) > 1
            eqns.extend(parts)
        else:
            eqns.append(e)
    return fused.replace(eqns=eqns) if changed else fused


def _in_loop(v: Var) -> bool:
    return any(n != 1 for n in v.shape)


def _loop_arrays(body: Graph, outputs: list) -> int:
    return sum(_in_loop(v) for v in body.invars) + len(outputs)


def _split(e: Eqn) -> list[Eqn]:
    body = e.params["body"]
    outputs = set(body.outvars)
    # independent parts: equations joined by the values one computes and another reads
    part_of: dict[Var, int] = {}
    parent: list[int] = []

    def find(p: int) -> int:
        while parent[p] != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    for q in body.eqns:
        p = len(parent)
        parent.append(p)
        for v in q.in_vars():
            if v in part_of:
                parent[find(part_of[v])] = p
        for v in q.outputs:
            part_of[v] = p
    groups: dict[int, list] = {}
    for k, q in enumerate(body.eqns):
        groups.setdefault(find(k), []).append(q)
    parts = sorted(groups.values(), key=lambda g: body.eqns.index(g[0]))
    if len(parts) < 2:
        return [e]
    packed: list[list] = []
    for part in parts:
        if packed and _cost(packed[-1] + part, outputs) <= MAX_LOOP_ARRAYS:
            packed[-1] = packed[-1] + part
        else:
            packed.append(part)
    order = {id(q): k for k, q in enumerate(body.eqns)}
    kernels = []
    for j, members in enumerate(packed):
        members.sort(key=lambda q: order[id(q)])
        made = [v for q in members for v in q.outputs if v in outputs]
        inputs = free_inputs(members)
        name = f"{e.params['name']}.{j}" if len(packed) > 1 else e.params["name"]
        sub = Graph(inputs, made, members, name=name)
        kernels.append(Eqn(KERNEL_OP, inputs, {**e.params, "body": sub, "name": name}, made,
                           e.source))
    return kernels


def _cost(members: list, outputs: set) -> int:
    made = [v for q in members for v in q.outputs if v in outputs]
    return sum(_in_loop(v) for v in free_inputs(members)) + len(made)
