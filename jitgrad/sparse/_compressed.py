"""The compressed layouts: CSR, CSC, BSR and BSC (torch's ``sparse_compressed_tensor`` family).

One storage (``_storage.CSR``) holds them all: CSC is CSR along the other axis and BSR / BSC
are CSR / CSC of blocks, so every op reaches them through ``coo_indices``. Here: their
constructors (checked as torch's ``check_invariants=True`` checks, always) and the
conversions ``to_sparse_csc`` / ``to_sparse_bsr`` / ``to_sparse_bsc``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops.registry import Tensor
from ._ops import FROM_VALUES, TO_SPARSE, _is_sparse, _op, convert, run
from ._ops import to_sparse as _to_sparse
from ._storage import CSR
from ._tensor import LAYOUTS, SparseTensor, as_sparse, layout_name

_NAMES = {"csr": ("crow_indices", "col_indices"), "csc": ("ccol_indices", "row_indices"),
          "bsr": ("crow_indices", "col_indices"), "bsc": ("ccol_indices", "row_indices")}


def layout_key(layout: Any) -> str | None:
    """``"csr"`` ... ``"bsc"`` for a compressed layout object, else None."""
    for key, obj in LAYOUTS.items():
        if layout is obj:
            return key
    return None


def compressed_tensor(key: str, compressed: np.ndarray, plain: np.ndarray, v: Tensor,
                      size: Any) -> SparseTensor:
    """A compressed tensor of layout ``key`` on checked indices (values ``v``, a tensor)."""
    major, minor = _NAMES[key]
    rowwise = key in ("csr", "bsr")
    blocked = key in ("bsr", "bsc")
    if blocked and v.ndim != 3:
        if v.ndim < 3:
            raise RuntimeError(f"values must have dimensionality > sum of batch and block "
                               f"dimensionalities (=0 + 2) but got {v.ndim}")
        raise RuntimeError(f"sparse_{key}_tensor: only 3-d values (no batch or dense dims) are "
                           f"supported")
    if not blocked and v.ndim != 1:
        raise RuntimeError(f"sparse_{key}_tensor: only 1-d values (no batch or dense dims) are "
                           f"supported")
    bh, bw = v.shape[1:3] if blocked else (1, 1)
    if compressed.size == 0 or compressed[0] != 0:
        raise RuntimeError(f"`{major}[..., 0] == 0` is not satisfied.")
    if plain.size != v.shape[0]:
        raise RuntimeError(f"{minor}.shape[-1] must be equal to nnz (={v.shape[0]}) as defined "
                           f"by values.shape[0], but got {plain.size}")
    if size is None:
        n_minor = int(plain.max()) + 1 if plain.size else 0
        blocks = (compressed.size - 1, n_minor) if rowwise else (n_minor, compressed.size - 1)
        size = (blocks[0] * bh, blocks[1] * bw)
    size = tuple(int(s) for s in size)
    if len(size) != 2:
        raise RuntimeError(f"sparse_{key}_tensor: only 2-d tensors (no batch or dense dims) "
                           f"are supported, got size {list(size)}")
    for d, b in ((0, bh), (1, bw)):
        if size[d] % b:
            raise RuntimeError(f"tensor shape[{d}] (={size[d]}) must be divisible with "
                               f"blocksize[{d}] (={b}) as defined by values shape")
    n_major, n_minor = (size[0] // bh, size[1] // bw) if rowwise else \
        (size[1] // bw, size[0] // bh)
    other = "ncols" if rowwise else "nrows"
    if compressed.size != n_major + 1:
        what = "rows" if rowwise else "columns"
        raise RuntimeError(f"{major}.shape[-1] must be equal to the number of {what} + 1 "
                           f"(={n_major + 1}), but got {compressed.size}")
    if compressed[-1] != plain.size:
        raise RuntimeError(f"`{major}[..., -1] == nnz` is not satisfied.")
    if np.any(np.diff(compressed) < 0) or np.any(np.diff(compressed) > n_minor):
        raise RuntimeError(f"`0 <= {major}[..., 1:] - {major}[..., :-1] <= {other}` is not "
                           f"satisfied.")
    if plain.size and (plain.min() < 0 or plain.max() >= n_minor):
        raise RuntimeError(f"`0 <= {minor} < {other}` is not satisfied.")
    pattern = CSR(compressed, plain, v._data, size, key)
    return run(FROM_VALUES, v, like=pattern)


def _blocksize(blocksize: Any, name: str) -> tuple[int, int]:
    if blocksize is None:
        raise TypeError(f'{name}() missing 1 required positional arguments: "blocksize"')
    if isinstance(blocksize, int):
        return (blocksize, blocksize)
    bs = tuple(int(b) for b in blocksize)
    if len(bs) != 2:
        raise RuntimeError(f"{name}: blocksize needs to be a tuple of size 2, but got "
                           f"{len(bs)}")
    return bs


def to_compressed(t: Any, key: str, blocksize: Any = None) -> SparseTensor:
    """``t`` (dense or sparse, 2-d) in compressed layout ``key`` (differentiable)."""
    name = f"to_sparse_{key}"
    bs = _blocksize(blocksize, name) if key in ("bsr", "bsc") else None
    if t.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got "
                         f"{-2 if bs else 1})")
    if t.ndim != 2:
        raise RuntimeError(f"{name}: batched (more than 2-d) compressed layouts are not "
                           f"supported")
    sparse = _is_sparse(t)
    d = t._data
    if sparse and type(d) is CSR:
        if d.layout == key and d.blocksize == bs:
            return t
        if d.blocksize is not None:
            if bs is None:
                raise RuntimeError(f"sparse_compressed_to_sparse_{key}: expected SparseCsr or "
                                   f"SparseCsc layout but got {layout_name(t)}")
            if d.blocksize != bs:
                where = name if d.layout == key else f"sparse_compressed_to_sparse_{key}"
                raise RuntimeError(f"{where}: conversion from {layout_name(t)} to Sparse"
                                   f"{key.capitalize()} with blocksize changed from "
                                   f"{list(d.blocksize)} to {list(bs)} is not supported")
    if bs is not None and (t.shape[0] % bs[0] or t.shape[1] % bs[1]):
        where = "dense_to_sparse" if not sparse else \
            "coo_to_sparse" if type(d) is not CSR else "sparse_compressed_to_sparse"
        raise RuntimeError(f"{where}_{key}: tensor sparse size ({t.shape[0]},{t.shape[1]}) must "
                           f"be divisible by given blocksize ({bs[0]},{bs[1]})")
    if sparse:
        return convert(t, key, bs)
    return run(TO_SPARSE[key], t, sparse_dim=2, layout=key, blocksize=bs)


def to_sparse_csc(self: Any, dense_dim: Any = None) -> SparseTensor:
    """The compressed-columns layout (``jitgrad.sparse_csc``) of a 2-d tensor."""
    return to_compressed(self, "csc")


def to_sparse_bsr(self: Any, blocksize: Any = None, dense_dim: Any = None) -> SparseTensor:
    """The blocked compressed-rows layout (``jitgrad.sparse_bsr``): the ``blocksize`` blocks
    (an int or ``(bh, bw)``) that hold a non-zero."""
    return to_compressed(self, "bsr", blocksize)


def to_sparse_bsc(self: Any, blocksize: Any = None, dense_dim: Any = None) -> SparseTensor:
    """The blocked compressed-columns layout (``jitgrad.sparse_bsc``)."""
    return to_compressed(self, "bsc", blocksize)


def _t_meta(s: Any) -> tuple:
    return tuple(s.shape)[::-1], s.dtype


def _t_grad(g: Any, ans: Any, s: Any) -> Any:
    g = as_sparse(g)
    if type(g) is SparseTensor and type(g._data) is CSR:
        return run(T_COMPRESSED, g)
    return g.t()


T_COMPRESSED = _op("t", lambda s: s.transposed(), _t_meta, _t_grad, node="TBackward0")


def transpose_compressed(s: SparseTensor) -> SparseTensor:
    """``s.t()`` of a compressed matrix: the other orientation on the same indices (CSR <->
    CSC, BSR <-> BSC), as torch's."""
    return run(T_COMPRESSED, s)


def to_sparse(t: Any, sparse_dim: int | None = None, *, layout: Any = None,
              blocksize: Any = None, dense_dim: Any = None) -> SparseTensor:
    """``Tensor.to_sparse``: COO (``sparse_dim`` leading sparse dims), or ``layout`` (a
    compressed one with its ``blocksize``)."""
    key = layout_key(layout)
    if key is not None:
        return to_compressed(t, key, blocksize)
    return _to_sparse(t, sparse_dim, dense_dim=dense_dim)
