"""Scripts written for these tests in the way common PyTorch code of two kinds is written (set
A35: a small Vision Transformer trained as timm's and DeiT's recipes write it, and an
FT-Transformer for tabular data as rtdl and tabular notebooks write it), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that the ViT learns the digits, that its fused, explicit and
``nn.MultiheadAttention`` attention paths agree (and pass gradcheck), that the hand-written
DropPath is the identity in eval and keeps whole samples scaled by 1/keep in train, that
gradient accumulation gives the full batch's gradient and the two EMAs agree; that the
FT-Transformer beats a one-hot logistic regression in AUROC, that the hand-written AUROC and
average precision equal a NumPy brute force (ties included), that restoring the early-stopping
copy reproduces the best validation score; and, where torch is installed, that the fixed-weight
parts and the first training losses equal the same script's with ``import torch``.
"""

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

BF16_EPS = 2.0 ** -8  # bfloat16 keeps 8 significant bits


def _close_scaled(ours, theirs, rtol=1e-5):
    """Close to rtol of each entry or of the tensor's largest entry."""
    scale = float(np.abs(np.asarray(theirs, dtype=np.float64)).max())
    _close(ours, theirs, rtol=rtol, atol=rtol * scale)


def _np(t):
    return np.asarray(t, dtype=np.float64)


# ------------------------------------------------------------------------ ViT recipe


def test_vit_learns_the_digits():
    g = _run("vit_recipe")
    losses, per_epoch = g["losses"], g["steps_per_epoch"]
    assert per_epoch == 45 and len(losses) == g["total_steps"] == 6 * 45
    # label smoothing 0.1 over 10 classes: from about log 10, a floor of about 0.5
    assert losses[0] > 0.95 * np.log(10)
    assert np.mean(losses[-per_epoch:]) < 0.6 * np.mean(losses[:per_epoch])
    # chance is 0.1
    assert g["test_accuracy"] > 0.7 and g["ema_accuracy"] > 0.7
    assert g["test_accuracy_bf16"] > 0.7 and g["train_accuracy"] > 0.7
    assert g["test_logits_are_inference"]
    # warm-up then cosine, per optimizer step
    lrs = g["lrs"]
    assert lrs[0] == pytest.approx(8e-3 * 2 / 20) and max(lrs) == pytest.approx(8e-3)
    assert lrs[-1] == pytest.approx(8e-3 * (0.01 + 0.99 * 0.5 * (1 + np.cos(np.pi * 250 / 250))))
    assert all(b <= a for a, b in zip(lrs[19:], lrs[20:]))
    # the no-decay group: every bias, norm weight, LayerScale gamma, pos_embed and cls_token
    groups = g["optimizer"].param_groups
    assert [group["weight_decay"] for group in groups] == [0.0, 0.05]
    model = g["model"]
    no_decay = {id(p) for p in groups[0]["params"]}
    for name, p in model.named_parameters():
        assert (id(p) in no_decay) == (p.ndim <= 1 or name in ("pos_embed", "cls_token")), name
    assert g["n_no_decay"] == 36
    # per-block stochastic depth rates from linspace: the first block has none
    torch = g["torch"]
    assert isinstance(model.blocks[0].drop_path1, torch.nn.Identity)
    assert model.blocks[1].drop_path1.drop_prob == pytest.approx(0.05)
    assert model.blocks[2].drop_path2.drop_prob == pytest.approx(0.1)


def test_vit_attention_paths_patch_embedding_and_accumulation():
    g = _run("vit_recipe")
    # SDPA, the explicit softmax and nn.MultiheadAttention on the same weights
    assert g["attention_differences"]["explicit"] < 1e-7
    assert g["attention_differences"]["mha"] < 1e-7
    assert g["mha_returned_none"]
    fused, explicit = g["attention_grads"][True], g["attention_grads"][False]
    assert fused.keys() == explicit.keys()
    for name in fused:
        _close_scaled(explicit[name], fused[name])
    assert g["gradcheck_results"] == {"sdpa_attention": True, "mha": True, "drop_path": True}
    # Conv2d(stride=patch) is a Linear over the flattened patches
    assert g["fixed_results"]["patch_tokens_shape"] == [16, 16, 32]
    assert g["patch_embed_difference"] < 1e-6
    # two half batches with loss / 2 accumulate the full batch's gradient
    scale = max(float(np.abs(_np(t)).max()) for t in g["full_batch_grads"])
    assert g["accumulation_difference"] < 1e-5 * scale
    # the two EMAs, AveragedModel with get_ema_multi_avg_fn and _foreach_lerp_ by hand
    assert g["ema_difference"] < 1e-7
    assert int(g["model_ema"].n_averaged) == g["total_steps"] == g["ema_updates"]


def test_vit_drop_path():
    g = _run("vit_recipe")
    assert g["drop_path_eval_is_identity"]  # the same tensor, no copy
    assert g["drop_path_per_sample"]  # one draw per sample: whole samples kept or zeroed
    assert g["drop_path_kept_scaled"]  # kept samples scaled by 1 / keep
    assert abs(g["drop_path_keep_fraction"] - 0.75) < 0.03  # 4000 draws
    assert abs(g["drop_path_mean_ratio"] - 1.0) < 0.05  # the expectation is kept
    assert g["fixed_results"]["drop_path_module_repr"] == "DropPath(drop_prob=0.100)"


# torch's run trains one epoch of six: the tests compare its first steps
_VIT_ORACLE = {"for epoch in range(epochs):": "for epoch in range(1):"}


def test_vit_fixed_results_match_torch():
    g, t = _run("vit_recipe"), _run_torch("vit_recipe", skip=_VIT_ORACLE)
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    # gradients: the key bias's is zero up to rounding (softmax ignores a shift)
    ours_grads, theirs_grads = ours.pop("grads"), theirs.pop("grads")
    assert ours_grads.keys() == theirs_grads.keys()
    for name in theirs_grads:
        _close_scaled(ours_grads[name], theirs_grads[name])
    # bfloat16 autocast logits: one bfloat16 rounding of the largest logit
    bf16_ours, bf16_theirs = ours.pop("logits_bf16"), theirs.pop("logits_bf16")
    scale = float(np.abs(_np(bf16_theirs)).max())
    _close(bf16_ours, bf16_theirs, rtol=BF16_EPS, atol=BF16_EPS * scale)
    assert g["bf16_logits_are_bfloat16"] and t["bf16_logits_are_bfloat16"]
    ours.pop("bf16_mlp_grads"), theirs.pop("bf16_mlp_grads")  # (their own test)
    # the head after four AdamW steps: small entries carry the large ones' rounding
    _close_scaled(ours.pop("fp32_head_after"), theirs.pop("fp32_head_after"))
    assert ours.pop("drop_path_module_repr") == theirs.pop("drop_path_module_repr")
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)


def test_vit_bf16_mlp_gradients_match_torch():
    """fc1 -> GELU -> fc2 under bfloat16 autocast: torch's GELU backward on bfloat16 computes
    in float32 and rounds once, so its gradients are the float32 ones rounded; the products
    around it are bfloat16 matmuls that round once too. Equal entries but for rare ties of the
    float32 rounding."""
    g, t = _run("vit_recipe"), _run_torch("vit_recipe", skip=_VIT_ORACLE)
    ours, theirs = g["fixed_results"]["bf16_mlp_grads"], t["fixed_results"]["bf16_mlp_grads"]
    for name in theirs:
        a, b = _np(ours[name]), _np(theirs[name])
        assert (a == b).mean() > 0.99, (name, (a == b).mean())
        _close(a, b, rtol=BF16_EPS, atol=BF16_EPS * float(np.abs(b).max()))


def test_vit_first_losses_match_torch():
    g, t = _run("vit_recipe"), _run_torch("vit_recipe", skip=_VIT_ORACLE)
    # float32: four steps of accumulation, clipping, AdamW and the schedule
    _close(g["fixed_results"]["fp32_losses"], t["fixed_results"]["fp32_losses"], rtol=1e-5,
           atol=0)
    _close(g["fixed_results"]["fp32_grad_norms"], t["fixed_results"]["fp32_grad_norms"],
           rtol=1e-5, atol=0)
    # bfloat16 autocast: a batch mean of cross entropies of bfloat16 logits
    _close(g["losses"][:6], t["losses"][:6], rtol=BF16_EPS / 4, atol=0)
    assert len(t["lrs"]) == g["steps_per_epoch"]
    assert g["lrs"][:len(t["lrs"])] == pytest.approx(t["lrs"], rel=1e-12)


# ------------------------------------------------------------------ FT-Transformer


def _brute_force_auroc(scores, labels):
    pos, neg = scores[labels == 1], scores[labels == 0]
    greater = (pos[:, None] > neg[None, :]).sum()
    ties = (pos[:, None] == neg[None, :]).sum()
    return (greater + 0.5 * ties) / (len(pos) * len(neg))


def _brute_force_ap(scores, labels):
    """The mean over positives of the precision among the scores at least theirs."""
    precisions = [(labels[scores >= s] == 1).mean() for s in scores[labels == 1]]
    return float(np.mean(precisions))


def test_ft_transformer_beats_the_baseline():
    g = _run("ft_transformer_tabular")
    assert g["split_sizes"] == [1680, 360, 360]
    assert 0.1 < g["positive_rate"] < 0.25  # imbalanced
    assert g["test_auroc"] > 0.75 and g["test_auroc"] > g["baseline_auroc"] + 0.1
    assert g["best_score"] > 0.8
    # average precision above the positive rate, and above the baseline's
    test_rate = float(_np(g["test_tensors"][2]).mean())
    assert g["test_ap"] > 2 * test_rate and g["test_ap"] > g["baseline_ap"]
    losses, per_epoch = g["losses"], len(g["train_loader"])
    assert per_epoch == 14
    assert np.mean(losses[-per_epoch:]) < 0.8 * np.mean(losses[:per_epoch])
    # the weighted sampler draws the classes about evenly
    assert abs(np.mean(g["sampled_positive_fraction"]) - 0.5) < 0.05
    assert np.mean(g["baseline_losses"][-14:]) < np.mean(g["baseline_losses"][:14])


def test_ft_transformer_early_stopping_restores_the_best_state():
    g = _run("ft_transformer_tabular")
    scores = g["val_scores"]
    assert g["best_score"] == max(scores) and scores[g["best_epoch"]] == g["best_score"]
    assert g["restored_val_auroc"] == g["best_score"]  # the deep copy, reloaded
    assert g["best_state_is_a_copy"]
    if g["epochs_run"] < g["max_epochs"]:  # stopped: patience epochs without a better score
        assert g["epochs_run"] == g["best_epoch"] + 1 + g["patience"]
    else:
        assert g["epochs_run"] == 20


def test_ft_transformer_metrics_equal_a_brute_force():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    g = _run("ft_transformer_tabular")
    cases = {
        "test": (g["test_scores"], g["test_tensors"][2]),
        "fixed": (g["metric_scores"], g["metric_labels"]),
        "tied": (g["tied_scores"], g["metric_labels"]),
        "baseline": (g["baseline_scores"], g["test_tensors"][2]),
    }
    assert len(np.unique(_np(g["tied_scores"]))) < 20  # (many ties)
    for name, (scores, labels) in cases.items():
        s, y = _np(scores), _np(labels)
        auroc, ap = g["roc_auc"](scores, labels), g["average_precision"](scores, labels)
        assert auroc == pytest.approx(_brute_force_auroc(s, y), abs=1e-6), name
        assert ap == pytest.approx(_brute_force_ap(s, y), abs=1e-6), name
        assert auroc == pytest.approx(sklearn_metrics.roc_auc_score(y, s), abs=1e-6), name
        assert ap == pytest.approx(sklearn_metrics.average_precision_score(y, s), abs=1e-6), name
    assert g["test_auroc"] == g["roc_auc"](g["test_scores"], g["test_tensors"][2])


def test_ft_transformer_tokenizers_loss_and_modes():
    g = _run("ft_transformer_tabular")
    assert g["num_tokenizer_difference"] == 0.0
    assert tuple(g["fixed_results"]["num_tokens"].shape) == (2, 5, 32)
    assert g["loss_by_hand"] == pytest.approx(g["fixed_results"]["loss"], rel=1e-6)
    # no_grad in eval and inference_mode give the same logits
    _close(g["inference_logits"], g["fixed_results"]["logits_eval"], rtol=1e-6, atol=1e-7)
    # one-hot codes (4 + 6 + 3) beside the 5 standardized columns
    one_hot = _np(g["fixed_results"]["one_hot"])
    assert one_hot.shape == (3, 18)
    assert (one_hot[:, :13].sum(1) == 3).all() and set(np.unique(one_hot[:, :13])) == {0, 1}


def test_ft_transformer_fixed_results_match_torch():
    g, t = _run("ft_transformer_tabular"), _run_torch("ft_transformer_tabular")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    ours_grads, theirs_grads = ours.pop("grads"), theirs.pop("grads")
    assert ours_grads.keys() == theirs_grads.keys()
    for name in theirs_grads:
        _close_scaled(ours_grads[name], theirs_grads[name])
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)
    # the data pipeline: the same table, split, standardization and sampler draws
    assert g["split_sizes"] == t["split_sizes"]
    assert g["train_set"].indices == t["train_set"].indices
    assert g["positive_rate"] == t["positive_rate"]
    _close(g["mean"], t["mean"], rtol=1e-6)
    assert g["sampled_positive_fraction"] == t["sampled_positive_fraction"]


def test_ft_transformer_first_losses_match_torch():
    g, t = _run("ft_transformer_tabular"), _run_torch("ft_transformer_tabular")
    # (dropout 0.1 in the encoder: the same draws)
    _close(g["losses"][:30], t["losses"][:30], rtol=1e-5, atol=0)
    _close(g["val_scores"][:2], t["val_scores"][:2], rtol=1e-5, atol=0)
    _close(g["baseline_losses"][:30], t["baseline_losses"][:30], rtol=1e-5, atol=0)
