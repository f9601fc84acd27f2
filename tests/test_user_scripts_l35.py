"""Scripts written for these tests in the way common PyTorch code of two kinds is written (set
L35: a tiny NeRF as nerf-pytorch and "NeRF in 100 lines" write it, and Growing Neural Cellular
Automata as the public PyTorch ports of the Distill notebook write it), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that torch rays equal numpy rays and hit the analytic sphere, that
the volume-rendering weights sum to the accumulated opacity and stop at an opaque wall, that
both transmittance forms agree, that inverse-CDF sampling follows the pdf and its gradients
(det=True) pass gradcheck and keep the translation/scale invariants, that coarse + fine NeRF
training lowers the loss and renders a held-out view better than the untrained model; that the
NCA's Sobel/identity depthwise perception, zero-initialised update, alive mask and two ports
agree, that pool training with normalised gradients grows the target from a seed; and, where
torch is installed, that the fixed-weight parts and the first training losses equal the same
script's with ``import torch``.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested


def _close_scaled(ours, theirs, rtol=1e-5):
    """Close to rtol of each entry or of the tensor's largest entry."""
    scale = float(np.abs(np.asarray(theirs, dtype=np.float64)).max())
    _close(ours, theirs, rtol=rtol, atol=rtol * scale)


# ------------------------------------------------------------------ NeRF


def test_nerf_rays_and_analytic_scene():
    g = _run("nerf_tiny")
    r = g["fixed_results"]
    assert g["rays_np_difference"] < 1e-6
    assert tuple(r["rays_d"].shape) == (10, 10, 3) and tuple(r["poses"].shape) == (8, 4, 4)
    # the cameras sit on a sphere of radius 4 and look at the origin (-z axis of the camera)
    centres = r["poses"][:, :3, 3].numpy()
    _close(np.linalg.norm(centres, axis=-1), np.full(8, 4.0), rtol=1e-6)
    forward = -r["poses"][:, :3, 2].numpy()
    _close((forward * -centres).sum(-1) / 4.0, np.ones(8), rtol=1e-6)
    # the centre pixel hits the unit sphere, the corner sees the white background
    assert g["center_hit"] and not g["corner_hit"]
    images = r["images"].numpy()
    assert images.shape == (8, 10, 10, 3) and images.min() >= 0 and images.max() <= 1
    assert (images[:, 0, 0] == 1.0).all()
    assert 0.1 < (images.min(-1) < 1.0).mean() < 0.6


def test_nerf_volume_rendering():
    g = _run("nerf_tiny")
    out = g["fixed_results"]["raw2outputs"]
    weights, acc = out["weights"].numpy(), out["acc"].numpy()
    _close(weights.sum(-1), acc, rtol=1e-6)
    # an opaque wall from the 4th sample stops the ray there: depth is that sample's z
    _close(weights[0], np.eye(8)[3], rtol=0, atol=1e-6)
    assert out["depth"][0].item() == pytest.approx(2.0 + 3 * 4.0 / 7, rel=1e-6)
    # fog: weights fall geometrically until the 1e10 tail takes what is left
    assert (np.diff(weights[1][:-1]) < 0).all() and acc[1] == pytest.approx(1.0, abs=1e-6)
    # negative density is cut by relu: nothing accumulated, disparity is 1/max(1e-10, 0/0)
    assert acc[2] == 0 and (weights[2] == 0).all() and math.isnan(out["disp"][2].item())
    # "NeRF in 100 lines"' cumprod-then-shift equals nerf-pytorch's 1 - alpha + 1e-10 form
    assert g["transmittance_difference"] < 1e-6
    # the rendered depth's gradient reaches the sample positions
    grad_z = g["fixed_results"]["depth_grad_z"].numpy()
    assert np.isfinite(grad_z).all() and np.abs(grad_z).max() > 0.1
    assert g["pe_difference"] < 1e-6
    assert tuple(g["fixed_results"]["embedding"].shape) == (4, 3 + 3 * 2 * 4)


def test_nerf_sample_pdf_and_its_gradients():
    g = _run("nerf_tiny")
    r = g["fixed_results"]
    det = r["sample_pdf_det"].numpy()
    assert det.shape == (4, 16) and g["samples_sorted"] and g["samples_in_range"]
    # a single peaked bin [3.5, 4] gets all samples but the two ends
    assert g["peak_fraction"] == pytest.approx(14 / 16)
    # uniform weights: evenly spaced samples over [2, 6]
    _close(g["uniform_spacing"], np.full(15, 4.0 / 15), rtol=1e-5)
    # two modes at the ends: no sample in the empty middle
    assert not ((det[3] > 2.6) & (det[3] < 5.4)).any()
    # translation: the bin gradients of a ray sum to its upstream gradients' sum
    assert g["translation_residual"] < 1e-10
    # scaling a ray's weights leaves its pdf (but for the 1e-5 added to the weights)
    assert g["scale_residual"] < 1e-4
    assert g["gradcheck_sample_pdf"] is True
    grads = r["sample_pdf_grads"]
    assert np.abs(grads["weights"].numpy()).max() > 0.01


def test_nerf_learns_the_sphere():
    g = _run("nerf_tiny")
    losses, psnrs = g["losses"], g["psnrs"]
    assert len(losses) == len(psnrs) == g["N_iters"] == 60
    assert np.mean(losses[-10:]) < 0.55 * losses[0]
    assert np.mean(psnrs[-10:]) > psnrs[0] + 3.0
    # the held-out view renders much closer to the ground truth than before training
    assert g["untrained_shapes"] == ((10, 10, 3), (10, 10, 16 + 8))
    assert g["test_mse"] < 0.3 * g["baseline_mse"] and g["test_psnr"] > 13.0
    assert g["test_psnr"] == pytest.approx(-10 * math.log10(g["test_mse"]), rel=1e-5)
    # nerf-pytorch's exponential decay written into param_groups
    lrs = g["lrs"]
    assert lrs[-1] == pytest.approx(1e-2 * 0.1 ** (59 / 15), rel=1e-12)
    assert g["optimizer"].param_groups[0]["lr"] == lrs[-1]
    n_params = len(list(g["model"].parameters())) + len(list(g["model_fine"].parameters()))
    assert len(g["grad_vars"]) == n_params == 2 * 16
    # the 100-line NeRF: the fixed render composites on white and stays in [0, 1]
    fixed = g["fixed_results"]["render_100_lines"].numpy()
    assert fixed.min() >= 0 and fixed.max() <= 1 and fixed.min() < 0.6
    losses_100 = g["losses_100"]
    assert len(losses_100) == 75 and g["lr_100"] == pytest.approx(5e-3 * 0.25)
    assert np.mean(losses_100[-10:]) < 0.4 * np.mean(losses_100[:5])
    assert g["test_mse_100"] < 0.7 * g["untrained_mse_100"]


def test_nerf_fixed_results_match_torch():
    g, t = _run("nerf_tiny"), _run_torch("nerf_tiny")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    ours_grads, their_grads = dict(ours.pop("grads")), dict(theirs.pop("grads"))
    ours_render = dict(ours.pop("untrained_render"))
    their_render = dict(theirs.pop("untrained_render"))
    # the fine samples come from sample_pdf on the coarse weights: the last u = 1 lands at the
    # cdf's end, where one ulp of cdf[-1] (1.0 or just above, from the weights' float32
    # rounding) chooses between the last bin's end and a point inside it (5.8667 vs 5.8661)
    _close(ours_render.pop("z_vals"), their_render.pop("z_vals"), rtol=1e-5, atol=1e-3)
    _close_nested(ours_render, their_render, rtol=1e-5, atol=1e-6)
    # the fine network's gradients see those sample positions: close to its scale
    for name in their_grads:
        rtol = 1e-4 if name.startswith("fine.") else 1e-5
        _close_scaled(ours_grads[name], their_grads[name], rtol=rtol)
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)
    # the float64 sample_pdf gradients agree to float64 rounding
    for key in ("bins", "weights"):
        _close(g["fixed_results"]["sample_pdf_grads"][key],
               t["fixed_results"]["sample_pdf_grads"][key], rtol=1e-10, atol=1e-12)


def test_nerf_first_losses_match_torch():
    g, t = _run("nerf_tiny"), _run_torch("nerf_tiny")
    _close(g["losses"][:10], t["losses"][:10], rtol=1e-5, atol=0)
    _close(g["psnrs"][:10], t["psnrs"][:10], rtol=1e-5, atol=0)
    _close(g["losses_100"][:10], t["losses_100"][:10], rtol=1e-5, atol=0)
    assert g["lrs"] == pytest.approx(t["lrs"], rel=1e-12)
    assert g["untrained_shapes"] == t["untrained_shapes"]


# ------------------------------------------------------------------ Growing NCA


def test_nca_perception_and_masks():
    g = _run("growing_nca")
    # the identity filter passes the state through; Sobel sees no gradient in a flat field
    assert g["identity_residual"] == 0 and g["flat_interior_gradient"] == 0
    assert tuple(g["fixed_results"]["perceived"].shape) == (2, 3 * 12, 12, 12)
    _close(g["ramp_response"], np.ones((1, 12, 10, 10)), rtol=1e-6)
    assert g["circular_residual"] < 1e-6
    # the zero-initialised last layer leaves the seed as it is; its alive area is 3x3
    assert g["zero_init_change"] == 0 and g["seed_alive"] == 9
    # after a few random steps the living area grew and dead cells are zeroed
    assert g["alive_after"] > 9 and g["dead_cells_zero"]
    # fire_rate=1: the grouped-conv rule and the per-filter nn.Linear port agree
    assert g["ports_difference"] < 1e-5
    assert g["rotation_changes"] > 0.01


def test_nca_pool_training_grows_the_target():
    g = _run("growing_nca")
    losses, pool_losses = g["loss_log"], g["pool_losses"]
    assert len(losses) == len(pool_losses) == g["n_epoch"] == 80
    assert np.mean(losses[-10:]) < 0.25 * losses[0]
    assert pool_losses[-1] < 0.2 * pool_losses[0]
    # every gradient was normalised to unit norm before the step
    _close(g["grad_norms_after"], np.ones(80), rtol=0, atol=1e-5)
    # StepLR(step_size=40, gamma=0.5)
    lrs = g["lr_log"]
    assert lrs[38] == pytest.approx(1e-2) and lrs[39] == pytest.approx(5e-3)
    assert lrs[-1] == pytest.approx(2.5e-3)
    # growing from the seed with the trained rule gets close to the target
    assert g["grown_loss"] < 0.2 * g["seed_loss"]
    assert g["grown_alive"] >= g["target_alive"]
    rgb = g["grown_rgb"].numpy()
    assert rgb.shape == (1, 3, 12, 12) and np.isfinite(rgb).all()
    assert tuple(g["pool"].shape) == (16, 12, 12, 12)


def test_nca_fixed_results_match_torch():
    g, t = _run("growing_nca"), _run_torch("growing_nca")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    for name in theirs["rand_grads"]:
        _close_scaled(ours["rand_grads"][name], theirs["rand_grads"][name])
    ours.pop("rand_grads"), theirs.pop("rand_grads")
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)


def test_nca_first_losses_match_torch():
    g, t = _run("growing_nca"), _run_torch("growing_nca")
    _close(g["loss_log"][:10], t["loss_log"][:10], rtol=1e-5, atol=0)
    _close(g["pool_losses"][:10], t["pool_losses"][:10], rtol=1e-5, atol=0)
    assert g["lr_log"] == pytest.approx(t["lr_log"], rel=1e-12)
