"""The reference backend: runs a Graph equation by equation with each ``OpDef.impl``.

``compile`` is ``_interpret.interpret``: the NumPy code eager mode runs, with the same
promotion casts as ``ops.registry._pointwise_arrays``. ``run_eager`` instead dispatches every
equation through ``ops.registry.apply`` on tensors, recording autograd: the path used for
``create_graph=True``. ``mismatch`` says how a compiled backend's result differs from the
reference (``jit(check=True)`` and the numba backend's self-check).
"""

from __future__ import annotations

import numpy as np

from .._interpret import interpret
from .._ir import KERNEL, Graph, Var
from ..ops import registry

compile = interpret  # noqa: A001 - the backend interface: graph -> run(arrays) -> arrays

# how far a compiled float result may lie from the reference (``mismatch``)
RTOL = {"float16": 1e-2, "float32": 1e-4, "float64": 1e-9}
ATOL = {"float16": 1e-3, "float32": 1e-5, "float64": 1e-11}


def mismatch(a: np.ndarray, b: np.ndarray, dtype_name: str) -> str | None:
    """How compiled ``a`` differs from eager ``b`` beyond float tolerance (None: it does not)."""
    if a.shape != b.shape:
        return f"shape {a.shape} != eager {b.shape}"
    if a.dtype.kind not in "fc":
        bad = a != b
    else:
        bad = ~np.isclose(a, b, rtol=RTOL.get(dtype_name, 1e-9), atol=ATOL.get(dtype_name, 0),
                          equal_nan=True)
    if not np.any(bad):
        return None
    i = np.unravel_index(int(np.argmax(bad)), bad.shape) if bad.ndim else ()
    return (f"{int(bad.sum())} of {bad.size} elements differ; first at index "
            f"{tuple(int(k) for k in i)}: compiled {a[i].item()!r}, eager {b[i].item()!r}")


def render(graph: Graph) -> str:
    """The interpreter's 'kernel' is the program itself: its printed IR."""
    return graph.format()


def run_eager(graph: Graph, inputs: list, known: dict | None = None) -> list:
    """Runs ``graph`` on tensors through ``registry.apply`` (recording autograd as eager does).

    ``known`` maps Vars to values to use instead of recomputing them (saved random draws).
    """
    state = registry.state  # (grad mode is dispatch state: no import of autograd's API)
    env: dict[Var, object] = dict(zip(graph.invars, inputs))
    env.update(graph.consts)
    known = known or {}
    for e in graph.eqns:
        if e.outputs and all(v in known for v in e.outputs):
            env.update((v, known[v]) for v in e.outputs)
            continue
        args = [env[x] if isinstance(x, Var) else x for x in e.inputs]
        op = e.op
        if op.kind == KERNEL:  # a fused kernel: its body's equations, one by one
            env.update(zip(e.outputs, run_eager(e.params["body"], args)))
            continue
        if op.contiguous_fallback is not None and not args[0].is_contiguous():
            op = op.contiguous_fallback
            args[0] = args[0].clone()
        if e.nograd:
            prev, state.grad_enabled = state.grad_enabled, False
            try:
                out = registry.apply(op, *args, **e.params)
            finally:
                state.grad_enabled = prev
        else:
            out = registry.apply(op, *args, **e.params)
        for v, o in zip(e.outputs, (out,) if e.op.n_outputs == 1 else out):
            env[v] = o
    return [env[v] if isinstance(v, Var) else None for v in graph.outvars]
