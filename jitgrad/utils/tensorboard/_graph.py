"""``add_graph``'s model graph: the model runs once on example inputs (eval mode, no grad)
while a ``TorchFunctionMode`` records each top-level call (``linear``, ``relu``, ``mul`` ...)
and global module hooks keep the scope (``Net/Sequential[seq]/Linear[0]``), as torch's
``jit.trace`` based graph names its nodes. The result is a ``GraphDef`` (hand-encoded) that
TensorBoard's GRAPHS tab draws: ``IO Node`` inputs and outputs, ``prim::GetAttr`` nodes for
parameters and buffers, ``aten::<call>`` nodes with ``_output_shapes``."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from typing import Any

from . import _proto as pb


def _shape_attr(shapes: list) -> bytes:
    # AttrValue{list: ListValue{shape: [TensorShapeProto ...]}}
    return pb.f_bytes(1, b"".join(pb.f_bytes(7, pb.tensor_shape(s)) for s in shapes))


def node_def(name: str, op: str, inputs: list, shapes: list | None, attr: str | None) -> bytes:
    """``tensorboard.NodeDef`` with torch's two attrs: ``attr`` (a string) and
    ``_output_shapes``."""
    attrs = []
    if attr is not None:
        attrs.append(("attr", pb.f_bytes(2, attr.encode("utf-8"))))
    if shapes is not None:
        attrs.append(("_output_shapes", _shape_attr(shapes)))
    return (pb.f_str(1, name) + pb.f_str(2, op) + b"".join(pb.f_str(3, i) for i in inputs)
            + b"".join(pb.f_bytes(5, pb.f_str(1, k) + pb.f_bytes(2, v)) for k, v in attrs))


def _tensors(obj: Any) -> list:
    from jitgrad.tensor import Tensor

    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _tensors(o)]
    return []


def _describe(obj: Any) -> str:
    from jitgrad.tensor import Tensor

    if isinstance(obj, Tensor):
        return "tensor"
    if isinstance(obj, (list, tuple)):
        return "[" + ", ".join(_describe(o) for o in obj) + "]"
    return repr(obj)


@contextlib.contextmanager
def _eval_mode(model: Any) -> Iterator[None]:
    training = model.training
    model.train(False)
    try:
        yield
    finally:
        model.train(training)


class _Recorder:
    def __init__(self, model: Any) -> None:
        root = type(model).__name__
        self.scopes = {id(model): root}
        for name, module in model.named_modules():
            if not name:
                continue
            parent, _, attr = name.rpartition(".")
            parent_scope = self.scopes[id(model.get_submodule(parent))] if parent else root
            self.scopes[id(module)] = f"{parent_scope}/{type(module).__name__}[{attr}]"
        self.owned = {}  # id(parameter or buffer) -> (owner scope, attribute name)
        for _, module in model.named_modules():
            for attr, t in list(module._parameters.items()) + list(module._buffers.items()):
                if t is not None and id(t) not in self.owned:
                    self.owned[id(t)] = (self.scopes[id(module)], attr)
        self.stack = [root]
        self.nodes: list = []
        self.names: dict = {}  # id(tensor) -> node name
        self.keep: list = []  # (the tensors named, so that their ids stay theirs)
        self.count = 0

    def name_of(self, t: Any) -> str:
        key = id(t)
        if key in self.names:
            return self.names[key]
        if key in self.owned:
            scope, attr = self.owned[key]
            name = f"{scope}/{attr}"
            self.nodes.append(node_def(name, "prim::GetAttr", [], [list(t.shape)],
                                       f"{{ name :  {attr} }}"))
        else:
            name = f"{self.stack[-1]}/constant.{self.count}"
            self.count += 1
            self.nodes.append(node_def(name, "prim::Constant", [], [list(t.shape)], "{}"))
        self.names[key] = name
        self.keep.append(t)
        return name

    def record(self, func: Any, args: tuple, kwargs: dict, out: Any) -> None:
        outs = _tensors(out)
        if not outs:
            return
        inputs = [self.name_of(t) for t in _tensors(args) + _tensors(kwargs)]
        op = getattr(func, "__name__", type(func).__name__)
        if op == "__get__":  # (a property: name it by its getter)
            op = getattr(getattr(getattr(func, "__self__", None), "fget", None), "__name__", op)
        op = op.strip("_")
        name = f"{self.stack[-1]}/{op}.{self.count}"
        self.count += 1
        others = [_describe(a) for a in args if not _tensors(a)]
        others += [f"{k}={_describe(v)}" for k, v in kwargs.items() if not _tensors(v)]
        self.nodes.append(node_def(name, f"aten::{op}", inputs, [list(t.shape) for t in outs],
                                   "{" + ", ".join(others) + "}"))
        for t in outs:
            self.names[id(t)] = name
            self.keep.append(t)


def graph(model: Any, args: Any, verbose: bool = False,
          use_strict_trace: bool = True) -> tuple[bytes, bytes]:
    """The serialized ``GraphDef`` of ``model`` run on ``args`` and the (empty) ``RunMetadata``
    torch logs with it.

    Args:
        model: A ``jitgrad.nn.Module``.
        args: An input Tensor or a tuple of them.
        verbose: Print the recorded nodes.
        use_strict_trace: Accepted for torch's signature (the recording follows any Python
            control flow and containers for the given inputs).

    Returns:
        ``(graph_def, run_metadata)`` bytes.
    """
    from jitgrad.autograd.grad_mode import no_grad
    from jitgrad.nn.modules.module import (
        register_module_forward_hook,
        register_module_forward_pre_hook,
    )
    from jitgrad.overrides import TorchFunctionMode

    if not isinstance(args, (tuple, list)):
        args = (args,)
    rec = _Recorder(model)
    try:
        params = [p for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    input_nodes = []
    for i, t in enumerate(_tensors(list(args))):
        label = params[i].name if i < len(params) else f"input.{i}"
        name = f"input/{label}"
        input_nodes.append(node_def(name, "IO Node", [], [list(t.shape)], None))
        rec.names[id(t)] = name
        rec.keep.append(t)

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            rec.record(func, tuple(args), kwargs, out)
            return out

    def pre_hook(module: Any, _args: Any) -> None:
        rec.stack.append(rec.scopes.get(id(module), rec.stack[-1] + "/" + type(module).__name__))

    def post_hook(module: Any, _args: Any, _out: Any) -> None:
        rec.stack.pop()

    handles = [register_module_forward_pre_hook(pre_hook),
               register_module_forward_hook(post_hook, always_call=True)]
    try:
        with _eval_mode(model), no_grad(), Mode():
            result = model(*args)
    finally:
        for h in handles:
            h.remove()
    rec.stack = rec.stack[:1]
    outs = _tensors(result)
    if isinstance(result, (tuple, list)):  # (one output, as torch: the tuple's node)
        name = f"{rec.stack[0]}/TupleConstruct.{rec.count}"
        rec.nodes.append(node_def(name, "prim::TupleConstruct", [rec.name_of(t) for t in outs],
                                  None, "{}"))
        output_nodes = [node_def("output/output.1", "IO Node", [name], None, None)]
    else:
        output_nodes = [node_def(f"output/output.{i + 1}", "IO Node", [rec.name_of(t)],
                                 [list(t.shape)], None) for i, t in enumerate(outs)]
    nodes = input_nodes + output_nodes + rec.nodes
    if verbose:
        print(f"{len(nodes)} nodes")
    graph_def = b"".join(pb.f_bytes(1, n) for n in nodes) + pb.f_bytes(4, pb.f_varint(1, 22))
    # RunMetadata{step_stats: StepStats{dev_stats: [DeviceStepStats{device}]}}
    run_metadata = pb.f_bytes(1, pb.f_bytes(1, pb.f_str(1, "/device:CPU:0")))
    return graph_def, run_metadata
