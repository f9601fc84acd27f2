"""The tracer: tensors with a shape and a dtype but no data, whose ops become IR equations.

A ``Tracer`` is a ``Tensor`` with a ``Var`` instead of data. Ops on tracers go through the same
``ops.registry.apply`` that eager mode uses; it hands them to the innermost active ``Trace``
(``state.traces``), whose ``bind`` asks the op's shape/dtype rule for the result type and
appends an ``Eqn`` (``_ir``). Composite ops with a ``decompose`` are inlined as primitives. While
a trace is active, ops on ordinary tensors are recorded too: such a tensor is *captured* (a
constant of the graph, read when it runs), and Python reads of its value are noted
(``read_value``) so that the jit can guard them.

This is the core both users of tracing share, below the autograd graph: the jit
(``jit/staging.py`` adds in-place ops and custom Functions to it, and stages whole functions) and
the eager engine's rule programs (``autograd/rule_programs.py``), which trace one VJP rule on
tracers and render it as straight-line NumPy (``_pycode``).
"""

from __future__ import annotations

import weakref
from contextlib import contextmanager
from typing import Any

import numpy as np

from . import dtypes, errors
from ._ir import Eqn, Graph, Var, type_str
from .ops.registry import OpDef, state
from .device import cpu
from ._data import channels_last_contiguous as _channels_last_contiguous
from .tensor import Size, Tensor, _wrap_dim
from ._torch_function import _disabled_torch_function_impl


class Tracer(Tensor):
    """A tensor inside a trace: a shape, a dtype and a ``Var``; reading its values raises."""

    # (no part in the __torch_function__ protocol, as torch's own subclasses)
    __torch_function__ = _disabled_torch_function_impl

    __slots__ = ("_var", "_shape")

    @property
    def _data(self):  # every path that reads data ends here
        if self._trace is None or self._trace not in state.traces:
            raise errors.trace_error(
                "a traced tensor escaped its jit trace (it was stored in a global, an attribute "
                "or a list while tracing, and used after or outside it); return it from the "
                "function instead")
        raise errors.concretization_error("reading the data", self)

    # A traced program has no device: the backend runs it where its arguments live (values
    # a trace makes, such as ones_like(x), are constants the CUDA backend copies over).
    is_cuda = False
    is_cpu = True
    is_meta = False

    @property
    def device(self):
        return cpu

    @property
    def shape(self) -> Size:
        return Size(self._shape)

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return len(self._shape)

    def size(self, dim: int | None = None):
        if dim is None:
            return Size(self._shape)
        return self._shape[_wrap_dim(dim, self.ndim)]

    def numel(self) -> int:
        n = 1
        for s in self._shape:
            n *= s
        return n

    nelement = numel

    def is_contiguous(self, memory_format: Any = None) -> bool:
        if memory_format is None or memory_format.name in ("contiguous_format",
                                                            "preserve_format"):
            return True  # (a traced value is row-major)
        rank = 5 if memory_format.name == "channels_last_3d" else 4
        return _channels_last_contiguous(self._shape, self.stride(), rank)

    def stride(self, dim: int | None = None):
        st, acc = [], 1
        for s in reversed(self._shape):
            st.append(acc)
            acc *= max(s, 1)
        st = tuple(reversed(st))
        return st if dim is None else st[dim]

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._shape[0]))

    def item(self):
        raise errors.concretization_error(".item()", self)

    def tolist(self):
        raise errors.concretization_error(".tolist()", self)

    def numpy(self, *, force: bool = False):
        raise errors.concretization_error(".numpy()", self)

    def __array__(self, dtype=None, copy=None):
        raise errors.concretization_error("conversion to a NumPy array", self)

    def __bool__(self) -> bool:
        raise errors.concretization_error("bool() (an `if`, `while`, `and`/`or` on a tensor)",
                                          self)

    def __float__(self) -> float:
        raise errors.concretization_error("float()", self)

    def __int__(self) -> int:
        raise errors.concretization_error("int()", self)

    def __index__(self) -> int:
        raise errors.concretization_error("use as a Python index (__index__)", self)

    def __complex__(self) -> complex:
        raise errors.concretization_error("complex()", self)

    def backward(self, *args: Any, **kwargs: Any) -> None:
        raise errors.trace_error(
            ".backward() cannot run inside a jit-traced function; call it on the function's "
            "output, or use jitgrad.func.grad / value_and_grad inside the function")

    def register_hook(self, hook: Any) -> Any:
        raise errors.trace_error(
            "register_hook on a traced tensor is not supported; register hooks on the inputs or "
            "outputs of the jitted function")

    def __repr__(self) -> str:
        return f"Tracer<{type_str(self._shape, self._dtype)}>"

    def __format__(self, spec: str) -> str:
        return repr(self)

    def __deepcopy__(self, memo):
        raise errors.trace_error("deepcopy of a traced tensor is not supported")


def _make_tracer(trace: Trace, var: Var, requires_grad: bool) -> Tracer:
    t = Tracer.__new__(Tracer)
    t._var, t._shape, t._dtype = var, var.shape, var.dtype
    t._requires_grad = requires_grad
    t._grad = t._grad_fn = t._base = t._hooks = t._post_acc_hooks = t._accumulator = None
    t._fw_grads = None
    t._output_nr, t._vc = 0, [0]
    t._retains_grad = t._is_inference = False
    t._trace = trace
    return t


class Trace:
    """The equations recorded while a function runs on tracers."""

    batching = False  # not a vmap level (see ops.registry.apply and func/vmap.py)
    # a cond branch / while_loop function (jit/control_flow.py): ops on values of enclosing
    # traces are recorded here (they become extra inputs of the sub-graph)
    lifts = False
    # a trace of an op's VJP rule for the eager engine's programs (autograd/rule_programs.py):
    # a rule whose arithmetic depends on values raises here, and its nodes keep the tensor path
    rule_program = False

    def __init__(self) -> None:
        self.eqns: list[Eqn] = []
        self.invars: list[Var] = []
        self.captured: dict[int, tuple[Var, Tensor]] = {}  # id(eager tensor) -> (var, tensor)
        self.rebound: dict[int, Var] = {}  # id(eager tensor) -> var after an in-place write
        self.inputs: list[Tracer] = []  # explicit input tracers, to detect in-place writes
        self.leaf_inputs: set[int] = set()  # ids of input tracers that are leaves needing grad
        self.views: dict[int, tuple[Any, list]] = {}  # id(root tracer) -> (ref, view refs)
        self.root_of: dict[int, tuple[Any, Any]] = {}  # id(view) -> (ref view, ref root)
        self.source_override: str | None = None
        self.decompose = True
        self.reads: dict[int, tuple[Any, Any]] = {}  # id -> (weakref, data snapshot)
        # id(eager tensor) -> (weakref, getter): a captured tensor that later calls fetch
        # afresh with ``getter()`` (an optimizer's grads and state; see ``note_source``)
        self.sources: dict[int, tuple[Any, Any]] = {}
        self.extra_guards: list[tuple[str, Any, Any]] = []  # (description, getter, value)
        self.after_call: list[Any] = []  # run eagerly after each call of the program (defer)
        self.deferred_on: set[int] = set()  # ids of the objects a deferred call updates
        self.unguarded: set[int] = set()  # ids of objects the jit's guards must not walk

    def defer(self, fn: Any, updates: Any = None, owner: Any = None) -> None:
        """Runs ``fn()`` eagerly after every call of the compiled program instead of tracing
        it (an LR scheduler's step: plain Python that the next call must see, as dynamo
        replays side effects). ``updates``: an object ``fn`` changes, which the rest of the
        traced function must not read (see ``deferred_on``); ``owner``: the object whose
        state ``fn`` advances, left unguarded (its counters change on every call)."""
        self.after_call.append(fn)
        if owner is not None:
            self.unguarded.add(id(owner))
        if updates is not None:
            self.deferred_on.add(id(updates))

    def note_source(self, t: Tensor, getter: Any) -> None:
        """Says where a captured eager tensor lives, so that a compiled program fetches it
        with ``getter()`` on each call (None: gone, so it retraces) instead of holding on to
        this very tensor. An optimizer's ``p.grad`` is a new tensor after each backward."""
        if isinstance(t, Tensor) and t._trace is None:
            self.sources[id(t)] = (weakref.ref(t), getter)

    def fetcher(self, t: Tensor) -> Any:
        """How a compiled program finds captured ``t`` on each call: the getter given with
        ``note_source``, else a weak reference to ``t`` itself."""
        source = self.sources.get(id(t))
        if source is not None and source[0]() is t:
            return source[1]
        return weakref.ref(t)

    def note_guard(self, description: str, getter: Any) -> None:
        """Makes the compiled entry retrace once ``getter()`` no longer returns what it returns
        now (a Python decision the traced code took, such as a parameter having no grad)."""
        self.extra_guards.append((description, getter, getter()))

    # ------------------------------------------------------------------ values
    def new_input(self, shape: tuple, dtype: dtypes.dtype, requires_grad: bool = False,
                  hint: str = "primals", leaf: bool = True) -> Tracer:
        v = Var(shape, dtype, hint)
        self.invars.append(v)
        t = _make_tracer(self, v, requires_grad)
        self.inputs.append(t)
        if requires_grad and leaf:
            self.leaf_inputs.add(id(t))
        return t

    def value_of(self, v: Var) -> Tracer:
        """A tracer standing for ``v``."""
        return _make_tracer(self, v, False)

    def var_of(self, a: Any) -> Any:
        """The Var for a tracer or captured tensor; other values are literals."""
        if isinstance(a, Tensor):
            if a._trace is self:
                return a._var
            if a._trace is not None:
                raise errors.trace_error(
                    "a traced tensor from a different jit trace was used (it escaped an earlier "
                    "trace through a global, an attribute or a list); return it instead")
            k = id(a)
            if k in self.rebound:
                return self.rebound[k]
            hit = self.captured.get(k)
            if hit is None:
                hit = self.captured[k] = (Var(a.shape, a.dtype, "captured"), a)
            return hit[0]
        return a

    def read_value(self, t: Tensor) -> None:
        """Notes that Python read an eager tensor's value while tracing (``w.item()``): if the
        tensor outlives the trace, its value becomes a guard of the compiled entry. A tensor
        this trace wrote in place has no value yet (the write runs with the compiled program):
        reading it raises a ConcretizationError (``torch.compile`` then runs eagerly)."""
        if id(t) in self.rebound and t._trace is None:
            raise errors.stale_read_error()
        hit = self.reads.get(id(t))
        if t._trace is None and (hit is None or hit[0]() is not t):
            self.reads[id(t)] = (weakref.ref(t), np.array(t._data, copy=True))

    def as_tracer(self, a: Tensor) -> Tracer:
        """``a`` itself if it is a tracer of this trace, else a tracer for the captured tensor."""
        if isinstance(a, Tracer) and a._trace is self:
            return a
        return _make_tracer(self, self.var_of(a), a.requires_grad)

    # ------------------------------------------------------------------ recording
    def bind(self, op: OpDef, args: tuple, params: dict) -> Any:
        """Records ``op(*args, **params)`` and returns tracer(s) for its result(s)."""
        if op.decompose is not None and self.decompose:
            out = op.decompose(*args, **params)
            if out is not NotImplemented:  # (NotImplemented: a decomposition for cuda only)
                return out
        shapes, dts = op.meta(*args, **params)
        if op.n_outputs == 1:
            shapes, dts = (shapes,), (dts,)
        elif not isinstance(dts, tuple):
            dts = (dts,) * len(shapes)
        inputs = [self.var_of(a) for a in args]
        outs = [Var(s, d) for s, d in zip(shapes, dts)]
        source = self.source_override
        if source is None:
            source = errors.user_location(1)[0]
        nograd = not state.grad_enabled
        self.eqns.append(Eqn(op, inputs, params, outs, source, nograd))
        rg = (not nograd and op.differentiable
              and any(isinstance(a, Tensor) and a.requires_grad for a in args))
        tracers = [_make_tracer(self, v, rg and (v.dtype.is_floating_point or v.dtype.is_complex))
                   for v in outs]
        if op.view and args and isinstance(args[0], Tracer):
            self._note_views(args[0], tracers)
        return tracers[0] if op.n_outputs == 1 else tuple(tracers)

    def _note_views(self, base: Tracer, views: list) -> None:
        hit = self.root_of.get(id(base))
        root = hit[1]() if hit is not None and hit[0]() is base else None
        if root is None:
            root = base
        entry = self.views.get(id(root))
        if entry is None or entry[0]() is not root:
            entry = self.views[id(root)] = (weakref.ref(root), [])
        for v in views:
            entry[1].append(weakref.ref(v))
            self.root_of[id(v)] = (weakref.ref(v), weakref.ref(root))

    def _is_view(self, t: Tracer) -> bool:
        hit = self.root_of.get(id(t))
        return hit is not None and hit[0]() is t

    def _has_live_views(self, t: Tracer) -> bool:
        entry = self.views.get(id(t))
        return entry is not None and entry[0]() is t and any(r() is not None for r in entry[1])

    # The dispatcher hands these to the innermost trace too; the jit's trace
    # (``jit.staging.Trace``) records them. A core trace (a VJP rule's) has no use for them.
    def inplace(self, target: Tensor, new: Tensor) -> Tensor:
        """An in-place op on a traced value: traced by the jit's ``Trace`` only."""
        raise errors.trace_error("an in-place op cannot be traced outside jit")

    def apply_function(self, cls: type, args: tuple, kwargs: dict) -> Any:
        """A custom autograd.Function's ``apply``: traced by the jit's ``Trace`` only."""
        raise errors.trace_error(f"{cls.__name__}.apply cannot be traced outside jit")

    def stage_cond(self, pred: Tensor, true_fn: Any, false_fn: Any, operands: tuple,
                   leaves: list) -> Any:
        """``jitgrad.cond`` on a traced predicate: staged by the jit's ``Trace`` only."""
        raise errors.trace_error("jitgrad.cond cannot be traced outside jit")

    def stage_while(self, cond_fn: Any, body_fn: Any, carried_inputs: Any, leaves: list,
                    spec: Any) -> Any:
        """``jitgrad.while_loop`` while tracing: staged by the jit's ``Trace`` only."""
        raise errors.trace_error("jitgrad.while_loop cannot be traced outside jit")

@contextmanager
def active(trace: Trace):
    """Pushes ``trace`` on the dispatcher's trace stack for the duration of the block."""
    state.traces.append(trace)
    try:
        yield trace
    finally:
        state.traces.pop()


@contextmanager
def source(trace: Trace, src: str | None):
    """Labels the equations recorded in the block with ``src`` (the forward op's line)."""
    prev = trace.source_override
    trace.source_override = src
    try:
        yield
    finally:
        trace.source_override = prev


def replay(trace: Trace, graph: Graph, inputs: list) -> list:
    """Records ``graph``'s equations into ``trace`` on ``inputs``; returns its output values."""
    env: dict[Var, Any] = dict(zip(graph.invars, inputs))
    for v, t in graph.consts.items():
        env[v] = t
    prev_decompose, trace.decompose = trace.decompose, False
    prev_grad = state.grad_enabled
    try:
        for e in graph.eqns:
            args = [env[x] if isinstance(x, Var) else x for x in e.inputs]
            state.grad_enabled = not e.nograd
            with source(trace, e.source):
                out = trace.bind(e.op, tuple(args), e.params)
            for v, o in zip(e.outputs, (out,) if e.op.n_outputs == 1 else out):
                env[v] = o
    finally:
        trace.decompose = prev_decompose
        state.grad_enabled = prev_grad
    return [env[v] if isinstance(v, Var) else v for v in graph.outvars]


def graph_of(trace: Trace, outvars: list, name: str = "forward") -> Graph:
    """The trace as a Graph (captured tensors become constants)."""
    consts = {v: t for v, t in trace.captured.values()}
    return Graph(list(trace.invars), outvars, trace.eqns, consts, name)
