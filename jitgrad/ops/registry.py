"""The op registry: every primitive is one ``OpDef``, and every call goes through ``apply``.

An ``OpDef`` holds everything about one primitive: its NumPy implementation, its shape/dtype
rule, its VJP rule (written with jitgrad ops, so it works on eager tensors, on tracers, and
under ``create_graph``), optional JVP rule, what its backward saves, torch's node name and, for
pointwise and reduce ops, a scalar kernel template that compiled backends render.

``apply(op, *args, **params)`` is the only dispatcher:

* on tracer tensors (inside ``jit``) it hands the call to the tracer's trace, which records an
  equation;
* on eager tensors it runs ``op.impl`` on NumPy arrays and, when grad mode is on and an input
  requires grad, records an ``OpNode`` that holds the rule and the saved values.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes

POINTWISE, REDUCE, MOVEMENT, OPAQUE = "pointwise", "reduce", "movement", "opaque"

# How a pointwise op's result dtype follows from its inputs (torch's categories):
SAME = "same"  # promoted dtype of the inputs (add, mul, maximum, ...)
FLOAT = "float"  # promoted dtype, integers and bool become the default float (exp, div, ...)
BOOL = "bool"  # computed in the promoted dtype, returns bool (eq, lt, ...)


class OpDef:
    """The single definition of one primitive op."""

    __slots__ = ("name", "node_name", "kind", "impl", "meta", "vjp", "jvp", "save", "save_output",
                 "template", "promote", "n_outputs", "nonpromoted", "decompose", "differentiable",
                 "view")

    def __init__(self, name, impl, *, node_name=None, kind=OPAQUE, meta=None, vjp=None, jvp=None,
                 save=(), save_output=False, template=None, promote=SAME, n_outputs=1,
                 nonpromoted=(), decompose=None, differentiable=True, view=False):
        self.name = name
        self.node_name = node_name or _default_node_name(name)
        self.kind = kind
        self.impl = impl
        self.meta = meta
        self.vjp = vjp
        self.jvp = jvp
        self.save = tuple(save)
        self.save_output = save_output
        self.template = template
        self.promote = promote
        self.n_outputs = n_outputs
        self.nonpromoted = tuple(nonpromoted)
        self.decompose = decompose
        self.differentiable = differentiable and vjp is not None
        self.view = view  # outputs alias the first input (numpy views): they share its version

    def __repr__(self) -> str:
        return f"<OpDef {self.name} ({self.kind})>"


def _default_node_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_")) + "Backward0"


OPS: dict[str, OpDef] = {}


def defop(name: str, impl: Callable, **fields: Any) -> OpDef:
    """Defines and registers a primitive op. See ``OpDef`` for the fields."""
    if name in OPS:
        raise ValueError(f"op {name!r} is already defined")
    op = OpDef(name, impl, **fields)
    if op.meta is None:
        if op.kind != POINTWISE:
            raise ValueError(f"op {name!r}: a non-pointwise op needs a meta (shape/dtype) rule")
        op.meta = _pointwise_meta(op)
    OPS[name] = op
    return op


class Meta:
    """Shape and dtype of a value that a backward rule needs only the metadata of."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple, dtype: dtypes.dtype) -> None:
        self.shape = shape
        self.dtype = dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"Meta({self.shape}, {self.dtype})"


# ---------------------------------------------------------------- shape and dtype rules


def broadcast_shapes(*shapes: tuple) -> tuple:
    """NumPy/torch broadcasting; raises torch's RuntimeError text on a mismatch."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for i, s in enumerate(shapes):
        for j, n in enumerate(s):
            k = ndim - len(s) + j
            if n != 1:
                if out[k] != 1 and out[k] != n:
                    a = "a" if i == 1 else "b"
                    raise RuntimeError(
                        f"The size of tensor {a} ({out[k] if i == 1 else n}) must match the size "
                        f"of tensor {'b' if a == 'a' else 'a'} ({n if i == 1 else out[k]}) at "
                        f"non-singleton dimension {k}")
                out[k] = n
    return tuple(out)


def compute_dtype(op: OpDef, args: tuple) -> tuple[dtypes.dtype, dtypes.dtype]:
    """(dtype the op computes in, dtype of its result) for a pointwise op, by torch's rules."""
    promoted = dtypes.result_type(*(a for i, a in enumerate(args) if i not in op.nonpromoted))
    if op.promote == BOOL:
        return promoted, dtypes.bool
    if op.promote == FLOAT and not (promoted.is_floating_point or promoted.is_complex):
        promoted = dtypes.get_default_dtype()
    return promoted, promoted


def _pointwise_meta(op: OpDef) -> Callable:
    def meta(*args, **params):
        shape = broadcast_shapes(*(a.shape for a in args if hasattr(a, "shape")))
        return shape, compute_dtype(op, args)[1]

    return meta


# ---------------------------------------------------------------- dispatch


class _DispatchState(threading.local):
    def __init__(self) -> None:
        self.grad_enabled = True
        self.inference = False
        self.traces: list = []  # active jit traces, innermost last


state = _DispatchState()

# Filled in by jitgrad.tensor and jitgrad.autograd.node at import (they import this module).
Tensor: Any = None
OpNode: Any = None


def apply(op: OpDef, *args: Any, **params: Any):
    """Runs ``op`` on ``args``: eagerly (recording autograd), or into the active jit trace."""
    if state.traces:
        for a in args:
            if isinstance(a, Tensor) and a._trace is not None:
                return a._trace.bind(op, args, params)
    if op.kind == POINTWISE:
        arrays, out_dtype = _pointwise_arrays(op, args)
    else:
        out_dtype = op.meta(*args, **params)[1]
        arrays = [a._data if isinstance(a, Tensor) else a for a in args]
    out = op.impl(*arrays, **params)
    record = state.grad_enabled and op.differentiable
    if op.n_outputs == 1:
        result = _wrap(out, out_dtype)
        outputs = (result,)
    else:
        if not isinstance(out_dtype, tuple):
            out_dtype = (out_dtype,) * len(out)
        outputs = result = tuple(_wrap(o, d) for o, d in zip(out, out_dtype))
    if op.view:
        _mark_views(args[0], outputs)
    if state.inference:
        for o in outputs:
            o._is_inference = True
    elif record:
        for a in args:
            if isinstance(a, Tensor) and a.requires_grad:
                OpNode.record(op, args, params, outputs)
                break
    return result


def _mark_views(base, outputs) -> None:
    for o in outputs:
        if np.may_share_memory(o._data, base._data):
            o._base = base._base if base._base is not None else base
            o._vc = base._vc
            o._is_inference = base._is_inference


def _wrap(data, dt):
    if type(data) is not np.ndarray or data.dtype != dt.np:
        data = np.asarray(data, dtype=dt.np)
    t = Tensor.__new__(Tensor)
    t._init(data, dt)
    return t


def _pointwise_arrays(op: OpDef, args: tuple) -> tuple[list, dtypes.dtype]:
    first = None
    uniform = True
    for i, a in enumerate(args):
        if i in op.nonpromoted:
            continue
        if not isinstance(a, Tensor):
            uniform = False
            break
        if first is None:
            first = a._dtype
        elif a._dtype is not first:
            uniform = False
            break
    if uniform and first is not None and (op.promote == SAME or first.is_floating_point):
        work, out_dtype = first, (dtypes.bool if op.promote == BOOL else first)
    else:
        work, out_dtype = compute_dtype(op, args)
    arrays = []
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            d = a._data
            if i not in op.nonpromoted and d.dtype != work.np:
                d = d.astype(work.np)
            arrays.append(d)
        elif i in op.nonpromoted or a is None:
            arrays.append(a)
        else:
            arrays.append(np.asarray(a, dtype=work.np))
    if len(arrays) > 1:
        try:
            np.broadcast_shapes(*(x.shape for x in arrays if hasattr(x, "shape")))
        except ValueError:
            broadcast_shapes(*(x.shape for x in arrays if hasattr(x, "shape")))
            raise
    return arrays, out_dtype


# ---------------------------------------------------------------- shared by both engines


def run_vjp(op: OpDef, grads: tuple, ans: Any, inputs: tuple, params: dict,
            needs: tuple[bool, ...]) -> list:
    """Applies ``op``'s VJP rule. ``grads`` has one cotangent per output (zeros, never None).

    ``op.vjp`` is either one function returning a gradient per input, or a tuple with one
    function (or None) per input, so unneeded gradients are never computed. The result is
    summed to each input's shape and cast to its dtype here, in one place for both engines.
    """
    g = grads[0] if op.n_outputs == 1 else tuple(grads)
    rule = op.vjp
    if isinstance(rule, tuple):
        out = [r(g, ans, *inputs, **params) if need and r is not None else None
               for r, need in zip(rule, needs)]
    else:
        out = list(rule(g, ans, *inputs, **params))
    for i, (gi, x) in enumerate(zip(out, inputs)):
        if gi is None or not needs[i]:
            out[i] = None
            continue
        out[i] = fit_grad(gi, x.shape, x.dtype)
    return out


def fit_grad(g, shape: tuple, dt: dtypes.dtype):
    """Sums a broadcast gradient back to ``shape`` and casts it to ``dt`` (generic unbroadcast)."""
    if tuple(g.shape) != tuple(shape):
        g = sum_to(g, shape)
    if g.dtype is not dt:
        if g.dtype.is_complex and not dt.is_complex:
            g = g.real
        g = g.to(dt)
    return g


def sum_to(g, shape: tuple):
    """Sums ``g`` over the dimensions that broadcasting added or expanded to reach ``shape``."""
    shape = tuple(shape)
    lead = g.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1)
    if dims:
        g = g.sum(dim=dims, keepdim=True)
    if lead or g.shape != shape:
        g = g.reshape(shape)
    return g
