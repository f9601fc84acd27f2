"""dtypes with torch's names and torch's type-promotion rules."""

from __future__ import annotations

import builtins
import functools
import sys
from collections.abc import Callable
from typing import Any

import numpy as np


class dtype:  # noqa: N801 - named like torch.dtype
    """A tensor element type, e.g. ``jitgrad.float32``."""

    __slots__ = ("name", "np", "is_floating_point", "is_complex", "is_signed", "itemsize", "_rank",
                 "_legacy", "_scalar_name")

    def __init__(self, name: str, np_dtype, rank: int, legacy: str) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self.is_floating_point = self.np.kind == "f"
        self.is_complex = self.np.kind == "c"
        self.is_signed = self.np.kind in "ifc"
        self.itemsize = self.np.itemsize
        self._rank = rank
        self._legacy = legacy
        self._scalar_name = legacy.replace("Tensor", "")  # torch's C++ name: Float, Long, ...

    def __repr__(self) -> str:
        return f"jitgrad.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))

    def to_real(self) -> dtype:
        return {complex64: float32, complex128: float64}.get(self, self)

    def to_complex(self) -> dtype:
        return {float16: complex64, bfloat16: complex64, float32: complex64,
                float64: complex128}.get(self, self)


bool = dtype("bool", np.bool_, 0, "BoolTensor")  # noqa: A001 - torch's name
uint8 = dtype("uint8", np.uint8, 1, "ByteTensor")
int8 = dtype("int8", np.int8, 2, "CharTensor")
int16 = dtype("int16", np.int16, 3, "ShortTensor")
int32 = dtype("int32", np.int32, 4, "IntTensor")
int64 = dtype("int64", np.int64, 5, "LongTensor")
float16 = dtype("float16", np.float16, 6, "HalfTensor")
# bfloat16 (NumPy has none): stored in float32 arrays holding only bfloat16 values, every
# result rounded to them (``round_to_bfloat16``), as torch computes bfloat16 ops in float
# and rounds their results; 2 bytes per element as torch counts them.
bfloat16 = dtype("bfloat16", np.float32, 6, "BFloat16Tensor")
bfloat16.itemsize = 2
NO_CUDA_BFLOAT16 = ("jitgrad has no bfloat16 on cuda devices (its bfloat16 lives in float32 "
                    "memory on the CPU): convert with .to(jitgrad.float16) or .float() first")
float32 = dtype("float32", np.float32, 7, "FloatTensor")
float64 = dtype("float64", np.float64, 8, "DoubleTensor")
complex64 = dtype("complex64", np.complex64, 9, "ComplexFloatTensor")
complex128 = dtype("complex128", np.complex128, 10, "ComplexDoubleTensor")

_pybool, _pyint, _pyfloat, _pycomplex = type(True), type(1), type(1.0), type(1j)  # noqa: UP003

half, float, double = float16, float32, float64  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001
cfloat, cdouble = complex64, complex128

ALL = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64,
       complex128)
_BY_NUMPY = {d.np: d for d in ALL if d is not bfloat16}

# torch's "limited support" unsigned dtypes: creation, copies and casts, views, indexing,
# ``==``/``!=``, ``*``, bitwise and/or/xor, sum/prod/cumsum/cumprod (to int64), sort and unique;
# other ops refuse them with torch's errors (``ops.dtype_rules.check_limited_uint``), and they
# promote with nothing but floating dtypes. They are reached through ``__getattr__`` below (and
# ``from_numpy_dtype``), which switches that check of the dispatcher on the first time one is
# asked for, so that a program that never uses them never pays for the check.
_uint16 = dtype("uint16", np.uint16, 3, "UInt16Tensor")
_uint32 = dtype("uint32", np.uint32, 4, "UInt32Tensor")
_uint64 = dtype("uint64", np.uint64, 5, "UInt64Tensor")
LIMITED_UINTS = (_uint16, _uint32, _uint64)
_LIMITED_BY_NAME = {d.name: d for d in LIMITED_UINTS}
_LIMITED_BY_NUMPY = {d.np: d for d in LIMITED_UINTS}
limited_live = False  # (read by the dispatcher: True once a limited dtype was handed out)


def _limited(d: dtype) -> dtype:
    global limited_live
    limited_live = True
    return d


def __getattr__(name: str) -> dtype:
    d = _LIMITED_BY_NAME.get(name)
    if d is None:
        raise AttributeError(f"module 'jitgrad.dtypes' has no attribute {name!r}")
    return _limited(d)


# The one-pass Numba loop that rounds a C-contiguous array (``ops.nn_kernels.round_bfloat16``,
# set there): taken once Numba is loaded, or after ``_BFLOAT16_NUMPY_CALLS`` roundings in NumPy
# (seven passes, about 5x the time), so that a process rounding a few tensors never loads Numba.
bfloat16_loop: Callable | None = None
_BFLOAT16_NUMPY_CALLS = 1000
_bfloat16_numpy_calls = 0


def round_to_bfloat16(a: np.ndarray) -> np.ndarray:
    """The float32 array ``a`` rounded to bfloat16 values (to nearest, ties to even; NaNs stay
    NaN): ``a`` itself when it holds only bfloat16 values already (a view stays a view)."""
    global _bfloat16_numpy_calls
    a = np.asarray(a, dtype=np.float32)
    if a.flags.c_contiguous and bfloat16_loop is not None and (
            _bfloat16_numpy_calls >= _BFLOAT16_NUMPY_CALLS or "numba" in sys.modules):
        out = np.empty(a.shape, np.uint32)
        if not bfloat16_loop(a.reshape(-1).view(np.uint32), out.reshape(-1)):
            return a
        return out.view(np.float32)
    _bfloat16_numpy_calls += 1
    bits = a.view(np.uint32)  # (same item size: any strides view)
    # (one buffer, updated in place: autocast rounds every product, and temporaries cost more
    # than the arithmetic)
    up = np.bitwise_and(bits, np.uint32(0xFFFF), out=np.empty(bits.shape, np.uint32))
    if not up.any():
        return a
    np.right_shift(bits, np.uint32(16), out=up)
    up &= np.uint32(1)
    up += np.uint32(0x7FFF)
    up += bits
    up &= np.uint32(0xFFFF0000)
    if np.isnan(a.max()):  # (max is NaN when any entry is: no boolean array otherwise)
        up = np.where(np.isnan(a), (bits | np.uint32(0x00400000)) & np.uint32(0xFFFF0000), up)
    return np.asarray(up.view(np.float32))  # (a 0-d result of NumPy's arithmetic is a scalar)

_default_dtype = float32


def _by_name(name: str) -> dtype:
    d = globals().get(name) or (_limited(_LIMITED_BY_NAME[name]) if name in _LIMITED_BY_NAME
                                else None)
    if not isinstance(d, dtype):
        raise TypeError(f"no jitgrad dtype named {name!r}")
    return d


def from_numpy_dtype(np_dtype) -> dtype:
    try:
        return _BY_NUMPY[np.dtype(np_dtype)]
    except KeyError:
        if np.dtype(np_dtype) in _LIMITED_BY_NUMPY:
            return _limited(_LIMITED_BY_NUMPY[np.dtype(np_dtype)])
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(np_dtype)}. The only supported "
            "types are: float64, float32, float16, complex64, complex128, int64, int32, int16, "
            "int8, uint8, and bool."
        ) from None


def get_default_dtype() -> dtype:
    """Returns the current default floating point dtype (initially ``jitgrad.float32``)."""
    return _default_dtype


def set_default_dtype(d: dtype) -> None:
    """Sets the default floating point dtype to ``d`` (float32 or float64, as in torch)."""
    global _default_dtype
    if d not in (float16, bfloat16, float32, float64):
        raise TypeError("only floating-point types are supported as the default type")
    _default_dtype = d


def default_complex_dtype() -> dtype:
    return complex128 if _default_dtype is float64 else complex64


def is_integral(d: dtype, include_bool: bool = False) -> bool:
    return d.np.kind in "iu" or (include_bool and d is bool)


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """torch.promote_types: the smallest dtype both ``type1`` and ``type2`` convert to without
    loss."""
    a, b = type1, type2
    if a is b:
        return a
    if limited_live and (a in LIMITED_UINTS or b in LIMITED_UINTS):  # (to floats only)
        if b.is_floating_point:
            return b
        if a.is_floating_point:
            return a
        names = [d._scalar_name for d in (a, b)]
        raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, "
                           f"attempted to promote {names[0]} and {names[1]}")
    if a._rank == b._rank and a.is_floating_point:  # float16 and bfloat16: float32, as torch
        return float32
    if a.is_complex or b.is_complex:
        real = max(a.to_real(), b.to_real(), key=lambda d: d._rank)
        if real.is_complex or not real.is_floating_point:
            real = float32
        return complex128 if real is float64 else complex64
    if a is uint8 and b in (int8, int16) or b is uint8 and a in (int8, int16):
        return int16
    return a if a._rank > b._rank else b


def _category(d: dtype) -> int:
    return 3 if d.is_complex else 2 if d.is_floating_point else 1 if d is not bool else 0


def _combine_categories(higher: dtype | None, lower: dtype | None) -> dtype | None:
    # c10's combine_categories: a lower-priority group only matters when it is of a higher kind.
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.is_complex:
        return higher
    if lower.is_complex:
        return higher.to_complex() if higher.is_floating_point else lower
    if higher.is_floating_point:
        return higher
    if higher is bool or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


def scalar_dtype(value) -> dtype:
    """The dtype torch gives a Python number that takes part in an operation."""
    if isinstance(value, (_pybool, np.bool_)):
        return bool
    if isinstance(value, (_pyint, np.integer)):
        return int64
    if isinstance(value, (_pyfloat, np.floating)):
        return _default_dtype
    if isinstance(value, (_pycomplex, np.complexfloating)):
        return default_complex_dtype()
    raise TypeError(f"unsupported scalar type {type(value).__name__}")


def result_type(*args) -> dtype:
    """torch.result_type over tensors and Python numbers.

    Dimensioned tensors take priority over zero-dim tensors, which take priority over Python
    numbers; a lower-priority group only raises the result when it is of a higher category
    (bool < integer < floating < complex).
    """
    first = getattr(args[0], "_dtype", None) if args else None
    if type(first) is dtype:  # (tensors of one dtype: that dtype)
        for a in args:
            if getattr(a, "_dtype", None) is not first:
                break
        else:
            return first
    dim = zero = wrapped = None
    for a in args:
        d = getattr(a, "dtype", None)
        if isinstance(d, dtype):
            if a.ndim:
                dim = d if dim is None else promote_types(dim, d)
            else:
                zero = d if zero is None else promote_types(zero, d)
        elif a is not None:
            d = scalar_dtype(a)
            wrapped = d if wrapped is None else promote_types(wrapped, d)
    out = _combine_categories(dim, _combine_categories(zero, wrapped))
    if out is None:
        raise TypeError("result_type needs at least one tensor or number")
    return out


# torch's C++ type names in its error texts ("Could not set tensor of type float ...")
CPP_NAMES = {"float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
             "float64": "double", "int64": "long int", "int32": "int", "int16": "short int",
             "int8": "signed char", "uint8": "unsigned char", "bool": "bool",
             "complex64": "c10::complex<float>", "complex128": "c10::complex<double>",
             "uint16": "unsigned short", "uint32": "unsigned int", "uint64": "unsigned long"}


# the printed types of the jit IR and of its errors
_builtin_int = builtins.int  # (this module's ``int`` is the dtype)
_SHORT = {bool: "b8", uint8: "u8", int8: "i8", int16: "i16",
          int32: "i32", int64: "i64", float16: "f16", bfloat16: "bf16", float32: "f32",
          float64: "f64", complex64: "c64", complex128: "c128", _uint16: "u16", _uint32: "u32",
          _uint64: "u64"}


def short_name(dt: dtype) -> str:
    """``f32``: a dtype as the jit IR prints it."""
    return _SHORT.get(dt, dt.name)


def type_str(shape: tuple, dt: dtype) -> str:
    """``f32[128,784]``: the printed type of a value."""
    return f"{short_name(dt)}[{','.join(str(_builtin_int(s)) for s in shape)}]"


# torch's argument parser reads the Python number types as dtypes: ``dtype=float`` is float64
PYTHON_TYPES = {_pybool: bool, _pyint: int64, _pyfloat: float64, _pycomplex: complex128}


def as_dtype_arg(d: Any) -> Any:
    """``d`` with a Python number type (``float``, ``int``, ``bool``, ``complex``) read as torch
    reads it; anything else unchanged."""
    return PYTHON_TYPES.get(d, d) if d.__class__ is type else d


# The code objects of these wrappers: a function they wrap is still called "by the user" when
# its caller is one of them (``errors.called_by_user``)
WRAPPER_CODES: set = set()


def takes_python_types(fn: Callable) -> Callable:
    """``fn`` (which has a ``dtype`` parameter) also taking ``dtype=float`` and the other Python
    number types, as torch's functions do; ``fn`` itself when it has no ``dtype`` parameter."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return fn
    if hasattr(fn, "__wrapped__"):  # (a decorator's wrapper: the signature it declares)
        import inspect

        params = list(inspect.signature(fn).parameters.values())
        names = [p.name for p in params]
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                          p.POSITIONAL_OR_KEYWORD)]
    else:
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        positional = names[:code.co_argcount]
    if "dtype" not in names:
        return fn
    position = positional.index("dtype") if "dtype" in positional else None

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        d = kwargs.get("dtype")
        if d is not None and d.__class__ is type:
            kwargs["dtype"] = PYTHON_TYPES.get(d, d)
        elif position is not None and len(args) > position and args[position].__class__ is type:
            args = args[:position] + (as_dtype_arg(args[position]),) + args[position + 1:]
        return fn(*args, **kwargs)
    WRAPPER_CODES.add(call.__code__)
    return call
