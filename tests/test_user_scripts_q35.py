"""Scripts written for these tests in the way common PyTorch code of two kinds is written (set
Q35: N-BEATS as the paper authors' code and its ports write it, and a Temporal Fusion
Transformer as pytorch-forecasting and "TFT from scratch" code write it), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that the polynomial and Fourier bases give the curves they encode,
that the M4 losses (sMAPE, MAPE, MASE through ``divide_no_nan``) and their gradients are what
they are by hand, that the doubly residual stacks sum to the forecast and the input mask zeroes
the residuals, that both N-BEATS models beat a seasonal naive forecast under OneCycleLR; that
the TFT's selection weights and attention are distributions (causal, shared value head), the
einsum and fused-SDPA forms agree with the loop forms, the shared modules appear twice in the
state_dict, the quantile forecasts cover the targets and ReduceLROnPlateau followed its rule;
and, where torch is installed, that the fixed-weight parts and the first training losses equal
the same scripts' with ``import torch``.
"""

import math

import numpy as np

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested


def _np(x):
    return np.asarray(x, dtype=np.float64)


def _plateau_rule(metrics, lr=1.0, mode="min", factor=0.1, patience=10, threshold=1e-4,
                  threshold_mode="rel", cooldown=0, min_lr=0.0, eps=1e-8):
    """ReduceLROnPlateau's documented rule, replayed in Python."""
    best = math.inf if mode == "min" else -math.inf
    bad, cool, lrs = 0, 0, []
    for m in metrics:
        m = float(m)
        if mode == "min":
            better = m < (best * (1 - threshold) if threshold_mode == "rel" else best - threshold)
        else:
            better = m > (best * (1 + threshold) if threshold_mode == "rel" else best + threshold)
        if better:
            best, bad = m, 0
        else:
            bad += 1
        if cool > 0:
            cool -= 1
            bad = 0
        if bad > patience:
            new_lr = max(lr * factor, min_lr)
            if lr - new_lr > eps:
                lr = new_lr
            cool, bad = cooldown, 0
        lrs.append(lr)
    return lrs


def _one_cycle_cos(total, steps=None, max_lr=1e-2, pct_start=0.3, div=25.0, final_div=1e4):
    """OneCycleLR's two-phase cosine schedule at ``steps`` (default: 0 .. total - 1; a step past
    the end extends the last phase's cosine, as the scheduler does)."""
    initial = max_lr / div
    low = initial / final_div
    end_up = pct_start * total - 1

    def cos(start, end, pct):
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)

    lrs = []
    for step in range(total) if steps is None else steps:
        if step <= end_up:
            lrs.append(cos(initial, max_lr, step / end_up))
        else:
            lrs.append(cos(max_lr, low, (step - end_up) / (total - 1 - end_up)))
    return lrs


# ----------------------------------------------------------------------------- N-BEATS


def test_nbeats_bases_and_m4_losses():
    g = _run("nbeats_tft")
    r = g["fixed_results"]
    assert g["trend_basis_error"] < 1e-6 and g["season_basis_error"] < 1e-6
    assert g["buffer_names"] == ["backcast_cos_template", "backcast_sin_template",
                                 "forecast_cos_template", "forecast_sin_template"]
    # powers of t/L: row i is t^i
    t = np.arange(24) / 24
    _close(r["trend_backcast_time"], np.stack([t ** 0, t, t ** 2]), rtol=1e-6, atol=1e-7)
    # harmonic k of the forecast template is cos(2 pi k t / 12)
    _close(r["season_forecast_cos"],
           np.cos(2 * np.pi * np.arange(3)[:, None] * np.arange(6)[None, :] / 12),
           rtol=0, atol=1e-6)
    _close(r["divide_no_nan"], [0.0, 0.0, -0.5, 1.5], rtol=0, atol=0)
    # the losses by hand
    f = np.array([[1.0, 2.0, 0.0, 4.0], [0.5, 0.0, 3.0, -1.0]])
    y = np.array([[1.5, 2.0, 0.0, 3.0], [0.0, 1.0, 2.5, -2.0]])
    mask = np.array([[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.nan_to_num(np.abs(f - y) / (np.abs(f) + np.abs(y)), nan=0.0, posinf=0.0)
        weights = np.nan_to_num(mask / y, nan=0.0, posinf=0.0, neginf=0.0)
    losses = r["loss_values"]
    _close(losses["smape"], 200 * np.mean(ratio * mask), rtol=1e-6)
    _close(losses["mape"], np.mean(np.abs((f - y) * weights)), rtol=1e-6)
    # the second series is constant in-sample: its seasonal naive scale is zero, so it drops out
    insample = np.array([[1.0, 2.0, 3.0, 1.5, 2.5, 3.5], [2.0] * 6])
    scale = np.abs(insample[:, 3:] - insample[:, :-3]).mean(1)
    inv = np.where(scale[:, None] > 0, mask / np.where(scale > 0, scale, 1)[:, None], 0.0)
    _close(losses["mase"], np.mean(np.abs(y - f) * inv), rtol=1e-6)
    grads = r["loss_grads"]
    # 0/0 was set to zero in the value, but the division's backward still makes 0/0 = NaN there
    smape_grad = _np(grads["smape"])
    assert np.isnan(smape_grad[0, 2]) and np.isfinite(np.delete(smape_grad.ravel(), 2)).all()
    assert _np(grads["mape"])[1, 0] == 0.0  # a zero target gets no weight
    _close(_np(grads["mase"])[1], np.zeros(4), rtol=0, atol=0)


def test_nbeats_stacks_masks_and_shared_blocks():
    g = _run("nbeats_tft")
    r = g["fixed_results"]
    xb = _np(g["xb"])
    for name in ("generic", "interpretable"):
        out = r[name]
        # the forecast starts at the last observed level and adds every block's forecast
        _close(_np(out["forecast"]) - xb[:, -1:], _np(out["stacks"]).sum(0), rtol=1e-5,
               atol=1e-5)
        assert tuple(out["forecast"].shape) == (16, 6)
    assert tuple(r["generic"]["stacks"].shape) == (1, 16, 6)
    assert tuple(r["interpretable"]["stacks"].shape) == (2, 16, 6)
    # the masked steps (the oldest six, last after the flip) carry no residual
    assert g["masked_residual_zero"] and g["missing_mask_matches"]
    assert np.isfinite(_np(r["missing_forecast"])).all()
    # weight sharing: four blocks, two modules; parameters() counts each once, the
    # state_dict lists every position; the frozen trend bases get no gradient
    assert g["shared_twice"] and g["n_interp_blocks"] == 4
    trend = (24 * 32 + 32) + (32 * 32 + 32) + (32 * 6 + 6) + 3 * 24 + 3 * 6
    season = (24 * 32 + 32) + (32 * 32 + 32) + (32 * 12 + 12)
    assert g["n_interp_params"] == trend + season
    assert g["n_generic_params"] == 2 * ((24 * 32 + 32) + (32 * 32 + 32) + (32 * 30 + 30))
    assert g["n_interp_state"] == 2 * 8 + 2 * 10
    assert g["frozen_names"] == ["blocks.0.basis_function.backcast_time",
                                 "blocks.0.basis_function.forecast_time"]
    assert g["frozen_grads_none"]
    assert "blocks.2.basis_function.backcast_cos_template" in g["checkpoint_keys"]
    assert g["gradcheck_nbeats"] is True
    assert g["train_shapes"] == ((8 * 49, 24), (8 * 49, 6))


def test_nbeats_models_learn_and_beat_seasonal_naive():
    g = _run("nbeats_tft")
    for losses in (g["generic_losses"], g["interp_losses"]):
        assert len(losses) == 100 and np.isfinite(losses).all()
        assert np.mean(losses[-10:]) < 0.2 * np.mean(losses[:10])
    assert g["generic_val_smape"] < 0.6 * g["naive_val_smape"]
    assert g["interp_val_mase"] < 0.75 * g["naive_val_mase"]
    assert g["generic_val_mase"] < 0.75 * g["naive_val_mase"]
    # the trend stack is smooth, the seasonality stack carries the season
    assert g["trend_curvature"] < 0.2 * g["season_curvature"]
    assert g["trend_basis_unchanged"]
    # the checkpoint through torch.save/torch.load gives the same forecasts
    assert g["restored_matches"]
    assert list(g["load_result"].missing_keys) == [] == list(g["load_result"].unexpected_keys)
    # OneCycleLR per batch (recorded after each step), Adam's beta1 cycling against it
    lrs, betas = np.array(g["generic_lrs"]), np.array(g["generic_betas"])
    _close(lrs, _one_cycle_cos(100, steps=range(1, 101)), rtol=1e-9, atol=1e-15)
    assert np.argmax(lrs) == np.argmin(betas) and betas.min() > 0.85 - 1e-12
    assert g["generic_lrs"] == g["interp_lrs"]


def test_nbeats_one_cycle_variants():
    s = _run("nbeats_tft")["one_cycle_schedules"]
    _close(s["cos"]["lr"], _one_cycle_cos(12), rtol=1e-9, atol=1e-15)
    assert s["no_momentum"]["lr"] == s["cos"]["lr"]
    assert s["no_momentum"]["beta1"] == [0.9] * 12  # the optimizer's own beta1, untouched
    beta = np.array(s["cos"]["beta1"])
    assert beta[0] == 0.95 and beta[-1] == 0.95 and abs(beta.min() - 0.85) < 0.01
    # three phases, linear: up to max, back down to the initial lr, then to the floor
    three = np.array(s["linear_three_phase"]["lr"])
    assert np.argmax(three) == 3 and abs(three[6] - (1e-2 / 25)) < 1e-4
    _close(np.diff(three[:3]), np.full(2, three[1] - three[0]), rtol=1e-9)
    assert s["linear_three_phase"]["beta1"][6:] == [0.95] * 6
    # epochs x steps_per_epoch, the momentum bounds and division factors given
    epochs = s["epochs"]
    assert epochs["lr"][2] == 1e-2 and abs(epochs["lr"][0] - 1e-3) < 1e-12
    assert abs(epochs["lr"][-1] - 1e-5) < 1e-12
    assert epochs["beta1"][2] == 0.8 and epochs["beta1"][-1] == 0.95


def test_nbeats_fixed_results_match_torch():
    g, t = _run("nbeats_tft"), _run_torch("nbeats_tft")
    _close_nested(dict(g["fixed_results"]), dict(t["fixed_results"]), rtol=1e-5, atol=1e-6)
    assert g["one_cycle_schedules"] == t["one_cycle_schedules"]
    for key in ("n_generic_params", "n_interp_params", "n_interp_state", "frozen_names",
                "checkpoint_keys", "buffer_names", "train_shapes"):
        assert g[key] == t[key], key


def test_nbeats_first_losses_match_torch():
    g, t = _run("nbeats_tft"), _run_torch("nbeats_tft")
    # generic: all 100 steps; interpretable: the MASE weights amplify float32 rounding from
    # step ~14 on (1e-5 relative there), so the first ten
    _close(g["generic_losses"][:20], t["generic_losses"][:20], rtol=1e-5, atol=0)
    _close(g["interp_losses"][:10], t["interp_losses"][:10], rtol=1e-5, atol=0)
    _close(g["generic_lrs"], t["generic_lrs"], rtol=1e-12, atol=0)
    _close(g["generic_betas"], t["generic_betas"], rtol=1e-12, atol=0)


# ----------------------------------------------------------------------------- TFT


def test_tft_selection_weights_and_attention():
    g = _run("tft_forecast")
    r = g["fixed_results"]
    for key, shape in (("static_weights", (8, 2)), ("encoder_weights", (8, 12, 4)),
                       ("decoder_weights", (8, 6, 3))):
        w = _np(r[key])
        assert w.shape == shape and (w > 0).all()
        _close(w.sum(-1), np.ones(shape[:-1]), rtol=0, atol=1e-6)
    attention = _np(r["attention"])  # (batch, decoder step, head, time)
    assert attention.shape == (8, 6, 2, 18)
    _close(attention.sum(-1), np.ones((8, 6, 2)), rtol=0, atol=1e-6)
    for step in range(6):
        assert (attention[:, step, :, 12 + step + 1:] == 0).all()
        assert (attention[:, step, :, : 12 + step + 1] > 0).all()
    by_time = _np(r["attention_by_time"])
    future = np.triu(np.ones((18, 18), dtype=bool), 1)[12:]
    assert np.isnan(by_time[future]).all() and np.isfinite(by_time[~future]).all()
    _close(np.nansum(by_time, -1), np.ones(6), rtol=0, atol=1e-6)
    # broadcasting and einsum combine the variables alike; the fused SDPA attention is the loop
    _close(r["prediction_einsum"], r["prediction"], rtol=1e-5, atol=1e-6)
    _close(r["prediction_fused"], r["prediction"], rtol=1e-5, atol=1e-6)
    assert tuple(r["prediction"].shape) == (8, 6, 3)
    # averaging heads after one shared value projection = the averaged attention on the values
    assert g["head_mean_error"] < 1e-5
    _close(r["loss"], r["loss_vectorised"], rtol=1e-6)
    assert g["gradcheck_results"] == {"grn": True, "attention": True}


def test_tft_masks_lstm_and_shared_modules():
    g = _run("tft_forecast")
    r = g["fixed_results"]
    sdpa = {k: _np(v) for k, v in r["sdpa"].items()}
    _close(sdpa["bool_mask"], sdpa["float_mask"], rtol=1e-6, atol=1e-7)
    _close(sdpa["is_causal"], sdpa["float_mask"], rtol=1e-6, atol=1e-7)
    # is_causal with fewer queries than keys is the top-left triangle, not the decoder's mask
    _close(sdpa["decoder_is_causal"], sdpa["decoder_top_left"], rtol=1e-6, atol=1e-7)
    _close(sdpa["decoder_mask"], sdpa["is_causal"][:, :, 12:], rtol=1e-6, atol=1e-7)
    assert np.abs(sdpa["decoder_mask"] - sdpa["decoder_is_causal"]).max() > 0.1
    mask = _np(r["square_subsequent_mask"])
    assert np.isneginf(mask[np.triu_indices(18, 1)]).all() and (np.tril(mask) == 0).all()
    # the two-layer LSTM: the top layer's last output is h_n[-1]; dropout changes the train pass
    for mode in ("eval", "train"):
        lstm = r["lstm2_" + mode]
        assert tuple(lstm["h_n"].shape) == (2, 3, 5) == tuple(lstm["c_n"].shape)
        _close(_np(lstm["out"])[:, -1], _np(lstm["h_n"])[-1], rtol=0, atol=0)
    assert np.abs(_np(r["lstm2_train"]["out"]) - _np(r["lstm2_eval"]["out"])).max() > 1e-3
    # one post-LSTM gate under two names, one prescaler dict in four places
    assert g["shared_gate"]
    assert g["n_state"] == g["n_parameters"] + 3 * 10 + 5
    keys = g["state_keys"]
    assert "post_lstm_gate_decoder.glu.fc.weight" in keys
    assert "decoder_variable_selection.prescalers.time.bias" in keys
    # the forget-gate bias started at one, the recurrent weights orthogonal
    init = r["init"]
    bias = _np(init["lstm_encoder.bias_ih_l0"])
    _close(bias, np.r_[np.zeros(8), np.ones(8), np.zeros(16)], rtol=0, atol=0)
    w_hh = _np(init["lstm_encoder.weight_hh_l0"])  # (32, 8): orthonormal columns
    _close(w_hh.T @ w_hh, np.eye(8), rtol=0, atol=1e-5)


def test_tft_learns_quantiles():
    g = _run("tft_forecast")
    losses, val_losses = g["losses"], g["val_losses"]
    assert len(losses) == 20 and len(val_losses) == g["epochs"] == 5
    assert np.mean(losses[-4:]) < 0.2 * np.mean(losses[:4])
    assert val_losses[-1] < 0.75 * val_losses[0]
    # the median beats the last value on the normalised scale, the quantiles are ordered in
    # coverage and cover about what they should
    assert g["median_mae"] < 0.8 * g["last_value_mae"]
    low, mid, high = g["coverage"]
    assert low < 0.3 and 0.3 < mid < 0.7 and high > 0.7
    importance = _np(g["variable_importance"])
    _close(importance.sum(), 1.0, rtol=0, atol=1e-6)
    assert np.isfinite(g["grad_norms"]).all() and g["grad_norms"][0] > 1.0  # clipped at 1
    # ReduceLROnPlateau(patience=0, factor=0.5) on the validation losses
    assert g["lrs"] == _plateau_rule(val_losses, lr=1e-2, factor=0.5, patience=0)


def test_tft_plateau_schedules():
    s = _run("tft_forecast")["plateau_schedules"]
    curve = [1.0, 0.9, 0.9, 0.8999, 0.95, 0.7, 0.71, 0.7, 0.69995, 0.72, 0.72, 0.5]
    assert s["default"] == _plateau_rule(curve, patience=1)
    assert s["tensor_metric"] == s["default"]
    assert s["abs_threshold"] == _plateau_rule(curve, patience=0, threshold=0.01,
                                               threshold_mode="abs")
    assert s["cooldown_min_lr"] == _plateau_rule(curve, factor=0.1, patience=0, cooldown=2,
                                                 min_lr=0.005)
    assert s["max_mode"] == _plateau_rule([-m for m in curve], mode="max", patience=1,
                                          factor=0.5)
    # 1 -> 0.5 is a change above eps; 0.5 -> max(0.25, min_lr 0.3) is a change of eps, not above
    assert s["eps"] == [1.0, 1.0] + [0.5] * 10
    assert s["eps"] == _plateau_rule(curve, factor=0.5, patience=0, min_lr=0.3, eps=0.2)


def test_tft_fixed_results_match_torch():
    g, t = _run("tft_forecast"), _run_torch("tft_forecast")
    _close_nested(dict(g["fixed_results"]), dict(t["fixed_results"]), rtol=1e-5, atol=1e-6)
    assert g["plateau_schedules"] == t["plateau_schedules"]
    assert g["state_keys"] == t["state_keys"]
    assert (g["n_parameters"], g["n_state"]) == (t["n_parameters"], t["n_state"])
    assert g["head_mean_error"] < 1e-5 and t["head_mean_error"] < 1e-5


def test_tft_first_losses_match_torch():
    g, t = _run("tft_forecast"), _run_torch("tft_forecast")
    # float32 rounding grows through the 20 Adam steps (1e-5 relative by step 17 on one host,
    # step 4 on another, whose BLAS rounds otherwise)
    _close(g["losses"][:4], t["losses"][:4], rtol=1e-5, atol=0)
    _close(g["grad_norms"][:4], t["grad_norms"][:4], rtol=1e-5, atol=0)
    _close(g["val_losses"][:2], t["val_losses"][:2], rtol=1e-5, atol=0)
    assert g["lrs"] == t["lrs"]
