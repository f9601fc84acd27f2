"""Scripts written for these tests in the way low-precision training code is written in plain
PyTorch (set X35: straight-through estimators as custom autograd Functions, BinaryNet, XNOR-Net,
TWN/TTQ, DoReFa/PACT, learned step size quantisation, torch's fake-quantize ops and a QAT loop
with hand-written observers and conv+BN folding), run on jitgrad.

The script in tests/scripts/ runs as ``__main__``; these tests read what it computed from its
globals and assert that the estimators pass the gradients their papers define (the clipped
sign, Bi-Real's polynomial, XNOR-Net's full gradient equal to the detach-trick autograd one,
TTQ's three gradients, LSQ's step-size gradient), that ``once_differentiable`` refuses a second
differentiation, that the BNN and the QAT network learn, that folding BN into the conv and the
integer-only inference reproduce the fake-quantised model; and, where torch is installed, that
the fixed-weight parts equal the same script's with ``import torch``, and that the hand-written
LSQ and quantisation equal torch's learnable fake-quantize ops and quantized tensors.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run

SCRIPT = "quant_ste"


def _close_nested(ours, theirs, **tol) -> None:
    """Two results of the same structure (dicts and lists of tensors) are close, leaf by leaf."""
    if isinstance(theirs, dict):
        assert ours.keys() == theirs.keys()
        for key in theirs:
            _close_nested(ours[key], theirs[key], **tol)
    elif isinstance(theirs, list) and theirs and not isinstance(theirs[0], (bool, int, float)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _close_nested(a, b, **tol)
    else:
        _close(ours, theirs, **tol)


def _np(t):
    return np.asarray(t, dtype=np.float64)


# ------------------------------------------------------------------ estimators


def test_sign_estimators_pass_the_clipped_gradient():
    g = _run(SCRIPT)
    r = g["fixed_results"]
    x = _np(g["x_ste"].detach())
    weights = np.arange(1.0, 10.0)
    # BinaryNet's sign maps 0 to +1; torch.sign (the setup_context form) maps it to 0
    assert r["sign_ste"].tolist() == [-1, -1, -1, -1, 1, 1, 1, 1, 1]
    _close(r["sign_setup"], np.sign(x), rtol=0, atol=0)
    clipped = weights * (np.abs(x) <= 1)
    _close(r["sign_ste_grad"], clipped, rtol=0, atol=0)
    _close(r["sign_setup_grad"], clipped, rtol=0, atol=0)
    assert g["sign_grad_fn_name"] == "SignSetupContextBackward"
    # torch.vmap over the setup_context Function (generate_vmap_rule), then backward
    xb = np.stack([x, -x])
    _close(r["sign_vmap"], np.sign(xb), rtol=0, atol=0)
    _close(r["sign_vmap_grad"], np.sign(xb) + xb * (np.abs(xb) <= 1), rtol=1e-6, atol=1e-7)
    assert g["sign_vmap_grad_fn_name"] == "VmappedSignSetupContextBackward"  # (torch's name)
    # Bi-Real: forward sign, backward 2 - 2|x| inside [-1, 1]
    _close(r["approx_sign"], np.sign(x), rtol=0, atol=0)
    _close(r["approx_sign_grad"], np.where(np.abs(x) < 1, 2 - 2 * np.abs(x), 0.0),
           rtol=1e-6, atol=1e-6)
    # DSQ's soft quantiser is smooth: gradcheck passes in float64
    assert g["dsq_gradcheck"] is True
    dsq = r["dsq"].numpy()
    assert dsq.min() == pytest.approx(-1.0) and dsq.max() == pytest.approx(1.0)


def test_xnor_twn_ttq_weights_and_gradients():
    g = _run(SCRIPT)
    r = g["fixed_results"]
    w = _np(g["w_conv"].detach())
    alpha = np.abs(w).mean(axis=(1, 2, 3))
    _close(r["xnor_alpha"], alpha, rtol=1e-6)
    _close(r["xnor_weight"], alpha[:, None, None, None] * np.sign(w), rtol=1e-6)
    # the Function's hand-written XNOR gradient is what autograd makes of the detach trick
    _close(r["xnor_grad"], g["xnor_detach_grad"], rtol=1e-5, atol=1e-7)
    assert g["xnor_alpha_requires_grad"] is False  # mark_non_differentiable
    # TWN: three levels, the mask output non-differentiable, the gradient passed straight
    levels = set(np.round(np.abs(r["twn_weight"].numpy()), 5).ravel().tolist())
    assert len(levels) == 2 and 0.0 in levels
    assert g["twn_mask_requires_grad"] is False and g["twn_mask"].dtype == g["torch"].bool
    _close(r["twn_grad"], np.linspace(-1, 1, 30).reshape(6, 5), rtol=1e-6, atol=1e-7)
    assert r["twn_grad_mask_is_none"] is True  # set_materialize_grads(False)
    assert r["twn_needs_input_grad"] == [True, False]
    assert g["once_message"] == ("trying to differentiate twice a function that was marked "
                                 "with @once_differentiable")
    # TTQ: Wp collects the upstream gradient where w > delta, Wn minus it where w < -delta
    w = _np(g["w_ttq"].detach())
    up = np.linspace(0.5, 2.0, 20).reshape(5, 4)
    delta = 0.3 * np.abs(w).max()
    pos, neg = w > delta, w < -delta
    _close(r["ttq_weight"], 0.8 * pos - 0.6 * neg, rtol=1e-6)
    grad_w, grad_p, grad_n = r["ttq_grads"]
    _close(grad_w, up * np.where(pos, 0.8, np.where(neg, 0.6, 1.0)), rtol=1e-6)
    _close(grad_p, [up[pos].sum()], rtol=1e-6)
    _close(grad_n, [-up[neg].sum()], rtol=1e-6)
    _close(g["ttq_grad_w_only"], np.where(pos, 0.8, np.where(neg, 0.6, 1.0)), rtol=1e-6)


def test_dorefa_pact_and_inplace_quantize():
    g = _run(SCRIPT)
    r = g["fixed_results"]
    assert set(np.round(r["dorefa_weight"].numpy() * 3).ravel().tolist()) <= {-3, -1, 1, 3}
    assert np.all(r["dorefa_grad"].numpy() != 0)  # the round is straight-through
    # PACT: 3 bits over [0, alpha]; alpha gets the gradient where x >= alpha
    x = _np(g["x_act"].detach())
    up = np.linspace(1.0, 2.0, 12)
    levels = np.round(r["pact"].numpy() * 7 / 2.0, 4)
    assert np.all(levels == np.round(levels)) and r["pact"].numpy().max() == 2.0
    grad_x, grad_alpha = r["pact_grads"]
    _close(grad_x, up * ((x > 0) & (x < 2.0)), rtol=1e-6)
    # alpha: 1 where clipped, and through the step 7 / alpha the rounding error elsewhere
    y, s = np.clip(x, 0, 2.0), 7 / 2.0
    per = np.where(x >= 2.0, 1.0, (np.round(y * s) - y * s) / (s * 2.0))
    _close(grad_alpha, [(up * per).sum()], rtol=1e-5)
    # the InplaceFunction-style quantiser: 4 levels, identity gradient, in place when asked
    assert len(set(r["uniform_quantize"].numpy().round(4).tolist())) == 4
    _close(r["uniform_quantize_grad"], np.arange(9.0), rtol=0, atol=0)
    assert g["uniform_inplace_same"] is True
    assert len(set(r["uniform_quantize_inplace"].numpy().round(4).tolist())) == 8
    assert g["uniform_inplace_version"] > 0


def test_bnn_learns_with_binary_weights():
    g = _run(SCRIPT)
    losses = g["bnn_losses"]
    assert len(losses) == 24
    assert np.mean(losses[-4:]) < 0.2 * losses[0]
    assert g["bnn_accuracy"] >= 0.95
    assert g["bnn_weights_binary"] and g["bnn_latent_in_range"]


# ------------------------------------------------------------------ LSQ, fake_quantize


def test_lsq_quantizer_steps_and_gradients():
    g = _run(SCRIPT)
    r = g["fixed_results"]
    x = _np(g["x_lsq"].detach())
    # initialised from the first batch: 2 E|x| / sqrt(Qp)
    _close(r["lsq_init_scale"], [2 * np.abs(x).mean() / math.sqrt(15)], rtol=1e-6)
    assert set(g["lsq_levels"]) <= set(range(16))
    _close(r["lsq_act_grads"][1], [float(g["lsq_scale_grad_expected"])], rtol=1e-5, atol=1e-7)
    s = float(r["lsq_init_scale"][0])
    _close(r["lsq_act_grads"][0], g["upstream_lsq"].numpy() * (x / s < 15), rtol=0, atol=0)
    # per-channel weights: 3-bit signed codes per output channel
    scales = _np(g["lsq_w"].s.detach()) / 2.0  # (doubled after the recorded forward)
    codes = r["lsq_weight"].numpy() / scales[:, None, None, None]
    assert np.allclose(codes, np.round(codes), atol=1e-4)
    assert -4 <= np.round(codes).min() and np.round(codes).max() <= 3
    assert tuple(r["lsq_weight_grads"][1].shape) == (4,)
    eval_codes = r["lsq_weight_eval"].numpy() / (2 * scales[:, None, None, None])
    assert np.allclose(eval_codes, np.round(eval_codes), atol=1e-4)


def test_fake_quantize_ops_round_half_even_and_mask():
    g = _run(SCRIPT)
    r = g["fixed_results"]
    _close(r["fq_tensor"], g["fq_by_hand"], rtol=0, atol=0)
    # -0.125 / 0.25 = -0.5 rounds to 0, 0.375 / 0.25 = 1.5 to 2 (half to even)
    assert r["fq_tensor"][2].item() == 0.0 and r["fq_tensor"][5].item() == 0.5
    # codes past [-4, 3] (after the zero point 1) pass no gradient
    _close(r["fq_tensor_grad"], [1, 2, 3, 4, 5, 6, 7, 0, 0, 0], rtol=0, atol=0)
    assert g["fq_grad_fn_name"] == "FakeQuantizePerTensorAffineCachemaskBackward0"
    assert g["fq_float64_dtype"] == "float64"
    codes = r["fq_channel_axis0"].numpy() / np.array([0.05, 0.1, 0.2, 0.02])[:, None, None, None]
    assert np.allclose(codes, np.round(codes), atol=1e-3)
    assert g["fq_errors"] == {
        "min_gt_max": "`quant_min` should be less than or equal to `quant_max`.",
        "zero_point_range": "`zero_point` must be between `quant_min` and `quant_max`.",
        "channel_scale_dtype": "Scale must be Float or BFloat16, found Double",
        "channel_zero_point_dtype": "Zero-point must be Int32, Float or Half, found Long",
        "channel_axis": "dimensions of scale and zero-point are not consistent with input tensor",
    }
    _close(g["dequant_by_hand"], (g["codes_by_hand"].numpy() - 10) * 0.02, rtol=1e-6)


# ------------------------------------------------------------------ QAT


def test_qat_folding_observers_and_training():
    g = _run(SCRIPT)
    r = g["fixed_results"]
    _close(g["folded_out"], r["fold_conv_bn"], rtol=1e-5, atol=1e-6)
    # moving-average observers: the first batch sets min/max; uint8 activations, zero point
    # inside [0, 255]; the weights' per-channel symmetric scales have zero points 0
    for name, (scale, zero_point) in r["qat_qparams"].items():
        assert (scale.numpy() > 0).all(), name
        if "weight" in name:
            assert (zero_point.numpy() == 0).all() and scale.shape[0] > 1, name
        else:
            assert 0 <= int(zero_point[0]) <= 255, name
    losses = g["qat_losses"]
    assert len(losses) == 48
    assert np.mean(losses[-6:]) < 0.15 * np.mean(losses[:6])
    assert g["qat_accuracy"] >= 0.95
    # observers disabled for the last epochs: the scales stayed, BN is in eval
    assert all(not m.bn.training for m in (g["qat_model"].block1, g["qat_model"].block2))
    # integer-only inference (folded BN, int8 weights, int32 bias, requantisation) agrees
    # with the fake-quantised model within one output step
    assert g["int_vs_fake_steps"] <= 1.0 + 1e-3
    assert g["int_agrees_argmax"] == 1.0 and g["int_accuracy"] >= 0.95


# ------------------------------------------------------------------ against torch


def test_fixed_results_match_torch():
    g, t = _run(SCRIPT), _run_torch(SCRIPT)
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    _close(ours.pop("fq_float64"), theirs.pop("fq_float64"), rtol=1e-10, atol=1e-12)
    _close(ours.pop("fq_float64_grad"), theirs.pop("fq_float64_grad"), rtol=1e-10, atol=1e-12)
    _close(ours.pop("dsq"), theirs.pop("dsq"), rtol=1e-10, atol=1e-12)
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)
    for key in ("once_message", "fq_errors", "sign_grad_fn_name", "fq_grad_fn_name",
                "uniform_inplace_same", "lsq_levels"):
        assert g[key] == t[key], key


def test_first_losses_match_torch():
    g, t = _run(SCRIPT), _run_torch(SCRIPT)
    _close(g["bnn_losses"], t["bnn_losses"], rtol=1e-5, atol=0)
    # only the first QAT step: torch's float32 sqrt (the folded BN's running std) is 1 ulp off
    # in about a quarter of values (jitgrad's is correctly rounded, docs/pytorch-users.md), and
    # after one update that moves a per-channel weight scale's tie (|w| / s = 127.5) across
    # the clamp, so the trajectories part by 1e-4 relative
    _close(g["qat_losses"][:1], t["qat_losses"][:1], rtol=1e-5, atol=0)


def test_lsq_and_codes_match_torch_quantization_ops():
    t = _run_torch(SCRIPT)
    g = _run(SCRIPT)
    learnable, quantized = t["learnable_results"], t["quantized_results"]
    # jitgrad has neither torch's private learnable fake-quantize ops nor quantized tensors
    # (the script skips them there); what it does record equals torch's
    for ours, theirs in ((g["learnable_results"], learnable), (g["quantized_results"], quantized)):
        for key, value in ours.items():
            _close_nested(value, theirs[key], rtol=1e-5, atol=1e-6)
    # LSQ by hand == torch._fake_quantize_learnable_per_tensor_affine (values, both grads)
    y, grad_x, grad_scale, _ = learnable["per_tensor"]
    r = g["fixed_results"]
    _close(r["lsq_act"], y, rtol=1e-6, atol=1e-7)
    _close(r["lsq_act_grads"][0], grad_x, rtol=0, atol=0)
    _close(r["lsq_act_grads"][1], grad_scale, rtol=1e-5, atol=1e-8)
    assert len(learnable["per_channel"]) == 4
    # integer codes by hand == torch.quantize_per_tensor(...).int_repr()
    _close(g["codes_by_hand"], quantized["int_repr"], rtol=0, atol=0)
    _close(g["uint8_codes_by_hand"], quantized["uint8_repr"], rtol=0, atol=0)
    _close(g["dequant_by_hand"], quantized["dequantize"], rtol=1e-6, atol=1e-7)
    _close(quantized["torch_dequantize"], quantized["dequantize"], rtol=0, atol=0)
