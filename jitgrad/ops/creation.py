"""Factory functions: tensor, as_tensor, from_numpy, zeros/ones/full/empty(+_like), arange, ..."""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from .. import dtypes
from .._data import to_array as _to_array
from ..device import check_device
from .. import _meta
from ..errors import called_by_user, user_stacklevel
from .. import tensor as _tensor  # (a module: tensor.py is mid-import when the ops load)
from . import registry
from .arg_errors import invalid_combination
from .memory_formats import channels_last, channels_last_3d, contiguous_format, preserve_format
from .memory_formats import memory_format as _MemoryFormat
from .memory_formats import channels_last_array, laid_out_like
from .surface import public


def meta_empty(shape: tuple, dt: dtypes.dtype, requires_grad: bool = False,
               strides: tuple | None = None) -> Any:
    """A new meta leaf tensor, as a factory makes one (``zeros(..., device="meta")``): no
    values are ever made, so it costs no memory whatever its size (``strides`` in bytes)."""
    return _tensor._new(_meta.array(shape, dt.np, strides), dt, requires_grad)


def host_device(like: Any) -> Any:
    """Where a tensor that jitgrad makes from host numbers or index arrays, to combine with
    tensor ``like``, goes: the meta device for a meta ``like``, else the CPU, whatever the
    default device (``with device("meta")`` around CPU work; a cuda ``like`` takes CPU numbers
    and index arrays as it always has)."""
    return like.device if like.is_meta else _CPU


_CPU = check_device("cpu")


@public("tensor")
def tensor(data: Any, dtype: dtypes.dtype | None = None, device: Any = None,
           requires_grad: bool = False, pin_memory: bool = False):
    """Constructs a tensor by copying ``data`` (a number, nested sequence or array)."""
    dev = check_device(device)
    if isinstance(data, registry.Tensor):
        if called_by_user():
            warn_copy_construct("torch.tensor")
        if data.is_cuda:
            data = data.cpu()
    arr, dt = _to_array(data, dtype)
    return _tensor._new(arr, dt, requires_grad, dev)


def warn_copy_construct(fname: str) -> None:
    """torch's advice when ``tensor(t)`` or ``x.new_tensor(t)`` copies a tensor ``t``."""
    import warnings

    warnings.warn("To copy construct from a tensor, it is recommended to use "
                  "sourceTensor.detach().clone() or sourceTensor.detach().clone()"
                  f".requires_grad_(True), rather than {fname}(sourceTensor).", UserWarning,
                  stacklevel=user_stacklevel(3))


@public("as_tensor")
def as_tensor(data: Any, dtype: dtypes.dtype | None = None, device: Any = None):
    """Converts ``data`` to a tensor, sharing memory with a NumPy array or tensor if it can."""
    dev = check_device(device)
    if isinstance(data, registry.Tensor):
        # (a default device other than the CPU, ``with device("meta")``, applies as torch's;
        # another dtype is data.to(dtype), recorded by autograd as torch's)
        if dtype is None or dtype is data.dtype:
            return data if device is None and dev.type == "cpu" else data.to(dev)
        return data.to(device=data.device if device is None else dev, dtype=dtype)
    arr, dt = _to_array(data, dtype, copy=False)
    return _tensor._new(arr, dt, False, dev)


_UNSET: Any = object()


@public("asarray")
def asarray(obj: Any, *, dtype: dtypes.dtype | None = None, device: Any = None,
            copy: bool | None = None, requires_grad: Any = _UNSET):
    """Converts ``obj`` to a tensor, as ``torch.asarray``: a tensor or NumPy array of the
    requested dtype and device is shared (no copy) unless ``copy=True``; ``copy=False``
    raises ValueError where sharing is impossible. Without ``requires_grad``, a shared tensor
    keeps its ``requires_grad`` (with torch's warning when that is True)."""
    dev = check_device(device)
    if isinstance(obj, registry.Tensor):
        same = (dtype is None or dtype is obj.dtype) and (device is None or dev == obj.device)
        if same and copy is not True:
            if requires_grad is _UNSET:
                if obj.requires_grad:
                    import warnings

                    warnings.warn("torch.asarray: unspecified requires_grad now defaults to "
                                  "obj.requires_grad instead of False. Pass requires_grad=False "
                                  "explicitly to get the old behavior and silence this warning.",
                                  UserWarning, stacklevel=user_stacklevel())
                return obj
            if bool(requires_grad) != obj.requires_grad:
                if not obj.is_leaf:
                    return obj.detach().requires_grad_(bool(requires_grad))
                obj.requires_grad_(bool(requires_grad))
            return obj
        if copy is False:
            raise ValueError(f"can't alias tensor with dtype '{obj.dtype._scalar_name}' into "
                             f"dtype '{(dtype or obj.dtype)._scalar_name}'.")
        out = obj.detach().to(device=dev, dtype=dtype or obj.dtype, copy=True)
        return out.requires_grad_(requires_grad is not _UNSET and bool(requires_grad))
    grad = requires_grad is not _UNSET and bool(requires_grad)
    if isinstance(obj, np.ndarray) or hasattr(obj, "__array_interface__"):
        arr = np.asarray(obj)
        dt = dtypes.from_numpy_dtype(arr.dtype)
        if copy is False and dtype is not None and dtype is not dt:
            raise ValueError(f"can't alias tensor with dtype '{dt._scalar_name}' into dtype "
                             f"'{dtype._scalar_name}'.")
        target = dtype or dt
        data = arr.astype(target.np, copy=bool(copy))
        return _tensor._new(data, target, grad, dev)
    if copy is False:
        raise ValueError("can't alias arbitrary sequence into a tensor.")
    return tensor(obj, dtype=dtype, device=device, requires_grad=grad)


@public("from_numpy")
def from_numpy(ndarray: np.ndarray):
    """A tensor sharing memory with ``ndarray`` (zero-copy)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if any(s < 0 for s in ndarray.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with negative "
            "strides are not currently supported. (You can probably work around this by making "
            "a copy of your array  with array.copy().) ")
    return _tensor._new(ndarray, dtypes.from_numpy_dtype(ndarray.dtype))


@public("frombuffer")
def frombuffer(buffer: Any, *, dtype: Any, count: int = -1, offset: int = 0,
               requires_grad: bool = False):
    """A 1-D tensor sharing memory with an object of the buffer protocol (``bytearray``,
    ``memoryview``, ``array.array``, ...): ``count`` elements of ``dtype`` from byte
    ``offset`` (-1: all that follow). A read-only buffer gives a read-only tensor."""
    if dtype is dtypes.bfloat16:
        raise TypeError("frombuffer: jitgrad keeps bfloat16 in float32 memory, so a buffer of "
                        "2-byte bfloat16 values cannot be shared; read it as int16 and convert")
    view = memoryview(buffer)
    size = view.nbytes
    if size == 0 and count in (0, -1) or count == 0:
        raise ValueError(f"both buffer length ({size}) and count ({count}) must not be 0")
    if offset < 0 or offset >= size:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({size} bytes) minus 1")
    item = dtype.itemsize
    if count < 0 and (size - offset) % item:
        raise ValueError(f"buffer length ({size - offset} bytes) after offset ({offset} bytes) "
                         f"must be a multiple of element size ({item})")
    if count > 0 and size - offset < count * item:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({size} bytes)")
    data = np.frombuffer(buffer, dtype=dtype.np, count=count, offset=offset)
    return _tensor._new(data, dtype, requires_grad=requires_grad)


@public("from_dlpack")
def from_dlpack(ext_tensor: Any, *, device: Any = None, copy: bool | None = None):
    """A tensor sharing memory with ``ext_tensor`` (zero-copy), as ``torch.from_dlpack``: an
    object with ``__dlpack__`` or a host DLPack capsule (``to_dlpack``'s).

    Host arrays come in through NumPy's DLPack (NumPy arrays, torch CPU tensors, JAX CPU
    arrays, ...). Device arrays (CuPy, torch cuda tensors, numba-cuda device arrays) come in
    through numba-cuda, from ``__cuda_array_interface__`` or DLPack: C-contiguous ones without
    a copy. ``device`` moves the result there; ``copy=True`` gives it its own memory.
    """
    result = _from_dlpack(ext_tensor)
    if device is not None and check_device(device) != result.device:
        result = result.to(device)
    elif copy:
        result = result.clone()
    return result


def _from_dlpack(ext_tensor: Any):
    if isinstance(ext_tensor, registry.Tensor):
        return ext_tensor
    if type(ext_tensor).__name__ == "PyCapsule":  # (``to_dlpack``'s: host memory only)
        from .._dlpack import host_capsule_array

        arr = host_capsule_array(ext_tensor)
        return _tensor._new(arr, dtypes.from_numpy_dtype(arr.dtype))
    kind = None
    if hasattr(ext_tensor, "__dlpack_device__"):
        kind = int(ext_tensor.__dlpack_device__()[0])
    gpu = kind in (2, 3, 13) or hasattr(ext_tensor, "__cuda_array_interface__") or \
        hasattr(ext_tensor, "_ary") and hasattr(ext_tensor, "copy_to_host")
    if not gpu:
        if not hasattr(ext_tensor, "__dlpack__"):
            raise TypeError(f"from_dlpack: {type(ext_tensor).__name__} is not a DLPack "
                            "object (it has no __dlpack__)")
        arr = np.from_dlpack(ext_tensor)
        return _tensor._new(arr, dtypes.from_numpy_dtype(arr.dtype))
    check_device("cuda")
    from .._cuda_array import from_device_array

    data = from_device_array(ext_tensor)
    return _tensor._new(data, dtypes.from_numpy_dtype(data.dtype))


def _shape(size, fname: str = "empty", keyword: bool = False) -> tuple:
    """A factory's size from ``*size`` (``(2, 3)``, or ``((2, 3),)``), with torch's argument
    parser's errors for an element that is no int (a float is never truncated) and its
    RuntimeError for a negative one (``keyword``: it came as ``size=``)."""
    nested = len(size) == 1 and isinstance(size[0], (tuple, list))
    items = size[0] if nested else size
    shape = []
    for i, s in enumerate(items):
        try:
            if isinstance(s, bool) and i == 0:  # (the parser takes a later bool as an int)
                raise TypeError
            shape.append(operator.index(s))
        except TypeError:
            raise TypeError(_size_type_error(fname, s, i, len(items), nested, keyword)) \
                from None
    for s in shape:
        if s < 0:
            if fname == "zeros":
                raise RuntimeError("zeros: Dimension size must be non-negative.")
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {shape}")
    return tuple(shape)


def _size_type_error(fname: str, bad: Any, i: int, count: int, nested: bool,
                     keyword: bool) -> str:
    kind = type(bad)
    name = kind.__name__ if kind.__module__ == "builtins" else \
        f"{kind.__module__.split('.')[0]}.{kind.__qualname__}"
    where = "" if keyword else " (position 1)"
    if i:
        return (f"{fname}(): argument 'size' failed to unpack the object at pos {i + 1} with "
                f'error "type must be tuple of ints,but got {name}"')
    if nested:
        return (f"{fname}(): argument 'size'{where} must be tuple of ints, but found element "
                f"of type {name} at pos 0")
    if count > 1:
        return f"{fname}() takes 1 positional argument but {count} were given"
    return f"{fname}(): argument 'size'{where} must be tuple of ints, not {name}"


def _size_arg(fname: str, size: tuple, size_kw: Any) -> tuple:
    """The ``*size`` / ``size=`` argument of a factory (``zeros(2, 3)``, ``zeros((2, 3))``,
    ``zeros(size=(2, 3))``), with torch's error when it is missing."""
    if size_kw is not None:
        if size:
            raise TypeError(f"{fname}() got multiple values for argument 'size'")
        return _shape((size_kw,), fname, keyword=True)
    if not size:
        raise TypeError(f'{fname}() missing 1 required positional arguments: "size"')
    return _shape(size, fname)


_OPTS = ("*, {gen}Tensor out = None, jitgrad.dtype dtype = None, jitgrad.layout layout = None, "
         "jitgrad.device device = None, bool pin_memory = False, bool requires_grad = False")


def check_layout(fname: str, layout: Any) -> None:
    """torch's ``layout=`` factory argument: jitgrad's factories make strided (dense) tensors."""
    if layout is None or getattr(layout, "_name", None) == "strided":
        return
    if type(layout).__name__ != "layout":
        raise TypeError(f"{fname}(): argument 'layout' must be torch.layout, not "
                        f"{type(layout).__name__}")
    raise RuntimeError(f"{fname}(): jitgrad's factories make strided tensors, not {layout}: "
                       "make a dense one and call .to_sparse() (or .to_sparse_csr()) on it")


def like_memory_format(out: Any, input: Any, memory_format: Any,  # noqa: A002
                       fname: str) -> Any:
    """``out``, a fresh tensor of ``input``'s shape, laid out as torch's ``*_like`` lays it out:
    ``preserve_format`` (the default) keeps a channels-last ``input``'s order, else the
    format asked for."""
    fmt = preserve_format if memory_format is None else memory_format
    if fmt is preserve_format and input._trace is None and out._trace is None \
            and not input.is_meta and not out.is_meta and not out.is_cuda \
            and isinstance(out._data, np.ndarray) and isinstance(input._data, np.ndarray):
        out._data = laid_out_like(out._data, input._data)
        return out
    if fmt is preserve_format:
        fmt = contiguous_format
        for candidate in (channels_last, channels_last_3d):
            if input.ndim == (4 if candidate is channels_last else 5) and \
                    not input.is_contiguous() and input.is_contiguous(memory_format=candidate):
                fmt = candidate
    elif not isinstance(fmt, _MemoryFormat):
        raise TypeError(f"{fname}(): argument 'memory_format' must be torch.memory_format, "
                        f"not {type(fmt).__name__}")
    if fmt is contiguous_format or out.device.type == "meta":
        return out
    check_format_rank(out.ndim, fmt)
    out._data = channels_last_array(out._data)
    return out


def check_format_rank(ndim: int, fmt: Any) -> None:
    """Raises torch's error when ``fmt`` (channels_last[_3d]) does not fit a tensor's rank."""
    rank = 5 if fmt.name == "channels_last_3d" else 4
    if ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt.name} format")


def _factory(fill, fname: str):
    def make(*size, size_kw=None, dtype=None, device=None, requires_grad=False, **kwargs):
        if "size" in kwargs:
            size_kw = kwargs.pop("size")
        fmt = kwargs.pop("memory_format", None) if fname == "empty" else None
        check_layout(fname, kwargs.pop("layout", None))
        kwargs.pop("pin_memory", None)  # (host memory is what jitgrad's CPU tensors live in)
        if kwargs:
            raise TypeError(f"{fname}() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        dev = check_device(device)
        dt = dtype or dtypes.get_default_dtype()
        if dev.type == "meta":  # a shape, no values (and no memory)
            return meta_empty(_size_arg(fname, size, size_kw), dt, requires_grad)
        data = fill(_size_arg(fname, size, size_kw), dt.np)
        if fmt is not None and fmt.name.startswith("channels_last"):  # (empty's memory_format)
            check_format_rank(data.ndim, fmt)
            data = channels_last_array(data)
        return _tensor._new(data, dt, requires_grad, dev)
    make.__name__ = make.__qualname__ = fname
    return make


zeros = public("zeros")(_factory(np.zeros, "zeros"))
ones = public("ones")(_factory(np.ones, "ones"))
empty = public("empty")(_factory(np.empty, "empty"))


@public("full")
def full(size, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False):
    """A tensor of ``size`` filled with ``fill_value`` (dtype inferred from it, as torch)."""
    check_layout("full", layout)
    dev = check_device(device)
    if not isinstance(size, (tuple, list)):
        raise TypeError("full(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(size).__name__}")
    if isinstance(fill_value, _tensor.Tensor):  # (a 0-d tensor is a number, as torch's Scalar)
        if fill_value.ndim:
            raise TypeError("full(): argument 'fill_value' (position 2) must be Number, not "
                            "Tensor")
        fill_value = fill_value.item()
    dt = dtype or dtypes.scalar_dtype(fill_value)
    fill_value = fitted_scalar(fill_value, dt)
    shape = _shape((size,), "full")
    if dev.type == "meta":
        return meta_empty(shape, dt, requires_grad)
    return _tensor._new(np.full(shape, fill_value, dtype=dt.np), dt, requires_grad, dev)


def _like(fn, fname: str):
    def make(input, *, dtype=None, layout=None, device=None, requires_grad=False,  # noqa: A002
             memory_format=None):
        check_layout(fname, layout)
        out = fn(tuple(input.shape), dtype=dtype or input.dtype,
                 device=input.device if device is None else device, requires_grad=requires_grad)
        return like_memory_format(out, input, memory_format, fname)
    make.__name__ = make.__qualname__ = fname
    return make


empty_like = public("empty_like")(_like(empty, "empty_like"))
ones_like = public("ones_like")(_like(ones, "ones_like"))
zeros_like = public("zeros_like")(_like(zeros, "zeros_like"))


@public("full_like")
def full_like(input, fill_value, *, dtype=None, layout=None, device=None,  # noqa: A002
              requires_grad=False, memory_format=None):
    check_layout("full_like", layout)
    out = full(tuple(input.shape), fill_value, dtype=dtype or input.dtype,
               device=input.device if device is None else device, requires_grad=requires_grad)
    return like_memory_format(out, input, memory_format, "full_like")


# C++ names of the dtypes in c10's checked scalar conversion (full, fill_)
_CPP_SCALAR = {"int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
               "uint8": "uint8_t", "float32": "float"}


def fitted_scalar(value: Any, dt: dtypes.dtype) -> Any:
    """``value`` as ``dt`` holds it, or torch's RuntimeError for a Python number that ``dt``
    cannot hold (NumPy would wrap it or make a NaN an integer): integers take finite values in
    range (unsigned ones take integers down to ``-max``, wrapped as two's complement: -1 is
    255 in uint8),
    float32 finite values up to its largest."""
    registry.check_scalar_int(value)
    name = _CPP_SCALAR.get(dt.name)
    if name is None or isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        return value
    if dt.is_floating_point:
        bad = math.isfinite(value) and abs(value) > _FLOAT32_MAX
        low = 0.0
    else:
        low, high = _INT_LIMITS[dt.name]
        wraps = low == 0 and isinstance(value, (int, np.integer))  # (floats do not)
        bad = not math.isfinite(value) or not (-high if wraps else low) <= value <= high
    if bad:
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")
    if not dt.is_floating_point and value < 0 and low == 0:
        return int(value) % (high + 1)
    return value


_FLOAT32_MAX = float(np.finfo(np.float32).max)
_INT_LIMITS = {name: (int(np.iinfo(name).min), int(np.iinfo(name).max))
               for name in ("int8", "int16", "int32", "int64", "uint8")}


@public("eye")
def eye(n: int, m: int | None = None, *, dtype=None, layout=None, device=None,
        requires_grad=False, pin_memory=False):
    check_layout("eye", layout)
    dev = check_device(device)
    dt = dtype or dtypes.get_default_dtype()
    _check_int_arg("eye", "n", 1, n)
    if m is not None and not _is_int(m):
        raise invalid_combination("eye", (n, m), {}, (
            "int n, " + _OPTS.format(gen=""), "int n, int m, " + _OPTS.format(gen="")))
    for name, v in (("n", n), ("m", m)):
        if v is not None and v < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    if dev.type == "meta":
        return meta_empty((n, n if m is None else m), dt, requires_grad)
    return _tensor._new(np.eye(n, m, dtype=dt.np), dt, requires_grad, dev)


def _is_int(v: Any) -> bool:
    try:
        operator.index(v)
    except TypeError:
        return False
    return True


def _check_int_arg(fname: str, name: str, position: int, value: Any) -> None:
    """torch's argument-parser error for an int argument given something else (a float)."""
    if isinstance(value, bool) or not _is_int(value):
        raise TypeError(f"{fname}(): argument '{name}' (position {position}) must be int, not "
                        f"{type(value).__name__}")
