"""Sparse tensors (torch.sparse's common surface): COO and the compressed layouts (CSR, CSC,
BSR, BSC; ``_compressed``), their constructors and the ops that scripts use on them
(``sparse.mm`` / ``spmm``, ``sparse.sum``, ``sparse.softmax``, ``S + S``, ``S * c``, ``S.t()``,
``to_dense``), with gradients; ``embedding(..., sparse=True)``'s sparse weight gradient
(``_embedding``).

A sparse tensor stores its indices and values (``_storage``); it is a ``jitgrad.Tensor``
(``SparseTensor``, ``_tensor``) whose ops are a few primitives with VJP rules plus compositions
of the values with dense ops (``_ops``). Dense ops called on it run their sparse version or
raise torch's ``NotImplementedError`` (``_dispatch``).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .. import dtypes
from ..ops.arg_errors import invalid_combination
from ..ops.surface24 import fn as _fn
from ..ops.registry import Tensor
from . import _dispatch
from ._ops import (
    FROM_VALUES,
    _pattern,
    coalesce,
    from_values,
    log_softmax,
    mask as _mask,
    softmax,
    spmm,
    to_dense,
    to_sparse,
    to_sparse_csr,
    values,
    run,
)
from ._ops import sparse_sum as sum  # noqa: A004 - torch's name
from ._compressed import (compressed_tensor, layout_key, to_sparse_bsc, to_sparse_bsr,
                          to_sparse_csc)
from ._compressed import to_sparse as _to_sparse_any
from ._invariants import check_sparse_tensor_invariants, warn_if_implicit
from ._storage import COO, CSR
from ._tensor import (SparseTensor, as_sparse, sparse_bsc, sparse_bsr, sparse_coo, sparse_csc,
                      sparse_csr, sparse_from_parts, sparse_parts)

__all__ = ["mm", "addmm", "sum", "softmax", "log_softmax", "spmm", "smm", "sparse_coo_tensor",
           "sparse_csr_tensor", "sparse_csc_tensor", "sparse_bsr_tensor", "sparse_bsc_tensor",
           "sparse_compressed_tensor", "SparseTensor", "sparse_coo", "sparse_csr", "sparse_csc",
           "sparse_bsr", "sparse_bsc", "sparse_parts",
           "sparse_from_parts", "FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor",
           "IntTensor", "ShortTensor", "CharTensor", "ByteTensor",
           "check_sparse_tensor_invariants"]


def _int_array(x: Any, what: str) -> np.ndarray:
    arr = np.asarray(x._data if isinstance(x, Tensor) else x)
    if arr.size == 0:
        return arr.astype(np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        raise RuntimeError(f"{what} must be an int64 tensor")
    return arr.astype(np.int64)


def _values(values: Any, dtype: Any) -> Tensor:
    v = values if isinstance(values, Tensor) else _fn("tensor")(values, dtype=dtype)
    if dtype is not None and v.dtype is not dtype:
        v = v.to(dtype)
    if v.ndim == 0:
        raise RuntimeError("values must be at least 1-dimensional")
    return v


def _check_device(device: Any) -> None:
    if device is not None and str(device).split(":")[0] != "cpu":
        raise RuntimeError(f"jitgrad's sparse tensors are CPU tensors, got device={device}")


def _finish(out: SparseTensor, requires_grad: bool) -> SparseTensor:
    if requires_grad:  # a leaf that requires grad (whatever made its values)
        out = out.detach()
        out._vc = [0]
        out.requires_grad_(True)
    return out


def sparse_coo_tensor(indices: Any = None, values: Any = None, size: Any = None, *,
                      dtype: Any = None,
                      device: Any = None, pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants: bool | None = None,
                      is_coalesced: bool | None = None) -> SparseTensor:
    """A sparse COO tensor with ``values`` at ``indices`` (torch.sparse_coo_tensor).

    ``sparse_coo_tensor(size)`` (or ``size=``, without indices and values) is an empty
    tensor of that size, as torch's second signature.

    Args:
        indices: int ``(sparse_dim, nnz)``: the coordinates of each value.
        values: ``(nnz, *dense_size)``: a tensor (gradients flow back to it) or data.
        size: the tensor's size; by default the smallest that holds the indices.
        dtype: the values' dtype (default: ``values``').
        device: only the CPU.
        requires_grad: make the result a leaf that requires grad.
        check_invariants: indices are always checked against ``size``.
        is_coalesced: promise that the indices are unique and sorted.

    Returns:
        The sparse tensor (``layout=jitgrad.sparse_coo``).
    """
    warn_if_implicit(check_invariants)
    if values is None:  # (torch's sparse_coo_tensor(size, *, dtype, device, requires_grad))
        shape = size if indices is None else indices
        if shape is None or indices is not None and size is not None:
            raise _invalid_coo_call(indices, size)
        dt = dtype or dtypes.get_default_dtype()
        return _coo_tensor(np.zeros((len(shape), 0), np.int64), np.zeros(0, dt.np), shape, dt,
                           device, requires_grad, None)
    return _coo_tensor(indices, values, size, dtype, device, requires_grad, is_coalesced)


_COO_OPTS = ("*, jitgrad.dtype dtype = None, jitgrad.device device = None, bool pin_memory = "
             "False, bool requires_grad = False, bool check_invariants = None, bool "
             "is_coalesced = None")


def _invalid_coo_call(indices: Any, size: Any) -> TypeError:
    """torch's argument-parser error for a call that fits none of its three signatures."""
    return invalid_combination(
        "sparse_coo_tensor", () if indices is None else (indices,),
        {} if size is None else {"size": size},
        (f"object indices, object values, {_COO_OPTS}",
         f"object indices, object values, tuple of ints size, {_COO_OPTS}",
         "tuple of ints size, *, jitgrad.dtype dtype = None, jitgrad.device device = None, "
         "bool requires_grad = False, bool check_invariants = None"))


def _coo_tensor(indices: Any, values: Any, size: Any, dtype: Any, device: Any,
                requires_grad: bool, is_coalesced: bool | None) -> SparseTensor:
    """``sparse_coo_tensor`` without the warning about the invariant checks (jitgrad's own
    uses, as torch's C++ constructors, do not ask for the checks)."""
    _check_device(device)
    idx = _int_array(indices, "indices")
    if idx.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    v = _values(values, dtype)
    sd, nnz = idx.shape
    if v.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{nnz}, nnz from values: {v.shape[0]}")
    dense = tuple(v.shape[1:])
    if size is None:
        size = tuple(int(m) + 1 for m in idx.max(axis=1)) if nnz else (0,) * sd
        size = size + dense
    size = tuple(int(s) for s in size)
    if len(size) != sd + len(dense):
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) "
                           f"= {len(size)}, sparse_dim = {sd}, dense_dim = {len(dense)}")
    if size[sd:] != dense:
        raise RuntimeError(f"values has incorrect size, expected {[nnz, *size[sd:]]}, got "
                           f"{list(v.shape)}")
    if nnz:
        low, high = idx.min(axis=1), idx.max(axis=1)
        for d in range(sd):
            if low[d] < 0:
                raise RuntimeError(f"found negative index {low[d]} for dim {d}")
            if high[d] >= size[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                                   f"{size[d]} but found index {high[d]}")
    pattern = COO(idx, v._data, size, coalesced=bool(is_coalesced))
    return _finish(run(FROM_VALUES, v, like=pattern), requires_grad)


def sparse_csr_tensor(crow_indices: Any, col_indices: Any, values: Any, size: Any = None, *,
                      dtype: Any = None, device: Any = None, pin_memory: bool = False,
                      requires_grad: bool = False,
                      check_invariants: bool | None = None) -> SparseTensor:
    """A sparse CSR matrix (torch.sparse_csr_tensor): row ``i``'s entries are
    ``col_indices[crow_indices[i]:crow_indices[i + 1]]`` with those ``values``."""
    warn_if_implicit(check_invariants)
    return _compressed_ctor("csr", crow_indices, col_indices, values, size, dtype, device,
                            requires_grad)


def sparse_csc_tensor(ccol_indices: Any, row_indices: Any, values: Any, size: Any = None, *,
                      dtype: Any = None, device: Any = None, pin_memory: bool = False,
                      requires_grad: bool = False,
                      check_invariants: bool | None = None) -> SparseTensor:
    """A sparse CSC matrix (torch.sparse_csc_tensor): column ``j``'s entries are
    ``row_indices[ccol_indices[j]:ccol_indices[j + 1]]`` with those ``values``."""
    warn_if_implicit(check_invariants)
    return _compressed_ctor("csc", ccol_indices, row_indices, values, size, dtype, device,
                            requires_grad)


def sparse_bsr_tensor(crow_indices: Any, col_indices: Any, values: Any, size: Any = None, *,
                      dtype: Any = None, device: Any = None, pin_memory: bool = False,
                      requires_grad: bool = False,
                      check_invariants: bool | None = None) -> SparseTensor:
    """A block-sparse BSR matrix (torch.sparse_bsr_tensor): CSR of ``values``' ``(nnz, bh,
    bw)`` blocks, ``crow_indices`` / ``col_indices`` counting blocks."""
    warn_if_implicit(check_invariants)
    return _compressed_ctor("bsr", crow_indices, col_indices, values, size, dtype, device,
                            requires_grad)


def sparse_bsc_tensor(ccol_indices: Any, row_indices: Any, values: Any, size: Any = None, *,
                      dtype: Any = None, device: Any = None, pin_memory: bool = False,
                      requires_grad: bool = False,
                      check_invariants: bool | None = None) -> SparseTensor:
    """A block-sparse BSC matrix (torch.sparse_bsc_tensor): CSC of ``(nnz, bh, bw)`` blocks."""
    warn_if_implicit(check_invariants)
    return _compressed_ctor("bsc", ccol_indices, row_indices, values, size, dtype, device,
                            requires_grad)


def sparse_compressed_tensor(compressed_indices: Any, plain_indices: Any, values: Any,
                             size: Any = None, *, dtype: Any = None, layout: Any = None,
                             device: Any = None, pin_memory: bool = False,
                             requires_grad: bool = False,
                             check_invariants: bool | None = None) -> SparseTensor:
    """A compressed sparse matrix in ``layout`` (``jitgrad.sparse_csr``, ``sparse_csc``,
    ``sparse_bsr`` or ``sparse_bsc``; torch.sparse_compressed_tensor)."""
    warn_if_implicit(check_invariants)
    key = layout_key(layout)
    if key is None:
        got = "none" if layout is None else "Sparse" if layout is sparse_coo else \
            str(layout).split(".")[-1].capitalize()
        raise RuntimeError(f"sparse_compressed_tensor expected sparse compressed tensor layout "
                           f"but got {got}")
    return _compressed_ctor(key, compressed_indices, plain_indices, values, size, dtype, device,
                            requires_grad)


def _compressed_ctor(key: str, compressed: Any, plain: Any, values: Any, size: Any, dtype: Any,
                     device: Any, requires_grad: bool) -> SparseTensor:
    _check_device(device)
    major, minor = ("crow", "col") if key in ("csr", "bsr") else ("ccol", "row")
    ci = _int_array(compressed, f"{major}_indices").reshape(-1)
    pi = _int_array(plain, f"{minor}_indices").reshape(-1)
    return _finish(compressed_tensor(key, ci, pi, _values(values, dtype), size), requires_grad)


def mm(mat1: Any, mat2: Any, reduce: str | None = None) -> Any:
    """``mat1 @ mat2`` with a sparse operand (torch.sparse.mm): sparse @ dense is dense, and its
    gradient w.r.t. the sparse ``mat1`` is sparse on ``mat1``'s pattern."""
    if reduce is not None and reduce != "sum":
        raise NotImplementedError(f"sparse.mm: reduce={reduce!r} is not supported")
    return spmm(mat1, mat2)


def addmm(mat: Any, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    """``beta * mat + alpha * (mat1 @ mat2)`` with sparse ``mat1`` (torch.sparse.addmm)."""
    prod = spmm(mat1, mat2)
    if alpha != 1:
        prod = prod * alpha
    return prod + (mat if beta == 1 else mat * beta)


def smm(input: Any, mat2: Any) -> SparseTensor:  # noqa: A002
    """``input @ mat2`` for sparse ``input`` and dense ``mat2``, as a sparse tensor."""
    return spmm(input, mat2).to_sparse()


def _legacy(name: str, dt: Any) -> Any:
    def ctor(*args: Any, device: Any = None) -> SparseTensor:
        if len(args) >= 2 and not isinstance(args[0], int):  # (indices, values[, size])
            warnings.warn(
                "jitgrad.sparse.SparseTensor(indices, values, shape, *, device=) is deprecated.  "
                "Please use jitgrad.sparse_coo_tensor(indices, values, shape, dtype=, device=).",
                UserWarning, stacklevel=2)
            return _coo_tensor(args[0], args[1], args[2] if len(args) > 2 else None, dt,
                               device, False, None)
        sizes = tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) \
            else args
        warnings.warn("jitgrad.sparse.SparseTensor(shape, *, device=) is deprecated.  Please use "
                      "jitgrad.sparse_coo_tensor(shape, dtype=, device=).", UserWarning,
                      stacklevel=2)
        return _coo_tensor(np.zeros((len(sizes), 0), np.int64), np.zeros(0, dt.np), sizes, dt,
                           device, False, None)

    ctor.__name__ = ctor.__qualname__ = name
    ctor.__doc__ = f"torch's legacy ``torch.sparse.{name}``: a sparse COO tensor of that dtype."
    return ctor


FloatTensor = _legacy("FloatTensor", dtypes.float32)
DoubleTensor = _legacy("DoubleTensor", dtypes.float64)
HalfTensor = _legacy("HalfTensor", dtypes.float16)
LongTensor = _legacy("LongTensor", dtypes.int64)
IntTensor = _legacy("IntTensor", dtypes.int32)
ShortTensor = _legacy("ShortTensor", dtypes.int16)
CharTensor = _legacy("CharTensor", dtypes.int8)
ByteTensor = _legacy("ByteTensor", dtypes.uint8)


def for_gradcheck(func: Any, inputs: Any) -> tuple:
    """``(func, inputs)`` as ``gradcheck`` checks them when sparse tensors take part: each
    sparse input is replaced by its (coalesced) values, a dense tensor requiring grad as the
    input does, which the function puts back on the input's pattern (torch's
    ``masked=True``: the unspecified elements are not perturbed); sparse outputs are compared
    as dense tensors. Without a sparse tensor, ``func`` and ``inputs`` as given."""
    from ..ops import registry

    if not registry.sparse_live:
        return func, inputs
    tupled = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    patterns = []
    new_inputs = []
    for x in tupled:
        if isinstance(x, SparseTensor):
            c = coalesce(x.detach()) if x.is_sparse else x.detach()
            v = c._values().detach().clone()
            patterns.append(c._data)
            new_inputs.append(v.requires_grad_(x.requires_grad))
        else:
            patterns.append(None)
            new_inputs.append(x)

    def dense(out: Any) -> Any:
        if isinstance(out, SparseTensor):
            return to_dense(out)
        if isinstance(out, (tuple, list)) and any(isinstance(o, SparseTensor) for o in out):
            return tuple(dense(o) for o in out)
        return out

    def checked(*args: Any) -> Any:
        return dense(func(*[from_values(a, p) if p is not None else a
                            for a, p in zip(args, patterns)]))

    if all(p is None for p in patterns):  # (dense inputs: as given; sparse outputs dense)
        return checked, inputs
    return checked, tuple(new_inputs) if isinstance(inputs, (tuple, list)) else new_inputs[0]


def sparse_mask(self: Any, mask: SparseTensor) -> SparseTensor:
    """``self``'s values at the indices of sparse ``mask`` (a sparse tensor with ``mask``'s
    coalesced pattern; differentiable w.r.t. ``self``)."""
    if not isinstance(mask, SparseTensor):
        raise RuntimeError("sparse_mask: expected mask to be a sparse COO tensor")
    if tuple(mask.shape) != tuple(self.shape):
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size "
                           f"{list(self.shape)} but mask has size {list(mask.shape)}")
    return _mask(self, _pattern(mask))


def _to_csr(self: Any, dense_dim: Any = None) -> SparseTensor:
    """``to_sparse_csr``: a blocked layout refuses, as torch's."""
    d = self._data
    if type(d) is CSR and d.blocksize is not None:
        raise RuntimeError(f"sparse_compressed_to_sparse_csr: expected SparseCsr or SparseCsc "
                           f"layout but got Sparse{d.layout.capitalize()}")
    return to_sparse_csr(self)


def _install() -> None:
    """The sparse methods on SparseTensor and the conversions on dense tensors."""
    conversions = (("to_sparse", _to_sparse_any), ("to_sparse_coo", lambda self: to_sparse(self)),
                   ("to_sparse_csr", _to_csr), ("to_sparse_csc", to_sparse_csc),
                   ("to_sparse_bsr", to_sparse_bsr), ("to_sparse_bsc", to_sparse_bsc),
                   ("sparse_mask", sparse_mask))
    for name, method in conversions + (("to_dense", to_dense), ("coalesce", coalesce),
                                       ("values", values)):
        setattr(SparseTensor, name, method)
    for name, method in conversions:
        setattr(Tensor, name, method)
    _dispatch.install()


_install()
del _install
