"""More of torch's Tensor surface: ``layout`` (``jitgrad.strided``, the only layout), the
``is_<backend>`` flags (all False: jitgrad tensors are dense, on the CPU or cuda), ``adjoint``,
``view_as_real`` / ``view_as_complex`` (views, as torch's) and the deprecated ``jitgrad.range``."""

from __future__ import annotations

import math
import warnings
from typing import Any


from .. import dtypes
from ..errors import user_stacklevel
from . import registry
from .surface import public
from .surface24 import fn


class layout:  # noqa: N801 - torch's class name
    """A memory layout (``jitgrad.strided``: dense tensors, the only one jitgrad has)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"jitgrad.{self._name}"

    def __reduce__(self) -> str:
        return self._name


strided = layout("strided")

# torch's flags of layouts, devices and tensor kinds jitgrad does not have
_FALSE_FLAGS = ("is_meta", "is_mps", "is_xpu", "is_sparse", "is_sparse_csr", "is_quantized",
                "is_nested", "is_mkldnn", "is_vulkan", "is_xla", "is_ipu", "is_maia",
                "is_mtia")


@public("adjoint", method=True)
def adjoint(input: Any) -> Any:  # noqa: A002
    """The conjugate transpose of the last two dims."""
    if input.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of "
                           f"matrices. Got {input.ndim}-D tensor.")
    t = input.transpose(-2, -1)
    return t.conj() if input.dtype.is_complex else t


@public("view_as_real")
def view_as_real(input: Any) -> Any:  # noqa: A002
    """A view of a complex tensor as real numbers: its real and imaginary parts on a new last
    dim of size 2 (writes to it change ``input``)."""
    if not input.dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return registry.apply(registry.OPS["view_as_real"], input)


@public("view_as_complex")
def view_as_complex(input: Any) -> Any:  # noqa: A002
    """A view of a float tensor's last dim (of size 2, stride 1) as (real, imaginary) pairs
    (writes to it change ``input``). float16 input gives a complex64 copy (jitgrad has no
    complex32)."""
    if input.dtype not in (dtypes.float32, dtypes.float64, dtypes.float16):
        raise RuntimeError("view_as_complex is only supported for half, float and double tensors, "
                           f"but got a tensor of scalar type: "
                           f"{input.dtype._scalar_name}")
    if input.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if input.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if input.dtype is dtypes.float16:
        return input[..., 0] + input[..., 1] * 1j
    if input._trace is not None:  # (a traced value has no strides: the jit copies)
        return registry.apply(registry.OPS["view_as_complex"], input)
    strides = input.stride()
    if strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return registry.apply(registry.OPS["view_as_complex"], input)


@public("range")
def range(start: Any = 0, end: Any = None, step: Any = 1, *, dtype: Any = None,  # noqa: A001
          device: Any = None, requires_grad: bool = False, layout: Any = None) -> Any:
    """torch's deprecated ``range``: ``start`` to ``end`` *inclusive* in steps of ``step``
    (the default float dtype unless given)."""
    warnings.warn("jitgrad.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "jitgrad.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=user_stacklevel())
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    n = int(math.floor((end - start) / step)) + 1
    if n < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    dt = dtype or dtypes.get_default_dtype()
    if dt is dtypes.bool:
        raise NotImplementedError("\"range_cpu\" not implemented for 'Bool'")
    values = fn("arange")(n, dtype=dtypes.float64) * step + start
    values = values.to(dt)
    if device is not None:
        values = values.to(device)
    return values.requires_grad_(requires_grad) if requires_grad else values


def as_subclass(self: Any, cls: type) -> Any:
    """``self`` as an instance of ``cls`` (a Tensor subclass): the same memory, recorded as a
    view (gradients flow back to ``self``)."""
    if not (isinstance(cls, type) and issubclass(cls, registry.Tensor)):
        raise TypeError(f"as_subclass(): argument 'cls' must be a Tensor subclass, not "
                        f"{getattr(cls, '__name__', type(cls).__name__)}")
    out = registry.apply(registry.OPS["alias"], self)  # (torch's AliasBackward0)
    out.__class__ = cls
    return out


def resize(self: Any, *sizes: Any) -> Any:
    """torch's deprecated out-of-place ``resize``: ``self`` reshaped when the element count
    stays, else a resized copy."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    shape = tuple(int(s) for s in sizes)
    n = 1
    for s in shape:
        n *= s
    if n == self.numel():
        return self.reshape(shape)
    return self.detach().clone().resize_(shape)


def resize_as(self: Any, tensor: Any) -> Any:
    """torch's deprecated out-of-place ``resize_as``."""
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _resize_quiet(self, tensor.shape)


def _resize_quiet(self: Any, shape: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return resize(self, tuple(shape))


def typename(obj: Any) -> str:
    """``jitgrad.FloatTensor`` for a tensor, else the object's class as ``module.name``."""
    if isinstance(obj, registry.Tensor):
        return obj.type()
    module = getattr(type(obj), "__module__", "")
    name = type(obj).__qualname__
    return name if module in ("builtins", "") else f"{module}.{name}"


@public("_assert")
def _assert(condition: Any, message: str) -> None:
    """``torch._assert``: raises ``AssertionError(message)`` unless ``condition`` (an assert
    that ``jitgrad.fx`` records as a call instead of evaluating)."""
    if not condition:
        raise AssertionError(message)


def is_distributed(input: Any) -> bool:  # noqa: A002
    """False: a tensor lives in one process."""
    return False


def install(namespace: dict, tensor_type: type) -> None:
    """``layout``, the flags and ``is_*()`` methods on ``tensor_type``; ``jitgrad.strided``,
    ``jitgrad.layout``, ``jitgrad.is_distributed``."""
    for name in _FALSE_FLAGS:
        if name not in tensor_type.__dict__:
            setattr(tensor_type, name, property(lambda self: False,
                                                doc=f"torch's ``Tensor.{name}``: False."))
    tensor_type.layout = property(lambda self: strided, doc="The memory layout: strided.")
    tensor_type.is_distributed = lambda self: False
    tensor_type.is_set_to = lambda self, tensor: (
        isinstance(tensor, registry.Tensor) and self.data_ptr() == tensor.data_ptr()
        and self.shape == tensor.shape and self.stride() == tensor.stride()
        and self.dtype is tensor.dtype)
    namespace.setdefault("strided", strided)
    namespace.setdefault("layout", layout)
    namespace.setdefault("is_distributed", is_distributed)
    for name, method in (("as_subclass", as_subclass), ("resize", resize),
                         ("resize_as", resize_as),
                         ("to_dense", lambda self, dtype=None, *, masked_grad=None:
                          self if dtype is None else self.to(dtype))):
        if name not in tensor_type.__dict__:
            setattr(tensor_type, name, method)
    namespace.setdefault("typename", typename)
