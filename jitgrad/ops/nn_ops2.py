"""More ops torch records as single nodes: leaky_relu, elu, softplus, the binary cross
entropies, smooth L1 and Huber losses, embedding and constant padding.

Each has a NumPy impl, a VJP written in jitgrad ops (so it runs in both engines and to any
order) and torch's node name; pointwise ones carry a template so the Numba backend fuses them.
"""

from __future__ import annotations

import numpy as np

from .dtype_rules import half_in_float32, refuse_dtypes
from .memory_formats import keeps_channels_last
from .registry import (ELEMENTWISE, FLOAT, OPAQUE, POINTWISE, Meta, apply, broadcast_shapes,
                       defop)

_SELF = ("input", 0)
_NOT_FLOATING = ("complex", "integer", "bool")


def _refuse_non_floating(kernel, operands=None):
    """torch's refusal of a kernel built for floating dtypes only (complex, integers, bool)."""
    return refuse_dtypes(operands, **dict.fromkeys(_NOT_FLOATING, kernel))


_LEAKY_RELU_CHECK = _refuse_non_floating("leaky_relu_cpu")
_ELU_CHECK = _refuse_non_floating("elu_cpu")

# ---------------------------------------------------------------- pointwise activations


def _leaky_relu_backward_impl(g, x, *, negative_slope):
    return np.where(x > 0, g, g * negative_slope).astype(g.dtype, copy=False)


# leaky_relu's gradient as torch's leaky_relu_backward(grad, self, slope): a node that depends on
# the input too (its gradient there is zero), so second derivatives of a LeakyReLU network are
# zeros with a graph (torch), not "not used in the graph"
LEAKY_RELU_BACKWARD = defop(
    "leaky_relu_backward", _leaky_relu_backward_impl, kind=POINTWISE, save=(1,),
    vjp=(lambda gg, ans, g, x, negative_slope: apply(LEAKY_RELU_BACKWARD, gg, x,
                                                     negative_slope=negative_slope),
         lambda gg, ans, g, x, negative_slope: gg * 0), jvp=ELEMENTWISE,
    template="{0} if {1} > 0 else {0} * {p[negative_slope]}")


def _leaky_relu_vjp(g, ans, x, negative_slope):
    return apply(LEAKY_RELU_BACKWARD, g, x, negative_slope=negative_slope)


def _leaky_relu_impl(x, *, negative_slope):
    # x if x > 0 else slope * x is max(x, slope * x) for 0 < slope < 1 and min(...) above 1
    # (signed zeros, inf and NaN included): one branch-free pass where np.where branches per
    # element (4x slower); other slopes keep np.where. float16 scales in float32, as torch.
    work = np.float32 if x.dtype == np.float16 else x.dtype
    scaled = np.multiply(x, negative_slope, dtype=work).astype(x.dtype, copy=False)
    if 0 < negative_slope < 1:
        return np.maximum(x, scaled)
    if negative_slope > 1:
        return np.minimum(x, scaled)
    return np.where(x > 0, x, scaled)


LEAKY_RELU = defop(
    "leaky_relu", _leaky_relu_impl,
    kind=POINTWISE, promote=FLOAT, save=(0,), vjp=(_leaky_relu_vjp,), jvp=ELEMENTWISE,
    check_operands=_LEAKY_RELU_CHECK,
    template="{0} if {0} > 0 else {0} * {p[negative_slope]}",
    saved_names={"self": _SELF, "negative_slope": ("param", "negative_slope")})


# The in-place forms (leaky_relu_, elu_) save their result, as torch's LeakyReluBackward1 and
# EluBackward1 do: the input is overwritten.


def _leaky_relu_result_vjp(g, ans, x, negative_slope):
    if negative_slope < 0:  # the sign of the input is lost: torch refuses, at backward
        raise RuntimeError(
            "In-place leakyReLu backward calculation is triggered with a negative slope which "
            "is not supported. This is caused by calling in-place forward function with a "
            "negative slope, please call out-of-place version instead. File an issue at "
            "https://github.com/pytorch/pytorch if you do require supporting in-place "
            "leakRelu backward calculation with negative slope")
    return apply(LEAKY_RELU_BACKWARD, g, ans, negative_slope=negative_slope)


LEAKY_RELU_RESULT = defop(
    "leaky_relu_result", LEAKY_RELU.impl, kind=POINTWISE, promote=FLOAT, save_output=True,
    node_name="LeakyReluBackward1", vjp=(_leaky_relu_result_vjp,), jvp=ELEMENTWISE,
    check_operands=_LEAKY_RELU_CHECK,
    template=LEAKY_RELU.template,
    saved_names={"result": ("output", 0), "negative_slope": ("param", "negative_slope")})


def _elu_impl(x, *, alpha, scale, input_scale):
    with np.errstate(over="ignore"):
        neg = scale * alpha * np.expm1(np.minimum(x, 0) * input_scale)
    return np.where(x > 0, x * scale, neg).astype(x.dtype, copy=False)


def _elu_vjp(g, ans, x, alpha, scale, input_scale):
    from .elementwise import where

    neg = (x.clamp(max=0) * input_scale).exp() * (scale * alpha * input_scale)
    return where(x > 0, g * scale, g * neg)


ELU = defop("elu", half_in_float32(_elu_impl), kind=POINTWISE, promote=FLOAT, save=(0,),
            vjp=(_elu_vjp,),
           opmath_backward=True,
            jvp=ELEMENTWISE, check_operands=_ELU_CHECK,
            template="{0} * {p[scale]} if {0} > 0 else "
                     "{p[scale]} * {p[alpha]} * expm1({0} * {p[input_scale]})",
            saved_names={"self": _SELF, "alpha": ("param", "alpha"), "scale": ("param", "scale"),
                         "input_scale": ("param", "input_scale")})


def _elu_result_vjp(g, ans, x, alpha, scale, input_scale):
    from .elementwise import where

    if alpha < 0:
        raise RuntimeError(
            "In-place elu backward calculation is triggered with a negative slope which is not "
            "supported. This is caused by calling in-place forward function with a negative "
            "slope, please call out-of-place version instead.")
    return where(ans > 0, g * scale, g * ((ans + alpha * scale) * input_scale))


ELU_RESULT = defop("elu_result", _elu_impl, kind=POINTWISE, promote=FLOAT, save_output=True,
                   node_name="EluBackward1", vjp=(_elu_result_vjp,), jvp=ELEMENTWISE,
                   check_operands=_ELU_CHECK,
                   template=ELU.template,
                   saved_names={"result": ("output", 0), "alpha": ("param", "alpha"),
                                "scale": ("param", "scale"),
                                "input_scale": ("param", "input_scale")})


# ---------------------------------------------------------------- losses


def _loss_jvp(vjp_rules):
    """Forward-mode rule of a loss from its (elementwise-gradient) VJP rules: the tangent is
    ``sum_i reduce(d loss / d input_i * t_i)``, computed with ``reduction='none'``."""
    def jvp(tangents, ans, *inputs, reduction, **params):
        out = None
        for t, rule in zip(tangents, vjp_rules):
            if t is None or rule is None:
                continue
            term = rule(t, None, *inputs, reduction="none", **params)
            out = term if out is None else out + term
        if out is None:
            return None
        return out.mean() if reduction == "mean" else out.sum() if reduction == "sum" else out
    return jvp



def _reduce_np(loss, reduction):
    if reduction == "none":
        return loss
    return np.asarray(loss.mean() if reduction == "mean" else loss.sum(), dtype=loss.dtype)


def _reduce_grad(g, reduction, numel):
    return g / max(numel, 1) if reduction == "mean" else g


def _loss_meta(*args, reduction, **params):
    shape = broadcast_shapes(*(tuple(a.shape) for a in args if a is not None))
    return (shape if reduction == "none" else ()), args[0].dtype


def _bce_impl(x, t, w, reduction):
    if np.any((x < 0) | (x > 1)) or np.any(np.isnan(x)):
        raise RuntimeError("all elements of input should be between 0 and 1")
    if np.any((t < 0) | (t > 1)) or np.any(np.isnan(t)):
        raise RuntimeError("all elements of target should be between 0 and 1")
    with np.errstate(divide="ignore"):
        loss = -(t * np.maximum(np.log(x), -100) + (1 - t) * np.maximum(np.log1p(-x), -100))
    if w is not None:
        loss = loss * w
    return _reduce_np(loss.astype(x.dtype, copy=False), reduction)


def _bce_vjp_input(g, ans, x, t, w, reduction):
    d = (x - t) / ((1 - x) * x).clamp(min=1e-12)
    if w is not None:
        d = d * w
    return _reduce_grad(g, reduction, x.numel()) * d


def _bce_vjp_target(g, ans, x, t, w, reduction):
    d = (-x).log1p() - x.log()
    if w is not None:
        d = d * w
    return _reduce_grad(g, reduction, x.numel()) * d


BINARY_CROSS_ENTROPY = defop(
    "binary_cross_entropy", _bce_impl, kind=OPAQUE, meta=_loss_meta, save=(0, 1, 2),
    check_operands=_refuse_non_floating("binary_cross_entropy", (0,)),
    vjp=(_bce_vjp_input, _bce_vjp_target, None), jvp=_loss_jvp((_bce_vjp_input, _bce_vjp_target)),
    saved_names={"self": _SELF, "target": ("input", 1), "weight": ("input", 2)})


def _softplus_neg(x):
    """``log(1 + exp(-x))``, stable for both signs (jitgrad ops)."""
    return (-x.abs()).exp().log1p() + (-x).clamp(min=0)


def _bce_logits_impl(x, t, w, pw, reduction):
    # torch's steps, each rounded to the dtype it is written in: log_sigmoid(input) (computed
    # in float32 at least) times the pos_weight factor in the input's dtype, then the loss in
    # 1 - target's (the target's shape and dtype)
    wide = np.promote_types(x.dtype, np.float32)
    xw = x.astype(wide, copy=False)
    log_sigmoid = -(np.log1p(np.exp(-np.abs(xw))) + np.maximum(-xw, 0))
    log_sigmoid = log_sigmoid.astype(x.dtype, copy=False)
    if pw is not None:
        log_weight = (pw - 1) * t + 1
        log_sigmoid = (log_sigmoid * log_weight).astype(x.dtype, copy=False)
    loss = ((1 - t) * x).astype(t.dtype, copy=False)
    loss = (loss - log_sigmoid).astype(t.dtype, copy=False)
    if w is not None:
        loss = (loss * w).astype(t.dtype, copy=False)
    return _reduce_np(loss, reduction)


def _bce_logits_meta(x, t, w, pw, reduction):
    return (tuple(t.shape) if reduction == "none" else ()), t.dtype


_LOG_SIGMOID_CHECK = _refuse_non_floating("log_sigmoid_cpu")


def _bce_logits_check(args):
    """torch's kernel, ``log_sigmoid(input)``, then ``log_sigmoid_input.mul_((pos_weight - 1)
    .mul(target).add_(1))``, ``(1 - target).mul_(input).sub_(log_sigmoid_input)`` and
    ``loss.mul_(weight)``: the errors of those steps, in their order (an integer target cannot
    hold the float loss; a weight or pos_weight that broadcasts beyond the loss's shape cannot be
    written into it)."""
    from .. import dtypes
    from .elementwise import _no_bool_subtraction
    from .inplace import check_writable

    x, t, w, pw = (tuple(args) + (None, None))[:4]
    _LOG_SIGMOID_CHECK((x,))

    def written(into_shape, into_dtype, other):  # into.mul_(other)'s checks
        check_writable(dtypes.result_type(Meta(into_shape, into_dtype), other),
                       broadcast_shapes(into_shape, tuple(other.shape)), into_dtype, into_shape)

    if pw is not None:
        if pw.dtype is dtypes.bool:
            _no_bool_subtraction((pw, 1))
        log_weight = Meta(broadcast_shapes(tuple(pw.shape), tuple(t.shape)),
                          dtypes.result_type(Meta(tuple(pw.shape), dtypes.result_type(pw, 1)), t))
        written(tuple(x.shape), x.dtype, log_weight)
    if t.dtype is dtypes.bool:
        _no_bool_subtraction((t, True))
    one_minus_t = Meta(tuple(t.shape), dtypes.result_type(t, 1))
    written(one_minus_t.shape, one_minus_t.dtype, x)
    if w is not None:
        written(one_minus_t.shape, one_minus_t.dtype, w)


def _numel(*args):
    return int(np.prod(broadcast_shapes(*(tuple(a.shape) for a in args if a is not None))))


def _bce_logits_vjp_input(g, ans, x, t, w, pw, reduction):
    if pw is not None:
        d = ((pw - 1) * t + 1) * x.sigmoid() - pw * t
    else:
        d = x.sigmoid() - t
    if w is not None:
        d = d * w
    return _reduce_grad(g, reduction, _numel(x, t, w, pw)) * d


def _bce_logits_vjp_target(g, ans, x, t, w, pw, reduction):
    d = -x + (pw - 1) * _softplus_neg(x) if pw is not None else -x
    if w is not None:
        d = d * w
    return _reduce_grad(g, reduction, _numel(x, t, w, pw)) * d


BINARY_CROSS_ENTROPY_WITH_LOGITS = defop(
    "binary_cross_entropy_with_logits", _bce_logits_impl, kind=OPAQUE, meta=_bce_logits_meta,
    save=(0, 1, 2, 3), vjp=(_bce_logits_vjp_input, _bce_logits_vjp_target, None, None),
    check_operands=_bce_logits_check,
    jvp=_loss_jvp((_bce_logits_vjp_input, _bce_logits_vjp_target)),
    saved_names={"self": _SELF, "target": ("input", 1), "weight": ("input", 2),
                 "pos_weight": ("input", 3)})


def _smooth_l1_input_grad(g, ans, x, y, reduction, beta):
    return _smooth_l1_grad(g, x, y, reduction, beta)


def _smooth_l1_impl(x, y, reduction, beta):
    d = np.abs(x - y)
    loss = np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta).astype(d.dtype, copy=False)
    return _reduce_np(loss, reduction)


def _smooth_l1_grad(g, x, y, reduction, beta):
    from .elementwise import where

    diff = x - y
    d = where(diff.abs() < beta, diff / beta, diff.sign())
    return _reduce_grad(g, reduction, diff.numel()) * d


def _promoted_loss_meta(x, y, reduction, **params):
    # (torch's TensorIterator loss: the result in the operands' promoted dtype)
    from .. import dtypes

    shape = broadcast_shapes(tuple(x.shape), tuple(y.shape))
    return (shape if reduction == "none" else ()), dtypes.result_type(x, y)


SMOOTH_L1_LOSS = defop(
    "smooth_l1_loss", _smooth_l1_impl, kind=OPAQUE, meta=_promoted_loss_meta, save=(0, 1),
    check_operands=_refuse_non_floating("smooth_l1_cpu"),
    vjp=(_smooth_l1_input_grad,
         lambda g, ans, x, y, reduction, beta: -_smooth_l1_grad(g, x, y, reduction, beta)),
    jvp=_loss_jvp((_smooth_l1_input_grad,
                   lambda g, ans, x, y, reduction, beta: -_smooth_l1_grad(g, x, y, reduction,
                                                                          beta))),
    saved_names={"self": _SELF, "target": ("input", 1), "beta": ("param", "beta")})


def _huber_impl(x, y, reduction, delta):
    d = np.abs(x - y)
    loss = np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)).astype(d.dtype,
                                                                              copy=False)
    return _reduce_np(loss, reduction)


def _huber_grad(g, x, y, reduction, delta):
    diff = x - y
    return _reduce_grad(g, reduction, diff.numel()) * diff.clamp(-delta, delta)


_HUBER_KERNEL_CHECK = _refuse_non_floating("huber_cpu")


def _huber_check(args):
    _HUBER_KERNEL_CHECK(args)
    x = args[0]
    if not (x.dtype.is_floating_point or x.dtype.is_complex):  # (an int input, float target)
        from .. import dtypes

        raise RuntimeError(
            f"result type {dtypes.result_type(*args[:2])._scalar_name} can't be cast to "
            f"the desired output type {x.dtype._scalar_name}")


HUBER_LOSS = defop(
    "huber_loss", _huber_impl, kind=OPAQUE, meta=_loss_meta, save=(0, 1),
    check_operands=_huber_check,
    vjp=(lambda g, ans, x, y, reduction, delta: _huber_grad(g, x, y, reduction, delta),
         lambda g, ans, x, y, reduction, delta: -_huber_grad(g, x, y, reduction, delta)),
    jvp=_loss_jvp((lambda g, ans, x, y, reduction, delta: _huber_grad(g, x, y, reduction, delta),
                   lambda g, ans, x, y, reduction, delta: -_huber_grad(g, x, y, reduction,
                                                                       delta))),
    saved_names={"self": _SELF, "target": ("input", 1), "delta": ("param", "delta")})

# ---------------------------------------------------------------- embedding and padding


def _embedding_impl(weight, indices, padding_idx, scale_grad_by_freq):
    n = weight.shape[0]
    if indices.size and (indices.min() < 0 or indices.max() >= n):
        raise IndexError("index out of range in self")
    return weight[indices]


def _embedding_meta(weight, indices, padding_idx, scale_grad_by_freq):
    if indices.dtype.is_floating_point or indices.dtype.is_complex:
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            "types: Long, Int; but got jitgrad." + indices.dtype._legacy
            + " instead (while checking arguments for embedding)")
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    return tuple(indices.shape) + (weight.shape[1],), weight.dtype


def _embedding_vjp(g, ans, weight, indices, padding_idx, scale_grad_by_freq):
    from .creation import ones, zeros
    from .indexing import index_add

    n, dim = weight.shape
    flat = indices.reshape(-1)
    rows = g.reshape(-1, dim)
    if padding_idx >= 0:
        rows = rows.masked_fill((flat == padding_idx).unsqueeze(1), 0.0)
    if scale_grad_by_freq:
        counts = index_add(zeros((n,), dtype=g.dtype, device=g.device), 0, flat,
                           ones((flat.shape[0],), dtype=g.dtype, device=g.device))
        rows = rows / counts.index_select(0, flat).unsqueeze(1)
    return index_add(zeros((n, dim), dtype=g.dtype, device=g.device), 0, flat, rows), None


EMBEDDING = defop("embedding", _embedding_impl, kind=OPAQUE, meta=_embedding_meta, save=(1,),
                  vjp=_embedding_vjp,
                  jvp=lambda ts, ans, weight, indices, padding_idx, scale_grad_by_freq: None if
                  ts[0] is None else ts[0][indices],
                  saved_names={"indices": ("input", 1), "padding_idx": ("param", "padding_idx"),
                               "scale_grad_by_freq": ("param", "scale_grad_by_freq")})


def _pad_shape(shape, pad):
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > len(shape):
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but "
            f"got padding length {len(pad)} and input of dimension {len(shape)}")
    out = list(shape)
    for i in range(len(pad) // 2):
        d = len(shape) - 1 - i
        new = shape[d] + pad[2 * i] + pad[2 * i + 1]
        if new < 0:
            raise RuntimeError(
                f"The input size {shape[d]}, plus negative padding {pad[2 * i]} and "
                f"{pad[2 * i + 1]} resulted in a negative output size, which is invalid. "
                f"Check dimension {d} of your input.")
        out[d] = new
    return tuple(out)


def _constant_pad_impl(x, pad, value):
    shape = _pad_shape(x.shape, pad)
    out = np.full(shape, value, dtype=x.dtype)
    src, dst = [slice(None)] * x.ndim, [slice(None)] * x.ndim
    for i in range(len(pad) // 2):
        d = x.ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        s0, s1 = max(-lo, 0), x.shape[d] - max(-hi, 0)
        if s1 <= s0:
            return out
        src[d] = slice(s0, s1)
        dst[d] = slice(max(lo, 0), max(lo, 0) + s1 - s0)
    out[tuple(dst)] = x[tuple(src)]
    return out


def _constant_pad_vjp(g, ans, x, pad, value):
    return apply(CONSTANT_PAD_ND, g, pad=tuple(-p for p in pad), value=0.0)


CONSTANT_PAD_ND = defop(
    "constant_pad_nd", keeps_channels_last(_constant_pad_impl), kind=OPAQUE,
    meta=lambda x, pad, value: (_pad_shape(tuple(x.shape), pad), x.dtype),
    vjp=(_constant_pad_vjp,),
    # forward mode: the tangent padded with zeros (the pad value is a constant)
    jvp=lambda ts, ans, x, pad, value: None if ts[0] is None else apply(
        CONSTANT_PAD_ND, ts[0], pad=pad, value=0.0),
    # vmap: the pads cover trailing dims only, so the batch dim in front is left alone
    batch=lambda op, values, flags, params, size: apply(op, values[0], **params)
    if flags[0] and len(params["pad"]) // 2 < values[0].ndim else NotImplemented,
    saved_names={"pad": ("param", "pad")})



def pad_positions(mode, n, lo, hi):
    """The source index of each output position along one padded dim (``reflect``,
    ``replicate`` or ``circular``), as an int64 array."""
    pos = np.arange(-lo, n + hi)
    if mode == "reflect":
        pos = np.abs(pos)
        pos = np.where(pos >= n, 2 * (n - 1) - pos, pos)
    elif mode == "replicate":
        pos = np.clip(pos, 0, n - 1)
    else:  # (torch crops the negative pads first and wraps within what is left)
        start = max(-lo, 0)
        kept = n - start - max(-hi, 0)
        pos = start + np.arange(-max(lo, 0), kept + max(hi, 0)) % kept
    return pos.astype(np.int64)


def _gather_pad_impl(mode):
    def impl(x, padding):
        out = x
        for i in range(len(padding) // 2):
            d = x.ndim - 1 - i
            out = np.take(out, pad_positions(mode, x.shape[d], padding[2 * i],
                                             padding[2 * i + 1]), axis=d)
        return out
    return impl


def _gather_pad_vjp(mode):
    def rule(g, ans, x, padding):
        from .creation import tensor, zeros
        from .indexing import index_add

        for i in range(len(padding) // 2):
            d = x.ndim - 1 - i
            idx = tensor(pad_positions(mode, x.shape[d], padding[2 * i], padding[2 * i + 1]),
                         device=g.device)
            shape = tuple(g.shape[:d]) + (x.shape[d],) + tuple(g.shape[d + 1:])
            g = index_add(zeros(shape, dtype=g.dtype, device=g.device), d, idx, g)
        return g
    return rule


def _gather_pad_meta(x, padding):
    shape = list(x.shape)
    for i in range(len(padding) // 2):
        shape[x.ndim - 1 - i] += padding[2 * i] + padding[2 * i + 1]
    return tuple(shape), x.dtype


# reflection_pad1d ... replication_pad3d: torch's nodes (ReflectionPad1DBackward0, ...)
GATHER_PADS = {}
for _mode, _torch_name in (("reflect", "Reflection"), ("replicate", "Replication")):
    for _dims in (1, 2, 3):
        GATHER_PADS[_mode, _dims] = defop(
            f"{_torch_name.lower()}_pad{_dims}d", keeps_channels_last(_gather_pad_impl(_mode)),
            kind=OPAQUE,
            node_name=f"{_torch_name}Pad{_dims}DBackward0", meta=_gather_pad_meta, save=(0,),
            check_operands=refuse_dtypes(bool=f"{_torch_name.lower()}_pad{_dims}d"),
            vjp=(_gather_pad_vjp(_mode),),
            jvp=lambda ts, ans, x, padding, _op=(_mode, _dims): None if ts[0] is None else
            apply(GATHER_PADS[_op], ts[0], padding=padding),
            saved_names={"self": _SELF, "padding": ("param", "padding")})

