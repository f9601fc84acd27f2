"""torch math functions jitgrad lacked, composed of registered ops (their gradients are the
pieces'): ``addmv``/``addr``/``addbmm`` (and ``addmm`` as a method), ``angle``, ``take``,
``put``, ``fill_diagonal_``, ``float_power``, ``ldexp``, ``isreal``, ``diagflat``, ``vdot``,
``ger``, ``sum_to_size``, ``split_with_sizes``, the ``*_scatter`` functions, ``as_strided``,
``combinations``, ``unravel_index``, ``index_reduce``, ``conj_physical``, ``complex``,
``polar``, ``rsub``. Integer-only or non-differentiable ones (``gcd``, ``lcm``, ``frexp``,
``histogram``) compute on the arrays."""

from __future__ import annotations

import builtins
import itertools
import math
from typing import Any

import numpy as np

from .. import dtypes
from . import registry
from .registry import apply
from .return_types import return_type
from .surface import public
from .shape_helpers import integral_coefficients, summed_in_float32
from .complex_views import ANGLE
from .surface24 import fn


def _scaled_sum(input: Any, prod: Any, beta: Any, alpha: Any) -> Any:  # noqa: A002
    """``beta * input + alpha * prod`` as torch computes it (``beta == 0`` ignores ``input``,
    NaN included)."""
    beta, alpha = integral_coefficients(input, beta, alpha)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:  # (zeros in input's place: its gradient is zero, as torch's)
        from .inplace import ZERO

        return apply(ZERO, input) + prod
    return (input if beta == 1 else input * beta) + prod


@public(method="addmm", inplace="addmm_")
def _addmm_method(input: Any, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:  # noqa: A002
    """``beta * input + alpha * (mat1 @ mat2)`` (``jitgrad.addmm`` as a Tensor method, with
    torch's ``beta`` and ``alpha``)."""
    if beta == 1 and alpha == 1:
        return apply(registry.OPS["addmm"], input, mat1, mat2)
    return summed_in_float32(lambda i, a, b: _scaled_sum(i, fn("mm")(a, b), beta, alpha), input,
                             mat1, mat2)


@public("addmv", method=True, inplace=True)
def addmv(input: Any, mat: Any, vec: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:  # noqa: A002
    """``beta * input + alpha * (mat @ vec)``."""
    if mat.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, "
                           f"{vec.ndim}")
    return summed_in_float32(lambda i, a, v: _scaled_sum(i, fn("mv")(a, v), beta, alpha), input,
                             mat, vec)


@public("addr", method=True, inplace=True)
def addr(input: Any, vec1: Any, vec2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:  # noqa: A002
    """``beta * input + alpha * outer(vec1, vec2)``."""
    if vec1.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.ndim}-D"
                           if vec1.ndim != 1 else
                           f"addr: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    beta, alpha = integral_coefficients(input, beta, alpha, refuse_floats=True)
    if alpha != 1:  # (torch's kernel: beta * input + alpha * vec1 * vec2, each op rounded)
        return _scaled_sum(input, fn("outer")(vec1 * alpha, vec2), beta, 1)
    return _scaled_sum(input, fn("outer")(vec1, vec2), beta, alpha)


@public("addbmm", method=True, inplace=True)
def addbmm(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:  # noqa: A002
    """``beta * input + alpha * sum_i(batch1[i] @ batch2[i])``."""
    if batch1.ndim != 3 or batch2.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if batch1.ndim != 3 else
                           "batch2 must be a 3D tensor")
    if batch1.dtype in (dtypes.float16, dtypes.bfloat16) and batch1.shape[0] > 0:
        # torch adds one batch at a time (an addmm each, rounded once): so many roundings
        out = _addmm_method(input, batch1[0], batch2[0], beta=beta, alpha=alpha)
        for i in range(1, batch1.shape[0]):
            out = _addmm_method(out, batch1[i], batch2[i], alpha=alpha)
        return out
    products = fn("bmm")(batch1, batch2)
    return _scaled_sum(input, products.sum(0, dtype=products.dtype), beta, alpha)


@public("angle", method=True)
def angle(input: Any) -> Any:  # noqa: A002
    """The elementwise argument: ``atan2(imag, real)`` for complex input, ``pi`` for negative
    real values and 0 otherwise (NaN stays NaN); integers give the default float dtype."""
    if input.dtype.is_complex:
        return apply(ANGLE, input)
    if not input.dtype.is_floating_point:
        input = input.to(dtypes.get_default_dtype())
    zero = input * 0
    return fn("where")(input < 0, zero + math.pi, zero)


@public("take", method=True)
def take(input: Any, index: Any) -> Any:  # noqa: A002
    """``input`` read as 1-D at ``index`` (the result has ``index``'s shape)."""
    if index.dtype is not dtypes.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got "
                           f"{index.dtype._scalar_name}")
    _check_flat_index(input, index, "take(): tried to take from an empty tensor")
    return input.reshape(-1)[index.reshape(-1)].reshape(tuple(index.shape))


def _check_flat_index(input: Any, index: Any, empty: str) -> None:  # noqa: A002
    """torch's texts for take/put indices outside ``input`` read as 1-D (negative ones count
    from the end)."""
    if not index.numel() or not index.is_cpu or index._trace is not None:
        return  # (cuda: checked on the device; traced: no values)
    n = input.numel()
    if n == 0:
        raise IndexError(empty)
    flat = index._data.reshape(-1)
    bad = (flat < -n) | (flat >= n)
    if bad.any():
        raise IndexError(f"out of range: tried to access index {int(flat[bad][0])} on a tensor "
                         f"of {n} elements.")


@public("put", method=True, inplace=True)
def put(input: Any, index: Any, source: Any, accumulate: bool = False) -> Any:  # noqa: A002
    """``input`` (read as 1-D) with ``source`` written (or added) at ``index``."""
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                           f"elements, but got source.numel() = {source.numel()}, "
                           f"index.numel() = {index.numel()}")
    _check_flat_index(input, index, "put_(): Tried to put elements into an empty tensor")
    flat = input.reshape(-1).index_put((index.reshape(-1),), source.reshape(-1).to(input.dtype),
                                       accumulate)
    return flat.reshape(tuple(input.shape))


@public(inplace="fill_diagonal_")
def _fill_diagonal(s: Any, fill_value: Any, wrap: bool = False) -> Any:
    """``s`` with its main diagonal set to ``fill_value`` (torch's ``fill_diagonal_``)."""
    shape = tuple(s.shape)
    if len(shape) < 2:
        raise RuntimeError("dimensions must larger than 1")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    mask = np.zeros(int(np.prod(shape)), dtype=bool)
    if len(shape) == 2:
        h, w = shape
        end = h * w if wrap and h > w + 1 else min(h, w) * w
        mask[0:end:w + 1] = True
    else:
        n = shape[0]
        step = sum(n ** k for k in range(len(shape)))
        mask[0:n * step:step] = True
    from .creation import tensor

    m = tensor(mask.reshape(shape), device=s.device)
    return fn("where")(m, tensor(fill_value, dtype=s.dtype, device=s.device), s)


def _float_power_dtype(*args: Any) -> dtypes.dtype:
    cplx = any(a.dtype.is_complex if isinstance(a, registry.Tensor)
               else isinstance(a, builtins.complex) for a in args)
    return dtypes.complex128 if cplx else dtypes.float64


@public("float_power", method=True)
def float_power(input: Any, exponent: Any) -> Any:  # noqa: A002
    """``input ** exponent`` in double precision (complex128 when either is complex)."""
    dt = _float_power_dtype(input, exponent)
    if not isinstance(input, registry.Tensor):
        from .creation import tensor

        input = tensor(input, dtype=dt)
    if isinstance(exponent, registry.Tensor):
        exponent = exponent.to(dt)
    return fn("pow")(input.to(dt), exponent)


@public(inplace="float_power_")
def _float_power_inplace(s: Any, exponent: Any) -> Any:
    """``float_power`` written into ``self`` (which must be double or complex128)."""
    dt = _float_power_dtype(s, exponent)
    if s.dtype is not dt:
        raise RuntimeError(f"the base given to float_power_ has dtype "
                           f"{s.dtype._scalar_name} but the operation's result "
                           f"requires dtype {dt._scalar_name}")
    return float_power(s, exponent)


@public("ldexp", method=True, inplace=True)
def ldexp(input: Any, other: Any) -> Any:  # noqa: A002
    """``input * 2 ** other``, in the operands' floating dtype (the default one for integers)."""
    dt = dtypes.result_type(input, other)
    if not (dt.is_floating_point or dt.is_complex):
        dt = dtypes.get_default_dtype()
    return input * fn("pow")(2.0, other.to(dt) if isinstance(other, registry.Tensor) else other)


def _int_binary(name: str, fn: Any):
    def op(input: Any, other: Any) -> Any:  # noqa: A002
        from ..tensor import _new

        dt = dtypes.result_type(input, other)  # (a bool operand promotes with an integer)
        if dt.is_floating_point or dt.is_complex or dt is dtypes.bool:
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for "
                                      f"'{dt._scalar_name}'")
        return _new(fn(input.numpy(), other.numpy()).astype(dt.np), dt, device=input.device)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise ``{name}`` of integer tensors."
    return public(name, method=True, inplace=True)(op)


gcd = _int_binary("gcd", np.gcd)
lcm = _int_binary("lcm", np.lcm)

frexp_result = return_type("frexp", ["mantissa", "exponent"])


@public("frexp", method=True)
def frexp(input: Any) -> Any:  # noqa: A002
    """``(mantissa, exponent)`` with ``input == mantissa * 2 ** exponent``, ``|mantissa|`` in
    [0.5, 1) (exponent int32)."""
    from ..tensor import _new

    if not input.dtype.is_floating_point:
        raise RuntimeError("jitgrad.frexp() only supports floating-point dtypes")
    m, e = np.frexp(input.detach().numpy())
    return frexp_result(_new(m.astype(input.dtype.np), input.dtype, device=input.device),
                        _new(e.astype(np.int32), dtypes.int32, device=input.device))


@public("isreal", method=True)
def isreal(input: Any) -> Any:  # noqa: A002
    """Whether each element is real (imaginary part 0; always true for real dtypes)."""
    if input.dtype.is_complex:
        return input.imag == 0
    return fn("ones_like")(input, dtype=dtypes.bool)


@public("diagflat", method=True)
def diagflat(input: Any, offset: int = 0) -> Any:  # noqa: A002
    """A 2-D tensor with ``input`` flattened on its ``offset`` diagonal."""
    return fn("diag")(input.reshape(-1), offset)


@public("vdot", method=True)
def vdot(input: Any, other: Any) -> Any:  # noqa: A002
    """``sum(conj(input) * other)`` of two 1-D tensors of the same dtype."""
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D "
                           "tensors")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{input.dtype._scalar_name} and "
                           f"{other.dtype._scalar_name}")
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src "
                           f"[{other.shape[0]}] to have the same number of elements, but got "
                           f"{input.shape[0]} and {other.shape[0]} elements respectively")
    a = input.conj() if input.dtype.is_complex else input
    return (a * other).sum(dtype=input.dtype)  # (integers keep their dtype, as torch's dot)


@public("ger", method=True)
def ger(input: Any, vec2: Any) -> Any:  # noqa: A002
    """``outer(input, vec2)`` (torch's deprecated name)."""
    return fn("outer")(input, vec2)


@public(method="sum_to_size")
def sum_to_size(self: Any, *size: Any) -> Any:
    """``self`` summed down to ``size`` (which must expand to ``self``'s shape)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    size, shape = tuple(int(s) for s in size), tuple(self.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != n for s, n in zip(size, shape[lead:])):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    out = self.sum(tuple(range(lead))) if lead else self
    dims = tuple(i for i, (s, n) in enumerate(zip(size, shape[lead:])) if s == 1 and n != 1)
    return out.sum(dims, keepdim=True) if dims else out


@public("split_with_sizes", method=True)
def split_with_sizes(input: Any, split_sizes: Any, dim: int = 0) -> Any:  # noqa: A002
    """``input`` split along ``dim`` into pieces of the given sizes (which must sum to it)."""
    from ._shape import wrap_dim

    d = wrap_dim(dim, input.ndim)
    n = input.shape[d]
    sizes = [int(s) for s in split_sizes]
    if sum(sizes) != n:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input "
                           f"tensor's size at dimension {d}), but got split_sizes={sizes}")
    return input.split(sizes, d)


@public("unsafe_split", method=True)
def unsafe_split(input: Any, split_size: int, dim: int = 0) -> Any:  # noqa: A002
    """``split`` (torch's version without view tracking), recorded as UnsafeSplitBackward0."""
    from .splitting import UNSAFE_SPLIT, UNSAFE_SPLIT_WITH_SIZES, split_by

    return split_by(input, split_size, dim, UNSAFE_SPLIT, UNSAFE_SPLIT_WITH_SIZES)


@public("unsafe_split_with_sizes", method=True)
def unsafe_split_with_sizes(input: Any, split_sizes: Any, dim: int = 0) -> Any:  # noqa: A002
    """``split_with_sizes`` (torch's version without view tracking), recorded as
    UnsafeSplitWithSizesBackward0."""
    from .splitting import UNSAFE_SPLIT_WITH_SIZES, split_by

    return split_by(input, list(split_sizes), dim, UNSAFE_SPLIT_WITH_SIZES,
                    UNSAFE_SPLIT_WITH_SIZES)


@public("unsafe_chunk", method=True)
def unsafe_chunk(input: Any, chunks: int, dim: int = 0) -> Any:  # noqa: A002
    """``chunk`` (torch's version without view tracking), recorded as UnsafeSplitBackward0."""
    from ._shape import wrap_dim
    from .splitting import UNSAFE_SPLIT_WITH_SIZES, chunk_sizes

    size = chunk_sizes(input, chunks, dim)
    if size is None:  # a dim of size 0: ``chunks`` empty pieces
        return apply(UNSAFE_SPLIT_WITH_SIZES, input, sizes=(0,) * chunks,
                     dim=wrap_dim(dim, input.ndim))
    return unsafe_split(input, size, dim)


def _scatter_into(input: Any, src: Any, key: tuple) -> Any:  # noqa: A002
    """``input`` with ``input[key]`` replaced by ``src``, out of place (``x[key] = src``'s
    value: traceable by jit, gradients to both)."""
    from .indexing import index_put_value

    region = tuple(input[key].shape)
    if tuple(src.shape) != region:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(region)}")
    return index_put_value(input, key, src)


@public("select_scatter", method=True)
def select_scatter(input: Any, src: Any, dim: int, index: int) -> Any:  # noqa: A002
    """``input`` with ``input.select(dim, index)`` replaced by ``src``."""
    from ._shape import wrap_dim

    d = wrap_dim(dim, input.ndim)
    return _scatter_into(input, src, (slice(None),) * d + (index,))


@public("slice_scatter", method=True)
def slice_scatter(input: Any, src: Any, dim: int = 0, start: Any = None, end: Any = None,  # noqa: A002
                  step: int = 1) -> Any:
    """``input`` with ``input[..., start:end:step, ...]`` (on ``dim``) replaced by ``src``."""
    from ._shape import wrap_dim

    d = wrap_dim(dim, input.ndim)
    return _scatter_into(input, src, (slice(None),) * d + (slice(start, end, step),))


@public("diagonal_scatter", method=True)
def diagonal_scatter(input: Any, src: Any, offset: int = 0, dim1: int = 0,  # noqa: A002
                     dim2: int = 1) -> Any:
    """``input`` with ``input.diagonal(offset, dim1, dim2)`` replaced by ``src``."""
    from ._shape import wrap_dim
    from .creation import tensor

    d1, d2 = wrap_dim(dim1, input.ndim), wrap_dim(dim2, input.ndim)
    n = tuple(input.diagonal(offset, d1, d2).shape)[-1]
    rows = np.arange(n) + max(-offset, 0)
    moved = input.movedim((d1, d2), (-2, -1))
    key = (Ellipsis, tensor(rows, device=input.device),
           tensor(rows + offset, device=input.device))
    return _scatter_into(moved, src, key).movedim((-2, -1), (d1, d2))


def _positions(size: tuple, stride: tuple, offset: int) -> np.ndarray:
    idx = np.full(size, offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[d] = n
        idx = idx + (np.arange(n, dtype=np.int64) * s).reshape(shape)
    return idx


def _storage(input: Any) -> Any:  # noqa: A002
    """``input``'s storage as a flat tensor: its base's elements (made contiguous); for a tensor
    whose memory lies inside a larger array with no base of its own (``.detach()`` or ``.data``
    of a view), that array's, with ``input``'s own elements (and gradient) in their places."""
    from .creation import tensor
    from .storage import root_array

    if input._base is not None:
        base = input._base
        return (base if base.is_contiguous() else base.contiguous()).reshape(-1)
    data = input._data if input._trace is None else None  # (a tracer: no memory of its own)
    if type(data) is np.ndarray:
        root = root_array(data)
        if root is not data and root.dtype == data.dtype and root.flags.c_contiguous:
            own = _positions(tuple(input.shape), tuple(input.stride()), input.storage_offset())
            flat = tensor(root.reshape(-1), dtype=input.dtype)
            return flat.index_put((tensor(own.reshape(-1)),), input.reshape(-1))
    return (input if input.is_contiguous() else input.contiguous()).reshape(-1)


def _strided_index(input: Any, size: Any, stride: Any, storage_offset: Any) -> tuple:
    """The storage ``as_strided`` reads (``_storage``) and the flat indices into it."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    storage = _storage(input)
    offset = input.storage_offset() if storage_offset is None else int(storage_offset)
    idx = _positions(size, stride, offset)
    need = 1 + offset + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    if need > storage.numel():
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {offset}, and itemsize {input.dtype.itemsize} requiring a "
                           f"storage size of {need * input.dtype.itemsize} are out of bounds for "
                           f"storage of size {storage.numel() * input.dtype.itemsize}")
    from .creation import tensor

    return storage, tensor(idx, device=input.device)


@public("as_strided", method=True)
def as_strided(input: Any, size: Any, stride: Any, storage_offset: Any = None) -> Any:  # noqa: A002
    """The elements of ``input``'s storage (its base's, contiguous) at ``storage_offset + sum(i_k
    * stride_k)``: torch's values and gradients, made as a copy (writes to it do not reach
    ``input``)."""
    storage, idx = _strided_index(input, size, stride, storage_offset)
    return storage[idx.reshape(-1)].reshape(tuple(idx.shape))


@public("as_strided_scatter", method=True)
def as_strided_scatter(input: Any, src: Any, size: Any, stride: Any,  # noqa: A002
                       storage_offset: Any = None) -> Any:
    """``input`` (contiguous) with the elements ``as_strided`` selects replaced by ``src``."""
    x = input.contiguous() if input._base is not None else input
    storage, idx = _strided_index(x, size, stride, storage_offset)
    if tuple(src.shape) != tuple(idx.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(idx.shape)}")
    flat = storage.index_put((idx.reshape(-1),), src.reshape(-1).to(input.dtype))
    return flat.reshape(tuple(input.shape))


@public("combinations")
def combinations(input: Any, r: int = 2, with_replacement: bool = False) -> Any:  # noqa: A002
    """The length-``r`` combinations of a 1-D tensor's elements, one per row."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    from .creation import tensor

    if r == 0:
        return input.new_empty((0,))
    make = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = list(make(range(input.shape[0]), r))
    idx = tensor(rows if rows else np.zeros((0, r), np.int64), dtype=dtypes.int64,
                 device=input.device)
    return input[idx.reshape(-1)].reshape(len(rows), r)


@public("unravel_index")
def unravel_index(indices: Any, shape: Any) -> tuple:
    """The coordinates of flat ``indices`` in a tensor of ``shape`` (a tuple of tensors)."""
    from .creation import tensor

    if not isinstance(indices, registry.Tensor):
        indices = tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype.is_complex or \
            indices.dtype is dtypes.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got "
                        f"{indices.dtype}")
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s)
                                                                           for s in shape)
    n = int(np.prod(shape))
    rest = fn("remainder")(indices.to(dtypes.int64), n) if n else indices.to(dtypes.int64)
    out = []
    for k in range(len(shape)):
        inner = int(np.prod(shape[k + 1:]))
        out.append(fn("floor_divide")(rest, inner) % shape[k] if shape[k] else rest)
    return tuple(out)


@public("histogram", method=True)
def histogram(input: Any, bins: Any = 100, *, range: Any = None, weight: Any = None,  # noqa: A002
              density: bool = False) -> Any:
    """``(hist, bin_edges)`` of ``input``'s values (``bins`` a count or the edges)."""
    from ..tensor import _new

    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                  f"'{input.dtype._scalar_name}'")
    b = bins.numpy() if isinstance(bins, registry.Tensor) else int(bins)
    w = weight.detach().numpy() if weight is not None else None
    hist, edges = np.histogram(input.detach().numpy().reshape(-1), bins=b, range=range,
                               weights=None if w is None else w.reshape(-1), density=density)
    dt = input.dtype
    return return_type("histogram", ["hist", "bin_edges"])(
        _new(hist.astype(dt.np), dt, device=input.device),
        _new(edges.astype(dt.np), dt, device=input.device))


@public("histogramdd")
def histogramdd(input: Any, bins: Any = 10, *, range: Any = None, weight: Any = None,  # noqa: A002
                density: bool = False) -> Any:
    """``(hist, bin_edges)`` of the points ``input[..., :]`` (the last dim is the coordinate):
    ``bins`` a count, one count per dim, or one tensor of edges per dim; ``range`` flat
    ``[min0, max0, min1, max1, ...]``."""
    from ..tensor import _new

    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                  f"'{input.dtype._scalar_name}'")
    d = input.shape[-1]
    pts = input.detach().numpy().reshape(-1, d)
    if isinstance(bins, (list, tuple)):
        b = [v.numpy() if isinstance(v, registry.Tensor) else int(v) for v in bins]
    else:
        b = int(bins)
    rng = None if range is None else [(range[2 * i], range[2 * i + 1]) for i in builtins.range(d)]
    w = None if weight is None else weight.detach().numpy().reshape(-1)
    hist, edges = np.histogramdd(pts, bins=b, range=rng, weights=w, density=density)
    dt = input.dtype
    return return_type("histogramdd", ["hist", "bin_edges"])(
        _new(hist.astype(dt.np), dt, device=input.device),
        tuple(_new(e.astype(dt.np), dt, device=input.device) for e in edges))


@public("index_reduce", method=True, inplace=True)
def index_reduce(input: Any, dim: int, index: Any, source: Any, reduce: str, *,  # noqa: A002
                 include_self: bool = True) -> Any:
    """``input`` with ``source``'s slices reduced (``prod``, ``mean``, ``amax``, ``amin``) into
    the slices ``index`` names along ``dim``."""
    from ._shape import wrap_dim

    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    from .. import _config

    _config.warn_once("index_reduce", "index_reduce() is in beta and the API may change at any "
                      "time.")
    d = wrap_dim(dim, max(input.ndim, 1))
    shape = [1] * source.ndim
    if source.ndim:
        shape[d] = index.numel()
    idx = index.reshape(shape).expand(tuple(source.shape)) if source.ndim else index.reshape(())
    return input.scatter_reduce(d, idx, source, reduce, include_self=include_self)


@public("conj_physical", method=True, inplace=True)
def conj_physical(input: Any) -> Any:  # noqa: A002
    """The complex conjugate (a copy of real input)."""
    return input.conj() if input.dtype.is_complex else input.clone()


@public("complex")
def complex(real: Any, imag: Any) -> Any:  # noqa: A001
    """``real + 1j * imag`` from two float tensors of one dtype."""
    _check_complex_parts(real, imag)
    return real + imag * 1j


def _check_complex_parts(first: Any, second: Any) -> None:
    for t in (first, second):
        if t.dtype not in (dtypes.float32, dtypes.float64, dtypes.float16):
            raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                               f"{first.dtype._scalar_name} and "
                               f"{second.dtype._scalar_name}")
    if first.dtype is not second.dtype:
        raise RuntimeError(f"Expected object of scalar type {first.dtype._scalar_name} but got "
                           f"scalar type {second.dtype._scalar_name} for second argument")


@public("polar")
def polar(abs: Any, angle: Any) -> Any:  # noqa: A002
    """``abs * (cos(angle) + 1j * sin(angle))``."""
    _check_complex_parts(abs, angle)
    if abs.dtype is dtypes.float16:  # (torch's complex32 has no polar kernel)
        raise NotImplementedError("\"polar_cpu\" not implemented for 'Half'")
    return complex(abs * angle.cos(), abs * angle.sin())


@public("rsub")
def rsub(input: Any, other: Any, *, alpha: Any = 1) -> Any:  # noqa: A002
    """``other - alpha * input``."""
    if not isinstance(input, registry.Tensor):
        return fn("sub")(other, input, alpha=alpha) if isinstance(other, registry.Tensor) else \
            other - alpha * input
    if isinstance(other, registry.Tensor):
        return fn("sub")(other, input, alpha=alpha)
    if alpha == 1 and alpha is not True:
        return input.__rsub__(other)
    return fn("sub")(fn("full_like")(input, other), input, alpha=alpha)
