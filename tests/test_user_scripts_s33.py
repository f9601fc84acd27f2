"""Scripts written for these tests in the way common PyTorch code of two kinds is written (set
S33: a tiny single-stage object detector as torchvision's ops and detection references, DETR and
YOLO re-implementations write it, and a tiny BERT pre-trained with masked-language-model and
next-sentence objectives as HuggingFace's ``modeling_bert`` and minimal BERT re-implementations
write it), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that the detector's focal, smooth-L1 and GIoU losses fell and its
decoded detections overlap the target rectangles, that the two NMS forms and the two batched NMS
forms agree, the box conversions round-trip and the matchers respect their thresholds; that the
BERT's MLM loss fell and its masked-token accuracy rose, the 80/10/10 masking, the extended
attention mask, the tied decoder, the weight-decay groups and the warm-up schedule behave as
written, padded keys get exactly zero attention and the eager, minimal and sdpa attentions agree;
and, where torch is installed, that the fixed-weight parts and the first training losses equal
the same script's with ``import torch``.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

# ------------------------------------------------------------------ the box detector


def test_box_detector_learns_the_rectangles():
    g = _run("box_detection_toy")
    losses = g["losses"]
    assert len(losses) == g["num_epochs"] * 160 // 8 and np.isfinite(losses).all()
    assert np.mean(losses[-20:]) < 0.4 * losses[0], (losses[0], np.mean(losses[-20:]))
    for key in ("cls_losses", "reg_losses", "giou_losses"):
        assert np.mean(g[key][-20:]) < 0.6 * np.mean(g[key][:5]), key
    # before training the prior bias keeps every score under the threshold: no detections
    assert g["initial_mean_iou"] == 0 and g["initial_recall"] == 0
    assert g["mean_iou"] > 0.45 and g["recall"] > 0.6, (g["mean_iou"], g["recall"])
    for det in g["detections"]:
        assert det["boxes"].shape[0] <= 5 and det["boxes"].shape[1] == 4
        scores = det["scores"]
        assert (scores[:-1] >= scores[1:]).all().item() and (scores > 0.3).all().item()
        boxes = det["boxes"]
        assert (boxes >= 0).all().item() and (boxes <= 32).all().item()


def test_box_detector_ops_agree_with_each_other():
    g = _run("box_detection_toy")
    torch = g["torch"]
    r = g["fixed_results"]
    boxes = g["fixed_boxes"].numpy()
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    _close(r["area"], area)
    iou = r["iou"].numpy()
    _close(np.diag(iou), np.ones(6))
    _close(iou, iou.T)
    assert iou[0, 1] == pytest.approx(81 / 119) and iou[0, 2] == 0
    # GIoU: the matrix's diagonal is the pairwise GIoU, the loss is one minus it
    _close(r["giou_loss"], 1 - np.diag(r["giou"].numpy()), rtol=1e-5, atol=1e-6)
    assert (r["giou"].numpy() <= iou[:, ::-1] + 1e-6).all() and r["giou"].min() >= -1
    _close(r["roundtrip"], boxes)
    _close(r["cxcywh"][:, 2:], boxes[:, 2:] - boxes[:, :2])
    # the NMS loop and the IoU-matrix form keep the same boxes; so do both batched forms
    # box 0 and box 3 overlap box 1 (IoU 0.68, 0.61), box 2 overlaps box 4 (IoU 0.67)
    assert r["nms"].tolist() == r["nms_matrix"].tolist() == [1, 4, 5]
    # box 2 is of the other class than box 4: kept by the batched forms
    assert r["batched_nms"].tolist() == r["batched_nms_vanilla"].tolist() == [1, 4, 2, 5]
    assert r["empty_nms"].dtype == torch.int64 and r["empty_nms"].numel() == 0
    assert r["empty_batched_nms"].numel() == 0 and tuple(r["empty_iou"].shape) == (0, 6)
    assert r["labels_unique"].tolist() == [0, 1] and r["labels_counts"].tolist() == [4, 2]
    assert r["clipped"].max() == 32 and r["clipped"].min() == 5
    # anchors: 8x8 positions, 6 shapes each, centred on the stride grid
    anchors = r["anchors"].numpy()
    assert anchors.shape == (8 * 8 * 6, 4)
    _close((anchors[:, :2] + anchors[:, 2:]).reshape(64, 6, 2)[:, 0] / 2,
           np.stack(np.meshgrid(np.arange(8) * 4 + 2, np.arange(8) * 4 + 2), -1).reshape(64, 2))
    # the matcher: foreground anchors reach 0.5 IoU unless they are a gt's best anchor
    anchor_iou = g["anchor_iou"].numpy()
    matches, strict = r["matches"].numpy(), r["matches_strict"].numpy()
    best = anchor_iou.max(0)
    assert ((strict >= 0) == (best >= 0.5)).all()
    assert ((strict == -1) == (best < 0.4)).all() and ((strict == -2) == (best >= 0.4)
                                                       & (best < 0.5)).all()
    fg = strict >= 0
    assert (matches[fg] == strict[fg]).all() and set(np.flatnonzero(matches >= 0)) >= set(
        np.flatnonzero(fg))
    for gt in range(5):  # every gt has an anchor, its best one
        assert matches[anchor_iou[gt].argmax()] >= 0
    # the top-k matcher: each gt's anchors carry its k best IoUs
    _close(r["topk_vals"], -np.sort(-anchor_iou, axis=1)[:, :3])
    _close(r["decoded"], boxes[[0, 2, 4]], rtol=1e-5, atol=1e-5)
    # the focal loss is the written formula
    x = np.linspace(-4, 4, 12).reshape(6, 2)
    t = g["focal_targets"].numpy()
    p = 1 / (1 + np.exp(-x))
    ce = -(t * np.log(p) + (1 - t) * np.log(1 - p))
    p_t = p * t + (1 - p) * (1 - t)
    focal = (0.25 * t + 0.75 * (1 - t)) * ce * (1 - p_t) ** 2
    _close(r["focal"], focal, rtol=1e-5, atol=1e-7)
    assert set(r["losses"]) == {"classification", "bbox_regression", "giou"}
    assert len(r["target_boxes"]) == 4


def test_box_detector_fixed_weights_match_torch():
    g, t = _run("box_detection_toy"), _run_torch("box_detection_toy")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.keys() == theirs.keys()
    for key in ("nms", "nms_matrix", "batched_nms", "batched_nms_vanilla", "matches",
                "matches_strict", "labels_unique", "labels_counts", "empty_nms"):
        assert ours.pop(key).tolist() == theirs.pop(key).tolist(), key
    # tied IoUs: torch's CPU topk picks among tied anchors by its partial sort; so does jitgrad
    assert ours.pop("topk_matches").tolist() == theirs.pop("topk_matches").tolist()
    mine, other = ours.pop("grads"), theirs.pop("grads")
    for name in other:
        # BatchNorm's batch statistics sum over the batch: absolute tolerance on the scale
        scale = other[name].abs().max().item()
        _close(mine[name], other[name], rtol=1e-5, atol=1e-5 * max(scale, 1e-3))
    assert ours.pop("losses") == pytest.approx(theirs.pop("losses"), rel=1e-5)
    for mine, other in zip(ours.pop("target_boxes"), theirs.pop("target_boxes")):
        _close(mine, other, rtol=0, atol=0)
    for key in ("giou_loss_sum",):
        assert ours.pop(key) == pytest.approx(theirs.pop(key), rel=1e-6)
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)


def test_box_detector_first_losses_match_torch():
    g, t = _run("box_detection_toy"), _run_torch("box_detection_toy")
    _close(g["losses"][:8], t["losses"][:8], rtol=1e-5, atol=0)
    _close(g["cls_losses"][:8], t["cls_losses"][:8], rtol=1e-5, atol=0)
    _close(g["giou_losses"][:8], t["giou_losses"][:8], rtol=1e-5, atol=0)
    assert g["initial_mean_iou"] == t["initial_mean_iou"]


# ------------------------------------------------------------------ BERT pre-training


def test_bert_mlm_learns_the_corpus():
    g = _run("bert_mlm")
    losses, accuracies = g["losses"], g["mlm_accuracies"]
    assert len(losses) == g["num_training_steps"] == 12 * 16 and np.isfinite(losses).all()
    # MLM over 21 tokens plus NSP over 2 classes: it starts near log(21) + log(2)
    assert losses[0] == pytest.approx(math.log(21) + math.log(2), abs=0.1)
    assert np.mean(losses[-16:]) < 0.75 * losses[0], (losses[0], np.mean(losses[-16:]))
    assert np.mean(accuracies[-16:]) > np.mean(accuracies[:16]) + 0.2
    assert g["initial_mlm_accuracy"] < 0.15 and g["final_mlm_accuracy"] > 0.35
    # warm-up to the peak in 10 steps, then linear decay to zero
    lrs = np.array(g["lrs"])
    assert lrs[8] == pytest.approx(5e-3 * 9 / 10) and lrs.max() == pytest.approx(5e-3)
    assert lrs[-1] == pytest.approx(0.0, abs=1e-12) and (np.diff(lrs[10:]) < 0).all()
    # padded keys get exactly zero attention; each query's probabilities sum to one
    assert g["max_pad_attention"] == 0.0
    _close(g["row_sums"], np.ones(tuple(g["row_sums"].shape)), rtol=1e-5)
    assert len(g["val_attentions"]) == 2 and tuple(g["val_attentions"][0].shape) == (128, 4, 20, 20)


def test_bert_fixed_parts_agree_with_each_other():
    g = _run("bert_mlm")
    torch = g["torch"]
    r = g["fixed_results"]
    model = g["fixed_model"]
    inputs, labels, original = r["inputs"], r["labels"], g["input_ids"][:4]
    # masking: labels keep the original token where masked, -100 elsewhere; specials never
    masked = labels != -100
    assert (labels[masked] == original[masked]).all().item()
    assert (inputs[~masked] == original[~masked]).all().item()
    assert not masked[original < 5].any().item() and masked.any().item()
    # the extended mask: 0 on tokens, finfo.min on padding, shape [batch, 1, 1, seq]
    ext = r["extended_mask"]
    assert tuple(ext.shape) == (4, 1, 1, 20)
    pad = (g["attention_mask"][:4] == 0)[:, None, None, :]
    assert (ext[pad] == torch.finfo(torch.float32).min).all().item()
    assert (ext[~pad] == 0).all().item()
    assert r["half_extended_mask"].dtype == torch.float16
    assert r["half_extended_mask"].min().item() == -65504.0
    # default token types are the zero buffer: here sentence B differs
    assert not torch.equal(r["default_embeddings"], r["embeddings"])
    _close(r["gelu_tanh"], r["gelu_new"], rtol=1e-6, atol=1e-7)
    x = np.linspace(-4, 4, 17)
    _close(r["gelu"], x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2))), rtol=1e-4,
           atol=1e-6)
    # the eager attention, the minimal masked_fill one and sdpa agree
    _close(r["minimal_context"], r["hf_context"], rtol=1e-5, atol=1e-6)
    _close(r["minimal_probs"], r["hf_probs"], rtol=1e-5, atol=1e-7)
    _close(r["hf_probs"], r["attentions"][0], rtol=1e-5, atol=1e-7)
    sdpa = r["sdpa_context"]
    assert tuple(sdpa.shape) == (4, 4, 20, 8)
    _close(sdpa.permute(0, 2, 1, 3).reshape(4, 20, 32), r["minimal_context"], rtol=1e-5, atol=1e-6)
    _close(r["sdpa_bool_context"], r["sdpa_context"], rtol=1e-5, atol=1e-6)
    assert len(r["hidden_states"]) == 3
    # the decoder weight is the word embedding; the bias a separate parameter
    decoder = model.cls.predictions.decoder
    assert decoder.weight is model.embeddings.word_embeddings.weight
    assert decoder.bias is model.cls.predictions.bias
    names = [n for n, _ in model.named_parameters()]
    assert "cls.predictions.decoder.weight" not in names and len(names) == len(set(names))
    assert "cls.predictions.decoder.weight" in g["state_dict_keys"]
    assert "embeddings.position_ids" not in g["state_dict_keys"]
    assert g["buffer_names"] == ["embeddings.position_ids", "embeddings.token_type_ids"]
    # the weight-decay groups: no decay for biases and LayerNorm weights
    decay = g["decay_names"]
    assert decay and all("bias" not in n and "LayerNorm" not in n for n in decay)
    assert "embeddings.word_embeddings.weight" in decay
    # the padding row of the word embeddings was zeroed by _init_weights, then trained
    assert g["model"].embeddings.word_embeddings.padding_idx == 0
    # three steps of the warm-up schedule (2 warm-up steps of 10): lr 0, 5e-4, 1e-3, then decay
    assert r["lrs"] == pytest.approx([1e-3 * 7 / 8] * 2)
    assert len(r["grad_norms"]) == 3 and all(n > 0 for n in r["grad_norms"])


def test_bert_fixed_weights_match_torch():
    g, t = _run("bert_mlm"), _run_torch("bert_mlm")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.keys() == theirs.keys()
    for key in ("inputs", "labels"):
        assert ours.pop(key).tolist() == theirs.pop(key).tolist(), key
    assert ours.pop("loss") == pytest.approx(theirs.pop("loss"), rel=1e-6)
    assert ours.pop("lrs") == theirs.pop("lrs")
    mine, other = ours.pop("grads"), theirs.pop("grads")
    assert list(mine) == list(other)
    for name in other:
        # the NSP and pooler gradients are sums over the batch of terms ~100x their result
        # (softmax - one-hot ~ 0.5 each), the key biases' gradients are zero up to rounding:
        # an absolute tolerance on the tensor's scale, floored at 1e-7
        scale = other[name].abs().max().item()
        _close(mine[name], other[name], rtol=1e-5, atol=1e-5 * max(scale, 1e-2))
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)
    assert g["state_dict_keys"] == t["state_dict_keys"]
    assert g["buffer_names"] == t["buffer_names"]


def test_bert_first_losses_match_torch():
    g, t = _run("bert_mlm"), _run_torch("bert_mlm")
    _close(g["losses"][:8], t["losses"][:8], rtol=1e-5, atol=0)
    assert g["mlm_accuracies"][:8] == t["mlm_accuracies"][:8]
    assert g["lrs"] == t["lrs"]
    assert g["initial_mlm_accuracy"] == t["initial_mlm_accuracy"]
