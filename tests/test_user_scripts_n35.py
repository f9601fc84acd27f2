"""Scripts written for these tests in the way common PyTorch code of two kinds is written (set
N35: custom optimizers as ``torch.optim.Optimizer`` subclasses, Lion, a factored Adafactor,
Sophia-G, Lookahead and a 2019-style RAdam, with the built-in LR schedulers chained to them; and
a masked-convolution PixelCNN, a class-conditional Gated PixelCNN and PixelCNN++'s shifted
streams with its discretized logistic mixture likelihood on 4-level 8x8 digits), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that the optimizers validate their arguments and keep their state as
``torch.optim`` does, that Lion moves every weight by exactly the learning rate, that the
foreach, lerp, mul/add and closure forms of a step agree, that Sophia's clipped steps stay within
the learning rate, that Lookahead syncs its fast weights every k steps, that every optimizer and
scheduler resumes from a checkpoint to the same trajectory as without one; that the masks make
the models causal (with the masked stack's blind spot and the gated stacks' complete past), that
the mixture assigns probability one to the four levels, that the models learn the digits and
sample from them; and, where torch is installed, that the trajectories, learning-rate sequences,
messages, fixed-weight results and samples equal the same script's with ``import torch``.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested


def _close_scaled(ours, theirs, rtol=1e-5):
    """Close to rtol of each entry or of the tensor's largest entry."""
    scale = float(np.abs(np.asarray(theirs, dtype=np.float64)).max())
    _close(ours, theirs, rtol=rtol, atol=rtol * scale)


def _mean(values):
    return float(np.mean(values))


# ------------------------------------------------------------------------ custom optimizers

OPT = "custom_optimizers_schedulers"


def test_optimizers_validate_like_torch_optim():
    g = _run(OPT)
    errors = g["errors"]
    assert errors["lion_lr"] == ("ValueError", "Invalid learning rate: -1.0")
    assert errors["lion_beta"] == ("ValueError", "Invalid beta parameter at index 1: 1.5")
    assert errors["adafactor_lr"][0] == "ValueError"
    assert errors["sophia_rho"] == ("ValueError", "Invalid rho parameter: -0.1")
    assert errors["lookahead_k"] == ("ValueError", "Invalid lookahead steps: 0")
    # what Optimizer itself checks
    assert errors["empty"] == ("ValueError", "optimizer got an empty parameter list")
    assert errors["tensor_not_iterable"][0] == "TypeError"
    assert errors["tensor_not_iterable"][1].startswith(
        "params argument given to the optimizer should be an iterable of Tensors or dicts")
    assert errors["set_of_params"][0] == "TypeError"
    assert errors["non_leaf"] == ("ValueError", "can't optimize a non-leaf Tensor")
    assert errors["duplicate_groups"] == errors["add_duplicate"] == (
        "ValueError", "some parameters appear in more than one parameter group")
    assert errors["add_not_dict"] == ("TypeError", "param_group must be a dict, but got "
                                                   "<class 'list'>")
    assert errors["duplicate_in_group"] is None  # a warning only
    assert len(g["duplicate_warnings"]) == 1
    assert "duplicate parameters" in g["duplicate_warnings"][0]
    # the schedulers' own checks
    assert errors["onecycle_no_momentum"] == errors["onecycle_adafactor"] == (
        "ValueError", "optimizer must support momentum or beta1 with `cycle_momentum` option "
                      "enabled")
    assert errors["onecycle_past_the_end"] == (
        "ValueError", "Tried to step 4 times. The specified number of total steps is 3")
    assert errors["restarts_negative_epoch"] == ("ValueError",
                                                 "Expected non-negative epoch, but got -1")
    assert errors["plateau_mode"] == ("ValueError", "mode lowest is unknown!")
    assert errors["lambda_count"] == ("ValueError", "Expected 1 lr_lambdas, but got 2")
    for key in ("sequential_milestones", "linear_start_factor", "restarts_t0", "restarts_tmult",
                "plateau_factor"):
        assert errors[key][0] == "ValueError", key


def test_optimizer_state_groups_and_zero_grad():
    g = _run(OPT)
    assert g["lion_repr"] == ("Lion (\nParameter Group 0\n    betas: (0.9, 0.99)\n    foreach: None"
                              "\n    lr: 0.0003\n    use_lerp: True\n    weight_decay: 0.1\n)")
    assert g["lion_state_keys"] == [0, 1, 2, 3]
    assert g["lion_group_keys"] == ["betas", "foreach", "initial_lr", "lr", "use_lerp",
                                    "weight_decay"]
    # add_param_group fills in the defaults
    assert g["n_groups"] == 2
    assert g["added_group"] == {"betas": (0.9, 0.99), "lr": 5e-3, "use_lerp": True,
                                "weight_decay": 0.0, "foreach": None}
    assert g["grads_zeroed"] == [True] * 4 and g["grads_none"] == [True] * 4
    # load_state_dict casts the float64 state to the float32 parameters, keeps lr/initial_lr
    assert len(g["loaded_dtypes"]) == 1 and g["loaded_dtypes"][0].endswith("float32")
    assert g["loaded_lr"] == pytest.approx(1e-4, rel=1e-9)  # the cosine's eta_min
    assert g["loaded_initial_lr"] == pytest.approx(1e-2)
    # the Adafactor second moments are factored for matrices only
    assert g["adafactor_state_shapes"] == {"RMS": (), "exp_avg_sq_row": (16,),
                                           "exp_avg_sq_col": (8,)}
    assert g["adafactor_bias_state"] == ["RMS", "exp_avg_sq", "step"]
    assert g["adafactor_step"] == 24
    # LambdaLR keeps a callable object's __dict__ (25 calls: the initial step and 24 more)
    assert g["lambda_state"] == [{"warmup": 5, "calls": 25}]


def test_lion_steps_are_signs_and_forms_agree():
    g = _run(OPT)
    for moved in g["steps_moved"]:
        _close(moved, np.full(tuple(moved.shape), 1e-2), rtol=1e-12, atol=1e-15)
    assert g["lerp_vs_muladd"] < 1e-12
    assert g["foreach_difference"] == 0.0
    assert g["closure_difference"] == 0.0 and g["closure_grad_enabled_after"]
    assert len(g["closure_losses"]) == 10
    losses = g["lion_losses"]
    assert _mean(losses[-3:]) < 0.7 * _mean(losses[:3])


def test_adafactor_sophia_lookahead_learn():
    g = _run(OPT)
    for key in ("adafactor1_losses", "sophia_losses", "onecycle_losses", "ranger_losses"):
        losses = g[key]
        assert _mean(losses[-3:]) < 0.85 * _mean(losses[:3]), key
    assert g["lookahead_losses"][-1] < 0.6 * g["lookahead_losses"][0]
    # relative-step Adafactor with a 1e-2 cap moves slowly, but downhill
    assert _mean(g["adafactor_losses"][-3:]) < _mean(g["adafactor_losses"][:3])


def test_sophia_clipped_steps_hooks_and_setstate():
    g = _run(OPT)
    # |update| <= lr, plus the decoupled weight decay of a weight under 0.6
    for move, lr in g["sophia_moves"]:
        assert move <= lr * (1 + 0.01 * 0.6) + 1e-12
    assert max(move / lr for move, lr in g["sophia_moves"]) > 0.99  # some entries clip
    hook_log = g["hook_log"]
    assert len(hook_log) == 48
    assert [kind for kind, _ in hook_log] == ["pre", "post"] * 24
    assert [n for kind, n in hook_log if kind == "post"] == list(range(1, 25))
    assert [lr for kind, lr in hook_log if kind == "pre"][1:] == pytest.approx(
        g["sophia_lrs"][:-1], rel=1e-12)
    assert g["hooks_removed"]
    assert (g["sophia_hessian"].numpy() >= 0).all()
    # an old checkpoint (float steps, no "maximize") is brought up to date by __setstate__
    step = g["sophia_loaded_step"]
    assert g["torch"].is_tensor(step) and float(step) == 25.0
    assert g["sophia_loaded_maximize"] == [False]
    assert g["copy_step_is_tensor"] and not g["copy_shares_params"]


def test_lookahead_plateau_and_ranger():
    g = _run(OPT)
    assert g["lookahead_synced"] == [True] * 6
    assert g["plateau_lrs"] == [[0.01, 0.02]] * 3 + [[0.005, 0.01]] * 3
    assert g["plateau_last_lr"] == [0.005, 0.01]
    assert {"lookahead_alpha", "lookahead_k", "lookahead_step"} <= set(g["lookahead_group_keys"])
    assert g["lookahead_state_keys"] == ["exp_avg", "exp_avg_sq", "lookahead_slow_buff", "step"]
    assert g["ranger_state_keys"] == ["exp_avg", "exp_avg_sq", "lookahead_slow_buff", "step"]
    assert g["ranger_step"] == 24
    assert g["ranger_buffer_steps"] == list(range(15, 25))
    # the user's scheduler warns as the built-in ones do when get_lr() is called outside step()
    # (the deprecated Number-first overloads RAdam uses warn too, once per process on torch)
    messages = [message for _, message in g["ranger_warnings"]]
    assert sum("get_last_lr()" in m for m in messages) == 1


def test_lr_sequences():
    g = _run(OPT)
    lion = g["lion_lrs"]
    assert lion[:5] == pytest.approx([1e-3, 3.25e-3, 5.5e-3, 7.75e-3, 1e-2], rel=1e-12)
    assert all(a > b for a, b in zip(lion[4:], lion[5:]))  # the cosine after the warm-up
    assert lion[-1] > 1e-4
    # OneCycleLR: up to max_lr in a quarter, beta1 cycles the other way
    oc, betas = g["onecycle_lrs"], g["onecycle_betas"]
    peak = int(np.argmax(oc))
    assert oc[peak] == pytest.approx(1e-2) and peak == 5
    assert betas[peak][0] == pytest.approx(0.85) and betas[0][0] == pytest.approx(0.95)
    assert {b[1] for b in betas} == {0.98}
    # the warm restarts: back to the base lr at epochs 2, 6 (T_0=2, T_mult=2)
    restarts = [i for i, lr in enumerate(g["sophia_lrs"]) if lr == pytest.approx(0.02)]
    assert restarts == [5, 17]
    # the user's LRScheduler subclass
    ranger = g["ranger_lrs"]
    assert ranger[:4] == pytest.approx([0.0125, 0.025, 0.0375, 0.05])
    assert ranger[-1] == pytest.approx(0.05 * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 19 / 20))))
    assert g["af1_lrs"][:6] == pytest.approx([0.006, 0.006, 0.012, 0.018, 0.024, 0.03])
    categories = [c for c, _ in g["scheduler_warnings"]]
    assert categories == ["UserWarning"] * 3
    assert "before `optimizer.step()`" in g["scheduler_warnings"][0][1]
    assert "get_last_lr()" in g["scheduler_warnings"][1][1]
    assert "epoch parameter" in g["scheduler_warnings"][2][1]


def test_resume_continues_identically():
    g = _run(OPT)
    resume = g["resume"]
    assert sorted(resume) == sorted(g["KINDS"]) and len(resume) == 6
    for kind, r in resume.items():
        assert r["resumed_losses"] == r["straight_losses"], kind
        _close(r["resumed"], r["straight"], rtol=0, atol=0)
        assert r["resumed_lr"] == r["straight_lr"] == r["last_lr"], kind
    assert "_schedulers" in resume["lion_sequential"]["scheduler_keys"]
    assert "num_bad_epochs" in resume["lookahead_plateau"]["scheduler_keys"]


def test_optimizer_trajectories_match_torch():
    g, t = _run(OPT), _run_torch(OPT)
    # float64 models: trajectories, losses and learning rates to rounding
    _close_nested(g["fixed_results"], t["fixed_results"], rtol=1e-10, atol=1e-12)
    for key in ("lion_lrs", "sophia_lrs", "onecycle_lrs", "af1_lrs", "ranger_lrs"):
        assert g[key] == pytest.approx(t[key], rel=1e-13), key
    assert g["onecycle_betas"] == t["onecycle_betas"]
    assert g["plateau_lrs"] == t["plateau_lrs"]
    assert g["hook_log"] == t["hook_log"]
    for kind in g["KINDS"]:
        _close(g["resume"][kind]["straight_losses"], t["resume"][kind]["straight_losses"],
               rtol=1e-10, atol=0)


def test_optimizer_messages_and_state_match_torch():
    g, t = _run(OPT), _run_torch(OPT)
    ours, theirs = dict(g["errors"]), dict(t["errors"])
    # (the TypeError names the tensor's type: ``jitgrad.FloatTensor`` for ``torch.FloatTensor``)
    kind, message = ours.pop("tensor_not_iterable")
    assert (kind, message.replace("jitgrad.", "torch.")) == theirs.pop("tensor_not_iterable")
    assert ours == theirs
    for key in ("duplicate_warnings", "scheduler_warnings", "lion_repr", "lion_state_keys",
                "lion_group_keys", "added_group", "adafactor_state_shapes", "lambda_state",
                "lookahead_group_keys", "lookahead_state_keys", "ranger_state_keys",
                "ranger_buffer_steps", "sophia_loaded_maximize", "grads_zeroed", "grads_none",
                "early_lr", "epoch_lr", "loaded_lr", "loaded_initial_lr"):
        assert g[key] == t[key], key
    for kind in g["KINDS"]:
        assert g["resume"][kind]["scheduler_keys"] == t["resume"][kind]["scheduler_keys"]


# ------------------------------------------------------------------------------- PixelCNNs

PIX = "gated_pixelcnn"


def test_pixelcnn_masks_and_causality():
    g = _run(PIX)
    assert g["mask_a"].tolist() == [[1, 1, 1], [1, 0, 0], [0, 0, 0]]
    assert g["mask_b"].tolist() == [[1, 1, 1], [1, 1, 0], [0, 0, 0]]
    past = g["past"].numpy()
    for key in ("masked_dependency", "gated_dependency", "pp_dependency"):
        dep = g[key].numpy()
        assert not (dep & ~past).any(), key  # nothing at or after the pixel
    # the gated stacks and PixelCNN++'s shifted streams see the whole past...
    assert (g["gated_dependency"].numpy() == past).all()
    assert (g["pp_dependency"].numpy() == past).all()
    # ...the masked stack misses its blind spot up and to the right (and the first row: its
    # receptive field is 2 + 2 + 1 rows)
    missed = sorted(map(tuple, np.argwhere(past & ~g["masked_dependency"].numpy()).tolist()))
    assert missed == [(0, c) for c in range(8)] + [(3, 7), (4, 6), (4, 7)]
    assert g["buffer_names"] == ["layers.0.vmask", "layers.0.hmask", "input_conv.mask"]
    assert g["masks_hold"] and g["masked_rows_zero"] and g["masked_rows_grad"] > 0
    # the same mask as a parametrization: equal outputs, no gradient where masked
    assert g["parametrized_difference"] == 0.0
    assert g["parametrized_masked_grad"] == 0.0 and g["data_masked_grad"] > 0
    assert g["parametrized_keys"] == ["bias", "parametrizations.weight.original"]
    # and through _conv_forward with "same" padding (F.conv2d where that is missing)
    assert g["same_difference"] == 0.0 and g["same_masked_grad"] == 0.0
    assert g["pp_state_keys"] == ["u_init.conv.bias", "u_init.conv.weight_g",
                                  "u_init.conv.weight_v"]
    assert [c for c, _ in g["weight_norm_warnings"]][:1] == ["FutureWarning"]


def test_discretized_logistic_mixture():
    g = _run(PIX)
    total = g["mixture_total"].numpy()
    assert total.shape == (2, 4, 4)
    # (to the density-at-the-centre approximation where a bin's mass is under 1e-5)
    _close(total, np.ones_like(total), rtol=0, atol=1e-6)
    assert float(g["lse_difference"]) < 1e-12 and float(g["lsm_difference"]) < 1e-12
    log_probs = g["fixed_results"]["mixture_log_probs"].numpy()
    assert log_probs.shape == (2, 4, 4) and (log_probs < 0).all()
    # a component far narrower than a bin, whose mean is outside it: the log-density branch
    mid_in = math.exp(7.0) * (1.0 / 3 + 0.5)
    expected = mid_in + 7.0 - 2 * mid_in - math.log(1.5)
    assert g["peaked_log_prob"] == pytest.approx(expected, rel=1e-12)


def test_pixelcnns_learn_and_sample():
    g = _run(PIX)
    for key in ("gated_losses", "pixel_losses"):
        losses = g[key]
        assert len(losses) == 32
        assert _mean(losses[-5:]) < 0.75 * _mean(losses[:5]), key
    assert g["gated_bpd"] < 0.7 * g["uniform_bpd"] and g["pixel_bpd"] < 0.7 * g["uniform_bpd"]
    for key in ("gated_samples", "pixel_samples"):
        samples = g[key].numpy()
        assert samples.shape == (10, 8, 8) and samples.dtype == np.int64
        assert samples.min() >= 0 and samples.max() <= 3
    for kind in ("gated", "pixelcnn"):
        assert 0.4 < g["sample_mean_levels"][kind] < 1.6
        assert g["sample_border"][kind] > 0.6  # the digits' blank left column
    assert g["data_border"] > 0.99


def test_pixelcnn_fixed_results_match_torch():
    g, t = _run(PIX), _run_torch(PIX)
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    # samples drawn with the same seed from the same weights are the same
    for key in ("gated_samples", "pixelcnn_samples"):
        assert ours.pop(key).tolist() == theirs.pop(key).tolist()
    # float64 likelihood to rounding
    for key in ("mixture_log_probs", "mixture_grad", "peaked_log_prob"):
        _close(ours.pop(key), theirs.pop(key), rtol=1e-12, atol=1e-12)
    # float32 gradients of summed losses (up to ~1e3) carry their largest entries' rounding
    for key in ("pixelcnn_grad_input", "pp_grad_g", "pp_grad_v", "pp_grad_nin",
                "gated_grad_vert", "gated_grad_embedding"):
        _close_scaled(ours.pop(key), theirs.pop(key))
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)


def test_pixelcnn_first_losses_match_torch():
    g, t = _run(PIX), _run_torch(PIX)
    _close(g["gated_losses"][:10], t["gated_losses"][:10], rtol=1e-5, atol=0)
    _close(g["pixel_losses"][:10], t["pixel_losses"][:10], rtol=1e-5, atol=0)
    assert g["masked_dependency"].tolist() == t["masked_dependency"].tolist()
    assert g["gated_dependency"].tolist() == t["gated_dependency"].tolist()
    assert g["pp_dependency"].tolist() == t["pp_dependency"].tolist()
    assert g["weight_norm_warnings"] == t["weight_norm_warnings"]
