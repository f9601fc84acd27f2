"""A script written for these tests in the way few-shot and meta-learning code for PyTorch is
written (set W35: Prototypical Networks on synthetic episodes, Reptile on sine regression, and a
hypernetwork whose generated weights a MAML-style inner loop adapts through torch.func), run on
jitgrad.

The script in tests/scripts/ runs as ``__main__``; these tests read what it computed from its
globals and assert that a seeded ``torch.Generator`` replays an episode, that the
Prototypical Network learns (training loss falls, held-out classes are classified better than
by an untrained embedding), that the hand-written, ``torch.cdist`` (both compute modes), batched
and vmapped distances agree, that Reptile's ``lerp_`` and ``p.data.add_`` outer steps agree and
that its meta-learned initialisation adapts faster; that the hypernetwork's weights give the
same outputs through ``functional_call``, ``F.linear`` and ``vmap``, that the second-order
meta-gradients by an ``autograd.grad`` loop, by ``vmap`` of ``torch.func.grad`` and by a nested
``torch.func.grad`` agree and differ from the first-order ones, and that the meta-training
lowers the loss; and, where torch is installed, that the fixed-weight parts and the first
training losses equal the same script's with ``import torch``.
"""

import numpy as np

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

SCRIPT = "protonet_hypernet"


def _close_scaled(ours, theirs, rtol=1e-5):
    """Close to rtol of each entry or of the tensor's largest entry."""
    scale = float(np.abs(np.asarray(theirs, dtype=np.float64)).max())
    _close(ours, theirs, rtol=rtol, atol=rtol * scale)


def _close_grads(ours, theirs, rtol=1e-5):
    """Gradients (a dict or a list of tensors) to rtol of each entry or of the largest entry of
    them all: the conv biases before BatchNorm have a gradient of zero in exact arithmetic
    (rounding leaves ~1e-8 of the other gradients' ~0.5), and small entries carry the rounding
    of the large ones."""
    if isinstance(theirs, dict):
        assert ours.keys() == theirs.keys()
        ours, theirs = list(ours.values()), list(theirs.values())
    assert len(ours) == len(theirs)
    scale = max(float(np.abs(np.asarray(t, dtype=np.float64)).max()) for t in theirs)
    for a, b in zip(ours, theirs):
        _close(a, b, rtol=rtol, atol=rtol * scale)


# ------------------------------------------------------------------- Prototypical Networks


def test_protonet_episodes_and_distances():
    g = _run(SCRIPT)
    assert g["episode_replayed"]  # Generator.get_state / set_state replays the episode
    assert len(set(g["episode_classes"])) == 5  # randperm: five distinct classes
    p = g["fixed_results"]["proto"]
    assert tuple(p["support"].shape) == (4, 3, 1, 8, 8)
    # squared distances by hand and by both cdist modes agree, and so do the gradients
    hand = p["hand"]
    assert tuple(hand["dists"].shape) == (8, 4)
    for mode in ("use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        _close(p[mode]["dists"], hand["dists"], rtol=1e-5, atol=1e-5)
        assert abs(p[mode]["loss"] - hand["loss"]) < 1e-5
        _close_grads(p[mode]["grads"], hand["grads"], rtol=1e-4)
    # the log-softmax/gather loss is cross-entropy over the negative squared distances
    assert abs(p["ce_loss"] - hand["loss"]) < 1e-5
    assert 0 <= p["cdist_p1"].min() and tuple(p["cosine_logits"].shape) == (8, 4)
    assert float(p["cosine_logits"].abs().max()) <= 1 + 1e-6
    # a batch of episodes: batched cdist, vmap by hand and vmap of cdist agree
    _close(p["vmap_logits"], p["batched_logits"], rtol=1e-5, atol=1e-5)
    _close(p["vmap_cdist_logits"], p["batched_logits"], rtol=1e-5, atol=1e-5)
    assert g["vmap_warnings"] == []  # (cdist batches without the per-sample loop)
    assert tuple(p["batched_ce"].shape) == (3, 8) and tuple(p["batched_acc"].shape) == (3,)


def test_protonet_learns_held_out_classes():
    g = _run(SCRIPT)
    losses, accs = g["proto_losses"], g["proto_accs"]
    assert len(losses) == 50
    assert np.mean(losses[:10]) > 1.5 and np.mean(losses[-10:]) < 0.4 * np.mean(losses[:10])
    assert np.mean(accs[-10:]) > 0.7 > np.mean(accs[:10])
    # five-way two-shot on the eight unseen classes: better than an untrained embedding
    assert g["test_acc"] > g["untrained_acc"] + 0.1 and g["test_acc"] > 0.6
    assert g["proto_lrs"] == [0.01 * 0.5 ** 2]  # StepLR halved twice in 50 episodes


def test_protonet_batchnorm_state():
    g = _run(SCRIPT)
    p = g["fixed_results"]["proto"]
    assert tuple(p["running_mean"].shape) == (16,) and tuple(p["running_var"].shape) == (16,)
    assert float(p["running_var"].min()) > 0
    assert tuple(p["eval_embedding"].shape) == (2, 64)  # Q=2; 16 channels of 2x2


# ---------------------------------------------------------------------------------- Reptile


def test_reptile_outer_steps_agree():
    g = _run(SCRIPT)
    r = g["fixed_results"]["reptile"]
    # lerp_(q, 0.5) and p.data.add_(q - p, alpha=0.5) are the same interpolation
    _close(r["serial_lerp"], r["serial_add"], rtol=1e-6, atol=1e-7)
    # each of the outer steps moved the weights, and the inner losses fell
    for name in ("serial_lerp", "batched_lerp", "adam"):
        assert float((r[name] - r["init"]).abs().max()) > 1e-3
    for losses in r["inner_losses"]:
        assert len(losses) == 4 and all(b < a for a, b in zip(losses, losses[1:]))
    # vector_to_parameters put the lerp result back into a copy of the model
    assert tuple(r["roundtrip"].shape) == (10, 1)
    assert g["deepcopy_independent"]


def test_reptile_meta_learns_an_initialisation():
    g = _run(SCRIPT)
    assert len(g["reptile_losses"]) == g["reptile_iters"] == 100
    before = np.array([b for b, _ in g["reptile_eval"]])
    after = np.array([a for _, a in g["reptile_eval"]])
    assert (after < before).all() and after.mean() < 0.4 * before.mean()
    # 32 steps from the Reptile weights beat 32 steps from a fresh network
    assert after.mean() < np.mean(g["scratch_eval"])


# ----------------------------------------------------------------------------- Hypernetwork


def test_hypernet_forms_agree():
    g = _run(SCRIPT)
    h = g["fixed_results"]["hyper"]
    assert h["shapes"] == {"fc1.weight": [3, 12, 1], "fc1.bias": [3, 12],
                           "fc2.weight": [3, 12, 12], "fc2.bias": [3, 12],
                           "out.weight": [3, 1, 12], "out.bias": [3, 1]}
    # functional_call (with the module's own buffer) equals the F.linear forward by hand
    _close(h["functional_call"], h["by_hand"], rtol=1e-6, atol=1e-7)
    _close(h["vmap_forward"][0], h["functional_call"], rtol=1e-6, atol=1e-7)
    _close(h["vmap_by_hand"], h["vmap_forward"], rtol=1e-6, atol=1e-7)


def test_hypernet_meta_gradients():
    g = _run(SCRIPT)
    h = g["fixed_results"]["hyper"]
    # per-task losses by vmap of torch.func.grad's inner loop average to the loop's loss
    assert abs(float(h["vmap_per_task"].mean()) - h["loop_meta_loss"]) < 1e-5
    # second order: the autograd.grad loop, vmap and nested torch.func.grad agree ...
    _close_grads(h["vmap_meta_grads"], h["loop_meta_grads"], rtol=1e-5)
    _close_grads(h["nested_meta_grads"], h["loop_meta_grads"], rtol=1e-5)
    # ... and differ from the first-order meta-gradient
    first = np.concatenate([np.asarray(t).ravel() for t in h["first_order_grads"]])
    second = np.concatenate([np.asarray(t).ravel() for t in h["loop_meta_grads"]])
    assert np.abs(first - second).max() > 1e-2
    assert g["gradchecks"] == {"gradcheck": True, "gradgradcheck": True}


def test_hypernet_meta_training_lowers_the_loss():
    g = _run(SCRIPT)
    losses = g["hyper_losses"]
    assert len(losses) == 60 and losses[-1] < 0.3 * losses[0]


# ---------------------------------------------------------------------------- against torch


def test_fixed_results_match_torch():
    g, t = _run(SCRIPT), _run_torch(SCRIPT)
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    p_ours, p_theirs = dict(ours.pop("proto")), dict(theirs.pop("proto"))
    for mode in ("hand", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        a, b = dict(p_ours.pop(mode)), dict(p_theirs.pop(mode))
        _close_grads(a.pop("grads"), b.pop("grads"))
        # cdist's matrix-product mode rounds |x|^2 + |y|^2 - 2 x.y: to the distances' scale
        _close_scaled(a.pop("dists"), b.pop("dists"))
        _close_nested(a, b, rtol=1e-5, atol=1e-6)
    for key in ("batched_logits", "vmap_logits", "vmap_cdist_logits", "cdist_p1"):
        _close_scaled(p_ours.pop(key), p_theirs.pop(key))
    assert p_ours.pop("classes").tolist() == p_theirs.pop("classes").tolist()
    _close_nested(p_ours, p_theirs, rtol=1e-5, atol=1e-6)

    h_ours, h_theirs = dict(ours.pop("hyper")), dict(theirs.pop("hyper"))
    assert h_ours.pop("shapes") == h_theirs.pop("shapes")
    for key in ("plain_grads", "loop_meta_grads", "vmap_meta_grads", "first_order_grads",
                "nested_meta_grads"):
        _close_grads(h_ours.pop(key), h_theirs.pop(key))
    _close_nested(h_ours, h_theirs, rtol=1e-5, atol=1e-6)

    r_ours, r_theirs = ours.pop("reptile"), theirs.pop("reptile")
    _close_nested(r_ours, r_theirs, rtol=1e-5, atol=1e-6)
    _close(ours.pop("meta_grad64"), theirs.pop("meta_grad64"), rtol=1e-10, atol=1e-13)
    assert not ours and not theirs


def test_training_matches_torch():
    g, t = _run(SCRIPT), _run_torch(SCRIPT)
    assert g["episode_classes"] == t["episode_classes"]
    _close(g["proto_losses"][:10], t["proto_losses"][:10], rtol=1e-5, atol=0)
    _close(g["reptile_losses"][:10], t["reptile_losses"][:10], rtol=1e-5, atol=0)
    _close(g["hyper_losses"][:10], t["hyper_losses"][:10], rtol=1e-5, atol=0)
    assert g["proto_lrs"] == t["proto_lrs"]
    assert g["gradchecks"] == t["gradchecks"]
