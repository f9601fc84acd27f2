"""Custom ``autograd.Function`` with torch's ctx API, and ``once_differentiable``."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

from ..ops import registry
from ..ops.vjp_apply import fit_grad
from .forward_ad import fw_disabled, function_jvp, has_tangent
from .node import FREED, Node, SavedTensor, _anomaly, _edge, _zeros

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "InplaceFunction",
           "once_differentiable"]


class FunctionCtx:
    """The methods available on ``ctx`` inside ``forward``/``setup_context`` and ``backward``."""

    def save_for_backward(self, *tensors: Any) -> None:
        for i, t in enumerate(tensors):  # (no tensors.index: == compares tensors by value)
            if t is not None and not isinstance(t, registry.Tensor):
                raise TypeError(
                    f"save_for_backward can only save variables, but argument {i} is of type "
                    f"{type(t).__name__}")
        self._to_save = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        self._saved_for_forward = tensors

    def mark_dirty(self, *tensors: Any) -> None:
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors: Any) -> None:
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value


class BackwardCFunction(Node, FunctionCtx):
    """The node (and ``ctx``) of one custom Function call; named ``<Function>Backward``."""

    _forward_cls: type = None

    def __init__(self) -> None:
        Node.__init__(self)
        self.needs_input_grad: tuple = ()
        self.materialize_grads = True
        self._to_save: tuple = ()
        self._saved: list | None = None
        self._dirty: tuple = ()
        self._non_differentiable: tuple = ()
        self._out_meta: tuple = ()
        self._in_meta: tuple = ()
        self._released = False

    def name(self) -> str:
        return type(self).__name__

    @property
    def saved_tensors(self) -> tuple:
        if self._released:
            raise RuntimeError(FREED)
        if self._saved is None:
            return tuple(self._to_save)
        return tuple(s.unpack(self) if isinstance(s, SavedTensor) else s for s in self._saved)

    saved_variables = saved_tensors

    @property
    def n_outputs(self) -> int:
        return len(self._out_meta)

    def _output_meta(self, i: int):
        return self._out_meta[i]

    def apply(self, grad_outputs: list) -> tuple:
        if self.materialize_grads:
            like = next((g for g in grad_outputs if g is not None), None)  # (its device)
            grad_outputs = [g if g is not None or m is None else _zeros(m, like)
                            for g, m in zip(grad_outputs, self._out_meta)]
        cls = self._forward_cls
        backward_fn = cls.vjp if cls.vjp is not Function.vjp else cls.backward
        result = backward_fn(self, *grad_outputs)
        if not isinstance(result, tuple):
            result = (result,)
        n_in = len(self._in_meta)  # one gradient per forward argument, tensor or not
        if len(result) != n_in:
            if len(result) > n_in and all(r is None for r in result[n_in:]):
                result = result[:n_in]
            else:
                raise RuntimeError(
                    f"function {self.name()} returned an incorrect number of gradients "
                    f"(expected {n_in}, got {len(result)})")
        out = []
        edges = iter(self._next)  # one edge per tensor argument
        for i, (g, meta) in enumerate(zip(result, self._in_meta)):
            if meta is None:
                if g is not None:
                    raise RuntimeError(
                        f"function {self.name()} returned a gradient different than None at "
                        f"position {i + 1}, but the corresponding forward input was not a "
                        "Variable")
                continue
            edge = next(edges)
            if g is None or edge is None:
                out.append(None)
                continue
            if not isinstance(g, registry.Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
            try:
                registry.broadcast_shapes(tuple(g.shape), tuple(meta.shape))
                ok = len(g.shape) >= len(meta.shape) or g.shape == meta.shape
            except RuntimeError:
                ok = False
            if not ok or registry.broadcast_shapes(tuple(g.shape), meta.shape) != tuple(g.shape):
                raise RuntimeError(
                    f"Function {self.name()} returned an invalid gradient at index {i} - got "
                    f"{list(g.shape)} but expected shape compatible with {list(meta.shape)}")
            out.append(fit_grad(g, meta.shape, meta.dtype))
        return tuple(out)

    def _release(self) -> None:
        if self._saved:
            self._released = True
            for s in self._saved:
                if isinstance(s, SavedTensor):
                    s.release()


class FunctionMeta(type):
    """Creates the ``<Name>Backward`` node class for every Function subclass."""

    def __init__(cls, name: str, bases: tuple, attrs: dict) -> None:
        backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    """Base class for custom differentiable operations (torch.autograd.Function).

    Subclasses define static ``forward(ctx, *args)`` (or ``forward(*args)`` plus
    ``setup_context(ctx, inputs, output)``) and ``backward(ctx, *grad_outputs)``, and are
    called through ``apply``.
    """

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD.")

    @staticmethod
    def vjp(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with "
            "forward mode AD.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn(
            f"{self.__class__} should not be instantiated. Methods on autograd functions are all "
            "static, so you should invoke them on the class itself. Instantiating an autograd "
            "function will raise an error in a future version of jitgrad.", DeprecationWarning,
            stacklevel=2)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        from .grad_mode import no_grad

        if registry.state.traces:  # inside jit: one opaque equation (jit/custom_function.py)
            return registry.state.traces[-1].apply_function(cls, args, kwargs)
        ctx = cls._backward_cls()
        Tensor = registry.Tensor
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        custom_setup = cls.setup_context is not Function.setup_context
        with no_grad(), fw_disabled():
            if custom_setup:
                output = cls.forward(*args, **kwargs)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        if custom_setup:
            cls.setup_context(ctx, args, output)
        executable = registry.state.grad_enabled and any(ctx.needs_input_grad)
        single = not isinstance(output, tuple)
        outputs = (output,) if single else output
        outputs = _wire_outputs(ctx, args, outputs, executable)
        if executable and _anomaly.enabled:  # the node remembers the forward's traceback
            _anomaly.record(ctx)
        if registry.fw_hook is not None and has_tangent(args):  # forward-mode AD
            function_jvp(cls, ctx, args, outputs)
        return outputs[0] if single else outputs


def _wire_outputs(ctx: BackwardCFunction, args: tuple, outputs: tuple, executable: bool) -> tuple:
    Tensor = registry.Tensor
    dirty = {id(t) for t in ctx._dirty}
    non_diff = {id(t) for t in ctx._non_differentiable}
    arg_ids = {id(a) for a in args if isinstance(a, Tensor)}
    if any(id(t) not in arg_ids for t in ctx._dirty):
        warnings.warn("ctx.mark_dirty() received a tensor that was not an input. Only input "
                      "Tensors that have been mutated should be passed to ctx.mark_dirty().",
                      UserWarning, stacklevel=3)
    if executable:
        ctx.next_functions = tuple(_edge(a) for a in args if isinstance(a, Tensor))
        ctx._in_meta = tuple(registry.Meta(tuple(a.shape), a.dtype) if isinstance(a, Tensor)
                             else None for a in args)
    wired = []
    metas = []
    for i, out in enumerate(outputs):
        if not isinstance(out, Tensor):
            wired.append(out)
            metas.append(None)
            continue
        if id(out) in dirty:
            if out._base is not None and out._base.requires_grad and executable:
                raise RuntimeError("a view of a leaf Variable that requires grad is being used "
                                   "in an in-place operation.")
            if out.is_leaf and out._requires_grad and executable:
                raise RuntimeError(
                    "a leaf Variable that requires grad has been used in an in-place operation.")
            out._vc[0] += 1
        elif id(out) in arg_ids and executable:
            out = out.view_as(out) if id(out) not in non_diff else out.detach()
        differentiable = (executable and id(outputs[i]) not in non_diff
                          and (out.dtype.is_floating_point or out.dtype.is_complex))
        if differentiable:
            out._grad_fn = ctx
            out._output_nr = i
        elif executable and id(outputs[i]) in non_diff and out._grad_fn is None:
            out._requires_grad = False
        wired.append(out)
        metas.append(registry.Meta(tuple(out.shape), out.dtype))
    ctx._out_meta = tuple(metas)
    if executable:
        # A saved output that this node produced is kept as its array (the tensor would be a
        # cycle) and unpacked as output ``output_nr`` of this node, so that a gradient reaching
        # it in a double backward flows into that output's gradient. Outputs that are inputs
        # (returned or marked dirty) and non-differentiable ones are saved as tensors.
        output_nr = {id(o): i for i, o in enumerate(outputs)
                     if isinstance(o, Tensor) and id(o) not in arg_ids
                     and wired[i]._grad_fn is ctx}
        ctx._saved = [None if t is None else
                      SavedTensor(t, id(t) in output_nr, output_nr.get(id(t), 0))
                      for t in ctx._to_save]
    return tuple(wired)


class InplaceFunction(Function):
    """``Function`` with an ``inplace`` flag (torch keeps it for old code; use ``Function``)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace


def once_differentiable(fn: Callable) -> Callable:
    """Marks a ``backward`` that is not itself differentiable: it runs without recording, and
    differentiating its result again raises a clear error."""

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        from .grad_mode import no_grad

        with no_grad():
            outputs = fn(ctx, *args)
        if not registry.state.grad_enabled:
            return outputs
        requires = any(isinstance(a, registry.Tensor) and a.requires_grad for a in args)
        if not requires:
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        err = DelayedError.apply_error(
            "trying to differentiate twice a function that was marked with @once_differentiable",
            outs, args)
        return err[0] if single else err

    return wrapper


class DelayedError(BackwardCFunction):
    """A node that raises when differentiated (the result of a once_differentiable backward)."""

    msg = ""

    @classmethod
    def apply_error(cls, msg: str, outputs: tuple, inputs: tuple) -> tuple:
        node = cls()
        node.msg = msg
        node.next_functions = tuple(_edge(a) for a in inputs)
        wired = []
        for i, o in enumerate(outputs):
            if isinstance(o, registry.Tensor) and (o.dtype.is_floating_point or
                                                   o.dtype.is_complex):
                o = o.detach()
                o._grad_fn = node
                o._output_nr = i
            wired.append(o)
        node._out_meta = tuple(registry.Meta(tuple(o.shape), o.dtype)
                               if isinstance(o, registry.Tensor) else None for o in wired)
        return tuple(wired)

    def name(self) -> str:
        return "Error"  # torch's node is named Error too

    def apply(self, grad_outputs: list) -> tuple:
        raise RuntimeError(self.msg)
