"""In-place ops: compute out of place, write back into the tensor's memory, bump its version.

When autograd records the op, the tensor's ``grad_fn`` is rebased onto the new node (as torch
does). An in-place op on a view rebases the view's base instead, through a ``CopySlices`` node
(the base with the view's region replaced by the new values); the view's own ``grad_fn`` is then
remade from the base, and so is every other view of that base when it is next used (views
remember the view ops that made them: ``Tensor._view_chain``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _config, dtypes
from .._views import view_rebase_error
from . import registry
from .creation import fitted_scalar
from .registry import state
from .surface import public


def _check(self: Any, args: tuple) -> bool:
    Tensor = registry.Tensor
    if self._is_inference and not state.inference:
        raise RuntimeError(
            "Inplace update to inference tensor outside InferenceMode is not allowed.You can make "
            "a clone to get a normal tensor before doing inplace update.See "
            "https://github.com/pytorch/rfcs/pull/17 for more details.")
    if not state.grad_enabled:
        return False
    if not (self.requires_grad or any(isinstance(a, Tensor) and a.requires_grad for a in args)):
        return False
    base = self._base
    if base is not None and self._view_creation is not None:
        raise view_rebase_error(self, direct=True)
    if self._grad_fn is None and self._requires_grad:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation.")
    if base is not None and base._grad_fn is None and base._requires_grad:
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place "
            "operation.")
    return True


def _castable(src: dtypes.dtype, dst: dtypes.dtype) -> bool:
    def rank(d):
        return 3 if d.is_complex else 2 if d.is_floating_point else 1 if d is not dtypes.bool \
            else 0
    return rank(src) <= rank(dst)


def inplace(self: Any, compute: Callable, *args: Any) -> Any:
    """Runs ``compute(self, *args)`` (out of place) and writes the result into ``self``."""
    if self._trace is not None:
        if self._trace.batching:  # (vmap: the op reads a copy, as eager's snapshot: a node
            # that saved the written tensor itself would find it changed)
            return self._trace.inplace(self, compute(self.clone(), *args))
        return self._trace.inplace(self, compute(self, *args))
    if state.traces:  # inside jit: an eager tensor written with (possibly) traced values
        return state.traces[-1].inplace(self, compute(self, *args))
    recording = _check(self, args)
    if recording and self._base is not None:
        return _inplace_view(self, compute, args)
    try:
        if recording:
            snap = registry.make(self._data.copy(), self._dtype, self._grad_fn)
            snap._requires_grad, snap._output_nr = self._requires_grad, self._output_nr
            snap._fw_grads = self._fw_grads
            new = compute(snap, *args)
        else:
            prev = state.grad_enabled
            state.grad_enabled = False
            try:
                new = compute(self, *args)
            finally:
                state.grad_enabled = prev
    except NotImplementedError:  # (torch checks the cast into self before the kernel's dtypes)
        if getattr(compute, "inplace_name", None) not in _COMPARISONS:
            _check_promoted_cast(self, args)
        raise
    _write(self, new)
    if registry.fw_hook is not None:  # forward-mode AD: self takes the result's tangent
        transfer_tangent = registry.forward_ad.transfer_tangent
        transfer_tangent(new, self)
        if self._base is not None:  # and the base's tangent changes in the view's region
            base_snap = _snapshot(self._base)
            base_snap._fw_grads = self._base._fw_grads
            prev = state.grad_enabled
            state.grad_enabled = False
            try:
                new_base = registry.apply(COPY_SLICES, base_snap, new, chain=self._view_chain)
            finally:
                state.grad_enabled = prev
            transfer_tangent(new_base, self._base)
    if recording and new._grad_fn is not None:
        node = new._grad_fn
        self._grad_fn, self._output_nr = node, new._output_nr
        _rebind_saved_result(new, self)
    return self


def _rebind_saved_result(new: Any, target: Any) -> None:
    """The node that computed ``new`` (out of place) and saved it now saves ``target``, the
    tensor ``new`` was written into: its memory and the version counter that ``target`` shares
    with its base and every view of it, so a later in-place write through any of them is
    caught at backward."""
    rebind = getattr(new._grad_fn, "_rebind_result", None)
    if rebind is not None:
        rebind(new._vc, target)


# (comparisons compute a bool result and cast it: their kernels refuse first)
_COMPARISONS = frozenset({"lt_", "le_", "gt_", "ge_", "eq_", "ne_", "less_", "less_equal_",
                          "greater_", "greater_equal_", "not_equal_"})


def _check_promoted_cast(self: Any, args: tuple) -> None:
    """torch's cast error when the operands' promoted dtype cannot be written into ``self``
    (``int_tensor.atan2_(complex_tensor)``: the cast is refused before the kernel)."""
    operands = [a for a in args if isinstance(a, registry.Tensor)]
    if not operands:
        return
    try:
        promoted = dtypes.result_type(self, *operands)
    except (RuntimeError, TypeError):
        return
    check_writable(promoted, None, self._dtype, None)


def check_writable(dtype: Any, shape: tuple | None, into_dtype: Any,
                   into_shape: tuple | None) -> None:
    """torch's errors where a result of ``dtype`` and ``shape`` cannot be written into an
    output of ``into_dtype`` and ``into_shape`` (a shape None is not checked)."""
    if not _castable(dtype, into_dtype):
        raise RuntimeError(f"result type {dtype._scalar_name} can't be cast to the desired "
                           f"output type {into_dtype._scalar_name}")
    if shape is not None and tuple(shape) != tuple(into_shape):
        raise RuntimeError(f"output with shape {list(into_shape)} doesn't match the broadcast "
                           f"shape {list(shape)}")


def _write(self: Any, new: Any) -> None:
    """Checks ``new`` against ``self`` (torch's texts), copies it into ``self``'s memory and
    bumps the version counter (shared with ``self``'s base and views)."""
    check_writable(new.dtype, new.shape, self._dtype, self.shape)
    try:
        if type(self._data) is not np.ndarray:  # a cuda tensor: a copy kernel on the device
            self._data.copy_from(new._data)
        else:
            np.copyto(self._data, new._data, casting="unsafe")
    except ValueError as e:
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation."
        ) from e
    self._vc[0] += 1


def _snapshot(t: Any) -> Any:
    """A copy of ``t``'s values that stands for ``t`` in the graph (same history)."""
    data = t._data.copy() if type(t._data) is not np.ndarray else \
        np.array(t._data, copy=True, order="K")
    snap = registry.make(data, t._dtype, t._grad_fn)
    snap._requires_grad, snap._output_nr = t._requires_grad, t._output_nr
    return snap


def _inplace_view(self: Any, compute: Callable, args: tuple) -> Any:
    """An in-place op on a view while autograd records: torch's CopySlices rebase."""
    from .._views import _refresh_view

    base = self._base
    self.requires_grad  # noqa: B018 - remakes a stale view grad_fn first
    snap = _snapshot(self)
    snap._fw_grads = self._fw_grads
    new = compute(snap, *args)
    result = new
    if new.dtype is not self._dtype and _castable(new.dtype, self._dtype):
        new = new.to(self._dtype)
    value = new
    _write(self, new)
    if result._grad_fn is not None and result is new:  # the op's saved result is the view now
        _rebind_saved_result(result, self)
    base_snap = _snapshot(base)
    base_snap._fw_grads = base._fw_grads
    new_base = registry.apply(COPY_SLICES, base_snap, value, chain=self._view_chain)
    if registry.fw_hook is not None:  # forward-mode AD: both take their new tangents
        transfer_tangent = registry.forward_ad.transfer_tangent
        transfer_tangent(new, self)
        transfer_tangent(new_base, base)
    base._grad_fn, base._output_nr = new_base._grad_fn, new_base._output_nr
    _refresh_view(self)  # the view's history now goes through the base's CopySlices
    return self


def _replay_arrays(a: np.ndarray, chain: tuple) -> np.ndarray:
    for op, rest, params, i in chain:
        a = op.impl(a, *rest, **dict(params))
        if i is not None:
            a = a[i]
    return a


def _copy_slices_impl(base: np.ndarray, value: np.ndarray, chain: tuple) -> np.ndarray:
    out = np.array(base, copy=True, order="K")
    region = _replay_arrays(out, chain)
    if not np.may_share_memory(region, out):
        raise RuntimeError("CopySlices: the view could not be replayed as a view of its base")
    np.copyto(region, value, casting="unsafe")
    return out


def _copy_slices_base_grad(g: Any, ans: Any, base: Any, value: Any, chain: tuple) -> Any:
    from .._views import replay_view
    from .creation import zeros_like

    g = g.contiguous()
    return registry.apply(COPY_SLICES, g, zeros_like(replay_view(g, chain)), chain=chain)


def _copy_slices_value_grad(g: Any, ans: Any, base: Any, value: Any, chain: tuple) -> Any:
    from .._views import replay_view

    return replay_view(g.contiguous(), chain)


# ``base`` with the region that ``chain`` (a view's view ops) selects replaced by ``value``.
COPY_SLICES = registry.defop(
    "copy_slices_view", _copy_slices_impl, kind=registry.OPAQUE,
    meta=lambda base, value, chain: (tuple(base.shape), base.dtype),
    vjp=(_copy_slices_base_grad, _copy_slices_value_grad), jvp=registry.LINEAR,
    node_name="CopySlices")


def _same_meta(s: Any, *args: Any, **params: Any) -> tuple:
    return tuple(s.shape), s.dtype


def _no_grad_to_self(g: Any, ans: Any, s: Any, *args: Any, **params: Any) -> Any:
    # The old value of the overwritten tensor does not reach the result: a zero gradient.
    from .creation import zeros_like

    return zeros_like(g)


def _copy_impl(s: np.ndarray, src: np.ndarray) -> np.ndarray:
    out = np.empty_like(s)
    if src.dtype.kind == "c" and s.dtype.kind not in "cb":
        _config.warn_complex_to_real()
        src = src.real
    np.copyto(out, src, casting="unsafe")
    return out


# The in-place ops that overwrite a tensor, with torch's node names. They are computed out of
# place like every in-place op; ``inplace`` writes the result back.
ZERO = registry.defop("zero_", np.zeros_like, kind=registry.OPAQUE, meta=_same_meta,
                      vjp=(_no_grad_to_self,), node_name="ZeroBackward0",
                      jvp=lambda tangents, ans, *args, **params: ans * 0,
                      public=registry.Public(inplace="zero_"))
FILL = registry.defop("fill_", lambda s, value: np.full_like(s, value), kind=registry.OPAQUE,
                      meta=_same_meta, vjp=(_no_grad_to_self,), node_name="FillBackward2",
                      jvp=lambda tangents, ans, *args, **params: ans * 0)
FILL_TENSOR = registry.defop(
    "fill_tensor_", lambda s, value: np.full_like(s, value), kind=registry.OPAQUE,
    meta=_same_meta, vjp=(_no_grad_to_self, lambda g, ans, s, value: g.sum()),
    node_name="FillBackward3",
    jvp=lambda tangents, ans, s, value: (ans * 0 if tangents[1] is None else
                                         tangents[1].expand(tuple(ans.shape))))
COPY = registry.defop("copy_", _copy_impl, kind=registry.OPAQUE, meta=_same_meta,
                      vjp=(_no_grad_to_self, lambda g, ans, s, src: g),
                      node_name="CopyBackwards", jvp=registry.LINEAR)


@public(inplace="fill_")
def _fill(input: Any, value: Any) -> Any:  # noqa: A002
    if isinstance(value, registry.Tensor):
        if value.ndim:
            raise RuntimeError(
                "fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value.ndim} dimensions.")
        return registry.apply(FILL_TENSOR, input, value)
    from .creation import fitted_scalar

    return registry.apply(FILL, input, value=fitted_scalar(value, input.dtype))


@public(inplace="copy_")
def _copy_from(s: Any, src: Any, non_blocking: bool = False) -> Any:
    if not isinstance(src, registry.Tensor):
        from .creation import tensor

        src = tensor(src)
    if s.is_meta and not src.is_meta:  # (a write into a meta tensor: nothing to copy)
        src = src.to("meta")
    shape = registry.broadcast_shapes(tuple(s.shape), tuple(src.shape))
    if shape != tuple(s.shape):
        raise RuntimeError(
            f"output with shape {list(s.shape)} doesn't match the broadcast shape {list(shape)}")
    return registry.apply(COPY, s, src)


_FAST_VALUES = (int, float)
# dtypes whose NumPy arrays hold their values as torch does (bfloat16 lives in float32 memory,
# float16's overflow is torch's error)
_FAST_DTYPES = frozenset({dtypes.bool, dtypes.uint8, dtypes.int8, dtypes.int16, dtypes.int32,
                          dtypes.int64, dtypes.float32, dtypes.float64})


def _write_number_in_place(self: Any, key: Any, value: Any) -> bool:
    """``self[key] = number`` written straight into memory, for a CPU tensor outside autograd
    (no grad, trace, forward AD or inference tensor) and a key of in-range ints and slices
    with positive steps (a dataset's ``y[:n] = -1``); False for every other case, which takes
    the general path (its checks and its errors)."""
    if self._requires_grad or self._grad_fn is not None or self._trace is not None or \
            state.traces or self._is_inference or registry.fw_hook is not None or \
            self._dtype not in _FAST_DTYPES or (self._base is not None and self.requires_grad):
        return False
    data = self._data
    if type(data) is not np.ndarray or not data.flags.writeable:
        return False
    parts = key if type(key) is tuple else (key,)
    if len(parts) > data.ndim:
        return False
    for dim, k in enumerate(parts):
        kind = type(k)
        if kind is int:
            if not -data.shape[dim] <= k < data.shape[dim]:
                return False
        elif kind is not slice or not all(
                v is None or type(v) is int for v in (k.start, k.stop, k.step)) or (
                k.step is not None and k.step <= 0):
            return False
    if type(value) is int and not -9223372036854775808 <= value <= 9223372036854775807:
        return False  # (the general path's overflow error)
    data[key] = fitted_scalar(value, self._dtype)
    self._vc[0] += 1
    return True


def _basic_key(key: Any) -> bool:
    if key is True:
        return True
    parts = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis or isinstance(k, (int, slice)) and not isinstance(k, bool)
               for k in parts)


@public(method="uniform_")
def _uniform(self, a: float = 0.0, b: float = 1.0, *, generator: Any = None):
    if self.is_cuda:  # drawn on the device (another stream than the CPU's)
        return _draw_on_device(self, "uniform", generator, a, b - a)
    if self.is_meta:  # no values to draw
        return self
    if not self._dtype.is_floating_point and not self._dtype.is_complex:
        raise NotImplementedError(
            f"\"check_uniform_bounds\" not implemented for '{self._dtype._scalar_name}'")
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={a:g} > to={b:g}")
    return _fill_from_stream(self, generator, lambda s, n, dt: s.uniform(n, dt, a, b))


def check_normal(tensor: Any, std: Any) -> None:
    """torch's checks of ``Tensor.normal_``: ``std >= 0``, a floating or complex tensor."""
    try:
        value = float(std)
    except (TypeError, ValueError):
        return
    if not value >= 0:
        shown = str(value) if tensor.is_meta else f"{value:g}"
        raise RuntimeError(f"normal expects std >= 0.0, but found std {shown}")
    dtype = tensor.dtype
    if dtype.is_floating_point or dtype.is_complex:
        return
    if tensor.is_meta:
        raise RuntimeError(f"expected a floating-point or complex dtype, but got dtype={dtype}")
    kernel = "normal_kernel_cuda" if tensor.is_cuda else "normal_kernel_cpu"
    raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtype._scalar_name}'")


@public(method="normal_")
def _normal(self, mean: float = 0.0, std: float = 1.0, *, generator: Any = None):
    check_normal(self, std)
    if self.is_cuda:
        return _draw_on_device(self, "normal", generator, mean, std)
    if self.is_meta:
        return self
    contiguous = self.is_contiguous()
    if self._dtype.is_complex:  # (torch: the real view, with std / sqrt(2))
        std = std / math.sqrt(2.0)
    return _fill_from_stream(self, generator,
                             lambda s, n, dt: s.normal(n, dt, mean, std, contiguous))


def _fill_from_stream(self, generator: Any, draw: Any):
    """Fills ``self`` with ``draw(stream, count, dtype)`` from the CPU generator, in torch's
    order (memory order; a complex tensor as its real view; a cuda tensor's values are drawn
    on the host)."""
    from .._generator import default_generator
    from .._torch_stream import in_memory_order

    level = next((t for t in reversed(registry.state.traces) if getattr(t, "batching", False)),
                 None)
    if level is not None:  # inside vmap: by its randomness mode
        return level.random_fill(self, lambda t: _fill_from_stream(t, generator, draw))
    stream = (generator or default_generator())._host()
    shape = tuple(self.shape)
    count = math.prod(shape)
    if self._dtype.is_complex:
        part = self._dtype.to_real()
        flat = draw(stream, 2 * count, part).astype(part.np).view(self._dtype.np)
    else:
        flat = draw(stream, count, self._dtype)
    flat = np.asarray(flat, self._dtype.np)
    if self.is_cuda:
        values = registry.Tensor(flat.reshape(shape), dtype=self._dtype).to(self.device)
    else:
        values = registry.Tensor(in_memory_order(flat, shape, self._data.strides),
                                 dtype=self._dtype)
    return self.copy_(values)


def _draw_on_device(self, kind: str, generator: Any, shift: float, scale: float):
    from .._cuda_array import HOOKS  # (backends/cuda_random's draw)
    from ..tensor import _make

    sample = HOOKS["draw"](kind, tuple(self.shape), self._dtype, generator, shift=shift,
                           scale=scale)
    return self.copy_(_make(sample, self._dtype))


def install_special(Tensor: type) -> None:  # noqa: N803
    """``t[key] = value`` and the augmented assignments (``t += x``)."""
    def setitem(self, key, value):
        from .indexing import index_put_value

        if key is False:  # (torch writes nothing, and checks nothing)
            return
        if type(value) in _FAST_VALUES and _write_number_in_place(self, key, value):
            return
        if self._grad_fn is None and self._requires_grad and state.grad_enabled \
                and _basic_key(key) and self._trace is None:
            # torch writes through a view of the leaf (x[0] is a view; x[tensor] is not)
            raise RuntimeError(
                "a view of a leaf Variable that requires grad is being used in an in-place "
                "operation.")
        inplace(self, lambda s, v: index_put_value(s, key, v, same_dtype=True), value)

    # ``t += x`` and friends write into ``t`` (every name bound to it sees the change).
    Tensor.__iadd__ = lambda self, other: self.add_(other)
    Tensor.__isub__ = lambda self, other: self.sub_(other)
    Tensor.__imul__ = lambda self, other: self.mul_(other)
    Tensor.__itruediv__ = lambda self, other: self.div_(other)
    Tensor.__ipow__ = lambda self, other: self.pow_(other)
    Tensor.__setitem__ = setitem
