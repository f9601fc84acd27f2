"""Scripts written for these tests in the way common PyTorch code of two kinds is written (set
Z34: soft actor-critic on a batched pendulum as CleanRL and Spinning Up write it, and mixture
density networks beside Gaussian mixtures fitted by EM and by gradient descent), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that SAC improves the pendulum's return, that the squashed Gaussian's
log-probability is the same through the softplus correction and through
``TransformedDistribution(Normal, [TanhTransform])``, that the three polyak updates equal their
formula; that the MDN learns the multi-valued inverse (its samples respect the forward map, the
MSE regressor's means do not), that its three NLL formulas agree and pass gradcheck, that EM's
log-likelihood never falls and gradient descent through ``LowerCholeskyTransform`` reaches
the same optimum, that ``Independent`` and the KL divergences agree with their definitions;
and, where torch is installed, that the fixed-weight parts and the first training losses equal
the same script's with ``import torch``.
"""

import math

import numpy as np

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

# ------------------------------------------------------------------------- SAC pendulum


def test_sac_improves_the_pendulum_return():
    g = _run("sac_pendulum")
    h = g["history"]
    # 8 envs x 400 steps, episodes of 100 steps; 4 updates a step after the first 40
    returns = h["episodic_returns"]
    assert len(returns) == 32
    assert len(h["loss_q"]) == len(h["loss_pi"]) == len(h["alpha"]) == (400 - 40) * 4
    assert np.mean(returns[-8:]) > 0.6 * np.mean(returns[:8])
    # the deterministic policy on the same 8 start states: from about -650 to about -200
    assert g["before"] < -500
    assert g["after"] > 0.5 * g["before"] and g["after"] > g["before"] + 250
    # automatic entropy tuning: alpha starts at exp(0) and falls
    assert abs(h["alpha"][0] - 1.0) < 0.01 and h["alpha"][-1] < 0.5
    assert g["sac"].target_entropy == -1.0
    assert all(np.isfinite(h[k]).all() for k in ("loss_q", "loss_pi", "alpha_loss"))


def test_sac_log_prob_forms_agree():
    g = _run("sac_pendulum")
    forms = g["log_prob_forms"]
    # the softplus correction and the TanhTransform's log|det J| at the cached sample
    assert forms["action_difference"] < 1e-6
    assert forms["logp_difference"] < 1e-5
    assert forms["grad_difference"] < 1e-5  # relative to each gradient's largest entry
    # CleanRL's log(scale (1 - tanh^2) + 1e-6): log(scale) lower, equal while tanh is not
    # flat, and wrong by its epsilon where 1 - tanh(x)^2 rounds to 0
    assert forms["cleanrl_action_difference"] < 1e-6
    assert forms["cleanrl_logp_difference"] < 1e-4
    assert forms["cleanrl_saturated_difference"] > 1.0
    largest, unsaturated = g["pre_tanh_range"]
    assert largest > 10 and 0.1 < unsaturated < 0.9
    assert np.isfinite(g["formula_logp"].detach().numpy()).all()


def test_sac_polyak_updates_and_replay_buffer():
    g = _run("sac_pendulum")
    # mul_/add_, CleanRL's copy_, _foreach_lerp_ and lerp_ all equal
    # polyak * targ + (1 - polyak) * p
    errors = g["polyak_error"]
    assert errors.keys() == {"spinup", "cleanrl", "foreach", "lerp"}
    assert all(e < 2e-7 for e in errors.values()), errors
    for ours, theirs in zip(g["polyak_results"]["foreach"], g["polyak_results"]["lerp"]):
        assert (ours == theirs).all()  # the list form is the per-tensor lerp_
    moved = max((a - b).abs().max().item() for a, b in zip(g["polyak_results"]["spinup"],
                                                             g["targ_before"]))
    assert moved > 1e-6  # the online network had moved away from the target
    assert g["targets_frozen"] and g["q_params_trainable"]
    # 12 transitions into 10 slots: the last two wrote slots 0 and 1 again
    assert g["buffer_state"] == (2, 10, [2.0, 2.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0])
    assert g["replay_buffer"].size == 8 * 400 and g["replay_buffer"].ptr == 8 * 400
    # the truncated episodes stored their final observations, not the reset ones
    done = g["replay_buffer"].done_buf[:3200].numpy()
    assert (done == 0).all()


# torch's run stops once the compared losses and first episodes are in (t = 50 and 100)
_SAC_ORACLE = {"num_envs, total_steps, start_steps, update_after = 8, 400, 40, 40":
               "num_envs, total_steps, start_steps, update_after = 8, 100, 40, 40"}


def test_sac_fixed_results_match_torch():
    g, t = _run("sac_pendulum"), _run_torch("sac_pendulum", skip=_SAC_ORACLE)
    _close_nested(g["fixed_results"], t["fixed_results"], rtol=1e-5, atol=1e-6)
    assert g["buffer_state"] == t["buffer_state"]
    _close(g["pre_tanh_range"], t["pre_tanh_range"], rtol=1e-5)


def test_sac_first_losses_match_torch():
    g, t = _run("sac_pendulum"), _run_torch("sac_pendulum", skip=_SAC_ORACLE)
    for key in ("loss_q", "loss_pi", "alpha_loss", "alpha"):
        _close(g["history"][key][:40], t["history"][key][:40], rtol=1e-5, atol=0)
    # (the first episodes' returns sum 200 steps of a policy trained 160 times in float32:
    # they part by 2% on hosts whose BLAS rounds otherwise, so they are not compared)
    _close(g["before"], t["before"], rtol=1e-5)


# -------------------------------------------------------------- mixture density network


def test_mdn_nll_forms_agree_and_pass_gradcheck():
    g = _run("mixture_density")
    forms, grads = g["nll_forms"], g["nll_grads"]
    for name in ("logsumexp", "tutorial"):
        assert math.isclose(forms[name], forms["distributions"], rel_tol=1e-6)
        for param, grad in grads[name].items():
            ref = grads["distributions"][param]
            _close(grad, ref, rtol=1e-5, atol=1e-6 * float(np.abs(ref.numpy()).max()))
    # 40 is tens of sigmas from every component: exp underflows in the tutorial's form
    far = g["far_nll"]
    assert math.isfinite(far["distributions"]) and far["distributions"] > 100
    assert math.isclose(far["logsumexp"], far["distributions"], rel_tol=1e-6)
    assert far["tutorial"] == math.inf
    assert g["gradcheck_results"] == {"distributions": True, "logsumexp": True, "gradgrad": True}


def test_mdn_learns_the_multivalued_inverse():
    g = _run("mixture_density")
    losses = g["mdn_losses"]
    assert len(losses) == 1500
    assert losses[0] > 0.5 and losses[-1] < -0.8
    assert np.mean(g["baseline_losses"][-10:]) < 0.5 * g["baseline_losses"][0]
    # held out: the MDN's NLL is far under the Gaussian around the MSE regressor's mean
    assert g["mdn_test_nll"] < g["baseline_test_nll"] - 0.5
    for value in g["test_forms"].values():
        assert math.isclose(value, g["mdn_test_nll"], rel_tol=1e-5)
    # sampled y put back through the forward map land near x; the conditional mean does not
    assert g["sample_consistent"] > 0.85 and g["baseline_consistent"] < 0.6
    assert tuple(g["y_samples"].shape) == (20, 200)
    # the mixture's mean and variance describe its samples (20 draws per x)
    se = np.sqrt(g["mixture_variance"].numpy() / 20)
    z = np.abs((g["sample_mean"] - g["mixture_mean"]).numpy()) / se
    assert np.mean(z) < 1.2 and (g["mixture_variance"].numpy() > 0).all()
    # a fixed 1-D mixture: 4000 samples against its mean and variance
    r = g["fixed_results"]
    samples = g["fixed_samples"].numpy()
    var = float(r["fixed_mix_variance"])
    assert abs(samples.mean() - float(r["fixed_mix_mean"])) < 4 * math.sqrt(var / 4000)
    assert abs(samples.var() / var - 1) < 0.1


def test_gmm_em_is_monotone_and_gradient_descent_agrees():
    g = _run("mixture_density")
    ll = np.array(g["em_log_likelihoods"])
    assert len(ll) == 60
    assert np.diff(ll).min() >= -1e-12  # EM never lowers the likelihood
    assert ll[-1] - ll[0] > 0.5
    # gradient descent through the transforms reaches EM's optimum
    gd = g["gd_losses"]
    assert gd[-1] < gd[0] - 0.5
    assert abs(g["gd_log_likelihood"] - g["em_log_likelihood"]) < 1e-3
    assert g["em_log_likelihood"] >= g["gd_log_likelihood"] - 1e-6
    assert g["roundtrip_error"] < 1e-12 and g["gradcheck_gmm"]
    assert g["same_transform"] == "LowerCholeskyTransform"
    # EM found the three true components
    weights, means, tril = g["em_params"]
    assert math.isclose(float(weights.sum()), 1.0, rel_tol=1e-12)
    _close(np.sort(weights.numpy()), [0.2, 0.3, 0.5], rtol=0, atol=0.05)
    assert (g["kl_em_components"].numpy() < 0.1).all()
    # held-out data: both fits within 0.05 nats per point of the true mixture
    held = g["held_out"]
    assert abs(held["em"] - held["true"]) < 0.05
    assert abs(held["gradient"] - held["em"]) < 1e-3


def test_independent_and_kl_divergences():
    g = _run("mixture_density")
    # Independent(Normal, 1) components are MultivariateNormals with diagonal scale_tril
    assert g["independent_difference"] < 1e-12
    assert g["independent_shapes"] == ((), (2,))
    _close(g["kl_normal"], g["kl_closed"], rtol=1e-6)
    _close(g["kl_independent"], g["kl_normal"].sum(), rtol=1e-6)
    _close(g["kl_mvn"], g["kl_independent"], rtol=1e-5)
    assert float(g["kl_normal"][1]) == 8.0  # equal scales: (mean gap)^2 / (2 scale^2)


def test_mixture_fixed_results_match_torch():
    g, t = _run("mixture_density"), _run_torch("mixture_density")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    # float64 parts: EM, the data, the Cholesky transform's inverse, the mixtures' densities
    for key in ("em_log_likelihoods", "X_head", "raw_tril_init", "true_log_prob",
                "diag_log_prob"):
        _close(ours.pop(key), theirs.pop(key), rtol=1e-12, atol=1e-14)
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)
    assert g["biject_lower_cholesky"] == t["biject_lower_cholesky"]
    assert g["held_out"].keys() == t["held_out"].keys()
    _close(g["held_out"]["true"], t["held_out"]["true"], rtol=1e-12)


def test_mixture_first_losses_match_torch():
    g, t = _run("mixture_density"), _run_torch("mixture_density")
    _close(g["mdn_losses"][:10], t["mdn_losses"][:10], rtol=1e-5, atol=0)
    _close(g["baseline_losses"][:10], t["baseline_losses"][:10], rtol=1e-5, atol=0)
    _close(g["gd_losses"][:50], t["gd_losses"][:50], rtol=1e-10, atol=0)
    _close(g["em_log_likelihoods"], t["em_log_likelihoods"], rtol=1e-12, atol=0)
