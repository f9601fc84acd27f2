"""Scripts written for these tests in the way common PyTorch code of two kinds is written (set
P32: a deep equilibrium model as the "Deep Implicit Layers" tutorial writes it, and a masked
autoregressive flow as karpathy's pytorch-normalizing-flows and pytorch-made write it), run on
jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that the DEQ classifier, trained through implicit gradients (an
Anderson solve forward, an adjoint solve in a tensor hook backward), lowered its loss and
classifies the images, that its implicit gradient equals backprop unrolled through many
iterations and passes gradcheck; that the flow's negative log-likelihood fell, its samples lie
on the moons, its inverse undoes its forward and its MADE is autoregressive; and, where torch is
installed, that the fixed-weight parts (residual histories, equilibria, implicit and unrolled
gradients, Adam steps, log-likelihoods, gradients through the sequential inverse, masks,
seeded samples) and the first training losses equal the same script's with ``import torch``.
"""

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run

# --------------------------------------------------------------- deep equilibrium model (DEQ)


def test_deq_trains_through_implicit_gradients():
    g = _run("deq_implicit")
    losses = g["losses"]
    assert len(losses) == g["epochs"] * len(g["train_loader"]) and np.isfinite(losses).all()
    assert np.mean(losses[-3:]) < 0.7 * np.mean(losses[:3]), (losses[:3], losses[-3:])
    # four classes: chance before training, most test images right after it
    assert g["initial_accuracy"] < 0.5
    assert g["accuracies"][-1] >= 0.85 and g["accuracies"][-1] > g["initial_accuracy"] + 0.4
    # the solver stops at max_iter=25: at most 23 Anderson steps forward and backward
    assert all(1 <= n <= 23 for n in g["forward_iters"] + g["backward_iters"])
    r = g["fixed_results"]
    # the forward solve converged: below its tolerance, f(z*) = z*, and forward iteration
    # (50 steps) reaches the same point
    assert r["forward_res"][-1] < 1e-5 and len(r["forward_res"]) < 58
    assert r["fixed_point_error"] < 1e-3
    _close(r["z_star"], r["z_iter"], rtol=0, atol=1e-3)
    assert r["forward_iteration_res"][-1] < 1e-6
    # the implicit gradient is the gradient of backprop unrolled through many iterations of f,
    # and the variant that reuses the last call's graph (its hook removing itself) agrees
    for key in r["implicit_grads"]:
        scale = np.abs(r["unrolled_grads"][key].numpy()).max()
        _close(r["implicit_grads"][key], r["unrolled_grads"][key], rtol=0, atol=1e-3 * scale)
        _close(r["implicit_grads"][key], r["reuse_grads"][key], rtol=0, atol=1e-3 * scale)
    _close(r["implicit_x_grad"], r["unrolled_x_grad"], rtol=0, atol=1e-4)
    _close(r["implicit_x_grad"], r["reuse_x_grad"], rtol=0, atol=1e-4)
    assert r["unrolled_loss"] == pytest.approx(r["loss"], rel=1e-4)
    assert r["reuse_hook_removed"] and len(r["reuse_backward_res"]) > 0
    # the tutorial's module keeps its hook (gradcheck's repeated backward passes need it)
    assert g["deq"].hook is not None
    # in double precision to 1e-10, the implicit gradient passes gradcheck
    assert r["gradcheck"] is True and r["double_forward_res"][-1] < 1e-10


def test_deq_fixed_weights_match_torch():
    g, t = _run("deq_implicit"), _run_torch("deq_implicit")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.keys() == theirs.keys()
    for key in ("gradcheck", "reuse_hook_removed"):
        assert ours.pop(key) == theirs.pop(key), key
    # the same number of solver steps, each residual as torch's
    for key in ("forward_res", "backward_res", "reuse_backward_res", "forward_iteration_res",
                "double_forward_res"):
        mine, other = ours.pop(key), theirs.pop(key)
        assert len(mine) == len(other), key
        _close(mine, other, rtol=1e-4, atol=1e-6)
    for key in ("implicit_grads", "reuse_grads", "unrolled_grads", "after_adam"):
        mine, other = ours.pop(key), theirs.pop(key)
        assert list(mine) == list(other)
        for name in other:
            # (tens of Anderson steps, each a small linear solve, amplify float32 rounding)
            _close(mine[name], other[name], rtol=1e-4, atol=1e-6)
    for key in theirs:
        _close(ours[key], theirs[key], rtol=1e-4, atol=1e-6)


def test_deq_first_training_losses_match_torch():
    ours, theirs = _run("deq_implicit"), _run_torch("deq_implicit")
    _close(ours["losses"][:4], theirs["losses"][:4], rtol=1e-5, atol=1e-6)
    assert ours["forward_iters"][:4] == theirs["forward_iters"][:4]
    assert ours["initial_accuracy"] == theirs["initial_accuracy"]


# ------------------------------------------------------------ masked autoregressive flow (MAF)


def test_maf_learns_the_two_moons():
    g = _run("maf_flow")
    torch = g["torch"]
    losses = g["losses"]
    assert len(losses) == 250 and np.isfinite(losses).all()
    assert np.mean(losses[-25:]) < np.mean(losses[:25]) - 0.6, (losses[:3], losses[-3:])
    assert g["test_nll"] < 1.0
    # the test points map to about a standard normal
    assert g["latent_mean"].abs().max().item() < 0.2
    assert ((g["latent_std"] > 0.75) & (g["latent_std"] < 1.25)).all()
    # the samples lie on the moons: most within 0.2 of a test point (a Gaussian's: a third)
    samples, test_x = g["samples"].numpy(), g["test_x"].numpy()
    dist = np.sqrt(((samples[:, None] - test_x[None]) ** 2).sum(-1)).min(1)
    assert samples.shape == (512, 2) and (dist < 0.2).mean() > 0.8
    # every ActNorm initialised itself from the first batch; masks are buffers, not parameters
    model = g["model"]
    actnorms = [m for m in model.modules() if isinstance(m, g["ActNorm"])]
    assert len(actnorms) == 4 and all(m.data_dep_init_done for m in actnorms)
    keys = model.state_dict().keys()
    assert "flow.flows.1.net.net.0.mask" in keys
    assert not any(name.endswith("mask") for name, _ in model.named_parameters())
    assert isinstance(model.prior, torch.distributions.MultivariateNormal)

    r = g["fixed_results"]
    # three formulations of the prior's log-density agree
    _close(r["normal_logprob"], r["mvn_logprob"], rtol=1e-6, atol=1e-5)
    _close(r["manual_logprob"], r["mvn_logprob"], rtol=1e-6, atol=1e-5)
    # the ActNorm's data init: the first layer's output has zero mean and unit std
    x = g["fixed_x"].numpy().astype(np.float64)
    s = -np.log(x.std(axis=0, ddof=1))
    _close(r["actnorm_init"]["flow.flows.0.s"], s[None], rtol=1e-5)
    _close(r["actnorm_init"]["flow.flows.0.t"], -(x * np.exp(s)).mean(0)[None], rtol=0,
           atol=1e-5)
    # the inverse undoes the forward, its log-determinant the forward's negative
    _close(r["x_rec"], g["fixed_x"], rtol=0, atol=1e-4)
    assert r["inverse_error"] < 1e-4
    _close(r["back_log_det"], -r["log_det"], rtol=0, atol=1e-4)
    assert r["loss"] == pytest.approx(-(r["prior_logprob"] + r["log_det"]).sum().item(),
                                      rel=1e-5)
    # the inverse's Jacobian, through the in-place writes, is not zero
    assert r["inverse_grad"].abs().max().item() > 0.1
    # MADE: each output block depends only on earlier inputs (strictly lower-triangular),
    # and the masks are 0/1 floats
    jac = r["made_jacobian"].numpy()
    assert jac.shape == (8, 4)
    for block in (jac[:4], jac[4:]):
        assert np.array_equal(np.triu(block), np.zeros((4, 4)))
        assert np.abs(np.tril(block, -1)).sum() > 0
    for mask in r["made_masks"]:
        assert mask.dtype == torch.float32 and set(mask.unique().tolist()) <= {0.0, 1.0}


def test_maf_fixed_weights_match_torch():
    g, t = _run("maf_flow"), _run_torch("maf_flow")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.keys() == theirs.keys()
    assert ours.pop("loss") == pytest.approx(theirs.pop("loss"), rel=1e-5)
    _close(ours.pop("inverse_error"), theirs.pop("inverse_error"), rtol=0, atol=1e-6)
    for mine, other in zip(ours.pop("made_masks"), theirs.pop("made_masks")):
        assert np.array_equal(mine.numpy(), other.numpy())
    # the NLL sums 64 samples: its gradients are in the hundreds
    mine, other = ours.pop("grads"), theirs.pop("grads")
    assert list(mine) == list(other)
    for name in other:
        _close(mine[name], other[name], rtol=1e-4, atol=1e-4)
    for key in ("actnorm_init", "after_adam"):
        mine, other = ours.pop(key), theirs.pop(key)
        assert list(mine) == list(other)
        for name in other:
            _close(mine[name], other[name], rtol=1e-5, atol=1e-6)
    # (back through three sequential inverses: each dimension's rounding feeds the next)
    _close(ours.pop("inverse_grad"), theirs.pop("inverse_grad"), rtol=1e-4, atol=1e-5)
    for key in theirs:
        _close(ours[key], theirs[key], rtol=1e-5, atol=1e-6)


def test_maf_first_training_losses_match_torch():
    ours, theirs = _run("maf_flow"), _run_torch("maf_flow")
    _close(ours["losses"][:10], theirs["losses"][:10], rtol=1e-5, atol=1e-6)
