"""Scripts written for these tests in the way common PyTorch code of two kinds is written (set
N32: a minimal Mamba selective-state-space language model as johnma2006/mamba-minimal and
mamba.py write it, and a VQ-VAE with a PixelCNN prior as the zalandoresearch and rosinality
tutorials write it), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that the Mamba model learned to copy (its loss fell, greedy generation
copies the prompt) and that its sequential, "segsum" and parallel (custom autograd.Function)
scans, its recurrent step and a checkpointed forward agree; that both VQ-VAEs (straight-through
codebook and EMA codebook with restarts) reconstruct better than the mean image while using
many codes and that the prior beats the code frequencies; and, where torch is installed, that the
fixed-weight parts (logits, losses, gradients, scans, AdamW and Adam steps, EMA buffers,
Gumbel-softmax samples, sampled tokens and codes) and the first training losses equal the same
script's with ``import torch``.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested


def _scaled_close(ours, theirs, rtol=1e-5, atol=1e-6):
    """Gradients of very different sizes: each tensor to rtol, and to atol times its scale."""
    theirs = np.asarray(theirs, dtype=np.float64)
    scale = max(float(np.abs(theirs).max()), 1e-12)
    _close(ours, theirs, rtol=rtol, atol=atol * scale)


def _signal_close(steps, t_steps, t_grads, rtol=1e-5, atol=1e-6):
    """An Adam(W) first step is about lr * sign(g): where a gradient is rounding noise (next to
    eps) its step is noise too, so only the steps of gradients above 1e-7 are compared."""
    assert list(steps) == list(t_steps) == list(t_grads)
    for name in t_steps:
        signal = np.abs(np.asarray(t_grads[name])) > 1e-7
        _close(np.asarray(steps[name])[signal], np.asarray(t_steps[name])[signal],
               rtol=rtol, atol=atol)


# -------------------------------------------------------------------- Mamba, mamba-minimal


def test_mamba_learns_to_copy():
    g = _run("mamba_minimal")
    torch = g["torch"]
    args, model = g["args"], g["model"]
    assert args.d_inner == 64 and args.dt_rank == 2 and args.vocab_size == 8
    losses, lrs = g["losses"], g["lrs"]
    assert len(losses) == len(lrs) == len(g["grad_norms"]) == 150
    assert np.isfinite(losses).all()
    # the copy targets start near uniform over the vocabulary, and end far below it
    assert losses[0] == pytest.approx(math.log(args.vocab_size), rel=0.05)
    assert np.mean(losses[-10:]) < 0.25 * np.mean(losses[:10]), (losses[:3], losses[-3:])
    assert g["test_loss"] < 0.5 and g["token_accuracy"] > 0.9 and g["copy_accuracy"] > 0.9
    # warm-up then cosine down to a tenth of the peak
    assert lrs[0] == pytest.approx(4e-4) and max(lrs) == pytest.approx(4e-3)
    assert lrs[-1] == pytest.approx(4e-4, rel=0.02) and np.all(np.diff(lrs[10:]) <= 0)
    # tied weights: one parameter counted once, two keys in the state dict
    assert model.lm_head.weight is model.embedding.weight
    assert g["n_params"] == sum(p.numel() for p in set(model.parameters()))
    assert "lm_head.weight" in model.state_dict() and "embedding.weight" in model.state_dict()
    # the checkpoint saved with "backbone." keys, mmap'ed, renamed and loaded back
    assert all(k.startswith("backbone.") for k in g["state_dict"])
    assert not g["load_result"].missing_keys and not g["load_result"].unexpected_keys
    assert torch.equal(g["reloaded_logits"], g["test_logits"])
    # the generated halves copy the prompts' symbols
    assert tuple(g["generated"].shape) == (16, 2 * g["COPY_LEN"] + 1)
    assert torch.equal(g["generated"][:, :g["COPY_LEN"] + 1], g["prompts"])


def test_mamba_scans_steps_and_checkpoint_agree():
    g = _run("mamba_minimal")
    torch, F = g["torch"], g["torch"].nn.functional
    r = g["fixed_results"]
    assert r["vocab_size"] == 16 and r["dt_rank"] == 1  # 10 padded to a multiple of 8
    # dt starts log-uniform in [dt_min, dt_max]: the bias is its inverse softplus
    dt = F.softplus(r["dt_bias"])
    assert dt.min().item() >= 1e-3 * (1 - 1e-5) and dt.max().item() <= 0.1 * (1 + 1e-5)
    # the sequential loop, the segsum form and the parallel scan: one recurrence
    _close(r["scan_parallel"], r["scan"], rtol=1e-5, atol=1e-5)
    _close(r["scan_pscan"], r["scan"], rtol=1e-5, atol=1e-5)
    for kind in ("parallel", "pscan"):
        for a, b in zip(r[f"scan_grads_{kind}"], r["scan_grads_sequential"]):
            _scaled_close(a, b, rtol=1e-4, atol=1e-6)
    assert r["pscan_gradcheck"] is True
    # the model with the parallel scan, the recurrent step and the checkpointed forward
    _close(r["pscan_logits"], r["logits"], rtol=1e-5, atol=1e-6)
    _close(r["stepped_logits"], r["full_logits"], rtol=1e-5, atol=1e-6)
    for name, grad in r["grads"].items():
        _scaled_close(r["pscan_grads"][name], grad, rtol=1e-4, atol=1e-5)
        _scaled_close(r["checkpoint_grads"][name], grad, rtol=1e-5, atol=1e-6)
    # greedy decoding by the whole prefix and by the recurrent step: the same tokens
    assert torch.equal(r["greedy"], r["greedy_recurrent"])
    for key in ("sampled", "nucleus"):
        assert r[key].min().item() >= 0 and r[key].max().item() < r["vocab_size"]
    # nucleus filtering keeps the smallest set of most likely tokens reaching p = 0.5
    logits, kept = r["last_logits"], torch.isfinite(r["top_p_logits"])
    probs = F.softmax(logits, dim=-1)
    for row in range(3):
        keep, drop = logits[row][kept[row]], logits[row][~kept[row]]
        assert len(drop) and keep.min().item() >= drop.max().item()
        mass = probs[row][kept[row]]
        assert mass.sum().item() >= 0.5 - 1e-6 and mass.sum().item() - mass.min().item() < 0.5
        _close(r["top_p_logits"][row][kept[row]], keep, rtol=0, atol=0)
    # the repetition penalty: the logits of tokens seen in the prompt, shrunk toward -inf
    seen = torch.zeros(3, r["vocab_size"], dtype=torch.bool)
    seen[torch.arange(3)[:, None], g["copy_batch"](3, torch.Generator().manual_seed(5))[0]] = True
    expected = torch.where(logits < 0, logits * 1.5, logits / 1.5)
    _close(r["penalized_logits"], torch.where(seen, expected, logits), rtol=1e-6, atol=0)


def test_mamba_fixed_weights_match_torch():
    g, t = _run("mamba_minimal"), _run_torch("mamba_minimal")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.keys() == theirs.keys()
    for key in ("vocab_size", "dt_rank", "pscan_gradcheck"):
        assert ours.pop(key) == theirs.pop(key), key
    for key in ("sampled", "greedy", "greedy_recurrent", "nucleus"):
        assert ours.pop(key).tolist() == theirs.pop(key).tolist(), key
    for key in ("loss", "loss_after_step"):
        assert ours.pop(key) == pytest.approx(theirs.pop(key), rel=1e-5)
    mine, other = ours.pop("top_p_logits").numpy(), theirs.pop("top_p_logits").numpy()
    assert np.array_equal(np.isinf(mine), np.isinf(other))
    _close(mine[np.isfinite(other)], other[np.isfinite(other)], rtol=1e-5, atol=1e-6)
    grads = theirs["grads"]
    _signal_close(ours.pop("after_step"), theirs.pop("after_step"), grads)
    for key in ("grads", "pscan_grads", "checkpoint_grads"):
        mine, other = ours.pop(key), theirs.pop(key)
        assert list(mine) == list(other)
        for name in other:
            _scaled_close(mine[name], other[name], rtol=1e-4, atol=1e-6)
    for key in ("scan_grads_sequential", "scan_grads_parallel", "scan_grads_pscan"):
        for a, b in zip(ours.pop(key), theirs.pop(key)):
            _scaled_close(a, b, rtol=1e-5, atol=1e-6)
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)


def test_mamba_first_losses_match_torch():
    g, t = _run("mamba_minimal"), _run_torch("mamba_minimal")
    # the same initial weights and batches (torch's random numbers): the same first steps
    _close(g["losses"][:8], t["losses"][:8], rtol=1e-5, atol=0)
    _close(g["grad_norms"][:8], t["grad_norms"][:8], rtol=1e-4, atol=0)
    assert g["lrs"] == pytest.approx(t["lrs"], rel=1e-12)
    assert g["generated"].tolist() == t["generated"].tolist()


# ------------------------------------------------------------ VQ-VAE, EMA codebook, PixelCNN


def test_vq_vae_both_quantizers_reconstruct_with_many_codes():
    g = _run("vq_vae")
    histories, baseline = g["histories"], g["baseline_error"]
    for kind, h in histories.items():
        errors, perplexity = h["recon_error"], h["perplexity"]
        assert len(errors) == len(perplexity) == len(h["vq_loss"]) == 150, kind
        assert np.isfinite(errors).all() and np.isfinite(h["vq_loss"]).all(), kind
        assert np.mean(errors[-20:]) < 0.6 * np.mean(errors[:20]), (kind, errors[:3], errors[-3:])
        # reconstructions much better than the mean training image, from many codes
        assert h["valid_recon_error"] < 0.6 * baseline, (kind, h["valid_recon_error"], baseline)
        assert np.mean(perplexity[-20:]) > np.mean(perplexity[:20]) + 2, kind
        assert 4 < h["valid_perplexity"] <= g["num_embeddings"] and h["codes_used"] >= 8, kind
        # two stride-2 convolutions: a 4 x 4 grid of codes; decoding the codes is the forward
        assert h["codes_shape"] == (64, 4, 4) and h["decode_gap"] < 1e-5, kind
    assert histories["plain"]["n_restarts"] == 0 and histories["ema"]["n_restarts"] > 0
    # the EMA codebook is a set of buffers, not parameters
    vq = histories["ema"]["model"]._vq_vae
    assert [n for n, _ in vq.named_buffers()] == ["embed", "cluster_size", "embed_avg",
                                                  "initted"]
    assert not list(vq.parameters()) and bool(vq.initted)
    # the prior over the codes learned, and beats the codes' frequencies
    losses = g["prior_losses"]
    assert len(losses) == 6 * 4 and np.isfinite(losses).all()
    assert np.mean(losses[-4:]) < np.mean(losses[:4]) - 0.5, (losses[:4], losses[-4:])
    assert g["prior_valid_nll"] < g["unigram_nll"] < math.log(g["num_embeddings"])
    assert int(g["code_counts"].sum()) == 256 * 16
    assert tuple(g["sampled_codes"].shape) == (8, 4, 4)
    images = g["sampled_images"]
    assert tuple(images.shape) == (8, 3, 16, 16)
    assert images.min().item() >= 0 and images.max().item() <= 1


def test_vq_vae_quantizer_semantics():
    g = _run("vq_vae")
    torch = g["torch"]
    vq = g["fixed_results"]["vq"]
    # the expanded-square and the cdist distances pick the same codes
    assert torch.equal(vq["indices"], vq["cdist_indices"])
    # the forward value is the chosen codebook rows (permuted back to channels first)
    codebook, x = vq["codebook"], vq["inputs"]
    rows = codebook[vq["indices"]].view(2, 4, 4, 3).permute(0, 3, 1, 2)
    _close(vq["quantized"], rows, rtol=1e-6, atol=1e-7)
    # straight through: the input's gradient is d(sin q)/dq plus the commitment term only
    n = x.numel()
    _close(vq["input_grad"], torch.cos(rows) + 2 * 0.25 * (x - rows) / n, rtol=1e-5, atol=1e-6)
    assert 1 <= vq["perplexity"] <= 8
    r = g["fixed_results"]
    # Gumbel: the hard sample's vectors are codebook rows, the soft one mixes them
    hard, soft = r["gumbel"]["hard=True"], r["gumbel"]["hard=False"]
    assert not torch.equal(hard["z_q"], soft["z_q"]) and hard["diff"] == soft["diff"]
    # the masked convolutions: type A hides the centre and everything after it
    w = r["prior"]["masked_weight"]
    assert w[:, :, 1, 1:].abs().max().item() == 0 and w[:, :, 2:].abs().max().item() == 0
    assert w[:, :, 0].abs().min().item() > 0 and w[:, :, 1, 0].abs().min().item() > 0
    # EMA: cluster sizes from the smoothed counts, the codebook their running means
    steps = r["ema_steps"]
    assert [s["n_restarts"] for s in steps][-1] > 0
    first = steps[0]
    counts = torch.bincount(first["indices"], minlength=6).float()
    _close(first["cluster_size"], 0.5 * 1.0 + 0.5 * counts, rtol=1e-6)


def test_vq_vae_fixed_weights_match_torch():
    g, t = _run("vq_vae"), _run_torch("vq_vae")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.keys() == theirs.keys()
    for kind in ("plain", "ema"):
        mine, other = dict(ours.pop(kind)), dict(theirs.pop(kind))
        assert mine.pop("codes").tolist() == other.pop("codes").tolist(), kind
        _signal_close(mine.pop("after_step"), other.pop("after_step"), other["grads"])
        grads, t_grads = mine.pop("grads"), other.pop("grads")
        assert list(grads) == list(t_grads)
        for name in t_grads:
            _scaled_close(grads[name], t_grads[name], rtol=1e-4, atol=1e-6)
        for key in ("vq_loss", "recon_error", "perplexity"):
            assert mine.pop(key) == pytest.approx(other.pop(key), rel=1e-5), (kind, key)
        _close_nested(mine, other, rtol=1e-5, atol=1e-6)
    for a, b in zip(ours.pop("ema_steps"), theirs.pop("ema_steps")):
        assert a.pop("indices").tolist() == b.pop("indices").tolist()
        assert a.pop("n_restarts") == b.pop("n_restarts")
        _close_nested(a, b, rtol=1e-5, atol=1e-6)
    gumbel, t_gumbel = ours.pop("gumbel"), theirs.pop("gumbel")
    for kind in t_gumbel:  # torch's Gumbel noise, the same samples
        assert gumbel[kind].pop("indices").tolist() == t_gumbel[kind].pop("indices").tolist()
        _close_nested(gumbel[kind], t_gumbel[kind], rtol=1e-5, atol=1e-6)
    prior, t_prior = ours.pop("prior"), theirs.pop("prior")
    assert prior.pop("samples").tolist() == t_prior.pop("samples").tolist()
    grads, t_grads = prior.pop("grads"), t_prior.pop("grads")
    for name in t_grads:
        _scaled_close(grads[name], t_grads[name], rtol=1e-4, atol=1e-6)
    _close_nested(prior, t_prior, rtol=1e-5, atol=1e-6)
    vq, t_vq = ours.pop("vq"), theirs.pop("vq")
    for key in ("indices", "cdist_indices"):
        assert vq.pop(key).tolist() == t_vq.pop(key).tolist()
    _close_nested(vq, t_vq, rtol=1e-5, atol=1e-6)
    assert ours == theirs == {}


def test_vq_vae_first_losses_match_torch():
    g, t = _run("vq_vae"), _run_torch("vq_vae")
    assert g["data_variance"] == pytest.approx(t["data_variance"], rel=1e-6)
    assert g["baseline_error"] == pytest.approx(t["baseline_error"], rel=1e-5)
    # the same images, weights, shuffles and codebook initializations: the same first steps
    for kind in ("plain", "ema"):
        ours, theirs = g["histories"][kind], t["histories"][kind]
        _close(ours["recon_error"][:6], theirs["recon_error"][:6], rtol=1e-5, atol=0)
        _close(ours["perplexity"][:6], theirs["perplexity"][:6], rtol=1e-5, atol=0)
        _close(ours["vq_loss"][:6], theirs["vq_loss"][:6], rtol=1e-5, atol=1e-8)
