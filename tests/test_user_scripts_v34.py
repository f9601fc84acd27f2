"""Scripts written for these tests in the way common PyTorch code of two kinds is written (set
V34: a small ResNet trained with mixup/CutMix and averaged with SWA and an EMA as torchvision's
models and classification references and the SWA tutorials write them, and a capsule network
with dynamic routing plus a self-routing layer as public CapsNet code writes them), run on
jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that the ResNet learns the synthetic images above chance, that the SWA
average is the mean of its snapshots and the EMAs follow their recurrence, that ``update_bn``
recomputes the BatchNorm statistics a manual pass computes, that checkpoints round-trip through
``torch.save``/``torch.load``; that the capsule network classifies digits above chance, that
capsule lengths lie in [0, 1) and routing coefficients sum to one, that squash and routing pass
gradcheck in float64; and, where torch is installed, that the fixed-weight parts and the first
training losses equal the same script's with ``import torch``.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run


def _close_nested_scaled(ours, theirs, rtol=1e-5):
    """Two results of the same structure are close, leaf by leaf: to rtol of each entry or of
    the leaf's largest entry (the capsule network's gradients are ~1e-10 at its initial
    weights: an absolute tolerance would not compare them)."""
    if isinstance(theirs, dict):
        assert ours.keys() == theirs.keys()
        for key in theirs:
            _close_nested_scaled(ours[key], theirs[key], rtol)
    else:
        theirs_np = np.asarray(theirs, dtype=np.float64)
        ours_np = np.asarray(ours, dtype=np.float64)
        assert ours_np.shape == theirs_np.shape
        scale = float(np.abs(theirs_np).max()) if theirs_np.size else 0.0
        _close(ours_np, theirs_np, rtol=rtol, atol=rtol * scale)


def _params(module):
    return [p.detach().numpy() for p in module.parameters()]


# ------------------------------------------------------------- ResNet, mixup, SWA, EMA


def test_resnet_mixup_learns_above_chance():
    g = _run("swa_mixup_resnet")
    losses = g["losses"]
    assert len(losses) == (g["epochs"] + g["swa_epochs"]) * len(g["train_loader"]) == 80
    assert losses[0] > 0.9 * math.log(4)
    assert np.mean(losses[-8:]) < 0.85 * np.mean(losses[:8])
    # four classes: chance is 0.25
    assert g["accuracy"] > 0.6 and g["swa_accuracy"] > 0.6 and g["ema_accuracy"] > 0.6
    # the mixed label-smoothed CE is the soft-target CE of the mixed smoothed targets
    _close(g["soft_losses"], losses, rtol=1e-5, atol=0)
    mixed = g["fixed_results"]["mixed_losses"]
    _close(mixed[1:], [mixed[0]] * 2, rtol=1e-6, atol=0)
    # the parameter groups: no decay on BatchNorm and biases
    groups = g["optimizer"].param_groups
    assert [group["weight_decay"] for group in groups] == [5e-4, 0.0]
    assert all(p.ndim == 4 or p.ndim == 2 for p in groups[0]["params"])
    assert all(p.ndim == 1 for p in groups[1]["params"])
    assert sum(len(group["params"]) for group in groups) == len(list(g["model"].parameters()))
    assert groups[0]["nesterov"] and groups[1]["nesterov"]


def test_resnet_init_mixup_cutmix_and_schedules():
    g = _run("swa_mixup_resnet")
    assert g["zero_gamma"]
    assert g["init_std"] == pytest.approx(math.sqrt(2 / (8 * 9)), rel=0.15)  # fan_out, relu
    # CutMix pasted one box and lambda is the kept fraction of the image
    rows, cols = g["box_rows"].tolist(), g["box_cols"].tolist()
    assert rows == list(range(rows[0], rows[-1] + 1)) and cols == list(range(cols[0],
                                                                             cols[-1] + 1))
    lam_cut = g["fixed_results"]["mix_lams"][1]
    assert lam_cut == pytest.approx(1 - len(rows) * len(cols) / 144)
    assert 0 < g["fixed_results"]["mix_lams"][0] < 1
    # OneCycleLR: from max_lr / 25 up to max_lr, down to max_lr / 25e4; momentum cycles back
    lrs, momentums = g["lrs"], g["momentums"]
    assert lrs[0] == pytest.approx(0.2 / 25) and max(lrs) == pytest.approx(0.2)
    assert lrs[-1] == pytest.approx(0.2 / 25 / 1e4, rel=0.5)
    assert momentums[0] == pytest.approx(0.95) and min(momentums) == pytest.approx(0.85)
    assert momentums[lrs.index(max(lrs))] == pytest.approx(0.85)
    # SequentialLR: three warm-up steps from 0.1x, then cosine to eta_min, per group
    seq = np.array(g["fixed_results"]["sequential_lrs"])
    _close(seq[:3, 0], [0.01, 0.04, 0.07], rtol=1e-9)
    _close(seq[:, 1], seq[:, 0] / 2, rtol=0.05, atol=1e-4)
    assert seq[3, 0] == pytest.approx(0.1) and seq[-1, 0] == pytest.approx(
        1e-4 + (0.1 - 1e-4) * (1 + math.cos(math.pi * 6 / 7)) / 2)
    # SWALR annealed every group to swa_lr
    assert g["swa_lrs"][-1] == [0.02, 0.02]


def test_swa_average_is_the_mean_of_the_snapshots_and_emas_follow_the_recurrence():
    g = _run("swa_mixup_resnet")
    assert g["n_averaged"] == len(g["swa_snapshots"]) == g["swa_epochs"]
    swa = _params(g["swa_model"].module)
    assert len(swa) == len(g["swa_mean"])
    for ours, mean in zip(swa, g["swa_mean"]):
        _close(ours, mean, rtol=1e-5, atol=1e-6)
    # the SWA weights are not the last weights
    last = [p.numpy() for p in g["swa_snapshots"][-1]]
    assert max(float(np.abs(a - b).max()) for a, b in zip(swa, last)) > 1e-3
    # EMA with use_buffers=True: parameters and buffers (BN statistics, and the batch counters
    # in integer arithmetic) follow ema = decay * ema + (1 - decay) * current
    ema_module = g["ema_model"].module
    ema = [t.detach() for t in list(ema_module.parameters()) + list(ema_module.buffers())]
    assert len(ema) == len(g["manual_ema"])
    for ours, manual in zip(ema, g["manual_ema"]):
        if ours.is_floating_point():
            _close(ours, manual, rtol=1e-5, atol=1e-6)
        else:
            assert ours.tolist() == manual.tolist()
    counters = [int(b) for n, b in ema_module.named_buffers() if n.endswith("num_batches_tracked")]
    model_counters = [int(b) for n, b in g["model"].named_buffers()
                      if n.endswith("num_batches_tracked")]
    assert 0 < counters[0] < model_counters[0] == 80
    # avg_fn (one tensor at a time) and multi_avg_fn (lists) give the same EMA
    for ours, theirs in zip(_params(g["ema_fn_model"]), _params(ema_module)):
        _close(ours, theirs, rtol=1e-5, atol=1e-6)
    # without use_buffers, the SWA model kept the model's buffers until update_bn
    assert g["buffers_synced"]


def test_update_bn_recomputes_the_batchnorm_statistics():
    g = _run("swa_mixup_resnet")
    manual, swa_bn = g["manual_bn"], g["swa_bn"]
    assert manual.keys() == swa_bn.keys() and len(manual) == 6
    for name, (mean, var) in manual.items():
        running_mean, running_var, batches, momentum = swa_bn[name]
        _close(running_mean, mean, rtol=1e-5, atol=1e-6)
        _close(running_var, var, rtol=1e-5, atol=1e-6)
        assert batches == 6 and momentum == 0.1  # 256 images in batches of 48; restored
    # the recomputed statistics differ from the model's (a running average over training)
    model_mean = g["model"].layer1[0].bn1.running_mean.numpy()
    assert np.abs(model_mean - manual["layer1.0.bn1"][0].numpy()).max() > 1e-3


def test_checkpoints_round_trip_through_bytesio():
    g = _run("swa_mixup_resnet")
    keys = g["state_keys"]
    assert "n_averaged" in keys and all(k == "n_averaged" or k.startswith("module.")
                                        for k in keys)
    assert "module.layer2.0.downsample.1.running_var" in keys
    assert int(g["restored"].n_averaged) == g["n_averaged"]
    _close(g["restored_logits"], g["swa_logits"], rtol=0, atol=0)
    assert g["momentum_buffers_equal"]
    for ours, theirs in zip(_params(g["restored"]), _params(g["swa_model"])):
        assert np.array_equal(ours, theirs)


def test_swalr_state_resumes_from_a_default_torch_load():
    g = _run("swa_mixup_resnet")
    # torch's SWALR.state_dict keeps the strategy's name, not the function: the checkpoint
    # loads with weights_only, and load_state_dict restores the cosine annealing
    assert g["scheduler_checkpoint_error"] is None
    assert g["resumed_lrs"] == pytest.approx(g["continued_lrs"], rel=1e-12)


def test_resnet_fixed_results_match_torch():
    g, t = _run("swa_mixup_resnet"), _run_torch("swa_mixup_resnet")
    _close_nested_scaled(g["fixed_results"], t["fixed_results"])
    assert g["init_std"] == pytest.approx(t["init_std"], rel=1e-6)


def test_resnet_first_losses_match_torch():
    g, t = _run("swa_mixup_resnet"), _run_torch("swa_mixup_resnet")
    _close(g["losses"][:8], t["losses"][:8], rtol=1e-5, atol=0)
    _close(g["soft_losses"][:8], t["soft_losses"][:8], rtol=1e-5, atol=0)
    assert g["lrs"] == pytest.approx(t["lrs"], rel=1e-12)
    assert g["momentums"] == pytest.approx(t["momentums"], rel=1e-12)
    _close(g["swa_lrs"], t["swa_lrs"], rtol=1e-12, atol=0)
    assert g["continued_lrs"] == pytest.approx(t["continued_lrs"], rel=1e-12)


# ------------------------------------------------------------------ capsules and routing


def test_capsnet_learns_digits_above_chance():
    g = _run("capsule_routing")
    losses, margins = g["losses"], g["margins"]
    assert len(losses) == g["epochs"] * len(g["train_loader"]) == 60
    assert np.mean(losses[-10:]) < 0.35 * np.mean(losses[:5])
    assert np.mean(margins[-10:]) < 0.35 * np.mean(margins[:5])
    assert g["accuracy"] > 0.7  # ten classes: chance is 0.1
    # the self-routing network learns too, more slowly
    sr_losses = g["sr_losses"]
    assert len(sr_losses) == 40 and np.mean(sr_losses[-10:]) < 0.8 * np.mean(sr_losses[:5])
    assert g["sr_accuracy"] > 0.3


def test_capsule_lengths_and_routing_coefficients():
    g = _run("capsule_routing")
    r = g["fixed_results"]
    for lengths in (g["test_lengths"], r["lengths"]):
        lengths = lengths.numpy()
        assert lengths.min() >= 0 and lengths.max() < 1
    assert g["test_lengths"].numpy().max() > 0.5  # trained capsules are long for their class
    # each input capsule's coupling coefficients over the output capsules sum to one
    coupling = g["coupling"].numpy()
    assert coupling.shape == (500, 10, 128) and coupling.min() >= 0
    _close(coupling.sum(axis=1), np.ones((500, 128)), rtol=0, atol=1e-5)
    _close(r["routing_c"].numpy().sum(axis=1), np.ones((2, 6)), rtol=0, atol=1e-12)
    # squash: norm^2 / (1 + norm^2) in the same direction; the zero vector stays zero
    s, squashed = g["s"].numpy(), r["squash"].numpy()
    norm = np.linalg.norm(s, axis=-1, keepdims=True)
    _close(np.linalg.norm(squashed, axis=-1, keepdims=True), norm ** 2 / (1 + norm ** 2),
           rtol=1e-7, atol=1e-12)
    assert np.isfinite(squashed).all() and not squashed[0, 0].any()
    # masks: one-hot rows by indexing and by index_select; reconstructions are sigmoid outputs
    assert g["masks_agree"]
    reconstruction = r["reconstruction"].numpy()
    assert reconstruction.shape == (6, 1, 8, 8)
    assert 0 < reconstruction.min() and reconstruction.max() < 1
    # self-routing: coefficients sum to one, activations are weighted means of the inputs'
    sr = r["self_routing"]
    _close(sr["c"].numpy().sum(axis=-1), np.ones((2, 5)), rtol=0, atol=1e-12)
    act = sr["act"].numpy()
    _close(act.sum(axis=-1), np.ones(2), rtol=0, atol=1e-12)  # sum_j c_ij = 1
    assert g["data_source"] == "sklearn"


def test_routing_gradients_and_gradcheck():
    g = _run("capsule_routing")
    assert g["gradcheck_results"] == {"squash": True, "routing": True,
                                      "predict_and_route": True, "self_routing": True}
    # detaching u_hat in the inner iterations leaves the output and changes the gradient
    assert g["routing_detach_forward_difference"] == 0.0
    assert g["detach_forward_difference"] == 0.0
    r = g["fixed_results"]
    for key in "uW":
        full, detached = r["routing_grads"][key].numpy(), r["detached_routing_grads"][key].numpy()
        assert np.abs(full - detached).max() > 0.1 * np.abs(full).max()
    assert g["detach_grad_difference"] > 1e-6


def test_capsule_fixed_results_match_torch():
    g, t = _run("capsule_routing"), _run_torch("capsule_routing")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    float64 = ("squash", "routing_v", "routing_c", "routing_grads", "detached_routing_grads",
               "self_routing")
    for key in float64:
        a, b = ours.pop(key), theirs.pop(key)
        if isinstance(b, dict):
            assert a.keys() == b.keys()
            for k in b:
                _close(a[k], b[k], rtol=1e-10, atol=1e-13)
        else:
            _close(a, b, rtol=1e-10, atol=1e-13)
    _close_nested_scaled(ours, theirs)


def test_capsule_first_losses_match_torch():
    g, t = _run("capsule_routing"), _run_torch("capsule_routing")
    for key in ("losses", "margins", "recons", "sr_losses"):
        _close(g[key][:10], t[key][:10], rtol=1e-5, atol=0)
    assert g["accuracy"] == pytest.approx(t["accuracy"], abs=0.01)
