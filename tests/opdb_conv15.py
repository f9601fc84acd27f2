"""opdb records of issue 15's convolution, pooling and batch-norm ops, appended to
``opdb.OP_DB``. The NumPy references are direct loops over output positions (independent of the
im2col implementation they check); samples are tiny, as gradgradcheck is quadratic in size."""

from __future__ import annotations

import numpy as np

import jitgrad.nn.functional as F


def _pad2(x, pads, fill=0.0):
    return np.pad(x, ((0, 0), (0, 0)) + tuple(pads), constant_values=fill)


def _conv_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    if x.ndim == w.ndim - 1:  # unbatched
        return _conv_ref(x[None], w, b, stride, padding, dilation, groups)[0]
    one_d = w.ndim == 3
    if one_d:
        x, w = x[:, :, None, :], w[:, :, None, :]
    n2 = lambda v, fill: ((fill, v) if isinstance(v, int) else (fill,) + tuple(v)) \
        if one_d else ((v, v) if isinstance(v, int) else tuple(v))  # noqa: E731
    s, d = n2(stride, 1), n2(dilation, 1)
    kh, kw = w.shape[2:]
    if padding == "same":
        pads = [(dd * (k - 1) // 2, dd * (k - 1) - dd * (k - 1) // 2) for dd, k in zip(d, (kh, kw))]
    else:
        pads = [(p, p) for p in n2(0 if padding == "valid" else padding, 0)]
    xp = _pad2(x, pads)
    ho = (xp.shape[2] - d[0] * (kh - 1) - 1) // s[0] + 1
    wo = (xp.shape[3] - d[1] * (kw - 1) - 1) // s[1] + 1
    o, cg = w.shape[:2]
    og = o // groups
    out = np.zeros((x.shape[0], o, ho, wo))
    for oc in range(o):
        g = oc // og
        for i in range(ho):
            for j in range(wo):
                patch = xp[:, g * cg:(g + 1) * cg, i * s[0]:i * s[0] + d[0] * (kh - 1) + 1:d[0],
                           j * s[1]:j * s[1] + d[1] * (kw - 1) + 1:d[1]]
                out[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3))
    if b is not None:
        out += b[:, None, None]
    return out[:, :, 0] if one_d else out


def _conv_transpose_ref(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1,
                        dilation=1):
    """Each input value scattered through the kernel (a direct loop, not col2im)."""
    if x.ndim == w.ndim - 1:  # unbatched
        return _conv_transpose_ref(x[None], w, b, stride, padding, output_padding, groups,
                                   dilation)[0]
    nd = w.ndim - 2
    tup = (lambda v: (v,) * nd if isinstance(v, int) else tuple(v))  # noqa: E731
    s, p, op, d = tup(stride), tup(padding), tup(output_padding), tup(dilation)
    cin, og = w.shape[:2]
    cg = cin // groups
    size = [(n - 1) * ss - 2 * pp + dd * (k - 1) + oo + 1
            for n, ss, pp, dd, k, oo in zip(x.shape[2:], s, p, d, w.shape[2:], op)]
    full = np.zeros((x.shape[0], og * groups) + tuple(sz + 2 * pp for sz, pp in zip(size, p)))
    for c in range(cin):
        g = c // cg
        for pos in np.ndindex(*x.shape[2:]):
            for k in np.ndindex(*w.shape[2:]):
                at = tuple(i * ss + kk * dd for i, ss, kk, dd in zip(pos, s, k, d))
                full[(slice(None), slice(g * og, (g + 1) * og)) + at] += \
                    x[(slice(None), c) + pos][:, None] * w[(c, slice(None)) + k]
    out = full[(slice(None), slice(None)) + tuple(slice(pp, pp + sz) for pp, sz in zip(p, size))]
    if b is not None:
        out = out + b.reshape((1, -1) + (1,) * nd)
    return out


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _pool_out(n, k, s, p, d, ceil):
    o = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    return o - 1 if ceil and (o - 1) * s >= n + p else o


def _max_pool_ref(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                  return_indices=False):
    k = _pair(kernel_size)
    s, p, d = _pair(stride if stride is not None else kernel_size), _pair(padding), \
        _pair(dilation)
    h, w = x.shape[-2:]
    ho, wo = (_pool_out(n, *a, ceil_mode) for n, a in zip((h, w), zip(k, s, p, d)))
    vals = np.full(x.shape[:-2] + (ho, wo), -np.inf)
    idx = np.zeros(vals.shape, dtype=np.int64)
    for i in range(ho):
        for j in range(wo):
            for a in range(k[0]):
                for c in range(k[1]):
                    r, q = i * s[0] - p[0] + a * d[0], j * s[1] - p[1] + c * d[1]
                    if 0 <= r < h and 0 <= q < w:
                        v = x[..., r, q]
                        better = v > vals[..., i, j]
                        vals[..., i, j] = np.where(better, v, vals[..., i, j])
                        idx[..., i, j] = np.where(better, r * w + q, idx[..., i, j])
    return (vals, idx) if return_indices else vals


def _avg_pool_ref(x, kernel_size, stride=None, padding=0, ceil_mode=False,
                  count_include_pad=True, divisor_override=None):
    k = _pair(kernel_size)
    s, p = _pair(stride if stride is not None else kernel_size), _pair(padding)
    h, w = x.shape[-2:]
    ho, wo = (_pool_out(n, *a, 1, ceil_mode) for n, a in zip((h, w), zip(k, s, p)))
    out = np.zeros(x.shape[:-2] + (ho, wo))
    for i in range(ho):
        for j in range(wo):
            r0, c0 = i * s[0] - p[0], j * s[1] - p[1]
            r1, c1 = min(r0 + k[0], h + p[0]), min(c0 + k[1], w + p[1])
            full = (r1 - r0) * (c1 - c0)
            r0, c0, r1, c1 = max(r0, 0), max(c0, 0), min(r1, h), min(c1, w)
            total = x[..., r0:r1, c0:c1].sum(axis=(-2, -1))
            div = divisor_override or (full if count_include_pad else (r1 - r0) * (c1 - c0))
            out[..., i, j] = total / div
    return out


def _adaptive_ref(x, output_size):
    size = _pair(output_size)
    h, w = x.shape[-2:]
    size = tuple(n if o is None else o for n, o in zip((h, w), size))
    out = np.zeros(x.shape[:-2] + size)
    for i in range(size[0]):
        for j in range(size[1]):
            r0, r1 = (i * h) // size[0], -(-((i + 1) * h) // size[0])
            c0, c1 = (j * w) // size[1], -(-((j + 1) * w) // size[1])
            out[..., i, j] = x[..., r0:r1, c0:c1].mean(axis=(-2, -1))
    return out


def _bn_ref(x, running_mean, running_var, weight=None, bias=None, training=False,
            momentum=0.1, eps=1e-5):
    dims = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if training:
        mean, var = x.mean(axis=dims), x.var(axis=dims)
    else:
        mean, var = running_mean, running_var
    out = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def conv15_records() -> list:
    """The records (``opdb.OpInfo``); opdb's helpers are imported here, when opdb calls this."""
    from opdb import _LOOSE, Const, OpInfo, _arr, _many, _s

    conv2d = _many(
        _s(_arr(2, 2, 4, 4), _arr(3, 2, 2, 2), _arr(3), name="bias"),
        _s(_arr(1, 2, 5, 4), _arr(2, 2, 3, 2), None, (2, 1), 1, name="stride_pad"),
        _s(_arr(1, 2, 5, 5), _arr(2, 1, 2, 2), _arr(2), 1, 1, 2, 2, name="dilation_groups"),
        _s(_arr(1, 2, 4, 4), _arr(2, 2, 2, 3), None, 1, "same", name="same_even"),
        _s(_arr(2, 3, 3), _arr(2, 2, 2, 2), _arr(2), name="unbatched"))
    conv1d = _many(
        _s(_arr(2, 2, 6), _arr(3, 2, 3), _arr(3), name="bias"),
        _s(_arr(1, 4, 7), _arr(4, 2, 2), None, 2, 1, 2, 2, name="all"),
        _s(_arr(1, 2, 5), _arr(2, 2, 3), None, 1, "valid", name="valid"))
    conv_t2d = _many(
        _s(_arr(2, 2, 3, 3), _arr(2, 3, 2, 2), _arr(3), name="bias"),
        _s(_arr(1, 2, 3, 4), _arr(2, 2, 3, 2), None, (2, 1), 1, (1, 0), name="stride_pad_out"),
        _s(_arr(1, 4, 3, 3), _arr(4, 1, 2, 2), _arr(2), 1, 0, 0, 2, 2, name="groups_dilation"),
        _s(_arr(2, 3, 3), _arr(2, 2, 2, 2), _arr(2), 2, name="unbatched"))
    conv_t1d = _many(
        _s(_arr(2, 2, 4), _arr(2, 3, 3), _arr(3), 2, 1, 1, name="all"),
        _s(_arr(1, 4, 3), _arr(4, 1, 2), None, 1, 0, 0, 2, name="groups"))
    max_pool = _many(
        _s(_arr(2, 2, 4, 4), 2, name="k2"),
        _s(_arr(1, 2, 5, 5), 3, 2, 1, name="k3s2p1"),
        _s(_arr(1, 1, 5, 6), (2, 3), None, 0, (2, 1), True, True, name="dil_ceil_indices"),
        _s(_arr(2, 4, 4), 2, 1, name="unbatched"))
    avg_pool = _many(
        _s(_arr(2, 2, 4, 4), 2, name="k2"),
        _s(_arr(1, 2, 5, 5), 3, 2, 1, True, False, name="ceil_nopadcount"),
        _s(_arr(1, 1, 5, 4), (2, 3), 1, (1, 1), False, True, 4, name="divisor"),
        _s(_arr(2, 5, 5), 3, 2, 1, True, True, name="unbatched_ceil"))
    adaptive = _many(_s(_arr(2, 2, 5, 4), (2, 3), name="2x3"),
                     _s(_arr(2, 4, 5), (3, None), name="unbatched_none"),
                     _s(_arr(1, 2, 3, 3), 4, name="upsample"))
    bn = _many(
        _s(_arr(3, 2, 2, 2), None, None, _arr(2), _arr(2), True, name="train_affine"),
        _s(_arr(4, 3), None, None, None, None, True, 0.1, 1e-3, name="train_2d"),
        _s(_arr(2, 2, 3), Const(np.array([0.1, -0.2])), Const(np.array([0.5, 2.0])), _arr(2),
           _arr(2), False, 0.1, 1e-3, name="eval"))
    return [OpInfo("conv2d", "nn.functional.conv2d", conv2d, _conv_ref, fn=F.conv2d, **_LOOSE),
            OpInfo("conv1d", "nn.functional.conv1d", conv1d, _conv_ref, fn=F.conv1d, **_LOOSE),
            OpInfo("conv_transpose2d", "nn.functional.conv_transpose2d", conv_t2d,
                   _conv_transpose_ref, fn=F.conv_transpose2d, **_LOOSE),
            OpInfo("conv_transpose1d", "nn.functional.conv_transpose1d", conv_t1d,
                   _conv_transpose_ref, fn=F.conv_transpose1d, **_LOOSE),
            OpInfo("max_pool2d", "nn.functional.max_pool2d", max_pool, _max_pool_ref,
                   fn=F.max_pool2d, gradgrad=False),
            OpInfo("avg_pool2d", "nn.functional.avg_pool2d", avg_pool, _avg_pool_ref,
                   fn=F.avg_pool2d, **_LOOSE),
            OpInfo("adaptive_avg_pool2d", "nn.functional.adaptive_avg_pool2d", adaptive,
                   _adaptive_ref, fn=F.adaptive_avg_pool2d, **_LOOSE),
            OpInfo("batch_norm", "nn.functional.batch_norm", bn, _bn_ref, fn=F.batch_norm,
                   **_LOOSE)]


