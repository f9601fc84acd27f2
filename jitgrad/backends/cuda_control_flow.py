"""``cond`` and ``while_loop`` equations on cuda tensors in the eager dispatcher.

A jit program's equations run through eager ops when its backward is asked for with
``create_graph=True`` (``backends.interpreter.run_eager``); a control-flow equation among them
reaches the CUDA runtime's table (``cuda_eager._BY_NAME``) here, and runs its selected sub-graph
equation by equation on the device (``cuda_eager.run_arrays``), the predicate read on the host.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _cuda_array as cuda_array
from .._cuda_array import CudaArray
from .._ir import Graph
from .cuda_eager import run_arrays


def device_runner(graph: Graph) -> Callable[[list], list]:
    """``run(device arrays) -> device arrays`` for ``graph``, one equation at a time."""
    def run(arrays: list) -> list:
        env = dict(zip(graph.invars, arrays))
        for v, t in graph.consts.items():  # (a constant the trace made lives on the host)
            env[v] = t._data if type(t._data) is CudaArray else cuda_array.to_device(t._data)
        for e in graph.eqns:
            env.update(zip(e.outputs, run_arrays(e, [env[x] for x in e.in_vars()])))
        return [env[v] for v in graph.outvars]
    return run


def eager_control_flow(op: Any, args: tuple, params: dict) -> tuple:
    """``(result arrays, their dtypes)`` of a ``cond`` / ``while_loop`` on cuda tensors."""
    arrays = [a._data for a in args]
    out = op.graph_impl(*arrays, runner=device_runner, **params)
    return out, op.meta(*args, **params)[1]


BY_NAME = {"cond": eager_control_flow, "while_loop": eager_control_flow}
