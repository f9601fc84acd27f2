"""``Tensor``: a NumPy array plus torch's autograd attributes.

Operations are attached as methods by ``jitgrad.ops`` (each op is defined once there); this
module holds what is specific to the tensor object: construction, autograd state, hooks,
versions, printing and NumPy interop.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _config, dtypes
from .device import device as _device
from .device import cpu as _cpu
from ._cuda_array import TO_NUMPY as _TO_NUMPY
from ._cuda_array import CudaArray as _CudaArray
from ._cuda_array import to_device as _to_device
from .ops import registry  # (first: it loads the ops, which load _data)
from ._data import channels_last_contiguous as _channels_last_contiguous
from ._data import to_array
from ._hooks import RemovableHandle
from . import _dlpack
from . import _meta
from ._meta import MetaArray as _MetaArray
from ._views import _refresh_view
from ._size import Size
from ._torch_function import _overrides


def _real_scalar(value: Any, ctype: str) -> Any:
    """A complex value with an imaginary part cannot become a real number (torch's error)."""
    if type(value) is complex:
        if value.imag != 0:
            raise RuntimeError(f"value cannot be converted to type {ctype} without overflow")
        return value.real
    return value


class Tensor:
    """A multi-dimensional array that can take part in automatic differentiation."""

    # Attributes that most tensors never change are class-level defaults (a tensor gets its own
    # value on first write, in its __dict__): creating a tensor, the hot path of eager mode, then
    # sets only its data, dtype, version counter and grad_fn.
    __slots__ = ("_data", "_dtype", "_vc", "_grad_fn", "__dict__", "__weakref__")
    _requires_grad = False
    _grad = None
    _output_nr = 0
    _base = None
    _hooks = None
    _post_acc_hooks = None
    _retains_grad = False
    _accumulator = None
    _is_inference = False
    _trace = None
    _fw_grads = None
    _view_chain = ()  # a view: the view ops that make it from its base (see _refresh_view)
    _view_version = 0  # a view: the version at which its grad_fn was made
    _view_creation = None  # how a view that may not be changed in place was made (_views)
    # as torch's: NumPy's operators defer to the Tensor's, so ``np.float64(0.5) * t`` is a
    # tensor on the autograd graph (not an ndarray made through __array__)
    __array_priority__ = 1000

    def _init(self, data: np.ndarray, dt: dtypes.dtype, requires_grad: bool = False) -> None:
        """Sets the fields of an allocated tensor (a subclass's, or ``Tensor(data)``'s); a plain
        tensor is made by ``_make``, which sets the same four fields."""
        self._data = data
        self._dtype = dt
        self._vc = [0]
        self._grad_fn = None  # a slot: set on every recorded output
        if requires_grad:
            self._requires_grad = True

    def __init__(self, *args: Any, dtype: dtypes.dtype | None = None) -> None:
        if dtype is not None:  # (jitgrad's own: the data as it is, in ``dtype``)
            arr, dt = to_array(args[0] if args else [], dtype)
        else:  # torch.Tensor(...): the default dtype's legacy constructor (sizes or data)
            dt = dtypes.get_default_dtype()
            if len(args) == 1 and isinstance(args[0], Size):
                args = tuple(args[0])
            if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
                arr = np.zeros(tuple(int(a) for a in args) or (0,), dtype=dt.np)
            elif len(args) == 1 and isinstance(args[0], Tensor):
                arr, dt = args[0].detach().numpy().copy(), args[0].dtype
            elif len(args) == 1:
                arr, dt = to_array(args[0], dt)
            else:
                raise TypeError("new() received an invalid combination of arguments")
        self._init(arr, dt)

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    @property
    def dtype(self) -> dtypes.dtype:
        return self._dtype

    @property
    def device(self) -> _device:
        kind = type(self._data)
        return _cpu if kind is not _CudaArray and kind is not _MetaArray else self._data.device

    @property
    def is_cuda(self) -> bool:
        """Whether the tensor's data is on a cuda device."""
        return type(self._data) is _CudaArray

    @property
    def is_cpu(self) -> bool:
        kind = type(self._data)
        return kind is not _CudaArray and kind is not _MetaArray

    @property
    def is_meta(self) -> bool:
        """Whether the tensor is on the meta device (a shape and dtype, no values)."""
        return type(self._data) is _MetaArray

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def size(self, dim: int | None = None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self.ndim)]

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel

    def element_size(self) -> int:
        return self._dtype.itemsize

    def is_floating_point(self) -> bool:
        return self._dtype.is_floating_point

    def is_complex(self) -> bool:
        return self._dtype.is_complex

    def is_contiguous(self, memory_format: Any = None) -> bool:
        """Whether the data is dense in row-major order, or in ``memory_format``'s order
        (``jitgrad.channels_last``: channels innermost)."""
        if memory_format is None or memory_format.name in ("contiguous_format",
                                                            "preserve_format"):
            return bool(self._data.flags.c_contiguous)
        rank = 5 if memory_format.name == "channels_last_3d" else 4
        return _channels_last_contiguous(self._data.shape, self.stride(), rank)

    def stride(self, dim: int | None = None):
        data = self._data  # (NumPy's and meta arrays' strides count bytes, a cuda array's
        # elements: its byte_strides count bytes)
        byte_strides = getattr(data, "byte_strides", None) if type(data) is not np.ndarray \
            else None
        st = tuple(s // data.itemsize for s in (byte_strides or data.strides))
        if 0 in data.shape and not any(st):  # (an empty array NumPy laid out with zero strides:
            st = _contiguous_strides(data.shape)  # torch's factories' contiguous ones)
        return st if dim is None else st[_wrap_dim(dim, self.ndim)]

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    # ------------------------------------------------------------------ autograd state
    @property
    def requires_grad(self) -> bool:
        base = self._base
        if base is None:
            return self._requires_grad or self._grad_fn is not None
        creation = self._view_creation
        if creation is None:
            if self._vc[0] != self._view_version:
                _refresh_view(self)
            return self._requires_grad or self._grad_fn is not None
        # (a view made under no_grad requires grad when its base does, as torch's)
        return self._requires_grad or self._grad_fn is not None or (
            creation != registry.MULTI_OUTPUT_VIEW and base.requires_grad)

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self._grad_fn is not None:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().")
        if value and not (self._dtype.is_floating_point or self._dtype.is_complex):
            raise RuntimeError(
                "only Tensors of floating point and complex dtype can require gradients")
        if value and self._is_inference and not registry.state.inference:
            raise RuntimeError(
                "Setting requires_grad=True on inference tensor outside InferenceMode is not "
                "allowed.")
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Sets ``requires_grad`` in place (on a leaf; True on a non-leaf is a no-op)."""
        if requires_grad and self._grad_fn is None and not self._dtype.is_floating_point \
                and not self._dtype.is_complex:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if self._grad_fn is not None and not requires_grad:
            self.requires_grad = requires_grad
        elif self._grad_fn is None:
            self.requires_grad = requires_grad
        return self

    @property
    def grad_fn(self):
        if self._base is not None and self._vc[0] != self._view_version:
            _refresh_view(self)
        fn = self._grad_fn  # (an op's node gets its class named as torch's when first seen)
        return fn if fn is None or fn._named else fn._named_as_torch()

    @property
    def is_leaf(self) -> bool:
        if self._base is not None and self._vc[0] != self._view_version:
            _refresh_view(self)
        return self._grad_fn is None

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def grad(self) -> Tensor | None:
        if self._grad_fn is not None and not self._retains_grad and self._grad is None:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its "
                ".grad attribute won't be populated during autograd.backward(). If you indeed "
                "want the .grad field to be populated for a non-leaf Tensor, use .retain_grad() "
                "on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
                "you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 "
                "for more information.", UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None but got grad of type "
                    f"{type(value).__name__}")
            if value._dtype is not self._dtype and (self._dtype.is_floating_point
                                                     or self._dtype.is_complex):
                got = dtypes.CPP_NAMES[value._dtype.name]
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{got}' to a tensor with "
                    f"grad_dtype '{self._dtype._scalar_name}'. The gradient "
                    "must match the tensor's grad_dtype (defaults to the tensor's dtype). You can "
                    "set the tensor's grad_dtype attribute with a specific dtype, or None to "
                    "allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a "
                    "tensor and its gradient may break downstream systems that assume they "
                    "match.")
            if value.shape != self.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor "
                    f"of size '{list(self.shape)}'. Please ensure that the gradient and the "
                    "tensor are the same size")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def retain_grad(self) -> None:
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._grad_fn is None or self._retains_grad:
            return
        self._retains_grad = True
        self._grad_fn._add_retain_grad(self)

    @property
    def _version(self) -> int:
        if self._is_inference:
            raise RuntimeError("Inference tensors do not track version counter.")
        return self._vc[0]

    def is_inference(self) -> bool:
        return self._is_inference

    def register_hook(self, hook: Callable) -> Any:
        """Registers ``hook(grad) -> Tensor | None``, called with this tensor's gradient."""
        if not self.requires_grad:
            raise RuntimeError(
                "cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is not None:
            return self._grad_fn._register_tensor_prehook(self._output_nr, hook)
        if self._hooks is None:
            self._hooks = {}
        if self._accumulator is not None:  # (the engine runs a hooked node on tensors)
            self._accumulator._hooked = True
        return RemovableHandle(self._hooks, hook)

    def register_post_accumulate_grad_hook(self, hook: Callable) -> Any:
        """Registers ``hook(tensor)``, called after the gradient is accumulated into ``.grad``."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is not None:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_acc_hooks is None:
            self._post_acc_hooks = {}
        return RemovableHandle(self._post_acc_hooks, hook)

    def _get_accumulator(self):
        acc = self._accumulator
        if acc is None:
            acc = self._accumulator = graph.AccumulateGrad(self)
        return acc

    def backward(self, gradient: Tensor | None = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Any = None) -> None:
        """Computes the gradient of this tensor w.r.t. graph leaves (see ``autograd.backward``)."""
        graph.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def detach(self) -> Tensor:
        """A new tensor sharing this one's data and version counter, outside the graph."""
        if self._trace is not None:
            return registry.apply(registry.OPS["detach"], self)
        t = _make(self._data, self._dtype)
        t._vc = self._vc
        if self._is_inference:
            t._is_inference = True
        return t

    def detach_(self) -> Tensor:
        if self._base is not None and self._base.requires_grad:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
                "as True, gradients are views of DDP buckets, and hence detach_() cannot be "
                "called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in jitgrad/optim/optimizer.py as the solution.")
        self._grad_fn = None
        self._requires_grad = False
        return self

    @property
    def data(self) -> Tensor:
        return _make(self._data, self._dtype)

    @data.setter
    def data(self, value: Tensor) -> None:
        self._data = value._data
        self._dtype = value._dtype

    # ------------------------------------------------------------------ NumPy interop
    def numpy(self, *, force: bool = False) -> np.ndarray:
        if registry.state.traces:  # jit: a captured tensor's value is read at trace time
            registry.state.traces[-1].read_value(self)
        if type(self._data) is _CudaArray:
            raise TypeError(_TO_NUMPY)
        if type(self._data) is _MetaArray:
            raise TypeError(_meta.TO_NUMPY)
        if self.requires_grad and not force and registry.state.grad_enabled:  # (as torch's)
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead.")
        if self._dtype is _BFLOAT16:  # (NumPy has no bfloat16, as torch says)
            raise TypeError("Got unsupported ScalarType BFloat16")
        return self._data

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        data = self.numpy()  # (torch's __array__ is numpy(): its checks and errors)
        return data if dtype is None else data.astype(dtype, copy=bool(copy))

    def __array_wrap__(self, array: np.ndarray, context: Any = None,
                       return_scalar: bool = False) -> Tensor:
        # a NumPy ufunc's result on a tensor is a tensor, as torch's (``np.exp(t)``,
        # ``np.clip(t, 0, 1)``); bool results become uint8, as torch's
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        return _new(np.asarray(array), dtypes.from_numpy_dtype(array.dtype))

    def item(self) -> Any:
        if registry.state.traces:
            registry.state.traces[-1].read_value(self)
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        if type(self._data) is _MetaArray:
            raise RuntimeError(_meta.NO_ITEM)
        if type(self._data) is _CudaArray:  # (torch copies the value to the host too)
            return self._data.copy_to_host().reshape(()).item()
        return self._data.reshape(()).item()

    def tolist(self) -> Any:
        if registry.state.traces:
            registry.state.traces[-1].read_value(self)
        return self._data.tolist()

    def _python_scalar(self) -> Any:
        if self._data.size != 1:  # torch's text and type (item() raises RuntimeError)
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __float__(self) -> float:
        _config.scalar_of_grad(registry.state.grad_enabled and self.requires_grad)
        return float(_real_scalar(self._python_scalar(), "double"))

    def __int__(self) -> int:
        return int(_real_scalar(self._python_scalar(), "int64_t"))

    def __index__(self) -> int:
        if self._dtype.is_floating_point or self._dtype.is_complex or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __complex__(self) -> complex:
        _config.scalar_of_grad(registry.state.grad_enabled and self.requires_grad)
        return complex(self._python_scalar())

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with "
                               f"{'no values' if self._data.size == 0 else 'more than one value'}"
                               f" is ambiguous")
        return bool(self.item())

    def __contains__(self, element: Any) -> bool:
        if isinstance(element, (Tensor, numbers.Number)):
            return bool((element == self).any().item())
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed "
                           f"in a {type(element)}.")

    def __hash__(self) -> int:
        return id(self)

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __reduce_ex__(self, protocol):
        if type(self._data) is _CudaArray:  # pickled as host values (unpickled on the CPU)
            return (_rebuild, (self._data.copy_to_host(), self._dtype.name, self._requires_grad))
        return (_rebuild, (self._data, self._dtype.name, self._requires_grad))

    def __deepcopy__(self, memo):
        if self._grad_fn is not None:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the "
                "deepcopy protocol at the moment.  If you were attempting to deepcopy a "
                "module, this may be because of a jitgrad.nn.utils.weight_norm usage, see "
                "https://github.com/pytorch/pytorch/pull/103001")
        new = type(self).__new__(type(self))
        new._init(self._data.copy(), self._dtype, self._requires_grad)
        if self._grad is not None:
            new._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = new
        return new

    # DLPack and the CUDA array interface (``_dlpack.py``)
    __dlpack__ = _dlpack.tensor_dlpack
    __dlpack_device__ = _dlpack.tensor_dlpack_device
    __cuda_array_interface__ = property(_dlpack.tensor_cuda_array_interface)

    # ------------------------------------------------------------------ device
    def cpu(self) -> Tensor:
        """This tensor on the CPU: itself, or a copy of a cuda tensor (differentiable); a meta
        tensor has no values to copy (torch's NotImplementedError)."""
        return self if self.is_cpu else self.to("cpu")

    def cuda(self, device: Any = None) -> Tensor:
        """This tensor on the cuda device (``cuda:0``): itself, or a copy (differentiable)."""
        return self.to("cuda" if device is None else
                       f"cuda:{device}" if isinstance(device, int) else device)

    # ------------------------------------------------------------------ printing
    def __repr__(self) -> str:
        return _format(self)

    def __format__(self, spec: str) -> str:
        # as torch: a plain 0-d tensor formats as its number (also with no spec: f"{t}" is
        # "7"); anything else as an object (str(t), and a TypeError for a non-empty spec)
        if self.ndim == 0 and type(self) is Tensor and not self.is_meta:
            return self.detach().item().__format__(spec)
        return object.__format__(self, spec)

    def type(self, dtype: Any = None) -> Any:
        if dtype is None:
            return f"jitgrad.{'cuda.' if self.is_cuda else ''}{self._dtype._legacy}"
        return self.to(dtype)


def _rebuild(data: np.ndarray, dtype_name: str, requires_grad: bool) -> Tensor:
    t = _make(data, getattr(dtypes, dtype_name))
    if requires_grad:
        t._requires_grad = True
    return t


def _contiguous_strides(shape: tuple) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _wrap_dim(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def _format(t: Tensor) -> str:
    from ._tensor_str import tensor_repr

    if t._base is not None and t._vc[0] != t._view_version:
        _refresh_view(t)  # (its grad_fn, as torch's repr reads it)
    if type(t) is not Tensor and registry.torch_function_live and _overrides(type(t)):
        return tensor_repr(t, f"{type(t).__name__}(")  # (a subclass taking part: torch's)
    return tensor_repr(t)


_new_object = object.__new__


def _make(data: Any, dt: dtypes.dtype, grad_fn: Any = None) -> Tensor:
    """The tensor constructor of jitgrad's own code: a ``Tensor`` on array ``data`` (NumPy or
    cuda) of dtype ``dt``, with a fresh version counter and ``grad_fn`` (None: not an output of
    a recorded op). It sets the four fields every tensor has (the rest are class-level
    defaults until written) and nothing else: eager mode makes one per op."""
    if dt is _BFLOAT16 and type(data) is np.ndarray:  # (float32 storage, bfloat16 values)
        data = dtypes.round_to_bfloat16(data)
        registry.bfloat16_live = True
    t = _new_object(Tensor)
    t._data = data
    t._dtype = dt
    t._vc = [0]
    t._grad_fn = grad_fn
    return t


_BFLOAT16 = dtypes.bfloat16


def _new(data: Any, dt: dtypes.dtype, requires_grad: bool = False, device: Any = None) -> Tensor:
    """A new leaf tensor made by a factory (``tensor``, ``zeros``, a legacy constructor, ...):
    on ``device`` (the array is made on the host and copied once; on the meta device only its
    shape is kept), requiring grad if asked (only floating and complex dtypes may), an
    inference tensor in inference mode."""
    if device is not None and device.type != "cpu":
        if device.type == "meta":
            data = _meta.array(data.shape, data.dtype)
        else:
            if dt is _BFLOAT16:
                raise RuntimeError(dtypes.NO_CUDA_BFLOAT16)
            data = _to_device(data)
    t = _make(data, dt)
    if requires_grad:
        if not (dt.is_floating_point or dt.is_complex):  # torch's factory text (capitalized)
            raise RuntimeError(
                "Only Tensors of floating point and complex dtype can require gradients")
        t.requires_grad_(True)
    if registry.state.inference:
        t._is_inference = True
    return t


class _GraphSlots:
    """What a tensor uses of the autograd graph built on it, filled in by the layers above at
    import (tensor data comes first, the graph after): ``AccumulateGrad`` (by
    ``autograd.node``) and ``backward`` (``autograd.backward``, by ``jitgrad.autograd``)."""

    AccumulateGrad: Any = None
    backward: Any = None


graph = _GraphSlots()

registry.Tensor = Tensor
registry.make = _make
