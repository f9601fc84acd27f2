"""CUDA paths of ops that are compositions of ops with kernels.

Each function takes ``(op, args, params)`` like the other entries of ``cuda_eager._BY_NAME``
and computes the op's value with jitgrad ops on the device tensors (under ``no_grad``: the
op's own node is recorded by ``apply``, and its VJP rule then runs on the device too). The
formulas are the NumPy impls' own, written with tensor ops:

* the losses ``binary_cross_entropy`` (its range check counts bad elements on the device and
  reads one number back), ``binary_cross_entropy_with_logits``, ``smooth_l1_loss``,
  ``huber_loss``;
* ``linalg_vector_norm`` (so ``norm``, ``linalg.norm``, ``linalg.matrix_norm`` for the orders
  that need no singular values) and ``norm_p`` (``pairwise_distance``'s), ``cdist`` (the norms
  of the pairwise differences), ``unfold_backward`` (one ``index_add`` of the windows);
* ``round_decimals`` (``round(x * 10**d) / 10**d``, as the CPU);
* ``constant_pad_nd`` (a fill kernel, then a copy into the interior; negative pads crop), the
  reflection and replication pads (an ``index_select`` per padded dim, the source positions
  made from the sizes alone on the host), ``copy_slices`` and ``index_put`` without tensor
  indices (a copy, then a write, or an add, into the view the slice spec names);
* ``normal`` with tensor ``mean``/``std`` (``mean + std * noise``).
"""

from __future__ import annotations

import math

from .. import _cuda_array as ca
from .. import dtypes
from .._cuda_array import CudaArray
from ..ops import registry
from ..ops.registry import Tensor
from ..ops.nn_ops2 import _softplus_neg
from ..tensor import _make
from .cuda_eager import _no_grad
from .numba_cuda import full


def _result(t: Tensor, dt=None):
    if dt is not None and t._dtype is not dt:
        t = t.to(dt)
    return t._data, t._dtype


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "none":
        return loss
    return loss.mean() if reduction == "mean" else loss.sum()


# ---------------------------------------------------------------- losses
def _bce(op, args, params):
    x, t, w = args
    reduction = params["reduction"]

    def forward():
        bad = ((x < 0) | (x > 1) | (x != x)).sum().item()
        if bad:
            raise RuntimeError("all elements of input should be between 0 and 1")
        loss = -(t * x.log().clamp(min=-100) + (1 - t) * (-x).log1p().clamp(min=-100))
        if w is not None:
            loss = loss * w
        return _reduce(loss.to(x.dtype), reduction)

    return _result(_no_grad(forward), x._dtype)


def _bce_logits(op, args, params):
    x, t, w, pw = args
    reduction = params["reduction"]

    def forward():
        sp_neg = _softplus_neg(x)
        if pw is not None:
            loss = (1 - t) * x + ((pw - 1) * t + 1) * sp_neg
        else:
            loss = (1 - t) * x + sp_neg
        if w is not None:
            loss = loss * w
        shape = registry.broadcast_shapes(*(tuple(a.shape) for a in (x, t, w, pw)
                                            if a is not None))
        loss = loss.expand(shape).to(x.dtype)
        return _reduce(loss, reduction)

    return _result(_no_grad(forward), x._dtype)


def _meta_dtype(op, args, params) -> dtypes.dtype:
    """The op's result dtype (a complex loss is complex, its imaginary part zero, as on the
    CPU)."""
    return op.meta(*[_standin(a) for a in args], **params)[1]


def _smooth_l1(op, args, params):
    from ..ops.elementwise import where

    x, y = args
    beta = params["beta"]

    def forward():
        d = (x - y).abs()
        loss = where(d < beta, 0.5 * d * d / beta if beta else d * 0, d - 0.5 * beta)
        return _reduce(loss.to(d.dtype), params["reduction"]).to(_meta_dtype(op, args, params))

    return _result(_no_grad(forward))


def _huber(op, args, params):
    from ..ops.elementwise import where

    x, y = args
    delta = params["delta"]

    def forward():
        d = (x - y).abs()
        loss = where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
        return _reduce(loss.to(d.dtype), params["reduction"]).to(_meta_dtype(op, args, params))

    return _result(_no_grad(forward))


# ---------------------------------------------------------------- arg reductions
def _arg_extreme(x: Tensor, dim: int, keepdim: bool, largest: bool):
    """NumPy's argmax/argmin along ``dim`` (the first extreme; the first NaN, where there is
    one): the extreme (``amax``/``amin``, which propagate NaN), then the smallest position
    holding it."""
    from ..ops.ranges import arange
    from ..ops.elementwise import where

    if x.ndim == 0:
        return x, x.to(dtypes.int64) * 0
    n = x.shape[dim]
    v = x.amax(dim, keepdim=True) if largest else x.amin(dim, keepdim=True)
    if x.dtype.is_floating_point:  # (a line with a NaN: its first NaN, whatever amax gives)
        nan = x != x
        v = where(nan.sum(dim, keepdim=True) > 0, math.nan, v)
        hit = (x == v) | nan
    else:
        hit = x == v
    shape = [1] * x.ndim
    shape[dim] = n
    pos = arange(n, device=x.device).reshape(shape)
    idx = where(hit, pos, n).amin(dim, keepdim=keepdim)
    return (v if keepdim else v.squeeze(dim)), idx


def _max_min_dim(op, args, params):
    def forward():
        return _arg_extreme(args[0], params["dim"], params["keepdim"],
                            op.name in ("max_dim", "argmax"))

    values, idx = _no_grad(forward)
    if op.name in ("argmax", "argmin"):
        return idx._data, dtypes.int64
    return (values._data, idx._data), (values._dtype, dtypes.int64)


# ---------------------------------------------------------------- norms and rounding
def _vector_norm(op, args, params):
    x = args[0]
    ord, dims, keepdim = params["ord"], tuple(params["dims"]), params["keepdim"]  # noqa: A001
    dtype = params.get("dtype")
    _, real = op.meta(*[_standin(x)], **{k: v for k, v in params.items()})

    def reduce(t: Tensor, how: str) -> Tensor:
        if not dims:
            return t
        return getattr(t, how)(dim=dims, keepdim=keepdim)

    def forward():
        a = (x.to(dtype) if dtype is not None else x).abs()
        if ord == math.inf:
            return reduce(a, "amax")
        if ord == -math.inf:
            return reduce(a, "amin")
        if ord == 0:
            return reduce((a != 0).to(a.dtype), "sum")
        if ord == 1:
            return reduce(a, "sum")
        if ord == 2:
            return reduce(a * a, "sum").sqrt()
        return reduce(a ** ord, "sum") ** (1.0 / ord)

    return _result(_no_grad(forward), real)


def _cdist(op, args, params):
    """``cdist``: the CPU impl's formula on the pairwise differences (``(B, P, R, M)``)."""
    x1, x2 = args
    p = params["p"]
    real = _meta_dtype(op, args, params)

    def forward():
        d = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()
        if p == 0:
            return (d != 0).to(d.dtype).sum(-1)
        if math.isinf(p):
            if d.shape[-1] == 0:
                return d.sum(-1)
            return d.amax(-1)
        if p == 1:
            return d.sum(-1)
        if p == 2:
            return (d * d).sum(-1).sqrt()
        return (d ** p).sum(-1) ** (1 / p)

    return _result(_no_grad(forward), real)


def _unfold_backward(op, args, params):
    """``unfold``'s backward: the windows' gradients added back at their positions, one
    ``index_add`` along the dim (element ``j`` of window ``w`` goes to ``w * step + j``)."""
    from ..ops.ranges import arange

    g = args[0]
    shape, dim, size, step = (tuple(params["shape"]), params["dimension"], params["size"],
                              params["step"])
    if not shape:
        return _no_grad(lambda: g.sum())._data, g._dtype

    def forward():
        gm = g.movedim(dim, -2)  # (..., windows, size)
        windows = gm.shape[-2]
        flat = gm.reshape(tuple(gm.shape[:-2]) + (windows * size,))
        pos = (arange(windows, device="cuda") * step).unsqueeze(1) + arange(size,
                                                                            device="cuda")
        moved = tuple(s for k, s in enumerate(shape) if k != dim) + (shape[dim],)
        zeros = _make(full(moved, 0, g._dtype.np), g._dtype)
        return zeros.index_add(-1, pos.reshape(-1), flat).movedim(-1, dim).contiguous()

    return _no_grad(forward)._data, g._dtype


def _logsumexp(op, args, params):
    """``logsumexp`` through its decomposition; bool input cast to the float result dtype
    first (the decomposition's ``x - amax`` would subtract bools), as the CPU op computes it in
    floats."""
    from .cuda_eager import _decomposed

    x = args[0]
    if x._dtype is dtypes.bool:
        x = _no_grad(lambda: x.to(_meta_dtype(op, args, params)))
    return _decomposed(op, (x,), params)


def _lerp_scalar(op, args, params):
    """``lerp`` with a number weight: its template's kernel, or for complex tensors (a
    complex kernel takes no constant) the CPU's formula in eager ops, the side chosen by
    ``|weight| < 0.5`` (``1 - weight`` taken in float64, as NumPy does with a Python float)."""
    from .cuda_eager import _kernel_op

    a, b = args
    w = params["weight"]
    if not (a._dtype.is_complex or b._dtype.is_complex):
        return _kernel_op(op, args, params)
    out = _no_grad(lambda: a + w * (b - a) if abs(w) < 0.5 else b - (b - a) * (1 - w))
    return _result(out, _meta_dtype(op, args, params))


def _standin(a: Tensor):
    from .cuda_eager import _standin as standin

    return standin(a)


def _round_decimals(op, args, params):
    x = args[0]
    d = params["decimals"]
    if not x._dtype.is_floating_point:
        return x._data.copy(), x._dtype
    if d >= 0:
        f = float(x._dtype.np.type(10.0 ** d))
        out = _no_grad(lambda: (x * f).round() / f)
    else:
        f = float(x._dtype.np.type(10.0 ** -d))
        out = _no_grad(lambda: (x / f).round() * f)
    return _result(out, x._dtype)


# ---------------------------------------------------------------- padding and slices
def _sliced(a: CudaArray, region: dict) -> CudaArray:
    """The view of ``a`` with ``region = {dim: (start, stop)}``."""
    shape, offset = list(a.shape), a.offset
    for d, (s0, s1) in region.items():
        shape[d] = s1 - s0
        offset += s0 * a.strides[d]
    return a.view(tuple(shape), a.strides, offset)


def _constant_pad(op, args, params):
    from .cuda_eager import copy_into

    x = args[0]
    pad, value = params["pad"], params["value"]
    shape, dt = op.meta(_standin(x), pad=pad, value=value)
    out = full(shape, value, dt.np)
    src, dst = {}, {}
    for i in range(len(pad) // 2):
        d = x.ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        s0, s1 = max(-lo, 0), x.shape[d] - max(-hi, 0)
        if s1 <= s0:
            return out, dt
        src[d] = (s0, s1)
        dst[d] = (max(lo, 0), max(lo, 0) + s1 - s0)
    if x._data.size:
        copy_into(_sliced(out, dst), _sliced(x._data, src))
    return out, dt


def _gather_pad(op, args, params):
    from ..ops.nn_ops2 import pad_positions

    x = args[0]
    padding = params["padding"]
    mode = "reflect" if op.name.startswith("reflection") else "replicate"
    shape, dt = op.meta(_standin(x), padding=padding)

    def forward():
        out = x
        for i in range(len(padding) // 2):
            d = x.ndim - 1 - i
            pos = pad_positions(mode, x.shape[d], padding[2 * i], padding[2 * i + 1])
            out = out.index_select(d, _make(ca.to_device(pos), dtypes.int64))
        return out

    return _result(_no_grad(forward), dt)


def _copy_slices(op, args, params):
    from ..ops.indexing import _np_key
    from .cuda_eager import _as_view, copy_into, unsupported

    if len(args) != 2:
        raise unsupported(op, "tensor indices")
    x, values = args
    spec = params["spec"]
    if any(isinstance(s, tuple) and s[0] == "t" for s in spec):
        raise unsupported(op, "tensor indices")
    out = x._data.copy()
    desc, buf = ca.descriptor(out)
    region = _as_view(desc[_np_key(spec, ())], buf, out)
    if region is None:
        raise unsupported(op, "its region is not a view")
    if isinstance(values, Tensor):
        src = values._data
    else:
        src = full((), values, x._dtype.np)
    if params.get("accumulate") and region.size:
        from .cuda_eager import add_arrays

        src = add_arrays(region, src)
    if region.size:
        copy_into(region, src)
    return out, x._dtype


# ---------------------------------------------------------------- normal(mean, std)
def _normal(op, args, params):
    """``normal`` with tensor ``mean`` and/or ``std``: ``mean + std * noise`` (the noise drawn
    on the device already), in the noise's dtype, as the NumPy impl."""
    mean, std, noise = args
    return _no_grad(lambda: _result(mean + std * noise, noise._dtype))


BY_NAME = {"binary_cross_entropy": _bce, "binary_cross_entropy_with_logits": _bce_logits,
           "smooth_l1_loss": _smooth_l1, "huber_loss": _huber,
           "linalg_vector_norm": _vector_norm, "round_decimals": _round_decimals,
           "constant_pad_nd": _constant_pad, "copy_slices": _copy_slices,
           "index_put": _copy_slices, "normal_tensor_float": _normal,
           "normal_float_tensor": _normal, "normal_tensor_tensor": _normal,
           "max_dim": _max_min_dim, "min_dim": _max_min_dim, "argmax": _max_min_dim,
           "argmin": _max_min_dim, "norm_p": _vector_norm, "cdist": _cdist,
           "unfold_backward": _unfold_backward, "logsumexp": _logsumexp,
           "lerp_scalar": _lerp_scalar}
for _d in (1, 2, 3):
    BY_NAME[f"reflection_pad{_d}d"] = _gather_pad
    BY_NAME[f"replication_pad{_d}d"] = _gather_pad
__all__ = ["BY_NAME"]
