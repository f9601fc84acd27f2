"""Which mutated inputs a fused program's kernels may overwrite in place.

A jit program that updates a tensor in place (an optimizer step, a running statistic) is
functionalized: the program computes the new value as an output, and the call path copies it
into the tensor afterwards (``jit.calls.run``). When the kernel computing that value can
write it straight into the tensor's buffer, the copy and the fresh output array go away: a
compiled Adam step reads ``p, grad, m, v`` and writes ``p, m, v`` once, instead of writing
three new arrays and copying them back. This is JAX's buffer donation (``donate_argnums``),
decided by the compiler instead of the user.

A kernel (``render.render_kernel``) is one loop nest that loads every input element it needs at
the top of the innermost body and stores the outputs after: an output element ``[i]`` is
written after everything at ``[i]`` was read and nothing else reads index ``[i]`` later. So
output ``v`` may overwrite input ``u`` when:

- ``v`` is a full-size output (not a reduction) of a kernel ``K``, with ``u``'s exact shape and
  dtype, the kernel's domain;
- every reader of ``u`` in the program is a kernel (no view of ``u`` exists, no opaque op
  reads it), and ``K`` is the last of them, reading ``u`` at the loop index (its shape is the
  domain: not broadcast);
- neither ``u`` nor ``v`` is another output of the program (a residual saved for the backward,
  a returned value).

The kernel stores into ``u``'s own argument (``KernelSource.into``), not into a second
argument bound to the same array: LLVM vectorizes such a loop behind runtime checks that its
arrays do not overlap, and two arguments for one buffer would fail them and run it scalar.

Whether the tensor's buffer can take the write (C-contiguous, writable, not sharing memory
with another input) is only known per call: the call path checks it and otherwise passes a
copy, which the program then overwrites (``jit.calls.run``).
"""

from __future__ import annotations

from collections import Counter

from .._ir import Graph, Var
from ..jit.passes.fuse import KERNEL_OP, domain_of, is_reduction


def plan(fused: Graph, donate: dict[int, int]) -> dict[Var, Var]:
    """``{output var: input var}`` for the pairs of ``donate`` (output position -> position of
    the input it is the new value of) that a kernel of ``fused`` can write in place."""
    if not donate:
        return {}
    producer: dict[Var, int] = {}
    readers: dict[Var, list[int]] = {}
    for n, e in enumerate(fused.eqns):
        for v in e.outputs:
            producer[v] = n
        for v in e.in_vars():
            readers.setdefault(v, []).append(n)
    returned = Counter(v for v in fused.outvars if isinstance(v, Var))
    chosen: dict[Var, Var] = {}
    for slot, i in sorted(donate.items()):
        v, u = fused.outvars[slot], fused.invars[i]
        if not isinstance(v, Var) or returned[v] != 1 or returned[u] or v in chosen \
                or v.dtype != u.dtype or tuple(v.shape) != tuple(u.shape):
            continue
        n = producer.get(v)
        reads = readers.get(u, [])
        if n is None or not reads or reads[-1] != n:
            continue
        if any(fused.eqns[r].op is not KERNEL_OP for r in reads):
            continue
        body = fused.eqns[n].params["body"]
        made_by = next(q for q in body.eqns if v in q.outputs)
        if u in body.invars and not is_reduction(made_by) and u.shape \
                and domain_of(body.eqns[0]) == tuple(u.shape):
            chosen[v] = u
    return chosen
