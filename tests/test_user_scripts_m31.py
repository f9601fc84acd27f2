"""Meta-learning written as PyTorch users write it (set M): MAML on sine regression, its inner
loop through ``autograd.grad(create_graph=True)`` and through torch.func's ``grad`` under
``vmap``, only the import changed, run on jitgrad.

As in the other sets, the script runs as ``__main__``; the tests read its globals: meta-training
lowered the loss and adaptation helps on new tasks, and, where torch is installed, the
fixed-weight meta-losses, first- and second-order meta-gradients, a Hessian-vector product, an
Adam meta-step and the vmapped torch.func meta-gradient equal the same script's on torch.
"""

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run


def test_maml_meta_trains_and_adapts():
    g = _run("maml_sine")
    losses = g["meta_losses"]
    assert len(losses) == 600 and np.isfinite(losses).all()
    assert np.mean(losses[-50:]) < np.mean(losses[:50]) / 3, (losses[:5], losses[-5:])
    assert np.mean(g["after"]) < np.mean(g["before"])
    r = g["fixed_results"]
    # second order differs from first order: the adaptation's Hessian term is there
    assert r["first_order_loss"] == r["second_order_loss"]
    diffs = [(a - b).abs().max().item() for a, b in
             zip(r["first_order_grads"], r["second_order_grads"])]
    assert max(diffs) > 1e-4
    # vmap over the tasks of the functional inner loop equals the Python loop over them
    for a, b in zip(r["func_grads"], r["looped_grads"]):
        _close(a, b, rtol=1e-5, atol=1e-6)


def test_maml_fixed_weights_match_torch():
    g, t = _run("maml_sine"), _run_torch("maml_sine")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    for key in ("second_order_loss", "first_order_loss"):
        assert ours.pop(key) == pytest.approx(theirs.pop(key), rel=1e-5)
    assert ours.keys() == theirs.keys()
    for key, tensors in theirs.items():  # (lists of the weights' tensors, each its own shape)
        tensors = [tensors] if hasattr(tensors, "shape") else tensors
        mine = [ours[key]] if hasattr(ours[key], "shape") else ours[key]
        assert len(mine) == len(tensors)
        for a, b in zip(mine, tensors):
            _close(a, b, rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------- a ViT on digits (F.unfold/fold)


def test_vit_digits_trains_with_warm_restarts():
    g = _run("vit_digits")
    losses, lrs = g["losses"], g["lrs"]
    iters = g["iters"]
    assert len(losses) == 6 * iters and np.isfinite(losses).all()
    assert np.mean(losses[-iters:]) < np.mean(losses[:iters]) - 0.5
    assert g["accuracies"][-1] > 0.7 and g["accuracies"][-1] > g["accuracies"][0]
    # warm restarts at epochs 2 and 6 (T_0=2, T_mult=2): the rate falls to eta_min, jumps back
    assert lrs[2 * iters - 1] < 2e-4 and lrs[2 * iters] > 2.5e-3 and lrs[-1] < 2e-4
    # biases, norms, the class token and position embedding are in the no-decay group
    groups = g["optimizer"].param_groups
    assert [grp["weight_decay"] for grp in groups] == [0.05, 0.0]
    assert {id(p) for p in groups[1]["params"]} >= {id(g["model"].cls_token),
                                                    id(g["model"].pos_embed)}
    assert all(p.ndim == 2 for p in groups[0]["params"])
    r = g["fixed_results"]
    # unfold's patches are fold's inverse here (non-overlapping 2x2 patches)
    torch = g["torch"]
    F = torch.nn.functional
    x = g["X"][:16]
    assert torch.equal(F.fold(r["patches"], (8, 8), 2, stride=2), x)
    assert tuple(r["patches"].shape) == (16, 4, 16)
    # the key projection's bias cannot change a softmax over keys: its gradient is rounding
    dim = 32
    for i in range(2):
        key_bias = r["grads"][f"encoder.layers.{i}.self_attn.in_proj_bias"][dim:2 * dim]
        assert key_bias.abs().max().item() < 1e-7


def test_vit_digits_fixed_weights_match_torch():
    # (torch's run leaves out the training: the fixed weights' results do not read it)
    g = _run("vit_digits")
    t = _run_torch("vit_digits", skip={"epochs, iters = 6, len(train_loader)":
                                       "epochs, iters = 0, len(train_loader)"})
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.pop("state_keys") == theirs.pop("state_keys")
    assert ours.pop("warm_lrs") == pytest.approx(theirs.pop("warm_lrs"), rel=1e-12)
    for key in ("loss", "recon_loss"):
        assert ours.pop(key) == pytest.approx(theirs.pop(key), rel=1e-5)
    for key in ("patches", "logits_eval", "logits", "recon"):
        _close(ours.pop(key), theirs.pop(key), rtol=1e-4, atol=1e-6)
    grads, steps = ours.pop("grads"), ours.pop("after_step")
    t_grads, t_steps = theirs.pop("grads"), theirs.pop("after_step")
    assert ours == theirs == {} and list(grads) == list(t_grads) == list(steps)
    for name in t_grads:
        _close(grads[name], t_grads[name], rtol=1e-4, atol=1e-7)
        # AdamW's first step is lr * g / (|g| + eps): where a gradient is rounding noise (the
        # key biases', exactly 0 in exact arithmetic) its sign, and the step, is noise too
        signal = np.abs(t_grads[name].numpy()) > 1e-7
        _close(steps[name].numpy()[signal], t_steps[name].numpy()[signal], rtol=1e-5, atol=1e-6)


# ------------------------------------------------- CTC on tones: stft features, packed GRU, SWA


def test_ctc_tones_trains_decodes_and_averages():
    g = _run("ctc_tones")
    torch = g["torch"]
    losses, per_epoch = g["losses"], len(g["train_loader"])
    assert len(losses) == g["epochs"] * per_epoch and np.isfinite(losses).all()
    assert np.mean(losses[-per_epoch:]) < 0.2 * np.mean(losses[:per_epoch])
    assert g["error_rates"][-1] < min(0.5, g["error_rates"][0])
    assert g["swa_error_rate"] < 0.6
    swa = g["swa_model"]
    assert swa.n_averaged.item() == g["epochs"] - g["swa_start"] == 2  # the last two epochs
    # update_bn reset and recomputed the averaged model's BatchNorm statistics
    bn = swa.module.conv[1]
    assert bn.num_batches_tracked.item() == per_epoch and bn.momentum == 0.1  # (restored)
    r = g["fixed_results"]
    # CTC's reductions: "mean" divides each loss by its target length, then averages
    none, lengths = r["ctc_none"], g["target_lengths"].to(torch.float32)
    _close(r["ctc_mean"], (none / lengths).mean(), rtol=1e-6)
    _close(r["ctc_sum"], none.sum(), rtol=1e-6)
    assert all(set(w) <= {1, 2, 3, 4} for w in r["decoded"])
    # the features of the padding frames are zero, and each utterance's valid ones normalized
    feats = r["features"]
    for i, n in enumerate(r["lengths"]):
        if n < feats.shape[1]:
            assert feats[i, n:].abs().max().item() == 0
        _close(feats[i, :n].mean(), 0.0, atol=1e-5)
        _close(feats[i, :n].std(unbiased=False), 1.0, rtol=1e-3)


def test_ctc_tones_fixed_weights_and_schedule_match_torch():
    g, t = _run("ctc_tones"), _run_torch("ctc_tones")
    assert g["lrs"] == pytest.approx(t["lrs"], rel=1e-6)  # warm-up, decay, then SWALR's anneal
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    for key in ("wave_lengths", "lengths", "decoded", "n_averaged"):
        assert ours.pop(key) == theirs.pop(key), key
    for key in ("grads", "averaged"):
        mine, other = ours.pop(key), theirs.pop(key)
        assert list(mine) == list(other)
        for name in other:
            _close(mine[name], other[name], rtol=1e-4, atol=1e-5)
    _close(ours.pop("wave_grad"), theirs.pop("wave_grad"), rtol=1e-4, atol=1e-4)
    for key in theirs:
        _close(ours[key], theirs[key], rtol=1e-5, atol=1e-5)
