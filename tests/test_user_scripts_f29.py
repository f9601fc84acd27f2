"""User-style training scripts (set F), written for these tests in the way Karpathy's llama2.c
and llm.c, yunjey's pytorch-tutorial and harvardnlp's Annotated Transformer write torch code,
run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that training lowered the loss (or reached an accuracy), and, where
torch is installed, that the deterministic parts (fixed-weight forwards, gradients and a few
optimizer steps) equal the same script's with ``import torch``.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

# ------------------------------------------- a tiny Llama: training, C exports, resume


def test_llama2c_trains_exports_resumes_and_generates():
    g = _run("llama2c")
    losses = g["train_losses"]
    assert len(losses) == 25 and losses[-1] < 0.5 * losses[0]
    evals = g["eval_history"]
    assert [e[0] for e in evals] == [0, 12, 24]
    assert abs(evals[0][2] - math.log(32)) < 0.1  # starts near uniform
    assert evals[-1][2] < 0.5 * evals[0][2]  # val loss
    lrs = g["lrs"]
    assert lrs[:5] == [0.0, 2.5e-3, 5e-3, 7.5e-3, 1e-2] and lrs[-1] == 0.0
    assert g["resumed_tied"]  # load_state_dict keeps tok_embeddings and output tied
    assert g["export_sizes"] == {0: 103580, 1: 103296, 2: 29696}
    assert g["v1_header"] == (0x616B3432, 1, 32, 96, 2, 4, 2, 32, 16)
    assert g["greedy"].tolist()[0] == g["expected_greedy"]  # it learned the grammar
    sampled = g["sampled"].tolist()[0]
    assert len(sampled) == 8 and sampled[:2] == [1, 9] and all(0 <= t < 32 for t in sampled)
    # the flash and the manual attention paths compute the same model
    flash, manual = g["fixed_results"][True], g["fixed_results"][False]
    _close(flash["logits"], manual["logits"], rtol=1e-5, atol=1e-6)
    assert flash["greedy"] == manual["greedy"]


def test_llama2c_fixed_weights_match_torch():
    g, t = _run("llama2c"), _run_torch("llama2c")
    for flash in (True, False):
        ours, theirs = dict(g["fixed_results"][flash]), dict(t["fixed_results"][flash])
        # (three AdamW steps: a gradient entry near 0 is normalized to about +-1 by Adam, so
        # float32 rounding moves such a weight by up to ~1e-3 of the 1e-2 step)
        _close_nested(ours.pop("after_steps"), theirs.pop("after_steps"), rtol=1e-4, atol=1e-3)
        assert ours.pop("greedy") == theirs.pop("greedy")
        assert ours.pop("groups") == theirs.pop("groups") == [(15, 0.1), (5, 0.0)]
        _close_nested(ours, theirs, rtol=1e-4, atol=1e-5)
    _close(g["fixed_results"]["freqs"], t["fixed_results"]["freqs"], rtol=1e-6, atol=1e-6)
    (q, scale, err), (tq, tscale, terr) = g["fixed_results"]["q80"], t["fixed_results"]["q80"]
    assert q == tq
    _close(scale, tscale, rtol=1e-6)
    _close(err, terr, rtol=1e-4, atol=1e-7)


# ---------------------------------------------- a GPT-2 trainer that writes C files


def test_llmc_train_gpt2_overfits_a_batch_and_writes_the_c_files():
    g = _run("llmc_train_gpt2")
    losses = g["train_losses"]
    assert len(losses) == 10 and abs(losses[0] - math.log(50257)) < 0.1
    assert losses[-1] < 0.88 * losses[0] and all(b < a for a, b in zip(losses, losses[1:]))
    vals = g["val_losses"]
    assert [s for s, _ in vals] == [0, 5, 10] and vals[2][1] < vals[1][1] < vals[0][1]
    lrs = g["lrs"]
    assert lrs[:2] == [5e-3, 1e-2] and abs(lrs[2] - 1e-2) < 1e-12
    assert all(b < a for a, b in zip(lrs[2:], lrs[3:])) and lrs[-1] > 1e-3  # cosine to min_lr
    assert all(0 < n < 10 for n in g["norms"])
    assert g["grad_accum_steps"] == 2
    assert [s[0] for s in g["samples"]] == [50256, 50256]
    assert [len(s) for s in g["samples"]] == [33, 33]
    os = g["os"]
    header = np.fromfile(os.path.join(g["OUT"], "gpt2_d2.bin"), dtype=np.int32, count=8)
    assert header.tolist() == [20240326, 3, 64, 50257, 2, 2, 16, 50304]
    n_params = sum(p.numel() for p in g["model"].parameters()) + (50304 - 50257) * 16
    assert os.path.getsize(os.path.join(g["OUT"], "gpt2_d2.bin")) == 1024 + 4 * n_params
    bf16 = np.fromfile(os.path.join(g["OUT"], "gpt2_d2_bf16.bin"), dtype=np.int32, count=2)
    assert bf16.tolist() == [20240326, 5]
    assert os.path.getsize(os.path.join(g["OUT"], "gpt2_d2_bf16.bin")) == 1024 + 2 * n_params
    tok = open(os.path.join(g["OUT"], "gpt2_tokenizer.bin"), "rb").read()  # noqa: SIM115
    assert np.frombuffer(tok[:16], dtype=np.int32).tolist() == [20240328, 2, 50257, 50256]
    assert tok[1024:1026] == b"\x01\x00"  # token 0: one byte, 0
    assert max(g["compile_diffs"]) < 1e-5  # torch.compile(model) equals the eager model
    # the manual and the flash attention compute the same model
    manual, flash = g["fixed_results"][0], g["fixed_results"][1]
    _close(manual["state_floats"], flash["state_floats"], rtol=1e-4, atol=1e-6)


@pytest.mark.slow
def test_llmc_train_gpt2_fixed_weights_match_torch():
    g, t = _run("llmc_train_gpt2"), _run_torch("llmc_train_gpt2")
    for flash in (0, 1):
        ours, theirs = dict(g["fixed_results"][flash]), dict(t["fixed_results"][flash])
        for key in ("header", "header_bf16", "state_header", "state_xy", "greedy"):
            assert ours.pop(key) == theirs.pop(key), key
        # the weight files (sin(large x) in float32 can differ by an ulp from torch's)
        _close(ours.pop("model"), theirs.pop("model"), rtol=1e-6, atol=1e-7)
        bf16, their_bf16 = ours.pop("model_bf16"), theirs.pop("model_bf16")
        assert bf16.shape == their_bf16.shape and bf16.size > 50304 * 8
        assert np.abs(bf16.astype(np.int32) - their_bf16).max() <= 1
        assert (bf16 == their_bf16).mean() > 0.99
        # (logits, loss, then the gradients of 400k parameters)
        _close(ours.pop("state_floats"), theirs.pop("state_floats"), rtol=1e-4, atol=1e-6)
        # (three AdamW steps: entries with a gradient near 0 move by float32 noise * lr)
        _close_nested(ours.pop("after_steps"), theirs.pop("after_steps"), rtol=1e-4, atol=1e-3)
        _close_nested(ours, theirs, rtol=1e-4, atol=1e-5)


# ------------------------------------------ basics, CNNs, RNNs and generative models


def _falls(losses, factor, head=3):
    """The mean of the last ``head`` losses is below ``factor`` times the first ones'."""
    first, last = np.mean(losses[:head]), np.mean(losses[-head:])
    assert last < factor * first, (first, last)


def test_yunjey_basics_autograd_pipeline_regressions_and_checkpoints():
    r = _run("yunjey_basics")["results"]
    assert r["autograd1"] == [-1.0, 3.0, 1.0]
    assert r["autograd2_grads_ok"] and r["autograd2_losses"][1] < r["autograd2_losses"][0]
    assert r["numpy"] == ("jitgrad.int64", "int64", True)  # from_numpy / numpy share memory
    assert r["pipeline_item"] == ((3, 8, 8), 0)
    assert r["pipeline_batch"] == ((64, 3, 8, 8), (64,), "jitgrad.int64")
    assert r["pipeline_batches"] == 16 and r["custom_batches"] == 0
    _falls(r["linreg"]["losses"], 0.02, head=1)
    _falls(r["logreg"]["losses"], 0.75)
    assert r["logreg"]["accuracy"] > 75 and r["logreg"]["correct_type"] == "Tensor"
    _falls(r["ffn"]["losses"], 0.8)
    assert r["ffn"]["accuracy"] > 75
    assert r["finetune"] == ((64, 100), True, ["head.weight", "head.bias"])
    assert r["reloaded_equal"]


def test_yunjey_basics_match_torch():
    r, t = _run("yunjey_basics")["results"], _run_torch("yunjey_basics")["results"]
    _close_nested(r["linreg"], t["linreg"], rtol=1e-5, atol=1e-6)  # fixed initial weights
    for key in ("autograd1", "pipeline_item", "pipeline_batches", "custom_batches", "finetune",
                "reloaded_equal"):
        assert r[key] == t[key], key


def test_yunjey_cnn_and_resnet_learn_the_digits():
    r = _run("yunjey_intermediate")["results"]
    _falls(r["cnn"]["losses"], 0.5)
    assert r["cnn"]["accuracy"] > 60
    _falls(r["resnet"]["losses"], 0.8)
    assert r["resnet"]["accuracy"] > 20  # (10 classes; eval-mode statistics of 24 steps)
    assert r["resnet"]["lrs"] == [0.01, 0.01 / 3, 0.01 / 3, 0.01 / 9]


def test_yunjey_cnn_and_resnet_fixed_weights_match_torch():
    g, t = _run("yunjey_intermediate"), _run_torch("yunjey_intermediate")
    _close_nested(g["fixed_results"], t["fixed_results"], rtol=1e-9, atol=1e-12)  # (float64)


def test_yunjey_recurrent_nets_and_language_model_learn():
    r = _run("yunjey_recurrent")["results"]
    for key in ("rnn", "birnn"):
        _falls(r[key]["losses"], 0.7)
        assert r[key]["accuracy"] > 40, key
    lm = r["lm"]
    assert lm["ids_shape"][0] == 20 and lm["vocab_size"] == 16  # (15 words and "<eos>")
    _falls(lm["losses"], 0.4)
    words = lm["sampled"]
    assert len(words) == 40 and words.count("<eos>") >= 4  # it learned where sentences end


def test_yunjey_recurrent_fixed_weights_match_torch():
    g, t = _run("yunjey_recurrent"), _run_torch("yunjey_recurrent")
    _close_nested(g["fixed_results"], t["fixed_results"], rtol=1e-4, atol=1e-6)
    assert g["results"]["lm"]["vocab_size"] == t["results"]["lm"]["vocab_size"] == 16


def test_yunjey_gan_and_vae_train_and_save_images():
    r = _run("yunjey_advanced")["results"]
    gan = r["gan"]
    assert len(gan["d_losses"]) == 100
    _falls(gan["d_losses"], 0.9)  # D tells real from fake better ...
    assert np.mean(gan["real_scores"][-5:]) > np.mean(gan["fake_scores"][-5:]) + 0.1
    assert -1 <= gan["fake_range"][0] < gan["fake_range"][1] <= 1  # Tanh
    assert gan["samples"] == [f"fake_images-{k}.png" for k in (1, 10, 2, 3, 4, 5, 6, 7, 8, 9)] \
        + ["real_images.png"]
    vae = r["vae"]
    _falls(vae["reconst"], 0.75)
    assert vae["x_concat_shape"] == (1000 - 7 * 128, 1, 8, 16)
    assert len(vae["samples"]) == 16


def test_yunjey_gan_and_vae_fixed_weights_match_torch():
    g, t = _run("yunjey_advanced"), _run_torch("yunjey_advanced")
    _close_nested(g["fixed_results"], t["fixed_results"], rtol=1e-4, atol=1e-5)


# ------------------------------------------ an encoder-decoder Transformer from parts


def test_annotated_transformer_parts_and_the_copy_task():
    g = _run("annotated_transformer")
    assert len(g["untrained_predictions"]) == 3
    for ys in g["untrained_predictions"]:
        assert tuple(ys.shape) == (1, 10) and ys[0, 0].item() == 0
    rates = g["schedule_rates"]
    assert tuple(rates.shape) == (3, 500)
    noam_rate = g["noam_rate"]
    assert rates[0, 0].item() == pytest.approx(noam_rate(0, 512, 1, 4000), rel=1e-6)  # (float32)
    assert noam_rate(0, 512, 1, 4000) == 512 ** -0.5 * 4000 ** -1.5
    assert rates[1, 499].item() < rates[0, 499].item() < rates[2, 499].item()  # warmup, size
    dist = g["smoothing_true_dist"].tolist()
    assert dist[2] == [0.0] * 5  # the padding target's row
    assert [row[0] for row in dist] == [0.0] * 5  # the padding column
    assert dist[0][2] == pytest.approx(0.6) and dist[0][1] == pytest.approx(0.4 / 3)
    mask = [d["allowed"].item() for d in g["mask_data"]]
    assert mask == [x >= y for y in range(20) for x in range(20)]
    assert len(g["positional_data"]) == 4
    train, evals = g["train_losses"], g["eval_losses"]
    assert len(train) == len(evals) == 6
    assert evals[-1] < 0.85 * evals[0] and train[-1] < 0.8 * train[0]
    assert tuple(g["copy_decoded"].shape) == (1, 10) and g["copy_decoded"][0, 0].item() == 0
    fixed = g["fixed_results"]
    assert fixed["state"] == [3, 3, 6, 48]  # TrainState: steps, accumulation steps, samples, tokens
    assert fixed["losses"][2] < fixed["losses"][0]


def test_annotated_transformer_fixed_weights_match_torch():
    g, t = _run("annotated_transformer"), _run_torch("annotated_transformer")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    # (the key projections' biases get a gradient of exactly 0 in exact arithmetic, since softmax
    # ignores a constant added to a row; Adam turns their float32 noise into +-lr steps)
    params, their_params = ours.pop("params"), theirs.pop("params")
    assert params.keys() == their_params.keys()
    for name in params:
        if name.endswith("projections.1.bias"):
            continue
        # (the query weights meet the key biases' noise in the scores: 2e-4 apart on a host
        # whose BLAS rounds otherwise)
        query = name.endswith("projections.0.weight")
        _close(params[name], their_params[name], rtol=1e-4, atol=5e-4 if query else 1e-4)
    for key in ("decoded", "state", "lr"):
        assert ours.pop(key) == theirs.pop(key), key
    (dist, loss), (their_dist, their_loss) = ours.pop("smoothing"), theirs.pop("smoothing")
    _close(dist, their_dist)
    # (the script's predictions have 0 probabilities: log(0) = -inf, and KLDivLoss gives nan
    # in both, as in the current torch)
    assert math.isnan(loss) and math.isnan(their_loss)
    np.testing.assert_allclose(ours.pop("penalization"), theirs.pop("penalization"))
    _close_nested(ours, theirs, rtol=1e-4, atol=1e-5)
