"""More user-style PyTorch scripts, written for these tests in the way pytorch/examples and the
pytorch.org tutorials write torch code.

The scripts live in tests/scripts/ next to those of tests/test_user_scripts.py and run the same
way: as ``__main__`` on jitgrad, and, where torch is installed, once more with ``import torch``
in place of ``import jitgrad`` so that their deterministic parts (fixed-weight forwards, state
dict round trips, schedules) can be compared.
"""

import contextlib
import io
import math
import runpy
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from test_user_scripts import SCRIPTS, _close, torch_source
from test_user_scripts import _run as _run_jitgrad

_TORCH_CACHE: dict = {}


@contextlib.contextmanager
def _one_thread(module):
    """One BLAS thread while a script runs: on a loaded machine, waking BLAS threads for every
    small product (LBFGS's dots of 32k numbers) cost far more than the products themselves."""
    before = module.get_num_threads()
    module.set_num_threads(1)
    try:
        yield
    finally:
        module.set_num_threads(before)


def _run(name: str) -> dict:
    """The script's globals after it ran on jitgrad (``test_user_scripts._run``, cached)."""
    import jitgrad

    with _one_thread(jitgrad):
        return _run_jitgrad(name)


def _run_torch(name: str) -> dict:
    """The same script with ``jitgrad`` replaced by ``torch``, run as ``__main__`` from a file.

    (Unlike ``test_user_scripts._run_torch`` this runs through ``runpy``, so a script that
    pickles its own classes with ``torch.save(model, f)`` finds them in ``__main__``.)
    """
    pytest.importorskip("torch")
    if name not in _TORCH_CACHE:
        src = torch_source((SCRIPTS / f"{name}.py").read_text())
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"{name}.py"
            path.write_text(src)
            with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings(), \
                    _one_thread(__import__("torch")):
                warnings.simplefilter("ignore")
                g = runpy.run_path(str(path), run_name="__main__")
        g["torch"].use_deterministic_algorithms(False)
        _TORCH_CACHE[name] = g
    return _TORCH_CACHE[name]


# ---- word_language_model: tied LSTM, GRU, RNNs and a causal Transformer on a toy corpus ----

def test_word_language_model_trains_lstm_gru_and_transformer():
    g = _run("word_language_model")
    for name in ("LSTM", "GRU", "Transformer"):
        r = g["results"][name]
        assert r["val_losses"][-1] < r["first_val"] * (0.95 if name == "LSTM" else 0.8), name
        assert r["train_losses"][-1] < r["train_losses"][0], name
        assert r["best_val_loss"] == min(r["val_losses"]), name
        assert math.isfinite(r["test_ppl"]) and r["test_ppl"] < g["ntokens"], name
    assert g["tied_same_object"] and g["tied_param_count"] == 10  # the decoder shares the weight
    assert g["tie_error"] == "When using the tied flag, nhid must be equal to emsize"
    for name in ("LSTM", "Transformer"):  # generate.py from the saved whole models
        text = g["generated"][name]
        assert text.count("\n") == 1 and len(text.split()) == 30, name
        assert set(text.split()) <= set(g["corpus"].dictionary.word2idx), name
    assert g["transformer_input_shape"] == (31, 1)
    assert g["loaded_tied_shared"]  # torch.save/torch.load keep the tied weight one Parameter


def test_word_language_model_deterministic_parts_match_torch():
    g, t = _run("word_language_model"), _run_torch("word_language_model")
    assert g["batchified"] == t["batchified"]
    assert g["fixed_mask"] == t["fixed_mask"]
    assert g["corpus"].train.tolist() == t["corpus"].train.tolist()
    for kind in ("LSTM", "GRU", "RNN_TANH", "RNN_RELU"):
        (out, hidden), (t_out, t_hidden) = g["fixed_results"][kind], t["fixed_results"][kind]
        _close(out, t_out, rtol=1e-4, atol=1e-5)
        _close(hidden, t_hidden, rtol=1e-4, atol=1e-5)
    _close(g["fixed_results"]["Transformer"], t["fixed_results"]["Transformer"],
           rtol=1e-4, atol=1e-5)
    for kind, (loss, norm, params) in g["fixed_steps"].items():
        t_loss, t_norm, t_params = t["fixed_steps"][kind]
        assert loss == pytest.approx(t_loss, rel=1e-5), kind
        assert norm == pytest.approx(t_norm, rel=1e-4) and norm > 0.05, kind  # (clipped)
        assert params.keys() == t_params.keys(), kind
        for name in params:
            _close(params[name], t_params[name], rtol=1e-4, atol=1e-5)


# ---- time_sequence_prediction: stacked LSTM cells forecasting sine waves with L-BFGS ----

def test_time_sequence_prediction_lbfgs_learns_sine_waves():
    g = _run("time_sequence_prediction")
    assert g["test_losses"][-1] < g["test_losses"][0] / 5
    assert g["step_losses"][-1] < g["step_losses"][0]
    assert all(1 <= n <= 10 for n in g["closure_calls"])  # max_eval: max_iter * 5 // 4
    assert g["prediction_shape"] == (3, 47 + 20) and g["prediction_dtype"] == np.float64
    assert g["seq"].linear.weight.dtype is g["torch"].float64
    state = g["lbfgs_state"]["state"][0]
    assert len(g["closure_calls"]) <= state["n_iter"] <= 8 * len(g["closure_calls"])
    assert state["func_evals"] == sum(g["closure_calls"])


def test_time_sequence_prediction_lbfgs_step_matches_torch():
    g, t = _run("time_sequence_prediction"), _run_torch("time_sequence_prediction")
    _close(g["data"], t["data"], rtol=0, atol=0)
    _close(g["fixed_before"], t["fixed_before"], rtol=1e-10, atol=1e-12)
    assert g["fixed_first_loss"] == pytest.approx(t["fixed_first_loss"], rel=1e-10)
    assert g["fixed_counts"] == t["fixed_counts"]
    _close(g["fixed_after"], t["fixed_after"], rtol=1e-7, atol=1e-9)


# ---- reinforcement_learning: REINFORCE and actor-critic on a simulated cart-pole ----

def test_reinforce_and_actor_critic_learn_cartpole():
    g = _run("reinforcement_learning")
    for key in ("reinforce_rewards", "actor_critic_rewards"):
        rewards = g[key]
        assert len(rewards) == g["args"].max_episodes, key
        assert np.mean(rewards[-10:]) > 1.5 * np.mean(rewards[:10]), key
    assert g["reinforce_running"] > 30 and g["actor_critic_running"] > 30  # (from 10)
    assert g["policy"].saved_log_probs == [] and g["model"].saved_actions == []
    returns = np.array(g["returns"].tolist())  # (torch's std is the unbiased one)
    _close(g["normalised"], (returns - returns.mean()) / returns.std(ddof=1), rtol=1e-5)


def test_reinforcement_learning_deterministic_parts_match_torch():
    g, t = _run("reinforcement_learning"), _run_torch("reinforcement_learning")
    _close(g["normalised"], t["normalised"])
    for ours, theirs in zip(g["categorical_parts"], t["categorical_parts"]):
        _close(ours, theirs)
    assert g["fixed_loss"] == pytest.approx(t["fixed_loss"], rel=1e-5)
    for ours, theirs in zip(g["fixed_grads"], t["fixed_grads"]):
        _close(ours, theirs, rtol=1e-4, atol=1e-6)


# ---- fgsm_adversarial: fast-gradient-sign attacks on a small conv classifier ----

def test_fgsm_accuracy_falls_with_epsilon():
    g = _run("fgsm_adversarial")
    assert g["train_losses"][-1] < g["train_losses"][0] / 4
    assert g["loaded_same"]  # state_dict saved and loaded with weights_only=True, map_location
    acc = g["accuracies"]
    assert acc[0] >= 0.9 and acc[-1] <= acc[0] - 0.5
    assert all(a >= b for a, b in zip(acc, acc[1:]))  # a larger step never helps here
    for eps, ex in zip(g["epsilons"], g["examples"]):
        assert len(ex) <= 5
        for init_pred, final_pred, adv in ex:
            assert adv.shape == (12, 12) and adv.min() >= 0.0 and adv.max() <= 1.0
            assert (init_pred == final_pred) == (eps == 0)
    assert g["device"] == "cpu"


def test_fgsm_attack_matches_torch():
    g, t = _run("fgsm_adversarial"), _run_torch("fgsm_adversarial")
    assert g["fixed_loss"] == pytest.approx(t["fixed_loss"], rel=1e-5)
    _close(g["fixed_grad"], t["fixed_grad"], rtol=1e-4, atol=1e-7)
    _close(g["fixed_perturbed"].tolist(), t["fixed_perturbed"].tolist())
    _close(g["fixed_adv_logits"], t["fixed_adv_logits"], rtol=1e-4, atol=1e-5)


# ---- super_resolution: a sub-pixel convolution net upscaling synthetic images ----

def test_super_resolution_psnr_rises():
    g = _run("super_resolution")
    assert g["epoch_losses"][-1] < g["epoch_losses"][0] / 4
    assert g["psnrs"][-1] > g["psnrs"][0] + 6  # dB, from the orthogonally initialised net
    assert g["super_resolved_shape"] == (16, 16) and g["out_img_y"].dtype == np.uint8
    assert len(g["training_data_loader"]) == 3 and len(g["testing_data_loader"]) == 2
    assert type(g["model"]).__name__ == "SubPixelNet"  # the whole model came back from torch.load


def test_super_resolution_deterministic_parts_match_torch():
    g, t = _run("super_resolution"), _run_torch("super_resolution")
    _close(g["gains"], t["gains"], rtol=1e-12, atol=0)
    assert max(e.item() for e in g["orthogonal_errors"]) < 1e-5
    _close(g["fixed_out"], t["fixed_out"], rtol=1e-4, atol=1e-5)
    assert g["shuffled"] == t["shuffled"] and g["unshuffled"] == t["unshuffled"]


# ---- siamese_network: a same-or-different pair classifier on a shared residual backbone ----

def test_siamese_network_learns_same_or_different():
    g = _run("siamese_network")
    (loss0, acc0), (loss1, acc1) = g["test_results"][0], g["test_results"][-1]
    assert loss1 < loss0 * 0.7 and acc1 >= 0.8 and acc1 > acc0
    assert np.mean(g["train_losses"][-4:]) < np.mean(g["train_losses"][:4])
    assert g["reloaded_same"]
    torch = g["torch"]
    assert g["item_shapes"] == ((1, 16, 16), torch.float32, (), torch.float32)
    assert g["group_sizes"] == [7, 7, 7, 7, 6, 6, 6, 6, 6, 6]
    assert g["backbone_children"] == ["Conv2d", "BatchNorm2d", "ReLU", "MaxPool2d", "Sequential",
                                      "Sequential", "Sequential", "Sequential",
                                      "AdaptiveAvgPool2d"]
    assert g["model"].fc_in_features == 32


def test_siamese_network_deterministic_parts_match_torch():
    g, t = _run("siamese_network"), _run_torch("siamese_network")
    _close(g["fixed_out"], t["fixed_out"], rtol=1e-4, atol=1e-6)
    assert g["fixed_loss"] == pytest.approx(t["fixed_loss"], rel=1e-5)
    _close(g["fixed_fc_grad"], t["fixed_fc_grad"], rtol=1e-3, atol=1e-6)
    _close(g["fixed_running_mean"], t["fixed_running_mean"], rtol=1e-4, atol=1e-6)
    assert g["fixed_num_batches"] == t["fixed_num_batches"] == 2  # (two forward_once calls)
    _close(g["fixed_lrs"], t["fixed_lrs"], rtol=1e-12, atol=0)


# ---- mnist_forward_forward: layer-local Forward-Forward training on synthetic glyphs ----

def test_forward_forward_layers_learn_without_backprop_between_them():
    g = _run("mnist_forward_forward")
    assert g["train_error_before"] > 0.5
    assert g["train_error"] < 0.1 and g["test_error"] < 0.15
    for losses in g["layer_losses"]:
        assert len(losses) == g["trained_epochs"] == 300 and losses[-1] < losses[0] / 2
    assert g["saved_keys"] == []  # the layers are a plain list, not submodules (as in torch)
    assert g["neg_differs"]
    for row, label in zip(g["overlay_row"], g["y"][:2].tolist()):
        assert [i for i, v in enumerate(row[:10]) if v != 0] == [label]
    assert tuple(g["x"].shape) == (400, 64) and g["y"].dtype is g["torch"].int64


def test_forward_forward_deterministic_parts_match_torch():
    g, t = _run("mnist_forward_forward"), _run_torch("mnist_forward_forward")
    _close(g["fixed_overlay"], t["fixed_overlay"])  # (float32 sin: an ulp apart at places)
    _close(g["fixed_norms"], t["fixed_norms"])
    for ours, theirs in zip(g["fixed_results"], t["fixed_results"]):
        _close(ours, theirs, rtol=1e-5, atol=1e-6)


# ---- regression: a quartic fitted by one Linear with a hand-written SGD step ----

def test_polynomial_regression_converges():
    g = _run("regression")
    assert g["losses"][-1] < 1e-3 <= min(g["losses"][:-1])  # it stopped at the first one below
    assert g["batch_idx"] == len(g["losses"]) < 5000
    learned = np.array(g["fc"].weight.view(-1).tolist() + g["fc"].bias.tolist())
    actual = np.array(g["W_target"].view(-1).tolist() + g["b_target"].tolist())
    _close(learned, actual, rtol=0, atol=0.2)
    assert g["learned"].startswith("y = ") and g["learned"].count(" x^") == 4
    assert g["actual"] == "y = " + " ".join(
        f"{w:+.2f} x^{i + 1}" for i, w in enumerate(actual[:4].tolist())) + f" {actual[4]:+.2f}"


def test_polynomial_regression_deterministic_parts_match_torch():
    g, t = _run("regression"), _run_torch("regression")
    assert g["fixed_features"] == t["fixed_features"]
    assert g["fixed_desc"] == t["fixed_desc"] \
        == "y = +1.23 x^1 -0.00 x^2 +10.00 x^3 -3.46 x^4 +0.00"
    assert g["fixed_formats"] == t["fixed_formats"]
    loss, weight, bias = g["fixed_step"]
    t_loss, t_weight, t_bias = t["fixed_step"]
    assert loss == pytest.approx(t_loss, rel=1e-6)
    _close(weight, t_weight)
    _close(bias, t_bias)


def test_time_sequence_prediction_strong_wolfe_matches_torch():
    g, t = _run("time_sequence_prediction"), _run_torch("time_sequence_prediction")
    _close(g["wolfe_losses"], t["wolfe_losses"], rtol=1e-9, atol=1e-12)
    assert g["wolfe_losses"][-1] < g["wolfe_losses"][0] / 4
    assert g["wolfe_counts"] == t["wolfe_counts"]
    _close(g["wolfe_after"], t["wolfe_after"], rtol=1e-7, atol=1e-9)
