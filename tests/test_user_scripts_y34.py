"""Scripts written for these tests in the way common PyTorch code of two kinds is written (set
Y34: implicit neural representations with sine activations as the SIREN paper's code writes
them, and entropic optimal transport with Sinkhorn's algorithm as torch OT code writes it),
run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that a SIREN fits an image far better than a ReLU MLP, that its
autograd gradient and Laplacian equal finite differences and ``torch.func``'s jacrev/hessian,
that the sine layer passes gradcheck/gradgradcheck, that Poisson reconstruction recovers the
image from its gradients; that Sinkhorn's plain and log domains meet the marginals and agree,
that the Sinkhorn divergence flow moves particles onto a target, that unrolled and envelope
gradients agree, that soft ranks approach hard ranks as epsilon falls, that the barycenter of
two 1-D histograms sits between them; and, where torch is installed, that the fixed-weight
parts and the first training losses equal the same script's with ``import torch``.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested


def _scale(t):
    return float(np.abs(np.asarray(t, dtype=np.float64)).max())


# ------------------------------------------------------------------------------- SIREN


def test_siren_grid_and_initialisation():
    g = _run("siren_inr")
    coords = g["coords"].numpy()
    assert coords.shape == (256, 2)
    # meshgrid "ij": the second coordinate runs fastest
    _close(coords[:2], [[-1.0, -1.0], [-1.0, -1.0 + 2 / 15]], rtol=1e-6, atol=1e-7)
    _close(coords[-1], [1.0, 1.0], rtol=0, atol=1e-7)
    siren = g["siren"]
    first = g["fixed_results"]["first_weight"].numpy()
    hidden = g["fixed_results"]["hidden_weight"].numpy()
    assert np.abs(first).max() <= 0.5 and np.abs(first).max() > 0.4
    bound = math.sqrt(6 / 32) / 30
    assert np.abs(hidden).max() <= bound and np.abs(hidden).max() > 0.9 * bound
    assert [type(layer).__name__ for layer in siren.net] == ["SineLayer"] * 3 + ["Linear"]
    # the first layer's pre-activations span several periods of sin(30 x)
    low, high = g["fixed_results"]["first_pre_range"]
    assert low < -math.pi and high > math.pi
    assert g["unused_params"] == ["net.3.bias"]


def test_siren_fits_image_far_better_than_relu():
    g = _run("siren_inr")
    psnrs = g["psnrs"]
    assert psnrs["siren"] > 45 and psnrs["siren"] > psnrs["relu"] + 20
    assert psnrs["fourier_relu"] > psnrs["relu"] + 20  # Fourier features fix ReLU's bias
    losses = g["siren_losses"]
    assert len(losses) == g["total_steps"] == 200
    assert losses[-1] < 1e-3 * losses[0]
    assert g["relu_losses"][-1] > 10 * losses[-1]
    # reloading the initial state_dict reproduces the first loss
    assert g["reloaded_loss"] == pytest.approx(losses[0], rel=1e-6)


def test_siren_derivatives_agree_three_ways():
    g = _run("siren_inr")
    r = g["fixed_results"]
    # vmap(jacrev) and autograd.grad on the same float32 graph
    _close(r["jacrev"], r["siren_grad"], rtol=1e-5, atol=1e-6 * _scale(r["siren_grad"]))
    # the trace of vmap(hessian) and the divergence of the gradient
    _close(r["hessian_laplace"], r["siren_laplace"], rtol=1e-5,
           atol=1e-6 * _scale(r["siren_laplace"]))
    assert g["hessian_symmetry"] < 1e-6 * _scale(r["siren_laplace"])
    # float64: autograd's Laplacian and gradient equal five-point / central differences
    _close(g["lap64"], g["fd_laplace"], rtol=1e-5, atol=1e-6 * _scale(g["lap64"]))
    # (central differences with h = 1e-4 err by h^2 f''' / 6: ~1e-7 here)
    _close(g["grad64"], g["fd_grad"], rtol=1e-5, atol=1e-6)
    # the analytic image's gradient: Sobel on the 16x16 grid follows it roughly
    sobel = g["sobel_grad"].numpy().reshape(2, -1).T
    gt = g["gt_grad"].numpy()
    assert np.corrcoef(sobel.ravel(), gt.ravel())[0, 1] > 0.9
    # a ReLU network's Laplacian is zero (its gradient is piecewise constant)
    assert float(g["relu_laplace"].abs().max()) == 0.0


def test_siren_sine_layer_gradcheck():
    g = _run("siren_inr")
    assert g["gradcheck_results"] == {"layer": True, "layer_gradgrad": True,
                                      "functional": True, "functional_gradgrad": True,
                                      "laplace": True}


def test_siren_poisson_reconstruction():
    g = _run("siren_inr")
    losses = g["poisson_losses"]
    assert len(losses) == 150 and losses[-1] < 1e-3 * losses[0]
    assert g["poisson_psnr"] > 30
    assert g["poisson_grad_error"] < 0.05
    assert tuple(g["recon"].shape) == (1024, 1)


def test_siren_fixed_results_match_torch():
    g, t = _run("siren_inr"), _run_torch("siren_inr")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    # Laplacians and second-order parameter gradients are sums of terms of order omega_0^2
    # that cancel: their absolute error follows the tensor's scale
    for key in ("siren_laplace", "hessian_laplace", "gt_laplace", "laplace64"):
        o, th = ours.pop(key), theirs.pop(key)
        _close(o, th, rtol=1e-5, atol=1e-6 * _scale(th))
    o, th = ours.pop("grad_loss_param_grads"), theirs.pop("grad_loss_param_grads")
    assert o.keys() == th.keys()
    for name in th:
        _close(o[name], th[name], rtol=1e-5, atol=1e-5 * _scale(th[name]))
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)


def test_siren_first_losses_match_torch():
    g, t = _run("siren_inr"), _run_torch("siren_inr")
    for key in ("siren_losses", "relu_losses", "ff_losses", "poisson_losses"):
        _close(g[key][:10], t[key][:10], rtol=1e-5, atol=0)
    _close(g["relu_poisson_losses"][:10], t["relu_poisson_losses"][:10], rtol=1e-5, atol=0)


# ---------------------------------------------------------------------------- Sinkhorn


def test_sinkhorn_marginals_and_domains_agree():
    g = _run("sinkhorn_ot")
    errors = g["marginal_errors"]
    assert max(errors.values()) < 1e-6
    assert g["plain_err"] <= 1e-6
    # both stop on the same criterion at (about) the same iteration, with the same plan
    assert 10 < g["plain_iters"] < 1000 and abs(g["plain_iters"] - g["log_iters"]) <= 2
    assert g["plain_log_difference"] < 1e-6
    assert g["potential_difference"] < 1e-5
    assert g["cdist_difference"] < 1e-5
    # strong duality: the dual value equals <P, C> + eps KL(P | a b^T), above <P, C>
    assert g["dual_value"] == pytest.approx(g["primal"], rel=1e-5)
    assert g["transport_cost"] < g["dual_value"]
    P = g["P_log"].numpy()
    assert P.shape == (12, 10) and (P > 0).all()


def test_sinkhorn_small_epsilon_needs_the_log_domain():
    g = _run("sinkhorn_ot")
    assert g["plain_underflows"]
    assert g["tiny_finite"] and g["tiny_marginal_error"] < 1e-3
    assert g["tiny_cost"] < g["transport_cost"]


def test_sinkhorn_unrolled_and_envelope_gradients():
    g = _run("sinkhorn_ot")
    gaps = g["envelope_gaps"]
    scale = _scale(g["grad_envelope"])
    assert gaps["unrolled_300"] < 1e-6 * scale
    assert gaps["closed_form"] < 1e-6 * scale
    assert gaps["unrolled_2"] > 1e-2 * scale  # two iterations are far from the optimum
    assert g["gradcheck_results"] == {"dual": True, "plan": True, "divergence": True}


def test_sinkhorn_soft_rank_approaches_hard_rank():
    g = _run("sinkhorn_ot")
    errors = g["soft_errors"]
    rank_errors = [errors[e][0] for e in (0.1, 0.01, 0.001)]
    sort_errors = [errors[e][1] for e in (0.1, 0.01, 0.001)]
    assert rank_errors[0] > rank_errors[1] > rank_errors[2] and rank_errors[2] < 0.2
    assert sort_errors[0] > sort_errors[1] > sort_errors[2] and sort_errors[2] < 0.01
    assert g["order_agrees"]
    assert g["soft_rank_sum"] == pytest.approx(28.0, abs=1e-9)  # 0 + 1 + ... + 7
    np.testing.assert_array_equal(g["descending"].numpy(), g["hard_sorted"].numpy()[::-1])
    # the rank loss through the soft ranks reorders the scores
    losses = g["rank_losses"]
    assert losses[-1] < 0.05 * losses[0]
    assert g["learned_order"].tolist() == list(range(8))


def test_sinkhorn_divergence_flow():
    g = _run("sinkhorn_ot")
    losses = g["flow_losses"]
    assert len(losses) == 40
    assert losses[-1] < 1e-3 * losses[0] and g["final_divergence"] < 1e-3 * losses[0]
    assert all(b <= a * 1.01 for a, b in zip(losses, losses[1:]))
    assert abs(g["self_divergence"]) < 1e-6  # debiased: S(b, b) = 0
    after, before = g["mean_gap"]
    assert after < 0.01 * before


def test_sinkhorn_barycenter_of_two_histograms():
    g = _run("sinkhorn_ot")
    assert g["bary_mass"] == pytest.approx(1.0, abs=1e-9)
    assert g["bary_mean"] == pytest.approx(0.475, abs=5e-3)  # the means average in W2
    assert abs(g["bary_std"] - 0.065) < 0.015
    assert g["quantile_gap"] < 0.05
    assert 0.4 < g["bary_mode"] < 0.55
    # the Euclidean average keeps both modes and is low in between
    avg = g["euclidean_average"].numpy()
    peaks = [i for i in range(1, len(avg) - 1) if avg[i] > avg[i - 1] and avg[i] > avg[i + 1]]
    assert len(peaks) == 2
    bary = g["bary"].numpy()
    assert bary.max() > 5 * avg[int(np.argmax(bary))]


def test_sinkhorn_fixed_results_match_torch():
    g, t = _run("sinkhorn_ot"), _run_torch("sinkhorn_ot")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.pop("iterations") == theirs.pop("iterations")
    # potentials near zero and tiny plan entries carry the rounding of their largest terms
    for key in ("f", "g", "plan", "plain_plan"):
        o, th = ours.pop(key), theirs.pop(key)
        _close(o, th, rtol=1e-5, atol=1e-6 * _scale(th))
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-7)


def test_sinkhorn_first_losses_match_torch():
    g, t = _run("sinkhorn_ot"), _run_torch("sinkhorn_ot")
    # the divergence is OT(x, y) - (OT(x, x) + OT(y, y)) / 2: terms of order one cancel to
    # 1e-3, so the float32 rounding of those terms (~1e-7) sets the absolute tolerance
    _close(g["flow_losses"][:10], t["flow_losses"][:10], rtol=1e-5, atol=1e-7)
    _close(g["rank_losses"][:10], t["rank_losses"][:10], rtol=1e-10, atol=0)
