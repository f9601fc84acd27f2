"""More public PyTorch training code (set F: Karpathy's llama2.c and llm.c, yunjey's
pytorch-tutorial, harvardnlp's Annotated Transformer), only the import changed, run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that training lowered the loss (or reached an accuracy), and, where
torch is installed, that the deterministic parts (fixed-weight forwards, gradients and a few
optimizer steps) equal the same script's with ``import torch``.
"""

import math

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

# ------------------------------------------------------------------ karpathy/llama2.c


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
