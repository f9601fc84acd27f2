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

from ..ops import registry

_sequence = itertools.count()
_handle_ids = itertools.count()


class RemovableHandle:
    """Returned by ``register_hook``-style calls; ``remove()`` unregisters the hook."""

    __slots__ = ("_hooks", "id")

    def __init__(self, hooks: dict, hook: Callable) -> None:
        self.id = next(_handle_ids)
        self._hooks = hooks
        hooks[self.id] = hook

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


class Node:
    """A node of the backward graph (torch.autograd.graph.Node)."""

    __slots__ = ("next_functions", "_seq", "_pre_hooks", "_post_hooks", "_tensor_hooks",
                 "_retained", "_metadata", "_anomaly_trace", "__weakref__")

    def __init__(self, next_functions: tuple = ()) -> None:
        self.next_functions = next_functions
        self._seq = next(_sequence)
        self._pre_hooks = None
        self._post_hooks = None
        self._tensor_hooks = None  # {output_nr: {id: hook}}
        self._retained = None  # {output_nr: weakref to a tensor that retains its grad}
        self._metadata = None
        self._anomaly_trace = None

    def name(self) -> str:
        return type(self).__name__

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
        return RemovableHandle(self._post_hooks, fn)

    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """Registers ``fn(grad_outputs) -> grad_outputs | None`` run before the node."""
        if self._pre_hooks is None:
            self._pre_hooks = {}
        return RemovableHandle(self._pre_hooks, fn)

    def _register_tensor_prehook(self, output_nr: int, hook: Callable) -> RemovableHandle:
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
        return RemovableHandle(self._tensor_hooks.setdefault(output_nr, {}), hook)

    def _add_retain_grad(self, tensor: Any) -> None:
        import weakref

        if self._retained is None:
            self._retained = {}
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

    def _release(self) -> None:
        """Frees saved values after a backward without ``retain_graph``."""

    def __call__(self, *grad_outputs: Any) -> Any:
        out = self.apply(list(grad_outputs))
        return out[0] if len(out) == 1 else tuple(out)

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"


def _short_name(node: Node | None) -> str:
    return re.sub(r"Backward\d*$", "", node.name()) if node is not None else ""


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

    __slots__ = ("_value", "_version", "_vc", "_is_output", "_unpack", "_meta")

    def __init__(self, tensor: Any, is_output: bool) -> None:
        if tensor._is_inference:
            raise RuntimeError(
                "Inference tensors cannot be saved for backward. To work around you can make a "
                "clone to get a normal tensor and use it in autograd.")
        self._vc = tensor._vc
        self._version = tensor._vc[0]
        self._is_output = is_output
        self._meta = registry.Meta(tensor._data.shape, tensor._dtype)
        hooks = saved_tensor_hooks_stack[-1] if saved_tensor_hooks_stack else None
        if hooks is not None:
            self._value = hooks[0](tensor.detach() if is_output else tensor)
            self._unpack = hooks[1]
        else:
            # An output is kept as its array only: holding the tensor would make a cycle.
            self._value = tensor._data if is_output else tensor
            self._unpack = None

    def unpack(self, node: Node) -> Any:
        if self._value is None and self._vc is None:
            raise RuntimeError(FREED)
        if self._vc[0] != self._version:
            value = self._value
            data = value if self._is_output else getattr(value, "_data", None)
            desc = describe(data, self._meta.dtype) if data is not None else "tensor"
            producer = node if self._is_output else getattr(value, "_grad_fn", None)
            raise version_error(desc, _short_name(producer), self._vc[0], self._version)
        if self._unpack is not None:
            value = self._unpack(self._value)
            if self._is_output:
                value = _as_output(value._data, value._dtype, node)
            return value
        if self._is_output:
            return _as_output(self._value, self._meta.dtype, node)
        return self._value

    def release(self) -> None:
        self._value = None
        self._vc = None


saved_tensor_hooks_stack: list = []


def _as_output(data, dt, node: Node) -> Any:
    t = registry.Tensor.__new__(registry.Tensor)
    t._init(data, dt)
    t._grad_fn = node
    return t


class OpNode(Node):
    """The backward of one primitive op: applies its VJP rule to the saved values."""

    __slots__ = ("op", "params", "_inputs", "_out", "_out_meta", "_freed", "_saved")

    def name(self) -> str:
        return self.op.node_name

    @staticmethod
    def record(op: registry.OpDef, args: tuple, params: dict, outputs: tuple) -> OpNode:
        node = OpNode.__new__(OpNode)
        Node.__init__(node, tuple(_edge(a) for a in args))
        node.op = op
        node.params = params
        save = op.save
        inputs = []
        has_saved = False
        for i, a in enumerate(args):
            if not isinstance(a, registry.Tensor):
                inputs.append(a)
            elif i in save:
                inputs.append(SavedTensor(a, False))
                has_saved = True
            else:
                inputs.append(registry.Meta(a._data.shape, a._dtype))
        node._inputs = inputs
        node._out_meta = tuple(registry.Meta(o._data.shape, o._dtype) for o in outputs)
        node._out = SavedTensor(outputs[0], True) if op.save_output else None
        node._saved = has_saved or op.save_output
        node._freed = False
        for i, o in enumerate(outputs):
            if o._dtype.is_floating_point or o._dtype.is_complex:
                o._grad_fn = node
                o._output_nr = i
        if _anomaly.enabled:
            _anomaly.record(node)
        return node

    @property
    def n_outputs(self) -> int:
        return self.op.n_outputs

    def _output_meta(self, i: int):
        return self._out_meta[i]

    def apply(self, grad_outputs: list) -> tuple:
        if self._freed:
            raise RuntimeError(FREED)
        inputs = tuple(v.unpack(self) if isinstance(v, SavedTensor) else v for v in self._inputs)
        ans = self._out.unpack(self) if self._out is not None else None
        grads = tuple(g if g is not None else _zeros(m) for g, m in zip(grad_outputs,
                                                                         self._out_meta))
        needs = tuple(e is not None for e in self.next_functions)
        return tuple(registry.run_vjp(self.op, grads, ans, inputs, self.params, needs))

    def _release(self) -> None:
        if self._saved:
            self._freed = True
            for v in self._inputs:
                if isinstance(v, SavedTensor):
                    v.release()
            if self._out is not None:
                self._out.release()

    # torch exposes saved values as _saved_self / _saved_result etc.
    @property
    def _saved_result(self) -> Any:
        return self._out.unpack(self) if self._out is not None else None

    @property
    def _saved_tensors(self) -> tuple:
        return tuple(v.unpack(self) for v in self._inputs if isinstance(v, SavedTensor))


def _zeros(meta: registry.Meta) -> Any:
    from ..ops.creation import zeros

    return zeros(meta.shape, dtype=meta.dtype)


def _edge(a: Any) -> tuple | None:
    if not isinstance(a, registry.Tensor):
        return None
    if a._grad_fn is not None:
        return (a._grad_fn, a._output_nr)
    if a._requires_grad:
        return (a._get_accumulator(), 0)
    return None


class AccumulateGrad(Node):
    """The node that accumulates a leaf tensor's gradient into ``.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable: Any) -> None:
        super().__init__(())
        self.variable = variable

    def _tensor_pre_hooks(self, output_nr: int) -> list:
        hooks = self.variable._hooks
        return list(hooks.values()) if hooks else []

    def _output_meta(self, i: int):
        v = self.variable
        return registry.Meta(v._data.shape, v._dtype)

    def apply(self, grad_outputs: list) -> tuple:
        g = grad_outputs[0]
        if g is None:
            return ()
        var = self.variable
        if registry.state.grad_enabled:  # create_graph: the new .grad keeps its graph
            var._grad = g if var._grad is None else var._grad + g
        elif var._grad is None:
            var._grad = _fresh(g)
        elif var._grad.requires_grad:
            var._grad = (var._grad + g).detach()
        else:
            var._grad._data += g._data
        if var._post_acc_hooks:
            for hook in list(var._post_acc_hooks.values()):
                hook(var)
        return ()


def _fresh(g: Any) -> Any:
    # Gradients flowing through the graph may alias each other or user tensors: copy once.
    t = registry.Tensor.__new__(registry.Tensor)
    t._init(g._data.copy(), g._dtype)
    return t


class _AnomalyState:
    enabled = False
    check_nan = True

    @staticmethod
    def record(node: Node) -> None:
        import traceback

        node._anomaly_trace = traceback.format_stack()[:-3]


_anomaly = _AnomalyState()

registry.OpNode = OpNode
