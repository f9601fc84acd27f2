"""The data of a sparse tensor: indices and values as NumPy arrays, never a dense copy.

A sparse tensor is a ``Tensor`` whose ``_data`` is one of these objects instead of an array:

* ``COO``: ``indices`` (int64, ``(sparse_dim, nnz)``) and ``values`` (``(nnz, *dense_shape)``);
  ``coalesced`` says the indices are unique and sorted (row-major), as torch's flag does.
* ``CSR``: ``crow`` (``(rows + 1,)``), ``col`` (``(nnz,)``) and ``values`` (``(nnz,)``) of a
  2-d matrix.

They carry what the autograd engine reads off a gradient array (``shape``, ``dtype``, ``copy``,
``+``, ``+=``), so sparse gradients travel through its array lane as they are; ``__array__``
(the dense values) is the engine's fallback where it must have an array. The NumPy kernels
of the sparse ops (coalesce, gather, sparse @ dense) are methods here.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _prod(shape: tuple) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


class _Sparse:
    """What both layouts share."""

    __slots__ = ("values", "shape", "_cache")
    __array_priority__ = 20  # (``ndarray + storage`` asks the storage first)

    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:  # (as ndarray.size: the number of elements of the dense tensor)
        return _prod(self.shape)

    @property
    def nnz(self) -> int:
        return int(self.values.shape[0])

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.to_dense()
        return out if dtype is None else out.astype(dtype)

    def cached(self, key: str, make: Any) -> Any:
        """A value computed once from this (immutable) storage."""
        cache = self._cache
        if key not in cache:
            cache[key] = make()
        return cache[key]

    # The autograd engine sums gradients with these, as torch does: ``old + new`` where two
    # gradients meet in one backward (sparse + sparse: torch's ``new + old``), ``grad += new``
    # where a leaf's ``.grad`` accumulates (both: ``merge``); with a dense operand, dense.
    def __add__(self, other: Any) -> Any:
        if isinstance(other, _Sparse):
            return merge(other.to_coo(), self.to_coo())
        return np.asarray(other) + self.to_dense()

    def __radd__(self, other: Any) -> Any:
        return np.asarray(other) + self.to_dense()

    def __iadd__(self, other: Any) -> Any:
        if isinstance(other, _Sparse):
            return merge(self.to_coo(), other.to_coo())
        return np.asarray(other) + self.to_dense()


class COO(_Sparse):
    """Coordinate format: ``indices`` (sparse_dim, nnz) and ``values`` (nnz, *dense_shape)."""

    __slots__ = ("indices", "coalesced")

    def __init__(self, indices: np.ndarray, values: np.ndarray, shape: tuple,
                 coalesced: bool = False) -> None:
        self.indices = indices
        self.values = values
        self.shape = tuple(int(s) for s in shape)
        self.coalesced = coalesced or values.shape[0] <= 1
        self._cache = {}

    @property
    def sparse_dim(self) -> int:
        return int(self.indices.shape[0])

    @property
    def dense_dim(self) -> int:
        return self.values.ndim - 1

    def copy(self) -> COO:
        return COO(self.indices.copy(), self.values.copy(), self.shape, self.coalesced)

    def with_values(self, values: np.ndarray) -> COO:
        """The same indices with other values."""
        return COO(self.indices, values, self.shape, self.coalesced)

    def to_coo(self) -> COO:
        return self

    def coo_indices(self) -> np.ndarray:
        return self.indices

    def keys(self) -> np.ndarray:
        """Each entry's row-major position among the sparse dims (its linear index)."""
        return np.ravel_multi_index(tuple(self.indices), self.shape[:self.sparse_dim]) \
            if self.indices.size else np.zeros(self.indices.shape[1], np.int64)

    def coalesce(self) -> COO:
        """Unique, sorted indices; the values of repeated indices summed (cached)."""
        if self.coalesced:
            return self
        return self.cached("coalesce", self._coalesce)

    def _coalesce(self) -> COO:
        keys = self.keys()
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        first = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
        values = np.add.reduceat(self.values[order], first, axis=0) if first.size else \
            self.values[:0].copy()
        indices = np.stack(np.unravel_index(sorted_keys[first], self.shape[:self.sparse_dim])) \
            if first.size else self.indices[:, :0]
        return COO(indices.astype(np.int64).reshape(self.sparse_dim, -1),
                   values.astype(self.values.dtype, copy=False), self.shape, True)

    def to_dense(self) -> np.ndarray:
        if self.sparse_dim == 0:  # (every entry is the whole tensor)
            return self.values.sum(0).astype(self.values.dtype, copy=False)
        out = np.zeros(self.shape, dtype=self.values.dtype)
        if self.values.shape[0]:
            key = tuple(self.indices)
            if self.coalesced:
                out[key] = self.values
            else:
                np.add.at(out, key, self.values)
        return out

    def gather(self, pattern: _Sparse) -> np.ndarray:
        """This tensor's values at the indices of ``pattern`` (a storage of the same shape):
        the sum of the entries at each index, 0 where it has none."""
        me = self.coalesce()
        idx = pattern.coo_indices()
        out = np.zeros((idx.shape[1],) + self.values.shape[1:], dtype=self.values.dtype)
        if me.nnz == 0 or idx.shape[1] == 0:
            return out
        mine = me.keys()
        theirs = np.ravel_multi_index(tuple(idx), self.shape[:self.sparse_dim])
        pos = np.minimum(np.searchsorted(mine, theirs), mine.size - 1)
        found = mine[pos] == theirs
        out[found] = me.values[pos[found]]
        return out

    def add(self, other: COO, alpha: Any = 1) -> COO:
        """``self + alpha * other`` (torch's sparse ``add``: see ``merge``)."""
        return merge(self, other, alpha)

    def cat(self, other: COO) -> COO:
        """The entries of ``self`` then those of ``other`` (their sum, not coalesced)."""
        dt = np.result_type(self.values, other.values)
        return COO(np.concatenate([self.indices, other.indices], axis=1),
                   np.concatenate([self.values.astype(dt, copy=False),
                                   other.values.astype(dt, copy=False)]), self.shape)

    def transpose(self, d0: int, d1: int) -> COO:
        """Sparse dims ``d0`` and ``d1`` swapped (cached: a backward transposes again)."""
        def make():
            perm = list(range(self.sparse_dim))
            perm[d0], perm[d1] = perm[d1], perm[d0]
            shape = list(self.shape)
            shape[d0], shape[d1] = shape[d1], shape[d0]
            return COO(self.indices[perm], self.values, tuple(shape))

        return self.cached(("t", d0, d1), make)

    def mm(self, dense: np.ndarray) -> np.ndarray:
        """``self @ dense`` for a 2-d matrix: per row, one reduction of the products of its
        entries with the rows of ``dense`` they select (rows sorted by coalescing)."""
        me = self.coalesce()
        rows, cols = me.indices
        dt = np.result_type(me.values, dense)
        out = np.zeros((self.shape[0],) + dense.shape[1:], dtype=dt)
        if rows.size == 0:
            return out
        vals = me.values.reshape((-1,) + (1,) * (dense.ndim - 1))
        prod = vals * dense[cols]
        first = me.cached("row_starts",
                          lambda: np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]]))
        out[rows[first]] = np.add.reduceat(prod, first, axis=0)
        return out


class CSR(_Sparse):
    """A compressed 2-d matrix: ``crow`` (the compressed indices: ``(rows + 1,)``), ``col`` (the
    plain indices: ``(nnz,)``) and ``values``, in one of torch's four compressed layouts:

    * ``"csr"``: compressed rows, ``values`` ``(nnz,)`` (``crow_indices``, ``col_indices``);
    * ``"csc"``: compressed columns: the CSR of the transpose (``ccol_indices``,
      ``row_indices``), ``values`` in column-major order;
    * ``"bsr"`` / ``"bsc"``: the CSR / CSC of a matrix of ``(bh, bw)`` blocks, ``values``
      ``(nnz, bh, bw)`` (each block as it sits in the matrix).

    Every operation goes through ``coo_indices`` (the row and column of each element of
    ``values``, in its order), so the layouts share one implementation.
    """

    __slots__ = ("crow", "col", "layout")

    def __init__(self, crow: np.ndarray, col: np.ndarray, values: np.ndarray,
                 shape: tuple, layout: str = "csr") -> None:
        self.crow = crow
        self.col = col
        self.values = values
        self.shape = tuple(int(s) for s in shape)
        self.layout = layout
        self._cache = {}

    @property
    def blocksize(self) -> tuple | None:
        """``(bh, bw)`` of a blocked layout, else None."""
        return tuple(self.values.shape[1:3]) if self.layout in ("bsr", "bsc") else None

    @property
    def rowwise(self) -> bool:
        """Whether the compressed dim is the rows (CSR, BSR)."""
        return self.layout in ("csr", "bsr")

    def copy(self) -> CSR:
        return CSR(self.crow.copy(), self.col.copy(), self.values.copy(), self.shape,
                   self.layout)

    def with_values(self, values: np.ndarray) -> CSR:
        """The same indices with other values (a blocked layout's given flat, as
        ``coo_indices`` orders them, are put in blocks)."""
        if values.shape != self.values.shape and self.blocksize is not None:
            values = values.reshape(self.values.shape)
        return CSR(self.crow, self.col, values, self.shape, self.layout)

    def block_indices(self) -> np.ndarray:
        """``(2, nnz)``: the (row, column) of each stored entry (of each block, blocked)."""
        def make():
            major = np.repeat(np.arange(self.crow.size - 1, dtype=np.int64), np.diff(self.crow))
            minor = self.col.astype(np.int64)
            return np.stack([major, minor] if self.rowwise else [minor, major])

        return self.cached("block_indices", make)

    def coo_indices(self) -> np.ndarray:
        """``(2, values.size)``: the (row, column) of each element of ``values``."""
        bs = self.blocksize
        if bs is None:
            return self.block_indices()

        def make():
            (bh, bw), (br, bc) = bs, self.block_indices()
            rows, cols = np.broadcast_arrays(br[:, None, None] * bh + np.arange(bh)[:, None],
                                             bc[:, None, None] * bw + np.arange(bw))
            return np.stack([rows.reshape(-1), cols.reshape(-1)])

        return self.cached("coo_indices", make)

    def flat_values(self) -> np.ndarray:
        """``values`` with one element per ``coo_indices`` entry."""
        return self.values.reshape(-1) if self.blocksize is not None else self.values

    def to_coo(self) -> COO:
        return self.cached("coo", lambda: COO(self.coo_indices(), self.flat_values(),
                                              self.shape))

    def to_dense(self) -> np.ndarray:
        return self.to_coo().to_dense()

    def gather(self, pattern: _Sparse) -> np.ndarray:
        return self.to_coo().gather(pattern)

    def mm(self, dense: np.ndarray) -> np.ndarray:
        return self.to_coo().mm(dense)

    def transposed(self) -> CSR:
        """The transpose, free: CSR <-> CSC and BSR <-> BSC on the same indices."""
        other = {"csr": "csc", "csc": "csr", "bsr": "bsc", "bsc": "bsr"}[self.layout]
        values = self.values.transpose(0, 2, 1) if self.blocksize is not None else self.values
        return CSR(self.crow, self.col, values, self.shape[::-1], other)


def merge(t: COO, s: COO, alpha: Any = 1) -> COO:
    """``t + alpha * s`` as torch's CPU kernel adds two COO tensors: one pass over both entry
    lists, taking the smaller index first and summing two equal ones into one entry, so two
    coalesced tensors give a coalesced one and others keep their order (not coalesced). Where
    either's values are not contiguous (an expanded gradient), torch concatenates the entries
    instead, and so does this."""
    sv = s.values if alpha == 1 else s.values * alpha
    dt = np.result_type(t.values, sv)
    if s.nnz == 0 or t.nnz == 0:
        src, vals = (t, t.values) if s.nnz == 0 else (s, sv)
        return COO(src.indices.copy(), vals.astype(dt), t.shape, src.coalesced)
    if not (t.values.flags.c_contiguous and s.values.flags.c_contiguous):
        return t.cat(s if alpha == 1 else s.with_values(sv))
    if t.coalesced and s.coalesced:  # (the pass is a sorted union: coalesce the entries)
        both = COO(np.concatenate([t.indices, s.indices], axis=1),
                   np.concatenate([t.values.astype(dt, copy=False), sv.astype(dt, copy=False)]),
                   t.shape)
        return both.coalesce()
    it, js = _merge_order(t.keys(), s.keys())
    has_t, has_s = it >= 0, js >= 0
    values = np.zeros((it.size,) + t.values.shape[1:], dt)
    values[has_t] += t.values[it[has_t]]
    values[has_s] += sv[js[has_s]]
    indices = np.where(has_t, t.indices[:, np.maximum(it, 0)], s.indices[:, np.maximum(js, 0)])
    return COO(indices, values, t.shape)


def _merge_loop(tk: Any, sk: Any, take_t: Any, take_s: Any) -> int:
    """The pass of ``merge`` over sorted-or-not keys ``tk`` and ``sk``: for each output entry,
    the entry of each it sums (-1: none) into ``take_t`` / ``take_s``; returns their count.
    (Plain Python, also compiled by Numba for long inputs.)"""
    nt, ns = len(tk), len(sk)
    i = j = r = 0
    while i < nt or j < ns:
        if i >= nt:
            cmp = -1
        elif j >= ns:
            cmp = 1
        elif tk[i] == sk[j]:
            cmp = 0
        elif tk[i] < sk[j]:
            cmp = 1
        else:
            cmp = -1
        take_t[r] = i if cmp >= 0 else -1
        take_s[r] = j if cmp <= 0 else -1
        i += 1 if cmp >= 0 else 0
        j += 1 if cmp <= 0 else 0
        r += 1
    return r


_COMPILED_MERGE: list = []


def _merge_order(tk: np.ndarray, sk: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = tk.size + sk.size
    if n < 4096:  # (short: Python's loop over lists beats compiling)
        take_t, take_s = [0] * n, [0] * n
        r = _merge_loop(tk.tolist(), sk.tolist(), take_t, take_s)
        return np.array(take_t[:r], np.int64), np.array(take_s[:r], np.int64)
    if not _COMPILED_MERGE:
        import numba

        try:
            _COMPILED_MERGE.append(numba.njit(cache=True, nogil=True)(_merge_loop))
        except RuntimeError:  # (no writable cache location)
            _COMPILED_MERGE.append(numba.njit(nogil=True)(_merge_loop))
    take_t, take_s = np.empty(n, np.int64), np.empty(n, np.int64)
    r = _COMPILED_MERGE[0](tk.astype(np.int64), sk.astype(np.int64), take_t, take_s)
    return take_t[:r], take_s[:r]


def csr_from_coo(coo: COO, layout: str = "csr", blocksize: tuple | None = None) -> CSR:
    """A 2-d COO matrix in compressed ``layout`` (coalesced first); the blocked layouts keep
    each ``blocksize`` block that holds an entry (zeros filled in)."""
    c = coo.coalesce()
    rows, cols = c.indices
    if blocksize is None:
        if layout == "csc":
            return csr_from_coo(coo.transpose(0, 1)).transposed()
        crow = np.zeros(coo.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=coo.shape[0]), out=crow[1:])
        return CSR(crow, cols.copy(), c.values, coo.shape)
    bh, bw = blocksize
    nbr, nbc = coo.shape[0] // bh, coo.shape[1] // bw
    br, bc = rows // bh, cols // bw
    major, minor, n_major = (br, bc, nbr) if layout == "bsr" else (bc, br, nbc)
    keys, slot = np.unique(major * max(nbr, nbc) + minor, return_inverse=True)
    values = np.zeros((keys.size, bh, bw), c.values.dtype)
    values[slot, rows % bh, cols % bw] = c.values
    crow = np.zeros(n_major + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys // max(nbr, nbc), minlength=n_major), out=crow[1:])
    return CSR(crow, (keys % max(nbr, nbc)).astype(np.int64), values, coo.shape, layout)


def coo_from_dense(dense: np.ndarray, sparse_dim: int) -> COO:
    """The entries of ``dense`` whose slice over the dense dims has a non-zero (coalesced)."""
    if sparse_dim == 0:  # (no sparse dim: one entry, the whole tensor)
        return COO(np.zeros((0, 1), np.int64), dense[None].copy(), dense.shape, True)
    if sparse_dim == dense.ndim:
        nz = dense != 0
    else:
        nz = np.any(dense.reshape(dense.shape[:sparse_dim] + (-1,)) != 0, axis=-1)
    idx = np.nonzero(nz)
    indices = np.stack(idx).astype(np.int64)
    return COO(indices.reshape(sparse_dim, -1), dense[idx].copy(), dense.shape, True)
