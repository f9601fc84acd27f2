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

from ..dtypes import _BY_NUMPY
from ..ops import registry
from . import rule_programs

_sequence = itertools.count()
_new = object.__new__
_NO_EDGE = (None, 0)
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
        return tuple(_NO_EDGE if e is None else e for e in self._next)

    @next_functions.setter
    def next_functions(self, edges: tuple) -> None:
        self._next = tuple(None if e is None or e[0] is None else e for e in edges)

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

    __slots__ = ("_value", "_version", "_vc", "_is_output", "_unpack", "_dtype", "_fw")

    def __init__(self, tensor: Any, is_output: bool) -> None:
        if tensor._is_inference:
            raise RuntimeError(
                "Inference tensors cannot be saved for backward. Please do not use Tensors "
                "created in inference mode in computation tracked by autograd. To work around "
                "this, you can make a clone to get a normal tensor and use it in autograd, or use "
                "`jitgrad.no_grad()` instead of `jitgrad.inference_mode()`.")
        vc = self._vc = tensor._vc
        self._version = vc[0]
        self._is_output = is_output
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
            desc = describe(data, self._dtype) if data is not None else "tensor"
            # torch names the saved tensor's current producer (an in-place op rebased it)
            producer = node if self._is_output else getattr(value, "_grad_fn", None)
            raise version_error(desc, _short_name(producer), vc[0], self._version)
        if self._unpack is not None:
            value = self._unpack(self._value)
            if self._is_output:
                value = _as_output(value._data, value._dtype, node, self._fw)
            return value
        if self._is_output:
            return _as_output(self._value, self._dtype, node, self._fw)
        return self._value

    def release(self) -> None:
        self._value = None
        self._vc = None


saved_tensor_hooks_stack: list = []


def _as_output(data, dt, node: Node, fw: Any) -> Any:
    """A saved output, unpacked: a fresh tensor on its array whose ``grad_fn`` is its node."""
    t = _new(registry.Tensor)  # Tensor._init, inlined
    t._data = data
    t._dtype = dt
    t._vc = [0]
    t._grad_fn = node
    if fw is not None:  # its forward-AD tangents (only then: the attribute costs a __dict__)
        t._fw_grads = fw
    return t


def as_tensor(data: Any) -> Any:
    """A gradient array as a tensor (its dtype read off the array)."""
    t = _new(registry.Tensor)  # Tensor._init, inlined
    t._data = data
    t._dtype = _BY_NUMPY[data.dtype]
    t._vc = [0]
    t._grad_fn = None
    return t


def _meta(shape: tuple, dt: Any) -> registry.Meta:
    m = _new(registry.Meta)  # Meta(shape, dtype), without the class call
    m.shape = shape
    m.dtype = dt
    return m


def _save(tensor: Any, is_output: bool) -> SavedTensor:
    """``SavedTensor(tensor, is_output)``; the common case (no saved-tensor hooks, a normal
    tensor) without the class call and its checks."""
    if saved_tensor_hooks_stack or tensor._is_inference:
        return SavedTensor(tensor, is_output)
    s = _new(SavedTensor)
    vc = s._vc = tensor._vc
    s._version = vc[0]
    s._is_output = is_output
    s._unpack = None
    s._dtype = tensor._dtype
    if is_output:  # kept as its array only: holding the tensor would make a cycle
        s._value = tensor._data
        s._fw = tensor._fw_grads
    else:
        s._value = tensor
        s._fw = None
    return s


class OpNode(Node):
    """The backward of one primitive op: applies its VJP rule to the saved values."""

    __slots__ = ("op", "params", "_inputs", "_out", "_out_meta", "_saved", "_needs", "_freed",
                 "n_outputs", "_key")

    def name(self) -> str:
        return self.op.node_name

    @staticmethod
    def record(op: registry.OpDef, args: tuple, params: dict, outputs: tuple) -> OpNode:
        """Creates the node of one op call and makes it the ``grad_fn`` of its outputs."""
        Tensor = registry.Tensor
        edges = []  # one per input: (node, output_nr), or None if it needs no gradient
        for a in args:
            if isinstance(a, Tensor):
                if a._base is not None and a._vc[0] != a._view_version:
                    _refresh_view(a)  # its base changed in place: a new history
                fn = a._grad_fn
                if fn is not None:
                    edges.append((fn, a._output_nr))
                    continue
                if a._requires_grad:
                    edges.append((a._accumulator or a._get_accumulator()).edge)
                    continue
            edges.append(None)
        # Shape and dtype of the output(s): one Meta for a single output, which inputs of the
        # same shape and dtype share (one object, not one per input: records stay light).
        single = len(outputs) == 1
        if single:
            o = outputs[0]
            out_meta = _new(registry.Meta)  # _meta(shape, dtype), inlined
            out_meta.shape = out_shape = o._data.shape
            out_meta.dtype = out_dtype = o._dtype
        else:
            out_meta = tuple(_meta(o._data.shape, o._dtype) for o in outputs)
        # What backward keeps of each input: the tensor itself (saved: version-checked, through
        # saved-tensor hooks) or only its shape and dtype.
        save = op.save
        cond = registry.SAVE_IF.get(op) if save else None  # saved only if some grads need them
        inputs = []
        has_saved = False
        # A uniform signature (tensors of the output's shape and dtype, no params) gets a key
        # for the engine's traced rule programs: (mask of inputs needing grad, dtype, shape).
        uniform = single and not params
        mask = 0
        i = 0
        for a in args:
            if not isinstance(a, Tensor):
                inputs.append(a)
                uniform = False
                i += 1
                continue
            shape = a._data.shape
            same = single and a._dtype is out_dtype and shape == out_shape
            if not same:
                uniform = False
            if edges[i] is not None:
                mask |= 1 << i
            if i in save and (cond is None or i not in cond or _any_needed(edges, cond[i])):
                inputs.append(_save(a, False))
                has_saved = True
            else:
                inputs.append(out_meta if same else _meta(shape, a._dtype))
            i += 1
        node = _new(OpNode)
        node._key = (mask, out_dtype, out_shape) if uniform else None
        node._next = node._needs = tuple(edges)  # (an input needs a gradient iff it has an edge)
        node._seq = next(_sequence)
        node._freed = False
        node.op = op
        node.params = params
        node._inputs = inputs if has_saved else tuple(inputs)
        if op.save_output:
            node._out = _save(outputs[0], True)
            node._saved = True
        else:
            node._out = None
            node._saved = has_saved
        node.n_outputs = len(outputs)  # (op.n_outputs is 0 for variadic ops: split)
        node._out_meta = out_meta
        if single:
            if out_dtype.is_floating_point or out_dtype.is_complex:
                o._grad_fn = node  # (its _output_nr is 0: a fresh output of apply)
        else:
            for i, o in enumerate(outputs):
                if o._dtype.is_floating_point or o._dtype.is_complex:
                    o._grad_fn = node
                    o._output_nr = i
        if _anomaly.enabled:
            _anomaly.record(node)
        return node

    @staticmethod
    def record_uniform(op: registry.OpDef, args: tuple, result: Any) -> OpNode:
        """``record`` for the hot case, which the dispatcher has checked: tensor arguments of
        the result's dtype, no params, one output. With the result's shape too, the node is
        *uniform*: only its saved inputs are kept (the others are None: their shape and dtype
        are the key's), and the engine runs its rule program."""
        shape = result._data.shape
        dt = result._dtype
        if args[0]._dtype is not dt:  # (a category rule changed the dtype)
            return OpNode.record(op, args, {}, (result,))
        edges = []
        mask = 0
        bit = 1
        for a in args:
            if a._base is not None and a._vc[0] != a._view_version:
                _refresh_view(a)  # its base changed in place: a new history
            if a._data.shape != shape:  # broadcasting: the general record
                return OpNode.record(op, args, {}, (result,))
            fn = a._grad_fn
            if fn is not None:
                edges.append((fn, a._output_nr))
                mask |= bit
            elif a._requires_grad:
                edges.append((a._accumulator or a._get_accumulator()).edge)
                mask |= bit
            else:
                edges.append(None)
            bit += bit
        plan = op.save_plans.get(mask)
        if plan is None:
            plan = _save_plan(op, edges)
        node = _new(OpNode)
        node._next = node._needs = tuple(edges)
        node._seq = next(_sequence)
        node._freed = False
        node.op = op
        node.params = _NO_PARAMS
        node.n_outputs = 1
        node._out_meta = None  # (made from the key when asked for)
        node._key = (mask, dt, shape)
        if plan:
            inputs = []
            i = 0
            for a in args:
                if plan[i]:
                    if saved_tensor_hooks_stack or a._is_inference:
                        inputs.append(SavedTensor(a, False))
                    else:
                        v = _new(SavedTensor)  # _save(a, False), inlined
                        vc = v._vc = a._vc
                        v._version = vc[0]
                        v._is_output = False
                        v._unpack = v._fw = None
                        v._dtype = dt
                        v._value = a
                        inputs.append(v)
                else:
                    inputs.append(None)
                i += 1
            node._inputs = inputs
            node._saved = True
        else:
            node._inputs = (None,) * len(args)
            node._saved = False
        if op.save_output:
            node._out = _save(result, True)
            node._saved = True
        else:
            node._out = None
        if dt.is_floating_point or dt.is_complex:
            result._grad_fn = node
        if _anomaly.enabled:
            _anomaly.record(node)
        return node

    def _output_meta(self, i: int):
        # the Meta of its output, or a tuple of one per output
        if self._out_meta is None:  # uniform: from its key
            self._out_meta = _meta(self._key[2], self._key[1])
        return self._out_meta if self.n_outputs == 1 else self._out_meta[i]

    def apply(self, grad_outputs: list) -> tuple:
        if self._freed:
            raise RuntimeError(FREED)
        inputs = self._inputs
        if self._key is not None:  # uniform: unsaved inputs (None) have the output's Meta
            meta = self._output_meta(0)
            inputs = [meta if v is None else v for v in inputs]
        if type(inputs) is list:  # some inputs were saved: unpack (and version-check) them
            unpacked = []
            for v in inputs:
                if type(v) is SavedTensor:
                    vc = v._vc
                    # unchanged and without hooks: the tensor itself (SavedTensor.unpack, inlined)
                    v = v._value if vc is not None and vc[0] == v._version \
                        and v._unpack is None else v.unpack(self)
                unpacked.append(v)
            inputs = unpacked
        out = self._out
        if out is None:
            ans = None
        elif out._vc is not None and out._vc[0] == out._version and out._unpack is None:
            ans = _as_output(out._value, out._dtype, self, out._fw)  # (unpack, inlined)
        else:
            ans = out.unpack(self)
        if len(grad_outputs) == 1:
            grads = grad_outputs if grad_outputs[0] is not None else \
                (_zeros(self._output_meta(0)),)
        else:
            grads = tuple(g if g is not None else _zeros(self._output_meta(i))
                          for i, g in enumerate(grad_outputs))
        return registry.run_vjp(self.op, grads, ans, inputs, self.params, self._needs)

    def apply_arrays(self, grad_outputs: list, release: bool) -> tuple:
        key = self._key
        if key is not None and grad_outputs[0] is not None:
            program = self.op.programs.get(key)
            if type(program) is int or program is None or program is False:
                program = rule_programs.lookup(self, key)
            if program is not None:  # a uniform node: its rule program does it all
                return program(self, grad_outputs[0], release)
        return Node.apply_arrays(self, grad_outputs, release)

    def _release(self) -> None:
        if self._saved:
            self._freed = True
            for v in self._inputs:
                if type(v) is SavedTensor:
                    v._value = v._vc = None  # SavedTensor.release, inlined
            out = self._out
            if out is not None:
                out._value = out._vc = None

    # torch exposes saved values as _saved_self / _saved_result etc.
    @property
    def _saved_result(self) -> Any:
        return self._out.unpack(self) if self._out is not None else None

    @property
    def _saved_tensors(self) -> tuple:
        return tuple(v.unpack(self) for v in self._inputs if isinstance(v, SavedTensor))



def _refresh_view(t: Any) -> None:
    from ..tensor import _refresh_view as refresh

    refresh(t)


_NO_PARAMS: dict = {}


def _save_plan(op: registry.OpDef, edges: list) -> tuple:
    """Which inputs ``op`` saves when the inputs with an edge need gradients: a tuple of
    bools per input, or () when it saves none (kept in ``op.save_plans`` by needs mask)."""
    save = op.save
    cond = registry.SAVE_IF.get(op)
    plan = tuple(i in save and (cond is None or i not in cond or _any_needed(edges, cond[i]))
                 for i in range(len(edges)))
    mask = sum(1 << i for i, e in enumerate(edges) if e is not None)
    op.save_plans[mask] = plan = plan if any(plan) else ()
    return plan


def _any_needed(needs: list, positions: tuple) -> bool:
    for j in positions:
        if needs[j]:
            return True
    return False


def _needed_saves(op: registry.OpDef, args: tuple) -> tuple:
    Tensor = registry.Tensor
    req = [isinstance(a, Tensor) and (a._requires_grad or a._grad_fn is not None) for a in args]
    cond = registry.SAVE_IF[op]
    return tuple(i for i in op.save if i not in cond or any(req[j] for j in cond[i]))


def _zeros(meta: registry.Meta) -> Any:
    from ..ops.creation import zeros

    return zeros(meta.shape, dtype=meta.dtype)


def _edge(a: Any) -> tuple | None:
    if not isinstance(a, registry.Tensor):
        return None
    if a._base is not None and a._vc[0] != a._view_version:
        _refresh_view(a)
    if a._grad_fn is not None:
        return (a._grad_fn, a._output_nr)
    if a._requires_grad:
        return (a._get_accumulator(), 0)
    return None


class AccumulateGrad(Node):
    """The node that accumulates a leaf tensor's gradient into ``.grad``."""

    __slots__ = ("variable", "edge")

    def __init__(self, variable: Any) -> None:
        super().__init__(())
        self._seq = -1  # the engine runs it once all its producers ran, else last
        self.variable = variable
        self.edge = (self, 0)  # the edge into it, shared by all the leaf's consumers

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

    def apply_arrays(self, grad_outputs: list, release: bool) -> tuple:
        g = grad_outputs[0]
        var = self.variable
        if g is None:
            return ()
        grad = var._grad
        if grad is not None and grad.requires_grad or var._post_acc_hooks:
            return self.apply([as_tensor(g)])
        if grad is None:  # gradients may alias each other or user tensors: copy once
            grad = var._grad = _new(registry.Tensor)
            grad._data = g.copy()
            grad._dtype = _BY_NUMPY[g.dtype]
            grad._vc = [0]
            grad._grad_fn = None
        else:
            grad._data += g
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
        # The user's call stack: jitgrad's own frames at the top of the stack are dropped.
        import os
        import traceback

        stack = traceback.extract_stack()
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
        while stack and os.path.abspath(stack[-1].filename).startswith(package):
            stack.pop()
        node._anomaly_trace = traceback.format_list(stack)


_anomaly = _AnomalyState()

registry.OpNode = OpNode
