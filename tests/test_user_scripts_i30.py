"""Set I: a RealNVP normalizing flow and a tiny DDPM, scripts written for these tests in the way
public PyTorch code of that kind (real-nvp-pytorch, tanelp's tiny-diffusion) writes torch code.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that training lowered the loss, that the flow inverts and the sampler
runs, and, where torch is installed, that the deterministic parts (fixed-weight forwards,
log-densities, gradients, clipping, Adam/AdamW steps, the noise schedule's tables) equal the
same script's with ``import torch``.
"""

import math
import os

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

# ------------------------------------------------ a RealNVP flow on the two moons


def test_real_nvp_learns_the_moons_and_inverts():
    g = _run("real_nvp")
    torch = g["torch"]
    losses = g["losses"]
    assert len(losses) == 151 and all(math.isfinite(v) for v in losses)
    assert np.mean(losses[-10:]) < np.mean(losses[:10]) - 0.6, (losses[:10], losses[-10:])
    fixed, r = g["fixed"], g["fixed_results"]
    # the masks are a parameter that does not train: Adam got only the s and t nets
    assert r["frozen"] == ["mask"] and r["mask_grad"] is None
    assert len(r["trainable"]) == 2 * 6 * 3 * 2 and r["trainable"][0] == "t.0.0.weight"
    assert not fixed.mask.requires_grad and isinstance(fixed.mask, torch.nn.Parameter)
    # g inverts f, and log_prob is the prior's log-density of z plus log|det J|
    _close(r["round_trip"], g["fixed_x"], rtol=1e-4, atol=1e-5)
    _close(r["log_prob_after"], r["prior_log_prob"] + r["log_det_J"], rtol=1e-5, atol=1e-5)
    assert r["losses"][1] < r["losses"][0]
    # the score: the gradient of log p, here next to a central difference of log_prob
    assert r["penalty"] > 0 and all(p.abs().sum() > 0 for p in r["penalty_grads"].values())
    h, x0 = 1e-2, g["fixed_x"][:4]
    with torch.no_grad():
        for k in range(2):
            step = torch.zeros(4, 2)
            step[:, k] = h
            diff = (fixed.log_prob(x0 + step) - fixed.log_prob(x0 - step)) / (2 * h)
            _close(diff, r["score"][:4, k], rtol=2e-2, atol=2e-2)
    # the prior: a standard normal in 2-D
    z = r["z"]
    expected = -0.5 * (z**2).sum(-1) - math.log(2 * math.pi)
    _close(r["prior_log_prob"], expected, rtol=1e-5, atol=1e-5)
    # the last cell: four panels; the samples g(z) with z of shape (200, 1, 2)
    drawn = g["plt"].drawn
    assert [d[1] for d in drawn if d[0] == "subplot"] == [221, 222, 223, 224]
    assert [d[1] for d in drawn if d[0] == "title"][-1] == r"$X = g(z)$"
    assert g["x"].shape == (200, 1, 2) and np.isfinite(g["x"]).all()
    # the trained flow maps the moons near the prior: z = f(X) has about unit spread
    z_moons = drawn[1][1]
    assert z_moons.shape == (200,) and 0.5 < z_moons.std() < 1.5


def test_real_nvp_fixed_weights_match_torch():
    g, t = _run("real_nvp"), _run_torch("real_nvp")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.pop("trainable") == theirs.pop("trainable")
    assert ours.pop("frozen") == theirs.pop("frozen")
    assert ours.pop("mask_grad") is None and theirs.pop("mask_grad") is None
    _close(ours.pop("losses"), theirs.pop("losses"), rtol=1e-5)
    _close_nested(ours.pop("grads"), theirs.pop("grads"), rtol=1e-4, atol=1e-5)
    # the gradient penalty's double backward through the coupling layers
    assert ours.pop("penalty") == pytest.approx(theirs.pop("penalty"), rel=1e-5)
    _close_nested(ours.pop("penalty_grads"), theirs.pop("penalty_grads"), rtol=1e-4, atol=1e-4)
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-5)
    _close(g["fixed_x"], t["fixed_x"], rtol=0, atol=0)  # (the same sklearn moons)


# ------------------------------------------------------ a tiny DDPM on 2-D points


def test_tiny_ddpm_trains_samples_and_saves():
    g = _run("tiny_ddpm")
    torch = g["torch"]
    losses = g["losses"]
    assert len(losses) == 4 * 2560 // 32 and all(math.isfinite(v) for v in losses)
    assert np.mean(losses[-20:]) < np.mean(losses[:10]) - 0.15, (losses[:10], losses[-20:])
    bars = g["tqdm"].bars
    assert [b.n for b in bars] == [80, 16] * 4  # the epochs' bars, the samplers' over timesteps
    assert bars[-2].desc == "Epoch 3" and bars[-2].postfix["step"] == 319
    assert bars[-2].postfix["loss"] == losses[-1]
    frames = g["frames"]
    assert frames.shape == (4, 200, 2) and frames.dtype == np.float32 and np.isfinite(frames).all()
    outdir = g["outdir"]
    assert g["plt"].saved == ["0000.png", "0001.png", "0002.png", "0003.png"]
    np.testing.assert_array_equal(np.load(os.path.join(outdir, "loss.npy")), np.array(losses))
    np.testing.assert_array_equal(np.load(os.path.join(outdir, "frames.npy")), frames)
    state = torch.load(os.path.join(outdir, "model.pth"))
    assert list(state) == list(g["model"].state_dict())
    assert all(torch.equal(v, g["model"].state_dict()[k]) for k, v in state.items())
    # the schedule: linear betas, cumulative products, the previous one padded with 1
    s = g["noise_scheduler"]
    _close(s.betas, np.linspace(1e-4, 0.02, 16), rtol=1e-6)
    _close(s.alphas_cumprod, np.cumprod(1 - np.linspace(1e-4, 0.02, 16)), rtol=1e-5)
    assert s.alphas_cumprod_prev[0].item() == 1.0
    assert torch.equal(s.alphas_cumprod_prev[1:], s.alphas_cumprod[:-1])
    r = g["fixed_results"]
    assert r["variances"][0] == 0 and all(v > 0 for v in r["variances"][1:])
    assert r["steps"][1][0] < r["steps"][0][0]
    # the sinusoidal embedding: sin then cos of x * 25 * 10000^(-k / (half - 1))
    x = g["moons_dataset"](8).tensors[0][:, 0].numpy().astype(np.float64)
    freqs = np.exp(-math.log(10000.0) / 3 * np.arange(4))
    arg = 25.0 * x[:, None] * freqs[None]
    _close(r["embedding"], np.concatenate([np.sin(arg), np.cos(arg)], -1), rtol=1e-4, atol=1e-4)


def test_tiny_ddpm_fixed_parts_match_torch():
    g, t = _run("tiny_ddpm"), _run_torch("tiny_ddpm")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    _close(ours.pop("steps"), theirs.pop("steps"), rtol=1e-5)
    _close_nested(ours.pop("grads"), theirs.pop("grads"), rtol=1e-4, atol=1e-5)
    _close_nested(ours.pop("learnable_grads"), theirs.pop("learnable_grads"), rtol=1e-4,
                  atol=1e-5)
    _close(ours.pop("embedding"), theirs.pop("embedding"), rtol=1e-4, atol=1e-4)
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)
