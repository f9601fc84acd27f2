"""Scripts written for these tests in the way common PyTorch code of three kinds is written (set
M35: a CLIP-style dual encoder as open_clip and the "simple CLIP" tutorials write it, a masked
autoencoder as the official MAE code writes it, and ArcFace/CosFace margin heads as
face-recognition repositories write them), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that the causal text mask built three ways gives the same features and
hides the padding after the end-of-text token, that open_clip's own attention block equals the
encoder layer it was loaded from, that the clamped ``logit_scale`` stops at 100 and passes no
gradient, that contrastive training makes zero-shot classification and retrieval work; that
MAE's masking keeps the right number of tokens and ``ids_restore`` undoes the shuffle,
``unpatchify`` inverts ``patchify``, the sin-cos table matches its torch-built twin, the
reconstruction loss falls; that the margin heads put ``cos(theta + m)`` (or ``cos - m``) on the
target logit only and insightface's in-place margin is a straight-through gradient, and that
both heads learn digit embeddings that verify pairs; and, where torch is installed, that the
fixed-weight parts and the first training losses equal the same script's with ``import torch``.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested


def _close_nested_scaled(ours, theirs, rtol=1e-5, scale_tol=5e-6):
    """Nested results close to rtol of each entry or scale_tol of the tensor's largest entry:
    float32 matrix products and attention sums in another order (BLAS against torch's kernels)
    leave ~1e-7 of a tensor's largest entry in its small entries (measured: below 1e-6)."""
    if isinstance(theirs, dict):
        assert ours.keys() == theirs.keys()
        for key in theirs:
            _close_nested_scaled(ours[key], theirs[key], rtol, scale_tol)
        return
    theirs = np.asarray(theirs, dtype=np.float64)
    finite = theirs[np.isfinite(theirs)]
    scale = float(np.abs(finite).max()) if finite.size else 0.0
    _close(ours, theirs, rtol=rtol, atol=scale_tol * scale)


# ------------------------------------------------------------------ CLIP


def test_clip_text_tower_masks_and_block():
    g = _run("clip_dual_encoder")
    r = g["fixed_results"]
    by_mask = r["text_by_mask"]
    for name in ("square_subsequent", "bool", "is_causal"):
        _close(by_mask[name], by_mask["triu_fill"], rtol=1e-6, atol=1e-6)
    square = r["square_mask"].numpy()
    assert np.isneginf(square[np.triu_indices(10, 1)]).all()
    assert (square[np.tril_indices(10)] == 0).all()
    # the EOT token (the largest id) is where argmax looks: after it come only zeros
    tokens, eot = r["tokens"].numpy(), r["eot_position"].numpy()
    assert (tokens[np.arange(len(tokens)), eot] == g["tokenizer"].eot_token).all()
    assert all((row[e + 1:] == 0).all() for row, e in zip(tokens, eot))
    # causal: tokens after the EOT cannot change its features; without the mask they do
    assert g["padding_change"] == 0.0 and g["no_mask_padding_change"] > 1e-2
    # open_clip's (L, N, D) block loaded from an encoder layer's state_dict is the same layer
    assert g["block_keys_missing"] == []
    assert g["block_difference"] < 1e-6


def test_clip_logit_scale_clamp_and_soft_targets():
    g = _run("clip_dual_encoder")
    r = g["fixed_results"]
    assert float(r["logit_scale_init"]) == pytest.approx(math.log(1 / 0.07), rel=1e-6)
    assert str(r["logit_scale_init"].dtype).endswith("float32")
    assert float(r["clamped_scale"]) == pytest.approx(100.0)
    assert float(r["clamped_scale_grad"]) == 0.0
    assert float(r["clamped_in_place"]) == pytest.approx(math.log(100), rel=1e-6)
    # features are unit vectors; the soft-target loss by hand is F.cross_entropy's
    for name in ("image_features", "text_features"):
        _close(np.linalg.norm(r[name].numpy(), axis=1), np.ones(9), rtol=1e-6)
    _close(g["soft_by_hand"], g["soft_builtin"], rtol=1e-6)
    targets = r["simple_targets"].numpy()
    _close(targets.sum(1), np.ones(len(targets)), rtol=1e-6)
    # ClipLoss at initialisation is near log(batch) (logit scale 1/0.07 on near-random features)
    assert 0.5 * math.log(9) < r["loss"] < 3 * math.log(9)


def test_clip_learns_zero_shot_and_retrieval():
    g = _run("clip_dual_encoder")
    losses = g["losses"]
    assert len(losses) == g["steps"] == 50
    assert np.mean(losses[-10:]) < 0.2 * np.mean(losses[:5])
    lrs = g["lrs"]
    assert lrs[0] == pytest.approx(3e-3 / 5) and max(lrs) == pytest.approx(3e-3)
    assert lrs[-1] < 1e-4
    assert all(0 < s <= 100 for s in g["logit_scales"])
    assert g["zero_shot_top1"] >= 0.85 and g["zero_shot_top3"] == 1.0
    zs_probs = g["zs_probs"].numpy()
    _close(zs_probs.sum(1), np.ones(len(zs_probs)), rtol=1e-5)
    retrieval = g["retrieval"]
    assert retrieval["image_to_text_R@1"] >= 0.8 and retrieval["text_to_image_R@1"] >= 0.8
    assert retrieval["image_to_text_R@3"] == 1.0
    assert retrieval["image_to_text_mean_rank"] < 1.5
    # the zero-shot head's columns are unit vectors
    _close(np.linalg.norm(g["classifier"].numpy(), axis=0), np.ones(9), rtol=1e-6)
    # AdamW groups: gains, biases, embeddings' 1-D class token and logit_scale not decayed
    groups = g["optimizer"].param_groups
    assert [group["weight_decay"] for group in groups] == [0.0, 0.1]
    assert any(p is g["model"].logit_scale for p in groups[0]["params"])
    simple = g["simple_losses"]
    assert np.mean(simple[-5:]) < 0.5 * np.mean(simple[:5])
    assert g["simple_top1"] >= 0.8


def test_clip_fixed_results_match_torch():
    g, t = _run("clip_dual_encoder"), _run_torch("clip_dual_encoder")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.pop("retrieval_init") == theirs.pop("retrieval_init")
    assert ours.pop("tokens").tolist() == theirs.pop("tokens").tolist()
    _close_nested_scaled(ours, theirs)


def test_clip_first_losses_match_torch():
    g, t = _run("clip_dual_encoder"), _run_torch("clip_dual_encoder")
    _close(g["losses"][:10], t["losses"][:10], rtol=1e-5, atol=0)
    _close(g["simple_losses"][:5], t["simple_losses"][:5], rtol=1e-5, atol=0)
    assert g["lrs"] == pytest.approx(t["lrs"], rel=1e-12)


# ------------------------------------------------------------------ MAE


def test_mae_masking_patchify_and_pos_embed():
    g = _run("mae_arcface")
    r = g["fixed_results"]
    # 16 patches, 75% masked: 4 kept per row; the mask is 1 where removed
    mask = r["token_mask"].numpy()
    assert mask.shape == (3, 16) and (mask.sum(1) == 12).all()
    kept = r["kept_tokens"].numpy()  # the indices of the kept tokens
    assert kept.shape == (3, 4)
    for row_mask, row_kept in zip(mask, kept):
        assert sorted(row_kept.astype(int)) == sorted(np.flatnonzero(row_mask == 0))
    unshuffled = g["unshuffled"][..., 0].numpy()  # kept tokens back in place, -1 elsewhere
    _close(unshuffled, np.where(mask == 0, np.arange(16)[None], -1.0), rtol=0, atol=0)
    assert (r["mae_mask"].numpy().sum(1) == 12).all()
    # patchify: (N, 16, 4*4*3), unpatchify inverts it exactly
    assert tuple(r["patches"].shape) == (6, 16, 48)
    _close(g["roundtrip"], g["imgs"], rtol=0, atol=0)
    # the sin-cos table: a zero cls row, the numpy and torch builds agree
    pos = r["pos_embed"].numpy()[0]
    assert pos.shape == (17, 32) and (pos[0] == 0).all() and np.abs(pos).max() <= 1.0
    _close(g["pos_embed_torch"], g["pos_embed_table"], rtol=0, atol=1e-12)
    assert g["pos_embed_unchanged"]
    assert g["frozen_grads"] == {"pos_embed": None, "decoder_pos_embed": None}
    # the fused attention equals the manual softmax
    _close(g["fused_out"], g["manual_out"], rtol=1e-5, atol=1e-6)
    # the pasted image keeps the visible patches and takes the prediction elsewhere
    _close(g["im_masked"] + g["y"] * g["vis_mask"], r["im_paste"], rtol=1e-6, atol=1e-7)
    vis = g["vis_mask"].numpy()
    assert set(np.unique(vis)) == {0.0, 1.0} and vis.mean() == pytest.approx(0.75)


def test_mae_interpolated_pos_embed_and_load():
    g = _run("mae_arcface")
    r = g["fixed_results"]
    assert g["load_missing"] == ["fc_norm.bias", "fc_norm.weight", "head.bias", "head.weight"]
    assert "decoder_pos_embed" in g["load_unexpected"] and "mask_token" in g["load_unexpected"]
    interpolated = r["interpolated_pos_embed"].numpy()
    assert interpolated.shape == (1, 37, 32)
    _close(interpolated[0, 0], r["pos_embed"].numpy()[0, 0], rtol=0, atol=0)
    assert tuple(r["finetune_logits"].shape) == (6, 10)


def test_mae_learns_to_reconstruct():
    g = _run("mae_arcface")
    losses = g["mae_losses"]
    assert len(losses) == 40
    assert np.mean(losses[-10:]) < 0.7 * np.mean(losses[:5])
    assert g["test_mae_loss"] < 0.6 * g["untrained_mae_loss"]
    # shuffling without masking: the cls token and the restored patches do not see it
    assert g["no_mask_sum"] == 0.0
    assert g["shuffle_cls_difference"] < 1e-5 and g["shuffle_patch_difference"] < 1e-5
    assert g["unrestored_difference"] > 0.1


def test_mae_fixed_results_match_torch():
    g, t = _run("mae_arcface"), _run_torch("mae_arcface")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    # float64 margin heads: to rounding
    for key in ("margin_outputs", "margin_grads", "focal"):
        _close_nested(ours.pop(key), theirs.pop(key), rtol=1e-10, atol=1e-12)
    assert ours.pop("mae_mask").tolist() == theirs.pop("mae_mask").tolist()
    assert ours.pop("token_mask").tolist() == theirs.pop("token_mask").tolist()
    _close_nested_scaled(ours, theirs)
    _close(g["mae_losses"][:10], t["mae_losses"][:10], rtol=1e-5, atol=0)


# ------------------------------------------------------------------ ArcFace / CosFace


def test_margin_heads_put_the_margin_on_the_target():
    g = _run("mae_arcface")
    target = g["target"].numpy()
    rows = np.arange(len(target))
    for name, s, m in (("arc", 30.0, 0.5), ("arc_easy", 30.0, 0.5)):
        cos = g["margin_cosines"][name].numpy()
        out = g["margin_outputs"][name].numpy()
        other = np.ones_like(cos, dtype=bool)
        other[rows, target] = False
        _close(out[other], s * cos[other], rtol=1e-12, atol=1e-12)
        c = cos[rows, target]
        with_margin = np.cos(np.arccos(c) + m)
        if name == "arc":
            expected = np.where(c > math.cos(math.pi - m), with_margin,
                                c - math.sin(math.pi - m) * m)
        else:
            expected = np.where(c > 0, with_margin, c)
        _close(out[rows, target], s * expected, rtol=1e-10, atol=1e-10)
    cos = g["margin_cosines"]["cos"].numpy()
    expected = cos.copy()
    expected[rows, target] -= 0.4
    _close(g["margin_outputs"]["cos"], 30.0 * expected, rtol=1e-12, atol=1e-12)
    # insightface's arccos/cos in place: the same margin, a straight-through gradient
    cos = np.clip(g["margin_cosines"]["insight"].numpy(), -1, 1)
    expected = cos.copy()
    expected[rows, target] = np.cos(np.arccos(cos[rows, target]) + 0.5)
    _close(g["margin_outputs"]["insight"], 64.0 * expected, rtol=1e-10, atol=1e-10)
    for ours, straight in zip(g["margin_grads"]["insight"], g["straight_through_grads"]):
        _close(ours, straight, rtol=1e-10, atol=1e-12)


def test_arcface_and_cosface_learn_digits():
    g = _run("mae_arcface")
    for prefix in ("arc", "cos"):
        losses = g[f"{prefix}_losses"]
        assert np.mean(losses[-5:]) < 0.05 * np.mean(losses[:5]), prefix
        assert g[f"{prefix}_accuracy"] >= 0.9, prefix
        assert g[f"{prefix}_verification"] >= 0.9, prefix
        assert 0.0 < g[f"{prefix}_threshold"] < 1.0, prefix
    assert len(g["arc_losses"]) == 8 * 14 and len(g["cos_losses"]) == 5 * 14
    assert g["arc_lrs"] == pytest.approx([1e-3, 1e-3])
    # the embedding BatchNorm's gain stayed frozen at one
    gain = g["arc_backbone"].features.weight
    assert not gain.requires_grad and (gain.detach().numpy() == 1.0).all()


def test_margin_heads_match_torch():
    g, t = _run("mae_arcface"), _run_torch("mae_arcface")
    _close(g["arc_losses"][:10], t["arc_losses"][:10], rtol=1e-5, atol=0)
    _close(g["cos_losses"][:10], t["cos_losses"][:10], rtol=1e-5, atol=0)
    for ours, theirs in zip(g["straight_through_grads"], t["straight_through_grads"]):
        _close(ours, theirs, rtol=1e-10, atol=1e-12)
