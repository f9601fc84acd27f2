"""User-style scripts (set G) written for these tests in the way Karpathy's build-nanogpt
(GPT-2 pretraining) and pytorch/examples fx/ write torch code, run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that training lowered the loss, and, where torch is installed, that
the deterministic parts (a fixed-seed model's init, forwards, gradients, clipping and AdamW
steps) equal the same script's with ``import torch``.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

# ----------------------------------------- a tiny GPT-2 pretraining run (build-nanogpt style)


@pytest.mark.slow  # (torch.compile's first compilation of the model, with a cold cache)
def test_build_nanogpt_trains_evaluates_checkpoints_and_compiles():
    g = _run("build_nanogpt")
    assert g["grad_accum_steps"] == 2 and not g["use_compile"]
    losses = g["train_losses"]
    assert len(losses) == 6 and abs(losses[0] - math.log(50304)) < 0.1
    assert all(b < a for a, b in zip(losses, losses[1:]))
    assert losses[-1] < losses[0] - 0.5
    vals = g["val_losses"]
    assert [s for s, _ in vals] == [0, 5] and vals[1][1] < vals[0][1] - 0.5
    lrs = g["lrs"]
    assert lrs[:3] == [3e-3, 6e-3, 6e-3] and all(b < a for a, b in zip(lrs[2:], lrs[3:]))
    assert all(0 < n < 5 for n in g["norms"])
    # the synthetic multiple-choice val set: 4 examples, each evaluated at steps 0 and 5
    assert [(s, n) for s, n, _ in g["hella_accs"]] == [(0, 4), (5, 4)]
    assert g["hella_accs"][-1][2] == 1.0  # the trained model prefers the corpus-like ending
    samples = g["samples"]  # generated at the last step only, 32 tokens from the 28 of the prompt
    assert len(samples) == 4 and all(len(s) == 32 for s in samples)
    assert all(s[:28] == list(b"Hello, I'm a language model,") for s in samples)
    with open(g["log_file"]) as log_file:
        log = log_file.read().split("\n")
    # (the untrained model's score is chance: the log line must carry the recorded one)
    assert log[0] == f"0 val {vals[0][1]:.4f}" and log[1] == f"0 hella {g['hella_accs'][0][2]:.4f}"
    assert log[2] == f"0 train {losses[0]:.6f}" and len(log) == 6 + 2 * 2 + 1
    # the checkpoint: a GPT built from the saved config recomputes the recorded val loss
    assert g["checkpoint"]["step"] == 5 and g["reloaded_tied"]
    assert g["reloaded_val_loss"].item() == pytest.approx(g["checkpoint"]["val_loss"], abs=1e-6)
    d = g["compile_diffs"]  # (bfloat16 autocast: logits up to a bfloat16 ulp apart)
    assert d[0] < 1e-2 and d[1] < 1e-3 and d[2] < 2e-3
    # GPT-2's init through model.apply: N(0, 0.02), the residual projections' std scaled by
    # 1/sqrt(2 * n_layer), zero biases, LayerNorm's ones
    init = g["fixed_init"]
    assert init["transformer.wte.weight"][1] == pytest.approx(0.02, rel=0.01)
    assert init["transformer.h.0.mlp.c_fc.weight"][1] == pytest.approx(0.02, rel=0.1)
    assert init["transformer.h.0.mlp.c_proj.weight"][1] == pytest.approx(0.02 / 2**0.5, rel=0.1)
    assert init["transformer.h.0.attn.c_attn.bias"] == (0.0, 0.0)
    assert init["transformer.h.0.ln_1.weight"] == (1.0, 0.0)
    assert "lm_head.weight" not in init  # (tied: named_parameters yields wte.weight once)
    r = g["fixed_results"]
    assert r["groups"] == [(6, 0.1, (0.9, 0.95), False), (10, 0.0, (0.9, 0.95), False)]
    assert r["bf16_dtype"].endswith("bfloat16")
    assert r["steps"][1][0] < r["steps"][0][0]


@pytest.mark.slow
def test_build_nanogpt_fixed_parts_match_torch():
    g, t = _run("build_nanogpt"), _run_torch("build_nanogpt")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.pop("batches") == theirs.pop("batches")  # the .npy shard loader's batches
    assert ours.pop("hella") == theirs.pop("hella")  # encode_item, best_ending
    assert ours.pop("groups") == theirs.pop("groups")
    assert ours.pop("bf16_dtype") == theirs.pop("bf16_dtype").replace("torch", "jitgrad")
    assert ours.pop("lrs") == theirs.pop("lrs")
    _close(ours.pop("logits"), theirs.pop("logits"), rtol=1e-5, atol=1e-6)
    assert ours.pop("loss") == pytest.approx(theirs.pop("loss"), rel=1e-6)
    # bfloat16 autocast: the same bfloat16 logits but for a few rounded the other way
    bf16, their_bf16 = ours.pop("bf16_logits").numpy(), theirs.pop("bf16_logits").numpy()
    assert np.mean(bf16 == their_bf16) > 0.95
    _close(bf16, their_bf16, rtol=1e-2, atol=1e-2)
    assert ours.pop("bf16_loss") == pytest.approx(theirs.pop("bf16_loss"), rel=1e-3)
    # (the second step's gradient norm follows an AdamW step, which moves entries with a near-0
    # gradient by float32 noise * lr)
    (loss0, norm0), (loss1, norm1) = ours.pop("steps")
    (t_loss0, t_norm0), (t_loss1, t_norm1) = theirs.pop("steps")
    _close([loss0, norm0, loss1], [t_loss0, t_norm0, t_loss1], rtol=1e-5)
    assert norm1 == pytest.approx(t_norm1, rel=1e-3)
    # (two AdamW steps: an entry with a gradient near 0 is normalized to about +-1 by Adam)
    _close_nested(ours.pop("after"), theirs.pop("after"), rtol=1e-4, atol=1e-4)
    assert not ours and not theirs
    assert g["lrs"] == t["lrs"]
    assert g["fixed_init"].keys() == t["fixed_init"].keys()


# ------------------------------------- torch.fx graph surgery (pytorch/examples fx/ style)


def test_fx_examples_edit_graphs_and_run_them():
    r = _run("fx_examples")["fx_results"]
    code, out = r["graph_from_proxies"]
    assert "cat = jitgrad.cat([x, y])" in code and "neg = jitgrad.neg(tanh)" in code
    _close(out, -np.tanh([[1.0, 1.0], [1.0, 1.0], [2.0, 2.0]]), rtol=1e-6)
    code, _ = r["append_activation"]  # (the script asserts the values itself)
    assert "leaky_relu = jitgrad.nn.functional.leaky_relu(cat, 0.01, False)" in code
    code, out = r["inline_submodule"]
    assert "call_module" not in code and "relu" in code and out.tolist() == [1, 1, 1, 2, 3]
    code, out = r["invert"]
    assert "log = jitgrad.log(output)" in code
    _close(out, [1, 2, 3, 4, 5], rtol=1e-6)
    code, outs = r["replace_add"]
    assert code.count("jitgrad.bitwise_and(x, y)") == 3 and "add" not in code
    assert [o.tolist() for o in outs] == [[1, 4, 2]] * 3  # (3 & 1, 5 & 4, 6 & 2)
    code, out = r["rewrite_pattern"]
    assert code.count("jitgrad.stack([w1, w2])") == 2 and "cat" not in code
    assert out.tolist() == [11.0, 11.0]  # (1 + max(stack) twice)
    traced_code, inlined_code, dtype = r["composite_ops"]
    assert "sigmoid = float_1.sigmoid()" in traced_code and "add_lowp(half, half_1)" in traced_code
    assert "add = float_1 + float_2" in inlined_code and str(dtype) == "jitgrad.float16"


def test_fx_examples_generate_torch_fx_code():
    g, t = _run("fx_examples")["fx_results"], _run_torch("fx_examples")["fx_results"]
    assert g.keys() == t.keys()
    for name in g:
        code, their_code = g[name][0].replace("jitgrad", "torch"), t[name][0]
        if name == "append_activation":  # (torch's node carries F's keyword defaults)
            their_code = their_code.replace("negative_slope = 0.01, inplace = False", "0.01, False")
        if name == "invert":  # (jitgrad.arctan is jitgrad.atan: one function, named atan)
            their_code = their_code.replace("arctan", "atan")
        assert code == their_code, name
    assert g["composite_ops"][1].replace("jitgrad", "torch") == t["composite_ops"][1]
    for name in ("graph_from_proxies", "inline_submodule", "invert", "rewrite_pattern"):
        _close(g[name][1], t[name][1], rtol=1e-6, atol=1e-6)
