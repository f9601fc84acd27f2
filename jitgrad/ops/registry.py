"""The op registry: every primitive is one ``OpDef`` (``ops/opdef.py``), registered here by
``defop``, and every call goes through ``apply``.

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
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes
from .._cuda_array import CudaArray as _CudaArray
from .._np_errors import quiet, restore
from .autocast_cast import autocast_arguments
from .memory_formats import mixed_layouts, pointwise_layout
from .dtype_rules import (  # noqa: F401 - (re-exported: the ops ask the registry for these)
    broadcast_shapes, category_dtype, check_limited_uint, compute_dtype)
from .op_fields import (  # noqa: F401 - (re-exported: the ops import every field value from here)
    AUTOCAST_FP32, AUTOCAST_LOWER, BOOL, FLOAT, INFERENCE_VIEW, MOVEMENT, MULTI_OUTPUT_VIEW,
    NO_GRAD_VIEW, OPAQUE, POINTWISE, REDUCE, SAME, SAVE_ALL, Public, ReduceTemplate)
from .opdef import Meta, OpDef  # noqa: F401 - (re-exported: what an op is, defined there)

# torch's ops give inf and nan silently; NumPy's warn ("divide by zero encountered in log").
# Each op's computation runs in NumPy's "ignore" error state (``_np_errors``); this filter
# quiets the rest of jitgrad's own NumPy calls (NumPy called from the user's modules still
# warns), and all of them under NumPy 1.x.
warnings.filterwarnings(
    "ignore", r"(divide by zero|invalid value|overflow|underflow) encountered in",
    RuntimeWarning, r"jitgrad\.")


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
    op.by_category = op.kind == POINTWISE and not op.nonpromoted \
        and hasattr(op.meta, "by_category") and not op.view  # (detach: its output is a view)
    if op.by_category:
        LANES[op] = lane(op)
    OPS[name] = op
    return op


# ---------------------------------------------------------------- shape and dtype rules


def _pointwise_meta(op: OpDef) -> Callable:
    def meta(*args, **params):
        shape = broadcast_shapes(*(a.shape for a in args if hasattr(a, "shape")))
        return shape, compute_dtype(op, args)[1]

    meta.by_category = True  # pointwise ops with their own meta (to, real, pow_scalar) differ
    return meta


# ---------------------------------------------------------------- dispatch


class _DispatchState(threading.local):
    def __init__(self) -> None:
        self.grad_enabled = True
        self.inference = False
        self.traces: list = []  # active jit traces, innermost last
        # autocast's enabled (device type, dtype) pairs (jitgrad.amp): () when it is off
        self.autocast: tuple = ()


state = _DispatchState()

# Filled in by jitgrad.tensor and jitgrad.autograd.op_node at import (they import this module):
# the Tensor class, its constructor ``make(data, dtype)``, the node that ``apply`` records and
# the lanes' record (``UniformNode.record``).
Tensor: Any = None
make: Any = None
OpNode: Any = None
record_uniform: Any = None

# Forward-mode AD (jitgrad.autograd.forward_ad): while a dual level is active, ``fw_hook(op,
# args, params, outputs)`` gives the outputs their tangents with ``op.jvp``. A JVP rule is
# ``jvp(tangents, ans, *inputs, **params) -> tangent`` (a tuple for multi-output ops), with
# ``tangents[i]`` None for inputs without one, or one of these shorthands:
LINEAR = "linear"  # affine in its floating inputs: apply the op to the tangents (zeros for
#                    missing ones; number arguments, the constant terms, become 0)
BILINEAR = "bilinear"  # op(a, b) linear in each input: op(ta, b) + op(a, tb)
ELEMENTWISE = "elementwise"  # pointwise with a tuple VJP: sum_i conj(vjp_i(conj(t_i)))
fw_hook: Any = None
# The forward-AD module itself, set when it is imported: what in-place ops (a written tensor
# takes the result's tangent) and printing (a dual tensor's tangent) use of it, only ever for
# tensors that have tangents, which exist only once it is imported.
forward_ad: Any = None



_SCALAR_TYPES = (int, float)
_FLOAT32, _FLOAT64 = dtypes.float32, dtypes.float64
# The CUDA runtime (``backends/cuda_eager.py``), installed when a tensor first goes to a cuda
# device: until then the dispatcher's only CUDA cost is reading ``cuda_live``.
cuda_live = False
cuda_compute: Callable | None = None
# The recording collector of ``jitgrad.profiler`` while one records, else None. Eager ops are
# timed by swapping each ``OpDef.impl`` for a timed wrapper while it records (nothing here);
# the backward engine (once per backward) and jit functions (once per call) read this slot.
profiler: Any = None
_ndarray = np.ndarray
# Set when the first bfloat16 tensor is made: from then on the backward engine checks whether
# a graph holds bfloat16 values (their gradients travel as tensors, rounded at each node).
bfloat16_live = False
# Sparse tensors (``jitgrad.sparse``, whose tensors are no plain ``Tensor``: never in a lane):
# once one exists, ``_apply`` hands a call with one (``sparse_any``) to ``sparse_apply``.
sparse_live = False
sparse_any: Callable | None = None
sparse_apply: Callable | None = None
# (``sparse.as_sparse``: the engine hands a sparse gradient around as a plain ``Tensor`` on a
# sparse storage; this makes it the ``SparseTensor`` that ``.grad`` and hooks show)
sparse_wrap: Callable | None = None

# The meta device (``jitgrad._meta``): once a meta tensor exists, the general path hands a call
# with one to ``meta_compute`` (the op's shape/dtype rule alone); until then the dispatcher's
# only meta cost is reading ``meta_live``. ``meta_array``: ``_meta.MetaArray``, set there.
meta_live = False
meta_compute: Callable | None = None
meta_array: type = type(None)  # (no tensor's data is None: nothing matches until it is set)

# torch's ``__torch_function__`` protocol (``jitgrad._torch_function``): True once a class that
# takes part in it exists or a mode is entered; until then the general path's only cost is
# looking at the types of its operands (a Tensor-like object seen first here makes it live).
torch_function_live = False
torch_function_first_sight: Callable | None = None
_PLAIN_OPERANDS = {int, float, bool, type(None), tuple, list, str, complex, slice, np.ndarray}


def apply(op: OpDef, *args: Any, **params: Any):
    """Runs ``op`` on ``args``: eagerly (recording autograd), or into the active jit trace."""
    if op.by_category and not params and 0 < len(args) < 3:  # f(t), t1 + t2: the uniform lane
        return LANES[op](*args)
    return _apply(op, args, params)


_NO_OVERRIDE = object()  # torch_function_first_sight's answer when no operand takes part
_UNARY = object()  # a lane's second operand when there is none
# op -> its lane (``lane(op)``), for each op whose result dtype follows its category: made by
# ``defop``, called by ``apply``, the generated one-operand functions and the Tensor operators
LANES: dict = {}


def lane(op: OpDef, fallback: Callable | None = None) -> Callable:
    """``f(a)`` or ``f(a, b)``: ``apply(op, a[, b])`` made for one pointwise op whose result
    dtype follows its category (``op.by_category``), the uniform lane of eager mode.

    Eager tensors of one dtype take it: the NumPy result, its tensor, and a ``UniformNode``
    (which records only if an input needs a gradient, and hands broadcasting, saved-tensor hooks
    and inference tensors to ``OpNode.record``). Any other call, and a call under forward AD or
    inference mode once computed, goes through ``apply``'s general path; with ``fallback``, a
    second operand that is no tensor or Python int/float goes to ``fallback(a, b)`` instead
    (the Tensor operators: NotImplemented for foreign operands). The result dtype of each
    operand dtype is worked out once, here; ``impl`` and ``differentiable`` are read at each
    call (the OpDef stays the one definition).
    """
    if not op.by_category:
        raise ValueError(f"op {op.name!r} has no lane: its result dtype does not follow its "
                         "category alone")
    # operand dtype -> result dtype (None: the op computes in another dtype, or refuses it:
    # the general path)
    out_dtypes = {dt: None if _refused(op, dt) else category_dtype(op.promote, dt)
                  for dt in dtypes.ALL}
    out_dtypes.update(dict.fromkeys(dtypes.LIMITED_UINTS))  # (uint16/32/64: the general path)

    def call(a: Any, b: Any = _UNARY):
        # this thread's dispatch state: its dict, read once (three reads of a thread-local's
        # attributes cost three times as much)
        st = state.__dict__
        hot = number = False
        if type(a) is Tensor and not st["traces"]:
            dt = a._dtype
            out_dtype = out_dtypes[dt]
            x = a._data
            if out_dtype is None or cuda_live and type(x) is _CudaArray \
                    or meta_live and type(x) is meta_array:
                pass  # computed in another dtype, or a cuda or meta tensor: the general path
            elif b is _UNARY:
                token = quiet()
                try:
                    out = op.impl(x)
                finally:
                    restore(token)
                hot = True
                b = None  # (one operand: the record's second operand is None)
            elif type(b) is Tensor and b._dtype is dt and (
                    not cuda_live or type(b._data) is not _CudaArray) and (
                    not meta_live or type(b._data) is not meta_array):
                y = b._data
                token = quiet()
                try:
                    out = op.impl(x, y)
                except ValueError:  # torch's text for a broadcasting mismatch
                    broadcast_shapes(x.shape, y.shape)
                    raise
                finally:
                    restore(token)
                if type(x) is _ndarray and not x.flags.c_contiguous and y.ndim > 1:
                    out = pointwise_layout(out, (x, y))  # (a row-major x orders the dims as
                    # NumPy does; else torch's. A sparse gradient's storage: no layout)
                hot = True
            elif (type(b) is float or type(b) is int and _SCALAR_INT_MIN <= b < _SCALAR_INT_END) \
                    and (dt is _FLOAT32 or dt is _FLOAT64) and out_dtype is dt \
                    and type(x) is _ndarray and not (op.autocast is not None and st["autocast"]):
                # a float tensor and a Python number (x * 0.5, 1 + x): the number in the
                # tensor's dtype, as the general path reads it; recorded by ``_finish``
                if op.check_operands is not None:
                    op.check_operands((a, b))
                token = quiet()
                try:
                    out = op.impl(x, out_dtype.np.type(b))
                finally:
                    restore(token)
                hot = number = True
        if not hot:
            if fallback is not None:
                kind = type(b)
                if kind is not Tensor and kind is not float and kind is not int:
                    return fallback(a, b)
            return _apply(op, (a,) if b is _UNARY else (a, b), {})
        npdt = out_dtype.np
        if type(out) is not _ndarray or (out.dtype is not npdt and out.dtype != npdt):
            out = np.asarray(out, dtype=npdt)  # (a NumPy scalar for 0-d operands)
        result = make(out, out_dtype)
        if number or fw_hook is not None or st["inference"]:  # (a number: OpNode.record's)
            return _finish(op, (a,) if b is None else (a, b), {}, result, (result,))
        if st["grad_enabled"] and op.differentiable:
            record_uniform(op, a, b, result)  # (records only if an input needs grad)
        return result

    call.__name__ = call.__qualname__ = f"lane_{op.name}"
    return call


def _refused(op: OpDef, dt: dtypes.dtype) -> bool:
    if op.check_operands is None:
        return False
    try:
        op.check_operands((Meta((), dt), Meta((), dt)))
    except RuntimeError:
        return True
    return False


# the Python ints torch's Scalar takes: int64's and uint64's values
_SCALAR_INT_MIN, _SCALAR_INT_END = -(1 << 63), 1 << 64


def check_scalar_int(value: Any) -> None:
    """torch's OverflowError for a Python int that no int64 or uint64 holds."""
    if type(value) is int and not _SCALAR_INT_MIN <= value < _SCALAR_INT_END:
        raise OverflowError("int too big to convert" if value > 0 else
                            "can't convert negative int to unsigned")


def _apply(op: OpDef, args: tuple, params: dict):
    """``apply``'s general path: any op, arguments and params."""
    for a in args:
        kind = type(a)
        if kind is int:
            if not _SCALAR_INT_MIN <= a < _SCALAR_INT_END:
                check_scalar_int(a)
        elif kind is not Tensor and not torch_function_live and kind not in _PLAIN_OPERANDS \
                and not isinstance(a, Tensor) and hasattr(kind, "__torch_function__"):
            out = torch_function_first_sight(op, args, params)
            if out is not _NO_OVERRIDE:
                return out
            break
    for v in params.values():
        check_scalar_int(v)
    st = state
    if st.autocast and op.autocast is not None:  # (before the dtype checks: autocast's dtypes)
        args = autocast_arguments(op.autocast, st.autocast, Tensor, args)
    if op.check_operands is not None:
        op.check_operands(args)
    if dtypes.limited_live:  # a uint16/32/64 dtype is in use: torch's refusals
        check_limited_uint(op, args)
    if sparse_live and sparse_any(args):
        return sparse_apply(op, args, params)
    if st.traces:
        if st.traces[-1].batching:  # vmap (jitgrad/func/vmap.py) routes every op itself
            return st.traces[-1].bind(op, args, params)
        for a in args:
            if isinstance(a, Tensor) and a._trace is not None:
                top = st.traces[-1]
                if a._trace is not top and top.lifts:  # a cond branch reading outer values
                    return top.bind(op, args, params)
                return a._trace.bind(op, args, params)
        if op.nondeterministic or any(isinstance(a, Tensor) for a in args):
            # captured tensors are recorded, not frozen; a random draw is drawn on each call
            return state.traces[-1].bind(op, args, params)
    token = quiet()
    try:
        out, out_dtype = _compute(op, args, params)
    finally:
        restore(token)
    if op.n_outputs == 1:
        result = _wrap(out, out_dtype)
        return _finish(op, args, params, result, (result,))
    if not isinstance(out_dtype, tuple):
        out_dtype = (out_dtype,) * len(out)
    result = tuple(_wrap(o, d) for o, d in zip(out, out_dtype))
    return _finish(op, args, params, result, result)


def _finish(op: OpDef, args: tuple, params: dict, result: Any, outputs: tuple):
    """What follows an op's computation on the general path: its outputs become views of
    its input (view ops), get their forward-AD tangents, are marked as inference tensors, or
    are recorded by an ``OpNode``. Returns ``result``."""
    st = state
    if op.view:
        _mark_views(op, args, params, outputs)
    if fw_hook is not None:  # forward-mode AD: a dual level is active
        fw_hook(op, args, params, outputs)
    if st.inference:
        for o in outputs:
            if o._base is None:  # a view of a normal tensor stays normal
                o._is_inference = True
    elif st.grad_enabled and op.differentiable:
        for a in args:
            if isinstance(a, Tensor) and (a._requires_grad or a._grad_fn is not None or (
                    a._base is not None and a._view_creation is not None and a.requires_grad)):
                # (a view made under no_grad of a base that requires grad has no edge: its
                # node leads nowhere, as torch's)
                OpNode.record(op, args, params, outputs)
                break
    return result


def _any_on(args: tuple, kind: type) -> bool:
    """Whether a tensor among ``args`` holds data of type ``kind`` (a device's array type)."""
    for a in args:  # (parameters are a Tensor subclass)
        if isinstance(a, Tensor) and type(a._data) is kind:
            return True
    return False


def _compute(op: OpDef, args: tuple, params: dict) -> tuple:
    """Runs ``op.impl`` on ``args``' arrays: (its result, the result's dtype or dtypes)."""
    if meta_live and _any_on(args, meta_array):  # the op's shape/dtype rule alone
        return meta_compute(op, args, params)
    if cuda_live and _any_on(args, _CudaArray):  # the CUDA runtime runs ops on cuda tensors
        return cuda_compute(op, args, params)
    if op.kind != POINTWISE:
        out_dtype = op.meta(*args, **params)[1]
        if len(args) == 1 and type(args[0]) is Tensor:  # (most movement ops and reductions)
            return op.impl(args[0]._data, **params), out_dtype
        return op.impl(*[a._data if isinstance(a, Tensor) else a for a in args], **params), \
            out_dtype
    out_dtype = _fast_pointwise(op, args)
    if out_dtype is None:
        arrays, out_dtype = _pointwise_arrays(op, args, params)
    elif len(args) == 1:
        arrays = (args[0]._data,)
    else:
        a, b = args
        arrays = (a._data if type(a) is Tensor else out_dtype.np.type(a),
                  b._data if type(b) is Tensor else out_dtype.np.type(b))
    try:
        out = op.impl(*arrays, **params) if params else op.impl(*arrays)
    except ValueError:
        if len(arrays) > 1:  # torch's text for a broadcasting mismatch
            broadcast_shapes(*(x.shape for x in arrays if hasattr(x, "shape")))
        raise
    if len(arrays) > 1 and type(out) is _ndarray and mixed_layouts(arrays):
        out = pointwise_layout(out, arrays)  # (torch's layout where the operands' disagree)
    return out, out_dtype


def _fast_pointwise(op: OpDef, args: tuple) -> dtypes.dtype | None:
    """The result dtype of a pointwise op on the common cases (one tensor, two tensors of one
    dtype, a floating tensor and a Python int/float), or None for the general rules."""
    if op.nonpromoted or not hasattr(op.meta, "by_category"):
        return None
    n = len(args)
    if n == 1:
        a = args[0]
        if type(a) is not Tensor:
            return None
        dt = a._dtype
    elif n == 2:
        a, b = args
        if type(a) is Tensor:
            dt = a._dtype
            if type(b) is Tensor:
                if b._dtype is not dt:
                    return None
            elif type(b) not in _SCALAR_TYPES or not dt.is_floating_point:
                return None
        elif type(b) is Tensor and type(a) in _SCALAR_TYPES and b._dtype.is_floating_point:
            dt = b._dtype
        else:
            return None
    else:
        return None
    promote = op.promote
    if n == 2 and (type(args[0]) is not Tensor or type(args[1]) is not Tensor) and (
            promote == BOOL or dt is dtypes.float16):
        return None  # (a Python number is cast to the dtype computed in, not to bool; float16
        # reads it in float: the general path)
    return category_dtype(promote, dt)


def _mark_views(op: OpDef, args: tuple, params: dict, outputs: tuple) -> None:
    """Makes the outputs that alias ``args[0]`` views of its base: they share its version
    counter and remember how to be recomputed from the base (``_view_chain``, replayed by
    in-place ops on views and when the base's history changes)."""
    base = args[0]
    for i, o in enumerate(outputs):
        if _aliases(o._data, base._data):
            step = (op, args[1:], tuple(params.items()), i if len(outputs) > 1 else None)
            if base._base is not None:
                o._base = base._base
                o._view_chain = base._view_chain + (step,)
            else:
                o._base = base
                o._view_chain = (step,)
            o._vc = base._vc
            o._view_version = base._vc[0]
            if not state.grad_enabled:
                o._view_creation = INFERENCE_VIEW if state.inference else NO_GRAD_VIEW
            else:  # (_views' kinds: split's pieces, or those of the view it was made from)
                o._view_creation = MULTI_OUTPUT_VIEW if op.view == MULTI_OUTPUT_VIEW else \
                    base._view_creation
            if base._is_inference:
                o._is_inference = True


def _aliases(out, base) -> bool:
    """Whether an op's output array shares memory with its input's."""
    if type(out) is not _ndarray:  # a cuda or meta array: its own test
        return out.shares_memory(base)
    if out is base:
        return True
    owner = out.base
    if owner is None:  # (it owns its memory: a fresh array)
        return False
    if owner is base or owner is base.base:  # (NumPy points a view at the memory's owner)
        return True
    return np.may_share_memory(out, base)


def _wrap(data, dt):
    npdt = dt.np
    if type(data) is not _ndarray or (data.dtype is not npdt and data.dtype != npdt):
        if type(data) is not _CudaArray and type(data) is not meta_array:
            data = np.asarray(data, dtype=npdt)
    return make(data, dt)


# the float16 ops whose torch CPU kernels read a number operand in float, at its own precision
# (others, remainder, fmod, atan2, add/sub with alpha, take it rounded to float16 first)
_FLOAT_SCALAR_OPS = frozenset({"add", "sub", "mul", "div", "pow"})


def _wrapped_number(args: tuple) -> bool:
    """Whether a float16 op's operands hold a Python number or a 0-d float32/float64 tensor:
    torch's CPU kernels read such a scalar at its own precision and compute in float."""
    for a in args:
        kind = type(a)
        if kind is float or kind is int:
            return True
        if isinstance(a, Tensor) and a.ndim == 0 and a._dtype in (dtypes.float32,
                                                                  dtypes.float64):
            return True
    return False


def _pointwise_arrays(op: OpDef, args: tuple, params: dict) -> tuple[list, dtypes.dtype]:
    work, out_dtype = compute_dtype(op, args)
    if not hasattr(op.meta, "by_category"):  # its own dtype rule: ``to``, ``real``, int ** 2.5
        out_dtype = op.meta(*args, **params)[1]
        try:
            work = dtypes.promote_types(work, out_dtype)
        except RuntimeError:  # a cast between uint16/32/64 and another integer dtype or bool:
            if not dtypes.limited_live:  # computed in the input's dtype, then cast
                raise
            work = out_dtype if out_dtype.is_floating_point or out_dtype.is_complex else work
    if work is dtypes.float16 and out_dtype is dtypes.float16 and op.name in _FLOAT_SCALAR_OPS \
            and _wrapped_number(args):
        work = dtypes.float32  # (torch's kernel reads the number in float: rounded once)
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
            try:
                arrays.append(np.asarray(a, dtype=work.np))
            except OverflowError:  # a Python int outside the dtype wraps, as torch's cast does
                arrays.append(np.asarray(a).astype(work.np))
    if len(arrays) > 1:
        try:
            np.broadcast_shapes(*(x.shape for x in arrays if hasattr(x, "shape")))
        except ValueError:
            broadcast_shapes(*(x.shape for x in arrays if hasattr(x, "shape")))
            raise
    return arrays, out_dtype
