"""cdist, torch's two ways: the p-norm distances of every pair of rows (``CdistBackward0``),
and for p=2 with more than 25 rows (or when asked) the matrix-product form, the squared norms
and -2 x1 x2 in one product (``EuclideanDistBackward0``, under a view), whose rounding and
zero-distance subgradient are torch's."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .dtype_rules import refuse_dtypes
from .registry import AUTOCAST_FP32, OPAQUE, apply, defop
from .selection import where
from .surface import public


def _pairwise(x1, x2):
    return x1[..., :, None, :] - x2[..., None, :, :]


def _cdist_impl(x1, x2, p):
    d = np.abs(_pairwise(x1, x2))
    if p == 0:
        out = (d != 0).sum(-1).astype(x1.dtype)
    elif np.isinf(p):
        out = d.max(-1, initial=0)
    elif p == 1:
        out = d.sum(-1)
    elif p == 2:
        out = np.sqrt((d * d).sum(-1))
    else:
        out = (d ** p).sum(-1) ** (1 / p)
    return np.asarray(out, dtype=x1.dtype)


def _cdist_meta(x1, x2, p):
    batch = np.broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2]))
    return tuple(batch) + (x1.shape[-2], x2.shape[-2]), dtypes.result_type(x1, x2)


def _cdist_weights(ans, x1, x2, p):
    """d dist_ij / d x1_i: one vector per pair (B, P, R, M); x2's is its negative."""
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    dist = ans.unsqueeze(-1)
    if p == 0:
        return diff * 0.0
    if p == 1:
        return diff.sign()
    if np.isinf(p):
        return diff.sign() * (diff.abs() == dist)
    if p == 2:
        return where(dist == 0, 0.0, diff / where(dist == 0, 1.0, dist))
    if p < 1:  # (as torch: zero where a component is zero)
        scaled = diff.sign() * diff.abs() ** (p - 1) * where(dist == 0, 0.0, dist) ** (1 - p)
        return where((diff == 0) | (dist == 0), 0.0, scaled)
    return where(dist == 0, 0.0, diff * diff.abs() ** (p - 2) / where(
        dist == 0, 1.0, dist) ** (p - 1))


def _cdist_vjp(g, ans, x1, x2, p):
    w = _cdist_weights(ans, x1, x2, p) * g.unsqueeze(-1)
    return [w.sum(-2), -w.sum(-3)]


def _cdist_jvp(tangents, ans, x1, x2, p):
    w = _cdist_weights(ans, x1, x2, p)
    t1, t2 = tangents
    dt = (t1.unsqueeze(-2) if t1 is not None else 0) - (
        t2.unsqueeze(-3) if t2 is not None else 0)
    return (w * dt).sum(-1)


CDIST = defop(
    "cdist", _cdist_impl, kind=OPAQUE, autocast=AUTOCAST_FP32, meta=_cdist_meta, save=(0, 1),
    save_output=True, vjp=_cdist_vjp, jvp=_cdist_jvp,
    check_operands=refuse_dtypes(half="cdist"),  # (the matrix-product form takes them)
    saved_names={"p": ("param", "p"), "x1": ("input", 0), "x2": ("input", 1),
                 "result": ("output", 0)})


def _euclidean_dist_impl(x1, x2):
    """torch's matrix-product form of the p=2 distance of (B, P, M) and (B, R, M) rows: the
    squared norms and -2 x1 x2 in one product, clamped at 0 (a distance of a row to itself
    is exactly 0 when the product rounds below it)."""
    n1 = np.add.reduce(x1 * x1, axis=-1, keepdims=True)
    n2 = np.add.reduce(x2 * x2, axis=-1, keepdims=True)
    a = np.concatenate([x1 * x1.dtype.type(-2), n1, np.ones_like(n1)], -1)
    b = np.concatenate([x2, np.ones_like(n2), n2], -1)
    out = np.matmul(a, np.swapaxes(b, -1, -2))
    np.maximum(out, 0, out=out)
    return np.sqrt(out, out=out)


def _euclidean_ratio(g, ans):
    return where(ans == 0, 0.0, g / ans)  # (a zero distance: the subgradient 0, as torch)


def _euclidean_dist_vjp(g, ans, x1, x2):
    ratio = _euclidean_ratio(g, ans)
    return [x1 * ratio.sum(-1, keepdim=True) - ratio.matmul(x2),
            x2 * ratio.sum(-2).unsqueeze(-1) - ratio.transpose(-2, -1).matmul(x1)]


def _euclidean_dist_jvp(tangents, ans, x1, x2):
    t1, t2 = tangents
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    dt = (t1.unsqueeze(-2) if t1 is not None else 0) - (
        t2.unsqueeze(-3) if t2 is not None else 0)
    return _euclidean_ratio((diff * dt).sum(-1), ans)


def _euclidean_dist_meta(x1, x2):
    from .linalg import _same_dtype  # (the product's refusal of mixed dtypes)

    return _cdist_meta(x1, x2, 2.0)[0], _same_dtype(x1, x2)


def _euclidean_dist_decompose(x1, x2):
    """The same product in primitives (the jit's trace, cuda tensors, float16/bfloat16, each of
    whose steps rounds to the dtype as torch's half kernels do); the root is taken of 1 where
    the clamped square is 0, so that its gradient there is 0, not inf * 0."""
    from .creation import ones_like
    from .movement import cat

    n1 = x1.pow(2).sum(-1, keepdim=True)
    n2 = x2.pow(2).sum(-1, keepdim=True)
    a = cat([x1.mul(-2), n1, ones_like(n1)], -1)
    b = cat([x2, ones_like(n2), n2], -1)
    square = a.matmul(b.transpose(-2, -1)).clamp(min=0)
    zero = square == 0
    return where(zero, 0.0, where(zero, 1.0, square).sqrt())


EUCLIDEAN_DIST = defop(
    "_euclidean_dist", _euclidean_dist_impl, kind=OPAQUE, meta=_euclidean_dist_meta, save=(0, 1),
    save_output=True, vjp=_euclidean_dist_vjp, jvp=_euclidean_dist_jvp,
    decompose=_euclidean_dist_decompose,
    saved_names={"x1": ("input", 0), "x2": ("input", 1), "result": ("output", 0)})


_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
          "donot_use_mm_for_euclid_dist")


@public("cdist")
def cdist(x1, x2, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary"):
    """The ``p``-norm distances between the rows of ``x1`` (B, P, M) and of ``x2`` (B, R, M):
    (B, P, R); batch dims broadcast."""
    if x1.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    if x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {x2.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if not (x1.dtype.is_floating_point and x2.dtype.is_floating_point):
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: "
                           f"{x1.dtype._scalar_name}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in _MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    mm = compute_mode == "use_mm_for_euclid_dist" or (
        compute_mode == _MODES[0] and (x1.shape[-2] > 25 or x2.shape[-2] > 25))
    if p == 2 and mm:  # (mixed dtypes: the product's refusal, in the op's meta or matmul)
        batch = tuple(np.broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2])))
        rows1, rows2 = tuple(x1.shape[-2:]), tuple(x2.shape[-2:])
        if x1.dtype in (dtypes.float16, dtypes.bfloat16):
            return _euclidean_dist_decompose(x1.expand(batch + rows1), x2.expand(batch + rows2))
        # (as torch: one batch goes in as it is, more are flattened into one batch dim; the
        # result is a view with the batch's shape)
        product = int(np.prod(batch))
        if product == 1:
            dist = apply(EUCLIDEAN_DIST, x1, x2)
        else:
            dist = apply(EUCLIDEAN_DIST,
                         x1.expand(batch + rows1).contiguous().view((product,) + rows1),
                         x2.expand(batch + rows2).contiguous().view((product,) + rows2))
        return dist.view(batch + (rows1[0], rows2[0]))
    if x1.dtype is not x2.dtype:
        if x1.dtype in (dtypes.float16, dtypes.bfloat16):
            raise RuntimeError(f"\"cdist\" not implemented for '{x1.dtype._scalar_name}'")
        raise RuntimeError(f"expected scalar type {x1.dtype._scalar_name} but found "
                           f"{x2.dtype._scalar_name}")
    return apply(CDIST, x1, x2, p=float(p))
