"""The meta device: tensors that have a shape, a dtype and strides but no values.

A meta tensor's ``_data`` is a ``MetaArray``, which reads like a small ndarray's metadata
(``shape``, ``dtype``, ``strides``, ``ndim``, ``size``, ``flags``) and holds no memory, so a
model of any size can be built on it (``with jitgrad.device("meta"):``) and later given memory
with ``Module.to_empty``.

Ops need no code of their own for it: once a meta tensor exists (``registry.meta_live``), the
dispatcher's general path hands every call with a meta tensor argument to ``compute`` here,
which runs the op's registered shape/dtype rule (``OpDef.meta``, the rule the jit's tracer runs)
on stand-ins of the arguments and returns empty ``MetaArray`` results. Autograd then works as
on any device: backward runs the same VJP rules, made of ops, so gradients are meta tensors too.

As in torch, a meta tensor mixes only with CPU tensors of zero dimensions (numbers), reading
its values raises (``item``, ``numpy``, ``tolist``, copying it to the CPU), and it prints as
``tensor(..., device='meta', size=(2, 3))``. Unlike torch, an op's meta result is always
contiguous (a view op's output is still a view, sharing its base's version counter, but its
strides are not worked out); ``empty_strided`` keeps the strides it is given.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .device import device
from .ops import registry

META = device("meta")

NO_DATA = "Cannot copy out of meta tensor; no data!"
NO_ITEM = "Tensor.item() cannot be called on meta tensors"
TO_NUMPY = ("can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the "
            "tensor to host memory first.")


class _Flags:
    __slots__ = ("c_contiguous",)

    def __init__(self, c: bool) -> None:
        self.c_contiguous = c


def _contiguous_strides(shape: tuple, itemsize: int) -> tuple:
    strides, n = [], itemsize
    for s in reversed(shape):
        strides.append(n)
        n *= max(s, 1)
    return tuple(reversed(strides))


class MetaArray:
    """The data of a meta tensor: a shape, a NumPy dtype and byte strides, no values."""

    __slots__ = ("shape", "dtype", "strides")
    device = META

    def __init__(self, shape: tuple, dtype: Any, strides: tuple | None = None) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.strides = _contiguous_strides(self.shape, self.dtype.itemsize) if strides is None \
            else tuple(int(s) for s in strides)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def flags(self) -> _Flags:
        want = _contiguous_strides(self.shape, self.dtype.itemsize)
        return _Flags(all(n == 1 or s == w for n, s, w in zip(self.shape, self.strides, want)))

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"

    def copy(self, order: str = "C") -> MetaArray:
        return MetaArray(self.shape, self.dtype)

    def astype(self, dtype: Any, copy: bool = True) -> MetaArray:
        return MetaArray(self.shape, dtype)

    def reshape(self, *shape: Any) -> MetaArray:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return MetaArray(shape, self.dtype)

    def copy_from(self, other: Any) -> None:
        """An in-place write: nothing to write (the shapes were checked by the caller)."""

    def __eq__(self, other: Any) -> Any:  # (comparing values: ``equal`` on meta tensors)
        raise NotImplementedError(NO_DATA)

    __hash__ = object.__hash__

    def __iadd__(self, other: Any) -> MetaArray:  # (a leaf's gradient accumulated in place)
        return self

    def shares_memory(self, other: Any) -> bool:
        """Whether ``other`` may alias this array: any meta array may (a view op's output)."""
        return type(other) is MetaArray

    def copy_to_host(self) -> Any:
        raise NotImplementedError(NO_DATA)

    def tolist(self) -> Any:
        raise NotImplementedError(NO_DATA)

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        raise NotImplementedError(NO_DATA)


def array(shape: tuple, dtype: Any, strides: tuple | None = None) -> MetaArray:
    """A new ``MetaArray`` (from now on the dispatcher looks for meta arguments)."""
    registry.meta_live = True
    return MetaArray(shape, dtype, strides)


def is_meta(t: Any) -> bool:
    """Whether ``t`` is a meta tensor."""
    return isinstance(t, registry.Tensor) and type(t._data) is MetaArray


def _standin(t: Any) -> Any:
    """What an op's shape rule sees for meta tensor ``t``: a tensor of its shape and dtype
    whose array is one zero broadcast to the shape (no memory), marked ``_meta_standin`` (an
    op whose output shape depends on values refuses it: ``ops.selection._data_dependent``)."""
    s = object.__new__(registry.Tensor)
    s._init(np.broadcast_to(np.zeros((), t._data.dtype), t._data.shape), t._dtype)
    s._meta_standin = True
    return s


def data_dependent_error(what: str) -> NotImplementedError:
    """The error for an op whose output shape depends on values, on a meta tensor."""
    return NotImplementedError(
        f"{what} on meta tensors: its output shape depends on the tensor's values, which a "
        "meta tensor does not have")


def check_devices(args: tuple) -> None:
    """Raises torch's error when ``args`` mix a meta tensor with a tensor of another device (a
    CPU tensor of zero dimensions counts as a number, as in torch)."""
    expected = None
    for a in args:
        if not isinstance(a, registry.Tensor):
            continue
        d = a._data
        kind = type(d)
        if kind is MetaArray:
            dev = META
        elif kind is np.ndarray and d.ndim == 0:
            continue
        else:
            dev = a.device
        if expected is None:
            expected = dev
        elif dev != expected:
            raise RuntimeError(f"Tensor on device {dev} is not on the expected device "
                               f"{expected}!")


def compute(op: Any, args: tuple, params: dict) -> tuple:
    """``op`` on arguments that include a meta tensor: (its meta result or results, their
    dtype or dtypes), from the op's shape/dtype rule alone."""
    check_devices(args)
    stand = [_standin(a) if isinstance(a, registry.Tensor) and type(a._data) is MetaArray
             else a for a in args]
    shapes, dts = op.meta(*stand, **params)
    if op.n_outputs == 1:
        return array(tuple(shapes), dts.np), dts
    if not isinstance(dts, tuple):
        dts = (dts,) * len(shapes)
    return tuple(array(tuple(s), d.np) for s, d in zip(shapes, dts)), dts


def touches_meta(grad_roots: list) -> bool:
    """Whether a backward carries meta gradients (the engine's NumPy lane cannot run those):
    whether a root gradient is meta. A graph with meta tensors in it has meta roots only, as
    nothing leaves the meta device (a copy out of it raises)."""
    for g in grad_roots:
        if g is not None and type(g._data) is MetaArray:
            return True
    return False


registry.meta_compute = compute
registry.meta_array = MetaArray
