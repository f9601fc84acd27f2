"""CUDA paths of the network ops: convolution, pooling, batch normalisation.

Windows go through an *index map* made on the host from the sizes alone (never from values):
for each kernel position ``k`` and output position ``l`` of a plane, the flat position in the
input plane it reads, or -1 where it falls in the padding. The map is copied to the device once
per call and the kernels gather (or scatter-add, with atomics) through it:

* ``convolution``: im2col (``cols[c, k, n, l] = x[n, c, map[k, l]]``) then the tiled matmul
  kernel per group; ``convolution_backward_input``: the transposed weights times the gradient,
  then col2im (an atomic add through the map); ``convolution_backward_weight``: the gradient
  times the columns transposed. 1-d convolutions run as 2-d ones over a height-1 image.
* ``max_pool2d_with_indices``: one thread per output element walks its window (the first
  largest value, the last NaN, as the CPU and torch); its backward adds the gradient at the
  indices with atomics. ``avg_pool2d`` and its backward the same way, divided by torch's
  divisor (made on the host from the sizes). ``adaptive_avg_pool2d`` and its backward are two
  matmuls with the averaging matrices (host-made from the sizes).
* ``native_batch_norm`` and its backward: the NumPy impls' formulas in jitgrad ops (per-channel
  means are reductions with kernels).

Atomic adds need float32 or float64 (int64/int32 too); other dtypes raise NotImplementedError.
"""

from __future__ import annotations

import numpy as np

from .. import _cuda_array as ca
from .._cuda_array import CudaArray
from ..ops.registry import Tensor
from ..tensor import _make
from .cuda_composite import _no_grad
from .cuda_lines import contiguous
from .numba_cuda import compile_source, full, launch_config


def _launch(src: str, name: str, count: int, *args) -> None:
    if count:
        blocks, threads = launch_config(count)
        compile_source(src, name)[blocks, threads](*args)


def window_map(hw: tuple, ksize: tuple, stride: tuple, pad_lo: tuple, dilation: tuple,
               out_hw: tuple) -> tuple[np.ndarray, np.ndarray]:
    """``(pos, virtual)``, both ``(kh * kw, Ho * Wo)`` int64: the flat input position each
    kernel position reads for each output position (-1 in the padding), and the position
    unclipped (what max pooling returns as its index)."""
    (h, w), (kh, kw) = hw, ksize
    pos, virt = [], []
    for i in range(kh):
        rows = np.arange(out_hw[0]) * stride[0] - pad_lo[0] + i * dilation[0]
        for j in range(kw):
            cols = np.arange(out_hw[1]) * stride[1] - pad_lo[1] + j * dilation[1]
            v = rows[:, None] * w + cols[None, :]
            ok = ((rows >= 0) & (rows < h))[:, None] & ((cols >= 0) & (cols < w))[None, :]
            pos.append(np.where(ok, v, -1).reshape(-1))
            virt.append(v.reshape(-1))
    return np.array(pos, dtype=np.int64).reshape(kh * kw, -1), \
        np.array(virt, dtype=np.int64).reshape(kh * kw, -1)


# ---------------------------------------------------------------- im2col / col2im
_IM2COL = """def im2col(x, m, cols, n_, c_, k_, l_):
    for f in range(cuda.grid(1), c_ * k_ * n_ * l_, cuda.gridsize(1)):
        l = f % l_
        q = f // l_
        n = q % n_
        q = q // n_
        k = q % k_
        c = q // k_
        j = m[k, l]
        if j >= 0:
            cols[c, k, n, l] = x[n, c, j]
        else:
            cols[c, k, n, l] = {D}(0)
"""
_COL2IM = """def col2im(cols, m, out, n_, c_, k_, l_):
    for f in range(cuda.grid(1), c_ * k_ * n_ * l_, cuda.gridsize(1)):
        l = f % l_
        q = f // l_
        n = q % n_
        q = q // n_
        k = q % k_
        c = q // k_
        j = m[k, l]
        if j >= 0:
            cuda.atomic.add(out, (n, c, j), cols[c, k, n, l])
"""


def _np(dt) -> str:
    return f"np.{np.dtype(dt).name}"


def im2col(x: CudaArray, pos: CudaArray) -> CudaArray:
    """``(C, K, N, L)`` columns of ``x (N, C, P)`` through the map ``pos (K, L)``."""
    n, c, _ = x.shape
    k, l_ = pos.shape
    cols = ca.empty((c, k, n, l_), x.dtype)
    _launch(_IM2COL.format(D=_np(x.dtype)), "im2col", cols.size, contiguous(x).dev(),
            pos.dev(), cols.dev(), n, c, k, l_)
    return cols


def col2im(cols: CudaArray, pos: CudaArray, plane: int) -> CudaArray:
    """The adjoint of ``im2col``: ``(N, C, P)`` sums of the columns at their positions."""
    c, k, n, l_ = cols.shape
    out = full((n, c, plane), 0, cols.dtype)
    _launch(_COL2IM, "col2im", cols.size, contiguous(cols).dev(), pos.dev(), out.dev(), n, c,
            k, l_)
    return out


# ---------------------------------------------------------------- convolution
def _as2d(t: Tensor, spatial: int) -> Tensor:
    return t if spatial == 2 else t.unsqueeze(-2)


def _params2d(stride, padding, dilation):
    if len(stride) == 2:
        return stride, padding, dilation
    return (1,) + tuple(stride), ((0, 0),) + tuple(padding), (1,) + tuple(dilation)


def _conv_geometry(hw, ksize, stride, padding, dilation):
    from ..ops.conv import out_size

    out_hw = tuple(out_size(n, k, s, p, d) for n, k, s, p, d in
                   zip(hw, ksize, stride, padding, dilation))
    pos, _ = window_map(hw, ksize, stride, (padding[0][0], padding[1][0]), dilation, out_hw)
    return out_hw, ca.to_device(pos)


def _columns(x: Tensor, ksize, stride, padding, dilation):
    """``(C, K, N, L)`` columns of ``x (N, C, H, W)`` and the output size."""
    n, c, h, w = x.shape
    out_hw, pos = _conv_geometry((h, w), ksize, stride, padding, dilation)
    x3 = contiguous(x._data).view((n, c, h * w))
    return im2col(x3, pos), out_hw, pos


def _conv(op, args, params):
    x, w, b = args
    shape, dt = op.meta(*[a if a is None else _stand(a) for a in args], **params)
    spatial, groups = len(params["stride"]), params["groups"]
    stride, padding, dilation = _params2d(params["stride"], params["padding"],
                                          params["dilation"])

    def forward():
        x2, w2 = _as2d(x, spatial), _as2d(w, spatial)
        n = x2.shape[0]
        o, kh, kw = w2.shape[0], w2.shape[2], w2.shape[3]
        cols, (ho, wo), _ = _columns(x2, (kh, kw), stride, padding, dilation)
        c = cols.shape[0]
        cm = _make(cols, x._dtype).reshape(groups, (c // groups) * kh * kw, n * ho * wo)
        out = w2.reshape(groups, o // groups, -1).matmul(cm)  # (G, O/G, N*Ho*Wo)
        out = out.reshape(o, n, ho, wo).permute(1, 0, 2, 3)
        if b is not None:
            out = out + b.reshape(1, o, 1, 1)
        out = out.contiguous()
        return out if spatial == 2 else out.squeeze(2)

    out = _no_grad(forward)
    return out._data.reshape(tuple(shape)), dt


def _conv_input_grad(op, args, params):
    g, w = args
    shape, dt = op.meta(_stand(g), _stand(w), **params)
    spatial, groups = len(params["stride"]), params["groups"]
    stride, padding, dilation = _params2d(params["stride"], params["padding"],
                                          params["dilation"])
    size = tuple(params["input_size"]) if spatial == 2 else (1,) + tuple(params["input_size"])

    def forward():
        g2, w2 = _as2d(g, spatial), _as2d(w, spatial)
        n, o, ho, wo = g2.shape
        kh, kw = w2.shape[2:]
        c = w2.shape[1] * groups
        gm = g2.permute(1, 0, 2, 3).reshape(groups, o // groups, n * ho * wo)
        cols = w2.reshape(groups, o // groups, -1).transpose(1, 2).matmul(gm)
        cols = cols.reshape(c, kh * kw, n, ho * wo).contiguous()
        _, pos = _conv_geometry(size, (kh, kw), stride, padding, dilation)
        out = col2im(cols._data, pos, size[0] * size[1])
        return _make(out.view((n, c) + size), g._dtype)

    out = _no_grad(forward)
    return out._data.reshape(tuple(shape)), dt


def _conv_transpose(op, args, params):
    """The transposed convolution (``convolution_backward_input``'s kernels) plus the bias."""
    from ..ops.conv import CONV_INPUT_GRAD

    x, w, b = args
    data, dt = _conv_input_grad(CONV_INPUT_GRAD, (x, w), params)
    if b is None:
        return data, dt
    spatial = len(params["stride"])
    out = _no_grad(lambda: (_make(data, dt) + b.reshape((1, -1) + (1,) * spatial)).contiguous())
    return out._data, dt


def _conv_weight_grad(op, args, params):
    x, g = args
    shape, dt = op.meta(_stand(x), _stand(g), **params)
    spatial, groups = len(params["stride"]), params["groups"]
    stride, padding, dilation = _params2d(params["stride"], params["padding"],
                                          params["dilation"])
    ksize = tuple(params["kernel_size"])
    ksize = ksize if spatial == 2 else (1,) + ksize

    def forward():
        x2, g2 = _as2d(x, spatial), _as2d(g, spatial)
        n, o = g2.shape[:2]
        cols, (ho, wo), _ = _columns(x2, ksize, stride, padding, dilation)
        c = cols.shape[0]
        cm = _make(cols, x._dtype).reshape(groups, (c // groups) * ksize[0] * ksize[1],
                                           n * ho * wo)
        gm = g2.permute(1, 0, 2, 3).reshape(groups, o // groups, n * ho * wo)
        return gm.matmul(cm.transpose(1, 2)).contiguous()

    out = _no_grad(forward)
    return out._data.reshape(tuple(shape)), dt


def _stand(a: Tensor):
    from .cuda_eager import _standin

    return _standin(a)


# ---------------------------------------------------------------- pooling
_MAXPOOL = """def maxpool(x, m, v, vals, idx, p_, k_, l_, fill):
    for f in range(cuda.grid(1), p_ * l_, cuda.gridsize(1)):
        l = f % l_
        p = f // l_
        best = fill
        arg = v[0, l]
        for k in range(k_):
            j = m[k, l]
            val = x[p, j] if j >= 0 else fill
            if k == 0 or val != val or (best == best and val > best):
                best = val
                arg = v[k, l]
        vals[p, l] = best
        idx[p, l] = arg
"""
_MAXBACK = """def maxback(g, idx, out, p_, l_, n_):
    for f in range(cuda.grid(1), p_ * l_, cuda.gridsize(1)):
        l = f % l_
        p = f // l_
        j = idx[p, l]
        if j >= 0 and j < n_:
            cuda.atomic.add(out, (p, j), g[p, l])
"""
_AVGPOOL = """def avgpool(x, m, div, out, p_, k_, l_):
    for f in range(cuda.grid(1), p_ * l_, cuda.gridsize(1)):
        l = f % l_
        p = f // l_
        acc = np.float64(0)
        for k in range(k_):
            j = m[k, l]
            if j >= 0:
                acc += x[p, j]
        out[p, l] = {D}(acc / div[l])
"""
_AVGBACK = """def avgback(g, m, div, out, p_, k_, l_):
    for f in range(cuda.grid(1), p_ * k_ * l_, cuda.gridsize(1)):
        l = f % l_
        q = f // l_
        k = q % k_
        p = q // k_
        j = m[k, l]
        if j >= 0:
            cuda.atomic.add(out, (p, j), {D}(g[p, l] / div[l]))
"""


def _planes(x: CudaArray) -> tuple[CudaArray, int]:
    p = int(np.prod(x.shape[:-2], dtype=np.int64))
    return contiguous(x).view((p, x.shape[-2] * x.shape[-1])), p


def _max_pool(op, args, params):
    x = args[0]
    (shape, _), (dt, it) = op.meta(_stand(x), **params)
    out_hw = tuple(shape[-2:])
    pos, virt = window_map(x.shape[-2:], params["kernel_size"], params["stride"],
                           params["padding"], params["dilation"], out_hw)
    xp, p = _planes(x._data)
    l_ = out_hw[0] * out_hw[1]
    vals, idx = ca.empty((p, l_), x._data.dtype), ca.empty((p, l_), np.int64)
    xd = x._data.dtype
    fill = xd.type(-np.inf) if xd.kind == "f" else np.iinfo(xd).min
    _launch(_MAXPOOL, "maxpool", p * l_, xp.dev(), ca.to_device(pos).dev(),
            ca.to_device(virt).dev(), vals.dev(), idx.dev(), p, pos.shape[0], l_, fill)
    return (vals.view(tuple(shape)), idx.view(tuple(shape))), (dt, it)


def _max_pool_backward(op, args, params):
    g, indices, x = args
    shape, dt = op.meta(_stand(g), _stand(indices), _stand(x), **params)
    h, w = params["input_size"]
    gp, p = _planes(g._data)
    out = full((p, h * w), 0, g._data.dtype)
    ip, _ = _planes(indices._data)
    _launch(_MAXBACK, "maxback", gp.size, gp.dev(), ip.dev(), out.dev(), p, gp.shape[1], h * w)
    return out.view(tuple(shape)), dt


def _avg_geometry(in_hw, out_hw, params):
    from ..ops.pool import _avg_divisor

    div = _avg_divisor(in_hw, out_hw, params["kernel_size"], params["stride"],
                       params["padding"], params["count_include_pad"],
                       params["divisor_override"]).reshape(-1)
    pos, _ = window_map(in_hw, params["kernel_size"], params["stride"], params["padding"],
                        (1, 1), out_hw)
    return ca.to_device(pos), ca.to_device(div)


def _avg_pool(op, args, params):
    x = args[0]
    shape, dt = op.meta(_stand(x), **params)
    out_hw = tuple(shape[-2:])
    pos, div = _avg_geometry(tuple(x.shape[-2:]), out_hw, params)
    xp, p = _planes(x._data)
    l_ = out_hw[0] * out_hw[1]
    out = ca.empty((p, l_), x._data.dtype)
    _launch(_AVGPOOL.format(D=_np(out.dtype)), "avgpool", p * l_, xp.dev(), pos.dev(),
            div.dev(), out.dev(), p, pos.shape[0], l_)
    return out.view(tuple(shape)), dt


def _avg_pool_backward(op, args, params):
    g = args[0]
    shape, dt = op.meta(_stand(g), **params)
    in_hw = tuple(params["input_size"])
    rest = {k: v for k, v in params.items() if k != "input_size"}
    pos, div = _avg_geometry(in_hw, tuple(g.shape[-2:]), rest)
    gp, p = _planes(g._data)
    out = full((p, in_hw[0] * in_hw[1]), 0, g._data.dtype)
    k_, l_ = pos.shape
    _launch(_AVGBACK.format(D=_np(out.dtype)), "avgback", p * k_ * l_, gp.dev(), pos.dev(),
            div.dev(), out.dev(), p, k_, l_)
    return out.view(tuple(shape)), dt


def _adaptive(op, args, params):
    from ..ops.pool import _adaptive_matrix

    x = args[0]
    backward = op.name.endswith("backward")
    shape, dt = op.meta(_stand(x), **params)
    small, big = (tuple(x.shape[-2:]), tuple(params["input_size"])) if backward else \
        (tuple(params["output_size"]), tuple(x.shape[-2:]))
    ph, pw = (_make(ca.to_device(_adaptive_matrix(n, o, x._dtype.np)), x._dtype)
              for n, o in zip(big, small))
    if backward:
        out = _no_grad(lambda: ph.t().matmul(x).matmul(pw).contiguous())
    else:
        out = _no_grad(lambda: ph.matmul(x).matmul(pw.t()).contiguous())
    return out._data.reshape(tuple(shape)), dt


# ---------------------------------------------------------------- batch norm
def _bn_stats(x, running_mean, running_var, training):
    dims = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if training:
        mean = x.mean(dims)
        centered = x - mean.reshape(shape)
        var = (centered * centered).mean(dims)
    else:
        mean, var = running_mean, running_var
        centered = x - mean.reshape(shape)
    return dims, shape, mean, centered, var


def _batch_norm(op, args, params):
    x, weight, bias, running_mean, running_var = args
    training, eps = params["training"], params["eps"]
    dt = x._dtype

    def forward():
        _, shape, mean, centered, var = _bn_stats(x, running_mean, running_var, training)
        scale = (var + eps).rsqrt()
        if weight is not None:
            scale = scale * weight
        out = centered * scale.reshape(shape)
        if bias is not None:
            out = out + bias.reshape(shape)
        return out.to(dt), mean.to(dt).clone(), var.to(dt).clone()

    outs = _no_grad(forward)
    return tuple(o._data for o in outs), (dt,) * 3


def _batch_norm_backward(op, args, params):
    g, x, weight, running_mean, running_var = args
    training, eps = params["training"], params["eps"]
    dt = x._dtype

    def forward():
        dims, shape, _, centered, var = _bn_stats(x, running_mean, running_var, training)
        rstd = (var + eps).rsqrt().reshape(shape)
        xhat = centered * rstd
        gsum = g.sum(dims)
        gxhat = (g * xhat).sum(dims)
        scale = rstd if weight is None else rstd * weight.reshape(shape)
        if training:
            m = x.numel() // x.shape[1]
            gx = scale * (g - (gsum.reshape(shape) + xhat * gxhat.reshape(shape)) / m)
        else:
            gx = g * scale
        return gx.to(dt).contiguous(), gxhat.to(dt), gsum.to(dt)

    outs = _no_grad(forward)
    return tuple(o._data for o in outs), (dt,) * 3


BY_NAME = {"convolution": _conv, "convolution_backward_input": _conv_input_grad,
           "convolution_backward_weight": _conv_weight_grad, "conv_transpose": _conv_transpose,
           "max_pool2d_with_indices": _max_pool,
           "max_pool2d_with_indices_backward": _max_pool_backward,
           "avg_pool2d": _avg_pool, "avg_pool2d_backward": _avg_pool_backward,
           "adaptive_avg_pool2d": _adaptive, "adaptive_avg_pool2d_backward": _adaptive,
           "native_batch_norm": _batch_norm, "native_batch_norm_backward": _batch_norm_backward}
__all__ = ["BY_NAME", "window_map", "im2col", "col2im"]
