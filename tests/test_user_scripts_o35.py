"""Scripts written for these tests in the way hand-written training loops of two kinds write
their plumbing in plain torch (set O35: a Hugging Face ``Trainer``-style loop over padded token
sequences, and a Lightning-style module / data module / trainer over small digit images), run
on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that the collator padded with the pad id and -100, that seeded
samplers repeat per epoch and skip batches when resuming, that gradient accumulation equals the
large batch and clipping returns the total norm (raising on a NaN step, which is skipped), that
the models learned and early stopping stopped by its rule, that metrics from
``index_put_(accumulate=True)`` and ``bincount`` agree, that ``train()``/``eval()`` toggle
Dropout and BatchNorm, that inference-mode outputs are inference tensors, and that runs resumed
from checkpoints (model, optimizer, scheduler, callbacks, RNG and generator states through
``torch.save``/``torch.load``) follow the uninterrupted runs bit for bit; and, where torch is
installed, that the fixed-weight parts, the data plumbing and the training trajectories equal
the same scripts' with ``import torch``.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

# ------------------------------------------------------------------ Trainer-style loop


def test_hf_collator_split_and_samplers():
    g = _run("hf_trainer_loop")
    ids = g["fixed_results"]["batch_input_ids"].numpy()
    token_labels = g["fixed_results"]["batch_token_labels"].numpy()
    mask = g["fixed_results"]["batch_attention_mask"].numpy()
    lengths = [len(g["full_dataset"].examples[i]["input_ids"]) for i in range(4)]
    assert ids.shape == (4, max(lengths))
    for row, n in enumerate(lengths):
        assert (ids[row, n:] == 0).all() and (ids[row, :n] != 0).all()
        assert (token_labels[row, n:] == -100).all() and token_labels[row, 0] == -100
        assert (token_labels[row, 1:n] >= 0).all()
    assert (mask == (ids != 0)).all()
    train, held_out = g["split_indices"]
    assert len(train) == 135 and len(held_out) == 45
    assert sorted(train + held_out) == list(range(180))
    assert int(g["label_counts"].sum()) == 180
    # set_epoch: one permutation per epoch, the same again for the same epoch
    orders = g["epoch_orders"]
    assert orders[0] == orders[2] != orders[1] and sorted(orders[1]) == list(range(10))
    assert g["skip_batches_seen"] == g["all_batches"][1:]
    assert len(g["all_batches"]) == 3  # 10 // 3 with drop_last


def test_hf_gradient_accumulation_and_clipping():
    g = _run("hf_trainer_loop")
    r = g["fixed_results"]
    big, accumulated = r["big_batch_grads"], r["accumulated_grads"]
    assert big.keys() == accumulated.keys() and "classifier.weight" in big
    for name in big:
        _close(accumulated[name], big[name], rtol=1e-5, atol=1e-7)
    # clip_grad_norm_ returns the norm before clipping; after it, the norm is max_norm
    assert float(r["total_norm"]) > 0.05
    assert float(r["clipped_norm"]) == pytest.approx(0.05, rel=1e-4)
    # a bfloat16 body and a float32 head: the total norm is float32 over both
    assert str(g["mixed_norm_dtype"]).endswith("float32")
    pre = np.concatenate([v.numpy().ravel() for v in r["mixed_dtype_grads"].values()])
    assert float(r["mixed_dtype_norm"]) == pytest.approx(np.linalg.norm(pre), rel=1e-2)
    post = np.concatenate([v.numpy().ravel() for v in g["mixed_clipped_grads"].values()])
    assert np.linalg.norm(post) == pytest.approx(0.1, rel=1e-2)


def test_hf_trainer_learns_schedules_and_stops_early():
    g = _run("hf_trainer_loop")
    trainer, args = g["trainer"], g["args"]
    steps = g["steps_per_epoch"]
    assert steps == math.ceil(math.ceil(135 / 12) / 3) == 4
    losses, lrs, norms = g["losses"], g["lrs"], g["grad_norms"]
    assert len(losses) == len(lrs) == len(norms) == trainer.state["global_step"]
    assert np.mean(losses[-steps:]) < 0.5 * np.mean(losses[:steps])
    assert np.isfinite(norms).all() and min(norms) > 0
    # linear warm-up over ceil(0.1 * max_steps) steps, then linear decay
    warmup = math.ceil(trainer.max_steps * args.warmup_ratio)
    assert lrs[0] == pytest.approx(args.learning_rate / warmup)
    assert lrs[warmup - 1] == pytest.approx(args.learning_rate)
    assert all(a > b for a, b in zip(lrs[warmup - 1:], lrs[warmup:]))
    # early stopping on eval_f1: the last `patience` evaluations did not beat the best by the
    # threshold, every earlier one that set the best did
    history = g["log_history"]
    stopped = trainer.state["stopped_epoch"]
    assert stopped == len(history) < args.num_train_epochs
    f1 = [entry["eval_f1"] for entry in history]
    best, waits = None, 0
    for value in f1:
        if best is None or value > best + args.early_stopping_threshold:
            best, waits = value, 0
        else:
            waits += 1
    assert waits == args.early_stopping_patience and best == trainer.state["best_metric"]
    assert trainer.state["best_step"] == history[f1.index(best)]["step"]
    assert best > 0.85 and history[-1]["eval_accuracy"] > 0.85
    for entry in history:
        assert entry["eval_bincount_agrees"] and sum(entry["eval_pred_counts"].values()) == 45
        assert entry["eval_is_inference"] == (True, False)
        assert entry["eval_top2_accuracy"] >= entry["eval_accuracy"]
        assert len(entry["examples"]) == 4
    # the best weights, reloaded, score what they scored
    assert g["best_metrics"]["f1"] == pytest.approx(best, abs=1e-6)
    assert int(g["best_metrics"]["confusion_matrix"].sum()) == 45


def test_hf_resumed_runs_are_bit_exact():
    g = _run("hf_trainer_loop")
    losses, final = g["losses"], g["final_state"]
    steps = g["steps_per_epoch"]
    assert set(g["resumed"]) == set(g["save_steps"]) == {5 * steps + 2, 6 * steps}
    for step, run in g["resumed"].items():
        assert len(run["losses"]) == len(losses) - step
        assert run["losses"] == losses[step:]
        assert run["global_step"] == g["trainer"].state["global_step"]
        assert run["log_history"] == g["log_history"]
        assert run["state"].keys() == final.keys()
        for name in final:
            assert np.array_equal(run["state"][name].numpy(), final[name].numpy()), name


def test_hf_nonfinite_step_skipped_and_inference_mode():
    g = _run("hf_trainer_loop")
    nan_trainer = g["nan_trainer"]
    assert nan_trainer.skipped_nonfinite == 1
    assert len(g["nan_losses"]) == nan_trainer.state["global_step"] == g["steps_per_epoch"] - 1
    assert np.isfinite(g["nan_losses"]).all()
    assert g["nonfinite_message"].startswith(
        "The total norm of order 2.0 for gradients from `parameters` is non-finite")
    assert g["best_logits"].is_inference()
    assert g["inference_backward_error"].startswith("element 0 of tensors does not require grad")
    assert g["inference_inplace_error"].startswith(
        "Inplace update to inference tensor outside InferenceMode is not allowed")


def test_hf_fixed_results_match_torch():
    g, t = _run("hf_trainer_loop"), _run_torch("hf_trainer_loop")
    _close_nested(g["fixed_results"], t["fixed_results"], rtol=1e-5, atol=1e-6)
    # the clipped bfloat16 gradients: the float32 clip coefficient multiplies in float and the
    # product is rounded once, as torch's
    _close_nested(g["mixed_clipped_grads"], t["mixed_clipped_grads"], rtol=1e-5, atol=1e-6)
    assert str(g["mixed_norm_dtype"]) == str(t["mixed_norm_dtype"]).replace("torch", "jitgrad")


def test_hf_trajectory_matches_torch():
    g, t = _run("hf_trainer_loop"), _run_torch("hf_trainer_loop")
    for key in ("split_indices", "epoch_orders", "all_batches", "skip_batches_seen",
                "save_steps", "nonfinite_message", "inference_backward_error",
                "inference_inplace_error"):
        assert g[key] == t[key], key
    _close(g["losses"][:8], t["losses"][:8], rtol=1e-5, atol=0)
    _close(g["grad_norms"][:8], t["grad_norms"][:8], rtol=1e-5, atol=0)
    _close(g["nan_losses"], t["nan_losses"], rtol=1e-5, atol=0)
    assert g["lrs"] == pytest.approx(t["lrs"], rel=1e-12)
    ours, theirs = g["log_history"], t["log_history"]
    assert [e["step"] for e in ours] == [e["step"] for e in theirs]
    assert [e["eval_pred_counts"] for e in ours] == [e["eval_pred_counts"] for e in theirs]
    assert [e["examples"] for e in ours] == [e["examples"] for e in theirs]
    _close([e["eval_loss"] for e in ours], [e["eval_loss"] for e in theirs], rtol=1e-5)


# ------------------------------------------------------------------ Lightning-style loop


def test_lightning_train_eval_toggles_dropout_and_batchnorm():
    g = _run("lightning_loop")
    assert not any(g["modes_eval"]) and all(g["modes_train"])
    assert g["eval_is_deterministic"] and g["eval_stats_unchanged"]
    assert g["train_outputs_differ"] and g["num_batches_tracked"] == 2
    assert g["bn_eval_matches"]
    running_mean = g["fixed_results"]["running_mean"].numpy()
    assert np.abs(running_mean).max() > 0  # the two training batches moved it


def test_lightning_data_module_plumbing():
    g = _run("lightning_loop")
    train, val, test = g["split_indices"]
    assert (len(train), len(val), len(test)) == (600, 150, 150)
    assert sorted(train + val + test) == list(range(900))
    counts, sampled = g["class_counts"], g["sampled_counts"].numpy()
    assert sum(counts) == 600 and max(counts) > 3 * min(counts)
    # class-balanced sampling with replacement: about 60 of each class
    assert sampled.sum() == 600 and sampled.max() < 1.6 * sampled.min()
    # ConcatDataset(val, test): the confusion matrices add up
    assert g["holdout_size"] == 300
    _close(g["holdout_metrics"]["confusion"],
           g["val_metrics"]["confusion"].numpy() + g["test_metrics"]["confusion"].numpy())
    # predict: in order without workers, interleaved shards with two, the same classes
    index, classes = g["predicted_index"].numpy(), g["predicted_class"].numpy()
    assert index.tolist() == list(range(150))
    worker_index, worker_class = g["worker_index"].numpy(), g["worker_class"].numpy()
    assert worker_index[:4].tolist() == [0, 2, 4, 6] and sorted(worker_index) == list(range(150))
    assert (classes[worker_index] == worker_class).all()
    assert g["predictions_are_inference"]


def test_lightning_fit_learns_stops_and_checkpoints():
    g = _run("lightning_loop")
    trainer, history = g["trainer"], g["history"]
    per_epoch = math.ceil(600 / 32)
    assert len(g["losses"]) == len(history) * per_epoch
    assert len(g["grad_norms"]) == trainer.global_step == len(history) * g["steps_per_epoch"]
    assert np.mean(g["losses"][-per_epoch:]) < 0.6 * np.mean(g["losses"][:per_epoch])
    assert history[-1]["val_acc"] > 0.6 > history[0]["val_acc"]
    # EarlyStopping(patience=2, min_delta=1e-3) stopped at the epoch its rule says
    early, checkpoint = g["early_stopping"], g["checkpoint"]
    val_losses = [e["val_loss"] for e in history]
    best, waits, stop = math.inf, 0, None
    for epoch, value in enumerate(val_losses):
        if value + 1e-3 < best:
            best, waits = value, 0
        else:
            waits += 1
            if waits >= 2:
                stop = epoch
                break
    assert trainer.should_stop and early.stopped_epoch == stop == len(history) - 1
    assert float(early.best_score) == pytest.approx(best)
    # ReduceLROnPlateau(patience=1, factor=0.5) halved the rate once, after two bad epochs
    lrs = [e["lr"] for e in history]
    assert lrs[0] == 0.1 and lrs[-1] == 0.05
    # ModelCheckpoint kept the two best val_acc
    accs = sorted((e["val_acc"] for e in history), reverse=True)
    assert sorted(checkpoint.best_k_models.values(), reverse=True) == accs[:2]
    test = g["test_metrics"]
    assert float(test["acc"]) > 0.65 and float(test["top3_acc"]) >= float(test["acc"])
    assert test["bincount_agrees"] and int(test["confusion"].sum()) == 150
    assert int(test["pred_counts"].sum()) == 150
    assert 0 < float(test["macro_f1"]) <= 1
    overfit = g["overfit_losses"]
    assert np.mean(overfit[-4:]) < 0.25 * np.mean(overfit[:4])


def test_lightning_resume_and_forked_sanity_check():
    g = _run("lightning_loop")
    losses, per_epoch = g["losses"], math.ceil(600 / 32)
    resumed = g["resumed_losses"]
    assert len(resumed) == len(losses) - (g["RESUME_EPOCH"] + 1) * per_epoch
    assert resumed == losses[-len(resumed):]
    assert g["resumed_history"] == g["history"]
    for name, value in g["final_state"].items():
        assert np.array_equal(g["resumed_state"][name].numpy(), value.numpy()), name
    ours, theirs = g["resumed_callback_states"], g["callback_states"]
    assert ours[1] == theirs[1]
    assert ours[0]["wait_count"] == theirs[0]["wait_count"]
    assert float(ours[0]["best_score"]) == float(theirs[0]["best_score"])
    # the sanity check ran in fork_rng: without it, the first epoch is the same
    assert g["sanity_free_losses"] == losses[:per_epoch]


def test_lightning_matches_torch():
    g, t = _run("lightning_loop"), _run_torch("lightning_loop")
    _close_nested(g["fixed_results"], t["fixed_results"], rtol=1e-5, atol=1e-6)
    for key in ("split_indices", "class_counts", "first_sampled", "num_batches_tracked"):
        assert g[key] == t[key], key
    for key in ("predicted_index", "predicted_class", "worker_index", "worker_class"):
        assert g[key].tolist() == t[key].tolist(), key
    _close(g["losses"][:19], t["losses"][:19], rtol=1e-5, atol=0)
    _close(g["grad_norms"][:10], t["grad_norms"][:10], rtol=1e-5, atol=0)
    _close(g["overfit_losses"][:8], t["overfit_losses"][:8], rtol=1e-5, atol=0)
    assert [(e["epoch"], e["val_acc"], e["lr"]) for e in g["history"]] == \
        [(e["epoch"], e["val_acc"], e["lr"]) for e in t["history"]]
    _close([e["val_loss"] for e in g["history"]], [e["val_loss"] for e in t["history"]],
           rtol=1e-5)
    assert g["checkpoint"].best_model_path == t["checkpoint"].best_model_path
    _close(g["test_metrics"]["confusion"], t["test_metrics"]["confusion"], rtol=0, atol=0)
