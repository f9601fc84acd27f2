"""Scripts written for these tests in the way public PyTorch code of two kinds is written (set
G35: the Set Transformer beside DeepSets, as the authors' ``modules.py`` and re-implementations
on ``nn.MultiheadAttention`` write them, and a small Perceiver / Perceiver IO with Fourier
position features, weight-tied blocks, output queries and a ``nn.TransformerDecoder`` head),
run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that multi-head attention by hand, by ``nn.MultiheadAttention`` and by
``F.scaled_dot_product_attention`` agree (weights per head and averaged, gradients), that padded
set elements get no attention weight and no gradient, that the set models are permutation
invariant (equivariant for SAB/ISAB), that a weight-tied Perceiver equals its untied copy with
the tied gradient the sum of the untied ones, that the decoder is causal and ignores padded
memory, that the models learn their tasks; and, where torch is installed, that the fixed-weight
parts and the first training losses equal the same script's with ``import torch``.
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


def _close_scaled_dict(ours, theirs, rtol=1e-5):
    assert ours.keys() == theirs.keys()
    for key in theirs:
        _close_scaled(ours[key], theirs[key], rtol=rtol)


def _mean(values):
    return float(np.mean(values))


# ------------------------------------------------------------------ Set Transformer


def test_set_attention_by_hand_mha_and_sdpa_agree():
    g = _run("set_transformer")
    checks = g["mha_checks"]
    for name in ("hand_out", "hand_heads", "sdpa_out", "avg_is_mean", "self_hand"):
        assert checks[name] < 1e-6, name
    assert checks["grads"] < 1e-5
    # an additive -inf float key_padding_mask is the boolean one
    assert checks["float_mask"] < 1e-6
    r = g["fixed_results"]
    n = g["X_set"].shape[1]
    assert tuple(r["mha_attn_heads"].shape) == (3, 4, 5, n)  # (B, heads, L, S)
    assert tuple(r["mha_attn_avg"].shape) == (3, 5, n)
    assert tuple(r["self_mha_attn"].shape) == (3, 2, n, n)
    # padded keys: no weight, no gradient; every row still sums to one
    assert g["padded_weight"] == 0.0
    assert g["padded_key_grad"] == 0.0
    _close(g["row_sums"].detach(), np.ones((3, 4, 5)), rtol=0, atol=1e-6)


def test_set_transformer_invariance_and_padding():
    g = _run("set_transformer")
    inv = g["invariance"]
    assert inv["permuted"] < 1e-5 and inv["alone"] < 1e-5
    assert inv["sab_equivariant"] < 1e-5 and inv["isab_equivariant"] < 1e-5
    # what sits in a padded slot never reaches the output, nor does its gradient flow
    assert inv["padding_content"] == 0.0
    assert g["padded_input_grad"] == 0.0
    assert g["mha_invariance"] < 1e-5 and g["mha_padding"] == 0.0
    assert g["mha_nograd_difference"] < 1e-6
    # PMA's attention: one seed per head and set, over the padded length, rows summing to one
    attention = g["fixed_results"]["st_pma_attention"].numpy()
    mask = g["mask"].numpy()
    assert attention.shape == (4 * 4, 1, mask.shape[1])
    _close(attention.sum(-1), np.ones((16, 1)), rtol=0, atol=1e-6)
    assert (attention[:, 0][~np.tile(mask, (4, 1))] == 0).all()


def test_deepsets_max_pooling_ties():
    g = _run("set_transformer")
    r = g["fixed_results"]
    # amax shares the gradient evenly among the tied maxima; max(dim) picks one of them
    _close(r["tie_grad_amax"], [[0, 0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3, 0]], rtol=1e-6)
    grad_max, indices = r["tie_grad_max"].numpy(), r["tie_max_indices"].numpy()
    assert grad_max.sum(1).tolist() == [1.0, 1.0]
    assert indices[0] in (1, 2) and indices[1] in (0, 1, 2)
    assert grad_max[0, indices[0]] == 1.0 and grad_max[1, indices[1]] == 1.0
    assert tuple(r["deepsets"]["max"].shape) == (4,)


def test_set_models_learn_the_maximum_and_distinct_counts():
    g = _run("set_transformer")
    losses, evals = g["max_losses"], g["max_eval"]
    assert set(losses) == {"set_transformer", "set_transformer_mha", "deepsets_sum",
                           "deepsets_max"}
    for name, record in losses.items():
        assert len(record) == g["steps"] == 120
        assert _mean(record[-10:]) < 0.4 * _mean(record[:10]), name
    # attention pooling beats sum pooling on the maximum (Lee et al.'s table 1); max pooling
    # is the task's own aggregator
    for name in ("set_transformer", "set_transformer_mha"):
        assert evals[name] < 1.5 and evals[name] < 0.7 * evals["deepsets_sum"], name
    assert evals["deepsets_max"] < 0.3
    count_losses = g["count_losses"]
    assert _mean(count_losses[-10:]) < 0.5 * _mean(count_losses[:10])
    assert g["count_accuracy"] > g["majority_accuracy"] + 0.2


def test_set_transformer_fixed_results_match_torch():
    g, t = _run("set_transformer"), _run_torch("set_transformer")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    # gradients: the small entries carry the large ones' float32 rounding
    for key in ("mha_grads", "st_grads", "deepsets_grads", "mha_st_grads"):
        _close_scaled_dict(ours.pop(key), theirs.pop(key))
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)
    assert g["X_set"].shape == t["X_set"].shape and g["sizes"].tolist() == t["sizes"].tolist()


def test_set_transformer_first_losses_match_torch():
    g, t = _run("set_transformer"), _run_torch("set_transformer")
    for name in g["max_losses"]:
        _close(g["max_losses"][name][:10], t["max_losses"][name][:10], rtol=1e-5, atol=0)
    _close(g["count_losses"][:10], t["count_losses"][:10], rtol=1e-5, atol=0)


# ------------------------------------------------------------------ Perceiver, Perceiver IO


def test_perceiver_fourier_features():
    g = _run("perceiver_io")
    checks = g["features_checks"]
    assert checks["shape"] == (3, 4, 2, 7) and checks["identity"] and checks["unit"] < 1e-6
    r = g["fixed_results"]
    grid = r["grid"].numpy()
    assert grid.shape == (3, 4, 2)
    _close(grid[0, 0], [-1, -1], rtol=0)
    _close(grid[-1, -1], [1, 1], rtol=0)
    _close(grid[:, 0, 0], [-1, 0, 1], rtol=0, atol=1e-7)
    # the lowest band at position 0: sin 0, cos 0
    assert tuple(r["position_features_1d"].shape) == (5, 5)
    _close(r["position_features_1d"][2], [0, 0, 1, 1, 0], rtol=0, atol=1e-7)


def test_perceiver_cross_attention_and_weight_tying():
    g = _run("perceiver_io")
    checks = g["attention_checks"]
    assert checks["shape"] == (3, 2, 8, 64)
    assert checks["avg_is_mean"] < 1e-7 and checks["rows_sum_to_one"] < 1e-6
    assert tuple(g["fixed_results"]["perceiver_attention_avg"].shape) == (3, 8, 64)
    tie = g["tie_checks"]
    assert tie["logits"] < 1e-6 and tie["grad_sum"] < 1e-6
    # the shared modules count once among the parameters, twice in the state dict
    assert g["n_tied_params"] == g["n_tied_named"] < tie["untied_params"]
    assert g["n_tied_state"] > g["n_tied_params"]
    assert g["encoder_layer_difference"] < 1e-6
    assert g["padding_difference"] == 0.0


def test_perceiver_decoder_causal_and_padding():
    g = _run("perceiver_io")
    checks = g["decoder_checks"]
    assert checks["past_unchanged"] == 0.0 and checks["future_changed"] > 0.1
    assert checks["padding"] == 0.0
    assert checks["bool_mask"] < 1e-6 and checks["is_causal"] < 1e-6
    mask = g["fixed_results"]["causal_mask"].numpy()
    assert np.isneginf(mask[np.triu_indices(5, 1)]).all() and (mask[np.tril_indices(5)] == 0).all()
    assert any("norm_first was True" in w for w in g["nested_tensor_warnings"])


def test_perceivers_learn():
    g = _run("perceiver_io")
    cls, io, sort = g["cls_losses"], g["io_losses"], g["sort_losses"]
    assert len(cls) == 80 and len(io) == 60 and len(sort) == 100
    assert _mean(cls[-10:]) < 0.4 * _mean(cls[:10]) and g["cls_accuracy"] > 0.9
    assert _mean(io[-10:]) < 0.4 * _mean(io[:10])
    assert _mean(sort[-10:]) < 0.3 * _mean(sort[:10])
    assert g["sort_token_accuracy"] > 0.6
    decoded = g["decoded"].numpy()
    assert decoded.shape == (128, 8) and decoded.min() >= 0 and decoded.max() < g["VOCAB"]


def test_perceiver_fixed_results_match_torch():
    g, t = _run("perceiver_io"), _run_torch("perceiver_io")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    for key in ("perceiver_grads", "io_grads", "sort_grads"):
        _close_scaled_dict(ours.pop(key), theirs.pop(key))
    mask_ours, mask_theirs = ours.pop("causal_mask").numpy(), theirs.pop("causal_mask").numpy()
    assert np.array_equal(mask_ours, mask_theirs)
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)
    assert g["nested_tensor_warnings"] == t["nested_tensor_warnings"]
    assert (g["n_tied_params"], g["n_tied_state"]) == (t["n_tied_params"], t["n_tied_state"])


def test_perceiver_first_losses_match_torch():
    g, t = _run("perceiver_io"), _run_torch("perceiver_io")
    for key in ("cls_losses", "io_losses", "sort_losses"):
        _close(g[key][:10], t[key][:10], rtol=1e-5, atol=0)
    assert g["sort_token_accuracy"] == pytest.approx(t["sort_token_accuracy"], abs=0.02)
