"""``JitFunction``: the object ``jit(fn)`` returns, and the one autograd Node its outputs share.

Each call flattens the arguments (tensors may sit in tuples, lists and dicts; everything else
is static), builds the cache key (see ``cache.py``) and, on a miss or a failed guard, traces the
function, runs the pass pipeline (with the VJP and partition passes when grad mode is on and an
input requires grad) and compiles the forward and backward graphs with the backend. Outputs are
ordinary tensors; the differentiable ones share one ``CompiledFunctionBackward`` node that holds
the residuals and runs the compiled backward program (or, under ``create_graph=True``, recomputes
the forward and runs the backward graph through eager ops so higher derivatives are right). A
call of a compiled entry, and that node, are ``calls.py``'s.
"""

from __future__ import annotations

import functools
import time
import warnings
from typing import Any

from ..backends import check_name, get_backend
from ..ops import registry
from ..ops.registry import state
from ..tensor import Tensor, _make
from . import cache
from ._memory import root_of
from .calls import lean_runner, run as _run
from .lowered import Lowered
from .._ir import Graph
from .passes import Target, compile_program
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
        # the lean runner (``calls.lean_runner``), made once the entry has run ``lean_after`` more
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
                            entry.lean = lean_runner(entry)
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
