"""The nodes of primitive ops: what ``apply`` records when an input requires grad.

``OpNode`` is the general record: any op, any arguments; its saved values are ``SavedTensor``s
(version-checked, through saved-tensor hooks) and its backward applies the op's VJP rule to
tensors. ``UniformNode`` is the hot case of eager mode, a pointwise op on tensors of one shape
and dtype with no params (``h * w``, ``tanh(h)``): it keeps its saved inputs as the tensors
themselves with their versions, and a backward that records nothing runs the op's rule as a
traced program on arrays (``rule_programs``). Both give torch's errors for freed and modified
saved values.
"""

from __future__ import annotations

from collections import defaultdict
from types import FunctionType as _FunctionType
from typing import Any

from .._np_errors import quiet, restore
from ..ops import registry
from ..ops.vjp_apply import SIXTEEN_BIT, run_vjp
from . import rule_programs
from .rule_programs import PROGRAMS
from .node import (
    FREED,
    Node,
    SavedTensor,
    _anomaly,
    saved_raw,
    _as_output,
    _meta,
    _new_object,
    _save,
    _sequence,
    _zeros,
    check_version,
    edge_of,
    edges_of,
    saved_tensor_hooks_stack,
)

_NO_PARAMS: dict = {}
class OpNode(Node):
    """The backward of one primitive op: applies its VJP rule to the saved values."""

    __slots__ = ("op", "params", "_inputs", "_out", "_out_meta", "_saved", "_needs", "_freed",
                 "n_outputs")
    _uniform = False  # (a UniformNode, whatever the op's class is named)
    _named = False  # (an instance of the op's own class, named as torch's node: True)

    def _named_as_torch(self) -> OpNode:
        """Makes this node an instance of its op's own class, named as torch's node
        (``type(y.grad_fn).__name__ == "MulBackward0"``), and returns it. Done when a user
        first sees it (``grad_fn``, ``next_functions``, a gradient edge), not when it is
        recorded: the record's attribute stores stay specialized for one class, and a
        backward nobody looked at runs on the two base classes."""
        cls = _node_classes(self.op)[1 if self._uniform else 0]
        self.__class__ = cls
        return self

    def name(self) -> str:
        return self.op.node_name

    def _graph_positions(self) -> tuple | None:
        """The inputs torch's node lists (``next_functions``, a post-hook's ``grad_inputs``),
        or None for all: torch lists the inputs its derivative formulas name, so none for an
        input without a rule (a VJP tuple's None: where's condition, gather's index), one the
        op declares ``non_differentiable`` and, but for pointwise ops (``x / count`` keeps its
        integer operand's edge), an integer or bool tensor (an index, a target) or a sequence
        holding tensors (an advanced index)."""
        inputs = self._inputs
        if inputs is None or len(inputs) != len(self._next):
            return None
        op = self.op
        rules = op.vjp if type(op.vjp) is tuple and len(op.vjp) == len(inputs) else None
        by_dtype = op.kind != registry.POINTWISE
        keep = tuple(i for i, v in enumerate(inputs)
                     if not (rules is not None and rules[i] is None or
                             i in op.non_differentiable or
                             by_dtype and _not_differentiable(v)))
        return None if len(keep) == len(inputs) else keep

    def _graph_edges(self) -> tuple:
        edges = Node.next_functions.fget(self)
        keep = self._graph_positions()
        return edges if keep is None else tuple(edges[i] for i in keep)

    next_functions = property(_graph_edges, Node.next_functions.fset,
                              doc=Node.next_functions.__doc__)

    @staticmethod
    def record(op: registry.OpDef, args: tuple, params: dict, outputs: tuple) -> OpNode:
        """Creates the node of one op call and makes it the ``grad_fn`` of its outputs."""
        Tensor = registry.Tensor
        edges = edges_of(args)[0]  # one per input: (node, output_nr), or None (no gradient)
        # Shape and dtype of the output(s): one Meta for a single output, which inputs of the
        # same shape and dtype share (one object, not one per input: records stay light).
        single = len(outputs) == 1
        if single:
            o = outputs[0]
            out_meta = _new_object(registry.Meta)  # _meta(shape, dtype), inlined
            out_meta.shape = out_shape = o._data.shape
            out_meta.dtype = out_dtype = o._dtype
        else:
            out_meta = tuple(_meta(o._data.shape, o._dtype) for o in outputs)
        # What backward keeps of each input: the tensor itself (saved: version-checked, through
        # saved-tensor hooks) or only its shape and dtype.
        save = op.save
        cond = op.save_if if save else None  # saved only if some grads need them
        inputs = []
        has_saved = False
        i = 0
        for a in args:
            if not isinstance(a, Tensor):
                inputs.append(a)
                if i in save and (cond is None or i not in cond or _any_needed(edges, cond[i])):
                    has_saved = True  # torch saves a number operand as a tensor: freed as one
            elif i in save and (cond is None or i not in cond or _any_needed(edges, cond[i])):
                inputs.append(_save(a, False))
                has_saved = True
            else:
                shape = a._data.shape
                if single and a._dtype is out_dtype and shape == out_shape:
                    inputs.append(out_meta)
                else:
                    inputs.append(_meta(shape, a._dtype))
            i += 1
        node = _new_object(OpNode)  # (its op's own class when first seen: _named_as_torch)
        node._next = node._needs = edges  # (an input needs a gradient iff it has an edge)
        node._seq = next(_sequence)
        node._freed = False
        node.op = op
        node.params = params
        node._inputs = inputs if has_saved else tuple(inputs)
        if op.save_output:
            if single:
                node._out = _save(outputs[0], True)
            else:  # every output, each unpacked as its own output_nr (a tuple, as the jit's);
                # a tuple ``save_output`` names the outputs the VJP reads (the others: None)
                keep = op.save_output if type(op.save_output) is tuple else None
                node._out = tuple(_save_output(o, i) if keep is None or i in keep else None
                                  for i, o in enumerate(outputs))
            node._saved = True
        else:
            node._out = None
            node._saved = has_saved
        node.n_outputs = len(outputs)  # (op.n_outputs is 0 for variadic ops: split)
        node._out_meta = out_meta
        flags = op.outputs_requiring_grad
        if flags is not None:  # an opaque op that knows which outputs depend on which inputs
            flags = flags(args, params)
        if single:
            if (out_dtype.is_floating_point or out_dtype.is_complex) and \
                    (flags is None or flags[0]):
                o._grad_fn = node  # (its _output_nr is 0: a fresh output of apply)
        else:
            for i, o in enumerate(outputs):
                if (o._dtype.is_floating_point or o._dtype.is_complex) and \
                        (flags is None or flags[i]):
                    o._grad_fn = node
                    o._output_nr = i
        if _anomaly.enabled:
            _anomaly.record(node)
        return node

    def _output_meta(self, i: int):
        # the Meta of its output, or a tuple of one per output
        return self._out_meta if self.n_outputs == 1 else self._out_meta[i]

    def _grads(self, grad_outputs: list) -> tuple:
        """The gradients of the outputs, zeros for those that got none."""
        if len(grad_outputs) == 1:
            return grad_outputs if grad_outputs[0] is not None else \
                (_zeros(self._output_meta(0)),)
        like = next((g for g in grad_outputs if g is not None), None)  # (its device)
        return tuple(g if g is not None else _zeros(self._output_meta(i), like)
                     for i, g in enumerate(grad_outputs))

    def apply(self, grad_outputs: list) -> tuple:
        if self._freed:
            raise RuntimeError(FREED)
        inputs = self._inputs
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
        elif type(out) is tuple:
            ans = tuple(s.unpack(self) if s is not None else None for s in out)
        elif out._vc is not None and out._vc[0] == out._version and out._unpack is None:
            ans = _as_output(out._value, out._dtype, self, out._fw)  # (unpack, inlined)
        else:
            ans = out.unpack(self)
        return run_vjp(self.op, self._grads(grad_outputs), ans, inputs, self.params,
                                self._needs)

    def apply_arrays(self, grad_outputs: list, release: bool) -> tuple:
        """The engine's lane: the op's rule as a traced program on arrays (see
        ``rule_programs.general_key``) where it has one, else ``apply`` on tensors."""
        if len(grad_outputs) == 1 and not self._freed:
            g = grad_outputs[0]
            if g is not None:
                key = rule_programs.general_key(self, g)
                if key is not None:
                    program = rule_programs.general_lookup(self, key)
                    if program is not None:
                        token = quiet()
                        try:
                            return program(self, g, release)
                        finally:
                            restore(token)
        return Node.apply_arrays(self, grad_outputs, release)

    def _rebind_result(self, vc: list, target: Any) -> None:
        """An in-place op wrote this node's result (whose version counter was ``vc``) into
        ``target``: the saved result is ``target`` now, checked against its version counter."""
        out = self._out
        if type(out) is SavedTensor and out._vc is vc:
            if out._unpack is None:  # (a packed value keeps its hooks' form: same values)
                out._value = target._data
            out._vc, out._version = target._vc, target._vc[0]

    def _release(self) -> None:
        if self._saved:
            self._freed = True
            for v in self._inputs:
                if type(v) is SavedTensor:
                    v._value = v._vc = None  # SavedTensor.release, inlined
            out = self._out
            for s in out if type(out) is tuple else (out,) if out is not None else ():
                if s is not None:
                    s._value = s._vc = None

    def _saved_entries(self) -> list:
        """(name, SavedTensor) for each value it saved (what ``viz`` draws)."""
        entries = [(f"arg{i}", v) for i, v in enumerate(self._inputs)
                   if type(v) is SavedTensor]
        out = self._out
        if type(out) is tuple:
            return entries + [(f"result{i}", s) for i, s in enumerate(out) if s is not None]
        return entries + ([("result", out)] if out is not None else [])

    # torch exposes saved values as _saved_self / _saved_result etc.
    @property
    def _saved_result(self) -> Any:
        out = self._out
        if type(out) is tuple:
            return tuple(s.unpack(self) if s is not None else None for s in out)
        return out.unpack(self) if out is not None else None

    @property
    def _saved_tensors(self) -> tuple:
        return tuple(v.unpack(self) for v in self._inputs if isinstance(v, SavedTensor))

    def __getattr__(self, name: str) -> Any:
        # torch's per-op names for saved values: _saved_self, _raw_saved_other, _saved_dim, ...
        if name.startswith(("_saved_", "_raw_saved_")):
            from .saved_values import saved_attribute

            return saved_attribute(self, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


class UniformNode(OpNode):
    """An op on tensors of one shape and dtype, with no params and one output.

    ``_inputs`` holds, per argument, the tensor itself if the rule needs it (else None), and
    ``_versions`` their versions when recorded; ``_out`` is the saved result as ``(array,
    version counter, version)`` (an array, not the tensor: that would be a cycle). ``_key =
    (needs mask, dtype, shape)`` names its rule program.
    """

    __slots__ = ("_versions", "_key")
    next_functions = Node.next_functions  # (its inputs are all of one floating dtype)

    def _graph_positions(self) -> None:
        return None
    _uniform = True
    # the same for every uniform node (class-level: not set per record)
    params = _NO_PARAMS
    n_outputs = 1
    _out_meta = None  # (made from the key when asked for)

    @staticmethod
    def record(op: registry.OpDef, a: Any, b: Any, result: Any) -> OpNode | None:
        """Records ``result = op(a, b)`` (``op(a)`` when ``b`` is None), which a lane of the
        dispatcher computed: tensors of one dtype, no params, one output, no forward-AD level
        active. Falls back to ``OpNode.record`` for broadcasting (and for saved-tensor hooks
        and inference tensors); records nothing if no input needs a gradient."""
        dt = result._dtype
        if a._dtype is not dt or saved_tensor_hooks_stack:
            return _record_general(op, a, b, result)
        shape = a._data.shape  # (a pointwise op's result has the shape of its inputs)
        if b is not None:
            if b._data.shape != shape:
                return _record_general(op, a, b, result)  # broadcasting
            ea = edge_of(a)
            eb = edge_of(b)
            if ea is None:
                if eb is None:  # no input needs a gradient: nothing to record
                    if a._base is None and b._base is None:  # (no view: the common case)
                        return None
                    return _record_creation_view(op, (a, b), result)
                mask = 2
            else:
                mask = 1 if eb is None else 3
            edges = [ea, eb]
        else:
            ea = edge_of(a)
            if ea is None:
                return None if a._base is None else _record_creation_view(op, (a,), result)
            mask = 1
            edges = [ea]
        plan = SAVE_PLANS[op].get(mask)
        if plan is None:
            plan = _save_plan(op, edges)
        node = _new_object(UniformNode)
        if not plan:
            node._inputs = node._versions = None
        elif plan is _ALL:
            if a._is_inference or b._is_inference:
                return OpNode.record(op, (a, b), _NO_PARAMS, (result,))  # (which raises)
            node._inputs = (a, b)
            va = a._vc[0]
            vb = b._vc[0]
            node._versions = (va, vb) if va or vb else _UNCHANGED  # (the common case: shared)
        else:
            args = (a,) if b is None else (a, b)
            inputs, versions = [], []
            for x, keep in zip(args, plan):
                if keep and x._is_inference:
                    return OpNode.record(op, args, _NO_PARAMS, (result,))
                inputs.append(x if keep else None)
                versions.append(x._vc[0])
            node._inputs = inputs
            node._versions = versions
        node._next = node._needs = edges
        node._seq = next(_sequence)
        node._freed = False
        node.op = op
        node._key = (mask, dt, shape)
        if op.save_output:
            vc = result._vc
            node._out = (result._data, vc, vc[0])
            node._saved = True
        else:
            node._out = None
            node._saved = node._inputs is not None
        # (an input needs a gradient, so it is floating or complex, and so is the result: one
        # dtype throughout)
        result._grad_fn = node
        if _anomaly.enabled:
            _anomaly.record(node)
        return node

    def _rebind_result(self, vc: list, target: Any) -> None:
        out = self._out  # (array, version counter, version): see OpNode._rebind_result
        if out is not None and out[1] is vc:
            self._out = (target._data, target._vc, target._vc[0])

    def _output_meta(self, i: int):
        if self._out_meta is None:
            self._out_meta = _meta(self._key[2], self._key[1])
        return self._out_meta

    def saved_input(self, i: int) -> Any:
        """Saved input ``i``, after torch's checks (freed, modified in place)."""
        if self._freed:
            raise RuntimeError(FREED)
        t = self._inputs[i]
        if type(t) is SavedTensor:  # its _raw_saved_ was asked for (it may have hooks)
            return t.unpack(self)
        check_version(t._vc, self._versions[i], t._data, t._dtype, t._grad_fn)
        return t

    def saved_output(self) -> Any:
        """The saved result as a tensor whose ``grad_fn`` is this node, after torch's checks."""
        if self._freed:
            raise RuntimeError(FREED)
        if type(self._out) is SavedTensor:  # its _raw_saved_result was asked for
            return self._out.unpack(self)
        data, vc, expected = self._out
        dt = self._key[1]
        check_version(vc, expected, data, dt, self)
        return _as_output(data, dt, self, None)

    def apply(self, grad_outputs: list) -> tuple:
        if self._freed:
            raise RuntimeError(FREED)
        meta = self._output_meta(0)
        kept = self._inputs
        inputs = [meta if kept is None or kept[i] is None else self.saved_input(i)
                  for i in range(len(self._needs))]
        ans = self.saved_output() if self._out is not None else None
        return run_vjp(self.op, self._grads(grad_outputs), ans, inputs, _NO_PARAMS,
                                self._needs)

    def apply_arrays(self, grad_outputs: list, release: bool) -> tuple:
        g = grad_outputs[0]
        if g is not None and not (self.op.opmath_backward and self._key[1] in SIXTEEN_BIT):
            program = PROGRAMS[self.op].get(self._key)
            if type(program) is not _FunctionType:  # not built (yet), or not traceable
                program = rule_programs.lookup(self, self._key)
            if program is not None:  # its rule program does it all
                token = quiet()
                try:
                    return program(self, g, release)
                finally:
                    restore(token)
        return Node.apply_arrays(self, grad_outputs, release)

    def _release(self) -> None:
        if self._saved:
            self._freed = True
            self._inputs = self._out = None

    def _saved_entries(self) -> list:
        if self._freed:  # what it saved, each marked freed
            plan = SAVE_PLANS[self.op].get(self._key[0]) or ()
            entries = [(f"arg{i}", _snapshot(None, False)) for i, k in enumerate(plan) if k]
            return entries + ([("result", _snapshot(None, True))] if self.op.save_output else [])
        entries = []
        if self._inputs is not None:
            entries = [(f"arg{i}", t if type(t) is SavedTensor else _snapshot(t, False))
                       for i, t in enumerate(self._inputs) if t is not None]
        if self._out is not None:
            entries.append(("result", _snapshot(self.saved_output(), True)))
        return entries

    @property
    def _saved_result(self) -> Any:
        return self.saved_output() if self.op.save_output else None

    @property
    def _saved_tensors(self) -> tuple:
        if self._freed:
            raise RuntimeError(FREED)
        kept = self._inputs or ()
        return tuple(self.saved_input(i) for i, t in enumerate(kept) if t is not None)


def _snapshot(t: Any, is_output: bool) -> SavedTensor:
    """A SavedTensor describing a uniform node's saved value (None: a freed one)."""
    if t is None:
        return saved_raw(None, None, 0, is_output, None)
    return saved_raw(t._data if is_output else t, t._vc, t._vc[0], is_output, t._dtype)


def _save_output(tensor: Any, output_nr: int) -> SavedTensor:
    s = _save(tensor, True)
    s._output_nr = output_nr
    return s


def _not_differentiable(v: Any) -> bool:
    """Whether a recorded input ``v`` (a ``SavedTensor``, a ``Meta`` or a literal) is a tensor
    no gradient flows to: integer or bool, or a sequence holding tensors."""
    t = type(v)
    if t is SavedTensor:
        dt = v._dtype
    elif t is registry.Meta:
        dt = v.dtype
    elif t is tuple or t is list:
        return any(isinstance(x, (registry.Tensor, SavedTensor)) for x in v)
    else:
        return False
    return not (dt.is_floating_point or dt.is_complex)


def _node_classes(op: registry.OpDef) -> tuple[type, type]:
    """The node classes of ``op``, an ``OpNode`` and a ``UniformNode`` subclass both named
    its ``node_name`` as torch's (``type(y.grad_fn).__name__ == "MulBackward0"``): made once
    and kept on the OpDef (no ``__dict__`` of their own: records stay as light)."""
    if op.node_class is None:
        name = op.node_name
        attrs = {"__slots__": (), "__module__": "builtins", "__qualname__": name, "_named": True}
        op.node_class = type(name, (OpNode,), dict(attrs))
        op.uniform_node_class = type(name, (UniformNode,), dict(attrs))
    return op.node_class, op.uniform_node_class


def _record_general(op: registry.OpDef, a: Any, b: Any, result: Any) -> OpNode | None:
    args = (a,) if b is None else (a, b)
    for t in args:
        if t._requires_grad or t._grad_fn is not None:
            return OpNode.record(op, args, _NO_PARAMS, (result,))
    return _record_creation_view(op, args, result)


def _record_creation_view(op: registry.OpDef, args: tuple, result: Any) -> OpNode | None:
    """A node leading nowhere for an op on a view made under no_grad (or inference mode) of
    a base that requires grad: the view requires grad and has no edge, so the result
    requires grad, as torch's (its backward reaches nothing)."""
    for t in args:
        if t._base is not None and t._view_creation is not None and t.requires_grad:
            return OpNode.record(op, args, _NO_PARAMS, (result,))
    return None


_ALL = (True, True)  # the save plan of a binary op that saves both inputs
_UNCHANGED = (0, 0)  # the versions of two saved inputs never modified in place
# op -> {needs mask -> which inputs a uniform record saves}: the engine's cache of save plans
SAVE_PLANS: defaultdict = defaultdict(dict)


def _save_plan(op: registry.OpDef, edges: list) -> tuple:
    """Which inputs ``op`` saves when the inputs with an edge need gradients: a tuple of
    bools per input, or () when it saves none (kept in ``SAVE_PLANS[op]`` by needs mask)."""
    save = op.save
    cond = op.save_if
    plan = tuple(i in save and (cond is None or i not in cond or _any_needed(edges, cond[i]))
                 for i in range(len(edges)))
    mask = sum(1 << i for i, e in enumerate(edges) if e is not None)
    plan = () if not any(plan) else _ALL if plan == _ALL else plan
    SAVE_PLANS[op][mask] = plan
    return plan


def _any_needed(needs: list, positions: tuple) -> bool:
    for j in positions:
        if needs[j]:
            return True
    return False


registry.OpNode = OpNode
registry.record_uniform = UniformNode.record
