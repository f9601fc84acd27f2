"""Custom ``autograd.Function`` calls inside ``jitgrad.jit``: one opaque equation each.

As ``torch.compile`` does for ``autograd.Function``, a call traced inside ``jit`` is recorded
as ONE equation, ``custom_function``, whose implementation runs the user's ``forward`` on the
call's arrays (eagerly, under no-grad, as ``Function.apply`` does), and whose VJP rule records
a second opaque equation, ``custom_function_backward``, that runs the user's ``backward``. So
jit gradients are the user's own gradients, and the backward IR shows the call.

What ``backward`` reads from ``ctx`` travels through the IR as values: a saved (or ``ctx``
attribute) *input* is that input's value, a saved *output* is that output's value (so a
gradient reaching it in a double backward flows into that output, as in eager mode), and a
saved *intermediate* is an extra output of the forward equation (a residual; in a double
backward it is a constant, as in eager mode, where it was computed under no-grad). Python
values stored on ``ctx`` (``ctx.dim = 1``) are recorded when tracing and checked on every call.

The structure of a call (its outputs' shapes and dtypes, what it saves, which outputs are
non-differentiable) is learned at trace time by running ``forward`` once on stand-in tracers
(or, if ``forward`` reads values, on stand-in tensors of ones) and checked again on every call:
a call that differs raises an error naming the Function and the line that called it.
Not supported under ``jit`` (a clear error naming the Function, never a dropped gradient):
``mark_dirty``, tensor keyword arguments, tensors in containers on ``ctx``.

With ``create_graph=True`` the jit function's backward runs its equations through eager ops;
``custom_function_backward`` then records an autograd node whose rule differentiates the
user's ``backward`` (run again with grad recording), so double backward works as eagerly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops import registry
from ..tensor import _make
from ..ops.registry import state
from ..ops.vjp_apply import fit_grad
from ..autograd.node import as_tensor

# ctx attributes that Function.apply's machinery sets (everything else was set by the user)
_INTERNAL = frozenset({"needs_input_grad", "materialize_grads", "_to_save", "_saved", "_dirty",
                       "_non_differentiable", "_out_meta", "_in_meta", "_released",
                       "_saved_for_forward", "_next", "_seq", "_anomaly_trace"})


class FunctionCallSpec:
    """The structure of one traced ``Function.apply`` call (an equation's ``spec`` param).

    Attributes:
        cls: the Function subclass.
        where: ``"file.py:12 (`source`)"`` of the call, for errors.
        kinds: per ``apply`` argument: True for a tensor (an equation input), False for a
            Python value (passed as is).
        kwargs: keyword arguments of ``apply`` (Python values).
        needs: ``ctx.needs_input_grad``.
        materialize: ``ctx.materialize_grads`` after ``forward``.
        single: ``forward`` returned one value, not a tuple.
        outputs: per ``forward`` output: ``("t", shape, dtype)`` or ``("v", value)``.
        nondiff: indices (into ``outputs``) marked non-differentiable.
        saved: per ``save_for_backward`` entry: ``None``, ``("in", arg index)``, ``("out",
            output index)`` or ``("mid", residual index)``.
        tensor_attrs: ``(name, entry)`` for tensors stored as ``ctx`` attributes.
        value_attrs: ``(name, value)`` for Python values stored as ``ctx`` attributes.
        mids: ``(shape, dtype)`` per residual (a saved intermediate).
        grad_inputs: the argument indices the backward equation returns gradients for.
    """

    def __init__(self, cls: type, where: str) -> None:
        self.cls = cls
        self.where = where
        self.kinds: tuple = ()
        self.kwargs: dict = {}
        self.needs: tuple = ()
        self.materialize = True
        self.single = True
        self.outputs: list = []
        self.nondiff: set = set()
        self.saved: list = []
        self.tensor_attrs: list = []
        self.value_attrs: list = []
        self.mids: list = []
        self.in_meta: list = []
        self.grad_inputs: tuple = ()

    def __repr__(self) -> str:
        return f"<{self.cls.__qualname__}>"

    @property
    def tensor_outputs(self) -> list:
        return [i for i, o in enumerate(self.outputs) if o[0] == "t"]

    def error(self, what: str, exc: type = RuntimeError) -> Exception:
        return exc(f"custom autograd.Function {self.cls.__qualname__} called inside "
                   f"jitgrad.jit at {self.where}: {what}")


def _call_forward(cls: type, ctx: Any, args: tuple, kwargs: dict) -> Any:
    from ..autograd.function import Function
    from ..autograd.grad_mode import no_grad

    with no_grad():
        if cls.setup_context is not Function.setup_context:
            output = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, output)
            return output
        return cls.forward(ctx, *args, **kwargs)


class _NoTrace:
    """Runs eager code while a trace is active without recording it (the stack is emptied)."""

    def __enter__(self) -> None:
        self.saved = state.traces[:]
        state.traces.clear()

    def __exit__(self, *exc: object) -> None:
        state.traces[:] = self.saved


def _where() -> str:
    from ..errors import user_location

    loc, text = user_location(2)
    return f"{loc} (`{text}`)" if text else loc


def _user_attrs(ctx: Any, before: set) -> dict:
    return {k: v for k, v in vars(ctx).items() if k not in _INTERNAL and k not in before}


def traced_apply(cls: type, args: tuple, kwargs: dict) -> Any:
    """``cls.apply(*args, **kwargs)`` while a jit trace is active: records the call as one
    ``custom_function`` equation (see the module docstring) and returns its outputs."""
    from ..errors import ConcretizationError
    from ..ops.elementwise import DETACH
    from .._tracer import active

    trace = state.traces[-1]  # (the jit's ``Trace``: its ``apply_function`` called this)
    where = _where()
    # Learn the call's structure: forward on stand-ins (tracers of a scratch trace of the same
    # kind; tensors of ones if forward reads values).
    scratch = type(trace)()
    try:
        with active(scratch):
            spec = _learn(cls, where, tuple(
                scratch.new_input(tuple(a.shape), a.dtype, a.requires_grad)
                if isinstance(a, registry.Tensor) else a for a in args), args, kwargs)
    except ConcretizationError:
        with _NoTrace():
            spec = _learn(cls, where, tuple(_ones_like(a) if isinstance(a, registry.Tensor)
                                            else a for a in args), args, kwargs)
    del scratch
    spec.grad_inputs = tuple(i for i, n in enumerate(spec.needs) if n)
    results = trace.bind(FUNCTION_CALL, tuple(args), {"spec": spec})
    tensor_outs = iter(results[:len(spec.tensor_outputs)])
    outs = []
    for i, o in enumerate(spec.outputs):
        if o[0] == "v":
            outs.append(o[1])
            continue
        t = next(tensor_outs)
        if i in spec.nondiff:
            t = trace.bind(DETACH, (t,), {})
        outs.append(t)
    return outs[0] if spec.single else tuple(outs)


def _ones_like(a: Any) -> Any:
    t = _make(np.ones(tuple(a.shape), dtype=a.dtype.np), a.dtype)
    return t.requires_grad_(True) if a.requires_grad else t


def _learn(cls: type, where: str, stand: tuple, args: tuple, kwargs: dict) -> FunctionCallSpec:
    """Runs ``forward`` on stand-ins of ``args`` and records what it returned and saved."""
    Tensor = registry.Tensor
    spec = FunctionCallSpec(cls, where)
    for k, v in kwargs.items():
        if isinstance(v, Tensor):
            raise spec.error(f"the tensor keyword argument {k!r} of apply() is not supported "
                             "under jit; pass it positionally")
    spec.kwargs = dict(kwargs)
    spec.kinds = tuple(isinstance(a, Tensor) for a in args)
    spec.needs = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
    spec.in_meta = [registry.Meta(tuple(a.shape), a.dtype) if isinstance(a, Tensor) else None
                    for a in args]
    ctx = cls._backward_cls()
    ctx.needs_input_grad = spec.needs
    before = set(vars(ctx))
    output = _call_forward(spec.cls, ctx, stand, kwargs)
    if ctx._dirty:
        raise spec.error("ctx.mark_dirty (an in-place forward) is not supported under jit; "
                         "return a new tensor instead, or call the Function outside jit")
    spec.single = not isinstance(output, tuple)
    outputs = (output,) if spec.single else output
    spec.materialize = ctx.materialize_grads
    non_diff = {id(t) for t in ctx._non_differentiable}
    for i, o in enumerate(outputs):
        if isinstance(o, Tensor):
            spec.outputs.append(("t", tuple(o.shape), o.dtype))
            if id(o) in non_diff:
                spec.nondiff.add(i)
        else:
            spec.outputs.append(("v", o))
    classify = _classifier(spec, stand, outputs)
    spec.saved = [classify(t) for t in ctx._to_save]
    for name, value in _user_attrs(ctx, before).items():
        if isinstance(value, Tensor):
            spec.tensor_attrs.append((name, classify(value)))
        elif _holds_tensor(value):
            raise spec.error(f"ctx.{name} holds tensors inside a container, which jit cannot "
                             "pass to backward; save them with ctx.save_for_backward or as "
                             "separate ctx attributes")
        else:
            spec.value_attrs.append((name, value))
    return spec


def _holds_tensor(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return any(isinstance(v, registry.Tensor) or _holds_tensor(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_tensor(v) or isinstance(v, registry.Tensor) for v in value.values())
    return False


def _classifier(spec: FunctionCallSpec, args: tuple, outputs: tuple, mids: list | None = None):
    """A function mapping a saved tensor to its entry (see ``FunctionCallSpec.saved``); new
    intermediates are appended to ``spec.mids`` (at trace time) or to ``mids`` (at run time)."""
    arg_pos = {id(a): i for i, a in enumerate(args) if isinstance(a, registry.Tensor)}
    out_pos = {id(o): i for i, o in enumerate(outputs) if isinstance(o, registry.Tensor)}

    def classify(t: Any) -> Any:
        if t is None:
            return None
        if id(t) in arg_pos:
            return ("in", arg_pos[id(t)])
        if id(t) in out_pos:
            return ("out", out_pos[id(t)])
        if mids is not None:
            mids.append(t)
            return ("mid", len(mids) - 1)
        spec.mids.append((tuple(t.shape), t.dtype))
        return ("mid", len(spec.mids) - 1)

    return classify


# ---------------------------------------------------------------- the forward equation


def _call_meta(*args: Any, spec: FunctionCallSpec) -> tuple:
    shapes = [o[1] for o in spec.outputs if o[0] == "t"] + [m[0] for m in spec.mids]
    dts = [o[2] for o in spec.outputs if o[0] == "t"] + [m[1] for m in spec.mids]
    return tuple(shapes), tuple(dts)


def _call_impl(*arrays: Any, spec: FunctionCallSpec) -> tuple:
    """Runs the user's forward on the call's arrays: its tensor outputs' arrays, then the
    saved intermediates'."""
    Tensor = registry.Tensor
    args = tuple(as_tensor(np.asarray(a)) if is_t else a for a, is_t in zip(arrays, spec.kinds))
    ctx = spec.cls._backward_cls()
    ctx.needs_input_grad = spec.needs
    before = set(vars(ctx))
    with _NoTrace():
        output = _call_forward(spec.cls, ctx, args, spec.kwargs)
    if ctx._dirty:
        raise spec.error("ctx.mark_dirty (an in-place forward) is not supported under jit")
    outputs = (output,) if not isinstance(output, tuple) else output
    if isinstance(output, tuple) == spec.single or len(outputs) != len(spec.outputs):
        raise spec.error("forward returned a different number of outputs than when it was "
                         "traced")
    result = []
    for i, (o, expect) in enumerate(zip(outputs, spec.outputs)):
        if expect[0] == "v":
            if isinstance(o, Tensor) or not _same_value(o, expect[1]):
                raise spec.error(f"output {i} of forward changed from {expect[1]!r} (when "
                                 f"traced) to {o!r}; jit records non-tensor outputs once")
            continue
        if not isinstance(o, Tensor) or tuple(o.shape) != expect[1] or o.dtype is not expect[2]:
            got = (f"{type(o).__name__}" if not isinstance(o, Tensor)
                   else f"shape {list(o.shape)} and dtype {o.dtype}")
            raise spec.error(f"output {i} of forward has {got}, but had shape "
                             f"{list(expect[1])} and dtype {expect[2]} when traced")
        result.append(o._data)
    mids: list = []
    classify = _classifier(spec, args, outputs, mids)
    found = [classify(t) for t in ctx._to_save]
    attrs = _user_attrs(ctx, before)
    found_attrs = [(k, classify(v)) for k, v in attrs.items() if isinstance(v, Tensor)]
    if found != spec.saved or found_attrs != spec.tensor_attrs:
        raise spec.error("forward saved different tensors for backward than when it was "
                         "traced (an input, an output or an intermediate)")
    for name, value in spec.value_attrs:
        if name not in attrs or not _same_value(attrs[name], value):
            raise spec.error(f"ctx.{name} changed from {value!r} (when traced) to "
                             f"{attrs.get(name)!r}; jit records Python values on ctx once")
    for t, (shape, dt) in zip(mids, spec.mids):
        if tuple(t.shape) != shape or t.dtype is not dt:
            raise spec.error("a tensor saved for backward changed shape or dtype since the "
                             "call was traced")
        result.append(t._data)
    return tuple(result)


def _same_value(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return bool(np.all(a == b)) and type(a) is type(b)
    except Exception:  # noqa: BLE001 - incomparable values are different
        return False


def _call_vjp(g: tuple, ans: tuple, *inputs: Any, spec: FunctionCallSpec) -> list:
    """The forward equation's VJP: the user's backward, as a ``custom_function_backward``
    equation (traced) or call (eager) on the gradients and what ctx saved."""
    n_t = len(spec.tensor_outputs)
    values = list(ans[:n_t]) if isinstance(ans, tuple) else [ans]
    position = {i: k for k, i in enumerate(spec.tensor_outputs)}

    def value(entry: Any) -> Any:
        if entry is None:
            return None
        kind, i = entry
        if kind == "in":
            return inputs[i]
        if kind == "out":  # (a non-differentiable output is a constant to double backward)
            v = values[position[i]]
            return v.detach() if i in spec.nondiff else v
        return ans[n_t + i].detach()  # a residual: a constant (eagerly: made under no-grad)

    grads = list(g[:n_t])
    if not spec.materialize and state.traces:
        # set_materialize_grads(False): an output that got no gradient reaches backward as
        # None, as eagerly (while tracing, the sweep's zeros for it are not traced values)
        grads = [None if isinstance(gi, registry.Tensor) and gi._trace is None else gi
                 for gi in grads]
    saved = [value(e) for e in spec.saved]
    attrs = [value(e) for _, e in spec.tensor_attrs]
    if not spec.grad_inputs:
        return [None] * len(inputs)
    outs = registry.apply(FUNCTION_BACKWARD, *grads, *saved, *attrs, spec=spec)
    res: list = [None] * len(inputs)
    for k, i in enumerate(spec.grad_inputs):
        res[i] = outs[k]
    return res


# ---------------------------------------------------------------- the backward equation


def _backward_meta(*args: Any, spec: FunctionCallSpec) -> tuple:
    metas = [spec.in_meta[i] for i in spec.grad_inputs]
    return tuple(tuple(m.shape) for m in metas), tuple(m.dtype for m in metas)


def _make_ctx(spec: FunctionCallSpec, values: list) -> tuple:
    """A ctx for ``backward`` from the backward equation's inputs, and the gradients (one per
    forward output; None for a non-tensor output)."""
    n_t = len(spec.tensor_outputs)
    n_s = len(spec.saved)
    grads_t, saved, attrs = values[:n_t], values[n_t:n_t + n_s], values[n_t + n_s:]
    ctx = spec.cls._backward_cls()
    ctx.needs_input_grad = spec.needs
    ctx.materialize_grads = spec.materialize
    ctx._to_save = tuple(saved)
    for name, value in spec.value_attrs:
        setattr(ctx, name, value)
    for (name, _), value in zip(spec.tensor_attrs, attrs):
        setattr(ctx, name, value)
    it = iter(grads_t)
    grads = [next(it) if o[0] == "t" else None for o in spec.outputs]
    return ctx, grads


def _run_user_backward(spec: FunctionCallSpec, ctx: Any, grads: list) -> list:
    """The user's backward (or vjp), checked as ``BackwardCFunction.apply`` checks it: one
    gradient per tensor argument that needs one, fitted to its shape and dtype (a None
    gradient is zeros)."""
    from ..ops.creation import zeros
    from ..autograd.function import Function

    cls = spec.cls
    backward_fn = cls.vjp if cls.vjp is not Function.vjp else cls.backward
    result = backward_fn(ctx, *grads)
    if not isinstance(result, tuple):
        result = (result,)
    n_in = len(spec.kinds)
    if len(result) != n_in:
        if len(result) > n_in and all(r is None for r in result[n_in:]):
            result = result[:n_in]
        else:
            raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect number "
                               f"of gradients (expected {n_in}, got {len(result)})")
    out = []
    for i in spec.grad_inputs:
        g, meta = result[i], spec.in_meta[i]
        if g is None:
            out.append(zeros(meta.shape, dtype=meta.dtype))
            continue
        if not isinstance(g, registry.Tensor):
            raise TypeError(f"function {cls.__name__}Backward returned a gradient different "
                            f"than None at position {i + 1}, but the corresponding forward "
                            "input was not a Variable")
        try:
            ok = registry.broadcast_shapes(tuple(g.shape), meta.shape) == tuple(g.shape)
        except RuntimeError:
            ok = False
        if not ok:
            raise RuntimeError(
                f"Function {cls.__name__}Backward returned an invalid gradient at index {i} - "
                f"got {list(g.shape)} but expected shape compatible with {list(meta.shape)}")
        out.append(fit_grad(g, meta.shape, meta.dtype))
    return out


def _backward_impl(*arrays: Any, spec: FunctionCallSpec) -> tuple:
    """Runs the user's backward on arrays: the gradients of the arguments that need one."""
    from ..autograd.grad_mode import no_grad

    values = [None if a is None else as_tensor(np.asarray(a)) for a in arrays]
    ctx, grads = _make_ctx(spec, values)
    with _NoTrace(), no_grad():
        out = _run_user_backward(spec, ctx, grads)
    return tuple(g._data for g in out)


def _backward_vjp(gg: tuple, ans: Any, *inputs: Any, spec: FunctionCallSpec) -> list:
    """The backward equation's own VJP (double backward, eager): the user's backward is run
    again on its inputs with grad recording, and differentiated by the engine."""
    from ..autograd import grad as autograd_grad
    from ..autograd.grad_mode import enable_grad

    Tensor = registry.Tensor
    if any(isinstance(x, Tensor) and x._trace is not None for x in inputs):
        return _backward_vjp_traced(gg, inputs, spec)
    create_graph = state.grad_enabled
    with enable_grad():
        # Each input through its own alias: the gradient reaching an alias is the partial
        # derivative for that input alone (one input may depend on another, e.g. a gradient
        # on a saved output: its path is the engine's, not this rule's), and the result's
        # graph still leads to the inputs, for higher derivatives.
        aliases = [x.clone() if isinstance(x, Tensor) and x.requires_grad else x
                   for x in inputs]
        ctx, grads = _make_ctx(spec, aliases)
        outs = _run_user_backward(spec, ctx, grads)
    pairs = [(o, c) for o, c in zip(outs, gg) if o.requires_grad]
    wrt = [(i, x) for i, x in enumerate(aliases) if isinstance(x, Tensor) and x.requires_grad]
    res: list = [None] * len(inputs)
    if not pairs or not wrt:
        return res
    found = autograd_grad([o for o, _ in pairs], [x for _, x in wrt],
                          grad_outputs=[c for _, c in pairs], retain_graph=True,
                          create_graph=create_graph, allow_unused=True)
    for (i, _), g in zip(wrt, found):
        res[i] = g
    return res


def _backward_vjp_traced(gg: tuple, inputs: tuple, spec: FunctionCallSpec) -> list:
    """``_backward_vjp`` while tracing (the VJP pass, or ``func.grad`` inside ``jit``,
    differentiating a backward equation): the user's backward is recorded inline on aliases
    of the inputs, and the reverse sweep differentiates what it recorded."""
    from .sweep import active_vars, backward_sweep
    from ..autograd.grad_mode import enable_grad

    Tensor = registry.Tensor
    trace = state.traces[-1]
    with enable_grad():
        aliases = [trace.as_tracer(x).clone() if isinstance(x, Tensor) else x for x in inputs]
        start = len(trace.eqns)
        ctx, grads = _make_ctx(spec, aliases)
        outs = _run_user_backward(spec, ctx, grads)
    eqns = trace.eqns[start:]
    seeds = {a._var for a in aliases if isinstance(a, Tensor)}
    act = active_vars(eqns, seeds)
    cts: dict = {}
    for o, c in zip(outs, gg):
        v = trace.var_of(o)
        if v in act:
            c = trace.as_tracer(c)
            cts[v] = c if v not in cts else cts[v] + c
    found = backward_sweep(trace, eqns, trace.value_of, cts, act)
    return [found.get(a._var) if isinstance(a, Tensor) else None for a in aliases]


def _no_jvp(tangents: tuple, ans: Any, *args: Any, spec: FunctionCallSpec) -> Any:
    # (jit runs a function eagerly when a dual tensor is passed in, so forward AD reaches
    # these equations only through a program run on dual tensors)
    raise spec.error("forward-mode AD through a jit program that calls it is not supported; "
                     "call the jitted function with dual tensors (it then runs eagerly, with "
                     "the Function's jvp) or the Function outside jit", NotImplementedError)


def _backward_outputs_requiring_grad(args: tuple, params: dict) -> list:
    """Which gradients the backward equation returns require grad when it is recorded
    (``create_graph``): as eagerly, those the user's backward computes from an input that
    requires grad (found by running it with grad recording)."""
    from ..autograd.grad_mode import enable_grad

    spec = params["spec"]
    with enable_grad():
        ctx, grads = _make_ctx(spec, list(args))
        return [g.requires_grad for g in _run_user_backward(spec, ctx, grads)]


FUNCTION_CALL = registry.OPS.get("custom_function") or registry.defop(
    "custom_function", _call_impl, kind=registry.OPAQUE, meta=_call_meta, n_outputs=0,
    vjp=_call_vjp, save_output=True, node_name="CustomFunctionBackward",
    save=registry.SAVE_ALL, jvp=_no_jvp)
FUNCTION_BACKWARD = registry.OPS.get("custom_function_backward") or registry.defop(
    "custom_function_backward", _backward_impl, kind=registry.OPAQUE, meta=_backward_meta,
    n_outputs=0, vjp=_backward_vjp, node_name="CustomFunctionBackwardBackward",
    save=registry.SAVE_ALL, jvp=_no_jvp,
    outputs_requiring_grad=_backward_outputs_requiring_grad)
