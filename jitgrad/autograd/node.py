"""Autograd graph nodes: what ``tensor.grad_fn`` returns.

``Node`` is the base (torch's ``torch.autograd.graph.Node``); ``OpNode`` applies a primitive's
VJP rule to saved values; ``AccumulateGrad`` writes into a leaf's ``.grad``. Custom Functions
and jit-compiled functions have their own subclasses elsewhere.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes
from ..ops.memory_formats import dense_in_some_order, laid_out_like
from .. import tensor as _tensor
from .._hooks import RemovableHandle as RemovableHandle  # (re-exported: hooks' handle)
from .._tracer import Tracer
from ..dtypes import _BY_NUMPY
from ..ops import registry
from .._views import _refresh_view
from ..tensor import Tensor, _make, _new

_ndarray = np.ndarray

_sequence = itertools.count()
_new_object = object.__new__
_NO_EDGE = (None, 0)


class Node:
    """A node of the backward graph (torch.autograd.graph.Node)."""

    # Rarely set attributes are class-level defaults (an instance gets its own on first write),
    # which keeps creating a node cheap.
    __slots__ = ("_next", "_seq", "__dict__", "__weakref__")
    _hooked = False  # True once any hook or retain_grad was registered on it (engine: slow path)
    _pre_hooks = None
    _post_hooks = None
    _tensor_hooks = None  # {output_nr: {id: hook}}
    _retained = None  # {output_nr: weakref to a tensor that retains its grad}
    _metadata = None
    _anomaly_trace = None

    def __init__(self, next_functions: tuple = ()) -> None:
        self.next_functions = next_functions
        self._seq = next(_sequence)

    @property
    def next_functions(self) -> tuple:
        """One ``(node, input_nr)`` per input of the forward op; ``(None, 0)`` for an input
        that does not require grad (as torch)."""
        return tuple(_NO_EDGE if e is None else e if e[0]._named else
                     (e[0]._named_as_torch(), e[1]) for e in self._next)

    @next_functions.setter
    def next_functions(self, edges: tuple) -> None:
        self._next = tuple(None if e is None or e[0] is None else e for e in edges)

    _named = True  # (an op's node: False until it is made an instance of its op's class)

    def name(self) -> str:
        return type(self).__name__

    def _graph_positions(self) -> tuple | None:
        """The inputs that ``next_functions`` lists (and a post-hook sees), None for all."""
        return None

    @property
    def metadata(self) -> dict:
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def _sequence_nr(self) -> int:
        return self._seq

    def register_hook(self, fn: Callable) -> RemovableHandle:
        """Registers ``fn(grad_inputs, grad_outputs) -> grad_inputs | None`` run after the node."""
        if self._post_hooks is None:
            self._post_hooks = {}
        self._hooked = True
        return RemovableHandle(self._post_hooks, fn)

    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """Registers ``fn(grad_outputs) -> grad_outputs | None`` run before the node."""
        if self._pre_hooks is None:
            self._pre_hooks = {}
        self._hooked = True
        return RemovableHandle(self._pre_hooks, fn)

    def _register_tensor_prehook(self, output_nr: int, hook: Callable) -> RemovableHandle:
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
        self._hooked = True
        return RemovableHandle(self._tensor_hooks.setdefault(output_nr, {}), hook)

    def _add_retain_grad(self, tensor: Any) -> None:
        import weakref

        if self._retained is None:
            self._retained = {}
        self._hooked = True
        self._retained[tensor._output_nr] = weakref.ref(tensor)

    def _tensor_pre_hooks(self, output_nr: int) -> list:
        if self._tensor_hooks is None or output_nr not in self._tensor_hooks:
            return []
        return list(self._tensor_hooks[output_nr].values())

    @property
    def n_outputs(self) -> int:
        return 1

    def _output_meta(self, i: int):
        raise NotImplementedError

    def apply(self, grad_outputs: list) -> tuple:
        raise NotImplementedError

    def apply_arrays(self, grad_outputs: list, release: bool) -> tuple:
        """``apply`` on plain arrays (the engine's lane when nothing records), then with
        ``release`` its saved values freed. Gradients are wrapped as tensors for ``apply`` and
        its results unwrapped."""
        out = self.apply([None if g is None else as_tensor(g) for g in grad_outputs])
        if release:
            self._release()
        return [None if g is None else g._data for g in out]

    def _release(self) -> None:
        """Frees saved values after a backward without ``retain_graph``."""

    def __call__(self, *grad_outputs: Any) -> Any:
        out = self.apply(list(grad_outputs))
        return out[0] if len(out) == 1 else tuple(out)

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"


def _short_name(node: Node | None) -> str:
    """A node as torch's version-counter error names it (C++ nodes by their C++ name)."""
    if node is None:
        return ""
    name = node.name()
    if name == "CopySlices":
        return "jitgrad::autograd::CopySlices"
    return re.sub(r"Backward\d*$", "", name)


def check_version(vc: list, expected: int, data: Any, dt: Any, producer: Any) -> None:
    """The saved-value check, the one place that makes its error: a value saved for backward
    at version ``expected`` of version counter ``vc`` must be unchanged, else torch's error
    naming it (``data``: its array, None if unknown) and ``producer``, the node that made it
    (for a saved input: the input's ``grad_fn`` now; a name for a compiled function's)."""
    if vc[0] != expected:
        name = producer if type(producer) is str else _short_name(producer)
        desc = describe(data, dt) if data is not None else "tensor"
        raise version_error(desc, name, vc[0], expected)


def version_error(tensor_desc: str, producer: str, found: int, expected: int) -> RuntimeError:
    clause = f", which is output 0 of {producer}," if producer else ""
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [{tensor_desc}]{clause} is at version {found}; expected version {expected} "
        "instead. Hint: enable anomaly detection to find the operation that failed to compute "
        "its gradient, with jitgrad.autograd.set_detect_anomaly(True, check_nan=False).")


def describe(data, dt) -> str:
    return f"jitgrad.{dt._legacy} {list(data.shape)}"


FREED = ("Trying to backward through the graph a second time (or directly access saved tensors "
         "after they have already been freed). Saved intermediate values of the graph are freed "
         "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
         "backward through the graph a second time or if you need to access saved tensors after "
         "calling backward.")


class SavedTensor:
    """A value saved for backward: remembers its version, and goes through saved-tensor hooks."""

    __slots__ = ("_value", "_version", "_vc", "_is_output", "_output_nr", "_unpack", "_dtype",
                 "_fw", "_origin")

    def __init__(self, tensor: Any, is_output: bool, output_nr: int = 0) -> None:
        if tensor._is_inference:
            raise RuntimeError(
                "Inference tensors cannot be saved for backward. Please do not use Tensors "
                "created in inference mode in computation tracked by autograd. To work around "
                "this, you can make a clone to get a normal tensor and use it in autograd, or use "
                "`jitgrad.no_grad()` instead of `jitgrad.inference_mode()`.")
        vc = self._vc = tensor._vc
        self._version = vc[0]
        self._is_output = is_output
        self._output_nr = output_nr  # an output: which output of its node it is
        self._dtype = tensor._dtype
        self._fw = tensor._fw_grads if is_output else None  # an output's forward-AD tangents
        if saved_tensor_hooks_stack:
            hooks = saved_tensor_hooks_stack[-1]
            active = saved_tensor_hooks_stack[:]
            saved_tensor_hooks_stack.clear()  # what the pack hook computes saves no hooks
            try:
                self._value = hooks[0](tensor.detach() if is_output else tensor)
            finally:
                saved_tensor_hooks_stack[:] = active
            self._unpack = hooks[1]
            if not is_output:  # the unpacked value takes the tensor's place in the graph
                leaf = tensor._grad_fn is None and tensor._requires_grad
                self._origin = (tensor._grad_fn, tensor._output_nr,
                                tensor._get_accumulator() if leaf else None)
        else:
            # An output is kept as its array only: holding the tensor would make a cycle.
            self._value = tensor._data if is_output else tensor
            self._unpack = None

    @property
    def _meta(self) -> registry.Meta:
        value = self._value
        data = value if self._is_output and self._unpack is None else getattr(value, "_data",
                                                                               None)
        return registry.Meta(getattr(data, "shape", None), self._dtype)

    def unpack(self, node: Node) -> Any:
        vc = self._vc
        if vc is None:
            raise RuntimeError(FREED)
        if vc[0] != self._version:
            value = self._value
            if self._unpack is None:
                data = value if self._is_output else value._data
            else:
                data = getattr(value, "_data", None)
            # torch names the saved tensor's current producer (an in-place op rebased it)
            producer = node if self._is_output else getattr(value, "_grad_fn", None)
            check_version(vc, self._version, data, self._dtype, producer)
        if self._unpack is not None:
            value = self._unpack(self._value)
            if not isinstance(value, registry.Tensor):
                raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but "
                                f"got result of type {type(value).__name__}")
            if self._is_output:
                value = _as_output(value._data, value._dtype, node, self._fw, self._output_nr)
            elif getattr(self, "_origin", None) is not None:
                value = _with_origin(value, self._origin)
            return value
        if self._is_output:
            return _as_output(self._value, self._dtype, node, self._fw, self._output_nr)
        return self._value

    def release(self) -> None:
        self._value = None
        self._vc = None

    def register_hooks(self, pack_hook: Callable, unpack_hook: Callable) -> None:
        """Packs this saved value with ``pack_hook`` now and unpacks it with ``unpack_hook``
        when backward (or ``grad_fn._saved_<name>``) reads it (torch's
        ``SavedTensor.register_hooks``; reached through ``grad_fn._raw_saved_<name>``)."""
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("register_hooks(): incompatible function arguments. The following "
                            "argument types are supported:\n    1. (self: SavedTensor, arg0: "
                            "Callable, arg1: Callable) -> None")
        if self._unpack is not None:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have "
                               "already been set. Hint: only one pair of hooks is allowed at a "
                               "time.")
        if self._vc is None:
            raise RuntimeError(FREED)
        value = self._value
        if self._is_output:  # kept as its array: hooks see a tensor, as for other saved values
            value = as_tensor(value)
        else:  # the unpacked value takes the saved tensor's place in the graph, as in torch
            leaf = value._grad_fn is None and value._requires_grad
            self._origin = (value._grad_fn, value._output_nr,
                            value._get_accumulator() if leaf else None)
        self._value = pack_hook(value)
        self._unpack = unpack_hook


saved_tensor_hooks_stack: list = []


def _with_origin(value: Any, origin: tuple) -> Any:
    """An unpacked value as a tensor with the saved tensor's place in the graph (its grad_fn,
    or, for a leaf, its gradient accumulator), so gradients of gradients reach the original."""
    grad_fn, output_nr, accumulator = origin
    t = _make(value._data, value._dtype, grad_fn)
    if grad_fn is not None:
        t._output_nr = output_nr
    elif accumulator is not None:
        t._requires_grad = True
        t._accumulator = accumulator
    return t


def _as_output(data, dt, node: Node, fw: Any, output_nr: int = 0) -> Any:
    """A saved output, unpacked: a fresh tensor on its array whose ``grad_fn`` is its node and
    whose ``output_nr`` is the output it was (what a gradient reaching it flows back into)."""
    t = _make(data, dt, node)
    if output_nr:
        t._output_nr = output_nr
    if fw is not None:  # its forward-AD tangents (only then: the attribute costs a __dict__)
        t._fw_grads = fw
    return t


def as_tensor(data: Any) -> Any:
    """A gradient array as a tensor (its dtype read off the array)."""
    return _make(data, _BY_NUMPY[data.dtype])


def _meta(shape: tuple, dt: Any) -> registry.Meta:
    m = _new_object(registry.Meta)  # Meta(shape, dtype), without the class call
    m.shape = shape
    m.dtype = dt
    return m


def saved_raw(value: Any, vc: Any, version: int, is_output: bool, dt: Any) -> SavedTensor:
    """A SavedTensor over a value already kept elsewhere (a uniform node's input or result),
    with no hooks: ``value`` is the tensor (an input) or its array (an output, output 0)."""
    s = _new_object(SavedTensor)
    s._value, s._vc, s._version, s._dtype = value, vc, version, dt
    s._is_output, s._output_nr, s._unpack, s._fw = is_output, 0, None, None
    return s


def _save(tensor: Any, is_output: bool) -> SavedTensor:
    """``SavedTensor(tensor, is_output)``; the common case (no saved-tensor hooks, a normal
    tensor) without the class call and its checks."""
    if saved_tensor_hooks_stack or tensor._is_inference:
        return SavedTensor(tensor, is_output)
    s = _new_object(SavedTensor)
    vc = s._vc = tensor._vc
    s._version = vc[0]
    s._is_output = is_output
    s._output_nr = 0  # (a primitive saves only its output 0)
    s._unpack = None
    s._dtype = tensor._dtype
    if is_output:  # kept as its array only: holding the tensor would make a cycle
        s._value = tensor._data
        s._fw = tensor._fw_grads
    else:
        s._value = tensor
        s._fw = None
    return s


def _zeros(meta: registry.Meta, like: Any = None) -> Any:
    """``zeros(meta.shape, dtype=meta.dtype)``: the gradient of an output that got none, on the
    device of ``like`` (another output's gradient) when that is not the CPU."""
    if like is not None and not isinstance(like, Tracer) and not like.is_cpu:  # (tracers: none)
        return like.new_zeros(meta.shape, dtype=meta.dtype)
    return _new(np.zeros(meta.shape, dtype=meta.dtype.np), meta.dtype)


def edge_of(a: Any) -> tuple | None:
    """The edge from a node recording an op to its input ``a``, the one place that makes it:
    ``(grad_fn, output_nr)`` of a tensor with a history, its ``AccumulateGrad``'s edge for a
    leaf that requires grad, None otherwise (a tensor that needs no gradient). A view whose base
    was changed in place gets its new history first."""
    if a._base is not None and a._vc[0] != a._view_version:
        _refresh_view(a)  # its base changed in place: a new history
    fn = a._grad_fn
    if fn is not None:
        return (fn, a._output_nr)
    if a._requires_grad:
        return (a._accumulator or a._get_accumulator()).edge
    return None


def edges_of(args: tuple) -> tuple[list, int]:
    """The edges of a node recording an op on ``args``, one per argument (``edge_of`` of a
    tensor, None for a number), and the mask of the arguments with an edge (bit i: argument i
    needs a gradient)."""
    edges = []
    mask = 0
    bit = 1
    for a in args:
        e = edge_of(a) if type(a) is Tensor or isinstance(a, Tensor) else None
        edges.append(e)  # (parameters are a Tensor subclass)
        if e is not None:
            mask |= bit
        bit += bit
    return edges, mask


def _edge(a: Any) -> tuple | None:
    """The edge of one argument (see ``edges_of``)."""
    return edge_of(a) if isinstance(a, Tensor) else None


class AccumulateGrad(Node):
    """The node that accumulates a leaf tensor's gradient into ``.grad``."""

    __slots__ = ("variable", "edge")

    def __init__(self, variable: Any) -> None:
        super().__init__(())
        self._seq = -1  # the engine runs it once all its producers ran, else last
        self.variable = variable
        self.edge = (self, 0)  # the edge into it, shared by all the leaf's consumers
        if variable._hooks:  # the leaf's hooks are this node's tensor pre-hooks
            self._hooked = True

    def _tensor_pre_hooks(self, output_nr: int) -> list:
        hooks = self.variable._hooks
        return list(hooks.values()) if hooks else []

    def _sequence_nr(self) -> int:
        return 2**64 - 1  # torch's: a leaf's gradient is accumulated as soon as it is ready

    def _output_meta(self, i: int):
        v = self.variable
        return registry.Meta(v._data.shape, v._dtype)

    def apply(self, grad_outputs: list) -> tuple:
        g = grad_outputs[0]
        if g is None:
            return ()
        var = self.variable
        if registry.sparse_live:  # a sparse gradient (or .grad) is summed as torch's
            return self._apply_sparse(g)
        if registry.state.grad_enabled:  # create_graph: the new .grad keeps its graph
            var._grad = g if var._grad is None else var._grad + g
        elif var._grad is None:
            var._grad = _fresh(g, var)
        elif var._grad.requires_grad:
            var._grad = (var._grad + g).detach()
        elif var._grad._dtype is dtypes.bfloat16:  # (the sum rounded, as every bfloat16 result)
            var._grad._data[...] = dtypes.round_to_bfloat16(var._grad._data + g._data)
        else:
            var._grad._data += g._data
        self._post_accumulate()
        return ()

    def _post_accumulate(self) -> None:
        var = self.variable
        if var._post_acc_hooks:
            for hook in list(var._post_acc_hooks.values()):
                if hook(var) is not None:
                    raise RuntimeError("Tensor post accumulate grad hooks should return None.")

    def _apply_sparse(self, g: Any) -> tuple:
        """``apply`` once sparse tensors exist: torch's accumulation of sparse gradients. The
        first one is kept as it is (sparse), a sparse one adds into a sparse ``.grad`` as
        torch's sparse add (``+=`` of the storages), and a sum with a dense one is dense
        (in place into a dense ``.grad``); ``.grad`` is a sparse tensor while its data is a
        sparse storage."""
        var = self.variable
        wrap = registry.sparse_wrap
        g = wrap(g)
        old = var._grad
        if registry.state.grad_enabled:  # create_graph: the new .grad keeps its graph
            var._grad = g if old is None else wrap(g + old if type(old._data) is not _ndarray
                                                   and type(g._data) is _ndarray else old + g)
        elif old is None:
            var._grad = wrap(_fresh(g, var))
        elif old.requires_grad:
            var._grad = wrap((old + g).detach())
        elif type(old._data) is not _ndarray and type(g._data) is _ndarray:  # sparse + dense
            var._grad = _make(g._data + old._data, g._dtype)
        elif old._dtype is dtypes.bfloat16:
            old._data[...] = dtypes.round_to_bfloat16(old._data + g._data)
        else:
            old._data += g._data  # (dense += sparse in place; sparse += sparse merges)
            wrap(old)
        self._post_accumulate()
        return ()

    def apply_arrays(self, grad_outputs: list, release: bool) -> tuple:
        g = grad_outputs[0]
        var = self.variable
        if g is None:
            return ()
        grad = var._grad
        if grad is not None and grad.requires_grad or var._post_acc_hooks \
                or registry.sparse_live and (type(g) is not _ndarray or grad is not None
                                             and type(grad._data) is not _ndarray):
            return self.apply([as_tensor(g)])  # (a sparse gradient: apply sums it as torch)
        if grad is None:  # gradients may alias each other or user tensors: copy once
            var._grad = _make(_copy_laid_out(g, var), _BY_NUMPY[g.dtype])
        else:
            grad._data += g
        return ()


def _fresh(g: Any, var: Any) -> Any:
    # Gradients flowing through the graph may alias each other or user tensors: copy once.
    data = g._data
    return _make(_copy_laid_out(data, var) if type(data) is np.ndarray else data.copy(),
                 g._dtype)


def _copy_laid_out(data: np.ndarray, var: Any) -> np.ndarray:
    """A copy of a leaf's first gradient, laid out as the leaf when its elements fill their
    memory in another order (channels-last, transposed): torch's gradient layout contract."""
    like = var._data
    if type(like) is np.ndarray and like.ndim > 1 and not like.flags.c_contiguous \
            and like.shape == data.shape and min(like.strides) >= 0 \
            and dense_in_some_order(like):
        return laid_out_like(data, like)
    return data.copy()


class _AnomalyState:
    enabled = False
    check_nan = True

    @staticmethod
    def record(node: Node) -> None:
        # The user's call stack: jitgrad's own frames at the top of the stack are dropped.
        import os
        import traceback

        stack = traceback.extract_stack()
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
        while stack and os.path.abspath(stack[-1].filename).startswith(package):
            stack.pop()
        node._anomaly_trace = traceback.format_list(stack)


_anomaly = _AnomalyState()



_tensor.graph.AccumulateGrad = AccumulateGrad
