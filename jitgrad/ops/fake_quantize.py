"""torch's fake quantization: ``fake_quantize_per_tensor_affine`` and
``fake_quantize_per_channel_affine``, the ops quantization-aware training inserts.

``out = (clamp(round(x / scale) + zero_point, quant_min, quant_max) - zero_point) * scale``,
rounding half to even, in float32 arithmetic as torch's CPU kernels (``1 / scale`` once, then a
product). The gradient is the straight-through estimator torch uses: the incoming gradient where
the rounded code fell inside ``[quant_min, quant_max]``, zero elsewhere (``grad * mask``); scale
and zero point get none, and torch refuses them when they require grad.

Where the two kernels differ, jitgrad follows each: per tensor, the code is clamped as a float
(``inf`` gives ``quant_max``, NaN ``quant_min``) and the result is computed in float32 for a
float64 input; per channel, the code is converted to an integer first (an out-of-range or NaN
code gives ``quant_min``) and a float64 input is computed in float64.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import dtypes
from .arg_errors import invalid_combination
from .creation import tensor
from . import registry
from .registry import OPAQUE, apply, defop
from .surface import public

if TYPE_CHECKING:
    from ..tensor import Tensor

_INT64_MIN = np.iinfo(np.int64).min


def _compute_dtype(x: np.ndarray) -> Any:
    return np.float64 if x.dtype == np.float64 else np.float32


def _per_tensor_codes(x, scale, zero_point):
    sc = np.float32(scale)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        inv = np.float32(1.0) / sc
        return np.rint(x.astype(_compute_dtype(x), copy=False) * inv) + zero_point, sc


def _per_tensor(x, scale, zero_point, quant_min, quant_max):
    """torch's cachemask form: the fake-quantized values and the mask of the codes in range
    (all its backward keeps: the qparams may change in place after)."""
    codes, sc = _per_tensor_codes(x, scale, zero_point)
    with np.errstate(invalid="ignore", over="ignore"):
        clamped = np.fmin(np.fmax(codes, quant_min), quant_max)  # (NaN: fmax gives quant_min)
        out = (clamped.astype(np.float32) - np.float32(zero_point)) * sc
    return out.astype(x.dtype, copy=False), (codes >= quant_min) & (codes <= quant_max)


def _scalar_qparams(compute):
    def impl(x, *, scale, zero_point, quant_min, quant_max):
        return compute(x, scale, zero_point, quant_min, quant_max)

    return impl


def _tensor_qparams(compute):
    def impl(x, scale, zero_point, *, quant_min, quant_max):
        return compute(x, scale.reshape(-1)[0], int(zero_point.reshape(-1)[0]), quant_min,
                       quant_max)

    return impl


def _channel_shape(x, axis):
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    return shape


def _per_channel_codes(x, scale, zero_point, axis):
    shape = _channel_shape(x, axis)
    sc = scale.astype(np.float32).reshape(shape)
    zp = zero_point.reshape(shape)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        inv = np.float32(1.0) / sc
        if zp.dtype.kind == "f":  # (float zero points: rounded together with the product)
            zp = zp.astype(np.float32)
            codes = np.rint(x.astype(_compute_dtype(x), copy=False) * inv + zp)
        else:
            codes = np.rint(x.astype(_compute_dtype(x), copy=False) * inv) + zp.astype(np.int64)
        finite = np.isfinite(codes) & (np.abs(codes) < 2.0 ** 63)
        codes = np.where(finite, codes, _INT64_MIN)  # (C's float-to-int64 for the rest)
    return codes, sc, zp


def _per_channel_impl(x, scale, zero_point, *, axis, quant_min, quant_max):
    codes, sc, zp = _per_channel_codes(x, scale, zero_point, axis)
    # (with float zero points torch's kernel computes the product in float64)
    dt = np.float64 if zp.dtype.kind == "f" else _compute_dtype(x)
    out = np.clip(codes, quant_min, quant_max).astype(dt) - zp.astype(dt)
    values = (out * sc.astype(dt)).astype(x.dtype, copy=False)
    return values, (codes >= quant_min) & (codes <= quant_max)  # (as _per_tensor)


def _cachemask_meta(x, *qparams, **params):
    return (tuple(x.shape), tuple(x.shape)), (x.dtype, dtypes.bool)


def _straight_through(grads, ans, x, *qparams, **params):
    return (grads[0] * ans[1].to(grads[0].dtype),) + (None,) * len(qparams)


def _straight_through_jvp(tangents, ans, x, *qparams, **params):
    t = tangents[0]
    return (None if t is None else t * ans[1].to(t.dtype)), None


def _batch_input_only(op, values, flags, params, size):
    """vmap: with only the input batched the op is pointwise in it (the batch dim in front)."""
    if not flags[0] or any(flags[1:]):
        return NotImplemented
    return apply(op, *values, **params)


def _batch_channels(op, values, flags, params, size):
    """vmap: the channel axis moves past the batch dim."""
    if not flags[0] or any(flags[1:]):
        return NotImplemented
    return apply(op, *values, **dict(params, axis=params["axis"] + 1))


# each returns (values, mask) and saves only the mask, as torch's ``*_cachemask`` ops
PER_TENSOR = defop("fake_quantize_per_tensor_affine", _scalar_qparams(_per_tensor),
                   kind=OPAQUE, meta=_cachemask_meta, n_outputs=2, save_output=(1,),
                   vjp=_straight_through, jvp=_straight_through_jvp, batch=_batch_input_only,
                   node_name="FakeQuantizePerTensorAffineCachemaskBackward0")
PER_TENSOR_TENSOR_QPARAMS = defop(
    "fake_quantize_per_tensor_affine_tensor_qparams", _tensor_qparams(_per_tensor), kind=OPAQUE,
    meta=_cachemask_meta, n_outputs=2, save_output=(1,), vjp=_straight_through,
    jvp=_straight_through_jvp, batch=_batch_input_only,
    node_name="FakeQuantizePerTensorAffineCachemaskTensorQparamsBackward0")
PER_CHANNEL = defop("fake_quantize_per_channel_affine", _per_channel_impl, kind=OPAQUE,
                    meta=_cachemask_meta, n_outputs=2, save_output=(1,),
                    vjp=_straight_through, jvp=_straight_through_jvp, batch=_batch_channels,
                    node_name="FakeQuantizePerChannelAffineCachemaskBackward0")


_PER_TENSOR_SIGNATURES = (
    "Tensor input, Tensor scale, Tensor zero_point, int quant_min, int quant_max",
    "Tensor input, float scale, int zero_point, int quant_min, int quant_max")


def _check_arguments(args: tuple, kernel: str) -> None:
    x, rest = args[0], args[1:]
    ints = [v for v in rest[-2:]] + ([] if isinstance(rest[1], registry.Tensor) else [rest[1]])
    if not isinstance(x, registry.Tensor) or any(isinstance(v, (bool, float)) or not isinstance(
            v, (int, np.integer)) for v in ints):
        raise invalid_combination("fake_quantize_per_tensor_affine", args, {},
                                  _PER_TENSOR_SIGNATURES)
    _check_floating(x, kernel)


def _check_floating(x: Any, kernel: str) -> None:
    if x.dtype.is_complex or not x.dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{x.dtype._scalar_name}'")


def _check_channel_arguments(*args: Any) -> None:
    for position, (name, value) in enumerate(zip(
            ("input", "scale", "zero_point", "axis", "quant_min", "quant_max"), args), 1):
        if position <= 3 and not isinstance(value, registry.Tensor):
            expected = "Tensor"
        elif position > 3 and (isinstance(value, bool) or not isinstance(
                value, (int, np.integer))):
            expected = "int"
        else:
            continue
        raise TypeError(f"fake_quantize_per_channel_affine(): argument '{name}' (position "
                        f"{position}) must be {expected}, not {type(value).__name__}")


def _check_range(quant_min: int, quant_max: int, zero_points: Any) -> None:
    if quant_min > quant_max:
        raise RuntimeError("`quant_min` should be less than or         equal to `quant_max`.")
    if any(not quant_min <= z <= quant_max for z in zero_points):
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")


def _not_differentiable(fname: str, name: str, value: Any) -> None:
    if isinstance(value, registry.Tensor) and value.requires_grad:
        raise RuntimeError(f"The function '{fname}' is not differentiable with respect to "
                           f"argument '{name}'. This input cannot have requires_grad True.")


@public("fake_quantize_per_tensor_affine", method=False)
def fake_quantize_per_tensor_affine(input: Tensor, scale: Any, zero_point: Any,  # noqa: A002
                                    quant_min: int, quant_max: int) -> Tensor:
    """Quantizes ``input`` to integer codes and back, as quantization-aware training does.

    Args:
        input: a floating tensor.
        scale: the quantization step (a float, or a one-element float32 tensor).
        zero_point: the code of 0.0 (an int, or a one-element int32 tensor).
        quant_min: the smallest code (e.g. -128 for qint8, 0 for quint8).
        quant_max: the largest code (e.g. 127, 255).

    Returns:
        ``(clamp(round(input / scale) + zero_point, quant_min, quant_max) - zero_point) *
        scale``, of ``input``'s dtype; its gradient passes where the code was in range.
    """
    _check_arguments((input, scale, zero_point, quant_min, quant_max),
                     "fake_quantize_tensor_cachemask_kernel_type_handling")
    if isinstance(scale, registry.Tensor) or isinstance(zero_point, registry.Tensor):
        fname = "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams"
        _not_differentiable(fname, "scale", scale)
        _not_differentiable(fname, "zero_point", zero_point)
        _check_range(quant_min, quant_max, ())  # (torch checks no tensor zero point's range)
        scale = scale if isinstance(scale, registry.Tensor) else tensor(float(scale))
        if not isinstance(zero_point, registry.Tensor):
            zero_point = tensor(int(zero_point))
        for value in (scale, zero_point):
            if value.numel() != 1:
                raise RuntimeError(f"a Tensor with {value.numel()} elements cannot be "
                                   "converted to Scalar")
        return apply(PER_TENSOR_TENSOR_QPARAMS, input, scale, zero_point,
                     quant_min=int(quant_min), quant_max=int(quant_max))[0]
    _check_range(quant_min, quant_max, (zero_point,))
    return apply(PER_TENSOR, input, scale=float(scale), zero_point=int(zero_point),
                 quant_min=int(quant_min), quant_max=int(quant_max))[0]


@public("fake_quantize_per_channel_affine", method=False)
def fake_quantize_per_channel_affine(input: Tensor, scale: Tensor,  # noqa: A002
                                     zero_point: Tensor, axis: int, quant_min: int,
                                     quant_max: int) -> Tensor:
    """Quantizes ``input`` to integer codes and back with one scale and zero point per slice
    along ``axis``, as per-channel quantization-aware training does.

    Args:
        input: a floating tensor.
        scale: float32 scales, one per slice of ``input`` along ``axis``.
        zero_point: int32 (or float) zero points, one per slice.
        axis: the channel dimension.
        quant_min: the smallest code.
        quant_max: the largest code.

    Returns:
        The fake-quantized tensor, of ``input``'s dtype; its gradient passes where the code
        was in range.
    """
    _check_channel_arguments(input, scale, zero_point, axis, quant_min, quant_max)
    axis, quant_min, quant_max = int(axis), int(quant_min), int(quant_max)
    fname = "fake_quantize_per_channel_affine_cachemask"
    _not_differentiable(fname, "scale", scale)
    _not_differentiable(fname, "zero_point", zero_point)
    if scale.dtype not in (dtypes.float32, dtypes.bfloat16):
        raise RuntimeError(f"Scale must be Float or BFloat16, found {scale.dtype._scalar_name}")
    if zero_point.dtype not in (dtypes.int32, dtypes.float32, dtypes.float16):
        raise RuntimeError("Zero-point must be Int32, Float or Half, found "
                           f"{zero_point.dtype._scalar_name}")
    if scale.ndim != 1:
        raise RuntimeError("scale should be a 1-D tensor")
    if zero_point.ndim != 1:
        raise RuntimeError("zero point should be a 1-D tensor")
    if scale.shape[0] != zero_point.shape[0]:
        raise RuntimeError("scale and zero-point need to have the same dimensions")
    if not -input.ndim <= axis < max(input.ndim, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-input.ndim}, {input.ndim - 1}], but got {axis})")
    if scale.shape[0] != input.shape[axis]:
        raise RuntimeError("dimensions of scale and zero-point are not consistent with input "
                           "tensor")
    # (torch compares the truncated extremes of float zero points)
    zero_points = () if zero_point._trace is not None else [int(z) for z in zero_point.tolist()]
    _check_range(quant_min, quant_max, zero_points)
    if axis < 0:
        raise RuntimeError("`axis` must be between 0 and number of dimensions of input")
    _check_floating(input, "fake_quantize_channel_cachemask_cpu_type_handling")
    return apply(PER_CHANNEL, input, scale, zero_point, axis=axis, quant_min=quant_min,
                 quant_max=quant_max)[0]
