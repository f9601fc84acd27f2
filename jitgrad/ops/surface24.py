"""torch's Tensor aliases, in-place forms and dtype/info methods that jitgrad lacked.

Everything here composes registered ops (autograd comes with them): the in-place forms are
declared ``@public(inplace=...)`` and run through ``inplace.inplace`` (version counter, leaf
and view checks, CopySlices) like ``add_``; plain aliases (``arccos`` -> ``acos``, ``divide_``
-> ``div_``) and torch's top-level in-place functions (``torch.relu_(x)`` is ``x.relu_()``) are
installed by ``install`` (``ops.install`` calls it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from . import registry
from .inplace import _check, _fill
from .registry import state
from .surface import functions, public

_FNS: dict = {}


def fn(name: str) -> Any:
    """The declared public function ``jitgrad.<name>`` (looked up once, then cached; the ops
    layer cannot import the package)."""
    found = _FNS.get(name)
    if found is None:
        _FNS.update(functions())
        found = _FNS[name]
    return found


# this file's (and surface24_*'s) jitgrad.* functions that torch declares without ``out=``
NO_OUT = frozenset({
    "as_strided", "as_strided_scatter", "binomial", "combinations", "diagflat", "diagonal_scatter",
    "empty_strided", "isreal", "poisson", "put", "rsub", "scalar_tensor", "select_scatter",
    "slice_scatter", "split_with_sizes", "unravel_index", "unsafe_chunk", "unsafe_split",
    "unsafe_split_with_sizes", "adjoint", "view_as_real", "view_as_complex",
    "histogramdd"})

# torch alias -> jitgrad name (Tensor methods, and jitgrad.* where the target is there)
ALIASES = {
    "arccos": "acos", "arcsin": "asin", "arctan": "atan", "arccosh": "acosh", "arcsinh": "asinh",
    "arctanh": "atanh", "arccos_": "acos_", "arcsin_": "asin_", "arctan_": "atan_",
    "arccosh_": "acosh_", "arcsinh_": "asinh_", "arctanh_": "atanh_", "arctan2_": "atan2_",
    "absolute_": "abs_", "divide_": "div_", "multiply_": "mul_", "subtract_": "sub_",
    "true_divide_": "div_", "negative_": "neg_", "greater_": "gt_", "greater_equal_": "ge_",
    "less_": "lt_", "less_equal_": "le_", "not_equal_": "ne_", "swapaxes_": "transpose_",
    "swapdims_": "transpose_",
}


def _zero_grad_result(s: Any, value: Any) -> Any:
    """``value`` in ``s``'s dtype, recorded as a function of ``s`` with a zero gradient (torch's
    in-place comparisons keep ``s`` in the graph: ``EqBackward0`` gives zeros)."""
    from .inplace import ZERO

    value = value.to(s.dtype)
    if s.requires_grad and state.grad_enabled and (s.dtype.is_floating_point
                                                   or s.dtype.is_complex):
        return registry.apply(ZERO, s) + value
    return value


def _cmp_inplace(name: str):
    def compute(s: Any, other: Any) -> Any:
        return _zero_grad_result(s, getattr(s, name)(other))
    compute.__name__ = compute.__qualname__ = f"_{name}_inplace"
    compute.__doc__ = f"``{name}`` written into ``self`` (in ``self``'s dtype)."
    return public(inplace=f"{name}_")(compute)


eq_ = _cmp_inplace("eq")
ne_ = _cmp_inplace("ne")
lt_ = _cmp_inplace("lt")
le_ = _cmp_inplace("le")
gt_ = _cmp_inplace("gt")
ge_ = _cmp_inplace("ge")


def _truth(t: Any) -> Any:
    if isinstance(t, registry.Tensor):
        return t if t.dtype is dtypes.bool else t != 0
    return bool(t)


@public("logical_and", method=True)
def logical_and(input: Any, other: Any) -> Any:  # noqa: A002
    """Elementwise AND of the values' truth (nonzero is True), as a bool tensor."""
    return _truth(input).bitwise_and(_truth(other))


@public("logical_or", method=True)
def logical_or(input: Any, other: Any) -> Any:  # noqa: A002
    """Elementwise OR of the values' truth (nonzero is True), as a bool tensor."""
    return _truth(input).bitwise_or(_truth(other))


@public(inplace="logical_and_")
def _logical_and_inplace(s: Any, other: Any) -> Any:
    """``logical_and`` (of the values' truth) written into ``self``."""
    return _zero_grad_result(s, _truth(s).bitwise_and(_truth(other)))


@public(inplace="logical_or_")
def _logical_or_inplace(s: Any, other: Any) -> Any:
    """``logical_or`` (of the values' truth) written into ``self``."""
    return _zero_grad_result(s, _truth(s).bitwise_or(_truth(other)))


@public(inplace="logical_not_")
def _logical_not_inplace(s: Any) -> Any:
    """``logical_not`` written into ``self``."""
    return _zero_grad_result(s, s.logical_not())


def _bitwise_inplace(name: str):
    def compute(s: Any, other: Any) -> Any:
        return getattr(s, name)(other)
    compute.__name__ = compute.__qualname__ = f"_{name}_inplace"
    compute.__doc__ = f"``{name}`` written into ``self``."
    return public(inplace=f"{name}_")(compute)


bitwise_and_ = _bitwise_inplace("bitwise_and")
bitwise_or_ = _bitwise_inplace("bitwise_or")
bitwise_xor_ = _bitwise_inplace("bitwise_xor")


def _shift_operands(input: Any, other: Any, kind: str) -> tuple:  # noqa: A002
    """The operands in their promoted (integer) dtype; torch's error for a float, complex or
    bool one. A Python number wraps into the dtype as torch's scalar does (-3 is 253 in
    uint8)."""
    import numpy as np

    from .creation import tensor

    for t in (input, other):
        registry.check_scalar_int(t)
    dt = dtypes.result_type(input, other)
    if dt.is_floating_point or dt.is_complex or dt is dtypes.bool:
        raise NotImplementedError(f"\"{kind}_cpu\" not implemented for "
                                  f"'{dt._scalar_name}'")
    dev = (input if isinstance(input, registry.Tensor) else other).device
    input, other = (t.to(dt) if isinstance(t, registry.Tensor) else tensor(
        np.asarray(t).astype(dt.np), dtype=dt, device=dev) for t in (input, other))
    return input, other, dt


def _powers_of_two(other: Any, dt: dtypes.dtype) -> Any:
    """``2 ** other`` in ``dt`` (computed in float64, where powers of two are exact: integer
    pow has no cuda kernel)."""
    return fn("pow")(2.0, other.to(dtypes.float64)).to(dt)


def _shift_range(other: Any, dt: dtypes.dtype) -> tuple:
    """(the shift clamped to [0, bits - 2], whether it is the top bit's, whether it is in
    [0, bits)): torch's kernels give 0 (or the sign) for a shift outside the dtype's bits."""
    bits = 8 * dt.itemsize
    inside = (other >= 0) & (other < bits)
    return other.clamp(0, bits - 2), other == bits - 1, inside


@public("bitwise_left_shift", method=True, inplace=True)
def bitwise_left_shift(input: Any, other: Any) -> Any:  # noqa: A002
    """``input << other`` elementwise (integer tensors; bits shifted out are lost, a shift
    outside ``[0, bits)`` gives 0, as torch's kernel)."""
    input, other, dt = _shift_operands(input, other, "lshift")
    shift, top, inside = _shift_range(other, dt)
    out = (input * _powers_of_two(shift, dt)).to(dt)
    out = fn("where")(top, (out * 2).to(dt), out)  # (2 ** (bits - 1) is no dt value)
    return fn("where")(inside, out, fn("zeros_like")(out))


@public("bitwise_right_shift", method=True, inplace=True)
def bitwise_right_shift(input: Any, other: Any) -> Any:  # noqa: A002
    """``input >> other`` elementwise: an arithmetic shift (rounds toward minus infinity); a
    shift outside ``[0, bits)`` fills with the sign bit, as torch's kernel."""
    input, other, dt = _shift_operands(input, other, "rshift")
    shift, top, inside = _shift_range(other, dt)
    out = fn("floor_divide")(input, _powers_of_two(shift, dt))
    if dt.is_signed:  # (the top bit's shift is the sign too)
        sign = fn("where")(input < 0, fn("full_like")(out, -1), fn("zeros_like")(out))
        return fn("where")(inside & ~top, out, sign)
    out = fn("where")(top, fn("floor_divide")(out, 2), out)
    return fn("where")(inside, out, fn("zeros_like")(out))


@public(inplace="sgn_")
def _sgn_inplace(s: Any) -> Any:
    """``sgn`` written into ``self``."""
    return s.sgn()


@public(inplace="polygamma_")
def _polygamma_inplace(s: Any, n: int) -> Any:
    """``polygamma(n, self)`` written into ``self``."""
    return fn("polygamma")(n, s)


# ---------------------------------------------------------------- in-place view ops
def _view_inplace(self: Any, view: Any) -> Any:
    """Makes ``self`` the view ``view`` of itself (``t_``, ``transpose_``, ``squeeze_``,
    ``unsqueeze_``): its data, history and, for a view, its view chain."""
    if self._trace is not None or state.traces:
        raise RuntimeError("in-place view ops (t_, transpose_, squeeze_, ...) can't be traced "
                           "by jit: use their out-of-place forms")
    _check(self, ())
    self._data = view._data
    if view._grad_fn is not None:
        self._grad_fn, self._output_nr = view._grad_fn, view._output_nr
    if self._base is not None:
        self._view_chain = view._view_chain
        self.__dict__["_view_version"] = view._view_version
    self._vc[0] += 1
    if self._base is not None:
        self._view_version = self._vc[0]
    return self


def _t_(self: Any) -> Any:
    """In-place version of :meth:`t`."""
    return _view_inplace(self, self.t())


def _transpose_(self: Any, dim0: int, dim1: int) -> Any:
    """In-place version of :meth:`transpose`."""
    return _view_inplace(self, self.transpose(dim0, dim1))


def _squeeze_(self: Any, dim: Any = None) -> Any:
    """In-place version of :meth:`squeeze`."""
    return _view_inplace(self, self.squeeze() if dim is None else self.squeeze(dim))


def _unsqueeze_(self: Any, dim: int) -> Any:
    """In-place version of :meth:`unsqueeze`."""
    return _view_inplace(self, self.unsqueeze(dim))


# ---------------------------------------------------------------- dtype and info
def _ptr(a: Any) -> int:
    if isinstance(a, np.ndarray):
        return int(a.__array_interface__["data"][0])
    return int(a.__cuda_array_interface__["data"][0])


def data_ptr(self: Any) -> int:
    """The address of the tensor's first element (0 for a meta tensor, which has none)."""
    return 0 if self.is_meta else _ptr(self._data)


def storage_offset(self: Any) -> int:
    """The tensor's offset in its storage, in elements (0 for a tensor that is no view)."""
    data = self._data
    if isinstance(data, np.ndarray):  # from the array that owns the memory
        from .storage import root_array

        return (_ptr(data) - _ptr(root_array(data))) // data.itemsize
    offset = getattr(data, "offset", None)  # (a cuda array: its element offset in its root)
    if offset is not None:
        return offset
    base = self._base
    if base is None:
        return 0
    return base.storage_offset() + (_ptr(self._data) - _ptr(base._data)) // self._dtype.itemsize


def dim_order(self: Any, *, ambiguity_check: Any = False) -> tuple:
    """The dims from outermost to innermost in memory (by decreasing stride)."""
    st = self.stride()
    return tuple(sorted(range(self.ndim), key=lambda d: -st[d]))


def get_device(self: Any) -> int:
    """The cuda device index, -1 for a CPU tensor."""
    return 0 if self.is_cuda else -1


def is_same_size(self: Any, other: Any) -> bool:
    """Whether ``self`` and ``other`` have the same shape."""
    return tuple(self.shape) == tuple(other.shape)


def is_signed(self: Any) -> bool:
    """Whether the dtype is signed (every dtype but bool and the unsigned integers)."""
    return self._dtype.is_signed


def is_nonzero(self: Any) -> bool:
    """The truth of a one-element tensor (torch's texts for other sizes)."""
    n = self.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(self.item())


def is_conj(self: Any) -> bool:
    """Always False: jitgrad's ``conj`` makes the values (no lazy conjugate bit)."""
    return False


def is_neg(self: Any) -> bool:
    """Always False (no lazy negative bit)."""
    return False


def is_inference(self: Any) -> bool:
    """Whether the tensor was made in inference mode."""
    return bool(self._is_inference)


def resolve_conj(self: Any) -> Any:
    """``self`` (no lazy conjugate bit to resolve)."""
    return self


def resolve_neg(self: Any) -> Any:
    """``self`` (no lazy negative bit to resolve)."""
    return self


def detach_(self: Any) -> Any:
    """Makes ``self`` a leaf that does not require grad (in place)."""
    if self._base is not None and (self._grad_fn is not None or self._base.requires_grad):
        raise RuntimeError(
            "Can't detach views in-place. Use detach() instead. If you are using "
            "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as "
            "True, gradients are views of DDP buckets, and hence detach_() cannot be called on "
            "these gradients. To fix this error, please refer to the Optimizer.zero_grad() "
            "function in torch/optim/optimizer.py as the solution.")
    self._grad_fn = None
    self._requires_grad = False
    self._output_nr = 0
    return self


def ndimension(self: Any) -> int:
    """The number of dimensions (``dim()``)."""
    return self.ndim


def _strided_array(size: Any, stride: Any, np_dtype: Any) -> np.ndarray:
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of "
                           f"strides ({len(stride)})")
    need = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    buf = np.zeros(need, dtype=np_dtype)
    item = buf.itemsize
    return np.lib.stride_tricks.as_strided(buf, size, tuple(s * item for s in stride))


@public("empty_strided")
def empty_strided(size: Any, stride: Any, *, dtype: Any = None, layout: Any = None,
                  device: Any = None, requires_grad: bool = False,
                  pin_memory: bool = False) -> Any:
    """A tensor of shape ``size`` with the given strides (values unset: zeros here)."""
    from ..device import check_device
    from ..tensor import _new

    dt = dtype or dtypes.get_default_dtype()
    dev = check_device(device)
    if dev.type == "meta":  # (the strides are kept; no memory)
        from .creation import meta_empty as empty

        _strided_array((0,) * len(size), stride, dt.np)  # (its checks of size and stride)
        return empty(tuple(size), dt, requires_grad,
                     strides=tuple(int(s) * dt.itemsize for s in stride))
    return _new(_strided_array(size, stride, dt.np), dt, requires_grad, dev)


def new_empty_strided(self: Any, size: Any, stride: Any, *, dtype: Any = None, layout: Any = None,
                      device: Any = None, requires_grad: bool = False,
                      pin_memory: bool = False) -> Any:
    """``empty_strided`` with ``self``'s dtype and device unless given."""
    return empty_strided(size, stride, dtype=dtype or self.dtype,
                         device=device if device is not None else self.device,
                         requires_grad=requires_grad)


def new(self: Any, *args: Any, **kwargs: Any) -> Any:
    """torch's legacy constructor: ``x.new()`` (empty), ``x.new(2, 3)`` (uninitialized shape),
    ``x.new(data)`` (a tensor of ``x``'s dtype)."""
    from .creation import tensor

    device = kwargs.pop("device", self.device)
    if not args:
        return self.new_empty((0,), device=device)
    if len(args) == 1 and isinstance(args[0], registry.Tensor):
        return args[0].detach().to(self.dtype)
    if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
        return self.new_empty(tuple(args), device=device)
    if len(args) == 1 and type(args[0]).__name__ == "Size":
        return self.new_empty(tuple(args[0]), device=device)
    return tensor(args[0], dtype=self.dtype, device=device)


@public("scalar_tensor")
def scalar_tensor(s: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
                  requires_grad: bool = False, pin_memory: bool = False) -> Any:
    """A 0-dim tensor holding ``s`` (default dtype: the default float dtype)."""
    from .creation import tensor

    return tensor(float(s) if not isinstance(s, complex) else s,
                  dtype=dtype or dtypes.get_default_dtype(), device=device,
                  requires_grad=requires_grad)


_METHODS = {
    "t_": _t_, "transpose_": _transpose_, "squeeze_": _squeeze_, "unsqueeze_": _unsqueeze_,
    "data_ptr": data_ptr, "const_data_ptr": data_ptr, "storage_offset": storage_offset,
    "dim_order": dim_order, "get_device": get_device, "is_same_size": is_same_size,
    "is_signed": is_signed, "is_nonzero": is_nonzero, "is_conj": is_conj, "is_neg": is_neg,
    "is_inference": is_inference, "resolve_conj": resolve_conj, "resolve_neg": resolve_neg,
    "detach_": detach_, "ndimension": ndimension, "new": new,
    "_is_view": lambda self: self._base is not None,
    "new_empty_strided": new_empty_strided,
    "byte": lambda self, memory_format=None: self.to(dtypes.uint8),
    "char": lambda self, memory_format=None: self.to(dtypes.int8),
    "short": lambda self, memory_format=None: self.to(dtypes.int16),
    "__lshift__": lambda self, other: bitwise_left_shift(self, other),
    "__rshift__": lambda self, other: bitwise_right_shift(self, other),
    "__rlshift__": lambda self, other: bitwise_left_shift(other, self),
    "__rrshift__": lambda self, other: bitwise_right_shift(other, self),
    "__ilshift__": lambda self, other: self.bitwise_left_shift_(other),
    "__irshift__": lambda self, other: self.bitwise_right_shift_(other),
}
_PROPERTIES = {
    "nbytes": lambda self: self.numel() * self._dtype.itemsize,
    "itemsize": lambda self: self._dtype.itemsize,
}
# jitgrad.<name>(tensor, ...) -> tensor.<name>(...)
_TOP_LEVEL_METHODS = (
    "is_same_size", "is_signed", "is_nonzero", "is_conj", "is_neg", "is_inference",
    "resolve_conj", "resolve_neg", "get_device", "detach")
# torch's top-level in-place functions (torch.relu_(x) is x.relu_()): every one torch 2.13 has
# that is also a Tensor method
TOP_LEVEL_INPLACE = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_",
    "arctan_", "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_",
    "clamp_max_", "clamp_min_", "clip_", "conj_physical_", "cos_", "cosh_", "deg2rad_",
    "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_", "floor_", "frac_",
    "gcd_", "i0_", "index_put_", "lcm_", "ldexp_", "log10_", "log1p_", "log2_", "log_",
    "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_", "relu_", "round_",
    "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_",
    "trunc_", "xlogy_", "zero_")


def _forward(name: str):
    def fn(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``input.{name}(...)``."
    fn.__module__ = "jitgrad"
    return fn


def install(namespace: dict, tensor_type: type) -> None:
    """Puts the aliases, methods, properties and top-level in-place functions of this module
    on ``tensor_type`` and in ``namespace`` (``jitgrad``'s), leaving names already there."""
    for name, method in _METHODS.items():
        if name not in tensor_type.__dict__:
            if getattr(method, "__name__", "") == "<lambda>":
                method.__name__ = method.__qualname__ = name
            setattr(tensor_type, name, method)
    for name, get in _PROPERTIES.items():
        setattr(tensor_type, name, property(get, doc=f"torch's ``Tensor.{name}``."))
    for alias, target in ALIASES.items():
        if not hasattr(tensor_type, alias) and hasattr(tensor_type, target):
            setattr(tensor_type, alias, getattr(tensor_type, target))
        if alias not in namespace and target in namespace and not alias.endswith("_"):
            namespace[alias] = namespace[target]
    for name in _TOP_LEVEL_METHODS:
        namespace.setdefault(name, _forward(name))
    namespace.setdefault("fill", _fill)
    for name in TOP_LEVEL_INPLACE:  # (i0_ where the Tensor has i0_: another helper's)
        if name not in namespace and hasattr(tensor_type, name):
            namespace[name] = _forward(name)
    namespace.setdefault("e", float(np.e))
    namespace.setdefault("pi", float(np.pi))
    namespace.setdefault("inf", float("inf"))
    namespace.setdefault("nan", float("nan"))
    namespace.setdefault("newaxis", None)
