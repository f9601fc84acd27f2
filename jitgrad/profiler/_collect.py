"""What a profiler records while it runs: timed ranges (ops, autograd nodes, jit calls, user
``record_function`` ranges) and, with ``profile_memory``, the bytes ops allocate and free.

Nothing here costs anything while no profiler records: eager ops are timed by an op observer
(``ops/op_observers.py``: each ``OpDef.impl`` wrapped while a collection runs); the backward
engine and jit functions read one slot (``registry.profiler``) per backward / per call.

An op's range times its computation (its NumPy or Numba implementation, what torch's aten op
does); the dispatcher's and autograd's bookkeeping around it falls to the enclosing range.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import TRAMPOLINE_FILE
from ..ops import registry
from ..ops.op_observers import observe_ops

CPU_OP = "cpu_op"
USER_ANNOTATION = "user_annotation"
MEMORY = "[memory]"

# jitgrad op name -> torch's aten name, where they differ (most are the same)
_ATEN = {
    "argtopk": "topk", "clamp_max_tensor": "clamp_max", "clamp_min_tensor": "clamp_min",
    "clamp_tensor": "clamp", "clone_contiguous": "clone", "copysign_scalar": "copysign",
    "div_floor": "div", "div_trunc": "div", "add_alpha": "add", "sub_alpha": "sub",
    "fill_tensor_": "fill_", "fmod_scalar": "fmod", "index_fill_tensor": "index_fill",
    "lerp_scalar": "lerp", "lerp_tensor": "lerp", "masked_fill_tensor": "masked_fill",
    "max_all": "max", "max_dim": "max", "mean_dim": "mean", "median_dim": "median",
    "min_all": "min", "min_dim": "min", "nanmedian_dim": "nanmedian", "norm_p": "norm",
    "normal_float_tensor": "normal", "normal_tensor_float": "normal",
    "normal_tensor_tensor": "normal", "pow_scalar": "pow", "prod_dim": "prod",
    "remainder_scalar": "remainder", "reshape_alias": "_reshape_alias", "round_decimals": "round",
    "rpow": "pow", "scatter_multiply": "scatter", "scatter_multiply_value": "scatter",
    "scatter_value": "scatter", "squeeze_dim": "squeeze", "squeeze_dim_": "squeeze_",
    "squeeze_dims": "squeeze", "sum_dim": "sum", "to_copy": "_to_copy", "to_device": "_to_copy",
    "unique": "_unique2", "unsafe_view": "_unsafe_view",
}
# jitgrad's own ops, with no aten counterpart
_OWN = {"copy_slices", "copy_slices_view", "svdvals_backward", "svdvals_jvp"}
_RNG = {"uniform": "aten::uniform_", "normal": "aten::normal_", "integers": "aten::random_"}


def op_name(name: str) -> str:
    """The profiler's row name of the registered op ``name`` (torch's ``aten::...`` name)."""
    if name in _OWN:
        return f"jitgrad::{name}"
    return "aten::" + _ATEN.get(name, name)


class Record:
    """One range: a name, its kind, thread, start and end (perf_counter ns) and parent."""

    __slots__ = ("id", "name", "kind", "tid", "start", "end", "parent", "shapes", "stack",
                 "flops", "owner")

    def __init__(self, rid: int, name: str, kind: str, tid: int, parent: int) -> None:
        self.id = rid
        self.name = name
        self.kind = kind
        self.tid = tid
        self.parent = parent
        self.shapes = None
        self.stack = None
        self.flops = 0
        self.owner = None  # the jit function whose call this range is
        self.start = self.end = 0


def _shape_of(a: Any) -> list:
    shape = getattr(a, "shape", None)
    return list(shape) if isinstance(shape, tuple) else []


def _flops(name: str, shapes: list) -> int:
    """torch's formula FLOPs of the matrix products (what ``with_flops`` counts)."""
    try:
        if name in ("mm", "matmul") and len(shapes[0]) == 2:
            (m, k), (_, n) = shapes[0], shapes[1]
            return 2 * m * k * n
        if name == "addmm":
            (m, k), (_, n) = shapes[1], shapes[2]
            return 2 * m * k * n
        if name == "bmm":
            (b, m, k), (_, _, n) = shapes[0], shapes[1]
            return 2 * b * m * k * n
        if name == "mv":
            m, k = shapes[0]
            return 2 * m * k
        if name == "dot":
            return 2 * shapes[0][0]
    except (IndexError, ValueError, TypeError):
        return 0
    return 0


_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_NN = _PKG + "nn" + os.sep


def _user_stack() -> list:
    """The Python stack, innermost first, as torch writes it ("file(line): function"),
    without jitgrad's own frames (its ``nn`` modules stay, as torch's do)."""
    out = []
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        path = code.co_filename
        if not (path.startswith(_PKG) or path == TRAMPOLINE_FILE) \
                or path.startswith(_NN):
            out.append(f"{path}({frame.f_lineno}): {code.co_name}")
        frame = frame.f_back
    return out


class Collector:
    """One recording window: installs the hooks at ``start`` and removes them at ``stop``."""

    def __init__(self, *, record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False) -> None:
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.records: list[Record] = []
        self.memory: list[tuple] = []  # (perf_counter ns, bytes, thread)
        self._ids = itertools.count(1)
        self._local = threading.local()
        self._unobserve: Callable[[], None] | None = None
        self._finalizers: list = []
        self.active = False
        self.start_ns = self.stop_ns = 0
        self.epoch_ns = 0  # time.time_ns() at start_ns

    # ------------------------------------------------------------------ window
    def start(self) -> None:
        """Starts recording: observes every op (its impl timed) and takes the profiler slot."""
        if registry.profiler is not None:
            raise RuntimeError("a jitgrad profiler is already recording; profilers do not nest")
        self.epoch_ns = time.time_ns()
        self.start_ns = time.perf_counter_ns()
        self._unobserve = observe_ops(self._timed)
        self.active = True
        registry.profiler = self

    def stop(self) -> None:
        """Stops recording: removes its op observer and frees the slot (ranges still open are
        dropped)."""
        if not self.active:
            return
        self.stop_ns = time.perf_counter_ns()
        registry.profiler = None
        self.active = False
        if self._unobserve is not None:
            self._unobserve()
            self._unobserve = None
        for f in self._finalizers:
            f.detach()
        self._finalizers.clear()

    # ------------------------------------------------------------------ ranges
    def _thread_stack(self) -> list:
        """This thread's stack of open ranges (made on its first range)."""
        local = self._local
        stack = local.__dict__.get("stack")
        if stack is None:
            stack = local.stack = []
            local.tid = threading.get_native_id()
        return stack

    def open(self, name: str, kind: str = USER_ANNOTATION) -> Record:
        """Opens a range on this thread (its parent: the innermost open one)."""
        stack = self._thread_stack()
        rec = Record(next(self._ids), name, kind, self._local.tid, stack[-1].id if stack else 0)
        if self.with_stack:
            rec.stack = _user_stack()
        stack.append(rec)
        rec.start = time.perf_counter_ns()
        return rec

    def close(self, rec: Record) -> None:
        """Closes ``rec`` (and any range opened inside it and left open)."""
        rec.end = time.perf_counter_ns()
        stack = self._local.__dict__.get("stack")
        if stack and stack[-1] is rec:
            stack.pop()
        elif not stack or rec not in stack:
            return  # opened by another collection, or on another thread
        else:
            while stack.pop() is not rec:
                pass
        if self.active:
            self.records.append(rec)

    def node_runner(self, run: Callable) -> Callable:
        """The backward engine's ``run(node, grads)``, each node as torch's two ranges."""
        def profiled(node: Any, grads: list) -> Any:
            name = node.name()
            if name == "AccumulateGrad":
                name = "torch::autograd::AccumulateGrad"
            outer = self.open("autograd::engine::evaluate_function: " + name, CPU_OP)
            inner = self.open(name, CPU_OP)
            try:
                return run(node, grads)
            finally:
                self.close(inner)
                self.close(outer)
        return profiled

    def enter_jit(self, fn: Any) -> bool:
        """Opens the range of a call of jit function ``fn``; False for the call it wraps."""
        stack = self._local.__dict__.get("stack")
        if stack and stack[-1].owner is fn:
            return False
        rec = self.open("jit::" + getattr(fn, "__qualname__", type(fn).__name__), CPU_OP)
        rec.owner = fn
        return True

    def exit_jit(self, fn: Any) -> None:
        """Closes the range ``enter_jit`` opened for ``fn``."""
        stack = self._local.__dict__.get("stack")
        if stack:
            rec = next((r for r in reversed(stack) if r.owner is fn), None)
            if rec is not None:
                rec.owner = None
                self.close(rec)

    # ------------------------------------------------------------------ ops
    def _timed(self, op: Any, impl: Callable) -> Callable:
        name = op_name(op.name)
        shapes = self.record_shapes
        flops = self.with_flops
        memory = self.profile_memory
        view = op.view
        base_name = op.name
        is_rng = op.name == "rng"

        local = self._local
        ids = self._ids
        with_stack = self.with_stack
        perf = time.perf_counter_ns

        def profiled(*args: Any, **params: Any) -> Any:
            stack = local.__dict__.get("stack")
            if stack is None:
                stack = self._thread_stack()
            rec = Record(next(ids), _RNG.get(params.get("kind"), name) if is_rng else name,
                         CPU_OP, local.tid, stack[-1].id if stack else 0)
            if with_stack:
                rec.stack = _user_stack()
            if shapes or flops:
                dims = [_shape_of(a) for a in args]
                if shapes:
                    rec.shapes = dims
                if flops:
                    rec.flops = _flops(base_name, dims)
            stack.append(rec)
            rec.start = perf()
            try:
                out = impl(*args, **params)
                if memory and not view:
                    self._allocated(out, args, rec.tid)
            finally:
                self.close(rec)
            return out

        profiled.__wrapped__ = impl
        return profiled

    def _allocated(self, out: Any, args: tuple, tid: int) -> None:
        """Records the bytes of ``out``'s new arrays (not views of an input) and, through a
        finalizer, their release."""
        for o in (out if isinstance(out, (tuple, list)) else (out,)):
            if type(o) is not np.ndarray or o.nbytes == 0:
                continue
            if any(type(a) is np.ndarray and np.may_share_memory(o, a) for a in args):
                continue
            n = o.nbytes
            self.memory.append((time.perf_counter_ns(), n, tid))
            self._finalizers.append(weakref.finalize(o, self._freed, n))

    def _freed(self, n: int) -> None:
        if self.active:
            local = self._local
            tid = local.tid if "tid" in local.__dict__ else threading.get_native_id()
            self.memory.append((time.perf_counter_ns(), -n, tid))


class record_function:  # noqa: N801 - torch's name
    """A labelled range of code, as its own row in the profiler's results (a context manager
    and a function decorator, as ``torch.profiler.record_function``).

    Args:
        name: the row's name.
        args: extra text torch attaches to the range (kept, not shown).
    """

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self.run_callbacks_on_exit = True
        self._open: list = []

    def __enter__(self) -> record_function:
        prof = registry.profiler
        self._open.append((prof, prof.open(self.name) if prof is not None else None))
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, tb: Any) -> None:
        prof, rec = self._open.pop() if self._open else (None, None)
        if rec is not None:
            prof.close(rec)

    def __call__(self, func: Callable) -> Callable:
        import functools

        @functools.wraps(func)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with record_function(self.name, self.args):
                return func(*args, **kwargs)

        return wrapped
