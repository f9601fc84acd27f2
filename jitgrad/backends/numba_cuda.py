"""numba-cuda kernels, the bottom of the CUDA backend: rendered source compiled with
``numba.cuda.jit`` once per source in the process (``compile_source``), the launch
configuration made from a domain's size (``launch_config``), a fill kernel (``full``) and
``CudaKernel``, a kernel rendered by ``cuda_render`` from a graph (a jit program's fused
kernel, or one eager op) and launched on device arrays of any sizes.

Everything else of the CUDA backend imports down to this module: the eager runtime
(``cuda_eager``, the op modules ``cuda_*``, collected by ``cuda_runtime``) and the jit backend
(``cuda_jit``). Under ``NUMBA_ENABLE_CUDASIM=1`` numba's simulator runs the same kernels on the
CPU (slow: tests use tiny sizes, and launches use small blocks).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable

import numpy as np

from .. import dtypes
from .._ir import Graph
from .. import _cuda_array as cuda_array
from .._cuda_array import CudaArray, simulated
from .cuda_render import CudaSource, render_cuda, render_final
from .render import KERNEL_DTYPES

# The CPU's kernel dtypes, float16 (numba-cuda computes in half precision, each operation
# rounded to float16 as NumPy's are) and complex (arithmetic only: ``cuda_render``).
SUPPORTED = KERNEL_DTYPES | {dtypes.float16, dtypes.complex64, dtypes.complex128}

# Threads per block, and the most blocks a grid-stride kernel is launched with (each thread
# then loops over several elements). Under the simulator each thread is a Python thread that
# numba polls until it ends: small blocks (8 threads: half the test time of 32).
BLOCK = 256
MAX_BLOCKS = 4096
SIM_BLOCK = 8
SIM_MAX_BLOCKS = 4


def block_size() -> int:
    return SIM_BLOCK if simulated() else BLOCK


def launch_config(total: int) -> tuple[int, int]:
    """(blocks, threads per block) for a grid-stride kernel over ``total`` elements."""
    block = block_size()
    cap = SIM_MAX_BLOCKS if simulated() else MAX_BLOCKS
    return max(1, min(cap, -(-int(total) // block))), block


_KERNELS: dict[str, Callable] = {}


def compile_source(source: str, name: str):
    """A ``numba.cuda.jit`` kernel for rendered source (once per source in the process)."""
    fn = _KERNELS.get(source)
    if fn is None:
        from .cuda_lib import device_functions

        cuda = cuda_array.cuda()
        ns: dict = {"np": np, "cuda": cuda, **device_functions()}
        exec(builtins.compile(source, "<jitgrad cuda kernel>", "exec"), ns)  # noqa: S102
        fn = _KERNELS[source] = cuda.jit(ns[name])
    return fn


_FILL = "def fill(a, v):\n    for f in range(cuda.grid(1), a.shape[0], cuda.gridsize(1)):\n" \
    "        a[f] = v\n"


def full(shape: tuple, value, dt) -> CudaArray:
    """A device array of ``shape`` filled with ``value`` (a fill kernel)."""
    out = cuda_array.empty(shape, dt)
    flat = out.root
    blocks, threads = launch_config(flat.shape[0])
    compile_source(_FILL, "fill")[blocks, threads](flat, np.dtype(dt).type(value))
    return out


def _padded(a: CudaArray, rank: int) -> CudaArray:
    if a.ndim == rank:
        return a
    extra = rank - a.ndim
    return a.view((1,) * extra + a.shape, (0,) * extra + a.strides, a.offset)


class CudaKernel:
    """A rendered and compiled CUDA kernel, launched on device arrays of any sizes that keep
    its ranks and broadcast pattern."""

    def __init__(self, body: Graph, name: str = "kernel", scalars: frozenset = frozenset()
                 ) -> None:
        self.body = body
        self.cs: CudaSource = render_cuda(body, name, block_size(), scalars)
        self.fn = compile_source(self.cs.source, name)
        self.finals = [compile_source(render_final(r, r.var.dtype.np), "finish")
                       for r in self.cs.reductions]

    def launch(self, arrays: list, domain: tuple, out_shapes: list, out: list | None = None
               ) -> list:
        """Runs the kernel over ``domain``; ``out_shapes``: the shape of each body output;
        ``out``: existing arrays of the domain's shape to write the full-size outputs into."""
        cs = self.cs
        domain = tuple(domain) if domain else (1,)
        devs = [_padded(a, cs.rank).dev() if type(a) is CudaArray else a for a in arrays]
        outs = [_padded(o, cs.rank) for o in out] if out is not None else \
            [cuda_array.empty(domain, v.dtype.np) for v in cs.outputs]
        accs = []
        for r in cs.reductions:
            keep = (1,) if r.full else tuple(1 if j in r.dims else n
                                              for j, n in enumerate(domain))
            if r.acc_dtype.kind == "c":  # a complex sum: real and imaginary parts (atomics)
                part = np.float32 if r.acc_dtype == np.complex64 else np.float64
                accs.append(full((2,) if r.full else keep + (2,), 0, part))
            else:
                accs.append(full(keep, r.identity, r.acc_dtype))
        total = int(np.prod(domain, dtype=np.int64))
        if total:
            blocks, threads = launch_config(total)
            self.fn[blocks, threads](*domain, *devs, *[o.dev() for o in outs],
                                     *[a.dev() for a in accs])
        slot = dict(zip(cs.outputs, outs))
        for r, acc, finish in zip(cs.reductions, accs, self.finals):
            count = int(np.prod([domain[j] for j in r.dims], dtype=np.int64))
            m = acc.size // 2 if r.acc_dtype.kind == "c" else acc.size
            res = cuda_array.empty((m,), r.var.dtype.np)
            blocks, threads = launch_config(m)
            flat = acc.reshape((m, 2) if r.acc_dtype.kind == "c" else (m,))
            finish[blocks, threads](flat.dev(), res.dev(), count)
            slot[r.var] = res
        return [slot[v].reshape(tuple(s)) for v, s in zip(self.body.outvars, out_shapes)]
