"""Scripts written for these tests in the way common PyTorch code of two kinds is written (set
O32: a mixture-of-experts transformer language model as Mixtral-style minimal code, the HF
Mixtral / DeepSeek blocks and lucidrains' mixture-of-experts write it, Shazeer's noisy gating
and expert-choice routing beside it, and a Kolmogorov-Arnold network as efficient-kan, pykan,
ChebyKAN and FastKAN write it), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that the MoE language model learned its synthetic rules through
Mixtral top-k, Switch capacity-limited and DeepSeek group-limited layers with their balance and
z losses, that each layer's dispatches (``torch.where`` + ``index_add_``, boolean masks,
einsum dispatch tensors, argsort) agree, that tokens over capacity were dropped and every
expert was used; that the KAN fitted exp(sin(pi x) + y^2) by LBFGS with grid updates and by
AdamW on minibatches, that its B-spline bases are a partition of unity and least squares
recovers known curves; and, where torch is installed, that the fixed-weight parts (logits,
losses, routing, gradients, AdamW steps, bfloat16 autocast, noisy gating from torch's random
numbers; bases, least-squares coefficients, updated grids, double-precision LBFGS steps,
Laplacians through nested Jacobians) and the first training losses equal the same script's
with ``import torch``.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

# ------------------------------------------------------------- mixture-of-experts transformer


def test_moe_transformer_learns_the_rules_and_routes():
    g = _run("moe_transformer")
    config, iters = g["config"], g["max_iters"]
    ce, losses = np.array(g["ce_losses"]), np.array(g["losses"])
    assert len(ce) == len(losses) == iters == 80 and np.isfinite(losses).all()
    # from about log(24) down towards the floor (the first digit is random: log(20) / 16)
    assert ce[0] > 0.9 * math.log(config.vocab_size)
    assert np.mean(ce[-10:]) < min(0.7, 0.25 * ce[0]), (ce[:3], ce[-3:])
    assert g["val_accuracy"] > 0.9 and g["greedy_accuracy"] > 0.8
    evals = g["eval_history"]
    assert [it for it, _ in evals] == [0, 40, 79]
    assert evals[-1][1]["val"] < 0.5 * evals[0][1]["val"]
    # the auxiliary losses: two top-2 Switch terms (~2 at balance) and one top-1 (~1)
    aux = np.array(g["aux_losses"])
    assert 2.9 < np.mean(aux[-10:]) < 3.5
    assert (np.array(g["z_losses"]) > 0).all()
    # warm-up then cosine decay to a tenth
    lrs = g["lrs"]
    assert lrs[0] == pytest.approx(5e-3 * 2 / 8) and max(lrs) == pytest.approx(5e-3)
    assert lrs[-1] == pytest.approx(5e-4, rel=1e-6)
    # every expert of every layer got tokens; the counts are the tokens routed (k each)
    tokens = iters * 32 * config.block_size
    counts = g["expert_counts"]
    assert [int(c.sum()) for c in counts] == [2 * tokens, tokens, 2 * tokens]
    assert all(int(c.min()) > 0.1 * tokens / config.n_experts for c in counts)
    dropped = g["dropped_tokens"]
    assert len(dropped) == iters and max(dropped) > 0
    assert np.mean(dropped) < 0.2 * 32 * config.block_size
    # decay / no-decay groups: the matrices (and the batched expert weights) decay
    groups = g["optimizer"].param_groups
    assert [grp["weight_decay"] for grp in groups] == [0.1, 0.0]
    assert all(p.dim() >= 2 for p in groups[0]["params"])
    model = g["model"]
    assert model.transformer.wte.weight is model.lm_head.weight
    assert g["n_params"] == sum(p.numel() for p in model.parameters())
    sampled, greedy = g["sampled"], g["greedy"]
    assert tuple(sampled.shape) == tuple(greedy.shape) == (8, config.block_size)


def test_moe_transformer_dispatches_agree():
    g = _run("moe_transformer")
    r = g["fixed_results"]
    n_tokens = 8 * 16
    # SDPA with is_causal equals the masked softmax written out
    _close(r["attn_sdpa"], r["attn_manual"], rtol=1e-5, atol=1e-7)
    # Mixtral: torch.where + index_add_ equals the boolean-mask dispatch with the gate as a
    # softmax over the top-k logits (the renormalized top-k of the softmax is the same thing)
    _close(r["topk_out"], r["topk_masked_out"], rtol=1e-5, atol=1e-8)
    weights, selected, gates = r["routing_weights"], r["selected"], r["gates"]
    _close(weights.sum(-1), np.ones(n_tokens), rtol=1e-6)
    assert ((gates > 0).sum(-1) == 2).all()
    _close(gates.gather(1, selected), weights, rtol=1e-5, atol=1e-7)
    assert r["counts0"].tolist() == np.bincount(selected.numpy().ravel(), minlength=4).tolist()
    # Switch capacity: ceil(1.25 * 128 / 4) slots per expert, the overflow dropped
    assert r["capacity"] == 40
    kept, slot, counts1 = r["capacity_kept"], r["capacity_slot"], r["counts1"]
    assert int(kept.sum()) == n_tokens - r["dropped"]
    assert r["dropped"] == int(np.maximum(counts1.numpy() - 40, 0).sum())
    assert int(slot.max()) < 40
    _close(r["capacity_out"], r["capacity_loop_out"], rtol=1e-5, atol=1e-7)
    # DeepSeek: training's boolean-mask dispatch equals inference's argsort dispatch; the two
    # experts of a token come from one group
    _close(r["deepseek_train_out"], r["deepseek_infer_out"], rtol=1e-5, atol=1e-8)
    assert {tuple(pair) for pair in r["deepseek_selected"].tolist()} <= {(0, 1), (2, 3)}
    assert int(r["deepseek_counts"].sum()) == 2 * n_tokens
    assert r["deepseek_aux_in_loss"] > 0
    # bfloat16 autocast: the logits in bfloat16, the loss close to float32's
    assert r["amp_dtype"] is True
    assert r["amp_loss"] == pytest.approx(r["eval_loss"], rel=1e-2)


def test_moe_transformer_fixed_weights_match_torch():
    g, t = _run("moe_transformer"), _run_torch("moe_transformer")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.keys() == theirs.keys()
    for key in ("capacity", "dropped", "amp_dtype"):
        assert ours.pop(key) == theirs.pop(key), key
    for key in ("selected", "counts0", "counts1", "capacity_kept", "capacity_slot",
                "deepseek_selected", "deepseek_counts"):
        assert ours.pop(key).tolist() == theirs.pop(key).tolist(), key
    # (bfloat16: a unit in the last place of a logit is ~4e-3)
    assert ours.pop("amp_loss") == pytest.approx(theirs.pop("amp_loss"), rel=2e-3)
    for key in [k for k in theirs if isinstance(theirs[k], float)]:
        assert ours.pop(key) == pytest.approx(theirs.pop(key), rel=1e-5), key
    grads, steps = ours.pop("grads"), ours.pop("after_step")
    t_grads, t_steps = theirs.pop("grads"), theirs.pop("after_step")
    assert list(grads) == list(t_grads) == list(steps) == list(t_steps)
    for name in t_grads:
        _close(grads[name], t_grads[name], rtol=1e-4, atol=1e-7)
        # AdamW's first step is lr * g / (|g| + eps): where a gradient is rounding noise (the
        # key biases', 0 in exact arithmetic) the step is noise too
        signal = np.abs(t_grads[name].numpy()) > 1e-6
        _close(steps[name].numpy()[signal], t_steps[name].numpy()[signal], rtol=1e-5,
               atol=1e-6)
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-7)


def test_moe_transformer_first_losses_match_torch():
    g, t = _run("moe_transformer"), _run_torch("moe_transformer")
    # the same batches and router jitter (torch's random numbers): the same first steps
    _close(g["losses"][:10], t["losses"][:10], rtol=1e-5, atol=0)
    _close(g["aux_losses"][:10], t["aux_losses"][:10], rtol=1e-5, atol=0)
    _close(g["grad_norms"][:5], t["grad_norms"][:5], rtol=1e-4, atol=0)
    assert g["dropped_tokens"][:10] == t["dropped_tokens"][:10]
    assert g["lrs"] == pytest.approx(t["lrs"], rel=1e-12)
    assert g["eval_history"][0][1] == pytest.approx(t["eval_history"][0][1], rel=1e-5)


def test_noisy_gating_and_expert_choice_route():
    r = _run("moe_noisy_gating")["results"]
    # two experts per row, the evaluated mixture equals the dense sum
    assert ((r["noisy_gates"] > 0).sum(-1) == 2).all()
    _close(r["noisy_gates"].sum(-1), np.ones(24), rtol=1e-5)
    _close(r["noisy_eval_y"], r["noisy_dense_y"], rtol=1e-5, atol=1e-6)
    assert int(r["noisy_eval_load"].sum()) == 48 and float(r["histc"].sum()) == 24
    assert tuple(r["expert_choice_index"].shape) == (4, 8)
    assert r["noisy_aux"] > 0 and r["expert_choice_grad"].abs().sum() > 0


def test_noisy_gating_and_expert_choice_match_torch():
    ours = dict(_run("moe_noisy_gating")["results"])
    theirs = dict(_run_torch("moe_noisy_gating")["results"])
    assert ours.keys() == theirs.keys()
    for key in ("noisy_eval_load", "histc", "expert_choice_index"):
        assert ours.pop(key).tolist() == theirs.pop(key).tolist(), key
    for key in ("noisy_aux", "noisy_eval_aux"):
        assert ours.pop(key) == pytest.approx(theirs.pop(key), rel=1e-5), key
    noisy, t_noisy = ours.pop("noisy_grads"), theirs.pop("noisy_grads")
    assert list(noisy) == list(t_noisy)
    for name in t_noisy:
        _close(noisy[name], t_noisy[name], rtol=1e-4, atol=1e-8)
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-7)


# ----------------------------------------------------------- Kolmogorov-Arnold network (KAN)


def test_kan_fits_with_lbfgs_grid_updates_and_adamw():
    g = _run("kan_spline")
    train, test = np.array(g["train_rmse"]), np.array(g["test_rmse"])
    assert len(train) == len(test) == 20 and np.isfinite(train).all()
    # (the labels' standard deviation is about 1.6)
    assert train[-1] < min(0.05, 0.2 * train[0]), (train[:3], train[-3:])
    assert test[-1] < 0.06
    assert g["closure_calls"][0] > 20  # LBFGS evaluates several times per step
    assert g["model"].layers[0].grid.dtype == g["torch"].float64
    # the edge activations sum to the layer's output
    assert g["acts_sum_matches"] is True
    assert tuple(g["edge_importance"].shape) == (5, 2)
    # efficient-kan's loop: AdamW over minibatches under ExponentialLR
    losses, rmse = np.array(g["adam_losses"]), g["adam_test_rmse"]
    per_epoch = len(g["loader"])
    assert per_epoch == 8 and len(losses) == 8 * per_epoch and np.isfinite(losses).all()
    assert np.mean(losses[-per_epoch:]) < 0.1 * np.mean(losses[:per_epoch])
    assert rmse[-1] < 0.4 * rmse[0]
    _close(g["adam_lrs"], [3e-2 * 0.85 ** (i + 1) for i in range(8)], rtol=1e-9)


def test_kan_splines_and_fits_are_consistent():
    g = _run("kan_spline")
    r = g["fixed_results"]
    # the knots: uniform, spline_order beyond [-1, 1] on each side
    _close(r["grid"], np.tile(np.arange(-3, 9) * 0.4 - 1, (2, 1)), rtol=0, atol=1e-6)
    bases = r["bases"]
    assert tuple(bases.shape) == (64, 2, 8) and float(bases.min()) >= 0
    _close(r["bases_sum"], np.ones((64, 2)), rtol=0, atol=1e-6)  # a partition of unity
    # least squares through 64 points: cubic splines reproduce x^2, approximate the others
    err = np.abs(r["lstsq_refit"].numpy() - r["lstsq_target"].numpy()).max(axis=(0, 1))
    assert err[1] < 1e-5 and err[0] < 0.02 and err[2] < 0.02, err
    # the regularization: L1 and entropy parts of the first layer, both positive
    l1, entropy = r["reg_parts"]
    assert 0 < l1 and 0 < entropy <= math.log(2 * 3) + 1e-6
    assert l1 + entropy < r["reg"]
    # the updated grids: increasing knots, the interior ones spanning the data
    fx = g["fx"].numpy()
    for grid in r["updated_grids"][:1]:
        grid = grid.numpy()
        assert (np.diff(grid, axis=1) > 0).all()
        _close(grid[:, 3], fx.min(0) - 0.01, rtol=0, atol=0.05)
        _close(grid[:, -4], fx.max(0) + 0.01, rtol=0, atol=0.05)
    # two LBFGS steps in double precision lowered the loss
    first, second = r["lbfgs_losses"]
    assert r["final_mse"] < second < first
    assert r["grid_is_double"] is True
    # the physics-informed part: the batch Jacobian equals autograd.grad's
    _close(r["pde_D1"], r["pde_D1_grad"], rtol=1e-6, atol=1e-7)
    assert np.isfinite(r["pde_loss"]) and r["pde_lap"].shape == (32, 1)


def test_kan_fixed_weights_match_torch():
    g, t = _run("kan_spline"), _run_torch("kan_spline")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.keys() == theirs.keys()
    assert ours.pop("lbfgs_counts") == theirs.pop("lbfgs_counts")
    assert ours.pop("grid_is_double") == theirs.pop("grid_is_double")
    # double precision: LBFGS with the strong Wolfe line search takes the same steps
    _close(ours.pop("lbfgs_losses"), theirs.pop("lbfgs_losses"), rtol=1e-10, atol=0)
    assert ours.pop("final_mse") == pytest.approx(theirs.pop("final_mse"), rel=1e-9)
    _close_nested(ours.pop("after_lbfgs"), theirs.pop("after_lbfgs"), rtol=1e-9, atol=1e-11)
    # float32 least squares (torch's gelsy, a different LAPACK route from an SVD): rounding
    # of a few units in the last place, relative to each solution's scale
    for key in ("init_spline_weight", "lstsq_coeff", "lstsq_refit"):
        _close(ours.pop(key), theirs.pop(key), rtol=1e-5, atol=2e-6)
    for key in ("updated_grids", "updated_spline_weight"):  # (one tensor per layer)
        mine, other = ours.pop(key), theirs.pop(key)
        assert len(mine) == len(other) == 2
        for a, b in zip(mine, other):
            _close(a, b, rtol=1e-5, atol=2e-6)
    for key in [k for k in theirs if isinstance(theirs[k], float)]:
        assert ours.pop(key) == pytest.approx(theirs.pop(key), rel=1e-5), key
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)


def test_kan_first_steps_match_torch():
    g, t = _run("kan_spline"), _run_torch("kan_spline")
    # double precision, up to the second grid update (step 3); after it, LBFGS's line search
    # on the re-fitted splines amplifies rounding: the later steps are compared by the fit
    _close(g["train_rmse"][:3], t["train_rmse"][:3], rtol=1e-8, atol=0)
    _close(g["test_rmse"][:3], t["test_rmse"][:3], rtol=1e-8, atol=0)
    _close(g["reg_values"][:3], t["reg_values"][:3], rtol=1e-8, atol=0)
    # float32 AdamW on the same shuffled minibatches (torch's random numbers)
    _close(g["adam_losses"][:16], t["adam_losses"][:16], rtol=1e-5, atol=0)
    _close(g["adam_test_rmse"], t["adam_test_rmse"], rtol=1e-4, atol=0)
    assert g["adam_lrs"] == pytest.approx(t["adam_lrs"], rel=1e-12)
