"""Scripts written for these tests in the way common PyTorch code of two kinds is written (set
R33: neural ODEs with the adjoint method as torchdiffeq and its examples (ode_demo, cnf) write
them, and LoRA fine-tuning as peft, loralib and minLoRA write it), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that the neural ODE fitted the spiral and the continuous normalizing
flow's negative log-likelihood fell, that the adjoint's gradients equal
backprop through the solvers and pass gradcheck, that Hutchinson's estimator averages to the
exact divergence; that LoRA fine-tuning learned the new task with the pretrained weights frozen,
merged and unmerged and parametrized and wrapped forms agree, and that a LoRA-only state_dict
restores the model; and, where torch is installed, that the fixed-weight results and the first
training losses equal the same script's with ``import torch``.
"""

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

# ------------------------------------------------------------------- neural ODE and adjoint


def test_neural_ode_fits_the_spiral():
    g = _run("neural_ode_adjoint")
    assert tuple(g["true_y"].shape) == (200, 1, 2)
    # the true spiral decays towards the origin
    radii = g["true_y"][:, 0].norm(dim=1)
    assert radii[-1].item() < 0.5 * radii[0].item()
    losses = g["losses"]
    assert len(losses) == g["niters"] + 10 == 130 and np.isfinite(losses).all()
    assert np.mean(losses[110:120]) < 0.25 * np.mean(losses[:10]), (losses[:10], losses[110:120])
    # the loss over every window of the trajectory, at iterations 1, 40, 80, 120
    evals = g["eval_losses"]
    assert len(evals) == 4 and evals[-1] < 0.25 * evals[0], evals
    # training went on with the adjoint at the trained loss level
    assert np.mean(g["adjoint_losses"]) < 0.5 * np.mean(losses[:10])


def test_adjoint_gradients_equal_backprop_through_the_solver():
    g = _run("neural_ode_adjoint")
    r, errors = g["fixed_results"], g["adjoint_rel_errors"]
    for method in ("rk4", "dopri5"):
        # the adjoint's forward is the same solve under no_grad
        _close(r[f"{method}_adjoint_pred"], r[f"{method}_pred"], rtol=0, atol=0)
        assert errors[f"{method}_grads"] < 1e-5, errors
        assert errors[f"{method}_y0_grad"] < 1e-5, errors
    # time gradients: against the adaptive solver, which steps onto each output time (the
    # fixed grid interpolates linearly between grid points, so its dL/dt is only first-order)
    assert errors["dopri5_t_grad"] < 1e-5, errors
    # rk4: two 3/8-rule steps of four evaluations per interval; the adjoint adds one
    # evaluation per interval for the time gradient
    assert r["rk4_nfe_forward"] == r["rk4_adjoint_nfe_forward"] == 5 * 2 * 4
    assert r["rk4_nfe_backward"] == 0 and r["rk4_adjoint_nfe_backward"] == 5 * (2 * 4 + 1)
    # dopri5: 6 evaluations per step, 2 for the initial step size
    assert r["dopri5_nfe_forward"] == r["dopri5_adjoint_nfe_forward"]
    assert r["dopri5_nfe_forward"] % 6 == 2 and r["dopri5_adjoint_nfe_backward"] > 0
    assert g["round_trip_error"] < 1e-4
    assert g["gradcheck_ok"] is True
    # the continuous normalizing flow: adjoint and backprop through the tuple state
    _close(r["cnf_adjoint_logp"], r["cnf_logp"], rtol=0, atol=0)
    a, b = r["cnf_adjoint_grads"], r["cnf_grads"]
    assert ((a - b).norm() / b.norm()).item() < 1e-5


def test_divergence_estimators_agree():
    g = _run("neural_ode_adjoint")
    exact = g["fixed_results"]["exact_divergence"]
    # one autograd.grad per dimension = the trace of the full Jacobian
    _close(exact, g["jacobian_trace"], rtol=1e-5, atol=1e-8)
    # Hutchinson's estimator over 400 probes averages to it
    scale = exact.abs().max().item()
    assert (g["hutchinson_div"] - exact).abs().max().item() < 0.25 * scale


def test_cnf_fits_two_circles():
    g = _run("neural_ode_adjoint")
    cnf = g["cnf_losses"]
    assert np.mean(cnf[-5:]) < 0.7 * np.mean(cnf[:3]), (cnf[:3], cnf[-5:])
    # Hutchinson's estimator kept the fitted level
    assert np.mean(g["hutchinson_losses"]) < 0.8 * np.mean(cnf[:3])
    # the flow puts its mass on the circles, not far away
    assert g["logp_data"] > -2.0 and g["logp_far"] < g["logp_data"] - 10


def test_neural_ode_fixed_weights_match_torch():
    g, t = _run("neural_ode_adjoint"), _run_torch("neural_ode_adjoint")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.keys() == theirs.keys()
    for key in [k for k in theirs if "nfe" in k]:
        assert ours.pop(key) == theirs.pop(key), key
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)
    assert g["gradcheck_ok"] == t["gradcheck_ok"]


def test_neural_ode_first_losses_match_torch():
    g, t = _run("neural_ode_adjoint"), _run_torch("neural_ode_adjoint")
    # the same windows (torch.randperm) and the same weights: the same first steps
    _close(g["losses"][:10], t["losses"][:10], rtol=1e-5, atol=0)
    _close(g["eval_losses"][:1], t["eval_losses"][:1], rtol=1e-5, atol=0)
    _close(g["cnf_losses"][:5], t["cnf_losses"][:5], rtol=1e-5, atol=0)


# --------------------------------------------------------------------------- LoRA fine-tuning


def test_lora_finetuning_learns_the_new_task():
    g = _run("lora_finetune")
    pre = g["pretrain_losses"]
    assert len(pre) == 12 * 12 and np.mean(pre[-12:]) < 0.2 * np.mean(pre[:12])
    assert g["pretrained_acc"] > 0.9
    # the new task's labels group the tokens differently: the pretrained model is near chance
    assert g["zero_shot_acc"] < 0.4
    lora = g["lora_losses"]
    assert lora[0] == pytest.approx(np.log(4), rel=1e-6)  # the zeroed head
    assert np.mean(lora[-8:]) < 0.4 * np.mean(lora[:8])
    assert g["finetuned_acc"] > 0.85 and g["finetuned_acc"] > g["zero_shot_acc"] + 0.4
    # only the LoRA matrices and the head trained; the pretrained weights did not move
    assert g["trainable_names"] == [
        "blocks.0.attn.q_proj.lora_A", "blocks.0.attn.q_proj.lora_B",
        "blocks.0.attn.v_proj.lora_A", "blocks.0.attn.v_proj.lora_B",
        "blocks.0.fc1.lora_A", "blocks.0.fc1.lora_B", "classifier.weight", "classifier.bias"]
    # r = 4: (4x32 + 32x4) for q and v, (4x32 + 64x4) for fc1, and the 32x4 + 4 head
    assert g["trainable_params"] == 2 * 256 + 384 + 132
    assert g["all_params"] == g["trainable_params"] + sum(
        v.numel() for v in g["pretrained_sd"].values()) - 132
    assert g["frozen_max_change"] == 0.0
    assert g["original_unchanged"] is True


def test_lora_merged_unmerged_and_parametrized_forms_agree():
    g = _run("lora_finetune")
    assert g["merge_error"] < 1e-5 and g["unmerge_error"] < 1e-6
    assert g["eval_merge_error"] < 1e-5 and g["merged_flags"] == [True] * 3
    # minLoRA's parametrization and the wrapping layer: outputs and gradients
    assert g["param_agreement"] < 1e-5 and g["param_grad_agreement"] < 1e-6
    r = g["fixed_results"]
    _close(g["cached_logits"], r["param_logits"], rtol=1e-6, atol=1e-7)
    _close(r["disabled_logits"], r["base_logits"], rtol=1e-6, atol=1e-7)
    _close(r["merged_param_logits"], r["param_logits"], rtol=1e-5, atol=1e-6)
    assert g["lora_param_names"] == sorted(
        f"blocks.0.{m}.parametrizations.weight.0.lora_{ab}"
        for m in ("attn.q_proj", "attn.v_proj", "fc1") for ab in "AB")
    assert "blocks.0.fc1.parametrizations.weight.original" in g["parametrized_names"]
    assert not any("parametrizations" in n for n in g["merged_param_names"])
    assert g["param_types"] == ("ParametrizedLinear", "Linear", True, False)
    # both forms trained from the same A and B follow the same losses
    _close(g["param_losses"], g["wrap_losses"], rtol=1e-5, atol=0)
    assert g["ft_agreement"] < 1e-4
    assert np.mean(g["wrap_losses"][-3:]) < 0.6 * g["wrap_losses"][0]


def test_lora_state_dict_round_trip():
    g = _run("lora_finetune")
    assert g["adapter_keys"] == sorted(
        f"blocks.0.{m}.lora_{ab}" for m in ("attn.q_proj", "attn.v_proj", "fc1") for ab in "AB")
    # strict=False: every pretrained key missing, nothing unexpected
    missing = g["missing_keys"]
    assert g["unexpected_keys"] == []
    assert not any("lora_" in k or k.startswith("classifier.") for k in missing)
    assert "blocks.0.attn.q_proj.base_layer.weight" in missing and "wpe" in missing
    assert len(missing) == len(g["pretrained_sd"]) - 2
    assert g["bad_unexpected"] == ["blocks.0.attn.q_proj.lora_C"]
    assert g["restored_error"] == 0.0 and g["unloaded_error"] < 1e-6
    assert "LoRALinear" not in g["unloaded_types"]
    assert g["param_missing"] == [
        f"blocks.0.{m}.parametrizations.weight.{k}" for m in ("attn.q_proj", "attn.v_proj", "fc1")
        for k in ("original", "0.lora_dropout_mask")]
    assert g["param_restored_error"] == 0.0


def test_lora_fixed_weights_match_torch():
    g, t = _run("lora_finetune"), _run_torch("lora_finetune")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.keys() == theirs.keys()
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)
    for key in ("missing_keys", "unexpected_keys", "bad_unexpected", "parametrized_names",
                "merged_param_names", "trainable_names", "param_missing", "param_types"):
        assert g[key] == t[key], key
    assert g["trainable_params"] == t["trainable_params"]


def test_lora_first_losses_match_torch():
    g, t = _run("lora_finetune"), _run_torch("lora_finetune")
    # the same shuffles and the same LoRA dropout masks: the same first steps
    _close(g["pretrain_losses"][:12], t["pretrain_losses"][:12], rtol=1e-5, atol=0)
    _close(g["lora_losses"][:8], t["lora_losses"][:8], rtol=1e-5, atol=0)
    _close(g["wrap_losses"][:5], t["wrap_losses"][:5], rtol=1e-5, atol=0)


def test_saving_a_parametrized_module_fails_as_in_torch():
    g, t = _run("lora_finetune"), _run_torch("lora_finetune")
    assert t["save_error"] == ("RuntimeError", "Serialization of parametrized modules is only "
                               "supported through state_dict(). See:")
    assert g["save_error"] == t["save_error"]
