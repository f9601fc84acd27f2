"""The Numba CPU backend: fused loop kernels compiled with ``numba.njit``.

``compile(graph)`` takes a graph the pipeline fused with this backend's ``fusible`` rule
(``jit.passes``: ``index_maps``, ``fuse``, ``schedule``), renders every kernel with the shared
renderer (``backends.render``), compiles it with Numba (serial, ``error_model="numpy"``, the
fastmath subset ``FASTMATH``), and renders the whole program as one straight-line Python
function (``_pycode``) that calls the kernels, the tiled matrix product of ``backends.gemm`` for
``mm``/``addmm`` (or NumPy's BLAS, whichever is faster for the shape), and NumPy for the other
opaque ops and views, in order. Kernels are cached by their source text for the process: a second
trace with new sizes reuses the compiled code.

Equations Numba cannot or should not compile (float16 and complex dtypes, ops without a
template) stay single equations and run as the interpreter runs them: ``lower()`` shows them
outside any kernel.
"""

from __future__ import annotations

import builtins
import functools
import time
import weakref
from collections.abc import Callable

import numpy as np

from .. import _config
from .._ir import Eqn, Graph, Var, subgraphs
from ..jit.control_flow import CONTROL_FLOW, sub_runner_impl
from ..jit.passes.fuse import KERNEL_OP, domain_of
from ..ops.registry import POINTWISE
from .. import _pycode as pycode
from . import (compile_pool, gemm, in_place, kernel_cache, kernel_split, numba_chain,
               numba_program, numba_roofline)
from .numba_math import KERNEL_FASTMATH
from .render import (KERNEL_DTYPES, KernelSource, pointwise_text,
                     render_kernel, renderable)

# LLVM fast-math flags for kernels: reassociation (so reductions vectorize) and contraction
# (FMA), never nnan/ninf (see numba_math's docstring for why).
FASTMATH = KERNEL_FASTMATH

SUPPORTED = KERNEL_DTYPES

# The arrays a fused kernel equation outputs are allocated by its launcher (or its program):
# never views of its inputs, so the jit's call path need not check them for aliasing.
fresh_kernel_outputs = True

_HEADER = ("import numpy as np\n"
           "from numba import prange\n"
           "from jitgrad.backends.kernel_lib import *  # noqa: F403 - the template functions\n")

# A kernel with at least this much work runs its outermost loop on all of Numba's threads
# (``JITGRAD_PARALLEL_MIN``, default 2e7; 0 turns parallel kernels off). Work is elements x (ops
# + 8 per transcendental call): W1's kernel does about 40 per element, so 2e7 is W1 at 5e5
# elements. Smaller kernels would gain on an idle machine (on 2 cores, OpenMP: W1's kernel took
# 16 vs 10 us serial vs parallel at 1e4 elements, 157 vs 82 us at 1e5), but a parallel region
# waits for every worker to be scheduled: with other processes busy on the cores, W1 at 1e5
# took 12 ms per call in parallel instead of 0.2 ms serially. From 2e7 that wait is small beside
# the work (W1 at 1e7: 28.5 -> 18.8 ms in parallel, idle). Small kernels between matmuls stay
# serial. Parallel kernels and the tiled matrix products (``gemm``) run on Numba's default
# threading layer (tbb, else OpenMP, else workqueue; ``NUMBA_THREADING_LAYER`` chooses): OpenMP's
# workers wait spinning for the next region, which is what makes a 150 us product run on both
# cores, and since the products are no longer BLAS's, no BLAS threads compete with them (they
# starved each other: W2 took 160 ms with OpenMP kernels beside OpenBLAS products). workqueue
# wakes its workers too slowly for either (W2 2.8 ms, products at one core's speed).
PARALLEL_MIN = _config.parallel_min()
MATH_COST = 8
# Runs of consecutive kernels are called as one @njit program (backends/numba_program.py): one
# dispatch per run instead of a Python launcher per kernel. A program's glue costs Numba about
# as much compile time as a kernel, which pays only on a function called again and again: the
# first PROGRAM_AFTER_CALLS calls run the kernels one launch each, later calls the programs (a
# JIT's tiers; the persistent cache makes the later compile a load in the next process). LLVM
# optimizes a program with its kernels inlined, in time that grows faster than its length: only
# graphs of at most PROGRAM_MAX_OPS kernel ops become programs (a long graph's dispatches cost
# little beside its work; W6's 1600-step chain took minutes to compile as programs).
# A program pays only where launches cost about as much as the work, in a small graph: W4 (6
# kernels over 16 elements) and W5 (2 over 2). A program's glue (movement ops in nopython mode,
# each kernel typed again for the program's arrays) costs Numba about a second per few kernels:
# a two-layer transformer's forward and backward (35 and 38 kernels) took about 30 s to compile
# as programs at their 4th call, and then ran no faster than kernel by kernel, at batch 64
# (17-22k elements per kernel: 6.6 against 4.9 ms a step, a program's kernels being serial) as
# at batch 1 (1.9 against 1.7 ms); a compiled Adam step over 20 small parameters (16 kernels,
# 100 arrays) took 6-9 s, then ran no faster (337 against 317 us a step). So only graphs
# of at most PROGRAM_MAX_KERNELS kernels that cover at most PROGRAM_MAX_MEAN_SIZE elements on
# average become programs.
WHOLE_PROGRAMS = True
PROGRAM_AFTER_CALLS = 3
PROGRAM_MAX_OPS = 512
PROGRAM_MAX_KERNELS = 8
PROGRAM_MAX_MEAN_SIZE = 4096
# Longer graphs run as one chain of C calls (``numba_chain``) when they qualify.
CHAINS = True


class KernelCompileError(RuntimeError):
    """Numba failed to compile a kernel (names its ops and the user's source lines)."""


def _threads() -> int:
    import numba

    return numba.config.NUMBA_NUM_THREADS


def available() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def fusible(e: Eqn) -> bool:
    """Whether this backend puts ``e`` in a kernel."""
    if getattr(e.op.impl, "checks_integer_divisor", False) and _integer_divisor_may_be_zero(e):
        return False
    return renderable(e, SUPPORTED)


def _integer_divisor_may_be_zero(e: Eqn) -> bool:
    # An integer division by zero raises torch's "ZeroDivisionError" (ops.torch_extras): a
    # kernel could only raise by giving up its parallel loop, so the op runs unfused, as NumPy
    # plus the eager check. A nonzero literal divisor needs no check.
    a, b = e.inputs[0], e.inputs[1]
    if not isinstance(b, Var):
        return isinstance(a, Var) and a.dtype.np.kind in "iub" and isinstance(b, int) and b == 0
    return b.dtype.np.kind in "iub" and (not isinstance(a, Var) or a.dtype.np.kind in "iub")


# A value computed with a transcendental function (exp, tanh, ...) is recomputed in the
# backward only from this size on: below it the value stays in cache, and reading it back is
# cheaper than the polynomial (W1 at 1e5 elements: 380 -> 300 us; at 1e7, memory-bound,
# recomputing everything is faster).
RECOMPUTE_MATH_BYTES = 4 << 20
# Below this size every cheap value is recomputed: a saved array costs ~0.5 us per call (its
# allocation, its kernel argument, its reference in the backward node), more than computing a
# transcendental function over it (W4, 100 ops on 16 elements: forward 18 -> 3 us).
RECOMPUTE_SMALL_BYTES = 16 << 10
_MATH = tuple(f"_jg_{n}(" for n in ("exp", "log", "log1p", "expm1", "tanh", "sigmoid", "erf",
                                    "sin", "cos", "tan", "gelu_none", "gelu_tanh"))


def recomputable(e: Eqn) -> bool:
    """Pointwise equations this backend would rather recompute in the backward than save."""
    if e.op.kind != POINTWISE or not fusible(e):
        return False
    size = _nbytes(e.outputs[0])
    if size >= RECOMPUTE_MATH_BYTES or size <= RECOMPUTE_SMALL_BYTES:
        return True
    return not any(m in pointwise_text(e) for m in _MATH)


class CompiledKernel:
    """A rendered kernel, and (made on first use: a kernel called inside a whole program never
    needs them) its Numba dispatcher and the Python launcher the program calls."""

    def __init__(self, ks: KernelSource, body: Graph) -> None:
        self.ks = ks
        self.body = body
        self.described = _describe(body)

    @functools.cached_property
    def dispatcher(self):
        return _dispatcher(self.ks.source, self.ks.parallel)

    @functools.cached_property
    def launch(self) -> Callable:
        return _launcher(self.ks, self.body, self.dispatcher)

    def bytes_moved(self) -> tuple[int, int]:
        """(bytes read, bytes written) by one run of the kernel."""
        read = sum(_nbytes(v) for v in self.ks.inputs)
        written = sum(_nbytes(v) for v in self.body.outvars)
        return read, written


_DISPATCHERS: dict[str, object] = {}
compile_seconds = 0.0  # Numba compile (or cache load) time spent in this process


def _options(parallel: bool) -> dict:
    return {"fastmath": set(FASTMATH), "error_model": "numpy", "nogil": True,
            "parallel": parallel}


def _kernel_options(parallel: bool) -> dict:
    """A kernel's or program's ``njit`` options: without the C-callable wrapper Numba makes
    for every function by default (nothing calls a kernel through it; it cost 7-10% of W2's
    compile time). A chain's C callbacks keep ``_options``."""
    return {**_options(parallel), "no_cfunc_wrapper": True}


def _module(source: str, parallel: bool) -> tuple[str, str]:
    """A kernel's module text and the description of its options (its cache name covers both)."""
    return (_HEADER + source,
            f"fastmath={sorted(FASTMATH)} error_model=numpy nogil parallel={parallel} "
            "no_cfunc_wrapper")


def _dispatcher(source: str, parallel: bool = False):
    """The Numba dispatcher of a kernel: one per source in a process, its module file and
    machine code kept in the persistent kernel cache when its directory is writable."""
    fn = _DISPATCHERS.get(source)
    if fn is None:
        import numba

        options = _kernel_options(parallel)
        text, described = _module(source, parallel)
        py_func = kernel_cache.load_function(text, described)
        if py_func is not None:
            fn = numba.njit(cache=True, **options)(py_func)
        else:  # no usable cache directory: compile in memory
            namespace: dict = {}
            exec(builtins.compile(text, "<jitgrad kernel>", "exec"), namespace)  # noqa: S102
            fn = numba.njit(cache=False, **options)(namespace["kernel"])
        _DISPATCHERS[source] = fn
    return fn


def _nbytes(v: Var) -> int:
    return int(np.prod(v.shape, dtype=np.int64)) * v.dtype.itemsize


def _describe(body: Graph) -> str:
    ops = ", ".join(dict.fromkeys(e.op.name for e in body.eqns))
    lines = ", ".join(dict.fromkeys(e.source for e in body.eqns if e.source))
    return f"ops {ops}" + (f" from {lines}" if lines else "")


def _launcher(ks: KernelSource, body: Graph, fn) -> Callable:
    """``launch(*input_arrays) -> output arrays`` for one kernel, rendered as straight-line
    Python (no loops over argument lists: it runs once per kernel per call)."""
    d = len(ks.domain)
    ns: dict = {"empty": np.empty, "full": np.full, "asarray": np.asarray}
    lines = [f"def launch({', '.join(f'a{k}' for k in range(len(ks.inputs)))}):"]
    for k, v in enumerate(ks.inputs):
        padded = (1,) * (d - len(v.shape)) + tuple(v.shape)
        if padded != tuple(v.shape):
            lines.append(f"    a{k} = a{k}.reshape({padded!r})")
    for k, v in enumerate(ks.outputs):
        ns[f"D{k}"] = v.dtype.np
        lines.append(f"    o{k} = empty({tuple(ks.domain)!r}, D{k})")
    for k, r in enumerate(ks.reductions):
        ns[f"A{k}"], ns[f"I{k}"] = r.acc_dtype, r.identity
        lines.append(f"    r{k} = full({r.keep_shape!r}, I{k}, A{k})")
    for k, p in enumerate(ks.partials):
        ns[f"PD{k}"], ns[f"PI{k}"] = p.dtype, p.identity
        lines.append(f"    p{k} = full({p.shape(ks.domain)!r}, PI{k}, PD{k})")
    args = [repr(int(n)) for n in ks.domain] + [f"a{k}" for k in range(len(ks.inputs))] + \
        [f"o{k}" for k in range(len(ks.outputs))] + \
        [f"r{k}" for k in range(len(ks.reductions))] + [f"p{k}" for k in range(len(ks.partials))]
    lines.append(f"    ret = kernel({', '.join(args)})")
    slot = {v: f"o{k}" for k, v in enumerate(ks.outputs)}
    slot.update((v, f"a{ks.inputs.index(u)}") for v, u in ks.into.items())  # written in place
    slot.update((r.var, f"r{k}") for k, r in enumerate(ks.reductions))
    for k, r in enumerate(ks.returned):  # (a NumPy scalar: a mean of nothing is nan, as eager)
        ns[f"R{k}"] = np.dtype(r.acc_dtype).type
        slot[r.var] = f"R{k}(ret[{k}])"
    reduced = {r.var: r for r in ks.reductions + ks.returned}
    results = []
    for j, v in enumerate(body.outvars):
        value = slot[v]
        r = reduced.get(v)
        if r is not None:
            if r.final != "{acc}":
                value = r.final.format(acc=value, n=repr(r.count))
            ns[f"T{j}"] = v.dtype.np
            value = f"asarray({value}, T{j})"
        if r is not None or tuple(v.shape) != tuple(ks.domain):
            value = f"{value}.reshape({tuple(v.shape)!r})"
        results.append(value)
    lines.append(f"    return ({', '.join(results)},)")
    ns["kernel"] = _first_call(fn, _describe(body), ns)
    exec(builtins.compile("\n".join(lines) + "\n", "<jitgrad launch>", "exec"), ns)  # noqa: S102
    return ns["launch"]


def _first_call(fn, described: str, ns: dict) -> Callable:
    """The kernel's first call: compiles or loads it from the cache (timed, counted, with a
    clear error), then puts the dispatcher itself in the launcher's namespace."""
    def first(*args):
        global compile_seconds
        t0 = time.perf_counter()
        known, hits = len(fn.overloads), sum(fn.stats.cache_hits.values())
        key = (fn.py_func.__module__ or "").rpartition("_")[2]  # (its cache module's name)
        helped = compile_pool.handed(key) and compile_pool.wait(key)
        kernel_cache.load_overload(fn, args)
        try:
            ret = fn(*args)
        except Exception as err:
            import numba

            if isinstance(err, numba.core.errors.NumbaError):
                raise _compile_error(described, err) from None
            if getattr(fn._cache, "_cache_path", None) is None:  # compiled in memory
                raise
            ret = _recover(fn, err, args)
        if len(fn.overloads) > known:  # (else another launcher compiled it already)
            compile_seconds += time.perf_counter() - t0
            kernel_cache.count(not helped and sum(fn.stats.cache_hits.values()) > hits)
        ns["kernel"] = fn
        return ret

    return first


def _compile_error(described: str, err: Exception) -> KernelCompileError:
    return KernelCompileError(
        f"jitgrad.jit: Numba could not compile a fused kernel ({described}): "
        f"{str(err).splitlines()[0]}. Use backend='interpreter' for this "
        "function and report the ops above.")


def _made(make: Callable, described: str):
    """``make()``: a chain's kernel compiled (or loaded from the cache), timed and counted, with
    the error a kernel's first call gives when Numba cannot compile it."""
    global compile_seconds
    import numba

    t0 = time.perf_counter()
    try:
        fn = make()
    except numba.core.errors.NumbaError as err:
        raise _compile_error(described, err) from None
    compile_seconds += time.perf_counter() - t0
    kernel_cache.count(fn.cache_hits > 0)
    return fn


def _recover(fn, err: Exception, args: tuple):
    """A Numba cache file that cannot be loaded (truncated, corrupt): drop it, warn, and
    compile the kernel again."""
    kernel_cache.unloadable(fn.py_func.__code__.co_filename, fn._cache._cache_path, err,
                            stacklevel=4)
    return fn(*args)


_LOWERED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def lower(graph: Graph, donate: dict[int, int] | None = None
          ) -> tuple[Graph, list[CompiledKernel]]:
    """A fused graph (the pipeline's ``fuse`` stage ran with this backend's ``fusible``) with
    its kernels that touch too many arrays split (``kernel_split``), and its kernels rendered
    and ready to compile; those that can write outputs into input arrays do (``ks.into``, from
    ``in_place.plan`` of ``donate``: output position -> position of the input it is the new
    value of). Cached per graph and ``donate``."""
    key = frozenset((donate or {}).items())
    by_graph = _LOWERED.setdefault(graph, {})
    hit = by_graph.get(key)
    if hit is None:
        fused = kernel_split.split_wide_kernels(graph)
        into = in_place.plan(fused, donate) if donate else {}
        kernels = []
        for e in fused.eqns:
            if e.op is KERNEL_OP:
                body = e.params["body"]
                mine = {v: into[v] for v in body.outvars if v in into}
                serial = render_kernel(body, "kernel", into=mine)
                size = int(np.prod(domain_of(body.eqns[0]), dtype=np.int64))
                work = size * (serial.n_ops + MATH_COST * serial.source.count("_jg_"))
                if 0 < PARALLEL_MIN <= work and _threads() > 1:
                    serial = render_kernel(body, "kernel", parallel=True, into=mine)
                kernels.append(CompiledKernel(serial, body))
        hit = by_graph[key] = (fused, kernels)
    return hit


# Opaque ops this backend runs with its own implementation instead of the op's NumPy impl.
_OPAQUE_OPS = ("mm", "addmm")


# ``compile`` takes ``donate`` (see ``in_place``)
donates_inputs = True


def compile(graph: Graph, donate: dict[int, int] | None = None  # noqa: A001 - the interface
            ) -> Callable[[list], list]:
    """A function mapping the graph's input arrays to its output arrays.

    ``donate`` maps output positions to the positions of the inputs they are the new values of
    (a program's in-place updates): the kernels write those they can straight into the input
    arrays (``in_place.plan``), and the function's ``donated`` attribute lists their output
    positions. The caller must then pass arrays that can take the writes."""
    if donate and CHAINS and not _as_programs(graph):
        donate = None  # (a chain's kernels allocate all their outputs)
    fused, kernels = lower(graph, donate)
    run = _compile_fused(fused, kernels)
    into = {v for k in kernels for v in k.ks.into}
    run.donated = frozenset(slot for slot, v in enumerate(fused.outvars) if v in into)
    return run


def _as_programs(graph: Graph) -> bool:
    """Whether ``compile`` runs the graph's kernels in whole programs (``numba_program``)."""
    return WHOLE_PROGRAMS and sum(len(e.params["body"].eqns) for e in graph.eqns
                                  if e.op is KERNEL_OP) <= PROGRAM_MAX_OPS


def _programs_pay(graph: Graph) -> bool:
    """Whether the graph is small enough, in kernels and in their sizes, for programs to pay."""
    sizes = [int(np.prod(domain_of(e.params["body"].eqns[0]), dtype=np.int64))
             for e in graph.eqns if e.op is KERNEL_OP]
    return len(sizes) <= PROGRAM_MAX_KERNELS and \
        sum(sizes) <= PROGRAM_MAX_MEAN_SIZE * max(len(sizes), 1)


def _compile_fused(fused: Graph, kernels: list) -> Callable[[list], list]:
    launchers = iter(k.launch for k in kernels)
    impls = {id(e): next(launchers) for e in fused.eqns if e.op is KERNEL_OP}
    opaque = gemm.implementations()
    impls.update({id(e): opaque[e.op.name] for e in fused.eqns
                  if e.op.name in _OPAQUE_OPS and not e.params})
    # control flow (cond, while_loop): never fused, a boundary between kernels; it runs the
    # sub-graph it selects, each compiled through this same path once, with this program
    impls.update({id(e): sub_runner_impl(e, compile_subgraph) for e in fused.eqns
                  if e.op in CONTROL_FLOW})
    by_kernel = pycode.compile_function(fused, "program", impl_for=lambda e: impls.get(id(e)))
    grouped = fused
    as_programs = _as_programs(fused)
    if as_programs:
        _hand_over(fused, kernels)
        if not _programs_pay(fused):
            return _settled(by_kernel, 0)
        grouped, programs = numba_program.group(fused, kernels, _kernel_options(False),
                                                _first_call)
    elif CHAINS:
        chain = numba_chain.plan(fused, kernels)
        if chain is not None:
            return _settled(numba_chain.build(chain, _HEADER, _options(False), _made), 0)
    if grouped is fused:
        if not as_programs:  # (else handed over above)
            _hand_over(fused, kernels)
        run = _settled(by_kernel, 0)
    else:
        whole = pycode.compile_function(grouped, "program",
                                        impl_for=lambda e: programs.get(id(e), impls.get(id(e))))
        if PROGRAM_AFTER_CALLS <= 0:
            run = _settled(whole, 0)
        else:
            left = PROGRAM_AFTER_CALLS

            def run(inputs: list) -> list:  # kernel by kernel first, then the programs
                nonlocal left
                if left:
                    left -= 1
                    return list(by_kernel(*inputs))
                return list(whole(*inputs))
            run.final, run.after = whole, PROGRAM_AFTER_CALLS
    return run


def _hand_over(fused: Graph, kernels: list) -> None:
    """Kernels this process has yet to compile go to a helper process too (``compile_pool``)."""
    if len(kernels) >= compile_pool.MIN_COLD_KERNELS and compile_pool.enabled():
        compile_pool.hand_over(kernels, compile_pool.predicted_types(fused, kernels),
                               lambda ks: _module(ks.source, ks.parallel),
                               lambda ks: _kernel_options(ks.parallel))


_SUB_FUSED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def fused_subgraph(graph: Graph) -> Graph:
    """A control-flow equation's sub-graph through the pipeline's forward and fusing stages
    for this backend (cached per sub-graph)."""
    from ..jit.passes import Program, Target, run as run_passes

    hit = _SUB_FUSED.get(graph)
    if hit is None:
        hit = _SUB_FUSED[graph] = run_passes(Program(graph),
                                             Target(None, recomputable, fusible)).forward
    return hit


def compile_subgraph(graph: Graph) -> Callable[[list], list]:
    """A control-flow sub-graph compiled as ``compile`` compiles a program: ``run(arrays) ->
    arrays``."""
    return compile(fused_subgraph(graph))


def _settled(program: Callable, after: int) -> Callable:
    """``run(inputs: list) -> list``, and what a caller's lean path may call instead once
    ``run`` has run ``after`` times: ``run.final(*arrays) -> tuple`` (this backend's kernels
    return fresh arrays: ``fresh_kernel_outputs``)."""
    def run(inputs: list) -> list:
        return list(program(*inputs))

    run.final, run.after = program, after
    return run


def render(graph: Graph) -> str:
    """Each kernel of a fused program (its IR shows the kernels): source and traffic."""
    fused, kernels = lower(graph)
    parts = []
    for e, k in zip((e for e in fused.eqns if e.op is KERNEL_OP), kernels):
        read, written = k.bytes_moved()
        parts.append(f"# {e.params['name']}: {k.ks.n_ops} ops over {list(k.ks.domain)}, "
                     f"reads {read} B, writes {written} B")
        parts.append(k.ks.source.rstrip())
    for e in fused.eqns:  # the kernels of each control-flow sub-graph, after the program's
        if e.op in CONTROL_FLOW:
            for g in subgraphs(e, printed=True):
                sub = render(fused_subgraph(g))
                if sub:
                    parts.append(f"# ---- {e.op.name} sub-graph {g.name} ----")
                    parts.append(sub)
    return "\n".join(parts)


def diagnose(graph: Graph, arrays: list) -> str | None:
    """The first kernel whose outputs differ from the interpreter's on ``arrays`` (for
    ``jit(check=True)``), described; None if every kernel agrees."""
    from .interpreter import mismatch
    from .interpreter import compile as interpret

    every = [v for e in graph.eqns for v in e.outputs]
    reference = interpret(graph.replace(outvars=every, n_saved=0))(list(arrays))
    env = dict(zip(graph.invars, arrays))
    env.update((v, t._data) for v, t in graph.consts.items())
    env.update(zip(every, reference))
    fused, kernels = lower(graph)
    names = fused.names()
    for e, k in zip((e for e in fused.eqns if e.op is KERNEL_OP), kernels):
        with np.errstate(all="ignore"):
            got = k.launch(*[env[v] for v in e.inputs])
        for v, a in zip(e.outputs, got):
            why = mismatch(a, env[v], v.dtype.name)
            if why:
                return (f"the first kernel that differs from the interpreter is "
                        f"{e.params['name']} ({_describe(k.body)}): its output {names[v]} "
                        f"has {why}")
    return None


def roofline(graph: Graph, arrays: list, repeat: int = 7) -> str:
    """Runs ``graph`` on ``arrays`` and reports each kernel's median time, its bytes moved and
    their share of the copy bandwidth, and each matrix product's rate (``numba_roofline``)."""
    fused, kernels = lower(graph)
    return numba_roofline.report(graph, fused, kernels, _OPAQUE_OPS, arrays, repeat)
