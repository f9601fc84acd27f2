"""The CUDA backend: fused kernels compiled with numba-cuda, for jit graphs on cuda tensors.

``compile(graph)`` takes a graph the pipeline fused with this backend's ``fusible`` rule,
renders each kernel with ``cuda_render`` (the ops' templates, a grid-stride loop, block
reductions in shared memory merged with atomics), compiles it with ``numba.cuda.jit`` once per
source in the process, and runs the program equation by equation: kernels are launched with a
configuration made from the domain's size (``launch_config``), and every other equation
(matmul, views, ...) runs as eager mode runs it on cuda tensors (``cuda_eager.run_arrays``), so
both modes share one kernel per op. Data never leaves the device.

``backend="auto"`` picks this backend when an argument of the jit function is a cuda tensor
(``backends.get_backend``). Under ``NUMBA_ENABLE_CUDASIM=1`` numba's simulator runs the same
kernels on the CPU (slow: tests use tiny sizes, and launches use small blocks).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable

import numpy as np

from .. import dtypes
from .._ir import Eqn, Graph
from ..jit.passes.fuse import KERNEL_OP, is_reduction
from ..ops.registry import POINTWISE
from .. import _cuda_array as cuda_array
from .._cuda_array import CudaArray, simulated
from .cuda_render import (CudaSource, NotRenderableError, check_complex, render_cuda,
                          render_final)
from .render import KERNEL_DTYPES, renderable

# The CPU's kernel dtypes, float16 (numba-cuda computes in half precision, each operation
# rounded to float16 as NumPy's are) and complex (arithmetic only: ``cuda_render``).
SUPPORTED = KERNEL_DTYPES | {dtypes.float16, dtypes.complex64, dtypes.complex128}

# Threads per block, and the most blocks a grid-stride kernel is launched with (each thread
# then loops over several elements). Under the simulator each thread is a Python thread: small.
BLOCK = 256
MAX_BLOCKS = 4096
SIM_BLOCK = 32
SIM_MAX_BLOCKS = 4


def available() -> bool:
    from .. import cuda as jcuda

    return jcuda.is_available()


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


def fusible(e: Eqn) -> bool:
    """Whether this backend puts ``e`` in a kernel."""
    try:
        if e.op.kind == POINTWISE:
            check_complex(e)
        if not renderable(e, SUPPORTED):
            return False
        if is_reduction(e):  # (it also needs an atomic that merges the blocks' results)
            render_cuda(Graph(e.in_vars(), e.outputs, [e]), "kernel", 32)
    except (NotRenderableError, KeyError):
        return False
    return True


def recomputable(e: Eqn) -> bool:
    """Pointwise equations recomputed in the backward rather than saved: on a GPU reading a
    saved value costs more than recomputing any pointwise op."""
    return e.op.kind == POINTWISE and fusible(e)


def compile(graph: Graph) -> Callable[[list], list]:  # noqa: A001 - the backend interface
    """A function mapping the graph's input device arrays to its output device arrays."""
    from .cuda_eager import run_arrays

    steps = []
    for e in graph.eqns:
        if e.op is KERNEL_OP:
            body = e.params["body"]
            k = CudaKernel(body)
            dom = _domain(body)
            shapes = [tuple(v.shape) for v in body.outvars]
            steps.append((e, lambda arrays, k=k, dom=dom, shapes=shapes:
                          k.launch(arrays, dom, shapes)))
        else:
            steps.append((e, lambda arrays, e=e: run_arrays(e, arrays)))
    consts = list(graph.consts.items())

    def run(inputs: list) -> list:
        for a in inputs:
            if type(a) is not CudaArray:
                raise RuntimeError("jit backend 'cuda' is not available for cpu tensors: move "
                                   "the arguments with .cuda() (backend='auto' picks the "
                                   "backend from the arguments' device)")
        env = dict(zip(graph.invars, inputs))
        for v, t in consts:  # (a constant the trace made is on the host: copied over)
            env[v] = t._data if type(t._data) is CudaArray else cuda_array.to_device(t._data)
        for e, step in steps:
            args = [env[x] if x in env else x for x in e.in_vars()]
            env.update(zip(e.outputs, step(args)))
        return [env[v] if v in env else v for v in graph.outvars]

    return run


def _domain(body: Graph) -> tuple:
    e = body.eqns[0]
    return tuple(e.inputs[0].shape) if is_reduction(e) else tuple(e.outputs[0].shape)


def render(graph: Graph) -> str:
    """Each kernel of a fused program: its CUDA source."""
    parts = []
    for e in graph.eqns:
        if e.op is KERNEL_OP:
            cs = render_cuda(e.params["body"], "kernel", block_size())
            parts.append(f"# {e.params['name']}: {cs.n_ops} ops over "
                         f"{list(_domain(e.params['body']))}")
            parts.append(cs.source.rstrip())
    return "\n".join(parts)
