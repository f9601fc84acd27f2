"""Scripts written for these tests in the way common PyTorch code of one kind is written (set
B36: mixed-precision training on the CPU: autocast, ``torch.amp.GradScaler``, manual dynamic
loss scaling with float32 master weights, float16/bfloat16 round trips of models and
optimizers), run on jitgrad.

The script in tests/scripts/ runs as ``__main__``; these tests read what it computed from its
globals and assert that autocast picks float16/bfloat16 or float32 per op, that a step whose
gradients hold an inf or a NaN is skipped (weights and moments untouched) and halves the
scale, that the scale grows after ``growth_interval`` clean steps and never past float32's
range, that a checkpoint resumes bit for bit, that one scaler serves two optimizers (only the
one that overflowed skips), that the hand-written loss scaler and the float16 model's copy of
the master weights behave, that dtype round trips round as float16/bfloat16 do; and, where
torch is installed, that the scale trajectories, skipped steps, errors and fixed-weight
results equal the same script's with ``import torch``.

Tolerances: a float16 result of jitgrad can differ from torch's by one float16 unit in the last
place (2**-10 relative) where either library rounds an intermediate differently; jitgrad sums
float16 over a leading dimension in float16 (torch accumulates in float32), which moves the
bias gradients of float16 layers by a few such units. Results that pass through float16 are
compared to that precision (documented at each place); float32 and bfloat16 ones tightly.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run

NAME = "amp_gradscaler"
FP16_ULP = 2.0**-10


def _close_all(ours, theirs, **tol):
    """Two results of the same structure (dicts and lists of tensors), entry by entry."""
    if isinstance(theirs, dict):
        assert ours.keys() == theirs.keys()
        for key in theirs:
            _close_all(ours[key], theirs[key], **tol)
    elif isinstance(theirs, (list, tuple)) and theirs and hasattr(theirs[0], "shape"):
        assert len(ours) == len(theirs)
        for mine, other in zip(ours, theirs):
            _close_all(mine, other, **tol)
    else:
        _close(ours, theirs, **tol)


def _nan_equal(ours, theirs):
    np.testing.assert_array_equal(np.asarray(ours, dtype=np.float64),
                                  np.asarray(theirs, dtype=np.float64))


# ---------------------------------------------------------------------- autocast


def test_autocast_chooses_the_op_dtypes():
    g = _run(NAME)
    for low in ("float16", "bfloat16"):
        table = g["autocast_dtypes"][low]
        assert table["enabled"] and table["autocast_dtype"] == low
        assert not table["inner_enabled"] and not table["enabled_after"]
        for op in ("linear", "matmul", "bmm", "addmm", "baddbmm", "einsum", "conv1d", "conv2d",
                   "sdpa", "relu", "gelu", "softmax", "layer_norm", "sum"):
            assert table[op] == low, op
        for op in ("add_float32", "mse_loss", "cross_entropy", "bce_with_logits", "smooth_l1",
                   "group_norm", "prod", "cdist", "disabled_region"):
            assert table[op] == "float32", op
    assert g["custom_dtypes"] == {"custom": "float32", "plain": "bfloat16",
                                  "backward": "float32", "backward_autocast": False,
                                  "legacy": "bfloat16", "decorated": "bfloat16"}
    categories = [category for category, _ in g["deprecations"]]
    assert categories == ["FutureWarning", "FutureWarning"]
    assert "torch.amp.autocast('cpu', args...)" in g["deprecations"][0][1]
    assert "torch.amp.GradScaler('cpu', args...)" in g["deprecations"][1][1]
    assert g["legacy_scaler"].get_scale() == 8.0
    # float16 keeps ~3 digits, bfloat16 ~2: the autocast logits stay that close to float32's
    assert g["autocast_error"]["fp16_autocast"] < 4e-3
    assert g["autocast_error"]["bf16_autocast"] < 4e-2


def test_autocast_matches_torch():
    g, t = _run(NAME), _run_torch(NAME)
    assert g["autocast_dtypes"] == t["autocast_dtypes"]
    assert g["custom_dtypes"] == t["custom_dtypes"]
    assert g["deprecations"] == t["deprecations"]
    ours, theirs = g["fixed_results"], t["fixed_results"]
    _close_all(ours["custom_fwd"], theirs["custom_fwd"], rtol=1e-5, atol=1e-7)
    _close(ours["legacy_bf16_out"], theirs["legacy_bf16_out"], rtol=0, atol=0)
    bf16 = ours["bf16_autocast"]
    assert bf16["dtypes"] == theirs["bf16_autocast"]["dtypes"] == ["bfloat16", "float32",
                                                                   "float32"]
    _close(bf16["logits"], theirs["bf16_autocast"]["logits"], rtol=0, atol=0)
    _close(bf16["loss"], theirs["bf16_autocast"]["loss"], rtol=1e-6, atol=0)
    _close_all(bf16["grads"], theirs["bf16_autocast"]["grads"], rtol=1e-5, atol=1e-7)
    fp16, fp16_torch = ours["fp16_autocast"], theirs["fp16_autocast"]
    assert fp16["dtypes"] == fp16_torch["dtypes"] == ["float16", "float32", "float32"]
    _close(fp16["logits"], fp16_torch["logits"], rtol=0, atol=0)
    _close(fp16["loss"], fp16_torch["loss"], rtol=1e-6, atol=0)
    for name, grad in fp16_torch["grads"].items():
        if name.endswith("weight"):
            _close(fp16["grads"][name], grad, rtol=1e-5, atol=1e-8)
        else:
            # jitgrad-diff: float16 x.sum(0) accumulates in float16 (the bias gradient of a
            # float16 linear layer), torch in float32: a few float16 units apart
            scale = float(np.abs(grad.numpy()).max())
            _close(fp16["grads"][name], grad, rtol=4 * FP16_ULP, atol=4 * FP16_ULP * scale)


# ------------------------------------------------------------------ GradScaler


def test_gradscaler_skips_bad_steps_and_backs_off():
    g = _run(NAME)
    history, bad = g["amp_history"], g["BAD_STEPS"]
    n = len(history["loss"])
    assert history["skipped"] == [step in bad for step in range(n)]
    assert g["amp_steps_taken"] == n - len(bad)  # Adam counted only the steps it took
    for step in range(n):
        if step in bad:
            assert not math.isfinite(history["grad_norm"][step])
        else:
            assert math.isfinite(history["grad_norm"][step])
    assert math.isnan(history["grad_norm"][5]) and history["grad_norm"][6] == math.inf
    # a skipped step: the scale halves, the tracker restarts, the next loss is the same
    scales = history["scale"] + [g["amp_scaler"].get_scale()]
    for step in range(n):
        if step in bad:
            assert scales[step + 1] == scales[step] / 2
            assert history["tracker"][step] == 0
            assert history["loss"][step + 1] == history["loss"][step]
    # three clean steps in a row double it (growth_interval=3)
    assert scales == [4096.0, 2048.0, 2048.0, 2048.0, 4096.0, 4096.0, 2048.0, 1024.0, 1024.0,
                      1024.0, 2048.0, 2048.0, 2048.0, 4096.0, 4096.0]
    assert g["amp_state_dict"] == {"scale": 4096.0, "growth_factor": 2.0,
                                   "backoff_factor": 0.5, "growth_interval": 3,
                                   "_growth_tracker": 1}
    # the scheduler stepped after a skipped first optimizer step: torch's ordering warning
    assert g["scheduler_warnings"] == ["Detected call of `lr_scheduler.step()` before "
                                       "`optimizer.ste"]
    assert history["lr"][:3] == pytest.approx([0.015, 0.0225, 0.03])
    assert g["skip_left_weights"] and g["skip_left_momentum"]
    assert history["loss"][-1] < 0.5 * history["loss"][0]


def test_fused_and_foreach_adamw_under_the_scaler():
    g = _run(NAME)
    assert g["fused_scales"] == {"fused": 2048.0, "foreach": 2048.0}
    fused = g["fixed_results"]["fused_adamw"]
    assert fused["fused_steps"] == fused["foreach_steps"] == 4.0  # one of five skipped
    _close_all(fused["fused"], fused["foreach"], rtol=1e-5, atol=1e-7)
    t = _run_torch(NAME)
    assert g["fused_scales"] == t["fused_scales"]
    _close_all(fused, t["fixed_results"]["fused_adamw"], rtol=1e-5, atol=1e-7)


def test_gradscaler_growth_interval_and_limits():
    g = _run(NAME)
    growth = g["growth"]
    assert growth["default"] == ([4.0, 8.0, 8.0, 16.0, 16.0, 32.0, 32.0],
                                 [1, 0, 1, 0, 1, 0, 1])
    # growth_factor 4, backoff_factor 0.25, interval 2 over clean/clean/clean/inf/...
    assert growth["factors"] == ([8.0, 32.0, 32.0, 8.0, 8.0, 32.0, 8.0, 2.0],
                                 [1, 0, 1, 0, 1, 0, 0, 0])
    # an interval set below the running tracker is not reached again until an inf resets it
    assert growth["setters"] == ([2.0, 2.0, 4.0, 4.0, 4.0, 4.0, 0.5, 1.0],
                                 [1, 2, 0, 1, 2, 3, 0, 0])
    assert growth["setter_values"] == [1, 2.0, 0.125]
    # 2**127 does not grow to 2**128 (inf in float32); it still backs off
    assert growth["ceiling"] == ([2.0**127, 2.0**127, 2.0**127, 2.0**126, 2.0**127],
                                 [0, 0, 0, 0, 0])
    # a scale too large for float16's backward: skipped and halved until it fits
    overflow = g["overflow_history"]
    assert overflow["skipped"] == [True] * 5 + [False] * 4
    assert overflow["scale"] == [2.0**k for k in (22, 21, 20, 19, 18)] + [2.0**17] * 4
    assert overflow["loss"][-1] < overflow["loss"][0]
    assert g["kernel_history"] == [(1024.0, 1), (1024.0, 2), (512.0, 0), (512.0, 1),
                                   (512.0, 2), (1024.0, 0), (1024.0, 1), (512.0, 0),
                                   (256.0, 0), (256.0, 1)]


def test_gradscaler_trajectories_match_torch():
    g, t = _run(NAME), _run_torch(NAME)
    ours, theirs = g["fixed_results"], t["fixed_results"]
    for key in ("amp_history", "growth", "overflow_scales", "overflow_skipped",
                "resume_history", "manual_history", "kernel_history"):
        assert ours[key] == theirs[key], key
    assert g["amp_history"]["skipped"] == t["amp_history"]["skipped"]
    assert g["amp_history"]["tracker"] == t["amp_history"]["tracker"]
    assert g["amp_steps_taken"] == t["amp_steps_taken"]
    assert g["amp_state_dict"] == t["amp_state_dict"]
    assert g["scheduler_warnings"] == t["scheduler_warnings"]
    assert (g["skip_left_weights"], g["skip_left_momentum"]) == (
        t["skip_left_weights"], t["skip_left_momentum"])
    _nan_equal([math.isfinite(v) for v in g["amp_history"]["grad_norm"]],
               [math.isfinite(v) for v in t["amp_history"]["grad_norm"]])
    # jitgrad-diff: the float16 bias gradients (x.sum(0) in float16) and one-unit float16
    # differences in the forward move the losses of the float16 loops by ~1e-5
    _close(ours["amp_losses"], theirs["amp_losses"], rtol=1e-4, atol=0)
    _close(ours["resume_losses"], theirs["resume_losses"], rtol=1e-4, atol=0)
    _close_all(ours["amp_weights"], theirs["amp_weights"], rtol=0, atol=2e-4)
    assert g["multi"]["scale"] == t["multi"]["scale"]
    assert g["multi"]["stepped_b"] == t["multi"]["stepped_b"]
    _close(ours["multi"]["loss"], theirs["multi"]["loss"], rtol=1e-4, atol=0)


def test_gradscaler_errors_and_extras_match_torch():
    g = _run(NAME)
    errors = g["scaler_errors"]
    assert errors["unscale_twice"] == (
        "RuntimeError",
        "unscale_() has already been called on this optimizer since the last update().")
    assert errors["step_twice"] == ("RuntimeError",
                                    "step() has already been called since the last update().")
    assert errors["unscale_after_step"] == ("RuntimeError",
                                            "unscale_() is being called after step().")
    assert errors["update_twice"] == ("AssertionError",
                                      "No inf checks were recorded prior to update.")
    assert errors["fp16_grads"] == ("ValueError", "Attempting to unscale FP16 gradients.")
    assert errors["closure"][0] == "RuntimeError"
    assert errors["pickle_mid_iteration"][0] == "AssertionError"
    assert errors["step_before_scale"][0] == errors["update_before_scale"][0] == "AssertionError"
    assert g["new_scales"] == [128.0, 32.0, 0.5]
    assert g["disabled_info"] == {"same_loss": True, "scale": 1.0, "state": {}, "enabled": False}
    assert g["scaled_structure"] == ["list", "tuple"]
    scaled = g["fixed_results"]["scaled_outputs"]
    scale = g["amp_scaler"].get_scale()
    _close(scaled[0], g["err_loss"].detach() * scale, rtol=0, atol=0)
    _close(scaled[1], g["err_loss"].detach() * 2 * scale, rtol=0, atol=0)
    t = _run_torch(NAME)
    for key in ("scaler_errors", "new_scales", "disabled_info", "scaled_structure",
                "loaded_scaler_state", "scaler_copies", "resume_matches"):
        assert g[key] == t[key], key
    # err_loss is float32 from float16 logits: to float16's precision of torch's
    _close_all(g["fixed_results"]["scaled_outputs"], t["fixed_results"]["scaled_outputs"],
                  rtol=4 * FP16_ULP, atol=0)


def test_checkpoint_resume_and_pickling():
    g = _run(NAME)
    assert g["resume_matches"]  # bit for bit, scale trajectory included
    assert g["loaded_scaler_state"] == {"scale": 1024.0, "growth_factor": 2.0,
                                        "backoff_factor": 0.5, "growth_interval": 2,
                                        "_growth_tracker": 0}
    assert g["scaler_copies"]["unpickled"] == g["loaded_scaler_state"]
    assert g["scaler_copies"]["deepcopy"] == g["scaler_a"].state_dict()
    history = g["fixed_results"]["resume_history"]
    assert history["skipped"] == [False, True, False, False, False, False, True, False]
    assert history["scale"] == [1024.0, 1024.0, 512.0, 512.0, 1024.0, 1024.0, 2048.0, 1024.0]


def test_one_scaler_two_optimizers_and_accumulation():
    g = _run(NAME)
    multi = g["multi"]
    # only trunk_b's gradient overflowed on step 2: its optimizer skipped, trunk_a's stepped
    assert multi["stepped_a"] == [True] * 6
    assert multi["stepped_b"] == [True, True, False, True, True, True]
    assert multi["scale"] == [256.0, 256.0, 512.0, 256.0, 256.0, 512.0]
    assert multi["final_scale"] == 512.0
    assert multi["loss"][-1] < multi["loss"][0]
    # four bfloat16 micro-batches of a quarter of the loss: the whole batch's gradient, to
    # bfloat16's precision (each micro-batch's sum is rounded on its own)
    for name, whole in g["whole_grads"].items():
        ours = g["accum_grads"][name]
        scale = float(whole.abs().max())
        _close(ours, whole, rtol=0, atol=1e-2 * scale)
    t = _run_torch(NAME)
    _close_all(g["fixed_results"]["accum_grads"], t["fixed_results"]["accum_grads"],
                  rtol=1e-5, atol=1e-8)


# ------------------------------------------------ manual loss scaling, master weights


def test_manual_loss_scaling_with_master_weights():
    g = _run(NAME)
    manual = g["manual"]
    assert manual["isfinite_agrees"] == [True] * 12
    assert manual["overflow"] == [True, True, True, False, False, False, True, False, True,
                                  False, False, False]
    assert manual["scale"] == [2.0**20, 2.0**19, 2.0**18, 2.0**17, 2.0**17, 2.0**17, 2.0**18,
                               2.0**17, 2.0**17, 2.0**16, 2.0**16, 2.0**16]
    for step, overflow in enumerate(manual["overflow"]):
        assert math.isnan(manual["grad_norm"][step]) == overflow
        if overflow and step + 1 < 12:
            assert manual["loss"][step + 1] == manual["loss"][step]
    assert manual["loss"][-1] < 0.5 * manual["loss"][0]
    # the float16 model holds the master weights rounded to float16, nothing else
    assert g["model_is_rounded_master"]
    assert 0 < g["master_rounding"] < 2e-3
    assert all(p.dtype == g["torch"].float16 for p in g["model_params"])
    assert all(m.dtype == g["torch"].float32 for m in g["master_params"])
    t = _run_torch(NAME)
    assert g["fixed_results"]["manual_history"] == t["fixed_results"]["manual_history"]
    # jitgrad-diff: float16 x.sum(0) (the float16 model's bias gradients) differs from torch
    # by a few float16 units; the master weights follow to ~1e-4
    _close(g["fixed_results"]["manual_losses"], t["fixed_results"]["manual_losses"],
           rtol=2e-4, atol=0)
    _close_all(g["fixed_results"]["manual_master"], t["fixed_results"]["manual_master"],
                  rtol=0, atol=2e-4)


# --------------------------------------------------- dtype round trips, optimizer state


def test_dtype_round_trips_and_optimizer_state():
    g = _run(NAME)
    rt = g["round_trip"]
    assert rt["ids_kept"] and rt["is_parameter"]
    assert rt["half_state"]["1.num_batches_tracked"] == "int64"
    assert {v for k, v in rt["half_state"].items() if "num_batches" not in k} == {"float16"}
    assert {v for k, v in rt["bf16_state"].items() if "num_batches" not in k} == {"bfloat16"}
    assert rt["float_equals_rounded"] and rt["half_equals_rounded"]
    assert rt["loaded_dtype"] == "float16" and rt["loaded_equal"]
    assert rt["param_count"] == 6 * 8 + 8 + 8 + 8 + 8 * 3 + 3
    assert g["state_dtypes"] == {
        "bf16_adam": {"step": "float32", "exp_avg": "bfloat16", "exp_avg_sq": "bfloat16"},
        "fp16_sgd": {"momentum_buffer": "float16"},
        "fp16_adam": {"step": "float32", "exp_avg": "float16", "exp_avg_sq": "float16"},
        "adam_step_value": 3.0,
        "loaded_into_bf16": {"step": "float32", "exp_avg": "bfloat16",
                             "exp_avg_sq": "bfloat16"}}
    t = _run_torch(NAME)
    assert g["round_trip"] == t["round_trip"]
    assert g["state_dtypes"] == t["state_dtypes"]
    ours, theirs = g["fixed_results"], t["fixed_results"]
    _close_all(ours["round_trip"], theirs["round_trip"], rtol=0, atol=0)
    _close_all(ours["optimizer_steps"], theirs["optimizer_steps"], rtol=0, atol=0)
    fp16, fp16_torch = ours["fp16_optimizer_steps"], theirs["fp16_optimizer_steps"]
    for ours_p, theirs_p in zip(fp16["fp16_adam"], fp16_torch["fp16_adam"]):
        _close(ours_p, theirs_p, rtol=0, atol=0)
    # jitgrad-diff: torch's vectorized float16 add(other, alpha=a) rounds alpha to float16
    # (lr=0.1 -> 0.0999756) and jitgrad does not, and the bias gradients come from x.sum(0)
    # (float16 accumulation in jitgrad): SGD's float16 weights differ by a few units of the
    # largest weight's float16 precision
    for ours_p, theirs_p in zip(fp16["fp16_sgd"], fp16_torch["fp16_sgd"]):
        scale = float(np.abs(theirs_p.numpy()).max())
        _close(ours_p, theirs_p, rtol=2 * FP16_ULP, atol=2 * FP16_ULP * scale)
