"""The numba backend's roofline report (``Lowered.roofline``): each kernel timed against the
machine's measured copy bandwidth, each matrix product's rate."""

from __future__ import annotations

import functools
import time

import numpy as np

from .._ir import Graph
from ..jit.passes.fuse import KERNEL_OP
from . import gemm


_BANDWIDTH: list[float] = []


def copy_bandwidth() -> float:
    """This machine's memory bandwidth in bytes/s, measured once per process as a NumPy copy
    of 64 MiB (bytes read + bytes written over the best of five copies, as STREAM counts)."""
    if not _BANDWIDTH:
        src = np.ones(8 << 20)
        dst = np.empty_like(src)
        best = min(_timed(lambda: np.copyto(dst, src)) for _ in range(5))
        _BANDWIDTH.append(2 * src.nbytes / best)
    return _BANDWIDTH[0]


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def report(graph: Graph, fused: Graph, kernels: list, opaque_ops: tuple, arrays: list,
           repeat: int = 7) -> str:
    """Runs ``graph`` (lowered to ``fused`` and its ``kernels``) on ``arrays`` and reports each
    kernel's median time, its bytes moved and their share of the copy bandwidth (the memory
    roofline of a memory-bound kernel), and each matrix product's (``opaque_ops``) time, rate
    and implementation (``tiled`` or ``numpy``)."""
    from .interpreter import compile as interpret

    env = dict(zip(graph.invars, arrays))
    env.update((v, t._data) for v, t in graph.consts.items())
    kernel_of = dict(zip((id(e) for e in fused.eqns if e.op is KERNEL_OP), kernels))
    opaque = gemm.implementations()
    bandwidth = copy_bandwidth()
    rows = [f"memory roofline: copy bandwidth {bandwidth / 1e9:.1f} GB/s"]
    for e in fused.eqns:
        ins = [env[v] for v in e.inputs] if e.op is KERNEL_OP else None
        if e.op is KERNEL_OP:
            k = kernel_of[id(e)]
            k.launch(*ins)  # (compiles on first use)
            run = functools.partial(k.launch, *ins)
            times = sorted(_timed(run) for _ in range(repeat))
            outs = k.launch(*ins)
            t = times[len(times) // 2]
            read, written = k.bytes_moved()
            rate = (read + written) / t if t > 0 else float("inf")
            rows.append(f"{e.params['name']}: {k.ks.n_ops} ops over {list(k.ks.domain)}, "
                        f"{t * 1e6:.1f} us, {read + written} B moved, {rate / 1e9:.2f} GB/s = "
                        f"{100 * rate / bandwidth:.0f}% of copy bandwidth")
        elif e.op.name in opaque_ops and not e.params:
            ins = [env[v] for v in e.inputs]
            impl = opaque[e.op.name]
            run = functools.partial(impl, *ins)
            run()  # (compiles on first use)
            t = sorted(_timed(run) for _ in range(repeat))[repeat // 2]
            outs = [run()]
            a, b = ins[-2:]
            flops = 2 * a.shape[0] * a.shape[1] * b.shape[1]
            path = "tiled" if opaque["mm"] is gemm.matmul and gemm.applies(a, b) else "numpy"
            rows.append(f"{e.op.name} {list(a.shape)} x {list(b.shape)} ({path}): "
                        f"{t * 1e6:.1f} us, {flops / t / 1e9:.0f} GFLOPS")
        else:
            single = Graph(e.in_vars(), e.outputs, [e], name="step")
            outs = interpret(single)([env[v] for v in e.in_vars()])
        env.update(zip(e.outputs, outs))
    return "\n".join(rows)
