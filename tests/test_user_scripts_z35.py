"""Scripts written for these tests in the way common PyTorch code of one kind is written (set
Z35: complex-valued networks as complex-layer libraries and modReLU code write them, beside an
S4D diagonal state space model as the S4 repository's standalone example writes it), run on
jitgrad.

The script in tests/scripts/ runs as ``__main__``; these tests read what it computed from its
globals and assert torch's conjugate Wirtinger convention on the gradients of real losses of
complex tensors, that ``conj``/``conj_physical``/``view_as_real`` give the conjugate values,
that layers built from two real parameters equal the ``dtype=torch.cfloat`` ones (values and
gradients), that the complex activations and batch-norm-lite behave and pass gradcheck in
complex128, that the complex networks learn; that the S4D kernel's three Vandermonde forms, its
FFT and direct convolutions and its recurrent loop agree, that a complex ``C`` parameter's
gradient is the real-pair one's and a complex ``A``'s chain rule is the Wirtinger one, that the
S4D model learns a causal filter; and, where torch is installed, that the fixed-weight parts
and the first training losses equal the same script's with ``import torch``.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run


def _c(pairs):
    """A (..., 2) real tensor (view_as_real's layout) as a complex NumPy array."""
    a = np.asarray(pairs, dtype=np.float64)
    return a[..., 0] + 1j * a[..., 1]


def _np(t):
    return t.detach().numpy()


def _close_scaled_nested(ours, theirs, rtol):
    """Close to rtol of each entry or of the tensor's largest entry, key by key: FFTs, exps
    and float32 sums round to the scale of a tensor's largest entries, not of each one."""
    if isinstance(theirs, dict):
        assert ours.keys() == theirs.keys()
        for key in theirs:
            _close_scaled_nested(ours[key], theirs[key], rtol)
        return
    scale = float(np.abs(np.asarray(theirs, dtype=np.float64)).max())
    _close(ours, theirs, rtol=rtol, atol=rtol * scale)


# ---------------------------------------------------------------- complex autograd


def test_complex_autograd_follows_the_conjugate_wirtinger_convention():
    g = _run("complex_s4d")
    z, w, v = _np(g["z"]), _np(g["w"]), _np(g["v"])
    grads = {k: _c(pairs) for k, pairs in g["fixed_results"]["wirtinger"].items()}
    expected = {
        "abs_sq": 2 * z, "re_zw": np.conj(w), "im_zw": 1j * np.conj(w), "abs": z / np.abs(z),
        "angle": 1j * z / np.abs(z) ** 2, "exp_real": np.conj(np.exp(z)), "conj_w": w,
        "vdot": w, "z_conj_z": 2 * z, "vjp_z2w": v * np.conj(2 * z * w),
    }
    assert grads.keys() == expected.keys()
    for key in expected:
        np.testing.assert_allclose(grads[key], expected[key], rtol=1e-12, atol=1e-14,
                                   err_msg=key)
    assert g["implicit_error"] == ("grad can be implicitly created only for real scalar outputs "
                                   "but got jitgrad.complex128")
    assert all(g["gradcheck_results"].values()) and len(g["gradcheck_results"]) == 6


def test_conj_and_real_views():
    g = _run("complex_s4d")
    z = _np(g["z"])
    for key, pairs in g["fixed_results"]["conj"].items():
        np.testing.assert_array_equal(_c(pairs), np.conj(z), err_msg=key)
    bits = dict(g["conj_bits"])
    # jitgrad's conj makes the values: no lazy conjugate bit (torch's lazy.is_conj() is True)
    bits.pop("conj")
    assert bits == {"resolved": False, "physical": False, "real_conj": False}
    # |(1 - 2i) c|^2 = 5 |c|^2: the gradient with respect to the pairs is 10 times them
    _close(g["fixed_results"]["view_pairs_grad"], 10 * _np(g["pairs"]), rtol=1e-14, atol=0)
    assert g["view_roundtrip_exact"]
    errors = g["errors"]
    assert errors["relu_complex"] == "NotImplementedError: clamp is not supported for complex types"
    assert errors["last_dim_3"] == "RuntimeError: Tensor must have a last dimension of size 2"
    assert errors["real_view_as_real"] == (
        "RuntimeError: view_as_real is only supported for complex tensors")


# ------------------------------------------------------------------ complex layers


def test_two_real_parameter_layers_equal_the_cfloat_ones():
    g = _run("complex_s4d")
    torch = g["torch"]
    lin = g["fixed_results"]["linear"]
    _close(lin["out_native"], lin["out_two_real"], rtol=1e-6, atol=1e-6)
    # a real loss: the cfloat weight's gradient is dL/dW_re + i dL/dW_im
    _close(lin["grad_native"], lin["grad_two_real"], rtol=1e-6, atol=1e-6)
    x, target = _np(g["x_lin"]), _np(g["target_lin"])
    out = _c(lin["out_native"])
    bias_grad = 2 * (out - target).sum(0) / out.size
    np.testing.assert_allclose(_c(lin["grad_native_bias"]), bias_grad, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_c(lin["grad_native"]),
                               2 * (out - target).T @ np.conj(x) / out.size, rtol=1e-5, atol=1e-6)
    conv = g["fixed_results"]["conv"]
    _close(conv["out_native"], conv["out_two_real"], rtol=1e-5, atol=1e-6)
    _close(conv["grad_parts"], conv["grad_two_real"], rtol=1e-5, atol=1e-5)
    assert g["native"].weight.dtype == torch.complex64
    assert g["conv_native"].weight.dtype == torch.complex64


def test_complex_activations_and_batch_norm_lite():
    g = _run("complex_s4d")
    acts = {k: _c(v) for k, v in g["fixed_results"]["activations"].items()}
    za, b = _np(g["za"]), _np(g["ba"])
    np.testing.assert_allclose(acts["crelu"], np.maximum(za.real, 0) + 1j * np.maximum(za.imag, 0),
                               rtol=0, atol=0)
    mag = np.abs(za)
    np.testing.assert_allclose(acts["modrelu"], np.maximum(mag + b, 0) * za / mag,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(acts["modrelu_eps"], acts["modrelu"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(acts["cardioid"], 0.5 * (1 + za.real / mag) * za,
                               rtol=1e-5, atol=1e-6)
    grads = g["fixed_results"]["activation_grads"]
    _close(grads["modrelu_eps"], grads["modrelu"], rtol=1e-5, atol=1e-5)
    _close(grads["modrelu_eps_bias"], grads["modrelu_bias"], rtol=1e-5, atol=1e-5)
    assert 0.1 < g["dead_fraction"] < 0.6 and g["phase_kept"]
    # batch-norm-lite: zero complex mean, unit mean squared modulus per channel
    stats = g["bn_stats"]
    assert stats["mean_abs"] < 1e-5
    _close(stats["power"], np.ones(4), rtol=1e-4)
    assert g["bn_functional_difference"] < 1e-6
    batch_mean = _np(g["zb"]).mean(axis=(0, 2))
    np.testing.assert_allclose(_c(stats["running_mean"]), 0.1 * batch_mean, rtol=1e-5, atol=1e-6)
    assert g["bn"].running_mean.dtype == g["torch"].complex64


def test_complex_networks_learn():
    g = _run("complex_s4d")
    losses = g["net_losses"]
    assert len(losses) == 16 and losses[0] > 1.2  # about log 4 at the start
    assert np.mean(losses[-4:]) < 0.45 * np.mean(losses[:4])
    assert g["net_accuracy"] >= 0.9
    # conjugating a tone negates its frequency: the modulus logits flip the classes
    assert g["conj_flip_accuracy"] >= 0.9
    assert all(not p.is_complex() for p in g["net"].parameters())
    fir = g["fir_losses"]
    assert len(fir) == 40 and fir[-1] < 1e-4 * fir[0]
    assert g["fir_tap_error"] < 1e-2
    assert g["fir"].weight.is_complex()


# -------------------------------------------------------------------------------- S4D


def test_s4d_kernel_and_convolution_forms_agree():
    g = _run("complex_s4d")
    forms = g["kernel_forms64"]
    for name in ("pow", "cumprod"):
        _close(forms[name], forms["exp"], rtol=1e-10, atol=1e-13)
    _close(g["impulse_response"], forms["exp"], rtol=1e-10, atol=1e-13)
    _close(g["conv_forms64"]["fft"], g["conv_forms64"]["direct"], rtol=1e-10, atol=1e-12)
    kernels = g["s4d_kernels"]
    scale = float(np.abs(_np(kernels["exp"])).max())
    for name in ("pow", "cumprod"):
        _close(kernels[name], kernels["exp"], rtol=1e-4, atol=1e-5 * scale)
    y_fft = g["fixed_results"]["s4d_kernel"]["y_fft"]
    _close(y_fft, g["y_direct"].detach(), rtol=1e-4, atol=1e-5)
    assert g["s4d_gradcheck"] == {"kernel": True, "fft_conv": True}
    # C stored as (H, N, 2) reals; the SSM parameters carry S4's optimizer settings
    kernel = g["kernel"]
    assert tuple(kernel.C.shape) == (4, 4, 2) and not kernel.C.is_complex()
    for name in ("log_dt", "log_A_real", "A_imag"):
        assert getattr(kernel, name)._optim == {"weight_decay": 0.0}
    assert not hasattr(kernel.C, "_optim")


def test_s4d_complex_parameter_gradients():
    g = _run("complex_s4d")
    r = g["fixed_results"]["complex_param_grads"]
    # a complex C parameter's gradient is the (re, im) pair parameter's, as complex
    _close(r["C_complex"], r["C_pairs"], rtol=1e-12, atol=1e-15)
    # A = -exp(log_A_real) + i A_imag: d/dlog_A_real = Re(gA) (-exp), d/dA_imag = Im(gA)
    grad_a = _c(r["A"])
    log_a_real = _np(g["k_pairs"].log_A_real)
    _close(r["log_A_real"], grad_a.real * -np.exp(log_a_real), rtol=1e-10, atol=1e-16)
    _close(r["A_imag"], grad_a.imag, rtol=1e-10, atol=1e-16)
    assert g["k_complex"].C.dtype == g["torch"].complex128


def test_s4d_recurrent_loop_equals_the_fft_form():
    g = _run("complex_s4d")
    _close(g["modes64"]["recurrent"], g["modes64"]["fft"], rtol=1e-10, atol=1e-12)
    fixed = g["fixed_results"]["s4d_model"]
    _close(fixed["recurrent"], fixed["out"], rtol=1e-4, atol=1e-5)
    states = g["final_states"]
    assert len(states) == 2 and tuple(states[0].shape) == (2, 8, 4)
    assert states[0].dtype == g["torch"].complex64
    assert g["trained_mode_difference"] < 1e-4


def test_s4d_learns_the_causal_filter():
    g = _run("complex_s4d")
    losses = g["s4d_losses"]
    assert len(losses) == 24
    assert np.mean(losses[-4:]) < 0.35 * np.mean(losses[:4])
    assert g["val_loss"] < 0.3 * g["val_baseline"]
    groups = g["optimizer"].param_groups
    assert [grp["weight_decay"] for grp in groups] == [0.01, 0.0]
    assert [len(grp["params"]) for grp in groups] == [16, 6]
    # CosineAnnealingLR over 6 epochs from 3e-2 and the SSM group's 1e-2
    for epoch, lrs in enumerate(g["s4d_lrs"]):
        factor = (1 + math.cos(math.pi * epoch / 6)) / 2
        assert lrs == pytest.approx([3e-2 * factor, 1e-2 * factor], rel=1e-12)


# ------------------------------------------------------------------------ vs torch


_FLOAT64_KEYS = ("wirtinger", "conj", "view_pairs_grad", "complex_param_grads")
_LOSS_KEYS = ("net_losses", "fir_losses", "s4d_losses")


def test_complex_s4d_fixed_results_match_torch():
    g, t = _run("complex_s4d"), _run_torch("complex_s4d")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.keys() == theirs.keys()
    for key in _FLOAT64_KEYS:
        _close_scaled_nested(ours.pop(key), theirs.pop(key), rtol=1e-10)
    for key in _LOSS_KEYS:
        _close(ours.pop(key), theirs.pop(key), rtol=1e-5, atol=0)
    # float32 FFTs (the S4D convolution) and exps round to the largest entries' scale
    _close_scaled_nested(ours, theirs, rtol=1e-5)


def test_complex_s4d_flags_and_errors_match_torch():
    g, t = _run("complex_s4d"), _run_torch("complex_s4d")
    for key in ("gradcheck_results", "s4d_gradcheck", "view_roundtrip_exact", "phase_kept"):
        assert g[key] == t[key], key
    assert g["implicit_error"].replace("jitgrad", "torch") == t["implicit_error"]
    _close(g["s4d_lrs"], t["s4d_lrs"], rtol=1e-12, atol=0)
    ours, theirs = dict(g["errors"]), dict(t["errors"])
    # without a conjugate bit, jitgrad's view_as_real of a conj() computes (torch refuses it)
    assert ours.pop("conj_view_as_real") is None
    assert theirs.pop("conj_view_as_real").startswith("RuntimeError")
    assert ours == theirs
    ours_bits, theirs_bits = dict(g["conj_bits"]), dict(t["conj_bits"])
    assert theirs_bits.pop("conj") is True and ours_bits.pop("conj") is False
    assert ours_bits == theirs_bits
    # a complex convolution's gradient equals the two real convolutions' on both
    assert t["native_conv_grad_matches"] and g["native_conv_grad_matches"]
