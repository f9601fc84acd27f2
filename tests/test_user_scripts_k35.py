"""Scripts written for these tests in the way GAN training code of two kinds is written (set
K35: a toy 8x8 StyleGAN2 as rosinality's stylegan2-pytorch and StyleGAN2-ADA write it, and an
SN-GAN with the hinge loss on the eight-gaussians ring), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that the modulated convolution's grouped-conv trick equals its unfused
form and demodulates to unit norms, that style mixing, truncation and ``input_is_latent`` do
what they say, that R1's double backward reaches the discriminator's parameters (zero for the
biases after the minibatch stddev, where the rest is piecewise linear) and passes gradcheck,
that the path-length running mean by ``lerp`` equals the explicit one, that training keeps D's
accuracy and R1 in range while the generated images' statistics approach the data's, that a
checkpoint restores, that spectral normalization's power iteration drives sigma to one (and
equals the hand-written ``W / (u W v)``), that the hinge SN-GAN covers the eight modes; and,
where torch is installed, that the fixed-weight parts (outputs, R1 values, double-backward
gradients, path lengths) and the first training losses equal the same script's with
``import torch``.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run


def _close_scaled(ours, theirs, rtol=1e-5):
    """Close to rtol of each entry or of the tensor's largest entry: float32 sums leave their
    rounding, a fraction of the largest terms, in the small entries."""
    scale = float(np.abs(np.asarray(theirs, dtype=np.float64)).max())
    _close(ours, theirs, rtol=rtol, atol=rtol * scale)


def _close_nested_scaled(ours, theirs, rtol=1e-5):
    if isinstance(theirs, dict):
        assert ours.keys() == theirs.keys()
        for key in theirs:
            _close_nested_scaled(ours[key], theirs[key], rtol=rtol)
    else:
        _close_scaled(ours, theirs, rtol=rtol)


# ------------------------------------------------------------------------------ StyleGAN2


def test_stylegan_modulated_conv_and_generator():
    g = _run("stylegan_lite")
    r = g["fixed_results"]
    # the grouped-conv trick equals modulating the activations, plain and upsampling
    for fused, unfused in g["mod_results"].values():
        _close_scaled(unfused, fused, rtol=1e-5)
    assert tuple(g["mod_results"][True][0].shape) == (4, 8, 8, 8)
    assert g["gradgradcheck_modconv"]
    _close(g["demod_norms"], np.ones((4, 8)), rtol=0, atol=1e-6)
    # shapes: 8x8 RGB, n_latent = 2 log2(8) - 2 latents of the style size
    assert tuple(r["fake"].shape) == (4, 3, 8, 8)
    assert tuple(g["latents_fixed"].shape) == (4, 4, 32)
    assert tuple(r["fake16"].shape) == (2, 3, 16, 16)
    assert tuple(g["latents16"].shape) == (2, 6, 32)
    # the mapping's weights are drawn N(0, 1) / lr_mul and scaled back at runtime
    assert 80 < r["mapping_weight_std"] < 120
    # input_is_latent with the mapped w is the same image; the EMA copy starts equal
    assert np.array_equal(g["fake_from_w"].detach().numpy(), r["fake"].numpy())
    _close(r["ema_fake"], r["fake"], rtol=0, atol=0)
    # style mixing at index 2: the first two latents are z's, the rest z2's
    mixed, plain = g["mixed_latents"].detach().numpy(), g["latents_fixed"].detach().numpy()
    assert np.array_equal(mixed[:, :2], plain[:, :2])
    assert np.abs(mixed[:, 2:] - plain[:, 2:]).min() > 0
    # truncation 0 collapses every sample onto the mean latent's image
    assert float(g["fully_truncated"].std(0).max()) == 0.0
    trunc_spread = float(r["truncated"].std(0).mean())
    assert 0 < trunc_spread < float(r["fake"].std(0).mean())
    # the EMA step by mul_/add_ equals ADA's lerp (to float32 rounding of ~100-sized weights)
    assert g["ema_difference"] < 1e-4


def test_stylegan_r1_and_path_length_regularizers():
    g = _run("stylegan_lite")
    r = g["fixed_results"]
    assert math.isfinite(r["r1"]) and r["r1"] > 0
    assert g["r1_param_grads_finite"]
    for name, grad in r["r1_grads"].items():
        assert np.abs(grad.numpy()).max() > 0, name
    # after the minibatch stddev the discriminator is piecewise linear in its input: R1 does
    # not depend on the later biases; before it, the stddev's curvature makes it depend
    biases = g["r1_bias_grads"]
    for name in ("final_conv.1.bias", "final_linear.0.bias", "final_linear.2.bias"):
        assert biases[name] == 0.0, name
    for name in ("convs.0.1.bias", "convs.1.conv1.1.bias", "convs.1.conv2.2.bias"):
        assert biases[name] > 0, name
    assert g["gradcheck_r1"]
    assert tuple(r["r1_grad_input"].shape) == (4, 3, 8, 8)
    # path lengths: one per sample, the running mean from zero is 0.01 of their mean, by
    # rosinality's explicit form and by ADA's lerp
    lengths = r["path_lengths"].numpy()
    assert lengths.shape == (4,) and (lengths > 0).all()
    _close(r["path_mean"], 0.01 * lengths.mean(), rtol=1e-6)
    _close(g["pl_mean_lerp"], r["path_mean"], rtol=1e-6)
    _close(r["path_loss"], ((lengths - 0.01 * lengths.mean()) ** 2).mean(), rtol=1e-5)
    for name, grad in r["path_grads"].items():
        assert np.isfinite(grad.numpy()).all() and np.abs(grad.numpy()).max() > 0, name
    assert (r["path_lengths16"].numpy() > 0).all()


def test_stylegan_training_behaves():
    g = _run("stylegan_lite")
    log = g["log"]
    iters = g["iters"]
    assert iters == 120
    assert len(log["d"]) == len(log["g"]) == iters
    assert len(log["r1"]) == len(log["path"]) == iters // 4
    for key in ("d", "g", "r1", "path", "path_length"):
        assert np.isfinite(log[key]).all(), key
    # the discriminator neither loses nor wins outright
    accuracy = np.mean(log["d_accuracy"][-40:])
    assert 0.6 < accuracy < 0.99
    assert 0.5 < np.mean(log["d"][-40:]) < 1.3  # below 2 log 2, the loss of a guessing D
    assert np.mean(log["real_score"][-40:]) > np.mean(log["fake_score"][-40:])
    # R1 stays small, and the path-length penalty falls as the lengths settle
    assert max(log["r1"]) < 5.0 and min(log["r1"]) > 0
    assert np.mean(log["path"][-5:]) < 0.2 * log["path"][0]
    # the generator's steps left the frozen discriminator's gradients as they were
    assert all(g["d_grads_kept"]) and len(g["d_grads_kept"]) == iters
    # the generated images' mean and spread per pixel approach the data's
    assert g["generator_distance"] < 0.3 * g["init_distance"]
    assert g["trained_distance"] < 0.3 * g["init_distance"]
    # the checkpoint restores the EMA generator and the discriminator with its Adam state
    assert g["restored_difference"] == 0.0
    assert float(g["restored_step"]) == iters + iters // 4
    keys = g["d_state_keys"]
    assert "convs.0.0.weight_orig" in keys and "convs.0.0.weight_u" in keys
    assert "final_linear.0.parametrizations.weight.original" in keys
    assert "final_linear.0.parametrizations.weight.0._v" in keys
    assert "convs.1.conv2.0.kernel" in keys  # the blur kernel, a buffer


def test_stylegan_fixed_results_match_torch():
    g, t = _run("stylegan_lite"), _run_torch("stylegan_lite")
    ours, theirs = g["fixed_results"], t["fixed_results"]
    # spectral norm's u from the same N(0, 1) draws (the parametrization's after 15 steps)
    _close(ours["sn_u_init"], theirs["sn_u_init"], rtol=0, atol=0)
    _close_nested_scaled(ours, theirs, rtol=1e-5)
    assert g["d_state_keys"] == t["d_state_keys"]
    assert g["gradcheck_r1"] == t["gradcheck_r1"]


def test_stylegan_first_losses_match_torch():
    g, t = _run("stylegan_lite"), _run_torch("stylegan_lite")
    # (a GAN with Adam's beta1 = 0 multiplies rounding quickly: the first steps only)
    for key in ("d", "g", "real_score", "fake_score"):
        _close(g["log"][key][:5], t["log"][key][:5], rtol=1e-5, atol=1e-6)
    for key in ("r1", "path", "path_length"):
        _close(g["log"][key][:3], t["log"][key][:3], rtol=1e-5, atol=0)
    assert g["log"]["d_accuracy"][:5] == t["log"]["d_accuracy"][:5]


# ------------------------------------------------------------------------- SN-GAN (hinge)


def test_sngan_spectral_norm_mechanics():
    g = _run("sngan_toy")
    steps = g["sigma_steps"]
    # the raw weight's sigma is not one; power iteration drives the normalized one to one
    assert abs(g["raw_sigma"] - 1) > 0.05
    assert steps[0] > steps[-1] and abs(steps[-1] - 1) < 1e-3
    assert all(a >= b - 1e-6 for a, b in zip(steps, steps[1:]))
    assert g["eval_keeps_u"]
    assert g["manual_difference"] < 1e-6 and g["manual_grad_difference"] < 1e-5
    assert g["cached_same"] and g["cached_calls"] == 1
    assert g["uncached_a"] is not g["uncached_b"] and g["uncached_calls"] == 2
    assert g["frozen_d_has_no_grad_from_g"]
    # the hinge loss's bias gradient of the last layer cancels while all margins are active
    assert float(np.abs(g["fixed_results"]["d_grads"]["l3.bias"].numpy()).max()) == 0.0
    # removing the parametrizations leaves plain parameters with the normalized values
    assert g["removed_plain"]
    assert np.array_equal(g["D"].l1.weight.detach().numpy(),
                          g["weight_before_removal"].numpy())
    assert not hasattr(g["D"].l3, "weight_u") and not hasattr(g["D"].l3, "weight_orig")
    assert "parametrizations" not in dict(g["D"].l1.named_modules())


def test_sngan_hinge_training_covers_the_ring():
    g = _run("sngan_toy")
    d_losses, g_losses = g["d_losses"], g["g_losses"]
    assert len(d_losses) == len(g_losses) == g["iters"] == 1000
    assert np.isfinite(d_losses).all() and np.isfinite(g_losses).all()
    # a 1-Lipschitz critic's hinge loss stays near 2; its accuracy near chance at the end
    assert 1.5 < np.mean(d_losses[-100:]) < 2.1
    assert 0.4 < np.mean(g["d_accuracy"][-100:]) < 0.8
    assert np.mean(g["sigmas"][-100:]) < 1.05
    # samples near the modes, all eight of them, from a generator that started with none
    assert g["untrained_quality"] < 0.05
    assert g["quality"] > 0.3 and g["modes_covered"] == 8
    assert g["ema_quality"] > 0.3 and g["ema_modes"] == 8
    assert g["final_lr"] == pytest.approx(2e-4)
    assert int(g["g_ema"].n_averaged) == 1000


def test_sngan_fixed_results_match_torch():
    g, t = _run("sngan_toy"), _run_torch("sngan_toy")
    ours, theirs = g["fixed_results"], t["fixed_results"]
    _close(ours["hook_u_init"], theirs["hook_u_init"], rtol=0, atol=0)
    _close_nested_scaled(ours, theirs, rtol=1e-5)
    _close(g["sigma_steps"], t["sigma_steps"], rtol=1e-6)
    _close(g["raw_sigma"], t["raw_sigma"], rtol=1e-6)


def test_sngan_first_losses_match_torch():
    g, t = _run("sngan_toy"), _run_torch("sngan_toy")
    # (the adversarial steps magnify float32 rounding: past step 4 the two part by 1e-5 on
    # hosts whose BLAS rounds otherwise)
    _close(g["d_losses"][:4], t["d_losses"][:4], rtol=1e-5, atol=1e-6)
    _close(g["g_losses"][:4], t["g_losses"][:4], rtol=1e-5, atol=1e-6)
    _close(g["sigmas"][:4], t["sigmas"][:4], rtol=1e-5)
