"""Scripts written for these tests in the way common PyTorch code of two kinds is written (set
W34: GraphSAGE node classification and link prediction as PyG-free torch code writes it, over an
``edge_index`` with scatter and sparse aggregation and neighbour sampling, and a small WaveNet
on mu-law quantised waves with fast queue-cached generation), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that the scatter (``index_add_``, ``scatter_add_``, ``scatter_reduce``)
and sparse (``torch.sparse.mm``) aggregations agree in value and gradient, that the sampled
subgraphs are relabelled consistently, that GraphSAGE classifies the blocks and predicts held-out
links well above chance, that the hand-made AUCs agree; that mu-law's round trip stays within
its bound, that the WaveNet's measured receptive field is the computed one, that queue-cached
generation equals the full forward, that the WaveNet learns the waves; and, where torch is
installed, that the fixed-weight parts and the first training losses equal the same script's
with ``import torch``.
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


# ------------------------------------------------------------------------------ GraphSAGE


def test_graphsage_scatter_and_sparse_aggregations_agree():
    g = _run("graphsage_linkpred")
    assert g["csr_ok"]
    outputs, grads = g["agg_outputs"], g["agg_grads"]
    # the sparse matrix product is the scatter sum/mean, in value and in gradient (float64)
    for name in ("sum", "mean"):
        _close(outputs["sparse_" + name], outputs[name], rtol=1e-12, atol=1e-12)
        _close(grads["sparse_" + name], grads[name], rtol=1e-12, atol=1e-12)
    # scatter_reduce's mean is scatter_add_ / bincount degree; amax is the per-node loop's max
    _close(outputs["mean_reduce"], outputs["mean"], rtol=1e-12, atol=1e-12)
    _close(grads["mean_reduce"], grads["mean"], rtol=1e-12, atol=1e-12)
    _close(outputs["max"], g["max_loop"], rtol=0, atol=0)
    # the gradient of the max goes to one neighbour per (node, channel): sum of grads equals
    # the sum of the upstream over nodes that have a neighbour
    has_neighbour = g["adjacency"].any(1).numpy()
    _close(grads["max"].sum(), g["agg_upstream"].numpy()[has_neighbour].sum(), rtol=1e-12)
    assert g["gradcheck_results"] == dict.fromkeys(
        ("sum", "mean", "max", "mean_reduce", "sparse_mean"), True)
    # a two-layer GraphSAGE through either path: same logits, same parameter gradients
    _close(g["path_logits"][True], g["path_logits"][False], rtol=1e-5, atol=1e-6)
    sparse_grads, scatter_grads = g["path_grads"][True], g["path_grads"][False]
    assert sparse_grads.keys() == scatter_grads.keys()
    for name in scatter_grads:
        _close_scaled(sparse_grads[name], scatter_grads[name])
    normalized = g["fixed_results"]["normalized_max_conv"].numpy()
    _close(np.linalg.norm(normalized, axis=1), np.ones(g["N"]), rtol=1e-6)


def test_graphsage_sampled_subgraphs():
    g = _run("graphsage_linkpred")
    assert g["duplicates_ok"]
    # the batch's 20 nodes sampled 5 neighbours each (the second layer's edges), and their
    # union sampled 5 each (the first layer's); duplicates merged, their counts kept
    assert g["sample_counts"] == g["sampled"] and g["sample_counts"][1] == 20 * 5
    assert g["sample_counts"][0] % 5 == 0 and g["sample_counts"][0] > 100
    assert g["merged_duplicates"] > 0
    assert sum(a.shape[1] for a in g["adjs"]) < sum(g["sample_counts"])
    assert g["batch_relabelled"] and g["edges_are_real"]
    sizes = g["subgraph_sizes"]
    assert len(sizes) == g["epochs"] * math.ceil(g["N"] // 2 / g["batch_size"])
    assert all(g["batch_size"] < s <= g["N"] for s in sizes)


def test_graphsage_node_classification_learns():
    g = _run("graphsage_linkpred")
    losses = g["node_losses"]
    per_epoch = len(losses) // g["epochs"]
    assert losses[0] > 0.8 * math.log(4)
    assert np.mean(losses[-per_epoch:]) < 0.2 * np.mean(losses[:per_epoch])
    # four blocks: chance is 0.25; the neighbours' mean beats the features alone
    assert g["node_accuracy"] >= 0.9
    assert g["node_accuracy"] > g["no_graph_accuracy"] + 0.1


def test_graphsage_link_prediction_and_auc():
    g = _run("graphsage_linkpred")
    losses = g["link_losses"]
    # BCE on random negatives (a few of them real edges) has a high floor; log 2 is chance
    assert np.mean(losses[-10:]) < 0.7 * losses[0] and np.mean(losses[-10:]) < 0.8 * math.log(2)
    # held-out edges against random non-edges: chance is 0.5
    assert g["link_auc"] > 0.75
    # sorted cumulative rates, the Mann-Whitney ranks and all pairs give the same area
    assert g["link_rank_auc"] == pytest.approx(g["link_auc"], abs=1e-12)
    assert g["link_pair_auc"] == pytest.approx(g["link_auc"], abs=1e-12)
    assert g["fixed_results"]["auc_fixed"] == pytest.approx(7.5 / 9, abs=1e-12)
    # no held-out edge stayed in the training graph
    train = g["train_edge_index"].numpy()
    test = g["test_pos"].numpy()
    train_set = set(zip(train[0].tolist(), train[1].tolist()))
    assert not train_set & set(zip(test[0].tolist(), test[1].tolist()))
    assert train.shape[1] + 2 * test.shape[1] == g["num_edges"]


def test_graphsage_fixed_results_match_torch():
    g, t = _run("graphsage_linkpred"), _run_torch("graphsage_linkpred")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    for key in ("aggregate", "aggregate_grads", "auc_fixed"):  # float64
        _close_nested(ours.pop(key), theirs.pop(key), rtol=1e-12, atol=1e-12)
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)
    assert np.array_equal(g["edge_index"].numpy(), t["edge_index"].numpy())
    assert g["sample_counts"] == t["sample_counts"]


def test_graphsage_first_losses_match_torch():
    g, t = _run("graphsage_linkpred"), _run_torch("graphsage_linkpred")
    assert g["subgraph_sizes"] == t["subgraph_sizes"]
    _close(g["node_losses"][:10], t["node_losses"][:10], rtol=1e-5, atol=0)
    _close(g["link_losses"][:10], t["link_losses"][:10], rtol=1e-5, atol=0)


# -------------------------------------------------------------------------------- WaveNet


def test_wavenet_mu_law_round_trip():
    g = _run("wavenet_mulaw")
    ramp = g["fixed_results"]["mu_law_ramp"].numpy()
    assert ramp.dtype == np.int64 and ramp[0] == 0 and ramp[-1] == 255 and ramp[50] == 128
    assert (np.diff(ramp) >= 0).all()
    # companding: fine steps near zero, coarse near +-1
    assert ramp[51] - ramp[50] > ramp[100] - ramp[99]
    # |x - decode(encode(x))| <= (1 + mu |x|) (exp(log1p(mu) / mu) - 1) / mu, tight
    assert 0.99 < g["roundtrip_ratio"] <= 1 + 1e-9
    assert g["codes_fixed"]
    decoded = g["fixed_results"]["mu_law_decoded"].numpy()
    assert np.abs(decoded - g["ramp"].numpy()).max() < 0.025


def test_wavenet_receptive_field_and_gradcheck():
    g = _run("wavenet_mulaw")
    model = g["model"]
    assert model.receptive_field == 64 == g["measured_receptive_field"]
    assert g["support_contiguous"]
    assert g["gradcheck_block"]
    assert g["n_params"] == sum(p.numel() for p in model.parameters())


def test_wavenet_fast_generation_equals_full_forward():
    g = _run("wavenet_mulaw")
    # teacher-forced on fixed weights: both caches give the full forward's logits at each step
    fast = g["fast_logits"]
    _close(fast["roll"], fast["deque"], rtol=1e-6, atol=1e-6)
    _close_scaled(fast["deque"], g["full_on_prefix"])
    # sampling from the trained model: the cache's logits at every step, the last included
    gen, full = g["gen_logits"].numpy(), g["full_logits"].numpy()
    assert gen.shape == full.shape == (3, 256, 96)
    _close_scaled(gen, full)
    _close_scaled(gen[:, :, -1], full[:, :, -1])
    assert np.array_equal(g["gen_inputs"].numpy(), g["gen_inputs_roll"].numpy())
    wave = g["generated_wave"].numpy()
    assert wave.shape == (3, 96) and np.abs(wave).max() <= 1.0


def test_wavenet_learns_the_waves():
    g = _run("wavenet_mulaw")
    losses = g["losses"]
    assert len(losses) == g["max_iters"] == 150
    assert losses[0] > 0.95 * math.log(256)
    assert np.mean(losses[-10:]) < 0.6 * losses[0]
    assert g["val_loss"] < 0.5 * math.log(256)
    # predictions land a few quantisation steps from the truth; samples move smoothly
    assert g["val_step_error"] < 10
    assert g["generated_step"] < 40  # uniformly random codes move ~85 a step


def test_wavenet_fixed_results_match_torch():
    g, t = _run("wavenet_mulaw"), _run_torch("wavenet_mulaw")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert np.array_equal(ours.pop("mu_law_ramp").numpy(), theirs.pop("mu_law_ramp").numpy())
    ours["grads"], theirs["grads"] = dict(ours["grads"]), dict(theirs["grads"])
    for name in list(theirs["grads"]):
        _close_scaled(ours["grads"].pop(name), theirs["grads"].pop(name))
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)
    assert g["measured_receptive_field"] == t["measured_receptive_field"]


def test_wavenet_first_losses_match_torch():
    g, t = _run("wavenet_mulaw"), _run_torch("wavenet_mulaw")
    _close(g["losses"][:10], t["losses"][:10], rtol=1e-5, atol=0)
    _close(g["grad_norms"][:10], t["grad_norms"][:10], rtol=1e-5, atol=0)
