"""Scripts written for these tests in the way common PyTorch code of two kinds is written (set
P35: a tiny DLRM click model beside a factorization machine as facebookresearch/dlrm and
FM/DeepFM code write them, and graph classification with scatter pooling and message passing as
PyG-free GNN code writes it), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that ``nn.EmbeddingBag``'s bags (offsets, 2-D input, empty bags,
sum/mean/max, per-sample weights, padding) are what a loop computes, that ``sparse=True``
gradients are sparse, coalesce to the dense gradient and are stepped by ``SparseAdam`` on
their rows only, that DLRM's dot interaction is the lower triangle of the Gram matrix, that
the models learn to rank clicks (AUC by sorting agrees with scikit-learn's); that scatter
pooling equals per-graph loops, that the sparse-matrix and ``index_add_`` GCN propagations
agree in value and gradient, that the grouped edge softmax sums to one per node, that
``torch.unique`` relabelling round-trips and the GCN+GAT classifier learns; and, where torch is
installed, that the fixed-weight parts and the first training losses equal the same script's
with ``import torch``.
"""

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


TABLE = np.arange(30, dtype=np.float64).reshape(10, 3) / 10 - 1
BAGS = [[], [1, 2, 4], [5, 4], [3, 2, 9]]  # values [1, 2, 4, 5, 4, 3, 2, 9], offsets [0, 0, 3, 5]
ROWS_2D = [[1, 2, 4, 5], [4, 3, 2, 9]]


def _bags(reduce, bags, padding=None):
    out = []
    for bag in bags:
        bag = [i for i in bag if i != padding]
        out.append(reduce(TABLE[bag], axis=0) if bag else np.zeros(3))
    return np.stack(out)


# ------------------------------------------------------------------ DLRM, FM


def test_dlrm_embedding_bags_reduce_like_loops():
    g = _run("dlrm_fm_recommender")
    r = g["fixed_results"]
    _close(r["bag_sum"], _bags(np.sum, BAGS))
    _close(r["bag_mean"], _bags(np.mean, BAGS))
    _close(r["bag_max"], _bags(np.max, BAGS))  # an empty bag is zeros in every mode
    _close(r["bag_sum_2d"], _bags(np.sum, ROWS_2D))
    _close(r["bag_mean_2d"], _bags(np.mean, ROWS_2D))
    _close(r["bag_max_2d"], _bags(np.max, ROWS_2D))
    _close(r["bag_include_last"], _bags(np.sum, BAGS[1:]))
    # padding_idx is neither summed nor counted in the mean, nor a candidate for the max
    _close(r["bag_mean_padding"], _bags(np.mean, BAGS, padding=2))
    _close(r["bag_max_padding"], _bags(np.max, ROWS_2D, padding=4))
    assert g["weighted_matches_manual"]
    assert g["mean_weights_error"] is True
    assert g["max_sparse_error"] == "max mode does not support sparse weights"


def test_dlrm_sparse_gradients_and_sparse_adam():
    g = _run("dlrm_fm_recommender")
    r, info = g["fixed_results"], g["sparse_info"]
    assert info["is_sparse"] and not info["dense_is_sparse"] and info["layout"] == "sparse_coo"
    # one row per looked-up id before coalescing, one per distinct id after
    assert info["nnz"] == 8 and not info["is_coalesced"]
    assert info["coalesced_nnz"] == 6 and info["coalesced_rows"] == [1, 2, 3, 4, 5, 9]
    _close(r["sparse_grad_dense"], r["dense_grad"], rtol=1e-6, atol=1e-7)
    dense = r["dense_grad"].numpy()
    _close(r["sparse_grad_values"], dense[[1, 2, 3, 4, 5, 9]], rtol=1e-6, atol=1e-7)
    # a second backward (every id once per occurrence) accumulates and stays sparse
    assert info["accumulated_sparse"]
    occurrences = np.bincount([1, 2, 4, 5, 4, 3, 2, 9], minlength=10)[:, None]
    _close(r["sparse_grad_accumulated"], dense + occurrences, rtol=1e-6, atol=1e-6)
    # mean over the non-padding ids: the padding row gets no gradient entry
    assert info["mean_padding_rows"] == [3, 5]
    _close(r["sparse_grad_mean_padding"], np.ones((2, 3)))
    # SparseAdam updated only the rows that were looked up; Adam refuses sparse gradients
    assert g["changed_rows"] == [1, 2, 3, 4, 5, 9]
    assert g["sparse_adam_state"] == {"keys": ["exp_avg", "exp_avg_sq", "step"], "step": 3,
                                      "exp_avg_sparse": False}
    assert g["adam_sparse_error"] == \
        "Adam does not support sparse gradients, please consider SparseAdam instead"


def test_dlrm_interaction_and_fm_identity():
    g = _run("dlrm_fm_recommender")
    r = g["fixed_results"]
    assert tuple(r["interaction"].shape) == (3, 5 + 6)  # the dense vector and 4*3/2 pairs
    assert g["interaction_matches_loop"] and g["gradcheck_interaction"]
    assert r["tril_indices"].tolist() == [[1, 2, 2, 3, 3, 3], [0, 0, 1, 0, 1, 2]]
    assert r["tril_indices_rect"].tolist() == [[0, 0, 1, 1, 1, 2, 2, 2, 2],
                                               [0, 1, 0, 1, 2, 0, 1, 2, 3]]
    assert abs(g["fm_identity"]) < 1e-12


def test_dlrm_and_fm_learn_to_rank_clicks():
    g = _run("dlrm_fm_recommender")
    assert 0.1 < g["positive_rate"] < 0.3 and g["empty_tag_bags"] > 50
    shapes = g["batch_shapes"]
    assert shapes["cats"] == (8, 3) and shapes["hist_offsets"][0] == 0
    assert len(shapes["hist_offsets"]) == 8 and shapes["hist"][0] > shapes["hist_offsets"][-1]
    # pos_weight multiplies the positive terms: the module equals the formula, not plain BCE
    assert g["pos_weight_by_hand"] < 1e-6 and g["big_batch_positives"] > 0
    assert float(g["weighted_loss"]) > float(g["plain_bce"]) + 0.1
    kinds = g["grad_kinds"]
    assert [k for k, sparse in kinds.items() if sparse] == \
        ["emb_hist.weight", "emb_tags.weight", "emb_cats.weight"]
    assert g["optimizer_kinds"] == ["SparseAdam", "Adam"] and g["n_sparse_params"] == 3
    losses, per_epoch = g["losses"], 6
    assert len(losses) == 36
    assert np.mean(losses[-per_epoch:]) < 0.5 * np.mean(losses[:per_epoch])
    assert g["auc"] > 0.85 and g["initial_auc"] < 0.65
    fm_losses = g["fm_losses"]
    assert np.mean(fm_losses[-per_epoch:]) < 0.7 * np.mean(fm_losses[:per_epoch])
    assert g["fm_auc"] > 0.65
    # AUC by ranks and by the trapezoid ROC curve agree with scikit-learn's
    metrics = pytest.importorskip("sklearn.metrics")
    expected = metrics.roc_auc_score(g["test_labels"].numpy(), g["test_scores"].numpy())
    assert g["auc"] == pytest.approx(expected, abs=1e-6)
    assert g["auc_trapezoid"] == pytest.approx(expected, abs=1e-6)
    assert (np.diff(g["sorted_scores"].numpy()) <= 0).all()


def test_dlrm_fixed_results_match_torch():
    g, t = _run("dlrm_fm_recommender"), _run_torch("dlrm_fm_recommender")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    # gradients of a float32 net at initialisation: the small entries carry the large ones'
    # rounding (the sparse emb_hist gradient spans three decades)
    for name in ("dlrm_first_grads", "dlrm_grad_norms"):
        grads, their_grads = ours.pop(name), theirs.pop(name)
        assert grads.keys() == their_grads.keys()
        for key in their_grads:
            _close_scaled(grads[key], their_grads[key])
    # initial scores: float32 sums of the MLP's products, about 1e-3
    _close_scaled(ours.pop("dlrm_initial_scores"), theirs.pop("dlrm_initial_scores"))
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)
    assert g["sparse_info"] == t["sparse_info"] and g["changed_rows"] == t["changed_rows"]
    assert g["sparse_adam_state"] == t["sparse_adam_state"]
    assert g["max_sparse_error"] == t["max_sparse_error"]
    assert g["adam_sparse_error"] == t["adam_sparse_error"]
    assert g["grad_kinds"] == t["grad_kinds"] and g["batch_shapes"] == t["batch_shapes"]


def test_dlrm_first_losses_match_torch():
    g, t = _run("dlrm_fm_recommender"), _run_torch("dlrm_fm_recommender")
    _close(g["losses"][:6], t["losses"][:6], rtol=1e-5, atol=0)
    _close(g["fm_losses"][:6], t["fm_losses"][:6], rtol=1e-5, atol=0)
    assert g["positive_rate"] == t["positive_rate"]
    assert g["initial_auc"] == pytest.approx(t["initial_auc"], abs=1e-6)


# ------------------------------------------------------------------ graph pooling, GCN, GAT


def test_graph_batching_and_scatter_pooling():
    g = _run("graph_pooling_scatter")
    r = g["fixed_results"]
    assert g["batch_info"] == {"counts": [9, 9, 9, 6], "ptr": [0, 9, 18, 27, 33], "edges": 78,
                               "nodes": 33}
    assert g["edges_within_graphs"] and g["pools_match_loops"]
    pools = r["pools"]
    _close(pools["mean_bincount"], pools["mean"], rtol=1e-12, atol=1e-14)
    _close(pools["sum_scatter"], pools["sum"], rtol=1e-12, atol=1e-14)
    counts = np.array(g["batch_info"]["counts"], dtype=np.float64)[:, None]
    # include_self=True folds the zero start into the mean: sum / (count + 1)
    _close(r["mean_include_self"], pools["sum"].numpy() / (counts + 1), rtol=1e-12)
    # an empty graph keeps its zero row; bincount's minlength counts it as 0
    assert g["empty_pool"] == {"mean": [0.0] * 3, "max": [0.0] * 3, "counts": [9, 9, 9, 6, 0]}
    # d(weighted mean)/dx is the graph's weight over its count; the max routes to the argmax
    batch = g["batch"].numpy()
    weights = g["pool_weights"].numpy()
    _close(r["pool_grads"]["mean"], weights[batch] / counts[batch], rtol=1e-12)
    _close(r["pool_grads"]["sum"], weights[batch], rtol=1e-12)
    max_grad = r["pool_grads"]["max"].numpy()
    assert ((max_grad != 0).sum(0) == 4).all()  # one node per graph and feature
    assert all(g["gradcheck_pools"].values()) and len(g["gradcheck_pools"]) == 4


def test_graph_gcn_propagation_sparse_and_index_add_agree():
    g = _run("graph_pooling_scatter")
    r = g["fixed_results"]
    assert g["degree_agrees"] and g["isolated_finite"]
    _close(r["propagate_sparse"], r["propagate_index_add"], rtol=1e-5, atol=1e-6)
    _close(r["propagate_sparse"], g["propagate_dense"], rtol=1e-5, atol=1e-6)
    # symmetric normalisation: the weights of an undirected graph are symmetric
    norm, index = r["gcn_norm"].numpy(), g["loops_index"].numpy()
    weight = {(int(i), int(j)): w for i, j, w in zip(index[0], index[1], norm)}
    assert all(weight[(j, i)] == pytest.approx(w) for (i, j), w in weight.items())
    grads = g["grads_edge"]
    for ours, ref in zip(grads["sparse"], grads["index_add"]):
        _close(ours, ref, rtol=1e-5, atol=1e-6)
    assert g["gradcheck_sparse"]


def test_graph_edge_softmax_grouped_by_destination():
    g = _run("graph_pooling_scatter")
    _close(g["alpha_sums"], np.ones((33, 2)), rtol=1e-12)
    assert g["softmax_matches_loop"] and g["big_finite"] and g["gradcheck_softmax"]
    # the max shift cancels: its gradient through amax adds nothing
    grad = g["fixed_results"]["edge_softmax_grad"]
    _close(g["detach_grad"], grad, rtol=1e-10, atol=1e-14)
    _close(g["loop_grad"], grad, rtol=1e-10, atol=1e-14)
    _close(g["attention_sums"], np.ones((33, 2)), rtol=1e-6)


def test_graph_unique_relabelling():
    g = _run("graph_pooling_scatter")
    info = g["relabel_info"]
    assert info["roundtrip"] and info["flat_agrees"] and info["shape"] == (2, 4)
    assert info["nodes"] == sorted(set(info["nodes"]))
    assert sum(info["counts"]) == 8 and max(max(row) for row in info["relabelled"]) == 5
    # every kept edge ends at a seed
    seeds = g["seeds"].tolist()
    assert all(info["nodes"][j] in seeds for j in info["relabelled"][1])
    assert info["sub_graph_ids"] == [0, 0, 1, 1, 1, 1]


def test_graph_classifier_learns_cycles_stars_wheels():
    g = _run("graph_pooling_scatter")
    assert g["sparse_dense_difference"] < 1e-6  # sparse.mm and index_add_ GCNs: same grads
    losses = g["losses"]
    assert len(losses) == 40 and losses[0] == pytest.approx(g["chance_loss"], rel=0.1)
    assert np.mean(losses[-5:]) < 0.3 * losses[0]
    assert g["train_accuracy"] >= 0.9 and g["test_accuracy"] >= 0.75


def test_graph_fixed_results_match_torch():
    g, t = _run("graph_pooling_scatter"), _run_torch("graph_pooling_scatter")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    # float32 sums in another order (sparse.mm, index_add_, the attention): scaled to the
    # tensor's largest entry (att_dst's gradient is ~1e-10 in places)
    for key in ("propagate_sparse", "propagate_index_add", "edge_weight_grad",
                "edge_feature_grad", "logits"):
        _close_scaled(ours.pop(key), theirs.pop(key))
    grads, their_grads = dict(ours.pop("grads")), dict(theirs.pop("grads"))
    # the attention's destination term barely moves the loss at initialisation: its gradient
    # is rounding noise (~1e-12) next to the others (~1e-3) in both libraries
    att_dst, their_att_dst = grads.pop("conv2.att_dst"), their_grads.pop("conv2.att_dst")
    assert np.abs(att_dst.numpy()).max() < 1e-9 and np.abs(their_att_dst.numpy()).max() < 1e-9
    assert grads.keys() == their_grads.keys()
    for key in their_grads:
        _close_scaled(grads[key], their_grads[key])
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)
    for name in ("batch_info", "empty_pool", "relabel_info", "gradcheck_pools"):
        assert g[name] == t[name], name


def test_graph_first_losses_match_torch():
    g, t = _run("graph_pooling_scatter"), _run_torch("graph_pooling_scatter")
    _close(g["losses"][:10], t["losses"][:10], rtol=1e-5, atol=0)
    assert g["test_pred"].tolist() == t["test_pred"].tolist()
