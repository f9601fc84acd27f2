"""Set K of the user-style scripts, written for these tests in the way such PyTorch code is
commonly written (not copies of public code): an nn.Transformer number-word translator, a
PointNet classifier/segmenter and an EdgeConv (DGCNN-style) classifier, run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that training lowered the loss and learned (the reversed number words
translate, the shapes classify), that the masks, the padding collate, the positional table and
the spatial transformers' identity are as the code builds them, and, where torch is installed,
that the deterministic parts (fixed-weight forwards, losses, gradients, Adam/SGD steps,
BatchNorm statistics, greedy decoding) equal the same script's with ``import torch``.
"""

import math
import os

import numpy as np

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested


def _close_after_adam(ours: dict, theirs: dict, grads: dict, noise: float, bound: float,
                      **tol) -> None:
    """Parameters after Adam steps agree where the first gradient stands above ``noise``.

    A gradient that is zero but for rounding (attention's key bias: softmax ignores a shift of
    all scores) gives Adam, which divides by the gradient's own size, a step of noise's sign, so
    there the two libraries may differ by up to ``bound`` (the steps' sizes), and no more.
    """
    assert ours.keys() == theirs.keys() == grads.keys()
    checked = total = 0
    for name in theirs:
        a, b = np.asarray(ours[name]), np.asarray(theirs[name])
        sure = np.abs(np.asarray(grads[name])) > noise
        checked, total = checked + sure.sum(), total + sure.size
        _close(a[sure], b[sure], **tol)
        assert np.abs(a - b).max() <= bound, name
    assert checked > 0.8 * total


# ------------------------------------------------ nn.Transformer number-word translator


def test_translation_transformer_learns_to_translate():
    g = _run("translation_transformer")
    torch = g["torch"]
    train, val = g["train_losses"], g["val_losses"]
    assert len(train) == len(val) == 14 and all(math.isfinite(v) for v in train + val)
    assert train[-1] < 0.5 * train[0] and val[-1] < 0.4 * val[0], (train, val)
    # the vocabularies: specials first, then by falling frequency; unknown words map to <unk>
    de, en = g["src_vocab"], g["tgt_vocab"]
    assert len(de) == len(en) == 14 and de.decode([0, 1, 2, 3]) == g["SPECIALS"]
    assert de.encode(["eins", "Iglu"]) == [de.ids["eins"], 0]
    # the collate: BOS ... EOS columns, padded with PAD to the longest, (seq, batch)
    src, tgt = g["collate_pairs"]([("eins zwei", "two one"), ("drei vier fuenf", "x")])
    assert src.dtype == torch.int64 and tuple(src.shape) == (5, 2)
    assert src[:, 0].tolist() == [2, de.ids["eins"], de.ids["zwei"], 3, 1]
    assert tgt[:, 1].tolist() == [2, 0, 3, 1]
    # the masks: -inf above the diagonal (as nn.Transformer's own), a bool src mask, padding
    # masks (batch, seq)
    mask = g["causal_mask"](3)
    assert mask.dtype == torch.float32
    assert mask.tolist() == [[0.0, -math.inf, -math.inf], [0.0, 0.0, -math.inf], [0.0, 0.0, 0.0]]
    assert torch.equal(g["causal_mask"](6), torch.nn.Transformer.generate_square_subsequent_mask(6))
    src_mask, tgt_mask, src_pad, tgt_pad = g["make_masks"](src, tgt[:-1])
    assert src_mask.dtype == torch.bool and not src_mask.any() and tuple(src_mask.shape) == (5, 5)
    assert tuple(tgt_mask.shape) == (3, 3) and tuple(src_pad.shape) == (2, 5)
    assert src_pad.tolist() == [[False] * 4 + [True], [False] * 5]
    assert tgt_pad.tolist() == [[False] * 3, [False, False, False]]
    # the positional table is a buffer: in the state_dict, not a parameter, sin/cos interleaved
    model = g["model"]
    pe = model.positions.table
    assert "positions.table" in model.state_dict()
    assert all("table" not in n for n, _ in model.named_parameters())
    assert tuple(pe.shape) == (5000, 1, 32) and not pe.requires_grad
    pos, k = np.arange(5000)[:, None], np.arange(0, 32, 2)[None]
    angle = pos * np.exp(-k * math.log(10000) / 32)
    _close(pe[:, 0, 0::2], np.sin(angle), rtol=1e-4, atol=1e-3)  # (float32 angles up to 5000)
    _close(pe[:50, 0, 1::2], np.cos(angle[:50]), rtol=1e-5, atol=1e-5)
    # the trained model reverses and maps the number words
    words = g["translation"].split()
    assert words[0] == "nine" and set(words) <= {"nine", "one", "seven", "three"}, words
    right = [g["translate"](model, de_text).split() == en_text.split()
             for de_text, en_text in g["valid_pairs"][:24]]
    assert sum(right) >= 9, sum(right)
    src = g["sentence_ids"]("drei eins", de).view(-1, 1)
    ys = g["greedy_decode"](model, src, torch.zeros(4, 4).type(torch.bool), 9, g["BOS"])
    assert ys.dtype == torch.int64 and ys.shape[1] == 1 and ys[0, 0].item() == g["BOS"]
    assert ys[-1, 0].item() == g["EOS"] and ys.shape[0] <= 9


def test_translation_transformer_fixed_weights_match_torch():
    g, t = _run("translation_transformer"), _run_torch("translation_transformer")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.pop("translation") == theirs.pop("translation")
    masks, their_masks = ours.pop("masks"), theirs.pop("masks")
    for name, mask in their_masks.items():
        assert str(masks[name].dtype).split(".")[-1] == str(mask.dtype).split(".")[-1], name
        np.testing.assert_array_equal(masks[name].numpy(), mask.numpy())
    _close(ours.pop("losses"), theirs.pop("losses"), rtol=1e-5)
    grads = theirs.pop("grads")
    _close_nested(ours.pop("grads"), grads, rtol=1e-4, atol=1e-7)
    # (rtol: Adam divides by the gradients' own size, which doubles their relative rounding)
    _close_after_adam(ours.pop("params"), theirs.pop("params"), grads, noise=1e-7,
                      bound=2 * 0.01, rtol=2e-5, atol=1e-6)
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)  # logits, encoder memory


# ------------------------------------------------------ PointNet on synthetic shape clouds


def test_pointnet_classifies_shapes():
    g = _run("pointnet")
    torch = g["torch"]
    # each part's output sizes (512 global features, a 32 x 32 feature transform)
    assert g["shapes"] == {"input transform": (4, 3, 3), "feature transform": (4, 32, 32),
                           "global features": (4, 512), "point features": (4, 544, 64),
                           "class scores": (4, 5), "part scores": (4, 64, 3)}
    losses = g["losses"]
    assert len(losses) == 10 * 6 and all(math.isfinite(v) for v in losses)
    assert np.mean(losses[-12:]) < 0.6 * np.mean(losses[:6]), (losses[:6], losses[-12:])
    assert np.mean(g["accuracies"][-12:]) > 0.7
    assert g["total_testset"] == 48 and g["total_correct"] / g["total_testset"] >= 0.8
    # StepLR(step_size=4, gamma=0.5), stepped at each epoch's start
    assert g["lrs"] == [1e-3] * 3 + [5e-4] * 4 + [2.5e-4] * 3
    # the state_dict saved after each epoch; the last is the trained classifier's
    out_dir = g["args"].out_dir
    assert sorted(os.listdir(out_dir)) == sorted(f"cls_model_{i}.pth" for i in range(10))
    state = torch.load(os.path.join(out_dir, "cls_model_9.pth"))
    assert list(state) == list(g["model"].state_dict())
    assert all(torch.equal(v, g["model"].state_dict()[k]) for k, v in state.items())
    # the dataset: (points, 3) float32 clouds, centred and scaled into the unit ball, (1,) labels
    points, cls = g["test_set"][17]
    assert points.dtype == torch.float32 and tuple(points.shape) == (64, 3)
    assert cls.dtype == torch.int64 and cls.tolist() == [1]
    _close(points.mean(0), np.zeros(3), atol=1e-6)
    assert abs(points.norm(dim=1).max().item() - 1.0) < 1e-6
    # the transforms add the identity: zero final layers give eye(3) / eye(k) for each cloud
    for k in (3, 8):
        net = g["TransformNet"](k)
        with torch.no_grad():
            net.to_matrix.weight.zero_()
            net.to_matrix.bias.zero_()
            out = net(torch.rand(2, k, 16))
        assert tuple(out.shape) == (2, k, k) and torch.equal(out, torch.eye(k).expand(2, k, k))
    # the regularizer: mean Frobenius norm of A A^T - I over the batch
    reg = g["orthogonality_penalty"]
    q, _ = torch.linalg.qr(torch.randn(3, 8, 8))
    assert reg(q).item() < 1e-5
    assert abs(reg(2 * torch.eye(8).expand(3, 8, 8)).item() - 3 * math.sqrt(8)) < 1e-5
    r = g["fixed_results"]
    assert tuple(r["pred"].shape) == (6, 3) and tuple(r["trans_feat"].shape) == (6, 32, 32)
    _close(r["pred"].exp().sum(1), np.ones(6), rtol=1e-12)
    assert tuple(r["seg_out"].shape) == (6, 64, 4) and r["pred"].dtype == torch.float64
    assert r["lrs"] == [5e-4, 2.5e-4] and r["losses"][1] < r["losses"][0]
    assert r["buffers"]["bn_a.num_batches_tracked"].item() == 2


def test_pointnet_fixed_weights_match_torch():
    g, t = _run("pointnet"), _run_torch("pointnet")
    assert g["shapes"] == t["shapes"] and g["lrs"] == t["lrs"]
    np.testing.assert_array_equal(g["fixed_points"].numpy(), t["fixed_points"].numpy())
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.pop("lrs") == theirs.pop("lrs")
    assert ours.pop("eval_choice").tolist() == theirs.pop("eval_choice").tolist()
    assert ours.pop("eval_correct") == theirs.pop("eval_correct")
    # (float64; the biases before a BatchNorm have zero gradients whose rounding noise, scaled by
    # Adam's eps=1e-8, moves them by ~1e-9)
    _close_nested(ours.pop("params"), theirs.pop("params"), rtol=1e-8, atol=1e-8)
    _close_nested(ours.pop("buffers"), theirs.pop("buffers"), rtol=1e-8, atol=1e-9)
    _close_nested(ours.pop("grads"), theirs.pop("grads"), rtol=1e-8, atol=1e-12)
    _close_nested(ours.pop("seg_grads"), theirs.pop("seg_grads"), rtol=1e-8, atol=1e-12)
    _close(ours.pop("eval_pred"), theirs.pop("eval_pred"), rtol=1e-8, atol=1e-9)  # (those biases)
    _close_nested(ours, theirs, rtol=1e-10, atol=1e-12)


# ------------------------------------------------- EdgeConv (DGCNN-style) on shape clouds


def test_dgcnn_learns_the_shapes_and_reloads_the_best():
    g = _run("dgcnn")
    torch = g["torch"]
    h = g["history"]
    assert len(h["train_loss"]) == 8 and all(math.isfinite(v) for v in h["train_loss"])
    assert np.mean(h["train_loss"][-2:]) < 0.85 * h["train_loss"][0], h["train_loss"]
    assert h["train_acc"][-1] >= 0.6 and max(h["test_acc"]) >= 0.5, h
    # CosineAnnealingLR(T_max=8, eta_min=lr) over SGD's lr * 100, stepped before each epoch
    lrs = [0.001 + (0.1 - 0.001) * (1 + math.cos(math.pi * e / 8)) / 2 for e in range(1, 9)]
    _close(h["lr"], lrs, rtol=1e-12)
    # test() reloads the best checkpoint (a DataParallel's "module." keys) and scores it again
    assert g["reloaded_acc"] == max(h["test_acc"])
    state = torch.load(g["args"].model_path)
    assert all(k.startswith("module.") for k in state)
    assert isinstance(g["trained"], torch.nn.DataParallel)
    # the neighbours: each point is its own nearest; the edge feature is (neighbour - x, x)
    r = g["fixed_results"]
    x = g["fixed_data"]
    idx, feature = r["idx"], r["graph_feature"]
    assert idx.dtype == torch.int64 and tuple(idx.shape) == (6, 16, 4)
    assert torch.equal(idx[..., 0], torch.arange(16).expand(6, 16))
    assert tuple(feature.shape) == (6, 6, 16, 4)
    pts = x.transpose(2, 1).numpy()
    near = np.take_along_axis(pts[:, :, None, :], idx.numpy()[..., None], axis=1)
    dist = ((pts[:, :, None, :] - pts[:, None, :, :]) ** 2).sum(-1)
    np.testing.assert_allclose(np.take_along_axis(dist, idx.numpy(), -1),
                               np.sort(dist, -1)[..., :4], rtol=1e-12, atol=1e-12)
    _close(feature[:, 3:].permute(0, 2, 3, 1), np.repeat(pts[:, :, None], 4, 2), rtol=0, atol=0)
    gathered = pts[np.arange(6)[:, None, None], idx.numpy()]
    _close(feature[:, :3].permute(0, 2, 3, 1), gathered - pts[:, :, None], rtol=1e-12)
    assert near.shape == (6, 16, 4, 3)
    # the loss: cross-entropy against labels smoothed to 0.8 / 0.1 (three classes)
    logits, label = torch.randn(5, 3), torch.tensor([0, 2, 1, 1, 0])
    smooth = torch.full((5, 3), 0.1).scatter(1, label.view(-1, 1), 0.8)
    want = -(smooth * torch.log_softmax(logits, 1)).sum(1).mean()
    loss = g["smoothed_cross_entropy"]
    assert abs(loss(logits, label).item() - want.item()) < 1e-6
    assert abs(loss(logits, label, smoothing=False).item()
               - torch.nn.functional.cross_entropy(logits, label).item()) < 1e-6
    _close(r["lrs"], [0.0505, 0.001], rtol=1e-12)
    assert r["losses"][1] < r["losses"][0]
    assert tuple(r["baseline_logits"].shape) == (6, 3) and r["logits"].dtype == torch.float64


def test_dgcnn_fixed_weights_match_torch():
    g, t = _run("dgcnn"), _run_torch("dgcnn")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.pop("keys") == theirs.pop("keys")
    assert ours.pop("lrs") == theirs.pop("lrs")
    np.testing.assert_array_equal(ours.pop("idx").numpy(), theirs.pop("idx").numpy())
    _close_nested(ours.pop("grads"), theirs.pop("grads"), rtol=1e-9, atol=1e-12)
    _close_nested(ours, theirs, rtol=1e-9, atol=1e-12)  # (float64)
