"""Scripts written for these tests in the way common PyTorch code of two kinds is written (set
X34: a small multi-scale Glow as glow-pytorch style implementations write it, and neural
collaborative filtering, BPR matrix factorisation with sparse and dense embeddings and NeuMF
with an EmbeddingBag history tower, as recommender code writes it), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that the flow inverts (x -> z -> x), that each layer's and the whole
flow's log-determinant equals the slogdet of its autograd Jacobian in float64, that ActNorm's
data-dependent initialisation whitens its first batch, that bits per dimension fall and colder
samples are likelier; that the recommenders' hit rate at 10 is well above chance and the sparse
and dense factorisations reach a similar quality, that the top-k and rank-based metrics equal a
brute-force NumPy computation; and, where torch is installed, that the fixed-weight parts and
the first training losses equal the same script's with ``import torch``.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

# ------------------------------------------------------------------------------ Glow


def test_glow_inverts_and_keeps_shapes():
    g = _run("glow_flow")
    assert g["squeeze_roundtrip"]
    assert tuple(g["fixed_results"]["squeeze"].shape) == (2, 12, 2, 2)
    # x -> z -> x on the held-out digits after training (float32), and per layer in float64
    assert g["reconstruction_error"] < 1e-5
    for name, error in g["reconstruction64"].items():
        assert error < 1e-12, name
    assert g["z_out_shapes"] == g["z_shapes"] == [(2, 4, 4), (8, 2, 2)]
    # LU: torch.linalg.lu agrees with lu_factor + lu_unpack, and P L (U + diag) starts at q
    assert g["lu_agrees"]
    assert g["lu_weight_error"] < 1e-6
    factors = g["fixed_results"]["lu_factors"]
    _close(np.tril(factors["L"].numpy(), -1) + np.eye(6), factors["L"], rtol=0, atol=0)
    assert set(np.abs(factors["sign"].numpy()).tolist()) == {1.0}


def test_glow_actnorm_data_dependent_init():
    g = _run("glow_flow")
    assert g["actnorm_initialized"] == [1] * 6  # 2 blocks x 3 steps
    out = g["first_actnorm_out"].numpy()  # the first batch through the first ActNorm
    per_channel = out.transpose(1, 0, 2, 3).reshape(out.shape[1], -1)
    _close(per_channel.mean(1), np.zeros(4), rtol=0, atol=1e-5)
    _close(per_channel.std(1, ddof=1), np.ones(4), rtol=0, atol=1e-4)


def test_glow_logdets_equal_jacobian_slogdets():
    g = _run("glow_flow")
    logdets, jacobian = g["logdets"], g["jacobian_logdets"]
    assert logdets.keys() == jacobian.keys() == {
        "actnorm", "invconv", "invconv_lu", "coupling", "flow_step", "glow"}
    for name in logdets:
        assert abs(logdets[name]) > 1e-3, name  # not trivially zero
        assert logdets[name] == pytest.approx(jacobian[name], rel=1e-10, abs=1e-12), name
    assert g["gradcheck_results"] == {"lu_conv": True, "full_conv": True, "coupling": True}


def test_glow_bits_per_dim_fall():
    g = _run("glow_flow")
    bpds = g["bpds"]
    assert len(bpds) == g["n_iter"] == 150
    assert bpds[0] > 4.0
    assert np.mean(bpds[-10:]) < 0.75 * bpds[0]
    assert g["test_bpd"] < 0.75 * bpds[0]
    # the prior term improves; bpd = -(log p + logdet) / (D log 2) + log2(n_bins)
    assert np.mean(g["log_p_bpds"][-10:]) > g["log_p_bpds"][0] + 0.3
    for bpd, log_p, logdet in zip(bpds[:5], g["log_p_bpds"], g["logdet_bpds"]):
        assert bpd == pytest.approx(math.log2(17) - log_p - logdet, rel=1e-5)
    samples = g["samples"].numpy()
    assert samples.shape == (16, 1, 8, 8) and np.isfinite(samples).all()
    assert g["cold_bpd"] < g["sample_bpd"]


def test_glow_fixed_results_match_torch():
    g, t = _run("glow_flow"), _run_torch("glow_flow")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    _close_nested(ours.pop("logdets64"), theirs.pop("logdets64"), rtol=1e-10, atol=1e-12)
    assert len(ours["lu_grads"]) == 6 and len(ours["full_grads"]) == 5
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)
    assert g["jacobian_logdets"] == pytest.approx(t["jacobian_logdets"], rel=1e-10)


def test_glow_first_losses_match_torch():
    g, t = _run("glow_flow"), _run_torch("glow_flow")
    _close(g["bpds"][:30], t["bpds"][:30], rtol=1e-5, atol=0)
    _close(g["logdet_bpds"][:30], t["logdet_bpds"][:30], rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------ NCF


def _numpy_metrics(scores, seen, test_items, k=10):
    """Brute force: for each user, count the unseen items scored above the test item."""
    scores, seen, test_items = (np.asarray(a) for a in (scores, seen, test_items))
    hits, gains = [], []
    for u in range(scores.shape[0]):
        target = scores[u, test_items[u]]
        rank = sum(1 for j in range(scores.shape[1])
                   if not seen[u, j] and j != test_items[u] and scores[u, j] > target)
        hits.append(rank < k)
        gains.append(1 / math.log2(rank + 2) if rank < k else 0.0)
    return float(np.mean(hits)), float(np.mean(gains))


def test_ncf_data_and_collate():
    g = _run("ncf_recommender")
    seen = g["seen"].numpy()
    n_train = sum(len(items) for items in g["train_items"])
    assert seen.sum() == n_train == len(g["dataset"]) == len(g["train_codes"])
    test_items = g["test_items"].numpy()
    assert not seen[np.arange(300), test_items].any()  # the held-out item is not seen
    batch = g["first_batch"]
    assert g["negatives_unseen"]
    assert max(g["rejection_rounds"]) >= 1  # some negatives were redrawn
    # offsets start each user's bag; the bag leaves out the positive item
    offsets, history = batch["offsets"].numpy(), batch["history"].numpy()
    ends = list(offsets[1:]) + [len(history)]
    for u, pos, s, e in zip(batch["users"].tolist(), batch["positives"].tolist(), offsets, ends):
        expected = [j for j in g["train_items"][u].tolist() if j != pos]
        assert history[s:e].tolist() == expected
    assert g["bag_error"] < 1e-7


def test_ncf_metrics_equal_numpy_brute_force():
    g = _run("ncf_recommender")
    seen, test_items = g["seen"].numpy(), g["test_items"].numpy()
    for name, scores, metrics in (
            ("fixed", g["fixed_scores"], g["fixed_metrics"]),
            ("sparse", g["sparse_scores"], g["sparse_metrics"]),
            ("neumf", g["neumf_scores"], g["neumf_metrics"])):
        hr, ndcg = _numpy_metrics(scores.numpy(), seen, test_items)
        assert metrics["hr"] == pytest.approx(hr, abs=1e-7), name
        assert metrics["hr_from_ranks"] == pytest.approx(hr, abs=1e-7), name
        assert metrics["ndcg"] == pytest.approx(ndcg, rel=1e-5), name
        assert metrics["ndcg_topk"] == pytest.approx(ndcg, rel=1e-5), name


def test_ncf_models_beat_chance_and_sparse_matches_dense():
    g = _run("ncf_recommender")
    random_hr = g["random_hr"]
    assert 0.08 < random_hr < 0.1
    for name in ("sparse", "dense", "neumf"):
        losses, metrics = g[f"{name}_losses"], g[f"{name}_metrics"]
        assert losses[0] == pytest.approx(math.log(2), abs=0.01), name
        assert np.mean(losses[-5:]) < 0.35 * losses[0], name
        assert metrics["hr"] > 3.5 * random_hr, name
        assert metrics["hr"] > g["popularity_metrics"]["hr"] + 0.15, name
        assert metrics["ndcg"] > 0.15, name
    sparse, dense = g["sparse_metrics"], g["dense_metrics"]
    assert abs(sparse["hr"] - dense["hr"]) < 0.05
    assert abs(sparse["ndcg"] - dense["ndcg"]) < 0.04
    # the same start; after one step the two differ only by where eps enters (SparseAdam adds
    # it to sqrt(v) before the bias correction): Adam moves only the rows with a gradient too
    assert g["sparse_losses"][0] == pytest.approx(g["dense_losses"][0], rel=1e-6)
    assert g["sparse_losses"][1] == pytest.approx(g["dense_losses"][1], rel=1e-4)
    assert g["sparse_losses"][1] != g["dense_losses"][1]


def test_ncf_sparse_gradients_equal_dense():
    g = _run("ncf_recommender")
    assert g["sparse_grad_layout"] == (True, False)
    sparse, dense = g["mf_grads"]["sparse"], g["mf_grads"]["dense"]
    for name in sparse:
        _close(sparse[name].to_dense(), dense[name], rtol=1e-6, atol=1e-9)
    r = g["fixed_results"]
    assert r["mf_sparse_loss"] == pytest.approx(r["mf_dense_loss"], rel=1e-7)
    _close(r["mf_sparse_scores"], r["mf_dense_scores"], rtol=1e-6, atol=1e-8)
    # the coalesced rows are the batch's distinct items
    items = np.unique(np.concatenate([g["first_batch"]["positives"].numpy(),
                                      g["first_batch"]["negatives"].numpy()]))
    assert r["sparse_grad_indices"].numpy().tolist() == [items.tolist()]
    # NeuMF on all items equals NeuMF on (user, item) pairs
    full = g["neumf_full"].numpy()
    _close(g["neumf_pointwise"], full[np.arange(4), g["pointwise_items"].numpy()],
           rtol=1e-6, atol=1e-7)


def test_ncf_fixed_results_match_torch():
    g, t = _run("ncf_recommender"), _run_torch("ncf_recommender")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    _close_nested(ours.pop("collate"), theirs.pop("collate"), rtol=0, atol=0)
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)
    assert g["random_hr"] == pytest.approx(t["random_hr"], rel=1e-12)


def test_ncf_first_losses_match_torch():
    g, t = _run("ncf_recommender"), _run_torch("ncf_recommender")
    for name in ("sparse", "dense", "neumf"):
        _close(g[f"{name}_losses"][:20], t[f"{name}_losses"][:20], rtol=1e-5, atol=0)
    assert g["rejection_rounds"][:20] == t["rejection_rounds"][:20]
