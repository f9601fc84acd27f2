"""``JitFunction``: the object ``jit(fn)`` returns, and the one autograd Node its outputs share.

Each call flattens the arguments (tensors may sit in tuples, lists and dicts; everything else
is static), builds the cache key (see ``cache.py``) and, on a miss or a failed guard, traces the
function, runs the pass pipeline (with the VJP and partition passes when grad mode is on and an
input requires grad) and compiles the forward and backward graphs with the backend. Outputs are
ordinary tensors; the differentiable ones share one ``CompiledFunctionBackward`` node that holds
the residuals and runs the compiled backward program (or, under ``create_graph=True``, recomputes
the forward and runs the backward graph through eager ops so higher derivatives are right).
"""

from __future__ import annotations

import functools
import time
import warnings
from typing import Any

import numpy as np

from ..autograd.node import FREED, Node, _edge, check_version
from ..backends import check_name, get_backend
from ..ops import registry
from ..ops.registry import state
from ..tensor import Tensor, _make
from . import cache
from ._memory import root_of, shares_any, writable_in_place
from .lowered import Lowered
from .._ir import Graph
from .passes import Target, compile_program
from .passes.fuse import KERNEL_OP
from .._tracer import active, graph_of
from .staging import Trace


class _Entry:
    """One compiled specialization of a function."""

    def __init__(self) -> None:
        self.fwd: Graph | None = None
        self.bwd: Graph | None = None
        self.fwd_run = self.bwd_run = None
        self.implicit: list = []  # (weakref or getter, shape, dtype, requires_grad)
        self.guards: cache.Guards | None = None
        self.n_explicit = 0
        self.n_user = 0
        self.n_slots = 0  # user outputs + written-back mutations
        self.out_spec: Any = None
        self.mutations: list[tuple[int, int]] = []  # (input index, output slot)
        # the mutations whose kernels write into the input's array (backends.in_place)
        self.donated: list[tuple[int, int]] = []
        self.tangent_slots: list[int] = []
        self.wrt: list[bool] = []
        self.backend: Any = None
        self.rng_vars: set = set()
        self.guarded = False  # has captured tensors or guards to check before a call
        self.const_roots: frozenset = frozenset()  # ids of the constants' memory owners
        self.tangent_types: list = []  # (slot, shape, NumPy dtype) of each tangent
        self.used = 0  # the function's call count when this entry last ran (for the LRU)
        self.fresh = True  # not run yet: its first run compiles (or loads) the kernels
        # the lean runner (``_lean_runner``), made once the entry has run ``lean_after`` more
        # times (its backend's programs settled); -1: this entry has none
        self.lean: Any = None
        self.lean_after = 0
        self.after_call: list = []  # deferred Python (``Trace.defer``), run after each call

    def check(self) -> str | None:
        """None if the captured state still matches, else why it does not."""
        return self.fetch()[0]

    def fetch(self) -> tuple[str | None, list]:
        """The captured tensors as they are now (for ``_run``), and None if they and the
        guards still match, else why they do not."""
        tensors = []
        for k, (ref, shape, dt, rg) in enumerate(self.implicit):
            t = ref()
            if t is None:
                return f"captured tensor {k} was freed", tensors
            if t._data.shape != shape or t._dtype is not dt or t.requires_grad != rg:
                return (f"captured tensor {k} changed from {shape}/{dt}/requires_grad={rg} to "
                        f"{tuple(t.shape)}/{t.dtype}/requires_grad={t.requires_grad}"), tensors
            tensors.append(t)
        return (self.guards.check() if self.guards is not None else None), tensors


class CompiledFunctionBackward(Node):
    """The backward of one call of a jit function: runs its compiled backward program."""

    __slots__ = ("_entry", "_inputs", "_residuals", "_checks", "_versions", "_freed",
                 "_all_edges")

    def __init__(self, entry: _Entry, inputs: list, residuals: list, checks: list) -> None:
        super().__init__(tuple(_edge(t) for t in inputs))
        self._entry = entry
        self._inputs = inputs
        self._residuals = residuals
        self._checks = checks  # (input, version) for inputs the residuals alias
        self._versions: list = []  # every input's version, for the create_graph recompute
        self._freed = False
        self._all_edges = None not in self._next and len(self._next) == len(entry.bwd.outvars)

    @property
    def n_outputs(self) -> int:
        return self._entry.n_slots

    def _output_meta(self, i: int) -> registry.Meta:
        return self._entry.fwd.outvars[i].meta

    def apply(self, grad_outputs: list) -> tuple:
        from ..backends.interpreter import run_eager
        from ..ops.creation import zeros

        if self._freed:
            raise RuntimeError(FREED)
        for t, version in self._checks:
            check_version(t._vc, version, t._data, t._dtype, "CompiledFunction")
        e = self._entry
        tangents = []
        for s in e.tangent_slots:
            m = self._output_meta(s)
            g = grad_outputs[s] if s < len(grad_outputs) else None
            if g is None:
                g = zeros(m.shape, dtype=m.dtype)
            elif g.dtype is not m.dtype:
                g = g.to(m.dtype)
            tangents.append(g)
        if state.grad_enabled:  # create_graph=True: differentiable backward through eager ops
            if e.mutations:
                raise RuntimeError(
                    "create_graph=True through a jit function that writes into its inputs in "
                    "place is not supported; return the new values instead")
            for t, version in zip(self._inputs, self._versions):
                check_version(t._vc, version, t._data, t._dtype, "CompiledFunction")
            saved = e.fwd.outvars[e.n_slots:]
            known = {v: _make(a, v.dtype) for v, a in zip(saved, self._residuals)
                     if v in e.rng_vars}
            residuals = run_eager(e.fwd, self._inputs, known)[e.n_slots:]
            grads = run_eager(e.bwd, residuals + tangents)
        else:
            arrays = e.bwd_run(list(self._residuals) + [g._data for g in tangents])
            grads = [None if a is None else _make(a, v.dtype)
                     for a, v in zip(arrays, e.bwd.outvars)]
        edges = getattr(self, "_next", None) or self.next_functions
        return tuple(g if edge is not None and edge[0] is not None else None
                     for g, edge in zip(grads, edges))

    def apply_arrays(self, grad_outputs: list, release: bool) -> list:
        """The engine's lane when nothing records: the compiled backward on plain arrays."""
        if self._freed:
            raise RuntimeError(FREED)
        for t, version in self._checks:
            check_version(t._vc, version, t._data, t._dtype, "CompiledFunction")
        arguments = list(self._residuals)
        n = len(grad_outputs)
        for s, shape, dt in self._entry.tangent_types:
            g = grad_outputs[s] if s < n else None
            if g is None:
                g = np.zeros(shape, dt)
            elif g.dtype is not dt and g.dtype != dt:
                g = g.astype(dt)
            arguments.append(g)
        arrays = self._entry.bwd_run(arguments)
        if release:
            self._release()
        if self._all_edges:
            return arrays
        return [None if edge is None else a for a, edge in zip(arrays, self._next)]

    def _release(self) -> None:
        self._freed = True
        self._residuals = None
        self._inputs = None


# How many jit traces of user functions are running (``jitgrad.compiler.is_compiling``).
compiling = [0]


class JitFunction:
    """A function traced and compiled per input signature (see ``jitgrad.jit``)."""

    # the guards never walk a compiled function's own state (its cache changes on each call:
    # a global ``step = jit(lambda: opt.step())`` is read as the name ``step``)
    _not_guarded = True

    # Called with the function's name before a cache miss compiles (``torch.compile``'s
    # stances set it: it may raise to refuse the compile).
    _on_miss: Any = None

    def __init__(self, fn: Any, backend: str = "auto", static_argnums: tuple = (),
                 check: bool = False) -> None:
        check_name(backend)
        if isinstance(fn, JitFunction):  # jit(jit(f)): the inner one is inlined, as in jax
            if not static_argnums:
                static_argnums = fn.static_argnums
            check = check or fn.check
            fn = fn.py_func
        self.check = check
        self.py_func = fn
        self.backend = backend
        self.static_argnums = (static_argnums,) if isinstance(static_argnums, int) \
            else tuple(static_argnums)
        self._cache: dict[tuple, _Entry] = {}
        self._fast: dict[tuple, _Entry] = {}  # the lean call path's key -> entry
        self._lean = not self.static_argnums and not check
        self._keys: list[tuple] = []
        self._hits = self._misses = 0
        self._trace_seconds = self._compile_seconds = 0.0
        self._warned_limit = False
        functools.update_wrapper(self, fn)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __repr__(self) -> str:
        return f"<JitFunction {getattr(self.py_func, '__qualname__', self.py_func)!r}>"

    # ------------------------------------------------------------------ cache
    def cache_info(self) -> cache.CacheInfo:
        """``(hits, misses, entries, trace_seconds, compile_seconds)``: calls that ran a
        stored program, calls that traced, the specializations held, and the seconds spent
        tracing (with the passes) and compiling (kernels compiled or loaded from the cache)."""
        return cache.CacheInfo(self._hits, self._misses, len(self._cache),
                               self._trace_seconds, self._compile_seconds)

    def clear_cache(self) -> None:
        """Drops every compiled specialization (and resets the counters)."""
        self._cache.clear()
        self._fast.clear()
        self._keys.clear()
        self._hits = self._misses = 0
        self._trace_seconds = self._compile_seconds = 0.0

    def _name(self) -> str:
        return getattr(self.py_func, "__qualname__", repr(self.py_func))

    def _lookup(self, args: tuple, kwargs: dict, count: bool = True) -> tuple[_Entry, list]:
        if self.static_argnums:
            n = len(args)
            marked = {i % n for i in self.static_argnums if -n <= i < n}
            args = tuple(cache.Static(a) if i in marked else a for i, a in enumerate(args))
        tensors, spec = cache.flatten((args, kwargs))
        cache.check_hashable(spec, self._name())
        key = cache.make_key(tensors, spec)
        entry = self._cache.get(key)
        reason = None
        if entry is not None:
            reason = entry.check()
            if reason is None:
                if count:
                    self._hits += 1
                return entry, tensors
        if cache.log_enabled("recompiles"):
            if reason is not None:
                cache.log(f"jitgrad.jit: recompiling {self._name()!r} because {reason}")
            else:
                cache.log(cache.explain_miss(self._name(), key, self._keys))
        if self._on_miss is not None:
            self._on_miss(reason)
        if count:
            self._misses += 1
        entry = self._compile(tensors, spec)
        if key not in self._cache:
            self._keys.append(key)
            self._evict(key)
        self._cache[key] = entry
        entry.used = self._hits + self._misses
        return entry, tensors

    def _evict(self, key: tuple) -> None:
        """Keeps at most ``cache.cache_size_limit()`` entries: drops the least recently used,
        and warns once, naming the part of the key that keeps changing."""
        limit = cache.cache_size_limit()
        if len(self._cache) < limit:
            return
        if not self._warned_limit:
            self._warned_limit = True
            why = cache.explain_miss(self._name(), key, self._keys[:-1])
            why = why.split(" because ", 1)[-1]
            warnings.warn(
                f"jitgrad.jit: {self._name()!r} was compiled for {limit + 1} different keys "
                f"(the limit, JITGRAD_CACHE_SIZE_LIMIT, is {limit}); the least recently used "
                f"are dropped. The key keeps changing: {why}. Pad the changing shapes, pass "
                "changing numbers as 0-d tensors, or see JITGRAD_LOG=recompiles.",
                RuntimeWarning, stacklevel=4)
        while len(self._cache) >= limit:
            old = min(self._cache, key=lambda k: self._cache[k].used)
            gone = self._cache.pop(old)
            self._keys.remove(old)
            for k in [k for k, e in self._fast.items() if e is gone]:
                del self._fast[k]

    # ------------------------------------------------------------------ compile
    def _compile(self, tensors: list, spec: Any) -> _Entry:
        t0 = time.perf_counter()
        backend = get_backend(self.backend, tensors)
        e = _Entry()
        e.backend = backend
        n = e.n_explicit = len(tensors)
        T = Trace()
        with active(T):
            tracers = [T.new_input(t.shape, t.dtype, t.requires_grad, leaf=t.is_leaf)
                       for t in tensors]
            args, kwargs = cache.unflatten(spec, tracers)
            args = tuple(a.fresh() if isinstance(a, cache.Static) else a for a in args)
            compiling[0] += 1
            try:
                out = self.py_func(*args, **kwargs)
            finally:
                compiling[0] -= 1
            del args, kwargs
            leaves, e.out_spec = cache.flatten(out)
            del out
            out_vars = [T.var_of(o) for o in leaves]
            del leaves
        mutated = [(i, tr._var) for i, (tr, v0) in enumerate(zip(tracers, T.invars[:n]))
                   if tr._var is not v0]
        del tracers
        e.guards = cache.Guards(self.py_func, tuple(cache.static_leaves(spec)),
                                T.unguarded)  # after: the
        # function may itself update what it reads (a call counter)
        reads, T.reads = T.reads, {}
        # Captured tensors that are still referenced elsewhere are implicit inputs; the ones
        # created inside the function (now unreachable) are constants.
        caps = [(var, T.fetcher(t), id(t), t._data, t._dtype)
                for var, t in T.captured.values()]
        T.captured = T.sources = {}
        consts, implicit_vars = {}, []
        for var, ref, key, data, dt in caps:
            alive = ref()
            if alive is None:
                var.hint = "c"
                consts[var] = _make(data, dt)
            else:
                implicit_vars.append((var, key))
                e.implicit.append((ref, tuple(alive.shape), alive.dtype, alive.requires_grad))
            del alive
        del caps
        e.guards.keep_tensors({key for _, key in implicit_vars} | set(reads))
        e.guards.add_value_reads(reads)
        e.guards.add_values(T.extra_guards)
        T.extra_guards = []
        e.after_call, T.after_call = T.after_call, []
        for j, (_, key) in enumerate(implicit_vars):
            if key in T.rebound:
                mutated.append((n + j, T.rebound[key]))
        graph = graph_of(T, out_vars + [v for _, v in mutated])
        graph.invars = graph.invars[:n] + [v for v, _ in implicit_vars]
        graph.consts = consts
        e.n_user = len(out_vars)
        e.n_slots = len(graph.outvars)
        e.mutations = [(i, e.n_user + k) for k, (i, _) in enumerate(mutated)]
        rg = [t.requires_grad for t in tensors] + [m[3] for m in e.implicit]
        wrt = rg if state.grad_enabled and any(rg) and not state.inference else None
        target = Target(None if wrt is None else tuple(wrt),
                        getattr(backend, "recomputable", None), getattr(backend, "fusible", None))
        program = compile_program(graph, target)
        fwd, bwd = e.fwd, e.bwd = program.forward, program.backward
        e.rng_vars = {v for q in fwd.eqns if q.op.nondeterministic for v in q.outputs}
        e.wrt = rg
        if bwd is not None:
            e.tangent_slots = list(program.tangent_slots)
            if not e.tangent_slots:  # no output depends on an input that requires grad
                e.bwd = None
        t1 = time.perf_counter()
        if e.mutations and getattr(backend, "donates_inputs", False):
            e.fwd_run = backend.compile(fwd, {slot: i for i, slot in e.mutations})
            e.donated = [(i, s) for i, s in e.mutations if s in e.fwd_run.donated]
        else:
            e.fwd_run = backend.compile(fwd)
        e.bwd_run = backend.compile(e.bwd) if e.bwd is not None else None
        self._trace_seconds += t1 - t0
        self._compile_seconds += time.perf_counter() - t1
        e.guarded = bool(e.implicit or e.guards.entries)
        e.lean_after = max(getattr(e.fwd_run, "after", 0),
                           getattr(e.bwd_run, "after", 0) if e.bwd_run is not None else 0)
        e.const_roots = frozenset(id(root_of(t._data)) for t in fwd.consts.values())
        if e.bwd is not None:
            e.tangent_types = [(s, tuple(v.shape), v.dtype.np)
                               for s, v in ((s, fwd.outvars[s]) for s in e.tangent_slots)]
        return e

    # ------------------------------------------------------------------ call
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if state.traces:  # called inside another trace: inline
            return self.py_func(*args, **kwargs)
        prof = registry.profiler
        if prof is not None and prof.enter_jit(self):  # jitgrad.profiler: the call as one range
            try:
                return self(*args, **kwargs)  # (enter_jit is False for this inner call)
            finally:
                prof.exit_jit(self)
        if registry.fw_hook is not None and _dual(args, kwargs):
            # forward-mode AD: tangents flow through the eager ops' JVP rules, not a program
            return self.py_func(*args, **kwargs)
        if registry.meta_live and _meta_call(args, kwargs):
            # meta tensors: the eager ops give the output shapes (there is nothing to compile)
            return self.py_func(*args, **kwargs)
        if self._lean and not kwargs:  # the lean path: positional tensors, a known key
            key = _fast_key(args)
            if key is not None:
                entry = self._fast.get(key)
                reason, captured = entry.fetch() if entry is not None and entry.guarded else \
                    (None, None)
                if entry is not None and reason is None:
                    self._hits += 1
                    entry.used = self._hits + self._misses
                    if entry.lean is not None and not state.inference:
                        return entry.lean(args)
                    if entry.lean_after >= 0:
                        entry.lean_after -= 1
                        if entry.lean_after < 0:
                            entry.lean = _lean_runner(entry)
                    return _run(entry, list(args), captured)
                entry, tensors = self._lookup(args, kwargs)
                self._fast[key] = entry
                return self._run_first(entry, tensors)
        if self.check:
            from .check import checked_call

            return checked_call(self, args, kwargs, _run)
        entry, tensors = self._lookup(args, kwargs)
        return self._run_first(entry, tensors)

    def _run_first(self, entry: _Entry, tensors: list) -> Any:
        """Runs an entry; the first run of a new one counts its kernels' compile (or cache
        load) time, which happens at their first call, in ``compile_seconds``."""
        if not entry.fresh:
            return _run(entry, tensors)
        entry.fresh = False
        c0 = _backend_seconds()
        try:
            return _run(entry, tensors)
        finally:
            self._compile_seconds += _backend_seconds() - c0

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """The forward IR, backward IR and kernels this call signature compiles to."""
        entry, tensors = self._lookup(args, kwargs, count=False)
        arrays = [t._data for t in tensors] + [ref()._data for ref, *_ in entry.implicit]
        return Lowered(entry.fwd, entry.bwd, entry.backend, arrays)


def _dual(args: tuple, kwargs: dict) -> bool:
    from ..autograd.forward_ad import has_tangent

    return has_tangent(args) or has_tangent(tuple(kwargs.values()))


def _meta_call(args: tuple, kwargs: dict) -> bool:
    """Whether a call has a meta tensor among its arguments (or in a list or tuple of them)."""
    for a in (*args, *kwargs.values()):
        for t in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(t, Tensor) and t.is_meta:
                return True
    return False


def _fast_key(args: tuple) -> tuple | None:
    """The lean path's key: each tensor's shape, dtype and (with grad mode on) requires_grad,
    the grad mode and autocast's state; None if an argument is not a tensor (the general path
    handles it)."""
    if registry.cuda_live:  # the lean key has no device: cuda calls take the general path
        for t in args:
            if isinstance(t, Tensor) and t.is_cuda:
                return None
    if state.grad_enabled and not state.inference:
        key = []
        for t in args:
            if not isinstance(t, Tensor):
                return None
            key.append((t._data.shape, t._dtype, t.requires_grad))
        return (True, state.autocast, *key)
    for t in args:
        if not isinstance(t, Tensor):
            return None
    return (False, state.inference, state.autocast, *[(t._data.shape, t._dtype) for t in args])


def _backend_seconds() -> float:
    from ..backends import numba_cpu

    return numba_cpu.compile_seconds


def _lean_runner(e: _Entry) -> Any:
    """``run(args) -> result`` for an entry whose outputs provably never alias its inputs, its
    constants or each other (each is a fresh array a kernel allocated, returned once) and whose
    residuals are fresh arrays or inputs: ``_run`` without its per-call alias checks. None if
    the entry needs those checks (or writes into its inputs, or reads captured tensors)."""
    fwd = e.fwd
    final = getattr(e.fwd_run, "final", None)
    if final is None or e.implicit or e.mutations or e.after_call or \
            not getattr(e.backend, "fresh_kernel_outputs", False):
        return None
    producer = {v: q for q in fwd.eqns for v in q.outputs}
    counts: dict = {}
    for v in fwd.outvars:
        counts[v] = counts.get(v, 0) + 1

    def fresh(v: Any) -> bool:
        q = producer.get(v)
        return counts[v] == 1 and q is not None and q.op is KERNEL_OP

    n = e.n_slots
    if not all(fresh(v) for v in fwd.outvars[:n]):
        return None
    position = {v: i for i, v in enumerate(fwd.invars)}
    saved = set()  # inputs a residual is or views (their versions are checked before backward)
    for v in fwd.outvars[n:]:
        if fresh(v):
            continue
        while v in producer and producer[v].op.view:  # (views alias their first input)
            v = producer[v].inputs[0]
        if v not in position:
            return None
        saved.add(position[v])
    saved_inputs = sorted(saved)
    dtypes = [v.dtype for v in fwd.outvars[:n]]
    pack = cache.packer(e.out_spec, e.n_user)
    if e.bwd is None:
        def run(tensors: tuple) -> Any:
            outs = final(*[t._data for t in tensors])
            return pack([_make(a, dt) for a, dt in zip(outs, dtypes)])
        return run
    slots = e.tangent_slots

    def run_with_backward(tensors: tuple) -> Any:
        outs = final(*[t._data for t in tensors])
        outs_t = [_make(a, dt) for a, dt in zip(outs, dtypes)]
        if state.grad_enabled:
            node = CompiledFunctionBackward(e, list(tensors), list(outs[n:]),
                                            [(tensors[i], tensors[i]._vc[0])
                                             for i in saved_inputs])
            node._versions = [t._vc[0] for t in tensors]
            for s in slots:
                outs_t[s]._grad_fn, outs_t[s]._output_nr = node, s
        return pack(outs_t)
    return run_with_backward


def _run(e: _Entry, tensors: list, captured: list | None = None) -> Any:
    """One call of an entry on its tensor arguments (and ``captured``, its captured tensors
    as ``_Entry.fetch`` just found them; fetched here when None)."""
    if e.implicit:
        inputs = tensors + (captured if captured is not None else
                            [ref() for ref, *_ in e.implicit])
    else:
        inputs = tensors
    arrays = [t._data for t in inputs]
    written = writable_in_place(e.donated, e.const_roots, arrays) if e.donated else ()
    outs = e.fwd_run(arrays)
    vals, res = outs[:e.n_slots], outs[e.n_slots:]
    # Outputs never alias inputs, constants, residuals or each other. Arrays whose memory
    # owners differ cannot overlap; only an output sharing an owner is compared closely.
    in_owners = [id(a) if a.base is None else id(root_of(a)) for a in arrays]
    res_owners = {id(r) if r.base is None else id(root_of(r)) for r in res}
    taken = res_owners.union(in_owners)
    if e.const_roots:
        taken |= e.const_roots
    consts = None
    for i, a in enumerate(vals):
        owner = id(a) if a.base is None else id(root_of(a))
        if owner in taken and i not in written:
            if consts is None:
                consts = [t._data for t in e.fwd.consts.values()]
            if shares_any(a, arrays) or shares_any(a, consts) or shares_any(a, res) or \
                    shares_any(a, vals[:i]):
                vals[i] = a = a.copy()
                owner = id(a)
        taken.add(owner)
    grad = e.bwd is not None and state.grad_enabled
    for idx, _ in e.mutations:
        for k, r in enumerate(res):
            if shares_any(r, [arrays[idx]]):
                res[k] = r.copy()
    n_user = e.n_user  # (the written-back mutations' values need no tensors)
    outs_t = [_make(a, v.dtype) for a, v in zip(vals[:n_user], e.fwd.outvars)]
    node = None
    if grad:
        checks = [(t, None) for t, a, owner in zip(inputs, arrays, in_owners)
                  if owner in res_owners and shares_any(a, res)]
        node = CompiledFunctionBackward(e, inputs, res, checks)
        for s in e.tangent_slots:
            if s < n_user:
                outs_t[s]._grad_fn, outs_t[s]._output_nr = node, s
    for idx, slot in e.mutations:
        t = inputs[idx]
        if slot not in written:
            np.copyto(t._data, vals[slot], casting="unsafe")
        t._vc[0] += 1
        if node is not None and slot in e.tangent_slots:
            t._grad_fn, t._output_nr = node, slot
    if node is not None:
        node._checks = [(t, t._vc[0]) for t, _ in node._checks]
        node._versions = [t._vc[0] for t in inputs]
    if state.inference:
        for t in outs_t:
            t._is_inference = True
    for fn in e.after_call:
        fn()
    if e.out_spec is cache.LEAF:  # a single tensor
        return outs_t[0]
    return cache.unflatten(e.out_spec, outs_t)
