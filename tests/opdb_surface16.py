"""opdb records of ``jitgrad/ops/torch_extras2.py`` (unbind, diagonal, diag_embed, diag,
var_mean, std_mean, nansum, nanmean, ``Tensor.unfold``, index_put), ``distances.py`` (cdist)
and ``torch_extras3.py`` (clamp_min, clamp_max, cosine_similarity, pairwise_distance, rms_norm),
appended to ``opdb.OP_DB``."""

from __future__ import annotations

import numpy as np


def _nans(rng, *shape):
    x = rng.uniform(-2.0, 2.0, shape)
    x.reshape(-1)[::3] = np.nan
    return x


def _diag_embed_ref(x, offset=0, dim1=-2, dim2=-1):
    n = x.shape[-1] + abs(offset)
    out = np.zeros(x.shape[:-1] + (n, n), dtype=x.dtype)
    i = np.arange(x.shape[-1])
    r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
    out[..., r, c] = x
    return np.moveaxis(out, (-2, -1), (dim1, dim2))


def _diag_ref(x, k=0):
    return np.diag(x, k)


def _moments_ref(fn):
    def ref(x, dim=None, *, correction=1, keepdim=False):
        axis = dim if dim is None or isinstance(dim, int) else tuple(dim)
        v = np.var(x, axis=axis, ddof=correction, keepdims=keepdim)
        return (fn(v), np.mean(x, axis=axis, keepdims=keepdim))
    return ref


def _cdist_ref(x1, x2, p=2.0, compute_mode=None):
    d = np.abs(x1[..., :, None, :] - x2[..., None, :, :])
    if np.isinf(p):
        return d.max(-1)
    return (d ** p).sum(-1) ** (1 / p)


def _unfold_ref(x, dim, size, step):
    dim = dim % x.ndim
    win = np.lib.stride_tricks.sliding_window_view(x, size, axis=dim)
    return np.take(win, np.arange(0, win.shape[dim], step), axis=dim)


def _index_put_ref(x, indices, values, accumulate=False):
    out = x.copy()
    if accumulate:
        np.add.at(out, indices, values)
    else:
        out[indices] = values
    return out


def _cos_ref(a, b, dim=1, eps=1e-8):
    a, b = np.broadcast_arrays(a, b)
    na = np.maximum(np.sqrt((a * a).sum(dim, keepdims=True)), eps)
    nb = np.maximum(np.sqrt((b * b).sum(dim, keepdims=True)), eps)
    return ((a / na) * (b / nb)).sum(dim)


def _pairwise_ref(a, b, p=2.0, eps=1e-6, keepdim=False):
    d = np.abs(a - b + eps)
    return (d ** p).sum(-1, keepdims=keepdim) ** (1 / p)


def _rms_ref(x, shape, weight=None, eps=None):
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    eps = np.finfo(x.dtype).eps if eps is None else eps
    out = x / np.sqrt((x * x).mean(dims, keepdims=True) + eps)
    return out if weight is None else out * weight


def surface16_records() -> list:
    """The records (``opdb.OpInfo``); opdb's helpers are imported here, when opdb calls this."""
    from opdb import OpInfo, _arr, _away, _idx, _many, _pos, _s

    m34 = _arr(3, 4)
    return [
        OpInfo("unbind", "unbind", _many(_s(m34, name="dim0"), _s(_arr(2, 3, 4), -1, name="neg")),
               lambda x, dim=0: tuple(np.moveaxis(x, dim, 0))),
        OpInfo("diagonal", "diagonal",
               _many(_s(m34, name="main"), _s(m34, 1, name="above"), _s(m34, -2, name="below"),
                     _s(_arr(2, 3, 4), 1, 2, 0, name="3d"), _s(m34, 5, name="empty")),
               lambda x, offset=0, dim1=0, dim2=1: np.diagonal(x, offset, dim1, dim2)),
        OpInfo("Tensor.diagonal", "Tensor.diagonal", _s(_arr(2, 3, 3), 0, -1, -2),
               lambda x, offset=0, dim1=0, dim2=1: np.diagonal(x, offset, dim1, dim2)),
        OpInfo("diag_embed", "diag_embed",
               _many(_s(m34, name="default"), _s(m34, 1, 0, 2, name="dims"),
                     _s(_arr(3), -1, name="below")), _diag_embed_ref),
        OpInfo("diag", "diag", _many(_s(_arr(3), name="vector"), _s(_arr(3), 2, name="vec_k"),
                                     _s(m34, name="matrix"), _s(m34, -1, name="mat_k")),
               _diag_ref),
        OpInfo("var_mean", "var_mean",
               _many(_s(m34, name="all"), _s(m34, 1, name="dim"),
                     _s(_arr(2, 3, 4), (0, 2), correction=0, keepdim=True, name="dims")),
               _moments_ref(lambda v: v)),
        OpInfo("std_mean", "std_mean",
               _many(_s(m34, name="all"), _s(_arr(2, 3, 4), (0, 2), keepdim=True, name="dims")),
               _moments_ref(np.sqrt)),
        OpInfo("cdist", "cdist",
               _many(_s(_arr(5, 3), _arr(4, 3), name="p2"), _s(_arr(5, 3), _arr(4, 3), 1.0,
                                                                 name="p1"),
                     _s(_arr(2, 5, 3), _arr(4, 3), 3.0, name="p3_batch"),
                     _s(_arr(5, 3), _arr(4, 3), float("inf"), name="pinf")),
               _cdist_ref, gradgrad=False),
        # (the matrix-product form: the _euclidean_dist op, for more than 25 rows or asked for)
        OpInfo("cdist_mm", "cdist",
               _many(_s(_arr(5, 3), _arr(4, 3), compute_mode="use_mm_for_euclid_dist",
                        name="asked"),
                     _s(_arr(2, 26, 3), _arr(4, 3), name="rows_batch")),
               _cdist_ref),
        OpInfo("nansum", "nansum", _many(_s(_arr(3, 4, gen=_nans), name="all"),
                                         _s(_arr(3, 4, gen=_nans), 1, keepdim=True, name="dim")),
               lambda x, dim=None, keepdim=False: np.nansum(x, dim, keepdims=keepdim)),
        OpInfo("nanmean", "nanmean", _many(_s(_arr(3, 4, gen=_nans), name="all"),
                                           _s(_arr(3, 4, gen=_nans), 0, name="dim")),
               lambda x, dim=None: np.nanmean(x, dim)),
        OpInfo("unfold", "Tensor.unfold",
               _many(_s(m34, 1, 2, 1, name="overlap"), _s(_arr(5, 3), 0, 2, 2, name="step2"),
                     _s(_arr(2, 7), -1, 3, 2, name="neg")), _unfold_ref),
        OpInfo("index_put", "index_put",
               _many(_s(m34, (_idx(0, 2),), _arr(4), name="rows"),
                     _s(m34, (_idx(0, 2, 0), _idx(1, 3, 1)), _arr(3), True, name="accumulate"),
                     _s(m34, (_idx(2), _idx(1)), _arr(), name="point")),
               _index_put_ref),
        OpInfo("clamp_min", "clamp_min", _many(_s(_arr(3, 4, gen=_away), 0.1, name="scalar"),
                                               _s(_arr(3, 4, gen=_away), _arr(4, gen=_away),
                                                  name="tensor")), np.maximum, gradgrad=False),
        OpInfo("clamp_max", "Tensor.clamp_max",
               _many(_s(_arr(3, 4, gen=_away), -0.1, name="scalar"),
                     _s(_arr(3, 4, gen=_away), _arr(3, 1, gen=_away), name="tensor")),
               np.minimum, gradgrad=False),
        OpInfo("cosine_similarity", "nn.functional.cosine_similarity",
               _many(_s(_arr(3, 4), _arr(3, 4), name="dim1"),
                     _s(_arr(2, 3, 4), _arr(3, 1), 1, name="bcast"),
                     _s(_arr(5), _arr(5), 0, name="vectors")), _cos_ref),
        OpInfo("pairwise_distance", "nn.functional.pairwise_distance",
               _many(_s(_arr(3, 4), _arr(3, 4), name="p2"),
                     _s(_arr(3, 4), _arr(4), 3.0, keepdim=True, name="p3_keepdim")),
               _pairwise_ref),
        OpInfo("rms_norm", "nn.functional.rms_norm",
               _many(_s(_arr(3, 4), (4,), name="no_weight"),
                     _s(_arr(2, 3, 4), (3, 4), _arr(3, 4, gen=_pos), 1e-5, name="weight")),
               _rms_ref),
    ]
