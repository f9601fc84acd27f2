"""Long fused graphs as one chain of C calls: kernels compiled once, called through pointers.

A graph of a few hundred kernels (W6: a 1600-step chain is 160 kernels) cannot be one Numba
program: Numba links every kernel a program calls into the program's module and LLVM optimizes
each copy again (10 programs of 16 kernels took 59 s). Called one by one from Python, each
kernel costs a launcher and a Numba dispatch that types all its array arguments, about 2.5 us.

Here each distinct kernel is compiled once as a C callback (``numba.cfunc``): its arguments are
the domain sizes and one pointer per array, and its wrapper does what the launcher did
(accumulators set to the reduction's identity, ``final`` and the cast applied, full reductions
stored). The graph becomes a small LLVM function, built with llvmlite in milliseconds, that
calls the kernels by address in order: intermediates live at fixed offsets of one workspace
(reused once their last reader ran), graph outputs in fresh arrays. Python calls it once
through ``ctypes`` with the arrays themselves; the chain reads each array's data pointer from
the NumPy object (its offset found at import by looking, so no C extension is needed).

A graph qualifies when every equation is a serial kernel with a non-empty domain or a reshape of
contiguous data (``ops.movement.reshape_program``), and every output comes from a kernel: then
all its arrays are contiguous and their bytes are known when it is built.
"""

from __future__ import annotations

import builtins
import ctypes
import sys
from collections.abc import Callable

import numpy as np

from .._ir import Graph, Var
from ..jit.passes.fuse import KERNEL_OP
from ..ops.movement import reshape_program
from . import compile_pool, kernel_cache
from .render import literal, npname

_ALIGN = 64


def _find_data_offset() -> int | None:
    """Where a NumPy array object keeps its data pointer (``PyArrayObject_fields.data``)."""
    probes = [np.empty(3), np.empty(5, np.int8)]
    found = None
    for a in probes:
        raw = ctypes.string_at(id(a), 64)
        hits = [off for off in range(8, 57, 8)
                if int.from_bytes(raw[off:off + 8], sys.byteorder) == a.ctypes.data]
        if len(hits) != 1 or found not in (None, hits[0]):
            return None
        found = hits[0]
    return found


DATA_OFFSET = _find_data_offset() if sys.maxsize > 2 ** 32 else None


def _shape_text(dims: list[str]) -> str:
    return f"({', '.join(dims)}{',' if len(dims) == 1 else ''})"


def wrapper_source(ks) -> tuple[str, int] | None:
    """The C callback ``entry`` for a rendered kernel, and its argument count: the domain
    sizes, then one pointer per input, full-size output, partial and full reduction. The
    kernel's body is spliced in (a nested ``njit`` call would be compiled and optimized twice):
    its arrays become views of the pointers, its ``return`` the finishing of its reductions.
    None if the kernel's source is not one function ending in its only ``return``."""
    head, *body = ks.source.rstrip().splitlines()
    if not head.startswith("def kernel(") or not body or not body[-1].startswith("    return ") \
            or any(line.lstrip().startswith("return") for line in body[:-1]):
        return None
    d = len(ks.domain)
    sizes = [f"n{k}" for k in range(d)]

    def dims(shape: tuple) -> str:
        padded = (1,) * (d - len(shape)) + tuple(shape)
        return _shape_text([f"n{k}" if n == ks.domain[k] else "1" for k, n in enumerate(padded)])

    params = list(sizes)
    setup: list[str] = []
    finish: list[str] = []
    for j, v in enumerate(ks.inputs):
        params.append(f"pa{j}")
        setup.append(f"a{j} = carray(pa{j}, {dims(v.shape)}, {npname(v.dtype.np)})")
    for j, v in enumerate(ks.outputs):
        params.append(f"po{j}")
        setup.append(f"o{j} = carray(po{j}, {_shape_text(sizes)}, {npname(v.dtype.np)})")
    for j, r in enumerate(ks.reductions):
        params.append(f"pr{j}")
        keep = dims(r.keep_shape)
        count = "*".join(f"n{k}" for k, n in enumerate(r.keep_shape) if n == 1) or "1"
        identity = literal(r.identity, r.acc_dtype)
        dt = npname(r.var.dtype.np)
        if r.final == "{acc}" and np.dtype(r.acc_dtype) == r.var.dtype.np:
            setup.append(f"r{j} = carray(pr{j}, {keep}, {dt})")
        else:  # (accumulated apart, then finished into the output)
            setup.append(f"r{j} = np.empty({keep}, {npname(r.acc_dtype)})")
            value = r.final.format(acc=f"r{j}", n=f"({count})")
            finish.append(f"carray(pr{j}, (r{j}.size,), {dt})[:] = "
                          f"np.asarray({value}).astype({dt}).ravel()")
        setup.append(f"r{j}.fill({identity})")
    for j, p in enumerate(ks.partials):  # (allocated here: the chain passes no such array)
        setup.append(f"p{j} = np.full({p.shape_text(d)}, {literal(p.identity, p.dtype)}, "
                     f"{npname(p.dtype)})")
    for j, r in enumerate(ks.returned):
        params.append(f"ps{j}")
        dt = npname(r.var.dtype.np)
        value = r.final.format(acc=f"jg_ret[{j}]", n=f"({'*'.join(sizes) or '1'})")
        finish.append(f"carray(ps{j}, (1,), {dt})[0] = {dt}({value})")
    returned = body[-1].replace("    return ", "    jg_ret = ", 1)
    lines = [f"def entry({', '.join(params)}):", *(f"    {line}" for line in setup),
             *body[:-1], returned, *(f"    {line}" for line in finish)]
    return "\n".join(lines) + "\n", len(params)


_MODULE = "from numba import carray\n"
_CFUNCS: dict[str, object] = {}


def _cfunc(ck, wrapped: tuple[str, int], header: str, options: dict, timed: Callable):
    """The kernel ``ck`` compiled as a C callback (once per source in a process; through the
    persistent kernel cache like every kernel). ``timed(make, described)`` makes it: timed,
    counted, Numba's errors explained."""
    import numba

    text, signature, described = _cfunc_module(ck, wrapped, header, options)
    fn = _CFUNCS.get(text)
    if fn is None:
        py_func = kernel_cache.load_function(text, described, "entry")
        if py_func is None:  # no usable cache directory: compile in memory
            namespace: dict = {"__name__": "jitgrad_chain_kernel"}
            exec(builtins.compile(text, "<jitgrad chain kernel>", "exec"), namespace)  # noqa: S102
            fn = timed(lambda: numba.cfunc(signature, **options)(namespace["entry"]),
                       ck.described)
        else:
            def make():
                from numba.core import sigutils
                from numba.core.ccallback import CFunc

                made = CFunc(py_func, sigutils.normalize_signature(signature), locals={},
                             options=options)  # (what numba.cfunc makes, before compile())
                made.enable_caching()
                key = kernel_cache.module_name(text, described)
                helped = compile_pool.handed(key) and compile_pool.wait(key)
                if kernel_cache.load_cfunc(made):
                    if helped:  # (compiled for this call, if by the helper: not a cache hit)
                        made._cache_hits -= 1
                    return made
                try:
                    made.compile()
                    return made
                except numba.core.errors.NumbaError:
                    raise
                except Exception as err:  # noqa: BLE001 - a cache file Numba cannot load
                    path = py_func.__code__.co_filename
                    kernel_cache.unloadable(path, path, err, stacklevel=6)
                    return numba.cfunc(signature, cache=True, **options)(py_func)

            fn = timed(make, ck.described)
        _CFUNCS[text] = fn
    return fn


def _cfunc_module(ck, wrapped: tuple[str, int], header: str, options: dict) -> tuple:
    """A chain kernel's C callback: its module text, signature and options' description."""
    from numba import types

    wrapper, n_args = wrapped
    d = len(ck.ks.domain)
    signature = types.void(*([types.intp] * d + [types.voidptr] * (n_args - d)))
    described = (f"chain kernel: fastmath={sorted(options['fastmath'])} error_model=numpy "
                 "nogil")
    return header + _MODULE + "\n\n" + wrapper, signature, described


def _hand_over(chain, header: str, options: dict) -> None:
    """The chain's kernels not compiled in this process go to a helper process too."""
    if not compile_pool.enabled():
        return
    jobs = {}
    for ck, wrapped in chain.kernels:
        text, signature, described = _cfunc_module(ck, wrapped, header, options)
        if text not in _CFUNCS:
            key = kernel_cache.module_name(text, described)
            jobs[key] = compile_pool.Job(key, text, described, options, signature, cfunc=True)
    compile_pool.hand_over_jobs(list(jobs.values()))


class Chain:
    """Where each value of a qualifying graph lives: ``("in", i)`` the i-th input array,
    ``("out", i)`` the i-th output array, ``("ws", offset)`` the workspace (``size`` bytes)."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.size = 0
        self.place: dict[Var, tuple] = {}
        self.kernels: list = []  # (compiled kernel, its wrapper_source), in call order
        self.outputs: list[Var] = []  # the outputs the chain writes (each once, in order)
        self.views: list[tuple] = []  # (output, the value it reshapes): returned as views


def plan(fused: Graph, kernels: list) -> Chain | None:
    """How ``fused`` runs as a chain, or None when it does not qualify."""
    if DATA_OFFSET is None:
        return None
    chain = Chain(fused)
    given = [*fused.invars, *fused.consts]
    for i, v in enumerate(given):
        chain.place[v] = ("in", i)
    returned = {v for v in fused.outvars if isinstance(v, Var)}
    reshaped = {e.outputs[0]: e.inputs[0] for e in fused.eqns
                if e.op.program is reshape_program and len(e.outputs) == 1}

    def root(v: Var) -> Var:
        while v in reshaped:
            v = reshaped[v]
        return v

    # Inputs and constants are returned as they are, reshapes as views of an output array (of
    # the value they reshape, made an output if it was not), as the interpreter returns them.
    chain.views = [(v, root(v)) for v, x in reshaped.items() if v in returned]
    made = [v for v in fused.outvars if v in returned and v not in reshaped]
    made += [r for _, r in chain.views]
    chain.outputs = [v for v in dict.fromkeys(made) if v not in chain.place]
    for i, v in enumerate(chain.outputs):
        chain.place[v] = ("out", i)
    last_use: dict[Var, int] = {}
    for k, e in enumerate(fused.eqns):
        for v in e.in_vars():
            last_use[v] = k
    free: list[tuple[int, int]] = []  # (bytes, offset) of workspace blocks no value holds
    kernel_of = iter(kernels)
    shared: set[tuple] = set()

    def allocate(v: Var) -> None:
        need = -(-_nbytes(v) // _ALIGN) * _ALIGN or _ALIGN
        fits = [b for b in free if b[0] >= need]
        if fits:
            block = min(fits)
            free.remove(block)
            chain.place[v] = ("ws", block[1])
            if block[0] > need:
                free.append((block[0] - need, block[1] + need))
        else:
            chain.place[v] = ("ws", chain.size)
            chain.size += need

    for k, e in enumerate(fused.eqns):
        if e.op is KERNEL_OP:
            ck = next(kernel_of)
            wrapped = None if ck.ks.parallel or not ck.ks.domain or 0 in ck.ks.domain \
                else wrapper_source(ck.ks)
            if wrapped is None:
                return None
            for v in e.outputs:
                if v not in chain.place:
                    allocate(v)
            chain.kernels.append((ck, wrapped))
        elif e.op.program is reshape_program and len(e.outputs) == 1:
            x, out = e.inputs[0], e.outputs[0]
            chain.place[out] = chain.place[x]
            shared.add(chain.place[x])  # (two names for one block: never reused)
        else:
            return None
        for v in e.in_vars():
            where = chain.place[v]
            if last_use[v] == k and where[0] == "ws" and where not in shared:
                free.append((-(-_nbytes(v) // _ALIGN) * _ALIGN or _ALIGN, where[1]))
    return chain


def _nbytes(v: Var) -> int:
    return int(np.prod(v.shape, dtype=np.int64)) * v.dtype.itemsize


def build(chain: Chain, header: str, options: dict, timed: Callable) -> Callable:
    """``run(*input_arrays) -> tuple of output arrays``: the kernels compiled (or loaded from
    the cache), the chain built, and the Python function that calls it."""
    from llvmlite import ir

    graph = chain.graph
    n_in = len(graph.invars) + len(graph.consts)
    outs = chain.outputs
    i8p = ir.IntType(8).as_pointer()
    i64 = ir.IntType(64)
    module = ir.Module(name="jitgrad_chain")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [i8p] * (n_in + len(outs) + 1)),
                     name="jitgrad_chain")
    b = ir.IRBuilder(fn.append_basic_block())

    def data(obj):  # the array object's data pointer
        slot = b.bitcast(b.gep(obj, [ir.Constant(i64, DATA_OFFSET)]), i8p.as_pointer())
        return b.load(slot)

    arrays = [data(a) for a in fn.args]
    workspace = arrays[-1]

    def pointer(v: Var):
        kind, where = chain.place[v]
        if kind == "in":
            return arrays[where]
        if kind == "out":
            return arrays[n_in + where]
        return b.gep(workspace, [ir.Constant(i64, where)])

    keep = []
    _hand_over(chain, header, options)
    for ck, wrapped in chain.kernels:
        kernel = _cfunc(ck, wrapped, header, options, timed)
        keep.append(kernel)
        ks = ck.ks
        args = [ir.Constant(i64, int(n)) for n in ks.domain]
        args += [pointer(v) for v in ks.inputs]
        args += [pointer(v) for v in ks.outputs]
        args += [pointer(r.var) for r in ks.reductions]
        args += [pointer(r.var) for r in ks.returned]
        callee = ir.FunctionType(ir.VoidType(), [a.type for a in args]).as_pointer()
        b.call(b.inttoptr(ir.Constant(i64, kernel.address), callee), args)
    b.ret_void()
    address, library = _jit(str(module))
    call = ctypes.CFUNCTYPE(None, *([ctypes.py_object] * len(fn.args)))(address)
    return _entry(chain, call, (library, keep))


def _jit(text: str):
    """Compiles LLVM IR with Numba's own code generator (its target machine and JIT engine)."""
    from llvmlite import binding as llvm
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target

    with global_compiler_lock:
        codegen = cpu_target.target_context.codegen()
        library = codegen.create_library("jitgrad_chain")
        parsed = llvm.parse_assembly(text)
        parsed.verify()
        library.add_llvm_module(parsed)
        library.finalize()
        return library.get_pointer_to_function("jitgrad_chain"), library


def _entry(chain: Chain, call, keep) -> Callable:
    """The chain's Python side, as straight-line source: inputs made contiguous, outputs and
    the workspace allocated, one call."""
    graph = chain.graph
    ns: dict = {"call": call, "keep": keep, "empty": np.empty, "contiguous": np.ascontiguousarray,
                "reshape": np.reshape, "uint8": np.uint8}
    inputs = [f"a{i}" for i in range(len(graph.invars))]
    lines = [f"def run({', '.join(inputs)}):"]
    name = dict(zip(graph.invars, inputs))
    for i, (v, t) in enumerate(graph.consts.items()):
        ns[f"const{i}"] = t
        name[v] = f"c{i}"
        lines.append(f"    c{i} = const{i}._data")
    passed = []
    for v in [*graph.invars, *graph.consts]:
        p = f"p{len(passed)}"
        lines += [f"    {p} = {name[v]}", f"    if not {p}.flags.c_contiguous:",
                  f"        {p} = contiguous({p})"]
        passed.append(p)
    for j, v in enumerate(chain.outputs):
        ns[f"D{j}"] = v.dtype.np
        lines.append(f"    o{j} = empty({tuple(v.shape)!r}, D{j})")
        name[v] = f"o{j}"
        passed.append(f"o{j}")
    lines.append(f"    call({', '.join(passed)}, empty({max(chain.size, 1)}, uint8))")
    for j, (v, x) in enumerate(chain.views):
        lines.append(f"    v{j} = reshape({name[x]}, {tuple(v.shape)!r})")
        name[v] = f"v{j}"
    returned = [name[v] if isinstance(v, Var) else "None" for v in graph.outvars]
    lines.append(f"    return ({', '.join(returned)}{',' if len(returned) == 1 else ''})")
    exec(builtins.compile("\n".join(lines) + "\n", "<jitgrad chain>", "exec"), ns)  # noqa: S102
    return ns["run"]
