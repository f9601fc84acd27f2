"""A script written for these tests in the way training scripts commonly write their data
pipeline and checkpointing code (set J35: ``torch.utils.data`` data sets, collate functions,
splits and samplers, and a resumable training loop), run on jitgrad.

The script in tests/scripts/ runs as ``__main__``; these tests read what it computed from its
globals and assert that the collate function pads and masks each batch to its longest
sequence, that ``default_collate`` keeps the structure of dicts, tuples, namedtuples and NumPy
values, that splits partition the data, that the samplers' orders have their invariants
(permutations, zero weights never drawn, ``drop_last``), that a loader's generator state
replays its shuffles, that resuming from a checkpoint (at an epoch boundary through
``io.BytesIO``, and in the middle of an epoch through a file) gives the uninterrupted run bit
for bit, and that the models learn; and, where torch is installed, that every order, split,
collated value, saved scheduler state and the losses equal the same script's with
``import torch``.
"""

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

SCRIPT = "data_pipeline_resume"


def _same_state(ours, theirs, rel):
    """Saved states (dicts, lists, tuples of plain values) equal, floats to ``rel``."""
    assert type(ours) is type(theirs), (ours, theirs)
    if isinstance(theirs, dict):
        assert list(ours) == list(theirs)
        for key in theirs:
            _same_state(ours[key], theirs[key], rel)
    elif isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _same_state(a, b, rel)
    elif isinstance(theirs, float):
        assert ours == pytest.approx(theirs, rel=rel)
    else:
        assert ours == theirs


def _padding_waste(batches, lengths):
    padded = sum(max(lengths[i] for i in b) * len(b) for b in batches)
    return 1 - sum(lengths[i] for b in batches for i in b) / padded


# ------------------------------------------------------------------------- the pipeline


def test_collate_pads_and_keeps_structure():
    g = _run(SCRIPT)
    r = g["fixed_results"]
    batch = r["pad_collate"]
    lengths = batch["lengths"].tolist()
    tokens = batch["tokens"].numpy()
    assert tokens.shape == (4, max(lengths)) == (4, g["collate_max_length"])
    assert batch["mask"].sum(dim=1).tolist() == lengths == g["collate_mask_sums"].tolist()
    for row, length in zip(tokens, lengths):
        assert (row[length:] == g["PAD"]).all() and (row[:length] != g["PAD"]).all()
    left = r["pad_left"].numpy()
    assert (left[:, 0] == -1).any() and (left[:, -1] != -1).all()  # padded at the front
    assert tuple(r["pad_time_major"].shape) == tuple(reversed(r["pad_left"].shape))
    structure = g["collate_structure"]
    assert structure["dtypes"] == {
        "image": "float32", "label": "int64", "score": "float64", "pair_0": "int64",
        "pair_1": "float32", "flag": "bool", "point_xy": "int64", "point_weight": "float64",
        "count": "int64"}
    assert structure["names"] == ["sample0", "sample1", "sample2"]
    assert structure["pair_type"] == "list" and structure["point_type"] == "Point"
    assert structure["numpy_tuple"] == ["float64", "int32"]
    collated = r["default_collate"]
    assert tuple(collated["image"].shape) == (3, 2, 3)
    _close(collated["point_weight"], [0, 0.25, 0.5], rtol=0, atol=0)
    assert collated["flag"].tolist() == [True, False, True]


def test_splits_partition_the_data():
    g = _run(SCRIPT)
    assert g["split_sizes"] == [360, 72, 48]
    parts = [list(g["train_set"].indices), g["orders"]["split_val"],
             g["orders"]["split_test"]]
    assert sorted(sum(parts, [])) == list(range(480))
    counts = g["orders"]["count_splits"]
    assert [len(c) for c in counts] == [20, 10, 7] and sorted(sum(counts, [])) == list(range(37))
    # 3.3 + 3.3 + 3.4 floor to 3 each: the left-over index goes to the first split
    assert [len(c) for c in g["orders"]["odd_fraction"]] == [4, 3, 3]
    assert g["concat_lookup"] == {"len": 120, "cumulative": [72, 120],
                                  "first_of_second": g["orders"]["split_test"][0],
                                  "last": g["orders"]["split_test"][-1], "sum_of_two": 120}


def test_sampler_invariants():
    g = _run(SCRIPT)
    o = g["orders"]
    assert len(o["random_replacement"]) == 40 and set(o["random_replacement"]) <= set(range(10))
    # 17 samples of 7 without replacement: two whole permutations, then three distinct
    drawn = o["random_num_samples"]
    assert sorted(drawn[:7]) == sorted(drawn[7:14]) == list(range(7))
    assert len(set(drawn[14:])) == 3
    first, second = o["random_default_gen"]
    assert sorted(first) == sorted(second) == list(range(6)) and first != second
    assert o["sequential"] == list(range(5))
    for epoch in o["subset_random"]:
        assert sorted(epoch) == [3, 5, 7, 11, 13]
    assert o["subset_random"][0] != o["subset_random"][1]
    assert len(o["weighted"]) == 12 and 3 not in o["weighted"]  # weight 0 never drawn
    assert len(set(o["weighted_no_replacement"])) == 4 and 3 not in o["weighted_no_replacement"]
    # class-balancing weights: the rarest class is drawn about as often as the others
    natural = g["fixed_results"]["class_counts"].tolist()
    balanced = g["fixed_results"]["balanced_counts"].tolist()
    assert sum(balanced) == sum(natural) == 360
    assert min(natural) < 80 and all(80 < c < 160 for c in balanced)
    assert o["batch_keep"] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert o["batch_drop"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert g["batch_sampler_lens"] == [3, 2]
    assert sorted(sum(o["batch_random"], [])) == list(range(9))
    assert [len(b) for b in o["batch_random"]] == [2, 2, 2, 2, 1]


def test_loader_generators_and_streams():
    g = _run(SCRIPT)
    o = g["orders"]
    # drop_last: 3 batches of 3 of the 10 items, a new order each epoch
    assert g["toy_loader_len"] == 3
    for epoch in o["loader_epochs"]:
        assert [len(b) for b in epoch] == [3, 3, 3] and len(set(sum(epoch, []))) == 9
    assert o["loader_epochs"][0] != o["loader_epochs"][1]
    assert o["loader_epochs_replayed"] == o["loader_epochs"]
    assert sorted(sum(o["loader_global"], [])) == list(range(8))
    assert g["iter_draws_global"] and g["iter_with_generator_keeps_global"]
    assert g["worker_info_main"] is None
    assert o["stream_i"] == [[0, 1, 2], [3, 4, 10], [11, 12]]
    assert o["stream_drop_last"] == [[0, 1, 2], [3, 4, 10]]
    assert g["stream_lens"] == [3, 2]
    x = g["fixed_results"]["stream_x"].numpy()
    _close(x[:, 1], x[:, 0] ** 2, rtol=0, atol=0)
    # the bucketing sampler visits every index once per epoch, in a new order each epoch
    for key in ("bucket_epoch0", "bucket_epoch1"):
        assert sorted(sum(o[key], [])) == list(range(40))
    assert o["bucket_epoch0"] != o["bucket_epoch1"]


# ----------------------------------------------------------------------- resumed training


def test_resumed_runs_are_bitwise_identical():
    g = _run(SCRIPT)
    assert g["run1_identical"] == dict.fromkeys(
        ("losses", "batches", "lrs", "val", "weights", "rng"), True)
    assert g["run2_identical"] == dict.fromkeys(
        ("losses", "batches", "pad_widths", "val", "lr_per_epoch", "weights"), True)
    s = g["checkpoint_structure"]
    assert s["top"] == ["epoch", "loader_generator", "log", "model", "optimizer", "rng_state",
                        "scheduler"]
    assert s["rng_dtype"] == s["loader_generator_dtype"] == "uint8"
    assert s["onecycle_step"] == 2 * g["steps_per_epoch"]
    assert s["optimizer_state_keys"] == list(range(5))
    assert s["adam_state"] == ["exp_avg", "exp_avg_sq", "step"]
    assert g["scheduler_states"]["sampler"] == {"epoch": 1, "start_batch": 7}


def test_training_learns():
    g = _run(SCRIPT)
    n = g["steps_per_epoch"]
    losses = g["straight"]["losses"]
    assert len(losses) == 4 * n == 88
    assert np.mean(losses[-n:]) < 0.7 * np.mean(losses[:n])
    val_losses = [v[0] for v in g["straight"]["val"]]
    assert val_losses[-1] < 0.6 * val_losses[0] and g["straight"]["val"][-1][1] > 0.85
    # OneCycleLR: warm-up to max_lr at 25% of the steps, then annealed to ~max_lr / 1e4 / 25
    lrs = g["straight"]["lrs"]
    assert int(np.argmax(lrs)) == 20 and max(lrs) == pytest.approx(1e-2)
    assert lrs[-1] < 1e-5
    # ReduceLROnPlateau halved the rate when the validation loss rose
    run2 = g["straight2"]
    assert run2["lr_per_epoch"][0] == 0.2 and min(run2["lr_per_epoch"]) == 0.1
    assert run2["val"][-1][0] < 0.7 * run2["val"][0][0]
    # bucketing by length pads far less than random batches
    lengths = g["full_set"].lengths()
    bucketed = _padding_waste(run2["batches"], lengths)
    shuffled = _padding_waste(g["straight"]["batches"], lengths)
    assert bucketed < 0.5 * shuffled
    assert all(len(b) == 12 for b in run2["batches"])  # drop_last in the bucketing sampler


# ------------------------------------------------------------------------------ vs torch


def test_orders_and_structures_match_torch():
    g, t = _run(SCRIPT), _run_torch(SCRIPT)
    assert g["orders"] == t["orders"]
    assert list(g["train_set"].indices) == list(t["train_set"].indices)
    for key in ("collate_structure", "checkpoint_structure", "concat_lookup", "split_sizes",
                "stream_lens", "batch_sampler_lens", "iter_draws_global",
                "iter_with_generator_keeps_global"):
        assert g[key] == t[key], key


def test_fixed_results_match_torch():
    g, t = _run(SCRIPT), _run_torch(SCRIPT)
    _close_nested(g["fixed_results"], t["fixed_results"], rtol=1e-5, atol=1e-6)


def test_saved_states_match_torch():
    g, t = _run(SCRIPT), _run_torch(SCRIPT)
    ours, theirs = dict(g["scheduler_states"]), dict(t["scheduler_states"])
    # the plateau's best is the first epoch's float32 validation loss
    _same_state(ours.pop("plateau"), theirs.pop("plateau"), rel=1e-5)
    _same_state(ours, theirs, rel=1e-12)


def test_losses_match_torch():
    g, t = _run(SCRIPT), _run_torch(SCRIPT)
    ours, theirs = g["straight"], t["straight"]
    assert ours["batches"] == theirs["batches"]
    assert ours["lrs"] == pytest.approx(theirs["lrs"], rel=1e-12)
    # the same dropout masks and token replacements: every loss of the AdamW run agrees
    _close(ours["losses"], theirs["losses"], rtol=1e-5, atol=0)
    _close([v[0] for v in ours["val"]], [v[0] for v in theirs["val"]], rtol=1e-5, atol=0)
    # SGD at lr 0.2 with Nesterov momentum amplifies float32 rounding (in float64 the two
    # agree to 1e-13 over all 120 steps): the first 15 losses, and the batches throughout
    ours, theirs = g["straight2"], t["straight2"]
    assert ours["batches"] == theirs["batches"] and ours["pad_widths"] == theirs["pad_widths"]
    _close(ours["losses"][:15], theirs["losses"][:15], rtol=1e-5, atol=0)
    assert ours["lr_per_epoch"] == theirs["lr_per_epoch"]
