"""``cond`` and ``while_loop`` staged by the jit: one equation each, holding sub-graphs.

``jitgrad.cond(pred, true_fn, false_fn, operands)`` with a traced predicate cannot pick a branch
while tracing; the jit's ``Trace.stage_cond`` (here) traces each branch into a sub-``Graph``
whose inputs are the operands, and records ONE ``cond`` equation, as JAX's ``lax.cond``::

    t3: f32[3] = cond t2, primals_1 branches=(false_fn, true_fn)
        def false_fn(operands_1: f32[3]): ...
        def true_fn(operands_1: f32[3]): ...

``branches[i]`` runs when ``bool(pred) == i`` (JAX's order: index 0 is the false branch). Tensors
a branch reads from its closure (values of the enclosing trace, or eager tensors) are *lifted*:
extra inputs of every branch and extra operands of the equation, so a sub-graph never refers
to a value outside it. Both branches must return the same structure of tensors with equal
shapes and dtypes.

The equation is differentiable, as JAX's cond: staged while a gradient may flow (grad mode
on, an operand requiring grad), each branch is split by the same reverse sweep the VJP pass
runs into a forward that also returns its *residuals* (what its own VJP reads; the residuals of
all branches are concatenated, each branch returning zeros in the others' places) and a
backward ``(operands, residuals, cotangents) -> gradients`` (``_residualize``). The equation
then holds both (``n_res``, ``bwd``), and its VJP is a ``cond`` of the backward branches on the
same predicate. Once ``partition`` has split the backward off, the forward equation becomes a
plain ``cond`` again and ``dce`` drops the residuals nobody saves. A plain ``cond`` (or one
whose residuals receive a cotangent: a second derivative) is differentiated whole: each branch
differentiated, recomputing what it needs from the operands. Either way the backward is a
``cond`` of graphs, so it is differentiable again (``create_graph``, double backward).

``while_loop(cond_fn, body_fn, carried_inputs)`` with traced values is one ``while_loop``
equation holding the ``cond_fn`` and ``body_fn`` sub-graphs; the carry must keep its structure,
shapes and dtypes. As JAX's ``lax.while_loop``, it is not reverse-differentiable: tracing raises
when a gradient would flow through it (use a Python ``for`` loop with a static trip count, or
call the function eagerly).

Backends run the selected sub-graph with what they compile graphs with
(``sub_runner_impl``): the interpreter interprets it; the Numba and cuda backends compile each
sub-graph once, with the parent's program, and never fuse the equation (a kernel boundary).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes, errors
from .._interpret import interpret
from .._ir import Graph, Var, type_str
from .._tracer import Trace, Tracer, active, replay
from ..ops import registry
from ..ops.control_flow import check_body_output, check_branch_outputs, flatten, unflatten
from ..ops.registry import state
from ..tensor import Tensor
from .passes.dce import dce
from .sweep import active_vars, backward_sweep, is_float

NO_GRAD_WHILE = (
    "a gradient would flow through jitgrad.while_loop inside jitgrad.jit (an input or a tensor "
    "it reads requires grad), but a staged while_loop is not reverse-differentiable (its trip "
    "count is only known when it runs; as JAX's lax.while_loop). Use a Python `for` loop with "
    "a static trip count, call the function eagerly (outside jit), or run it under "
    "jitgrad.no_grad() / on tensors that do not require grad")


class BranchTrace:
    """The trace of one branch (or loop function) inside an enclosing trace (mixed into the
    enclosing trace's class by ``branch_trace``, so it records in-place ops and custom
    Functions as the jit's trace does).

    Values of the enclosing traces and eager tensors that the branch reads are lifted to
    extra inputs (``lifted``: id -> (Var, outer value), in order of first use), so the
    sub-graph is closed. The dispatcher records every op that touches a value of this trace or
    of an enclosing one here (``lifts``).
    """

    lifts = True

    def __init__(self, parent: Any = None) -> None:
        super().__init__()
        self.parent = parent  # (None: a scratch trace of this kind, custom_function's)
        self.lifted: dict[int, tuple[Var, Tensor]] = {}

    def var_of(self, a: Any) -> Any:
        if isinstance(a, Tensor) and a._trace is not self:
            if a._trace is not None and a._trace not in state.traces:
                return super().var_of(a)  # (raises: a tracer that escaped another trace)
            hit = self.lifted.get(id(a))
            if hit is None:
                hit = self.lifted[id(a)] = (Var(a.shape, a.dtype, "captured"), a)
            return hit[0]
        return super().var_of(a)

    def read_value(self, t: Tensor) -> None:
        if self.parent is not None:
            self.parent.read_value(t)

    def inplace(self, target: Tensor, new: Tensor) -> Tensor:
        if not (isinstance(target, Tracer) and target._trace is self):
            raise errors.trace_error(
                "an in-place write, inside a jitgrad.cond branch or a jitgrad.while_loop "
                "function, to a tensor from outside it is not supported; return the new value "
                "from the function instead")
        return super().inplace(target, new)


_BRANCH_CLASSES: dict[type, type] = {}


def branch_trace(parent: Any) -> Any:
    """A new ``BranchTrace`` of ``parent``'s kind (the jit's ``Trace``, or a branch's)."""
    base = type(parent)
    if issubclass(base, BranchTrace):
        base = base.__mro__[2]  # (the enclosing trace's own class, below the mixin)
    cls = _BRANCH_CLASSES.get(base)
    if cls is None:
        cls = _BRANCH_CLASSES[base] = type("BranchTrace", (BranchTrace, base), {})
    return cls(parent)


def _trace_fn(parent: Any, fn: Callable, leaves: list, spec: Any, name: str) -> tuple:
    """Traces ``fn(*tree)`` on stand-ins for ``leaves`` (the tree of structure ``spec``)
    inside ``parent``: (its trace, the output leaves, the output spec, the input tracers)."""
    T = branch_trace(parent)
    with active(T):
        ins = [T.new_input(tuple(t.shape), t.dtype, t.requires_grad and state.grad_enabled,
                           hint="operands", leaf=False) for t in leaves]
        tree = unflatten(spec, ins)
        out = fn(*tree)
        out_leaves, out_spec = flatten(out)
        for o in out_leaves:
            if isinstance(o, Tensor):
                T.var_of(o)  # (an output read from the closure is lifted too)
    T.graph_name = name
    return T, out_leaves, out_spec, ins


def _close(traces: list, outs: list) -> tuple[list[Graph], list[Tensor]]:
    """One sub-graph per trace, all with the same inputs: the trace's own inputs, then every
    value any of them lifted (the union, in order of first use). Returns the graphs and the
    lifted outer values."""
    union: dict[int, Tensor] = {}
    for T in traces:
        for k, (_, t) in T.lifted.items():
            union.setdefault(k, t)
    graphs = []
    for T, out in zip(traces, outs):
        extra = [T.lifted[k][0] if k in T.lifted else Var(t.shape, t.dtype, "captured")
                 for k, t in union.items()]
        out_vars = [T.var_of(o) for o in out]
        g = Graph(list(T.invars) + extra, out_vars, T.eqns, {}, T.graph_name)
        graphs.append(dce(g))
    for T in traces:  # (its tracers and it form a cycle: let go of the outer values now, so
        T.lifted = {}  # that a tensor made inside the jitted function is seen as unreachable)
        T.inputs = []
    return graphs, list(union.values())


def _to_tensor(x: Any) -> Tensor:
    from ..ops.creation import tensor

    return x if isinstance(x, Tensor) else tensor(x)


# ---------------------------------------------------------------- cond


def stage_cond(parent: Any, pred: Tensor, true_fn: Callable, false_fn: Callable,
               operands: tuple, leaves: list) -> Any:
    """``jitgrad.cond`` with a traced (or captured) predicate: one ``cond`` equation."""
    spec = flatten(operands)[1]
    with active(parent):
        p = pred.reshape(()) if pred.dim() else pred
        if p.dtype is not dtypes.bool:
            p = p != 0
    t_tr, t_out, t_spec, _ = _trace_fn(parent, true_fn, leaves, spec, "true_fn")
    f_tr, f_out, f_spec, _ = _trace_fn(parent, false_fn, leaves, spec, "false_fn")
    check_branch_outputs(t_spec, f_spec, t_out, f_out)
    tensor_at = [i for i, o in enumerate(t_out) if isinstance(o, Tensor)]
    if not tensor_at:  # (nothing traced reaches the result: its Python values are static)
        return unflatten(t_spec, t_out)
    (g_true, g_false), lifted = _close(
        [t_tr, f_tr], [[t_out[i] for i in tensor_at], [f_out[i] for i in tensor_at]])
    params: dict = {"branches": (g_false, g_true)}
    if state.grad_enabled and any(t.requires_grad for t in (*leaves, *lifted)):
        # differentiated: each branch also returns what its VJP reads (see _residualize)
        fwd, n_res, bwd = _residualize((g_false, g_true))
        if n_res:
            params = {"branches": fwd, "n_res": n_res, "bwd": bwd}
        else:
            params["bwd"] = bwd
    with active(parent):
        results = parent.bind(COND, (p, *leaves, *lifted), params)
    out = list(t_out)
    for i, r in zip(tensor_at, results):
        out[i] = r
    return unflatten(t_spec, out)


def _cond_meta(pred: Any, *operands: Any, branches: tuple, n_res: int = 0,
               bwd: tuple | None = None) -> tuple:
    if tuple(pred.shape) != () or pred.dtype is not dtypes.bool:
        raise RuntimeError(f"cond: the predicate must be bool[], got "
                           f"{type_str(tuple(pred.shape), pred.dtype)}")
    for g in branches:
        _check_inputs("cond", g, operands)
    outs = branches[0].outvars
    for g in branches[1:]:
        if [(v.shape, v.dtype) for v in g.outvars] != [(v.shape, v.dtype) for v in outs]:
            raise RuntimeError(f"cond: branch {g.name} returns {_types(g.outvars)}, branch "
                               f"{branches[0].name} returns {_types(outs)}")
    return tuple(v.shape for v in outs), tuple(v.dtype for v in outs)


def _types(vs: list) -> str:
    return "(" + ", ".join(type_str(v.shape, v.dtype) for v in vs) + ")"


def _check_inputs(what: str, g: Graph, values: tuple) -> None:
    if len(values) != len(g.invars) or any(
            tuple(x.shape) != v.shape or x.dtype is not v.dtype
            for x, v in zip(values, g.invars)):
        got = "(" + ", ".join(type_str(tuple(x.shape), x.dtype) for x in values) + ")"
        raise RuntimeError(f"{what}: sub-graph {g.name} takes {_types(g.invars)}, the equation "
                           f"passes {got}")


_RUNNERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _interpreted(g: Graph) -> Callable:
    run = _RUNNERS.get(g)
    if run is None:
        run = _RUNNERS[g] = interpret(g)
    return run


def _truth(a: Any) -> int:
    """The truth value of a one-element array (a device array is read on the host)."""
    if isinstance(a, np.ndarray) or not hasattr(a, "copy_to_host"):
        return int(bool(a))
    return int(bool(a.copy_to_host()))


def _cond_impl(pred: Any, *arrays: Any, branches: tuple, n_res: int = 0,
               bwd: tuple | None = None, runner: Callable = _interpreted) -> tuple:
    """Runs the branch ``pred`` selects on the operand arrays."""
    return tuple(runner(branches[_truth(pred)])(list(arrays)))


def _float_positions(vs: list) -> tuple:
    return tuple(i for i, v in enumerate(vs) if is_float(v))


def _cond_vjp(g: Any, ans: Any, pred: Any, *operands: Any, branches: tuple, n_res: int = 0,
              bwd: tuple | None = None) -> list:
    """The VJP of a ``cond``: a ``cond`` on the same predicate of the branches' VJPs.

    A ``cond`` staged for differentiation returns residuals (``n_res`` trailing outputs) and
    holds its backward branches (``bwd``: operands, residuals, cotangents -> gradients); when no
    cotangent reaches the residuals (a first derivative), that is the backward. Otherwise (a
    gradient of the backward reached them) each branch is differentiated whole, recomputing
    what it needs from the operands.
    """
    outs = branches[0].outvars
    n_out = len(outs) - n_res
    gs = g if isinstance(g, tuple) else (g,)
    float_in = _float_positions(branches[0].invars)
    res: list = [None] * (1 + len(operands))
    if bwd is not None and all(_is_zero(c) for c in gs[n_out:]):
        cts = [gs[i] for i in _float_positions(outs[:n_out])]
        grads = registry.apply(COND, pred, *operands, *ans[n_out:], *cts, branches=bwd)
    else:
        float_out = _float_positions(outs)
        if not float_out or not float_in:
            return res
        cts = [gs[i] for i in float_out]
        fns = tuple(_branch_vjp(b, float_in, float_out) for b in branches)
        grads = registry.apply(COND, pred, *operands, *cts, branches=fns)
    for k, i in enumerate(float_in):
        res[1 + i] = grads[k]
    return res


def _is_zero(t: Any) -> bool:
    """Whether cotangent ``t`` is a known zero (the sweep's or the engine's filler)."""
    if not isinstance(t, Tensor) or t._trace is not None or t.requires_grad:
        return False
    data = t._data
    return not np.any(data if isinstance(data, np.ndarray) else data.copy_to_host())


_VJPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _joint(g: Graph, float_in: tuple, float_out: tuple) -> tuple:
    """Traces ``g`` and its reverse sweep: (trace, operand vars, output vars, cotangent vars,
    gradient vars (zeros where none flows), number of forward equations)."""
    from ..ops.creation import zeros

    T = Trace()
    with active(T):
        ins = [T.new_input(v.shape, v.dtype, hint="operands") for v in g.invars]
        outs = replay(T, g, ins)
        n_fwd = len(T.eqns)
        cts_in = [T.new_input(g.outvars[i].shape, g.outvars[i].dtype, hint="cotangents")
                  for i in float_out]
        act = active_vars(T.eqns, {ins[i]._var for i in float_in})
        cts: dict = {}
        for i, t in zip(float_out, cts_in):
            v = T.var_of(outs[i])
            if v in act:
                cts[v] = t if v not in cts else cts[v] + t
        ct = backward_sweep(T, T.eqns[:n_fwd], T.value_of, cts, act)
        grads = []
        for i in float_in:
            v = ins[i]._var
            gi = ct.get(v)
            grads.append(T.var_of(gi if gi is not None else zeros(v.shape, dtype=v.dtype)))
        out_vars = [T.var_of(o) for o in outs]
    for v, _ in T.captured.values():
        v.hint = "c"
    return T, [t._var for t in ins], out_vars, [t._var for t in cts_in], grads, n_fwd


def _consts(trace: Trace) -> dict:
    return {v: t for v, t in trace.captured.values()}


def _branch_vjp(g: Graph, float_in: tuple, float_out: tuple) -> Graph:
    """``(operands, cotangents of the floating outputs) -> gradients of the floating
    operands`` of branch ``g`` (zeros where no gradient flows), cached per branch."""
    cache = _VJPS.setdefault(g, {})
    key = (float_in, float_out)
    if key not in cache:
        T, ins, _, cts, grads, _ = _joint(g, float_in, float_out)
        cache[key] = dce(Graph(ins + cts, grads, T.eqns, _consts(T), f"{g.name}_vjp"))
    return cache[key]


def _residualize(branches: tuple) -> tuple[tuple, int, tuple]:
    """Splits each branch into a forward that also returns its residuals (what its VJP reads)
    and a backward ``(operands, residuals, cotangents) -> gradients``, as JAX's cond does: the
    residuals of all branches are concatenated, each forward returning zeros in the other
    branches' places, each backward reading its own. Returns (forward branches, number of
    residuals, backward branches)."""
    from ..ops.creation import zeros

    float_in = _float_positions(branches[0].invars)
    float_out = _float_positions(branches[0].outvars)
    splits = []
    for g in branches:
        T, ins, outs, cts, grads, n_fwd = _joint(g, float_in, float_out)
        fwd_eqns, bwd_eqns = T.eqns[:n_fwd], T.eqns[n_fwd:]
        made = set(cts) | set(_consts(T))
        for e in bwd_eqns:
            made.update(e.outputs)
        used = {v for e in bwd_eqns for v in e.in_vars() if v not in made}
        used |= {v for v in grads if v not in made}
        res = [v for e in fwd_eqns for v in e.outputs if v in used]
        for v in res:
            v.hint = "saved"
        splits.append((T, ins, outs, cts, grads, fwd_eqns, bwd_eqns, res))
    n_res = sum(len(sp[-1]) for sp in splits)
    fwds, bwds = [], []
    for k, (T, ins, outs, cts, grads, fwd_eqns, bwd_eqns, res) in enumerate(splits):
        consts = _consts(T)
        slots, padded = [], {}
        for j, sp in enumerate(splits):
            for v in sp[-1]:
                if j == k:
                    slots.append(v)
                else:
                    z = Var(v.shape, v.dtype, "c")
                    padded[z] = zeros(v.shape, dtype=v.dtype)
                    slots.append(z)
        name = branches[k].name
        fwds.append(dce(Graph(ins, outs + slots, fwd_eqns, {**consts, **padded}, name)))
        own = set(res)
        b_in = ins + [v if v in own else Var(v.shape, v.dtype, "saved") for v in slots] + cts
        bwds.append(dce(Graph(b_in, grads, bwd_eqns, consts, f"{name}_bwd")))
    return tuple(fwds), n_res, tuple(bwds)


def _no_jvp(tangents: tuple, ans: Any, *args: Any, **params: Any) -> Any:
    raise NotImplementedError(
        "forward-mode AD through a jit program's cond/while_loop equation is not supported; "
        "call the jitted function with dual tensors (it then runs eagerly)")


COND = registry.OPS.get("cond") or registry.defop(
    "cond", _cond_impl, kind=registry.OPAQUE, meta=_cond_meta, n_outputs=0, vjp=_cond_vjp,
    save=registry.SAVE_ALL, save_output=True, node_name="CondBackward", jvp=_no_jvp)


# ---------------------------------------------------------------- while_loop


def stage_while(parent: Any, cond_fn: Callable, body_fn: Callable, carried_inputs: Any,
                leaves: list, spec: Any) -> Any:
    """``jitgrad.while_loop`` inside the jit: one ``while_loop`` equation."""
    with active(parent):
        leaves = [_to_tensor(x) for x in leaves]
    c_tr, c_out, _, _ = _trace_fn(parent, cond_fn, leaves, spec, "cond_fn")
    if len(c_out) != 1 or not (isinstance(c_out[0], bool) or (
            isinstance(c_out[0], Tensor) and c_out[0].dim() == 0
            and c_out[0].dtype is dtypes.bool)):
        got = c_out[0] if len(c_out) == 1 else c_out
        raise RuntimeError(
            f"cond_fn must return a boolean scalar tensor or a boolean but got {got}")
    if isinstance(c_out[0], bool):
        if not c_out[0]:
            return carried_inputs
        raise RuntimeError("while_loop: infinite loop detected because cond_fn always returns "
                           "the same value True.")
    b_tr, b_out, b_spec, b_ins = _trace_fn(parent, body_fn, leaves, spec, "body_fn")
    new = unflatten(b_spec, b_out)
    check_body_output(new, unflatten(spec, b_ins))
    (g_cond,), c_lifted = _close([c_tr], [c_out])
    (g_body,), b_lifted = _close(
        [b_tr], [flatten(tuple(new) if isinstance(new, (tuple, list)) else (new,))[0]])
    values = [*leaves, *c_lifted, *b_lifted]
    if state.grad_enabled and any(isinstance(t, Tensor) and t.requires_grad for t in values):
        raise RuntimeError(NO_GRAD_WHILE)
    with active(parent):
        results = parent.bind(WHILE, tuple(values),
                              {"cond_fn": g_cond, "body_fn": g_body, "n_carry": len(leaves)})
    return unflatten(spec, list(results))


def _while_meta(*values: Any, cond_fn: Graph, body_fn: Graph, n_carry: int) -> tuple:
    carry = values[:n_carry]
    n_c = len(cond_fn.invars) - n_carry
    _check_inputs("while_loop", cond_fn, carry + values[n_carry:n_carry + n_c])
    _check_inputs("while_loop", body_fn, carry + values[n_carry + n_c:])
    out = body_fn.outvars
    if [(v.shape, v.dtype) for v in out] != [(tuple(x.shape), x.dtype) for x in carry]:
        raise RuntimeError(f"while_loop: body_fn returns {_types(out)}, the carry is "
                           f"{_types(body_fn.invars[:n_carry])}")
    v = cond_fn.outvars[0]
    if v.shape != () or v.dtype is not dtypes.bool:
        raise RuntimeError(f"while_loop: cond_fn returns {_types([v])}, not bool[]")
    return tuple(v.shape for v in out), tuple(v.dtype for v in out)


def _while_impl(*arrays: Any, cond_fn: Graph, body_fn: Graph, n_carry: int,
                runner: Callable = _interpreted) -> tuple:
    """Runs the loop on arrays: ``body_fn`` while ``cond_fn`` holds."""
    n_c = len(cond_fn.invars) - n_carry
    carry = list(arrays[:n_carry])
    c_extra, b_extra = list(arrays[n_carry:n_carry + n_c]), list(arrays[n_carry + n_c:])
    check, body = runner(cond_fn), runner(body_fn)
    while _truth(check(carry + c_extra)[0]):
        carry = list(body(carry + b_extra))
    return tuple(a.copy() if any(a is x for x in arrays) else a for a in carry)


def _while_vjp(g: Any, ans: Any, *values: Any, **params: Any) -> list:
    raise RuntimeError(NO_GRAD_WHILE)


WHILE = registry.OPS.get("while_loop") or registry.defop(
    "while_loop", _while_impl, kind=registry.OPAQUE, meta=_while_meta, n_outputs=0,
    vjp=_while_vjp, node_name="WhileLoopBackward", jvp=_no_jvp)

CONTROL_FLOW = (COND, WHILE)


def sub_runner_impl(e: Any, compile_graph: Callable) -> Callable:
    """The implementation of control-flow equation ``e`` (called with its operand arrays
    alone) that runs its sub-graphs with ``compile_graph(graph) -> run``: each compiled once,
    when first selected, and kept with the parent's program."""
    runs: dict[int, Callable] = {}

    def runner(g: Graph) -> Callable:
        run = runs.get(id(g))
        if run is None:
            run = runs[id(g)] = compile_graph(g)
        return run

    impl, params = e.op.graph_impl, e.params

    def run_control_flow(*arrays: Any) -> tuple:
        return impl(*arrays, runner=runner, **params)
    return run_control_flow


__all__ = ["COND", "WHILE", "CONTROL_FLOW", "BranchTrace", "stage_cond", "stage_while",
           "sub_runner_impl"]
