"""A script written for these tests in the way HuggingFace transformers' GPT-2 and its
generation utilities, and nanoGPT-derived repositories, write torch code (set I35): a tiny
GPT-2 with HF's ``Conv1D``, a causal ``bias`` buffer and ``finfo.min`` masking, left-padded
batches, a ``past_key_values`` cache, greedy / sampled / beam-searched generation with logits
processors and stopping criteria, model surgery (resized and cropped embeddings), bfloat16 and
autocast inference, ``torch.compile``, and training on a character corpus with AdamW, a cosine
schedule and gradient accumulation. It runs on jitgrad.

The script in tests/scripts/ runs as ``__main__``; these tests read what it computed from its
globals and assert that the cache, the padding and the sdpa kernel change no logits and no
generated token, that the logits processors' older and newer forms agree, that eos, min-length
and n-gram rules hold in what was generated, that the model learned its corpus, and, where
torch is installed, that the fixed-weight logits, gradients and generated token ids equal the
same script's with ``import torch``.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

SCRIPT = "hf_gpt2_generate"


# --------------------------------------------------------------------- model and masks


def test_gpt2_layers_masks_and_cache():
    g = _run(SCRIPT)
    assert g["conv1d_is_linear"]
    # gelu_new by hand is F.gelu(approximate="tanh"), in value and gradient
    assert g["gelu_forms_difference"] < 1e-6 and g["gelu_grad_forms_difference"] < 1e-6
    # tied embeddings: one parameter, listed once, saved under both names
    assert g["tied"] and g["sdpa_tied_after_load"] and g["state_dict_shares_storage"]
    keys = g["state_keys"]
    assert "lm_head.weight" in keys and "transformer.wte.weight" in keys
    assert not any(k.endswith((".attn.bias", ".masked_bias")) for k in keys)  # persistent=False
    assert len(keys) == 29 and len(g["grad_names"]) == 28
    assert "lm_head.weight" not in g["grad_names"]
    load = g["load_result"]
    assert load.missing_keys == [] and load.unexpected_keys == []
    # 23 tokens, 64 positions, n_embd 16: two blocks of 3280 parameters and ln_f
    assert g["n_params_no_embeddings"] == 2 * 3280 + 32
    assert g["n_params"] == g["n_params_no_embeddings"] + 23 * 16 + 64 * 16
    # attention: rows sum to one, no real query looks at a padded key
    assert g["attention_rows_sum_to_one"] and g["attention_on_pads"] == 0.0
    assert g["present_shapes"] == [(4, 4, 11, 4)] * 2 and g["cache_shapes"] == [(4, 4, 11, 4)] * 2
    # the sdpa path (4D mask, is_causal), the cache, and the left padding change no logit
    assert g["sdpa_difference"] < 1e-5 and g["sdpa_is_causal_difference"] < 1e-5
    assert g["cache_difference"] < 1e-5 and g["padding_difference"] < 1e-5
    assert g["manual_loss_difference"] < 1e-6


def test_gpt2_logits_processors_and_stopping_criteria():
    g = _run(SCRIPT)
    r = g["fixed_results"]
    # the gather/scatter penalty, the in-place scatter_ and the old loop agree; and the old
    # top_k_top_p_filtering, nanoGPT's boolean-index top-k and torch.where with the warpers
    assert g["repetition_forms_agree"] and g["filtering_forms_agree"]
    top_k = r["top_k"].numpy()
    assert (np.isfinite(top_k).sum(-1) == 5).all()
    top_p = r["top_p"].numpy()
    assert g["kept_by_top_p"].tolist() == np.isfinite(top_p).sum(-1).tolist()
    # the kept tokens are the most likely ones and hold at least 0.8 of the mass
    scores = g["scores"].numpy()
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    for row, kept in zip(probs, np.isfinite(top_p)):
        assert row[kept].min() > row[~kept].max() and row[kept].sum() >= 0.8
    min_new = r["min_new_tokens"].numpy()
    eos = g["EOS_ID"]
    assert np.isneginf(min_new[:, [0, eos]]).all() and np.isfinite(min_new[:, 1:eos]).all()
    assert g["stopping_probe"] == [True, False] and g["stopping_probe_long"] == [True, True]


def test_gpt2_generation_invariants():
    g = _run(SCRIPT)
    gen, n = g["generated"], g["prompt_len"]
    # the cache, the padding and the sdpa kernel change no generated token
    assert g["greedy_cache_agrees"] and g["greedy_padding_agrees"]
    assert g["sdpa_greedy_agrees"] and g["sdpa_beam_agrees"]
    # transition scores are the log-probabilities of a full forward over what was generated
    assert g["rescoring_difference"] < 1e-5
    # eos: the rows that emitted it are padded after it; min_new_tokens delays it
    eos, pad = g["eos_token"], g["EOS_ID"]
    with_eos = gen["greedy_eos"][:, n:].tolist()
    assert g["eos_positions"][0] == 2
    for row, at in zip(with_eos, g["eos_positions"]):
        if at is not None:
            assert set(row[at + 1:]) <= {pad}
    assert eos not in gen["greedy_min_new_tokens"][0, n:n + 6].tolist()
    # no bigram repeats with no_repeat_ngram_size=2
    assert g["repeated_bigrams"] == [0, 0, 0, 0]
    # seeded sampling repeats itself; nanoGPT's sampler without a cache draws the same tokens
    assert g["sampling_reproducible"] and g["nanogpt_agrees"] and g["fast_is_long"]
    multi = gen["sampled_multi"]
    assert tuple(multi.shape) == (6, n + 10)
    assert len({tuple(r) for r in multi[:3, n:].tolist()}) > 1  # three different samples
    # beam search: the scorer with a cache = a plain beam search; it beats greedy here
    assert g["beam_forms_agree"] and g["beam_padding_agrees"]
    beam_scores = g["fixed_results"]["beam_scores"].numpy()
    assert (beam_scores >= g["greedy_logprob_sum"].numpy() / 8 - 1e-6).all()
    beam_eos = gen["beam_eos"]
    assert tuple(beam_eos.shape)[0] == 8  # two hypotheses kept per prompt
    eos_scores = g["fixed_results"]["beam_eos_scores"].numpy().reshape(4, 2)
    assert (eos_scores[:, 0] >= eos_scores[:, 1]).all()


def test_gpt2_model_surgery_save_load_and_compile():
    g = _run(SCRIPT)
    # resize_token_embeddings: still tied, old logits unchanged, the new row at the mean
    assert g["resized_tied"] and g["covariance_is_pd"] and g["resized_shape"] == (24, 16)
    assert g["resize_old_logits_difference"] < 1e-6
    wte = g["model"].transformer.wte.weight.detach().numpy()
    _close(g["fixed_results"]["resized_new_row"], wte.mean(0), rtol=0, atol=1e-3)
    # crop_block_size: the buffers shrink, stay non-persistent, and the positions run out
    assert g["crop_difference"] < 1e-6
    assert g["cropped_buffer_shapes"] == [(), (1, 1, 16, 16)]
    assert g["cropped_state_keys"] == g["state_keys"]
    assert g["crop_overflow_error"] == "index out of range in self"
    assert g["reload_equal"]
    # torch.compile changes neither the loss nor the gradients
    assert g["compiled_loss_difference"] < 1e-5 and g["compiled_logits_difference"] < 1e-5
    assert g["compiled_grad_difference"] < 1e-5
    assert g["fused_available"]


def test_gpt2_learns_the_corpus():
    g = _run(SCRIPT)
    losses = g["losses"]
    assert len(losses) == g["max_steps"] == 100
    assert losses[0] > 0.95 * math.log(g["V"])
    assert np.mean(losses[-10:]) < 0.35 * losses[0]
    assert g["final_estimate"]["val"] < 1.1 and g["final_estimate"]["train"] < 1.1
    assert all(math.isfinite(n) for n in g["grad_norms"])
    # the cosine schedule: 0 at the start, the peak after warm-up, ~0 at the end
    lrs = g["lrs"]
    assert lrs[0] == 0.0 and lrs[8] == pytest.approx(3e-3) and max(lrs) == pytest.approx(3e-3)
    assert lrs[-1] < 1e-5 and all(a >= b for a, b in zip(lrs[8:], lrs[9:]))
    groups = g["optimizer"].param_groups
    assert [gr["weight_decay"] for gr in groups] == [0.1, 0.0]
    assert [len(gr["params"]) for gr in groups] == [10, 18]
    assert g["still_tied"]
    # greedy continuations end a sentence, and stop on the eos token
    for prompt, text in zip(["the ", "a b"], g["trained_text"]):
        assert text.startswith(prompt) and text.endswith(".")
    assert (g["trained_greedy"].sequences[:, -1] == g["EOS_ID"]).all()


# ----------------------------------------------------------------------- against torch


def test_gpt2_fixed_results_match_torch():
    g, t = _run(SCRIPT), _run_torch(SCRIPT)
    _close_nested(g["fixed_results"], t["fixed_results"], rtol=1e-5, atol=1e-6)


def test_gpt2_generated_token_ids_match_torch():
    g, t = _run(SCRIPT), _run_torch(SCRIPT)
    assert g["generated"].keys() == t["generated"].keys()
    for key in t["generated"]:
        assert g["generated"][key].tolist() == t["generated"][key].tolist(), key
    for name in ("eos_token", "beam_eos_token", "eos_positions", "unpadded_beams",
                 "repeated_bigrams"):
        assert g[name] == t[name], name


def test_gpt2_first_losses_match_torch():
    g, t = _run(SCRIPT), _run_torch(SCRIPT)
    _close(g["losses"][:10], t["losses"][:10], rtol=1e-5, atol=0)
    _close(g["grad_norms"][:10], t["grad_norms"][:10], rtol=1e-5, atol=0)
    assert g["lrs"] == pytest.approx(t["lrs"], rel=1e-12, abs=1e-15)


def test_gpt2_bfloat16_with_gelu_tanh_matches_torch():
    g, t = _run(SCRIPT), _run_torch(SCRIPT)
    assert g["bf16_tied"] and g["autocast_dtypes_ok"]
    for name in ("gelu_new", "gelu_pytorch_tanh"):
        assert g["bf16_generated"][name].tolist() == t["bf16_generated"][name].tolist(), name
    ours, theirs = g["bf16_results"], t["bf16_results"]
    for key in ("gelu_pytorch_tanh", "logits_gelu_pytorch_tanh",
                "autocast_loss_gelu_pytorch_tanh", "autocast_grads_gelu_pytorch_tanh"):
        _close_nested(ours[key], theirs[key], rtol=1e-5, atol=1e-6)
    # bfloat16 logits are within bfloat16's resolution of float32's
    assert g["bf16_logits_vs_float32"] < 0.05


def test_gpt2_bfloat16_gelu_new_matches_torch():
    """gelu_new by hand: torch.pow(x, 3.0) on bfloat16 (torch rounds x*x before *x)."""
    g, t = _run(SCRIPT), _run_torch(SCRIPT)
    ours, theirs = g["bf16_results"], t["bf16_results"]
    for key in ("gelu_new", "logits_gelu_new", "autocast_loss_gelu_new",
                "autocast_grads_gelu_new"):
        _close_nested(ours[key], theirs[key], rtol=1e-5, atol=1e-6)
