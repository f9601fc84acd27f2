"""The CUDA backend: fused kernels compiled with numba-cuda, for jit graphs on cuda tensors.

``compile(graph)`` takes a graph the pipeline fused with this backend's ``fusible`` rule,
renders each kernel with ``cuda_render`` (the ops' templates, a grid-stride loop, block
reductions in shared memory merged with atomics), compiles it with ``numba.cuda.jit`` once per
source in the process, and runs the program equation by equation: kernels are launched with a
configuration made from the domain's size (``numba_cuda.launch_config``), and every other equation
(matmul, views, ...) runs as eager mode runs it on cuda tensors (``cuda_eager.run_arrays``), so
both modes share one kernel per op. Data never leaves the device.

``backend="auto"`` picks this backend when an argument of the jit function is a cuda tensor
(``backends.get_backend``). Under ``NUMBA_ENABLE_CUDASIM=1`` numba's simulator runs the same
kernels on the CPU (slow: tests use tiny sizes, and launches use small blocks).
"""

from __future__ import annotations

from collections.abc import Callable

from .. import _cuda_array as cuda_array
from .._cuda_array import CudaArray
from .._ir import Eqn, Graph
from ..jit.control_flow import CONTROL_FLOW, sub_runner_impl
from ..jit.passes.fuse import KERNEL_OP, is_reduction
from ..ops.registry import POINTWISE
from .cuda_render import NotRenderableError, check_complex, render_cuda
from .numba_cuda import SUPPORTED, CudaKernel, block_size
from .render import renderable


def available() -> bool:
    from .. import cuda as jcuda

    return jcuda.is_available()


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
    from . import cuda_runtime  # noqa: F401 - (the eager runtime run_arrays dispatches to)
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
        elif e.op in CONTROL_FLOW:  # runs the selected sub-graph, compiled as this one
            impl = sub_runner_impl(e, compile_subgraph)
            steps.append((e, lambda arrays, impl=impl: impl(*arrays)))
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


def compile_subgraph(graph: Graph) -> Callable[[list], list]:
    """A control-flow sub-graph through the pipeline's fusing stages for this backend, then
    ``compile``."""
    from ..jit.passes import Program, Target, run as run_passes

    return compile(run_passes(Program(graph), Target(None, recomputable, fusible)).forward)


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
