"""A script written for these tests in the way timm and the official Swin-Transformer and
ConvNeXt repositories write vision backbones (set C35: a tiny Swin Transformer and a tiny
ConvNeXt trained on 16x16 images of lines in four orientations), run on jitgrad.

The script in tests/scripts/ runs as ``__main__``; these tests read what it computed from its
globals and assert that window partition/reverse and the shifts round-trip, that the
shifted-window mask and the relative position index are the official ones, that the masked
window attention equals ``F.scaled_dot_product_attention`` with the bias and mask, that DropPath
is the identity in eval and a per-sample Bernoulli mask in train (also under activation
checkpointing), that the two channels_first LayerNorms agree, that Mixup/CutMix targets are
mixed distributions, that both models learn (with warm-up + cosine LR, AdamW groups without
decay on norms/biases/bias tables, a weight EMA, a filtered checkpoint round trip); and, where
torch is installed, that the fixed-weight results and the first training losses equal the same
script's with ``import torch``.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

SCRIPT = "swin_convnext"
GRAD_KEYS = ("swin_grads", "convnext_grads", "padded_block_grads", "checkpointed_grads")


def _close_scaled(ours, theirs, rtol=1e-5):
    """Close to rtol of each entry or of the tensor's largest entry."""
    scale = float(np.abs(np.asarray(theirs, dtype=np.float64)).max())
    _close(ours, theirs, rtol=rtol, atol=rtol * scale)


def test_swin_windows_mask_and_relative_position_index():
    g = _run(SCRIPT)
    r = g["fixed_results"]
    assert r["windows_shape"] == [8, 4, 4, 5]
    assert g["partition_roundtrip"] and g["roll_roundtrip"] and g["first_window_ok"]
    # the 3x3 index: the centre offset (0, 0) is 12 on the diagonal, offsets are antisymmetric
    index = r["relative_position_index"].numpy()
    assert g["rel_index_dtype"].endswith("int64")
    assert index.shape == (9, 9) and index.min() == 0 and index.max() == 24
    assert (np.diag(index) == 12).all() and (index + index.T == 24).all()
    assert len(np.unique(index)) == 25
    # the shifted-window mask of an 8x8 map with 4x4 windows, shift 2
    mask = r["attn_mask"].numpy()
    assert mask.shape == (4, 16, 16)
    assert set(np.unique(mask).tolist()) == {-100.0, 0.0}
    assert [int((w == -100).sum()) for w in mask] == [0, 128, 128, 192]
    assert (mask == mask.transpose(0, 2, 1)).all()
    assert g["padded_mask_shape"] == [4, 16, 16]  # 6x6 padded to 8x8
    # masked window attention == SDPA with bias + mask; masked pairs get ~exp(-100)
    assert g["sdpa_difference"] < 1e-6
    assert g["cross_region_prob"] < 1e-30
    # the index is a persistent buffer, the mask is not
    keys = g["swin_state_keys"]
    assert sum("relative_position_index" in k for k in keys) == 4
    assert not any("attn_mask" in k for k in keys)
    assert g["swin_buffers"].count("layers.0.blocks.1.attn_mask") == 1
    assert sum("attn_mask" in b for b in g["swin_buffers"]) == 1  # the others are None
    assert g["swin_n_params"] == sum(p.numel() for p in g["swin"].parameters())
    assert "(drop_path): DropPath(drop_prob=0.033)" in g["swin_block_repr"]


def test_drop_path_eval_train_and_checkpointing():
    g = _run(SCRIPT)
    r = g["fixed_results"]
    assert g["drop_path_eval_identity"]
    assert g["per_sample_values"] == [0.0, 2.0]  # dropped or scaled by 1 / keep
    assert set(r["drop_path_train"].tolist()) == {0.0, 2.0}
    assert g["drop_path_mean"] == pytest.approx(1.0, abs=0.05)  # unbiased
    _close(r["swin_dpr"], np.linspace(0, 0.1, 4), rtol=1e-6)
    assert g["eval_deterministic"] and g["train_seeded_same"] and g["train_differs"]
    # checkpointing recomputes the blocks with the same DropPath masks: the same gradients
    grads = g["checkpoint_grads"]
    assert grads[True].keys() == grads[False].keys()
    for name, grad in grads[False].items():
        assert np.array_equal(grads[True][name].numpy(), grad.numpy()), name


def test_convnext_layers_agree():
    g = _run(SCRIPT)
    r = g["fixed_results"]
    assert g["layer_norm_difference"] < 1e-5
    assert g["depthwise_difference"] < 1e-6 and g["pointwise_difference"] < 1e-6
    _close(r["convnext_gamma_init"], np.full(16, np.float32(0.1)), rtol=0, atol=0)
    assert r["convnext_dwconv_init"].shape == (2, 1, 7, 7)
    assert g["convnext_n_params"] == 28596
    # label smoothing by hand equals the built-in one
    assert r["swin_loss"] == pytest.approx(r["swin_builtin_loss"], rel=1e-6)
    # bf16 autocast logits are bfloat16 and near the float32 ones
    for name in ("swin", "convnext"):
        assert str(g[f"{name}_amp_logits"].dtype).endswith("bfloat16")
        full = r[f"{name}_logits"].numpy()
        _close(g["amp_results"][name], full, rtol=0, atol=0.05 * np.abs(full).max())


def test_mixup_cutmix_targets():
    g = _run(SCRIPT)
    r = g["fixed_results"]
    assert g["mix_kinds"] == ["cutmix", "cutmix", "mixup", "mixup"]
    targets = r["mixed_targets"].numpy()
    assert targets.shape == (4, 8, 4)
    _close(targets.sum(-1), np.ones((4, 8)), rtol=0, atol=1e-6)
    assert (targets >= 0.1 / 4 - 1e-7).all()  # the smoothing floor
    # lam of the batch's own smoothed labels plus 1 - lam of the flipped batch's
    smoothed = np.eye(4)[g["train_y"][:8].numpy()] * 0.9 + 0.025
    for lam, t in zip(r["mix_lams"], targets):
        assert 0 <= lam <= 1
        _close(t, lam * smoothed + (1 - lam) * smoothed[::-1], rtol=0, atol=1e-6)
    # CutMix's lambda is the kept area: a multiple of 1/256 on 16x16 images
    for lam in r["mix_lams"][:2]:
        assert (lam * 256) == pytest.approx(round(lam * 256), abs=1e-9)
    assert r["soft_ce"] == pytest.approx(g["soft_ce_builtin"], rel=1e-6)
    assert len(g["mix_history"]) == g["steps"]


def test_both_models_learn():
    g = _run(SCRIPT)
    steps = g["steps"]
    swin_losses, convnext_losses = g["swin_losses"], g["convnext_losses"]
    assert len(swin_losses) == len(convnext_losses) == steps == 96
    assert swin_losses[0] == pytest.approx(math.log(4), rel=0.05)
    assert np.mean(swin_losses[-16:]) < 0.6 * np.mean(swin_losses[:16])
    # Mixup/CutMix targets keep the ConvNeXt's training loss high; the clean validation low
    assert np.mean(convnext_losses[-16:]) < 0.75 * np.mean(convnext_losses[:16])
    assert g["swin_accuracy"] >= 0.75 and g["swin_val_loss"] < 0.85
    assert g["convnext_accuracy"] >= 0.9 and g["convnext_val_loss"] < 0.7
    assert g["ema_accuracy"] >= 0.9 and g["ema_separate"]
    # warm-up then cosine: 6 linear steps up to the peak, then down to near zero
    lrs = g["swin_lrs"]
    _close(lrs[:6], 3e-3 * np.arange(1, 7) / 6, rtol=1e-12)
    assert max(lrs) == pytest.approx(3e-3) and lrs[-1] < 0.02 * 3e-3
    assert all(a >= b for a, b in zip(lrs[6:], lrs[7:]))
    lrs = g["convnext_lrs"]
    _close(lrs[:7], 4e-3 * (0.1 + 0.9 * np.arange(7) / 6), rtol=1e-12)
    assert lrs[-1] < 0.01 * 4e-3 and all(a >= b for a, b in zip(lrs[6:], lrs[7:]))
    # AdamW groups: norms, biases and the bias tables are not decayed
    for model, optimizer in (("swin", "swin_optimizer"), ("convnext", "convnext_optimizer")):
        groups = g[optimizer].param_groups
        assert [group["weight_decay"] for group in groups] == [0.0, 0.05]
        names = {id(p): n for n, p in g[model].named_parameters()}
        for p in groups[0]["params"]:
            assert p.ndim <= 1 or "relative_position_bias_table" in names[id(p)]
        assert all(p.ndim > 1 and "table" not in names[id(p)] for p in groups[1]["params"])
        assert sum(len(group["params"]) for group in groups) == len(names)
    assert g["swin_group_sizes"] == [44, 19] and g["convnext_group_sizes"] == [33, 15]
    # a checkpoint without the index buffers restores the same model
    assert g["restored_difference"] == 0.0
    missing = g["load_result"].missing_keys
    assert len(missing) == 4 and all(k.endswith("relative_position_index") for k in missing)
    assert g["load_result"].unexpected_keys == []


def test_fixed_results_match_torch():
    g, t = _run(SCRIPT), _run_torch(SCRIPT)
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    # gradients span orders of magnitude inside a tensor: the small entries carry the large
    # ones' rounding
    for key in GRAD_KEYS:
        mine, ref = ours.pop(key), theirs.pop(key)
        assert mine.keys() == ref.keys()
        for name in ref:
            _close_scaled(mine[name], ref[name])
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)
    # bf16 autocast: within one bfloat16 step of the largest logit
    for name in ("swin", "convnext"):
        ref = t["amp_results"][name].numpy()
        _close(g["amp_results"][name], ref, rtol=0, atol=2.0 ** -8 * np.abs(ref).max())


def test_first_losses_and_schedules_match_torch():
    g, t = _run(SCRIPT), _run_torch(SCRIPT)
    _close(g["swin_losses"][:24], t["swin_losses"][:24], rtol=1e-5, atol=0)
    _close(g["convnext_losses"][:24], t["convnext_losses"][:24], rtol=1e-5, atol=0)
    assert g["swin_lrs"] == pytest.approx(t["swin_lrs"], rel=1e-12)
    assert g["convnext_lrs"] == pytest.approx(t["convnext_lrs"], rel=1e-12)
    assert [kind for kind, _ in g["mix_history"]] == [kind for kind, _ in t["mix_history"]]
    _close([lam for _, lam in g["mix_history"]], [lam for _, lam in t["mix_history"]],
           rtol=1e-6, atol=0)
    assert g["class_counts"].tolist() == t["class_counts"].tolist()
    assert g["swin_state_keys"] == t["swin_state_keys"]
    assert g["swin_buffers"] == t["swin_buffers"]
    assert g["swin_block_repr"] == t["swin_block_repr"]
    assert g["load_result"].missing_keys == t["load_result"].missing_keys
    assert (g["swin_n_params"], g["convnext_n_params"]) == (t["swin_n_params"],
                                                            t["convnext_n_params"])
    assert g["per_sample_values"] == t["per_sample_values"]
