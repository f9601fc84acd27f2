"""Scripts written for these tests in the way common PyTorch code of two kinds is written (set
B35: DeepAR-style probabilistic forecasting with an N-BEATS baseline, and a Dreamer-style world
model with an actor trained in imagination), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that DeepAR's likelihood falls, that the packed LSTM equals each
series run alone, that the forecast's 80% interval covers about 80% and its quantiles beat a
seasonal naive forecast, that the count model and N-BEATS learn; that the RSSM's
reconstruction and KL fall, that straight-through samples are hard one-hots with the softmax's
gradient, that the lambda-return equals the n-step returns written out, that the actor learned
to reach the goal; and, where torch is installed, that the fixed-weight parts and the first
training losses equal the same script's with ``import torch``.
"""

import math

import numpy as np

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

# ----------------------------------------------------------------- DeepAR, N-BEATS


def test_deepar_likelihood_falls_and_forecast_is_calibrated():
    g = _run("deepar_forecast")
    losses = g["losses"]
    assert len(losses) == g["epochs"] == 160
    assert losses[0] > 2.0  # far from the noise's entropy (~0.2 nats) at the start
    assert np.mean(losses[-10:]) < 0.15 * losses[0]
    samples = g["samples"]
    assert tuple(samples.shape) == (16, 100, 7)
    lower, median, upper = (q.numpy() for q in g["quantile_forecasts"])
    assert (lower <= median).all() and (median <= upper).all()
    # the 80% interval covers roughly 80% of the held-out week (112 points)
    assert 0.6 <= g["coverage_80"] <= 0.95
    # the quantiles and the samples beat a forecast that repeats the last week
    assert g["deepar_pinball"] < 0.75 * g["naive_pinball"]
    assert g["deepar_crps"] < 0.75 * g["naive_crps"]
    assert g["median_mae"] < g["naive_crps"]


def test_deepar_packed_path_equals_unpadded_runs():
    g = _run("deepar_forecast")
    # each series alone (no padding, no packing) gives the same outputs and final (h, c)
    assert g["packed_vs_alone"] < 1e-6
    assert g["padding_is_zero"]
    assert g["packed_lengths"].tolist() == g["steps"].tolist()
    r = g["fixed_results"]
    assert r["packed_batch_sizes"].tolist() == [3, 3, 2, 2, 1, 1]
    assert r["packed_sorted_indices"].tolist() == [1, 0, 2]
    assert r["packed_unsorted_indices"].tolist() == [1, 0, 2]
    assert r["lstm_out_lengths"].tolist() == [4, 6, 2]
    out, h_n = r["lstm_packed_out"].numpy(), r["lstm_h_n"].numpy()
    assert out.shape == (3, 7, 5)
    for i, n in enumerate([4, 6, 2]):
        assert (out[i, n:] == 0.5).all()  # padding_value past each length
        _close(h_n[-1, i], out[i, n - 1], rtol=0, atol=0)  # the top layer's last valid step
    # pad_sequence: time-first by default, batch-first with a padding value
    assert tuple(r["pad_time_first"].shape) == (6, 3, 3)
    batch_first = r["pad_batch_first"].numpy()
    assert batch_first.shape == (3, 6, 3) and (batch_first[2, 2:] == -2.0).all()


def test_deepar_likelihoods_and_count_model():
    g = _run("deepar_forecast")
    assert g["gradcheck_results"] == {"student_t": True, "negbin": True, "packed_lstm": True}
    r = g["fixed_results"]
    # NegativeBinomial(1/alpha, logits=log(mu alpha)) has mean mu
    assert g["negbin_mean_error"] < 1e-5 * float(g["mu"].detach().abs().max())
    # StudentT with dof > 2: a finite variance, scale^2 dof / (dof - 2)
    mean, variance = (t.numpy() for t in r["student_t_mean_var"])
    dof = (2.0 + np.log1p(np.exp(g["raw_dof"].detach().numpy())))
    scale = np.log1p(np.exp(g["raw_scale"].detach().numpy()))
    _close(variance, scale**2 * dof / (dof - 2), rtol=1e-5)
    _close(mean, g["loc"].detach().numpy(), rtol=0, atol=0)
    count_losses = g["count_losses"]
    assert np.mean(count_losses[-5:]) < 0.9 * count_losses[0]
    assert g["count_samples_are_counts"]
    assert tuple(g["count_samples"].shape) == (8, 50, 7)


def test_nbeats_baseline_learns():
    g = _run("deepar_forecast")
    losses = g["nbeats_losses"]
    assert np.mean(losses[-10:]) < 0.15 * np.mean(losses[:3])
    assert g["nbeats_mae"] < g["naive_crps"]  # beats the seasonal naive forecast's MAE
    model = g["nbeats"]
    # the Fourier bases are buffers: in the state dict, not parameters
    names = {n for n, _ in model.named_parameters()}
    state = model.state_dict()
    assert "blocks.0.basis_b" in state and "blocks.0.basis_f" in state
    assert "blocks.0.basis_b" not in names
    assert tuple(state["blocks.0.basis_b"].shape) == (7, 21)
    assert tuple(g["backcasts"].shape[1:]) == (21,) and tuple(g["forecasts"].shape[1:]) == (7,)


# torch's run trains each model for 10 steps: the tests compare its fixed-weight results and
# first 10 losses (each section reseeds, so the shorter loops change nothing compared)
_DEEPAR_ORACLE = {"epochs = 160": "epochs = 10", "for _ in range(80):": "for _ in range(10):",
                  "for _ in range(150):": "for _ in range(10):"}


def test_deepar_fixed_results_match_torch():
    g, t = _run("deepar_forecast"), _run_torch("deepar_forecast", skip=_DEEPAR_ORACLE)
    _close_nested(g["fixed_results"], t["fixed_results"], rtol=1e-5, atol=1e-6)


def test_deepar_first_losses_match_torch():
    g, t = _run("deepar_forecast"), _run_torch("deepar_forecast", skip=_DEEPAR_ORACLE)
    _close(g["losses"][:10], t["losses"][:10], rtol=1e-5, atol=0)
    _close(g["count_losses"][:10], t["count_losses"][:10], rtol=1e-5, atol=0)
    _close(g["nbeats_losses"][:10], t["nbeats_losses"][:10], rtol=1e-5, atol=0)
    assert g["lengths"].tolist() == t["lengths"].tolist()


# --------------------------------------------------------------------------- Dreamer


def test_dreamer_world_model_learns():
    g = _run("dreamer_lite")
    recon, reward, kl = g["recon_losses"], g["reward_losses"], g["kl_values"]
    assert len(recon) == g["iterations"] == 120
    assert np.mean(recon[-10:]) < 0.15 * recon[0]
    assert np.mean(reward[-10:]) < 0.3 * reward[0]
    assert np.mean(g["wm_losses"][-10:]) < 0.3 * g["wm_losses"][0]
    # the KL rises while the posterior learns to encode the position, then falls as the
    # prior learns the (deterministic) moves
    peak = int(np.argmax(kl))
    assert kl[peak] > 0.5 and kl[0] < 0.2 and peak < 60
    assert np.mean(kl[-10:]) < 0.6 * kl[peak]


def test_dreamer_straight_through_and_kl():
    g = _run("dreamer_lite")
    assert g["st_is_hard"] and g["st_is_one_hot"]  # the same draw as OneHotCategorical's
    _close(g["st_grad"], g["softmax_grad"], rtol=1e-6, atol=1e-7)
    assert float(g["st_grad"].abs().max()) > 0
    assert g["kl_matches_manual"] < 1e-5
    assert g["clamped_prior_grad_is_zero"]  # below free_nats, clamp passes no gradient
    assert g["symlog_roundtrip"] < 2e-5  # float32 at |x| = 100
    symlog = g["fixed_results"]["symlog"].numpy()
    x = g["x"].numpy()
    _close(symlog, np.sign(x) * np.log1p(np.abs(x)), rtol=1e-6)


def test_dreamer_lambda_return_equals_brute_force():
    g = _run("dreamer_lite")
    _close(g["lambda_returns"].detach(), g["brute_returns"].detach(), rtol=1e-12, atol=1e-12)
    for ours, brute in zip(g["lambda_return_grads"], g["brute_return_grads"]):
        _close(ours, brute, rtol=1e-12, atol=1e-12)
    assert g["mc_error"] < 1e-12 and g["td_error"] < 1e-12
    assert g["gradcheck_results"] == {"lambda_return": True, "symlog_symexp": True,
                                      "categorical_kl": True}


def test_dreamer_actor_learns_in_imagination():
    g = _run("dreamer_lite")
    assert len(g["actor_losses"]) == g["iterations"] - g["warmup"] == 80
    # a random walk on the 5x5 grid earns about -2 a step; the actor, trained only in the
    # world model's imagination, walks to the goal and stays
    assert g["random_reward"] < -1.5
    assert g["actor_reward"] > g["random_reward"] + 1.5
    assert g["frozen_flags_restored"]
    assert all(p.requires_grad for p in g["world_model"].parameters())
    # three optimizers over disjoint parameters
    sets = [{id(p) for group in opt.param_groups for p in group["params"]}
            for opt in (g["model_optimizer"], g["actor_optimizer"], g["critic_optimizer"])]
    assert not (sets[0] & sets[1]) and not (sets[0] & sets[2]) and not (sets[1] & sets[2])
    assert math.isfinite(g["critic_losses"][-1])


# torch's run stops once the compared first losses are in (the actor's start at 40)
_DREAMER_ORACLE = {"iterations, warmup, batch_size = 120, 40, 16":
                   "iterations, warmup, batch_size = 50, 40, 16"}


def test_dreamer_fixed_results_match_torch():
    g, t = _run("dreamer_lite"), _run_torch("dreamer_lite", skip=_DREAMER_ORACLE)
    _close_nested(g["fixed_results"], t["fixed_results"], rtol=1e-5, atol=1e-6)


def test_dreamer_first_losses_match_torch():
    g, t = _run("dreamer_lite"), _run_torch("dreamer_lite", skip=_DREAMER_ORACLE)
    _close(g["wm_losses"][:10], t["wm_losses"][:10], rtol=1e-5, atol=0)
    _close(g["kl_values"][:10], t["kl_values"][:10], rtol=1e-5, atol=1e-7)
    _close(g["actor_losses"][:10], t["actor_losses"][:10], rtol=1e-5, atol=0)
    _close(g["critic_losses"][:10], t["critic_losses"][:10], rtol=1e-5, atol=0)
