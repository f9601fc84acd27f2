"""Scripts written for these tests in the way public PyTorch code of two kinds is written (set
H35: a differentiable Kalman filter with a Rauch-Tung-Striebel smoother for a linear-Gaussian
state-space model, learned by maximum likelihood, and a neural spline flow with
rational-quadratic coupling layers on two moons, as nflows and Pyro write them), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that the smoother beats the filter and the filter beats the raw
observations, that the smoother and the likelihood equal the exact dense Gaussian posterior of
a short sequence, that the Kalman gain three ways, the Joseph and the short covariance update
and the hand-made density agree, that a filter step passes gradcheck, that per-sequence
``vmap(grad)`` gradients sum to the batched gradient, that maximum likelihood (Adam, then
LBFGS) reaches the true parameters' likelihood and recovers the states; that the spline
inverts, its log-det is its slope, its tails are the identity, the two bucketings agree, the
flow's log-det is the slogdet of its Jacobian, the mask and ``torch.where`` tails agree in
value and gradient, and the flow learns two moons; and, where torch is installed, that the
fixed-weight parts and the first training losses equal the same script's with
``import torch``.
"""

import numpy as np

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

# ------------------------------------------------------------------- Kalman filter, smoother


def test_kalman_smoother_recovers_the_states():
    g = _run("kalman_smoother")
    # on the true parameters: smoothing beats filtering beats the raw observations
    assert g["smoothed_rmse"] < 0.8 * g["filtered_rmse"]
    assert g["smoothed_position_rmse"] < 0.4 * g["observation_rmse"]
    assert g["filtered_rmse"] < g["observation_rmse"]
    # the truth lies inside the smoother's 2-sigma band about 95% of the time
    assert 0.9 < g["coverage_2sigma"] < 0.99
    r = g["fixed_results"]
    assert tuple(r["true_filtered"].shape) == (8, 6, 4)
    assert tuple(r["true_smoothed_cov"].shape) == (6, 4, 4)
    cov = r["true_smoothed_cov"].numpy()
    _close(cov, cov.transpose(0, 2, 1), rtol=0, atol=1e-15)
    assert (np.linalg.eigvalsh(cov) > 0).all()
    # the smoother is the exact posterior of a short sequence, the likelihood too
    assert all(value < 1e-11 for value in g["smoother_vs_dense"].values()), g["smoother_vs_dense"]


def test_kalman_gain_forms_and_densities_agree():
    g = _run("kalman_smoother")
    base_ll, base_m, base_P = g["log_lik"], g["ms"], g["Ps"]
    for ll, m, P in g["variants"].values():
        _close(ll, base_ll, rtol=1e-12, atol=1e-12)
        _close(m, base_m, rtol=1e-11, atol=1e-13)
        _close(P, base_P, rtol=1e-10, atol=1e-13)
    assert g["by_hand_grad_difference"] < 1e-11
    assert g["gradcheck_step"] and g["gradcheck_by_hand"]
    # vmap(grad) over the sequences: the per-sequence gradients sum to the batched one
    assert g["per_sequence_difference"] < 1e-11
    assert g["per_sequence_log_lik_difference"] < 1e-11
    grads = g["fixed_results"]["per_sequence_grads"]
    assert tuple(grads["generator"].shape) == (4, 4, 4)
    assert tuple(grads["init_mean"].shape) == (4, 4)


def test_kalman_learns_by_maximum_likelihood():
    g = _run("kalman_smoother")
    adam, lbfgs = g["adam_losses"], g["lbfgs_losses"]
    assert len(adam) == 40 and adam[-1] < 0.3 * adam[0]
    assert lbfgs[0] == adam[-1] or abs(lbfgs[0] - adam[-1]) < 0.1
    assert min(lbfgs) < adam[-1] and g["final_loss"] < adam[-1]
    # the maximum-likelihood fit is at least as likely as the parameters that made the data
    assert g["final_loss"] < g["true_loss"] + 0.01
    # the observation noise (0.05) is recovered, the transition is stable, and the smoothed
    # positions (the identifiable part of the state) track the truth
    _close(g["learned_R"], [0.05, 0.05], rtol=0.2)
    assert g["learned_eigs"] < 1.01
    assert g["learned_position_rmse"] < 0.5 * g["observation_rmse"]
    assert g["learned_position_rmse"] < 1.5 * g["smoothed_position_rmse"]
    # Q is built as L L^T + eps I from softplus diagonals: symmetric positive definite
    Q = g["learner"].Q.detach().numpy()
    _close(Q, Q.T, rtol=0, atol=1e-15)
    assert np.linalg.eigvalsh(Q).min() > 0


def test_kalman_fixed_results_match_torch():
    g, t = _run("kalman_smoother"), _run_torch("kalman_smoother")
    _close_nested(g["fixed_results"], t["fixed_results"], rtol=1e-9, atol=1e-12)


def test_kalman_losses_match_torch():
    g, t = _run("kalman_smoother"), _run_torch("kalman_smoother")
    _close(g["adam_losses"], t["adam_losses"], rtol=1e-10, atol=0)
    assert len(g["lbfgs_losses"]) == len(t["lbfgs_losses"])
    _close(g["lbfgs_losses"], t["lbfgs_losses"], rtol=1e-7, atol=0)
    _close(g["learned_R"], t["learned_R"], rtol=1e-7)


def test_kalman_scale_tril_gradient_matches_torch():
    """MultivariateNormal(scale_tril=L).log_prob reads only L's lower triangle (a triangular
    solve and the diagonal): the upper triangle of a leaf L gets a zero gradient."""
    g, t = _run("kalman_smoother"), _run_torch("kalman_smoother")
    ours = g["scale_tril_grad"].numpy()
    assert (np.triu(ours, 1) == 0).all(), ours
    _close(ours, t["scale_tril_grad"], rtol=1e-10, atol=1e-14)


# ------------------------------------------------------------------------ neural spline flow


def test_spline_inverts_with_identity_tails():
    g = _run("spline_flow")
    assert g["spline_roundtrip"] < 1e-12 and g["spline_logdet_cancel"] < 1e-12
    assert g["tails_identity"] and g["where_vs_mask"] < 1e-13
    assert g["buckets_agree"]
    assert g["monotone"] and g["slope_vs_logdet"] < 1e-10
    r = g["fixed_results"]
    # continuous, with slope one, at the tail bounds
    _close(r["edge_out"], [-3.0 - 1e-9, -3.0, 3.0, 3.0 + 1e-9], rtol=0, atol=1e-12)
    _close(r["edge_logdet"], np.zeros(4), rtol=0, atol=1e-12)
    # bins: from 0 to K - 1, the knots falling in the bin they open, the right end in the last
    buckets = r["buckets"].numpy()
    assert buckets.min() == 0 and buckets.max() == 4
    assert (buckets[:, :5] == np.arange(5)).all() and (buckets[:, -1] == 4).all()
    assert g["gradcheck_results"] == {"forward": True, "inverse": True, "where": True}


def test_spline_flow_inverts_and_its_logdet_is_the_jacobians():
    g = _run("spline_flow")
    assert g["flow_roundtrip"] < 1e-12 and g["flow_logdet_cancel"] < 1e-12
    assert g["jacobian_vs_logdet"] < 1e-12
    assert g["independent_vs_standard"] < 1e-12
    assert g["where_flow_difference"] < 1e-13 and g["where_grad_difference"] < 1e-13
    # the Transform module inside a TransformedDistribution: the same density, also from the
    # cached (x, y) pair of rsample
    assert g["transformed_vs_manual"] < 1e-12
    _close(g["draw_log_prob"].detach(), g["draw_log_prob_fresh"].detach(), rtol=1e-12, atol=0)
    assert tuple(g["draws"].shape) == (5, 2)


def test_spline_flow_learns_two_moons():
    g = _run("spline_flow")
    losses = g["losses"]
    assert len(losses) == 300
    assert np.mean(losses[-20:]) < np.mean(losses[:20]) - 0.6
    assert g["test_nll"] < g["gaussian_nll"] - 0.4
    assert g["test_roundtrip"] < 1e-4
    # samples land on the moons: as near the training points as held-out points are
    assert tuple(g["samples"].shape) == (1000, 2)
    assert g["sample_nearest_median"] < 1.5 * g["test_nearest_median"]
    marginal = g["marginal_losses"]
    assert marginal[-1] < marginal[0] - 0.2
    assert g["scheduler"].get_last_lr()[0] < 1e-6


def test_spline_flow_fixed_results_match_torch():
    g, t = _run("spline_flow"), _run_torch("spline_flow")
    _close_nested(g["fixed_results"], t["fixed_results"], rtol=1e-9, atol=1e-12)


def test_spline_flow_first_losses_match_torch():
    g, t = _run("spline_flow"), _run_torch("spline_flow")
    # float32 training: Adam carries the last-bit differences into later steps
    _close(g["losses"][:25], t["losses"][:25], rtol=2e-6, atol=0)
    # float64, but Adam turns the rounding of near-zero gradients (bins no data reaches) into
    # full steps: only the first steps are compared tightly
    _close(g["marginal_losses"][:12], t["marginal_losses"][:12], rtol=1e-12, atol=0)
