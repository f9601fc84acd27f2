"""``SparseTensor``: a ``Tensor`` whose data is a sparse storage (``COO``, or ``CSR`` for the
compressed layouts CSR, CSC, BSR and BSC).

It is a subclass only so that methods can differ (``indices()``, ``to_dense()``, printing,
torch's errors for what a sparse tensor cannot do); ``isinstance(S, jitgrad.Tensor)`` holds and
``type(S)`` never takes the dispatcher's dense fast lanes. What makes a tensor sparse is its
``_data``: the autograd engine may hand a sparse gradient around as a plain ``Tensor`` on a
storage, which ``as_sparse`` turns back into a ``SparseTensor``. The ops are attached by
``jitgrad.sparse._ops``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _config, dtypes
from .._tensor_str import PRINT_OPTS, tensor_str
from ..ops import registry
from ..ops.registry import Tensor
from ..ops.surface24_info import layout
from ..tensor import _make
from ._storage import COO, CSR
from .._torch_function import _disabled_torch_function_impl

sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
LAYOUTS = {"csr": sparse_csr, "csc": sparse_csc, "bsr": sparse_bsr, "bsc": sparse_bsc}
STORAGES = (COO, CSR)

_new_object = object.__new__


def backend(t: Any) -> str:
    """torch's dispatch key name of a sparse tensor's layout."""
    return "SparseCsrCPU" if type(t._data) is CSR else "SparseCPU"


def layout_name(t: Any) -> str:
    """torch's name of a tensor's layout in its errors (``Sparse``, ``SparseCsc``, ...)."""
    d = t._data
    if type(d) is CSR:
        return "Sparse" + d.layout.capitalize()
    return "Sparse" if type(d) is COO else "Strided"


class SparseTensor(Tensor):
    """A sparse tensor: COO (``indices`` and ``values``) or compressed: CSR / BSR
    (``crow_indices``, ``col_indices`` and ``values``), CSC / BSC (``ccol_indices``,
    ``row_indices`` and ``values``), as torch's ``layout=torch.sparse_coo`` ... ``sparse_bsc``."""

    # (no part in the __torch_function__ protocol, as torch's own subclasses)
    __torch_function__ = _disabled_torch_function_impl

    __slots__ = ()

    # ------------------------------------------------------------------ layout
    @property
    def layout(self) -> layout:
        """``jitgrad.sparse_coo``, ``sparse_csr``, ``sparse_csc``, ``sparse_bsr`` or
        ``sparse_bsc``."""
        d = self._data
        return LAYOUTS[d.layout] if type(d) is CSR else sparse_coo

    @property
    def is_sparse(self) -> bool:
        """Whether the layout is COO (torch's ``is_sparse``)."""
        return type(self._data) is COO

    @property
    def is_sparse_csr(self) -> bool:
        return type(self._data) is CSR and self._data.layout == "csr"

    def is_contiguous(self, memory_format: Any = None) -> bool:
        return False

    def stride(self, dim: int | None = None):
        raise RuntimeError("Sparse tensors do not have strides")

    def contiguous(self, memory_format: Any = None) -> SparseTensor:
        return self

    def type(self, dtype: Any = None) -> Any:
        if dtype is None:
            return f"jitgrad.sparse.{self._dtype._legacy}"
        return self.to(dtype)

    def reshape(self, *shape: Any) -> Any:
        raise RuntimeError("reshape is not implemented for sparse tensors")

    # ------------------------------------------------------------------ inspection
    def _nnz(self) -> int:
        """The number of stored entries."""
        return self._data.nnz

    def sparse_dim(self) -> int:
        return self._data.sparse_dim if type(self._data) is COO else 2

    def dense_dim(self) -> int:
        return self._data.dense_dim if type(self._data) is COO else 0

    def _require(self, name: str, kind: type) -> Any:
        if type(self._data) is not kind:
            want = "sparse coordinate" if kind is COO else "sparse row compressed"
            raise RuntimeError(f"{name} expected {want} tensor layout but got "
                               f"{layout_name(self)}")
        return self._data

    def is_coalesced(self) -> bool:
        """Whether the indices are unique and sorted (COO)."""
        return self._require("is_coalesced", COO).coalesced

    def _indices(self) -> Tensor:
        """The indices, ``(sparse_dim, nnz)`` int64, as stored (no gradient)."""
        return _make(self._require("_indices", COO).indices, dtypes.int64)

    def indices(self) -> Tensor:
        """The indices of a coalesced tensor (torch refuses an uncoalesced one)."""
        data = self._require("indices", COO)
        if not data.coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return _make(data.indices, dtypes.int64)

    def _values(self) -> Tensor:
        """The values as stored (no gradient)."""
        return _make(self._data.values, self._dtype)

    def crow_indices(self) -> Tensor:
        return _make(self._compressed("crow_indices", True).crow, dtypes.int64)

    def col_indices(self) -> Tensor:
        return _make(self._compressed("col_indices", True).col, dtypes.int64)

    def ccol_indices(self) -> Tensor:
        return _make(self._compressed("ccol_indices", False).crow, dtypes.int64)

    def row_indices(self) -> Tensor:
        return _make(self._compressed("row_indices", False).col, dtypes.int64)

    def _compressed(self, name: str, rowwise: bool) -> Any:
        d = self._data
        if type(d) is not CSR or d.rowwise != rowwise:
            want = "row" if rowwise else "column"
            raise RuntimeError(f"{name} expected sparse {want} compressed tensor layout but got "
                               f"{layout_name(self)}")
        return d

    # ------------------------------------------------------------------ data access
    def numpy(self, *, force: bool = False) -> np.ndarray:
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() "
                        "first.")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.numpy()

    def tolist(self) -> Any:
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def item(self) -> Any:
        if self.numel() != 1:
            raise RuntimeError(
                f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self._data.to_dense().reshape(()).item()

    def detach(self) -> SparseTensor:
        """The same storage outside the graph."""
        t = make_sparse(self._data, self._dtype)
        t._vc = self._vc
        return t

    @property
    def data(self) -> SparseTensor:
        return make_sparse(self._data, self._dtype)

    @data.setter
    def data(self, value: Tensor) -> None:
        self._data = value._data
        self._dtype = value._dtype

    @property
    def grad(self) -> Tensor | None:
        """The gradient: sparse, on this tensor's (coalesced) pattern for the sparse ops, as
        torch's. (Where a dense gradient met a sparse one in the engine, their sum is dense:
        such a gradient is put back on the pattern here, once.)"""
        g = self._grad
        if g is None:
            return None
        g = as_sparse(g)
        if type(g._data) not in STORAGES and not g.requires_grad:
            d = self._data
            pattern = d.coalesce() if type(d) is COO else d
            idx = tuple(pattern.coo_indices())
            g = self._grad = make_sparse(pattern.with_values(g._data[idx]), g._dtype)
        return g

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        Tensor.grad.fset(self, value)

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    def register_hook(self, hook: Any) -> Any:
        """Registers ``hook(grad)``; the gradient it sees is sparse, as torch's."""
        def sparse_hook(grad: Any) -> Any:
            return hook(as_sparse(grad))

        return Tensor.register_hook(self, sparse_hook)

    def __reduce_ex__(self, protocol: int):
        d = self._data
        parts = (d.indices, d.values, d.shape, d.coalesced) if type(d) is COO else \
            (d.crow, d.col, d.values, d.shape, d.layout)
        return (_rebuild, (type(d).__name__, parts, self._dtype.name, self._requires_grad))

    def __repr__(self) -> str:
        return sparse_repr(self)


def _rebuild(kind: str, parts: tuple, dtype_name: str, requires_grad: bool) -> SparseTensor:
    storage = COO(*parts) if kind == "COO" else CSR(*parts)
    t = make_sparse(storage, getattr(dtypes, dtype_name))
    t._requires_grad = requires_grad
    return t


def make_sparse(storage: Any, dt: dtypes.dtype, grad_fn: Any = None) -> SparseTensor:
    """A ``SparseTensor`` on ``storage`` (the ``_make`` of sparse tensors). The first
    compressed one gives torch's once-per-process warning that the layout is in beta."""
    registry.sparse_live = True  # (the dispatcher checks arguments from now on)
    if type(storage) is CSR:
        _config.warn_once("sparse_beta", f"Sparse {storage.layout.upper()} tensor support is in "
                          "beta state. If you miss a functionality in the sparse tensor support, "
                          "please submit a feature request to "
                          "https://github.com/pytorch/pytorch/issues.")
    t = _new_object(SparseTensor)
    t._data = storage
    t._dtype = dt
    t._vc = [0]
    t._grad_fn = grad_fn
    return t


def as_sparse(t: Any) -> Any:
    """``t`` as a ``SparseTensor`` if its data is a sparse storage (a plain ``Tensor`` the
    engine wrapped around a sparse gradient), a plain ``Tensor`` if it is an array; else
    ``t``."""
    kind = type(t)
    if kind is Tensor and type(t._data) in STORAGES:
        t.__class__ = SparseTensor
    elif kind is SparseTensor and type(t._data) not in STORAGES:  # (a dense sum landed in it)
        t.__class__ = Tensor
    return t


# ---------------------------------------------------------------- printing


def _body(data: np.ndarray, dt: dtypes.dtype, indent: int) -> str:
    text = tensor_str(data, dt, indent)
    if data.size == 0:
        text += f", size={tuple(data.shape)}"
    return text


def _suffixes(text: str, suffixes: list, indent: int, force_newline: bool) -> str:
    parts = [text]
    last = len(text) - text.rfind("\n") + 1
    for s in suffixes:
        if force_newline or last + len(s) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + s)
            last = indent + len(s)
            force_newline = False
        else:
            parts.append(", " + s)
            last += len(s) + 2
    return "".join(parts) + ")"


def sparse_repr(t: SparseTensor) -> str:
    """torch's repr of a sparse tensor, with jitgrad's names."""
    d = t._data
    dt = t._dtype
    indent = len("tensor(")
    suffixes = [f"size={d.shape}", f"nnz={d.nnz}"]
    default = dtypes.get_default_dtype()
    default_complex = dtypes.complex128 if default is dtypes.float64 else dtypes.complex64
    if dt not in (default, default_complex, dtypes.int64, dtypes.bool):
        suffixes.append(f"dtype={dt!r}")
    if type(d) is COO:
        text = ("indices=tensor(" + _body(d.indices, dtypes.int64, indent + 15) + "),\n"
                + " " * indent + "values=tensor(" + _body(d.values, dt, indent + 14) + ")")
    else:
        major, minor = ("crow_indices", "col_indices") if d.rowwise else \
            ("ccol_indices", "row_indices")
        text = (f"{major}=tensor(" + _body(d.crow, dtypes.int64, indent + len(major) + 8)
                + "),\n" + " " * indent + f"{minor}=tensor("
                + _body(d.col, dtypes.int64, indent + len(minor) + 8)
                + "),\n" + " " * indent + "values=tensor(" + _body(d.values, dt, indent + 14)
                + ")")
    suffixes.append(f"layout={t.layout!r}")
    if t._grad_fn is not None:
        suffixes.append(f"grad_fn=<{t._grad_fn.name()}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return _suffixes("tensor(" + text, suffixes, indent, type(d) is COO)


# ---------------------------------------------------------------- saving


def sparse_parts(t: SparseTensor) -> tuple[dict, dict]:
    """What ``jitgrad.save`` writes of a sparse tensor: (a JSON-able description, its arrays)."""
    d = t._data
    if type(d) is COO:
        arrays = {"indices": d.indices, "values": d.values}
        meta = {"layout": "coo", "coalesced": bool(d.coalesced)}
    else:
        arrays = {"crow": d.crow, "col": d.col, "values": d.values}
        meta = {"layout": d.layout}
    meta.update(size=list(d.shape), dtype=t._dtype.name, arrays=list(arrays))
    return meta, arrays


def sparse_from_parts(meta: dict, arrays: dict) -> SparseTensor:
    """The sparse tensor that ``sparse_parts`` described (``jitgrad.load``)."""
    if meta["layout"] == "coo":
        storage = COO(arrays["indices"], arrays["values"], tuple(meta["size"]),
                      bool(meta["coalesced"]))
    else:
        storage = CSR(arrays["crow"], arrays["col"], arrays["values"], tuple(meta["size"]),
                      meta["layout"])
    return make_sparse(storage, getattr(dtypes, meta["dtype"]))
