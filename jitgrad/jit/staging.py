"""Tracing for the jit: run the user's function on tracer tensors, every op an equation.

The tracer itself (``Tracer``, ``Trace.bind``, ``active``, ``replay``, ``graph_of``) is
``jitgrad._tracer``, below the autograd graph, since the eager engine's rule programs trace VJP
rules with it too. A ``Tracer`` is a ``Tensor`` with a shape and a dtype but no data. Ops on
tracers go through the same ``ops.registry.apply`` that eager mode uses; it hands them to
``Trace.bind``, which asks the op's shape/dtype rule for the result type and appends an
``Eqn``. While a trace is active, ops on ordinary tensors are recorded too (``apply`` routes
them to the innermost trace), so nothing computed inside the function is frozen at trace time.
The jit's ``Trace`` adds what a whole user function needs: in-place ops and custom Functions.

Composite ops with a ``decompose`` (softmax, gelu, layer_norm, ...) are inlined as primitives,
so later passes (and fusion) see primitives; the VJP pass differentiates those primitives.

**Tensors captured by closure** (globals, closure cells, module attributes) become *implicit
inputs*: their current data is read on every call, gradients flow to them when they require
grad, and in-place writes to them inside the function are written back. Tensors created inside
the function that nothing else references once the trace ends (``zeros(3)``, ``tensor([1.,
2.])``) become constants of the graph.

**In-place ops** on tracers are functionalized: the tracer is rebound to the new value. An
in-place op on a jit *input* (or on a captured tensor) is written back into the real tensor
after each call, and its version counter is bumped, as eager mode would. In-place ops on a
view of a traced value, or on a traced value that has live views, raise ``JitTraceError``
(eager mode would update the aliases; the tracer cannot).

**Random draws** (``rand``, ``randn``, ``randint``, dropout) become ``rng`` equations: fresh
numbers on every call, from the same generator as eager mode.

**What runs only once, at trace time**: plain Python. Values the function reads from its
globals and closure (numbers, strings, small containers of them, tensors by identity, module
attributes) are guarded, so a change retraces; Python side effects (appending to a list,
``optimizer.zero_grad()`` setting ``.grad = None``) are not replayed. The value of a
*captured* tensor read in Python (``w.item()``, ``w.tolist()``, ``w.numpy()`` on a global
``w``) is guarded too: a new value retraces. (Reads that bypass those methods, such as a
captured boolean mask used for indexing, are baked in: pass such a tensor as an argument.)
"""

from __future__ import annotations

from typing import Any

from .. import _tracer, errors
from .._tracer import Tracer
from ..ops.inplace import check_writable
from ..ops.registry import state
from ..tensor import Tensor


class Trace(_tracer.Trace):
    """The equations recorded while a jitted function runs on tracers: the core trace, plus
    in-place ops (functionalized) and custom autograd Functions (one opaque equation)."""

    def apply_function(self, cls: type, args: tuple, kwargs: dict) -> Any:
        """``cls.apply(*args, **kwargs)`` of a custom autograd.Function, traced: one opaque
        equation (see ``custom_function``; autograd calls this, so it never imports the jit)."""
        from .custom_function import traced_apply

        return traced_apply(cls, args, kwargs)

    def stage_cond(self, pred: Tensor, true_fn: Any, false_fn: Any, operands: tuple,
                   leaves: list) -> Any:
        """``jitgrad.cond`` on a traced predicate: one ``cond`` equation holding the branches'
        sub-graphs (see ``control_flow``; the op calls this, so it never imports the jit)."""
        from .control_flow import stage_cond

        return stage_cond(self, pred, true_fn, false_fn, operands, leaves)

    def stage_while(self, cond_fn: Any, body_fn: Any, carried_inputs: Any, leaves: list,
                    spec: Any) -> Any:
        """``jitgrad.while_loop`` while tracing: one ``while_loop`` equation."""
        from .control_flow import stage_while

        return stage_while(self, cond_fn, body_fn, carried_inputs, leaves, spec)

    def inplace(self, target: Tensor, new: Tensor) -> Tensor:
        """Functionalizes an in-place op: ``target`` now stands for ``new``."""
        if state.traces and state.traces[-1] is not self and state.traces[-1].lifts:
            raise errors.trace_error(
                "an in-place write, inside a jitgrad.cond branch or a jitgrad.while_loop "
                "function, to a tensor from outside it is not supported; return the new value "
                "from the function instead")
        check_writable(new.dtype, new.shape, target.dtype, target.shape)
        if new.dtype is not target.dtype:
            new = new.to(target.dtype)
        leaf_rg = (id(target) in self.leaf_inputs if isinstance(target, Tracer)
                   else target._grad_fn is None and target._requires_grad)
        if state.grad_enabled and leaf_rg:
            raise RuntimeError(
                "a leaf Variable that requires grad is being used in an in-place operation.")
        if isinstance(target, Tracer) and target._trace is self:
            if self._is_view(target) or self._has_live_views(target):
                raise errors.trace_error(
                    "an in-place op on a view of a traced tensor (or on a traced tensor that "
                    "has live views) cannot be traced faithfully: eager mode would update every "
                    "alias. Use the out-of-place op (e.g. `y = x.add(1)`) or clone() first")
            target._var = self.var_of(new)
            target._requires_grad = target._requires_grad or new.requires_grad
            return target
        if target._base is not None:
            raise errors.trace_error(
                "an in-place write of traced values into a view of a tensor from outside the "
                "trace is not supported; write into the base tensor or build the result "
                "out of place (jitgrad.where / cat / stack)")
        self.var_of(target)  # capture its current value first
        self.rebound[id(target)] = self.var_of(new)
        return target
