"""Scripts written for these tests in the way common PyTorch code of two kinds is written (set
D36: learning-to-rank losses and survival models as allRank, pycox and DeepSurv write them, and
HMMs in log space beside differentiable sorting), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that RankNet over index pairs equals RankNet by broadcasting, that the
LambdaLoss/ApproxNDCG losses keep finite gradients and none on padded documents through their
NaN-masking, that NDCG@k by sort + cumsum equals NDCG@k by topk, that the scoring MLPs learn;
that the Cox partial likelihood's four forms agree (Breslow's ties by mask and by
``torch.unique``), its Hessian is the information matrix by hand and Newton-Raphson converges,
that the concordance index and Kaplan-Meier by broadcasting equal the loops, that the logistic
hazard likelihood by hand equals pycox's, the losses pass gradcheck, and DeepSurv learns; that
the forward algorithm's likelihood equals the brute-force sum over paths and its gradient the
posteriors, Viterbi finds the best path, Baum-Welch raises the likelihood, and NeuralSort and
the pairwise soft rank tend to the hard permutation and ranks; and, where torch is installed,
that the fixed-weight parts and the first training losses equal the same script's with
``import torch``.
"""

import itertools

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


# ------------------------------------------------------------------------------ ranking


def test_ranking_losses_agree_and_ignore_padding():
    g = _run("rank_survival")
    r = g["fixed_results"]
    losses, grads = r["rank_losses"], r["rank_grads"]
    # RankNet over the list of every index pair equals RankNet by broadcasting
    _close(losses["ranknet_broadcast"], losses["ranknet"], rtol=1e-12, atol=0)
    _close(grads["ranknet_broadcast"], grads["ranknet"], rtol=1e-10, atol=1e-15)
    # the -inf - -inf NaNs of the padded pairs are masked out: finite gradients, and none
    # reaches a padded document
    assert all(g["rank_grads_finite"].values()) and len(g["rank_grads_finite"]) == 9
    assert all(g["padded_grads_zero"].values())
    for name, grad in grads.items():
        assert float(grad.abs().sum()) > 0, name
    assert g["margin_agrees"]
    assert g["gradcheck_rank"] == dict.fromkeys(("listnet", "ranknet", "lambdarank",
                                                 "approxndcg"), True)
    # NDCG@k by sort + cumsum and by topk; the ideal ranking scores one
    ndcg = g["ndcg_sorted"].numpy()
    _close(ndcg, g["ndcg_topk"], rtol=0, atol=1e-7)  # (float32 discounts)
    assert ((ndcg >= 0) & (ndcg <= 1 + 1e-7)).all()
    _close(g["ideal_ndcg"], np.ones((6, 4)), rtol=0, atol=1e-7)
    # allRank's batches: padded with y = -1 to 8 documents, lengths 3..8
    X, y, mask = g["X_rank"], g["y_rank"], g["mask_rank"]
    assert tuple(X.shape) == (24, 8, 6) and tuple(y.shape) == (24, 8)
    lengths = g["slate_lengths"].tolist()
    assert min(lengths) >= 3 and max(lengths) <= 8
    for row, n in enumerate(lengths):
        assert mask[row].tolist() == [True] * n + [False] * (8 - n)
        assert (y[row, n:] == -1).all() and (X[row, n:] == 0).all()
        assert (y[row, :n] >= 0).all() and (y[row, :n] <= 4).all()


def test_scoring_mlps_learn_to_rank():
    g = _run("rank_survival")
    for name, record in g["rank_training"].items():
        losses = record["losses"]
        assert len(losses) == 24, name  # 12 epochs of two batches
        assert np.mean(losses[-4:]) < np.mean(losses[:4]) - 0.1 * abs(np.mean(losses[:4])), name
        assert record["ndcg_after"] > record["ndcg_before"] + 0.2, name
        assert record["ndcg_after"] > 0.95, name
        assert record["ndcg_after_topk"] == pytest.approx(record["ndcg_after"], abs=1e-6)


# ----------------------------------------------------------------------------- survival


def test_cox_partial_likelihood_forms_agree():
    g = _run("rank_survival")
    cox, grads = g["fixed_results"]["cox"], g["fixed_results"]["cox_grads"]
    for name in ("logcumsumexp", "breslow_mask", "breslow_unique"):
        _close(cox[name], cox["logcumsumexp"], rtol=1e-12, atol=0)
        _close(grads[name], grads["logcumsumexp"], rtol=1e-10, atol=1e-14)
    _close(cox["pycox"], cox["logcumsumexp"], rtol=1e-6, atol=0)  # (pycox's eps = 1e-7)
    _close(cox["breslow_unique_tied"], cox["breslow_mask_tied"], rtol=1e-12, atol=0)
    _close(grads["breslow_unique_tied"], grads["breslow_mask_tied"], rtol=1e-10, atol=1e-14)
    assert g["n_unique_tied"] < 20  # the rounded times do tie
    # without a tie correction the sort order of tied subjects shapes the risk sets
    assert abs(float(cox["pycox_tied"]) - float(cox["breslow_mask_tied"])) > 1e-3
    assert g["gradcheck_cox"] == dict.fromkeys(("pycox", "logcumsumexp", "breslow_mask",
                                                "breslow_unique"), True)
    # the score at beta = 0: events' covariates minus their risk sets' means
    _close(g["score_autograd"], g["score_by_hand"], rtol=1e-10, atol=1e-14)


def test_cox_newton_raphson_and_information():
    g = _run("rank_survival")
    steps = g["newton_steps"]
    assert steps[0] > 0.1 and steps[3] < 1e-4 and steps[-1] < 1e-10  # quadratic convergence
    assert steps[2] < steps[1] ** 2 * 0.5 + 1e-12
    # autograd's Hessian of the partial likelihood is the observed information by hand
    _close(g["hessian_at_fit"], g["information"], rtol=1e-10, atol=1e-12)
    # LBFGS (strong Wolfe) lands where Newton does, with a vanishing score
    assert g["fit_grad_norm"] < 1e-5
    _close(g["beta_fit"].detach(), g["beta_nr"], rtol=0, atol=1e-6)
    se = g["standard_errors"].numpy()
    assert (se > 0.05).all() and (se < 1).all()
    assert abs(float(g["z_scores"][0])) > 2  # the strongest covariate is significant
    # shifting every log-hazard by 100 in float32 changes nothing
    losses, shift_grads = g["shift_losses"], g["shift_grads"]
    assert losses[100.0] == pytest.approx(losses[0.0], rel=1e-6)
    _close_scaled(shift_grads[100.0], shift_grads[0.0], rtol=1e-5)


def test_concordance_and_kaplan_meier_by_hand():
    g = _run("rank_survival")
    for name, value in g["c_index"].items():
        assert float(value) == pytest.approx(g["c_index_loop"][name], abs=1e-6), name
    assert g["c_index"]["true_beta"] > 0.7
    km = g["fixed_results"]["km"]
    _close(km["survival"], g["km_loop"], rtol=1e-12, atol=0)
    _close(g["deaths_bincount"], g["km_deaths"], rtol=0, atol=0)
    assert float(g["km_at_risk"][0]) == g["N_SUBJECTS"]
    survival = km["survival"].numpy()
    assert (np.diff(survival) <= 0).all() and (np.diff(km["nelson_aalen"].numpy()) >= 0).all()
    # the step function: 1 before the first time, the curve's value at and after each time
    at, times = km["at"].numpy(), km["times"].numpy()
    for query, value in zip(g["km_queries"].tolist(), at):
        before = times <= query
        assert value == (survival[before][-1] if before.any() else 1.0)
    # Breslow's baseline and the subjects' curves S(t | x) = exp(-H0(t) exp(x beta))
    assert (np.diff(g["baseline_hazard"].numpy()) >= 0).all()
    curves = g["subject_curves"].numpy()
    assert ((curves > 0) & (curves <= 1)).all() and (np.diff(curves, axis=1) <= 0).all()


def test_discrete_time_survival_losses():
    g = _run("rank_survival")
    r = g["fixed_results"]
    losses, grads = r["discrete"], r["discrete_grads"]
    _close(losses["logistic_hazard_by_hand"], losses["logistic_hazard"], rtol=1e-12, atol=0)
    _close(grads["logistic_hazard_by_hand"], grads["logistic_hazard"], rtol=1e-10, atol=1e-15)
    assert g["gradcheck_discrete"] == dict.fromkeys(("logistic_hazard", "pmf", "deephit_rank"),
                                                    True)
    # S = cumprod(1 - h) = exp(cumsum(log(1 - h))); the PMF's survival ends at zero
    _close(g["surv_hazard"], g["surv_hazard_log"], rtol=1e-12, atol=1e-15)
    assert np.abs(r["surv_pmf"].numpy()[:, -1]).max() < 1e-12
    # DeepHit's comparable pairs by broadcasting equal pycox's double loop
    idx, events = g["idx_durations"].tolist(), g["events"].tolist()
    expected = sum(1 for i, j in itertools.product(range(len(idx)), repeat=2)
                   if events[i] == 1 and (idx[i] < idx[j] or (idx[i] == idx[j]
                                                              and events[j] == 0)))
    assert float(r["rank_mat_sum"]) == expected
    assert min(idx) >= 0 and max(idx) == g["N_BINS"] - 1
    brier = r["brier"].numpy()
    assert ((brier >= 0) & (brier <= 1)).all() and 0 < float(r["ibs"]) < 0.5


def test_survival_nets_learn():
    g = _run("rank_survival")
    losses = g["surv_losses"]
    assert len(losses) == 40
    assert np.mean(losses[-6:]) < np.mean(losses[:6]) - 0.2
    assert g["c_after"] > g["c_before"] + 0.1 and g["c_after"] > 0.7
    hazard_losses = g["hazard_losses"]
    assert hazard_losses[-1] < 0.7 * hazard_losses[0]
    assert g["c_hazard"] > 0.7
    assert g["ibs_hazard"] < g["ibs_km"]  # the net beats one curve for everyone


def test_rank_survival_fixed_results_match_torch():
    g, t = _run("rank_survival"), _run_torch("rank_survival")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    # allRank's discounts are float32 (``pos_idxs.float()``): these carry float32 rounding
    # (torch's float32 log2 and NumPy's differ by an ulp on some integers)
    for group in ("rank_losses", "rank_grads"):
        ours[group], theirs[group] = dict(ours[group]), dict(theirs[group])
        for name in ("lambdarank", "ndcgloss2_at5", "approxndcg"):
            _close_scaled(ours[group].pop(name), theirs[group].pop(name), rtol=1e-6)
    _close(ours.pop("ndcg"), theirs.pop("ndcg"), rtol=0, atol=1e-7)
    _close_scaled(ours.pop("shift_grad"), theirs.pop("shift_grad"), rtol=1e-5)  # float32
    _close_nested(ours, theirs, rtol=1e-10, atol=1e-13)


def test_rank_survival_first_losses_match_torch():
    g, t = _run("rank_survival"), _run_torch("rank_survival")
    for name in g["rank_training"]:
        _close(g["rank_training"][name]["losses"][:6], t["rank_training"][name]["losses"][:6],
               rtol=1e-5, atol=1e-7)
    _close(g["surv_losses"][:6], t["surv_losses"][:6], rtol=1e-5, atol=0)
    _close(g["hazard_losses"][:6], t["hazard_losses"][:6], rtol=1e-5, atol=0)
    assert g["c_before"] == pytest.approx(t["c_before"], abs=1e-6)
    assert g["slate_lengths"].tolist() == t["slate_lengths"].tolist()


# ----------------------------------------------------------------------------------- HMM


def test_hmm_forward_backward_and_brute_force():
    g = _run("hmm_softsort")
    loglik = g["loglik"].detach().numpy()
    # logsumexp(alpha_t + beta_t) is log p(x) at every step, padded steps included
    _close(g["per_step_loglik"], np.repeat(loglik[:, None], g["T_MAX"], 1), rtol=1e-12, atol=0)
    # the gradient of log p(x) is the posterior over states (emission scores) and the
    # expected transition counts (log A)
    _close(g["emission_grad"], g["gamma"], rtol=1e-10, atol=1e-13)
    _close(g["transition_grad"], g["fixed_results"]["xi_sum"], rtol=1e-10, atol=1e-12)
    gamma, valid = g["gamma"].numpy(), g["valid"].numpy()
    _close(gamma.sum(-1), valid.astype(np.float64), rtol=0, atol=1e-12)
    # brute force over 3^6 paths: the forward algorithm and Viterbi
    _close(g["fw_short"], [float(g["bf_loglik"])], rtol=1e-12, atol=0)
    _close(g["vit_short_score"], [float(g["bf_best"])], rtol=1e-12, atol=0)
    assert g["vit_short_path"][0].tolist() == g["bf_path"].tolist()
    assert g["gradcheck_hmm"]
    # the module's log-likelihood is the same forward algorithm
    _close(g["hmm_loglik"].detach(), loglik, rtol=1e-12, atol=0)


def test_hmm_viterbi_baum_welch_and_training():
    g = _run("hmm_softsort")
    # the gradient of the max-sum score is the one-hot Viterbi path
    _close(g["vit_grad"], g["vit_one_hot"], rtol=0, atol=0)
    path, valid = g["fixed_results"]["viterbi_path"], g["valid"]
    assert (path[valid] >= 0).all() and (path[~valid] == -1).all()
    assert (g["fixed_results"]["viterbi_score"] <= g["loglik"].detach() + 1e-12).all()
    # Baum-Welch never lowers the likelihood; its counts by index_add_ and by one_hot agree
    em = np.array(g["em_logliks"])
    assert (np.diff(em) > -1e-9).all() and em[-1] > em[0] + 50
    _close(g["counts"], g["counts_one_hot"], rtol=1e-12, atol=1e-12)
    A = g["em_params"][1].exp().numpy()
    _close(A.sum(1), np.ones(3), rtol=0, atol=1e-12)
    assert g["accuracy_true"] > 0.75 and g["accuracy_em"] > g["accuracy_initial"]
    losses = g["hmm_losses"]
    assert len(losses) == 30 and losses[-1] < losses[0] - 0.05


# --------------------------------------------------------------------------- soft sorting


def test_neural_sort_and_soft_rank_tend_to_the_hard_sort():
    g = _run("hmm_softsort")
    P = g["fixed_results"]["neural_sort"].numpy()
    _close(P.sum(-1), np.ones((3, 6)), rtol=0, atol=1e-12)  # row-stochastic
    _close(g["P_cold"], g["P_true"], rtol=0, atol=1e-12)
    _close(g["ranks_cold"], g["ranks_hard"], rtol=0, atol=1e-9)
    # soft ranks are a permutation of 1..n in sum; the soft sort is nearly descending
    _close(g["fixed_results"]["soft_rank"].numpy().sum(-1), np.full(3, 21.0), rtol=1e-12)
    assert (np.diff(g["fixed_results"]["soft_sorted"].numpy(), axis=-1) < 0.2).all()
    # Sinkhorn scaling makes it doubly stochastic; cold NeuralNDCG is the hard NDCG
    _close(g["row_sums"], np.ones((3, 6)), rtol=0, atol=1e-6)
    _close(g["col_sums"], np.ones((3, 6)), rtol=0, atol=1e-6)
    _close(g["ndcg_cold"], g["ndcg_hard"], rtol=1e-9, atol=1e-12)
    assert g["gradcheck_sort"] == dict.fromkeys(("neural_sort", "soft_rank", "neural_ndcg"), True)
    losses = g["spearman_losses"]
    assert losses[-1] < 0.3 * losses[0]
    assert g["spearman_before"] < 0 < 0.8 < g["spearman_after"]


def test_hmm_softsort_fixed_results_match_torch():
    g, t = _run("hmm_softsort"), _run_torch("hmm_softsort")
    _close_nested(g["fixed_results"], t["fixed_results"], rtol=1e-10, atol=1e-13)


def test_hmm_softsort_first_losses_match_torch():
    g, t = _run("hmm_softsort"), _run_torch("hmm_softsort")
    _close(g["hmm_losses"][:10], t["hmm_losses"][:10], rtol=1e-5, atol=0)
    _close(g["spearman_losses"][:10], t["spearman_losses"][:10], rtol=1e-5, atol=0)
    assert g["x_seq"].tolist() == t["x_seq"].tolist()
    assert g["accuracy_em"] == pytest.approx(t["accuracy_em"], abs=1e-12)
