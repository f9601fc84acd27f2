"""Scripts written for these tests in the way common PyTorch code of two kinds is written (set
Q32: SimCLR contrastive self-supervised learning as sthalles/SimCLR and Spijkervet/SimCLR write
it, and a Bayes-by-Backprop network as Blundell et al.-style blog code writes it), run on
jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that the NT-Xent loss fell under LARS and cosine annealing and that a
linear probe and a kNN monitor on the frozen features classify the textures; that the ELBO and
its likelihood term fell, the sampled ensemble classifies, is less sure where it errs and knows
less far from the data; and, where torch is installed, that the fixed-weight parts (augmented
views from torch's random numbers, the three NT-Xent formulations, gradients, LARS steps, the
seeded ELBO, mixture-prior densities, closed-form and Monte-Carlo KL, Adam and SGD steps) and
the first training losses equal the same script's with ``import torch``.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

# ------------------------------------------------------------------- SimCLR, NT-Xent, LARS


def test_simclr_learns_contrastive_features():
    g = _run("simclr_contrastive")
    torch = g["torch"]
    per_epoch = len(g["train_loader"])
    assert per_epoch == 384 // 32  # drop_last
    losses, top1 = g["losses"], g["top1_history"]
    assert len(losses) == len(top1) == g["n_iter"] == g["epochs"] * per_epoch
    assert np.isfinite(losses).all()
    # 2B - 1 = 63 candidates: chance is log(63); the loss falls well below where it starts
    assert losses[0] < math.log(2 * 32 - 1)
    first, last = np.mean(losses[:per_epoch]), np.mean(losses[-per_epoch:])
    assert last < first - 0.6, (first, last)
    assert np.mean(top1[-per_epoch:]) > np.mean(top1[:per_epoch]) + 5
    # CosineAnnealingLR, one step per iteration down to eta_min = 0
    steps = np.arange(len(losses))
    _close(g["lrs"], 0.5 * (1 + np.cos(np.pi * steps / len(losses))), rtol=1e-9, atol=1e-12)
    # LARS kept a momentum buffer for each parameter, the filters are in the saved groups
    optimizer = g["optimizer"]
    assert all("mu" in optimizer.state[p] for p in g["model"].parameters())
    group = g["checkpoint"]["optimizer"]["param_groups"][0]
    assert group["weight_decay_filter"] is g["exclude_bias_and_norm"]
    assert group["eta"] == 0.05 and group["initial_lr"] == 1.0 and group["lr"] < 1e-12
    assert g["checkpoint"]["epoch"] == g["epochs"]
    # the frozen backbone's features: a linear probe and the kNN monitor classify the textures
    assert g["probe_top1"] >= 95 and g["probe_top2"] >= g["probe_top1"]
    assert g["knn_accuracy"] >= 90
    probe_losses = g["probe_losses"]
    assert np.mean(probe_losses[-5:]) < 0.5 * np.mean(probe_losses[:5])
    probe = g["probe"]
    assert all(not p.requires_grad for p in probe.features.parameters())
    assert probe.fc.weight.requires_grad and not probe.training
    assert isinstance(g["encoder"].fc, torch.nn.Identity)


def test_simclr_losses_and_fixed_parts_agree():
    g = _run("simclr_contrastive")
    r = g["fixed_results"]
    # sthalles' info_nce_loss, Spijkervet's NT_Xent and the masked_fill form: one loss
    assert r["loss_spijkervet"] == pytest.approx(r["loss"], rel=1e-5)
    assert r["loss_masked"] == pytest.approx(r["loss"], rel=1e-5)
    logits = r["logits"]
    assert tuple(logits.shape) == (16, 15)
    # column 0 holds the positive: 1/T times the cosine of the two views' projections
    z = r["z"].numpy()
    z = z / np.linalg.norm(z, axis=1, keepdims=True)
    positives = np.concatenate([(z[:8] * z[8:]).sum(1), (z[8:] * z[:8]).sum(1)]) / 0.5
    _close(logits[:, 0], positives, rtol=1e-5, atol=1e-6)
    assert 0 <= r["top1"] <= r["top5"] <= 100
    views = r["views"]
    assert tuple(views.shape) == (2, 8, 3, 16, 16) and not np.allclose(views[0], views[1])
    # every row of the kNN ranking is a permutation of the classes, led by the best score
    labels, scores = r["knn_labels"], r["knn_scores"]
    assert sorted(labels[0].tolist()) == [0, 1, 2, 3]
    _close(scores.max(1).values, scores.gather(1, labels[:, :1]).squeeze(1), rtol=0)


def test_simclr_fixed_weights_match_torch():
    g, t = _run("simclr_contrastive"), _run_torch("simclr_contrastive")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.keys() == theirs.keys()
    for key in ("loss", "loss_spijkervet", "loss_masked"):
        assert ours.pop(key) == pytest.approx(theirs.pop(key), rel=1e-5)
    for key in ("top1", "top5"):
        assert ours.pop(key) == theirs.pop(key)
    assert ours.pop("schedule") == pytest.approx(theirs.pop("schedule"), rel=1e-12)
    # (zero scores tie: only the first-ranked label is compared)
    assert ours.pop("knn_labels")[:, 0].tolist() == theirs.pop("knn_labels")[:, 0].tolist()
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)


def test_simclr_first_losses_match_torch():
    g, t = _run("simclr_contrastive"), _run_torch("simclr_contrastive")
    # the same shuffles and augmentations (torch's random numbers): the same first steps
    _close(g["losses"][:6], t["losses"][:6], rtol=1e-5, atol=0)
    assert g["top1_history"][:3] == t["top1_history"][:3]
    assert g["lrs"] == pytest.approx(t["lrs"], rel=1e-12)


# --------------------------------------------------------------------- Bayes by Backprop


def test_bayes_by_backprop_trains_and_knows_its_uncertainty():
    g = _run("bayes_by_backprop")
    m = g["NUM_BATCHES"]
    assert m == 6
    # Blundell's minibatch weights: 2^(M-i) / (2^M - 1), halving, summing to one
    weights = g["kl_weights"]
    assert weights[0] == pytest.approx(32 / 63) and weights[-1] == pytest.approx(1 / 63)
    assert sum(weights) == pytest.approx(1.0) and all(np.diff(weights) < 0)
    losses, nlls = np.array(g["losses"]), np.array(g["nlls"])
    assert len(losses) == g["EPOCHS"] * m and np.isfinite(losses).all()
    # an epoch's losses sum to the whole complexity cost plus the data's NLL: both fall
    assert losses[-m:].sum() < 0.9 * losses[:m].sum(), (losses[:m].sum(), losses[-m:].sum())
    assert nlls[-m:].sum() < 0.3 * nlls[:m].sum()
    # the posterior widened from its initial sigma (rho in [-5, -4]: about 0.011)
    assert g["sigmas"].mean().item() > 0.015
    # accuracies: each sampled network, the ensembles and the mean weights
    assert len(g["per_sample_accuracy"]) == 11 and min(g["per_sample_accuracy"]) > 0.8
    assert g["ensemble_test_accuracy"] > 0.85 and g["ensemble_accuracy"] > 0.85
    assert g["mean_weight_accuracy"] > 0.85 and g["lr_accuracy"] > 0.85
    # the predictive distribution: probabilities, entropy, its split, calibration
    mean_probs, entropy = g["mean_probs"], g["entropy"]
    _close(mean_probs.sum(1), np.ones(300), rtol=1e-5)
    assert (g["var_probs"] >= 0).all().item()
    assert 0 <= entropy.min().item() and entropy.max().item() <= math.log(3) + 1e-5
    _close(g["categorical_entropy"], entropy, rtol=1e-4, atol=1e-5)
    assert (g["mutual_info"] > -1e-5).all().item()
    assert g["entropy_wrong"] > 2 * g["entropy_correct"]
    assert g["far_mutual_info"].mean().item() > 2 * g["mutual_info"].mean().item()
    assert g["ece"] < 0.1 and g["confidence_histogram"].sum().item() == 300
    assert (g["logits_entropy"] <= math.log(3) + 1e-5).all().item()
    # the local-reparameterization network under SGD
    lr_losses = g["lr_losses"]
    assert np.mean(lr_losses[-m:]) < 0.8 * np.mean(lr_losses[:m])


def test_bayes_by_backprop_fixed_terms_agree():
    g = _run("bayes_by_backprop")
    r = g["fixed_results"]
    # the ELBO is its parts; the three mixture densities are one; so are the posterior's
    elbo = r["kl_weights"][0] * (r["log_variational_posterior"] - r["log_prior"]) + r["nll"]
    assert r["loss"] == pytest.approx(elbo, rel=1e-5)
    for key in ("mixture_log_prob_stable", "mixture_same_family_log_prob"):
        assert r[key] == pytest.approx(r["mixture_log_prob"], rel=1e-5)
    for key in ("normal_log_prob", "independent_log_prob"):
        assert r[key] == pytest.approx(r["posterior_log_prob"], rel=1e-5)
    # rsample after the same seed draws the same epsilons as Gaussian.sample
    _close(r["rsample"], r["sampled_weight"], rtol=1e-6, atol=1e-7)
    # Monte Carlo over 2000 draws estimates the closed-form KL
    assert r["kl_monte_carlo"] == pytest.approx(r["kl_closed"], rel=1e-2)
    assert r["lr_kl"] > 0


def test_bayes_by_backprop_fixed_weights_match_torch():
    g, t = _run("bayes_by_backprop"), _run_torch("bayes_by_backprop")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.keys() == theirs.keys()
    assert ours.pop("kl_weights") == theirs.pop("kl_weights")
    mine, other = ours.pop("grads"), theirs.pop("grads")
    assert list(mine) == list(other)
    for name in other:
        # the narrow prior component (sigma = e^-6) makes the mu gradients sums of terms of
        # up to ~1e2 that cancel: an absolute tolerance on the tensor's scale
        scale = other[name].abs().max().item()
        _close(mine[name], other[name], rtol=1e-5, atol=1e-6 * max(scale, 1.0))
    for key in [k for k in theirs if isinstance(theirs[k], float)]:
        assert ours.pop(key) == pytest.approx(theirs.pop(key), rel=1e-5), key
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)


def test_bayes_by_backprop_first_losses_match_torch():
    g, t = _run("bayes_by_backprop"), _run_torch("bayes_by_backprop")
    # the same shuffles and the same epsilons: the same first two epochs
    _close(g["losses"][:12], t["losses"][:12], rtol=1e-5, atol=0)
    _close(g["nlls"][:12], t["nlls"][:12], rtol=1e-5, atol=0)
    _close(g["lr_losses"][:12], t["lr_losses"][:12], rtol=1e-5, atol=0)
