"""Scripts written for these tests in the way common PyTorch code of one kind is written (set U35:
speech recognition with an RNN-Transducer written by hand, its loss by dynamic programming over
the (T, U + 1) lattice and a GRU/LSTM transducer with greedy decoding), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that the nested-loop and anti-diagonal alphas agree, that the loss
equals the backward (beta) recursion, a brute-force sum over every alignment and each
utterance's loss alone (padding does not leak), that autograd's gradient equals the analytic
alpha * beta gradient and the brute force's, that the occupancies count one blank per frame
and each label once, that the ``autograd.Function`` with the fused analytic backward passes
gradcheck; that the transducer learns to transcribe tone sequences, that batched greedy
decoding equals one-utterance decoding and that a greedy alignment scores no more than its
hypothesis; and, where torch is installed, that the fixed-weight parts and the first training
losses equal the same script's with ``import torch``.
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


def _valid(grid, T, U):
    """The (t < T_b, u <= U_b) part of each utterance's (T, U + 1, ...) grid."""
    grid = np.asarray(grid, dtype=np.float64)
    return [grid[b, :t, :u + 1] for b, (t, u) in enumerate(zip(T, U))]


# --------------------------------------------------------------------------- the lattice


def test_rnnt_loss_forms_agree():
    g = _run("rnnt_transducer")
    T, U = g["lattice_ilens"].tolist(), g["lattice_ylens"].tolist()
    # nested loops and anti-diagonals give the same alphas on every valid node
    for loop, diag in zip(_valid(g["alpha_loop"].detach(), T, U),
                          _valid(g["alpha_diag"].detach(), T, U)):
        _close(diag, loop, rtol=1e-12, atol=1e-12)
    cost = g["costs_diag"].detach()
    assert tuple(cost.shape) == (3,) and (cost.numpy() > 0).all()
    for other in ("costs_loop", "costs_beta", "brute_costs", "costs_analytic", "alone_costs",
                  "costs_fused"):
        _close(g[other].detach(), cost, rtol=1e-12, atol=0)
    # T - 1 blanks and U labels in any order
    assert g["n_alignments"] == [math.comb(t - 1 + u, u) for t, u in zip(T, U)] == [35, 10, 3]
    # the betas end at the final blank and are minus "infinity" past each utterance's end
    betas = g["beta_grid"].detach().numpy()
    blank_lp = g["log_probs64"].detach().numpy()[..., 0]
    for b, (t, u) in enumerate(zip(T, U)):
        assert betas[b, t - 1, u] == blank_lp[b, t - 1, u]
        assert (betas[b, t:] <= -1e29).all() and (betas[b, :, u + 1:] <= -1e29).all()


def test_rnnt_gradients_autograd_analytic_and_brute_force():
    g = _run("rnnt_transducer")
    T, U = g["lattice_ilens"].tolist(), g["lattice_ylens"].tolist()
    autograd_grad = g["autograd_lp_grad"].numpy()
    _close(g["grad_lp"], autograd_grad, rtol=1e-10, atol=1e-14)
    _close(g["loop_lp_grad"], autograd_grad, rtol=1e-10, atol=1e-14)
    for b, brute in enumerate(g["brute_grads"]):
        _close(autograd_grad[b, :T[b], :U[b] + 1], brute, rtol=1e-10, atol=1e-14)
        # nothing past an utterance's end gets a gradient
        assert not autograd_grad[b, T[b]:].any() and not autograd_grad[b, :, U[b] + 1:].any()
    # every path emits one blank per frame and each label once
    blank_per_frame = g["blank_per_frame"].numpy()
    label_counts = g["label_counts"].numpy()
    for b, (t, u) in enumerate(zip(T, U)):
        _close(blank_per_frame[b, :t], np.ones(t), rtol=1e-12, atol=1e-12)
        assert not blank_per_frame[b, t:].any()
        _close(label_counts[b, :u], np.ones(u), rtol=1e-12, atol=1e-12)
        assert not label_counts[b, u:].any()
    # the gradient through log_softmax sums to zero over the vocabulary
    _close(g["autograd_logit_grad"].sum(-1), np.zeros((3, 5, 4)), rtol=0, atol=1e-14)
    # the autograd.Function with the fused backward, under per-utterance weights
    _close(g["fused_logit_grad"], g["weighted_logit_grad"], rtol=1e-10, atol=1e-14)
    assert g["gradcheck_results"] == {"diagonal": True, "fused": True}


def test_rnnt_reductions_and_the_inf_convention():
    g = _run("rnnt_transducer")
    red = {name: value.numpy() for name, value in g["reductions32"].items()}
    assert red["none"].dtype == np.float32 and red["none"].shape == (3,)
    _close(red["none"], g["costs_diag"].detach(), rtol=1e-5)
    _close(red["sum"], red["none"].sum(), rtol=1e-6)
    _close(red["mean"], red["none"].mean(), rtol=1e-6)
    _close(red["mean_per_label"], (red["none"] / np.array([3, 2, 1])).mean(), rtol=1e-6)
    # logsumexp over nothing but -inf: -inf and a NaN gradient; over -1e30 a finite one (of
    # exp(x - result) = 1 each: log 3 is below the resolution of 1e30)
    assert g["inf_value"].detach().tolist() == [-math.inf, -math.inf]
    assert g["inf_grad_is_nan"]
    assert g["neg_grid"].grad.tolist() == [[1.0] * 3] * 2


# --------------------------------------------------------------------------- the model


def test_rnnt_model_shapes_and_losses_agree():
    g = _run("rnnt_transducer")
    r = g["fixed_results"]["model"]
    feats, feat_lengths, targets, target_lengths = g["fixed_batch"]
    B, U = targets.shape
    assert tuple(r["logits"].shape) == (B, int(feat_lengths.max()) // 3, U + 1, g["VOCAB"])
    # the loop and the Function cost what the training loss averages
    _close(r["costs_loop"], r["fused"], rtol=1e-5)
    _close(r["costs_loop"].mean(), r["loss"], rtol=1e-5)
    assert set(r["grads"]) == {name for name, _ in g["model"].named_parameters()}
    # untrained decoding hits the max-symbols cap, batched or one at a time alike
    assert g["untrained_hyps"] == g["untrained_single"]
    for hyp, length in zip(g["untrained_hyps"], (feat_lengths // 3).tolist()):
        assert len(hyp) <= 3 * length


def test_rnnt_transducer_learns_the_tones():
    g = _run("rnnt_transducer")
    losses = g["losses"]
    assert len(losses) == g["epochs"] * len(g["loader"]) == 48
    assert np.mean(losses[-6:]) < 0.1 * np.mean(losses[:6])
    assert g["test_ter"] < 0.25
    # batched greedy decoding equals one utterance at a time
    assert g["batch_hyps"] == g["test_hyps"]
    # a greedy alignment is one alignment of its hypothesis
    assert len(g["path_checks"]) >= 3
    for path_logprob, total in g["path_checks"]:
        assert path_logprob <= total + 1e-4
    # one symbol per frame at most
    for hyp, (feats, _) in zip(g["max_symbols_one"], g["test_set"]):
        assert len(hyp) <= len(feats) // 3
    assert g["lrs"] == pytest.approx([0.03, 0.03, 0.021, 0.021, 0.0147, 0.0147, 0.01029,
                                      0.01029])
    assert max(g["grad_norms"][:5]) > 2.0  # clipping was at work at the start


# --------------------------------------------------------------------------- vs torch


def test_rnnt_fixed_results_match_torch():
    g, t = _run("rnnt_transducer"), _run_torch("rnnt_transducer")
    ours, theirs = g["fixed_results"], t["fixed_results"]
    # float64 lattice: the DP sums a few dozen terms
    _close_nested(ours["lattice"], theirs["lattice"], rtol=1e-10, atol=1e-13)
    model, model_t = dict(ours["model"]), dict(theirs["model"])
    # float32 GRU/LSTM gradients: small entries carry the large ones' rounding
    for name, grad in model_t.pop("grads").items():
        _close_scaled(model["grads"][name], grad)
    model.pop("grads")
    _close_scaled(model.pop("logits"), model_t.pop("logits"))
    _close_nested(model, model_t, rtol=1e-5, atol=1e-6)
    assert g["untrained_hyps"] == t["untrained_hyps"]
    assert g["n_alignments"] == t["n_alignments"]


def test_rnnt_first_losses_match_torch():
    g, t = _run("rnnt_transducer"), _run_torch("rnnt_transducer")
    _close(g["losses"][:8], t["losses"][:8], rtol=1e-5, atol=0)
    assert g["lrs"] == pytest.approx(t["lrs"], rel=1e-12)
