"""The nn and matmul ops take exactly the dtypes torch's CPU kernels take: each refusal (class
and text) against torch for every dtype kind, in the functional, Tensor method, in-place and
module forms and under ``jitgrad.jit``; and the mixes torch computes still compute, with
torch's values and dtypes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")

DTYPES = ("complex64", "complex128", "int64", "int32", "int16", "int8", "uint8", "bool",
          "float16", "bfloat16", "float32")


def _make(lib, shape, dtype: str, seed: int = 0):
    a = np.random.default_rng(seed).random(shape) * 3 - 1
    if dtype.startswith("complex"):
        a = a + 0.5j * a
    elif dtype == "bool":
        a = a > 0.5
    elif dtype.startswith(("int", "uint")):
        a = np.abs(a * 2).astype(np.int64)
    return lib.tensor(a).to(getattr(lib, dtype))


def _outcome(fn, lib, dtype: str):
    torch.manual_seed(0)
    jitgrad.manual_seed(0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(lib, dtype)
    except Exception as e:  # noqa: BLE001  (the class and text are compared)
        return "raised", type(e).__name__, " ".join(str(e).split())
    out = out[0] if isinstance(out, tuple) else out
    return "ok", str(out.dtype).split(".")[-1], None


def _f(lib):
    return lib.nn.functional


CASES = {
    "gelu": lambda L, d: _f(L).gelu(_make(L, (4,), d)),
    "gelu_tanh": lambda L, d: _f(L).gelu(_make(L, (4,), d), approximate="tanh"),
    "GELU_module": lambda L, d: L.nn.GELU()(_make(L, (4,), d)),
    "silu": lambda L, d: _f(L).silu(_make(L, (4,), d)),
    "silu_inplace": lambda L, d: _f(L).silu(_make(L, (4,), d), inplace=True),
    "layer_norm": lambda L, d: _f(L).layer_norm(_make(L, (2, 3), d), (3,)),
    "nll_loss": lambda L, d: _f(L).nll_loss(_make(L, (2, 3), d), L.tensor([0, 2])),
    "mse_loss": lambda L, d: _f(L).mse_loss(_make(L, (3,), d), _make(L, (3,), d, 1)),
    "softmax": lambda L, d: _f(L).softmax(_make(L, (2, 3), d), -1),
    "softmax_dim0": lambda L, d: _f(L).softmax(_make(L, (2, 3), d), 0),
    "softmax_method": lambda L, d: _make(L, (2, 3), d).softmax(1),
    "log_softmax": lambda L, d: _f(L).log_softmax(_make(L, (2, 3), d), 1),
    "log_softmax_dim0": lambda L, d: _make(L, (2, 3), d).log_softmax(0),
    "mm": lambda L, d: L.mm(_make(L, (2, 2), d), _make(L, (2, 2), d, 1)),
    "mm_method": lambda L, d: _make(L, (2, 2), d).mm(_make(L, (2, 2), d, 1)),
    "bmm": lambda L, d: L.bmm(_make(L, (1, 2, 2), d), _make(L, (1, 2, 2), d, 1)),
    "mv": lambda L, d: _make(L, (2, 2), d).mv(_make(L, (2,), d, 1)),
    "dot": lambda L, d: _make(L, (2,), d).dot(_make(L, (2,), d, 1)),
    "matmul_1d": lambda L, d: L.matmul(_make(L, (2,), d), _make(L, (2,), d, 1)),
    "matmul_op": lambda L, d: _make(L, (2, 2), d) @ _make(L, (2, 2), d, 1),
    "matmul_batched": lambda L, d: _make(L, (2, 2, 2), d).matmul(_make(L, (2, 2, 2), d, 1)),
    "addmm": lambda L, d: L.addmm(_make(L, (2, 2), d), _make(L, (2, 2), d, 1),
                                  _make(L, (2, 2), d, 2)),
    "tensordot": lambda L, d: L.tensordot(_make(L, (2, 2), d), _make(L, (2, 2), d, 1)),
    "conv1d": lambda L, d: _f(L).conv1d(_make(L, (1, 1, 4), d), _make(L, (1, 1, 2), d, 1)),
    "conv2d": lambda L, d: _f(L).conv2d(_make(L, (1, 1, 4, 4), d), _make(L, (1, 1, 2, 2), d, 1)),
    "conv2d_dilated": lambda L, d: _f(L).conv2d(_make(L, (1, 1, 4, 4), d),
                                                _make(L, (1, 1, 2, 2), d, 1), dilation=2),
    "conv3d": lambda L, d: _f(L).conv3d(_make(L, (1, 1, 2, 2, 2), d),
                                        _make(L, (1, 1, 1, 1, 1), d, 1)),
    "conv_transpose1d": lambda L, d: _f(L).conv_transpose1d(_make(L, (1, 1, 4), d),
                                                            _make(L, (1, 1, 2), d, 1)),
    "conv_transpose2d": lambda L, d: _f(L).conv_transpose2d(_make(L, (1, 1, 3, 3), d),
                                                            _make(L, (1, 1, 2, 2), d, 1)),
    "conv_transpose3d": lambda L, d: _f(L).conv_transpose3d(_make(L, (1, 1, 2, 2, 2), d),
                                                            _make(L, (1, 1, 1, 1, 1), d, 1)),
    "max_pool1d": lambda L, d: _f(L).max_pool1d(_make(L, (1, 1, 4), d), 2),
    "max_pool2d": lambda L, d: _f(L).max_pool2d(_make(L, (1, 1, 4, 4), d), 2),
    "max_pool3d": lambda L, d: _f(L).max_pool3d(_make(L, (1, 1, 2, 2, 2), d), 2),
    "avg_pool2d": lambda L, d: _f(L).avg_pool2d(_make(L, (1, 1, 4, 4), d), 2),
    "avg_pool3d": lambda L, d: _f(L).avg_pool3d(_make(L, (1, 1, 2, 2, 2), d), 2),
    "adaptive_avg_pool2d": lambda L, d: _f(L).adaptive_avg_pool2d(_make(L, (1, 1, 4, 4), d), 2),
    "adaptive_avg_pool3d": lambda L, d: _f(L).adaptive_avg_pool3d(_make(L, (1, 1, 2, 2, 4), d),
                                                                  2),
    "adaptive_max_pool2d": lambda L, d: _f(L).adaptive_max_pool2d(_make(L, (1, 1, 4, 4), d), 2),
    "adaptive_max_pool3d": lambda L, d: _f(L).adaptive_max_pool3d(_make(L, (1, 1, 2, 2, 4), d),
                                                                  2),
    "batch_norm": lambda L, d: _f(L).batch_norm(_make(L, (2, 3), d), _make(L, (3,), d, 1),
                                                _make(L, (3,), d, 2)),
    "hardtanh": lambda L, d: _f(L).hardtanh(_make(L, (4,), d)),
    "hardtanh_": lambda L, d: _f(L).hardtanh_(_make(L, (4,), d)),
    "relu6": lambda L, d: _f(L).relu6(_make(L, (4,), d)),
    "ReLU6_module": lambda L, d: L.nn.ReLU6()(_make(L, (4,), d)),
    "threshold": lambda L, d: _f(L).threshold(_make(L, (4,), d), 0.5, 0.0),
    "threshold_": lambda L, d: _f(L).threshold_(_make(L, (4,), d), 0.5, 0.0),
    "prelu": lambda L, d: _f(L).prelu(_make(L, (4,), d), _make(L, (1,), d, 1)),
    "leaky_relu": lambda L, d: _f(L).leaky_relu(_make(L, (4,), d)),
    "leaky_relu_": lambda L, d: _f(L).leaky_relu_(_make(L, (4,), d)),
    "elu": lambda L, d: _f(L).elu(_make(L, (4,), d)),
    "elu_": lambda L, d: _f(L).elu_(_make(L, (4,), d)),
    "selu": lambda L, d: _f(L).selu(_make(L, (4,), d)),
    "celu": lambda L, d: _f(L).celu(_make(L, (4,), d)),
    "rrelu_training": lambda L, d: _f(L).rrelu(_make(L, (4,), d), training=True),
    "glu": lambda L, d: _f(L).glu(_make(L, (4,), d)),
    "mish": lambda L, d: _f(L).mish(_make(L, (4,), d)),
    "logsigmoid": lambda L, d: _f(L).logsigmoid(_make(L, (4,), d)),
    "binary_cross_entropy": lambda L, d: _f(L).binary_cross_entropy(
        _make(L, (3,), d).abs() / 3 if d != "bool" else _make(L, (3,), d), _make(L, (3,), d, 1)),
    "binary_cross_entropy_with_logits": lambda L, d: _f(L).binary_cross_entropy_with_logits(
        _make(L, (3,), d), _make(L, (3,), d, 1)),
    "smooth_l1_loss": lambda L, d: _f(L).smooth_l1_loss(_make(L, (3,), d), _make(L, (3,), d, 1)),
    "huber_loss": lambda L, d: _f(L).huber_loss(_make(L, (3,), d), _make(L, (3,), d, 1)),
    "kl_div": lambda L, d: _f(L).kl_div(_make(L, (3,), d), _make(L, (3,), d, 1),
                                        reduction="batchmean"),
    "group_norm": lambda L, d: _f(L).group_norm(_make(L, (2, 4, 2), d), 2),
    "multi_margin_loss": lambda L, d: _f(L).multi_margin_loss(_make(L, (2, 3), d),
                                                              L.tensor([0, 2])),
    "multilabel_margin_loss": lambda L, d: _f(L).multilabel_margin_loss(
        _make(L, (2, 3), d), L.tensor([[0, 1, -1], [2, -1, 0]])),
    "pdist": lambda L, d: _f(L).pdist(_make(L, (3, 2), d)),
    "dropout": lambda L, d: _f(L).dropout(_make(L, (4,), d)),
    "dropout2d": lambda L, d: _f(L).dropout2d(_make(L, (1, 2, 2, 2), d)),
    "alpha_dropout": lambda L, d: _f(L).alpha_dropout(_make(L, (4,), d), training=True),
    "pad_reflect": lambda L, d: _f(L).pad(_make(L, (1, 4), d), (1, 1), mode="reflect"),
    "pad_replicate_2d": lambda L, d: _f(L).pad(_make(L, (1, 1, 3, 3), d), (1, 1, 1, 1),
                                               mode="replicate"),
    "interpolate_nearest": lambda L, d: _f(L).interpolate(_make(L, (1, 1, 2, 2), d),
                                                          scale_factor=2),
    "interpolate_nearest_1d": lambda L, d: _f(L).interpolate(_make(L, (1, 1, 2), d),
                                                             scale_factor=2),
    "interpolate_bilinear": lambda L, d: _f(L).interpolate(_make(L, (1, 1, 2, 2), d),
                                                           scale_factor=2, mode="bilinear"),
    "interpolate_linear": lambda L, d: _f(L).interpolate(_make(L, (1, 1, 2), d),
                                                         scale_factor=2, mode="linear"),
    "diff": lambda L, d: L.diff(_make(L, (4,), d)),
    "cross_entropy_probs": lambda L, d: _f(L).cross_entropy(_make(L, (2, 3), d),
                                                            _make(L, (2, 3), d, 1)),
    "multilabel_soft_margin_loss": lambda L, d: _f(L).multilabel_soft_margin_loss(
        _make(L, (2, 3), d), _make(L, (2, 3), d, 1)),
    "gumbel_softmax": lambda L, d: _f(L).gumbel_softmax(_make(L, (2, 3), d)),
    "adaptive_max_pool1d": lambda L, d: _f(L).adaptive_max_pool1d(_make(L, (1, 1, 4), d), 2),
    "max_pool1d_indices": lambda L, d: _f(L).max_pool1d(_make(L, (1, 1, 4), d), 2,
                                                        return_indices=True)[1],
    "interpolate_trilinear": lambda L, d: _f(L).interpolate(_make(L, (1, 1, 2, 2, 2), d),
                                                            scale_factor=2, mode="trilinear"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_dtypes_refused_and_taken_as_torch(name):
    fn = CASES[name]
    bad = []
    for dtype in DTYPES:
        expected = _outcome(fn, torch, dtype)
        got = _outcome(fn, jitgrad, dtype)
        if got != expected:
            bad.append(f"{dtype}: torch {expected}, jitgrad {got}")
    assert bad == []


def test_refusals_raise_at_call_time_under_jit():
    F = jitgrad.nn.functional

    def gelu_then_mm(x, y):
        return F.gelu(x) + x.mm(y)

    def softmax_of(x):
        return F.softmax(x, -1)

    x = jitgrad.ones((2, 2), dtype=jitgrad.float32)
    traced = jitgrad.jit(gelu_then_mm)
    assert np.allclose(traced(x, x).numpy(), (F.gelu(x) + x.mm(x)).numpy())
    with pytest.raises(NotImplementedError,
                       match="\"GeluKernelImpl\" not implemented for 'Long'"):
        jitgrad.jit(gelu_then_mm)(x.long(), x.long())
    with pytest.raises(NotImplementedError,
                       match="\"addmm_impl_cpu_\" not implemented for 'Bool'"):
        jitgrad.jit(lambda a, b: a.mm(b))(x.bool(), x.bool())
    with pytest.raises(NotImplementedError,
                       match="\"softmax_lastdim_kernel_impl\" not implemented for 'ComplexFloat'"):
        jitgrad.jit(softmax_of)(x.to(jitgrad.complex64))


def _same(t, j):
    assert str(t.dtype).split(".")[-1] == str(j.dtype).split(".")[-1]
    t = t.float() if t.dtype == torch.bfloat16 else t
    np.testing.assert_allclose(j.numpy().astype(np.complex128), t.numpy().astype(np.complex128),
                               rtol=1e-6, atol=1e-6)


ACCEPTED = {
    "mm_int64": lambda L: L.mm(_make(L, (3, 2), "int64"), _make(L, (2, 4), "int64", 1)),
    "matmul_int8_batched": lambda L: L.matmul(_make(L, (2, 3, 2), "int8"),
                                              _make(L, (2, 2), "int8", 1)),
    "conv2d_int64_dilated": lambda L: L.nn.functional.conv2d(
        _make(L, (1, 1, 5, 5), "int64"), _make(L, (1, 1, 2, 2), "int64", 1), dilation=2),
    "conv2d_uint8": lambda L: L.nn.functional.conv2d(_make(L, (1, 1, 4, 4), "uint8"),
                                                     _make(L, (1, 1, 2, 2), "uint8", 1)),
    "conv_transpose2d_int64": lambda L: L.nn.functional.conv_transpose2d(
        _make(L, (1, 1, 3, 3), "int64"), _make(L, (1, 1, 2, 2), "int64", 1)),
    "max_pool2d_int32": lambda L: L.nn.functional.max_pool2d(_make(L, (1, 1, 4, 4), "int32"), 2),
    "avg_pool2d_int64": lambda L: L.nn.functional.avg_pool2d(
        L.tensor(np.arange(-8, 8).reshape(1, 1, 4, 4) * 3), 2, padding=1),
    "avg_pool3d_int64": lambda L: L.nn.functional.avg_pool3d(
        L.tensor(np.arange(-20, 16).reshape(1, 1, 3, 3, 4) * 7), 2, padding=1,
        count_include_pad=False),
    "threshold_int_float": lambda L: L.nn.functional.threshold(
        L.tensor([-3, 0, 1, 3]), 0.5, 1.5),
    "hardtanh_int64": lambda L: L.nn.functional.hardtanh(L.tensor([-3, 0, 3]), -1.5, 1.5),
    "relu6_uint8": lambda L: L.nn.functional.relu6(L.tensor([0, 3, 9], dtype=L.uint8)),
    "hardtanh_uint8_nonneg": lambda L: L.nn.functional.hardtanh(
        L.tensor([0, 3, 9], dtype=L.uint8), 1, 4),
    "softmax_int_dtype": lambda L: L.nn.functional.softmax(L.tensor([1, 2, 3]), 0,
                                                           dtype=L.float32),
    "softmax_empty_int": lambda L: L.zeros(0, dtype=L.int64).softmax(0),
    "mse_float_int": lambda L: L.nn.functional.mse_loss(L.tensor([1.0, 2.0]), L.tensor([1, 3])),
    "smooth_l1_int_float": lambda L: L.nn.functional.smooth_l1_loss(L.tensor([1, 2]),
                                                                    L.tensor([1.0, 3.5])),
    "silu_complex": lambda L: L.nn.functional.silu(_make(L, (3,), "complex64")),
    "diff_bool": lambda L: L.diff(L.tensor([True, False, False, True])),
    "diff_bool_n2": lambda L: L.diff(L.tensor([True, False, False, True]), n=2),
    "diff_bool_prepend_int": lambda L: L.diff(L.tensor([True, False]), prepend=L.tensor([3])),
    "pad_circular_bool": lambda L: L.nn.functional.pad(L.tensor([[True, False, False]]), (1, 1),
                                                       mode="circular"),
    "dropout_int_eval": lambda L: L.nn.functional.dropout(L.tensor([1, 2]), training=False),
    "dropout_int_p1": lambda L: L.nn.functional.dropout(L.tensor([1, 2]), 1.0),
    "interpolate_uint8_bilinear": lambda L: L.nn.functional.interpolate(
        L.tensor(np.random.default_rng(3).integers(0, 256, (2, 3, 5, 7)).astype(np.uint8)),
        size=(9, 13), mode="bilinear"),
    "interpolate_uint8_nearest": lambda L: L.nn.functional.interpolate(
        L.tensor(np.arange(12, dtype=np.uint8).reshape(1, 1, 3, 4)), scale_factor=2),
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_accepted_dtypes_compute_torch_values(name):
    _same(ACCEPTED[name](torch), ACCEPTED[name](jitgrad))
