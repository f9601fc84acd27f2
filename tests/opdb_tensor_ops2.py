"""opdb records of issue 15's tensor ops (rounding, sorting, scans, masks, scatters, norms,
movedim), appended to ``opdb.OP_DB``; kept here so that opdb.py stays a readable size."""

from __future__ import annotations

import math

import numpy as np

def _off_grid(rng, *shape, step=1.0):
    # k*step + f*step with f in [0.1, 0.4]: away from the jumps of round/floor/ceil/trunc
    k = rng.integers(-3, 3, shape)
    return np.asarray((k + rng.uniform(0.1, 0.4, shape)) * step)


def _sort_ref(x, dim=-1, descending=False):
    if x.ndim == 0:
        return x, np.array(0)
    idx = np.argsort(-x if descending else x, axis=dim, kind="stable")
    return np.take_along_axis(x, idx, dim), idx


def _topk_ref(x, k, dim=-1, largest=True):
    vals, idx = _sort_ref(x, dim, largest)
    if x.ndim == 0:
        return vals, idx
    return np.take(vals, range(k), axis=dim), np.take(idx, range(k), axis=dim)


def _cum_ref(fn):
    def ref(x, dim):
        return x.copy() if x.ndim == 0 else fn(x, axis=dim)
    return ref


def _vnorm_ref(x, ord=2, dim=None, keepdim=False):
    a = np.abs(x)
    if isinstance(dim, int):
        dim = (dim,)
    if x.ndim == 0:
        dim = None
    if ord == math.inf:
        return a.max(axis=dim, keepdims=keepdim)
    if ord == -math.inf:
        return a.min(axis=dim, keepdims=keepdim)
    if ord == 0:
        return (a != 0).sum(axis=dim, keepdims=keepdim).astype(x.dtype)
    return (a ** ord).sum(axis=dim, keepdims=keepdim) ** (1.0 / ord)


def _norm_ref(x, p="fro", dim=None, keepdim=False):
    return _vnorm_ref(x, 2 if p == "fro" else p, dim, keepdim)


def _mnorm_ref(x, ord="fro", dim=(-2, -1), keepdim=False):
    if ord == "fro":
        return _vnorm_ref(x, 2, dim, keepdim)
    a = np.abs(x)
    s_dim, m_dim = (dim[0], dim[1]) if abs(ord) == 1 else (dim[1], dim[0])
    s = a.sum(axis=s_dim, keepdims=True)
    out = s.max(axis=m_dim, keepdims=True) if ord > 0 else s.min(axis=m_dim, keepdims=True)
    return out if keepdim else np.squeeze(out, axis=tuple(d % x.ndim for d in dim))


def _svd_norm_ref(x, ord="fro", dim=(-2, -1), keepdim=False):
    s = np.linalg.svd(np.moveaxis(x, dim, (-2, -1)), compute_uv=False)
    out = {2: s.max(-1), -2: s.min(-1), "nuc": s.sum(-1)}[ord]
    if keepdim:
        for d in sorted(d % x.ndim for d in dim):
            out = np.expand_dims(out, d)
    return out


def _lnorm_ref(x, ord=None, dim=None, keepdim=False):
    if isinstance(dim, tuple) and len(dim) == 2 or (dim is None and ord is not None
                                                    and x.ndim == 2):
        return _mnorm_ref(x, "fro" if ord is None else ord, dim or (-2, -1), keepdim)
    return _vnorm_ref(x, 2 if ord is None else ord, dim, keepdim)


def _masked_fill_ref(x, mask, value):
    return np.where(mask, value, x)


def _masked_select_ref(x, mask):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    return np.broadcast_to(x, shape)[np.broadcast_to(mask, shape)]


def _masked_scatter_ref(x, mask, source):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    out = np.array(np.broadcast_to(x, shape))
    m = np.broadcast_to(mask, shape)
    out[m] = source.reshape(-1)[:int(m.sum())]
    return out


def _scatter_ref(x, dim, index, src):
    out = x.copy()
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    vals = src if np.isscalar(src) else src[tuple(slice(0, n) for n in index.shape)]
    out[tuple(grids)] = vals
    return out


def _scatter_add_ref(x, dim, index, src):
    out = x.copy()
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    np.add.at(out, tuple(grids), src[tuple(slice(0, n) for n in index.shape)])
    return out


def _index_add_ref(x, dim, index, src):
    out = x.copy()
    np.add.at(out, (slice(None),) * dim + (index,), src)
    return out


def _with_zeros(rng):
    x = rng.uniform(-2.0, 2.0, (3, 4))
    x[0, 1] = 0.0
    x[1, 0] = x[1, 2] = 0.0
    return x


def tensor_ops2_records() -> list:
    """The records (``opdb.OpInfo``); opdb's helpers are imported here, when opdb calls this."""
    from opdb import _LOOSE, OpInfo, Sample, _arr, _away, _idx, _many, _s, _unary

    grid = _unary(_off_grid)
    mask = np.array([[True, False, True, False], [False, False, True, True],
                     [True, True, False, False]])
    perm_index = lambda rng: np.array([[2, 0, 1, 3], [1, 3, 0, 2], [0, 1, 2, 3]])  # noqa: E731
    norm_samples = _many(_s(_arr(3, 4), name="fro"), _s(_arr(3, 4), 1, name="p1"),
                         _s(_arr(3, 4), 3, 1, name="p3_dim"),
                         _s(_arr(3, 4), math.inf, name="inf"),
                         _s(_arr(2, 3, 4), 2, (0, 2), True, name="dims_keep"),
                         _s(_arr(3, 4), -math.inf, 1, name="neg_inf_dim"),
                         _s(_arr(3, 4, gen=_away), 0.5, 1, name="p_half"),
                         _s(_arr(3, 4), 1.5, -1, name="p1_5"),
                         _s(_arr(), name="0d"))
    recs = [OpInfo(n, n, grid, f, gradgrad=False)
            for n, f in (("round", np.rint), ("floor", np.floor), ("ceil", np.ceil),
                         ("trunc", np.trunc))]
    recs += [
        OpInfo("round_decimals", "round",
               lambda rng: [Sample((_off_grid(rng, 3, 4, step=0.1),), {"decimals": 1}),
                            Sample((_off_grid(rng, 3, 4, step=100.0),), {"decimals": -2},
                                   name="negative")],
               lambda x, decimals: np.round(x, decimals), gradgrad=False),
        OpInfo("isfinite", "isfinite",
               _s(lambda rng: np.array([1.0, np.inf, -np.inf, np.nan, 0.0])), np.isfinite,
               differentiable=False),
        OpInfo("isinf", "isinf", _s(lambda rng: np.array([1.0, np.inf, -np.inf, np.nan])),
               np.isinf, differentiable=False),
        OpInfo("sort", "sort", _many(_s(_arr(3, 4), name="last"), _s(_arr(3, 4), 0, name="dim0"),
                                     _s(_arr(2, 3, 4), 1, True, name="descending"),
                                     _s(_arr(), name="0d")), _sort_ref, gradgrad=False),
        OpInfo("argsort", "argsort", _many(_s(_arr(3, 4), name="last"),
                                           _s(_arr(3, 4), 0, True, name="descending")),
               lambda *a: _sort_ref(*a)[1], differentiable=False),
        OpInfo("topk", "topk", _many(_s(_arr(3, 4), 2, name="k2"), _s(_arr(3, 4), 1, 0, name="d0"),
                                     _s(_arr(2, 3, 4), 3, 2, False, name="smallest"),
                                     _s(_arr(3, 4), 0, name="k0")), _topk_ref, gradgrad=False),
        OpInfo("cumsum", "cumsum", _many(_s(_arr(3, 4), 1, name="dim1"),
                                         _s(_arr(2, 3, 4), 0, name="dim0"),
                                         _s(_arr(3, 4), -1, name="neg"), _s(_arr(), 0, name="0d")),
               _cum_ref(np.cumsum), gradgrad=False),
        OpInfo("cumprod", "cumprod", _many(_s(_arr(3, 4), 1, name="dim1"),
                                           _s(_arr(2, 3, 4), 0, name="dim0"),
                                           _s(_with_zeros, 1, name="zeros"),
                                           _s(_with_zeros, 0, name="zeros_dim0"),
                                           _s(_arr(), 0, name="0d")),
               _cum_ref(np.cumprod), **_LOOSE),
        OpInfo("tril", "tril", _many(_s(_arr(3, 4), name="main"), _s(_arr(2, 3, 4), 1, name="up"),
                                     _s(_arr(4, 3), -1, name="down")),
               lambda x, k=0: np.tril(x, k), gradgrad=False),
        OpInfo("triu", "triu", _many(_s(_arr(3, 4), name="main"), _s(_arr(2, 3, 4), 1, name="up"),
                                     _s(_arr(4, 3), -2, name="down")),
               lambda x, k=0: np.triu(x, k), gradgrad=False),
        OpInfo("masked_fill", "masked_fill",
               _many(_s(_arr(3, 4), lambda rng: mask, 0.5, name="scalar"),
                     _s(_arr(3, 4), lambda rng: mask[0], -1.0, name="bcast_mask"),
                     _s(_arr(1, 4), lambda rng: mask, 2.0, name="bcast_self"),
                     _s(_arr(3, 4), lambda rng: mask, _arr(), name="tensor_value")),
               _masked_fill_ref, gradgrad=False),
        OpInfo("masked_select", "masked_select",
               _many(_s(_arr(3, 4), lambda rng: mask, name="same"),
                     _s(_arr(4), lambda rng: mask, name="bcast")),
               _masked_select_ref, gradgrad=False),
        OpInfo("masked_scatter", "Tensor.masked_scatter",
               _many(_s(_arr(3, 4), lambda rng: mask, _arr(7), name="same"),
                     _s(_arr(3, 4), lambda rng: mask[1], _arr(3, 3), name="bcast_mask")),
               _masked_scatter_ref, gradgrad=False),
        OpInfo("nonzero", "nonzero",
               _many(_s(lambda rng: np.array([[0, 1, 2], [3, 0, 0]]), name="int"),
                     _s(lambda rng: mask, name="bool")),
               np.argwhere, differentiable=False),
        OpInfo("scatter", "scatter",
               _many(_s(_arr(3, 4), 1, perm_index, _arr(3, 4), name="src"),
                     _s(_arr(3, 4), 0, lambda rng: np.array([[2, 0, 1, 1]]), _arr(1, 4),
                        name="dim0"),
                     _s(_arr(3, 4), 1, lambda rng: np.array([[0], [3], [1]]), 0.5,
                        name="value")),
               _scatter_ref, gradgrad=False),
        OpInfo("scatter_add", "scatter_add",
               _many(_s(_arr(3, 4), 1, lambda rng: np.array([[0, 0], [3, 1], [1, 1]]),
                        _arr(3, 2), name="dups"),
                     _s(_arr(3, 4), 0, lambda rng: np.array([[2, 0, 2, 1]]), _arr(1, 4),
                        name="dim0")),
               _scatter_add_ref, gradgrad=False),
        OpInfo("index_add", "index_add",
               _many(_s(_arr(3, 4), 0, _idx(2, 0, 2), _arr(3, 4), name="dim0"),
                     _s(_arr(3, 4), 1, _idx(3, 1), _arr(3, 2), name="dim1")),
               _index_add_ref, gradgrad=False),
        OpInfo("norm", "norm", norm_samples, _norm_ref, **_LOOSE),
        OpInfo("norm_p0", "norm", _many(_s(_arr(3, 4), 0, name="all"),
                                        _s(_arr(3, 4), 0, 1, name="dim")), _norm_ref,
               gradgrad=False),
        OpInfo("linalg.vector_norm", "linalg.vector_norm",
               _many(_s(_arr(3, 4), name="default"), _s(_arr(3, 4), 3, 1, name="p3"),
                     _s(_arr(2, 3, 4), math.inf, (1, 2), True, name="inf_keep"),
                     _s(_arr(3, 4), 1, -1, name="p1"), _s(_arr(), name="0d")),
               _vnorm_ref, **_LOOSE),
        OpInfo("linalg.matrix_norm", "linalg.matrix_norm",
               _many(_s(_arr(3, 4), name="fro"), _s(_arr(3, 4), 1, name="one"),
                     _s(_arr(2, 3, 4), -1, name="neg_one_batch"),
                     _s(_arr(3, 4), math.inf, name="inf"),
                     _s(_arr(3, 4), -math.inf, keepdim=True, name="neg_inf_keep"),
                     _s(_arr(2, 3, 4), 1, (0, 2), name="dims02")),
               _mnorm_ref, **_LOOSE),
        OpInfo("linalg.svdvals", "linalg.svdvals",
               _many(_s(_arr(3, 4), name="wide"), _s(_arr(2, 4, 3), name="batch_tall")),
               lambda x: np.linalg.svd(x, compute_uv=False), gradgrad=False, **_LOOSE),
        OpInfo("linalg.matrix_norm_svd", "linalg.matrix_norm",
               _many(_s(_arr(3, 4), 2, name="spectral"), _s(_arr(2, 3, 4), -2, name="min_sv"),
                     _s(_arr(3, 4), "nuc", name="nuclear"),
                     _s(_arr(2, 3, 4), "nuc", (2, 0), True, name="nuc_dims_keep")),
               _svd_norm_ref, gradgrad=False, **_LOOSE),
        OpInfo("linalg.norm", "linalg.norm",
               _many(_s(_arr(3, 4), name="default"), _s(_arr(4), 3, name="vector"),
                     _s(_arr(3, 4), 1, name="matrix_one"),
                     _s(_arr(2, 3, 4), None, (1, 2), name="dims_fro"),
                     _s(_arr(2, 3, 4), 1, -1, name="dim_int")),
               _lnorm_ref, **_LOOSE),
        OpInfo("movedim", "movedim", _many(_s(_arr(2, 3, 4), 0, 2, name="one"),
                                           _s(_arr(2, 3, 4), (0, 1), (2, 0), name="two")),
               np.moveaxis, gradgrad=False),
    ]
    for r in recs:
        if r.name in ("norm", "linalg.vector_norm", "linalg.matrix_norm", "linalg.norm"):
            r.gradgrad = True  # (the sweep checks second derivatives where they are defined)
    return recs
