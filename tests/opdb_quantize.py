"""opdb records of ``jitgrad/ops/fake_quantize.py`` (fake_quantize_per_tensor_affine, its
tensor-qparams overload, fake_quantize_per_channel_affine), appended to ``opdb.OP_DB``.

Scales are powers of two, so the float32 arithmetic of torch's kernels and the float64 NumPy
references agree exactly. The records are not differentiable for ``gradcheck``: the gradient
is the straight-through estimator, not the derivative of a step function;
``tests/test_fake_quantize.py`` compares it with torch's."""

from __future__ import annotations

import importlib

import numpy as np
from opdb import OpInfo, Sample, _u


def _lib(t):
    return importlib.import_module(type(t).__module__.split(".")[0])  # jitgrad or torch


def _fake_quantize_ref(x, scale, zero_point, quant_min, quant_max):
    codes = np.clip(np.rint(x / scale) + zero_point, quant_min, quant_max)
    return (codes - zero_point) * scale


def _per_tensor_samples(rng):
    return [Sample((_u(rng, 4, 5, lo=-6, hi=6), 0.25, 3, -8, 7)),
            Sample((_u(rng, 3, 2, 2, lo=-1, hi=40), 0.125, 0, 0, 255)),
            Sample((_u(rng, 6, lo=-300, hi=300), 1.0, -2, -128, 127))]


def _tensor_qparams_call(f, x, scale, zero_point, quant_min, quant_max):
    lib = _lib(x)
    return f(x, lib.tensor(scale), lib.tensor(zero_point, dtype=lib.int32), quant_min,
             quant_max)


def _per_channel_samples(rng):
    return [Sample((_u(rng, 4, 3, lo=-6, hi=6), np.array([0.25, 0.5, 0.125]),
                    np.array([0, 2, -3], np.int32), 1, -8, 7)),
            Sample((_u(rng, 2, 3, 5, lo=-2, hi=30), np.array([0.125, 1.0]),
                    np.array([10, 0], np.int32), 0, 0, 255)),
            Sample((_u(rng, 2, 4, lo=-9, hi=9), np.array([0.5, 0.5, 0.25, 2.0]),
                    np.array([0.5, -1.25, 0.0, 3.0]), 1, -16, 15))]


def _per_channel_call(f, x, scale, zero_point, axis, quant_min, quant_max):
    if zero_point.dtype.is_floating_point:
        zero_point = zero_point.float()
    return f(x, scale.float(), zero_point, axis, quant_min, quant_max)


def _per_channel_ref(x, scale, zero_point, axis, quant_min, quant_max):
    shape = [1] * x.ndim
    shape[axis] = -1
    scale, zero_point = scale.reshape(shape), zero_point.reshape(shape)
    if zero_point.dtype.kind == "f":
        codes = np.clip(np.rint(x / scale + zero_point), quant_min, quant_max)
        return (codes - zero_point) * scale
    return _fake_quantize_ref(x, scale, zero_point, quant_min, quant_max)


def quantize_records() -> list[OpInfo]:
    return [
        OpInfo("fake_quantize_per_tensor_affine", "fake_quantize_per_tensor_affine",
               _per_tensor_samples, _fake_quantize_ref, differentiable=False),
        OpInfo("fake_quantize_per_tensor_affine(tensor qparams)",
               "fake_quantize_per_tensor_affine", _per_tensor_samples, _fake_quantize_ref,
               call=_tensor_qparams_call, differentiable=False),
        OpInfo("fake_quantize_per_channel_affine", "fake_quantize_per_channel_affine",
               _per_channel_samples, _per_channel_ref, call=_per_channel_call,
               differentiable=False),
    ]
