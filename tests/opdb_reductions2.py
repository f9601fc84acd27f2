"""opdb records of ``jitgrad/ops/reductions2.py`` (cummax, cummin, logcumsumexp, aminmax,
median, nanmedian, kthvalue, mode, searchsorted, bucketize, histc, isin), appended to
``opdb.OP_DB``: swept against NumPy, torch, gradcheck and the jit by ``tests/test_ops.py``."""

from __future__ import annotations

import numpy as np

_LOOSE = {"rtol": {"float32": 1e-4, "float64": 1e-9}, "atol": {"float32": 1e-5,
                                                               "float64": 1e-10}}


def _cum_ref(fn):
    def ref(x, dim):
        if x.ndim == 0:
            return x, np.zeros((), np.int64)
        a = np.moveaxis(x, dim, -1)
        vals = fn.accumulate(a, axis=-1)
        n = a.shape[-1]
        # the last index at which the running extreme was taken
        hits = a[..., None, :] == vals[..., :, None]
        upto = np.arange(n)[None, :] <= np.arange(n)[:, None]
        idx = np.where(hits & upto, np.arange(n), -1).max(-1)
        return np.moveaxis(vals, -1, dim), np.moveaxis(idx, -1, dim)
    return ref


def _logcumsumexp_ref(x, dim):
    return x if x.ndim == 0 else np.logaddexp.accumulate(x, axis=dim)


def _aminmax_ref(x, *, dim=None, keepdim=False):
    if dim is None:
        shape = (1,) * x.ndim if keepdim else ()
        return np.min(x).reshape(shape), np.max(x).reshape(shape)
    return np.min(x, dim, keepdims=keepdim), np.max(x, dim, keepdims=keepdim)


def _kth_ref(x, k, dim=-1, keepdim=False):
    """The k-th smallest (1-based ``k``, or one 0-based position per row as an array)."""
    if x.ndim == 0:
        return x, np.zeros((), np.int64)
    order = np.argsort(x, axis=dim, kind="stable")
    pos = np.expand_dims(k, dim) if isinstance(k, np.ndarray) else \
        np.full(np.delete(np.array(x.shape), dim % x.ndim), k - 1)
    pos = pos if isinstance(k, np.ndarray) else np.expand_dims(pos, dim)
    idx = np.take_along_axis(order, pos, dim)
    vals = np.take_along_axis(x, idx, dim)
    return (vals, idx) if keepdim else (vals.squeeze(dim), idx.squeeze(dim))


def _median_ref(x, dim=None, keepdim=False):
    if dim is None:
        flat = np.sort(x.reshape(-1))
        return flat[(flat.size - 1) // 2]
    return _kth_ref(x, (x.shape[dim] - 1) // 2 + 1, dim, keepdim)


def _nanmedian_ref(x, dim=None, keepdim=False):
    if dim is None:
        flat = np.sort(x[~np.isnan(x)])
        return flat[(flat.size - 1) // 2]
    valid = (~np.isnan(x)).sum(dim)
    return _kth_ref(x, (valid - 1) // 2, dim, keepdim)


def _mode_ref(x, dim=-1, keepdim=False):
    a = np.moveaxis(x, dim, -1)
    vals = np.empty(a.shape[:-1])
    idx = np.empty(a.shape[:-1], np.int64)
    for pos in np.ndindex(*a.shape[:-1]):
        row = a[pos]
        u, c = np.unique(row, return_counts=True)
        vals[pos] = u[np.argmax(c)]
        idx[pos] = np.flatnonzero(row == vals[pos])[-1]
    vals, idx = np.moveaxis(vals[..., None], -1, dim), np.moveaxis(idx[..., None], -1, dim)
    return (vals, idx) if keepdim else (vals.squeeze(dim), idx.squeeze(dim))


def _searchsorted_ref(seq, v, *, right=False, side=None, out_int32=False):
    side = side or ("right" if right else "left")
    if seq.ndim == 1:
        out = np.searchsorted(seq, v, side=side)
    else:
        out = np.stack([np.searchsorted(s, w, side=side) for s, w in zip(seq, v)])
    return out.astype(np.int32 if out_int32 else np.int64)


def _histc_ref(x, bins=100, min=0, max=0):  # noqa: A002
    lo, hi = (x.min(), x.max()) if min == max else (min, max)
    return np.histogram(x, bins=bins, range=(lo, hi))[0].astype(x.dtype)


def _sorted(rng, *shape):
    return np.sort(rng.uniform(-2.0, 2.0, shape), -1)


def _ties(rng, *shape):
    return rng.choice([-1.0, 0.5, 2.0, 3.0], shape)


def _nans(rng, *shape):
    x = rng.uniform(-2.0, 2.0, shape)
    x.reshape(-1)[1::4] = np.nan
    return x


def reductions2_records() -> list:
    """The records (``opdb.OpInfo``); opdb's helpers are imported here, when opdb calls this."""
    from opdb import OpInfo, _arr, _many, _s

    m34, m234 = _arr(3, 4), _arr(2, 3, 4)
    selecting = [_s(m34, 1, name="dim1"), _s(m234, 0, name="dim0"), _s(_arr(), 0, name="0d")]
    return [
        OpInfo("cummax", "cummax", _many(*selecting), _cum_ref(np.maximum)),
        OpInfo("cummin", "cummin", _many(*selecting), _cum_ref(np.minimum)),
        OpInfo("logcumsumexp", "logcumsumexp", _many(*selecting), _logcumsumexp_ref, **_LOOSE),
        OpInfo("aminmax", "aminmax",
               _many(_s(m34, name="all"), _s(m234, dim=1, name="dim"),
                     _s(m34, dim=-1, keepdim=True, name="keep"),
                     _s(m34, keepdim=True, name="all_keep")), _aminmax_ref, gradgrad=False),
        OpInfo("median", "median", _many(_s(m34, name="all"), _s(_arr(5), name="odd")),
               _median_ref, gradgrad=False),
        OpInfo("median_dim", "median",
               _many(_s(m34, 1, name="dim"), _s(m234, 0, True, name="keep")),
               _median_ref, gradgrad=False),
        OpInfo("nanmedian", "nanmedian", _s(_arr(3, 4, gen=_nans), name="nans"), _nanmedian_ref,
               gradgrad=False),
        OpInfo("nanmedian_dim", "nanmedian",
               _many(_s(_arr(3, 4, gen=_nans), 1, name="nans"), _s(m234, -1, True, name="keep")),
               _nanmedian_ref, gradgrad=False),
        OpInfo("kthvalue", "kthvalue",
               _many(_s(m34, 2, name="default_dim"), _s(m234, 1, 0, True, name="keep"),
                     _s(m34, 3, 0, name="dim0")), _kth_ref, gradgrad=False),
        OpInfo("mode", "mode",
               _many(_s(_arr(3, 5, gen=_ties), name="last"), _s(_arr(4, 3, gen=_ties), 0, True,
                                                                name="keep")),
               _mode_ref, differentiable=False),  # (finite differences break the ties;
        # its gradient is checked against torch's in test_reductions2.py)
        OpInfo("searchsorted", "searchsorted",
               _many(_s(_arr(6, gen=_sorted), _arr(3, 4), name="1d"),
                     _s(_arr(2, 5, gen=_sorted), _arr(2, 3), right=True, name="rows_right"),
                     _s(_arr(5, gen=_sorted), _arr(4), side="right",
                        name="side")), _searchsorted_ref, differentiable=False),
        OpInfo("bucketize", "bucketize",
               _many(_s(_arr(3, 4), _arr(5, gen=_sorted), name="left"),
                     _s(_arr(4), _arr(5, gen=_sorted), right=True, name="right")),
               lambda x, b, right=False: np.searchsorted(b, x, side="right" if right else "left"),
               differentiable=False),
        OpInfo("histc", "histc",
               _many(_s(_arr(20), name="default"), _s(_arr(3, 4), 5, -1.0, 1.0, name="range")),
               _histc_ref, differentiable=False),
        OpInfo("isin", "isin",
               _many(_s(lambda rng: np.array([[1, 2], [3, 4]]), lambda rng: np.array([2, 4, 7]),
                        name="int"),
                     _s(lambda rng: np.array([1, 5, 3]), lambda rng: np.array([3]), invert=True,
                        name="invert")),
               lambda e, t, invert=False: np.isin(e, t, invert=invert), differentiable=False),
    ]


def _scatter_reduce_ref(x, dim, index, src, reduce, include_self=True):
    out = x.copy()
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    pos = tuple(grids)
    s = src[tuple(slice(0, n) for n in index.shape)]
    if not include_self:
        out[pos] = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "amax": -np.inf, "amin": np.inf}[reduce]
    {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
     "amin": np.minimum}[reduce].at(out, pos, s)
    if reduce == "mean":
        count = np.ones(x.shape) if include_self else np.zeros(x.shape)
        np.add.at(count, pos, 1)
        out = out / np.maximum(count, 1)
    return out


def _index_copy_ref(x, dim, index, source):
    out = x.copy()
    out[(slice(None),) * dim + (index,)] = source
    return out


def _index_fill_ref(x, dim, index, value):
    out = x.copy()
    out[(slice(None),) * dim + (index,)] = value
    return out


def reductions3_records() -> list:
    """Records of ``jitgrad/ops/reductions3.py``'s defops (scatter_reduce, index_copy,
    index_fill); its compositions are checked in ``tests/test_reductions2.py``."""
    from opdb import OpInfo, _arr, _idx, _many, _pos, _s

    def idx(*rows):
        return lambda rng: np.array(rows, dtype=np.int64)

    i2 = idx([0, 1, 0, 2, 1], [2, 2, 0, 0, 1])
    samples = []
    for red in ("sum", "prod", "mean", "amax", "amin"):
        samples += [_s(_arr(3, 5, gen=_pos), 0, i2, _arr(2, 5, gen=_pos), red, name=red),
                    _s(_arr(3, 5, gen=_pos), 0, i2, _arr(2, 5, gen=_pos), red,
                       include_self=False, name=red + "_exclusive")]
    samples.append(_s(_arr(4, 3), 1, idx([0, 0], [2, 1], [1, 1]), _arr(3, 2), "sum",
                      name="dim1"))
    return [
        OpInfo("scatter_reduce", "scatter_reduce", _many(*samples), _scatter_reduce_ref,
               gradgrad=False),
        OpInfo("index_copy", "index_copy",
               _many(_s(_arr(3, 4), 1, _idx(3, 0), _arr(3, 2), name="dim1"),
                     _s(_arr(4, 2), 0, _idx(2), _arr(1, 2), name="dim0")), _index_copy_ref),
        OpInfo("index_fill", "index_fill",
               _many(_s(_arr(3, 4), 1, _idx(3, 0), -1.5, name="dim1"),
                     _s(_arr(2, 3, 2), -1, _idx(0), 2.0, name="neg")),
               lambda x, dim, index, value: _index_fill_ref(x, dim % x.ndim, index, value)),
        OpInfo("index_fill_tensor", "index_fill",
               _s(_arr(3, 4), 0, _idx(2, 0), _arr(), name="tensor_value"), _index_fill_ref),
    ]
