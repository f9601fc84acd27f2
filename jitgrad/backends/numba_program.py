"""Runs of kernels as one ``@njit`` function: one dispatch instead of a launcher per kernel.

A fused graph calls its kernels in order. Each call from Python costs a launcher (the output
arrays allocated from Python, the Numba dispatch with its argument typing), about 1 us plus
0.2 us per output: on small inputs (W4: 100 ops on 16 elements) more than the kernels' work.
``group`` finds the runs of consecutive kernels (equations that read nothing of a run are
moved ahead of it) and renders each run of two or more members as one module: the kernels, and
a ``program(S, ...)`` function that allocates every kernel's outputs and calls the kernels in
order, compiled with ``numba.njit``. Movement ops whose op has a ``program`` field (reshape,
slice, slice_backward, expand, permute) join a run when only members of runs read them: the
program computes them in nopython mode instead of NumPy calls between launches. A graph with no
opaque op (matmul, an op without a template) is one run, so one Numba function. A value the
program returns is never a view made inside it (Numba's views do not keep the NumPy base that
the jit's alias checks follow): such a value is returned as a copy. The sizes are the tuple
``S``, a run-time argument, so the source (and the compiled code) of a run does not depend on
the shapes of a call. The module goes through the persistent kernel cache like a single kernel.
"""

from __future__ import annotations

import builtins
import hashlib
from collections.abc import Callable

import numpy as np

from .._ir import Eqn, Graph, Var
from ..jit.passes.fuse import KERNEL_OP, free_inputs
from . import kernel_cache
from .render import literal, npname

_MODULE_HEADER = (
    "import numpy as np\n"
    "from numba import njit, prange\n"
    "from jitgrad.backends.kernel_lib import *  # noqa: F403 - the template functions\n"
    "_jg_cache = __name__.startswith('_jitgrad_kernel_')  # (in the cache directory)\n")

_PROGRAMS: dict[str, object] = {}
# The most kernels one program calls: Numba's compile time grows with a program's length
# faster than the dispatches it saves (a 1600-op chain is 100 kernels).
MAX_PROGRAM_KERNELS = 16


class _Sizes:
    """The ints a run's source reads from ``S`` (an int64 array: Numba limits tuples to 1000
    items): the same source for every shape."""

    def __init__(self) -> None:
        self.values: list[int] = []

    def ref(self, n: int) -> str:
        self.values.append(int(n))
        return f"S[{len(self.values) - 1}]"

    def shape(self, dims: tuple) -> str:
        refs = [self.ref(n) for n in dims]
        return f"({', '.join(refs)}{',' if len(refs) == 1 else ''})"


def group(fused: Graph, kernels: list, options: dict,
          first_call: Callable) -> tuple[Graph, dict]:
    """``fused`` with each run of two or more consecutive members (kernels, and movement ops
    that only members read) replaced by one ``kernel`` equation, and the launcher of every
    kernel equation left (``id(eqn) -> launch``). ``kernels`` are the backend's compiled
    kernels in order; ``first_call(fn, described, ns)`` wraps a program's first call (compile
    timing, cache counts, errors)."""
    compiled = dict(zip((id(e) for e in fused.eqns if e.op is KERNEL_OP), kernels))
    member = _members(fused)
    eqns: list[Eqn] = []
    impls: dict[int, Callable] = {}
    run: list[Eqn] = []
    run_outputs: set[Var] = set()
    after: list[Eqn] = []  # non-members that read the run: they wait for it
    after_outputs: set[Var] = set()
    run_kernels = 0

    def close() -> None:
        nonlocal run_kernels
        if run_kernels == 0:  # (movement ops whose readers ended up in another run)
            eqns.extend(run)
        elif len(run) == 1:
            eqns.append(run[0])
            impls[id(run[0])] = compiled[id(run[0])].launch
        else:
            eqn, launch = _run_as_one(run, compiled, fused, options, first_call)
            eqns.append(eqn)
            impls[id(eqn)] = launch
        eqns.extend(after)
        for part in (run, run_outputs, after, after_outputs):
            part.clear()
        run_kernels = 0

    for e in fused.eqns:
        if member[id(e)]:
            if after_outputs.intersection(e.in_vars()):
                close()  # it reads what waits for the run: the run ends here
            elif e.op is KERNEL_OP and run_kernels == MAX_PROGRAM_KERNELS:
                close()
            run.append(e)
            run_outputs.update(e.outputs)
            run_kernels += e.op is KERNEL_OP
        elif run and (after or run_outputs.intersection(e.in_vars())):
            after.append(e)
            after_outputs.update(e.outputs)
        else:
            eqns.append(e)  # reads nothing of the run: it runs before the run
    close()
    if len(eqns) == len(fused.eqns):
        return fused, impls
    return fused.replace(eqns=eqns), impls


def _members(graph: Graph) -> dict[int, bool]:
    """Per equation: a kernel, or a movement op with a ``program`` whose outputs only members
    read (decided from the last equation back)."""
    readers: dict[Var, list[Eqn]] = {}
    for e in graph.eqns:
        for v in e.in_vars():
            readers.setdefault(v, []).append(e)
    outvars = {v for v in graph.outvars if isinstance(v, Var)}
    member: dict[int, bool] = {}
    for e in reversed(graph.eqns):
        member[id(e)] = e.op is KERNEL_OP or (
            e.op.program is not None and len(e.outputs) == 1 and bool(e.in_vars())
            and not outvars.intersection(e.outputs)
            and all(member[id(r)] for v in e.outputs for r in readers.get(v, ())))
    return member


def _run_as_one(run: list[Eqn], compiled: dict, graph: Graph, options: dict,
                first_call: Callable) -> tuple[Eqn, Callable]:
    inputs = free_inputs(run)
    later = set(v for v in graph.outvars if isinstance(v, Var))
    seen_run = False
    members = {id(e) for e in run}
    for e in graph.eqns:
        if id(e) in members:
            seen_run = True
        elif seen_run:
            later.update(e.in_vars())
    outputs = [v for e in run for v in e.outputs if v in later]
    sizes = _Sizes()
    kernels = [compiled[id(e)] for e in run if e.op is KERNEL_OP]
    source, params = _render_program(run, kernels, outputs, sizes)
    # The kernels are the backend's own dispatchers, given to the module as globals: a kernel
    # compiles once however many programs call it. The text names each by its source's hash.
    module = _MODULE_HEADER + "".join(
        f"# kernel_{j}: {hashlib.sha256(k.ks.source.encode()).hexdigest()[:24]} "
        f"parallel={k.ks.parallel}\n" for j, k in enumerate(kernels))
    module += "\n\n" + source
    body = Graph(list(inputs), list(outputs), list(run), name="program")
    name = "+".join(e.params["name"] if e.op is KERNEL_OP else e.op.name for e in run)
    eqn = Eqn(KERNEL_OP, list(inputs), {"body": body, "name": name}, list(outputs),
              run[0].source)
    described = "; ".join(k.described for k in kernels)
    ns: dict = {"S": np.array(sizes.values or [0], dtype=np.int64)}

    def first(*args):  # the module is written (and compiled) only when the program first runs
        fn = _program(module, options, {f"kernel_{j}": k.dispatcher
                                        for j, k in enumerate(kernels)})
        ns["kernel"] = first_call(fn, described, ns)
        return ns["kernel"](*args)

    ns["kernel"] = first
    return eqn, _launcher(ns, inputs, params)


class _Writer:
    """What an op's ``program`` field renders with (see ``OpDef``)."""

    def __init__(self, sizes: _Sizes, bind: Callable, line: Callable, ndim: int,
                 dtype: str) -> None:
        self.size, self.shape = sizes.ref, sizes.shape
        self.bind, self.line = bind, line
        self.ndim, self.dtype = ndim, dtype


def _render_program(run: list[Eqn], kernels: list, outputs: list[Var],
                    sizes: _Sizes) -> tuple[str, list[tuple]]:
    """The program's source, and its array parameters: (value, shape it is reshaped to with
    leading 1s, or None), which the launcher passes."""
    names: dict[Var, str] = {}  # values computed inside the program
    views: set[Var] = set()  # ... by a movement op: maybe strided, maybe a view of a parameter
    scalars: dict[Var, str] = {}  # full reductions: a scalar until an array is needed
    params: list[tuple] = []
    lines: list[str] = []
    n_tmp = 0

    def line(statement: str) -> None:
        lines.append(f"    {statement}")

    def bind(expr: str) -> str:
        nonlocal n_tmp
        n_tmp += 1
        line(f"w{n_tmp} = {expr}")
        return f"w{n_tmp}"

    def array(v: Var) -> str:
        if v in scalars:
            shape = sizes.shape(tuple(v.shape))
            names[v] = bind(f"np.full({shape}, {scalars.pop(v)}, {npname(v.dtype.np)})")
        return names[v]

    def parameter(v: Var, pad: tuple | None) -> str:
        if (v, pad) not in params:
            params.append((v, pad))
        return f"a{params.index((v, pad))}"

    def padded_input(v: Var, padded: tuple) -> str:
        x = array(v)
        if padded == tuple(v.shape):
            return x
        if v in views and v.shape:  # (reshape needs a contiguous array)
            lead = "None, " * (len(padded) - len(v.shape))
            return bind(f"{x}[{lead}{', '.join(':' * len(v.shape))}]")
        return bind(f"{x}.reshape({sizes.shape(padded)})")

    kernel_of = iter(kernels)
    for e in run:
        if e.op is not KERNEL_OP:
            x = e.inputs[0]
            xname = array(x) if x in names or x in scalars else parameter(x, None)
            out = e.outputs[0]
            writer = _Writer(sizes, bind, line, len(x.shape), npname(out.dtype.np))
            names[out] = bind(e.op.program(writer, xname, **e.params))
            views.add(out)
            continue
        k = next(kernel_of)
        j = kernels.index(k)
        ks = k.ks
        d = len(ks.domain)
        args = [sizes.ref(n) for n in ks.domain]
        for v in ks.inputs:
            padded = (1,) * (d - len(v.shape)) + tuple(v.shape)
            if v in names or v in scalars:  # computed here
                args.append(padded_input(v, padded))
            else:
                args.append(parameter(v, padded if padded != tuple(v.shape) else None))
        slot: dict[Var, str] = {v: args[d + ks.inputs.index(u)] for v, u in ks.into.items()}
        for v in ks.outputs:
            slot[v] = bind(f"np.empty({sizes.shape(tuple(ks.domain))}, {npname(v.dtype.np)})")
            args.append(slot[v])
        for r in ks.reductions:
            keep = [sizes.ref(n) if n == dn else "1" for n, dn in zip(r.keep_shape, ks.domain)]
            shape = f"({', '.join(keep)}{',' if len(keep) == 1 else ''})"
            slot[r.var] = bind(f"np.full({shape}, {literal(r.identity, r.acc_dtype)}, "
                               f"{npname(r.acc_dtype)})")
            args.append(slot[r.var])
        for p in ks.partials:
            args.append(bind(f"np.full({sizes.shape(p.shape(ks.domain))}, "
                             f"{literal(p.identity, p.dtype)}, {npname(p.dtype)})"))
        ret = bind(f"kernel_{j}({', '.join(args)})")
        for i, r in enumerate(ks.returned):
            value = f"{ret}[{i}]"
            if r.final != "{acc}":
                value = r.final.format(acc=value, n=sizes.ref(r.count))
            scalars[r.var] = bind(f"{npname(r.var.dtype.np)}({value})")
        reduced = {r.var: r for r in ks.reductions}
        for v in k.body.outvars:
            if v in scalars:
                continue
            x = slot[v]
            r = reduced.get(v)
            if r is not None:
                if r.final != "{acc}":
                    x = bind(r.final.format(acc=x, n=sizes.ref(r.count)))
                if r.acc_dtype != v.dtype.np or r.final != "{acc}":
                    x = bind(f"{x}.astype({npname(v.dtype.np)})")
            if r is not None or tuple(v.shape) != tuple(ks.domain):
                x = bind(f"{x}.reshape({sizes.shape(tuple(v.shape))})")
            names[v] = x
    # a view made here would leave without the base the jit's alias checks follow: a copy
    results = [bind(f"{array(v)}.copy()") if v in views else array(v) for v in outputs]
    signature = ", ".join(["S"] + [f"a{i}" for i in range(len(params))])
    lines.insert(0, f"def program({signature}):")
    lines.append(f"    return ({', '.join(results)}{',' if len(results) == 1 else ''})")
    return "\n".join(lines) + "\n", params


def _program(module: str, options: dict, kernels: dict):
    fn = _PROGRAMS.get(module)
    if fn is None:
        import numba

        described = (f"program: fastmath={sorted(options['fastmath'])} error_model=numpy "
                     "nogil" + (" no_cfunc_wrapper" if options.get("no_cfunc_wrapper") else ""))
        py_func = kernel_cache.load_function(module, described, "program", kernels)
        if py_func is not None:
            fn = numba.njit(cache=True, **options)(py_func)
        else:
            namespace: dict = {"__name__": "jitgrad_program", **kernels}
            exec(builtins.compile(module, "<jitgrad program>", "exec"), namespace)  # noqa: S102
            fn = numba.njit(cache=False, **options)(namespace["program"])
        _PROGRAMS[module] = fn
    return fn


def _launcher(ns: dict, inputs: list[Var], params: list[tuple]) -> Callable:
    """``launch(*run_inputs)``: the program (``ns["kernel"]``) called with the sizes ``S`` and
    its parameters."""
    args = [f"x{inputs.index(v)}" + (f".reshape({pad!r})" if pad else "") for v, pad in params]
    source = (f"def launch({', '.join(f'x{i}' for i in range(len(inputs)))}):\n"
              f"    return kernel(S, {', '.join(args)})\n")
    exec(builtins.compile(source, "<jitgrad launch>", "exec"), ns)  # noqa: S102
    return ns["launch"]
