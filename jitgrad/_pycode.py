"""Straight-line Python for a small Graph: one generated function calling each op's NumPy impl.

The interpreter (``_interpret``) walks a list of steps per call; for programs of a few
equations that walk costs more than the NumPy calls themselves. ``compile_function`` renders the
graph as Python source instead (one line per equation, with the interpreter's promotion casts
and result checks worked out at compile time) and ``exec``s it, so running the program costs
one Python call plus the NumPy calls. The eager engine's rule programs
(``autograd.rule_programs``) are built with it, which is why it sits below the autograd graph;
the numba backend's programs too (calling kernels in place of equations).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._interpret import cast_plan
from ._ir import Graph, Var


def render_function(graph: Graph, name: str = "program", signature: str | None = None,
                    prologue: tuple[str, ...] = (), namespace: dict | None = None,
                    impl_for: Callable | None = None) -> tuple[str, dict]:
    """Python source of ``def name(*invars)`` returning the graph's outputs as a tuple, and the
    namespace it needs (impls, literals, params, constants, dtypes).

    The inputs are named ``a0, a1, ...``. A caller may instead give the ``signature`` and
    ``prologue`` lines that bind those names (with what they need in ``namespace``).
    ``impl_for(eqn)`` may return the function to call for an equation (None: the op's impl).
    Each intermediate is deleted after its last use, so peak memory follows eager mode's.
    """
    names: dict[Var, str] = {}
    namespace = {**(namespace or {}), "ndarray": np.ndarray, "asarray": np.asarray}

    def bind(value, prefix: str) -> str:
        key = f"{prefix}{len(namespace)}"
        namespace[key] = value
        return key

    for i, v in enumerate(graph.invars):
        names[v] = f"a{i}"
    for v, t in graph.consts.items():  # a constant's data is read when the program runs
        names[v] = f"{bind(t, 'const')}._data"
    if signature is None:
        signature = ", ".join(names[v] for v in graph.invars)
    lines = [f"def {name}({signature}):", *(f"    {line}" for line in prologue)]
    last_use: dict[Var, int] = {}
    for k, e in enumerate(graph.eqns):
        for v in e.in_vars():
            last_use[v] = k
    dead_after: dict[int, list[Var]] = {}
    returned = {v for v in graph.outvars if isinstance(v, Var)}
    for v, k in last_use.items():
        if v not in returned and v not in graph.consts:
            dead_after.setdefault(k, []).append(v)
    for k, e in enumerate(graph.eqns):
        args = []
        for p in cast_plan(e):
            if p[0] == "l":
                args.append(bind(p[1], "lit"))
            elif p[2] is None:
                args.append(names[p[1]])
            else:
                args.append(f"{names[p[1]]}.astype({bind(p[2], 'dt')})")
        fn = impl_for(e) if impl_for is not None else None
        if e.params and fn is None:  # (an override takes the operands alone)
            args.append(f"**{bind(e.params, 'params')}")
        outs = [f"v{k}_{j}" for j in range(len(e.outputs))]
        impl = bind(fn or e.op.graph_impl, f"{e.op.name}_")
        target = outs[0] if e.op.n_outputs == 1 else ", ".join(outs) + ","
        lines.append(f"    {target} = {impl}({', '.join(args)})")
        for out, v in zip(outs, e.outputs):
            dt = bind(v.dtype.np, "dt")
            # (``is not`` first: NumPy's builtin dtypes are singletons, and a miss only costs
            # an asarray that does not copy)
            lines.append(f"    if type({out}) is not ndarray or {out}.dtype is not {dt}:")
            lines.append(f"        {out} = asarray({out}, dtype={dt})")
            names[v] = out
        dead = [names[v] for v in dead_after.get(k, ()) if v in names]
        if dead:
            lines.append(f"    del {', '.join(dead)}")
    results = [names[v] if isinstance(v, Var) else "None" for v in graph.outvars]
    lines.append(f"    return ({', '.join(results)}{',' if len(results) == 1 else ''})")
    return "\n".join(lines) + "\n", namespace


def compile_function(graph: Graph, name: str = "program", signature: str | None = None,
                     prologue: tuple[str, ...] = (), namespace: dict | None = None,
                     impl_for: Callable | None = None) -> Callable:
    """``f(*input_arrays) -> tuple of output arrays`` (None for outputs that are not values);
    the other arguments as in ``render_function``."""
    source, namespace = render_function(graph, name, signature, prologue, namespace, impl_for)
    code = compile(source, f"<jitgrad {name}>", "exec")
    exec(code, namespace)  # noqa: S102 - the source is rendered from the graph above
    fn = namespace[name]
    fn.source = source
    return fn
