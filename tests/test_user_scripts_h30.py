"""Scripts (set H) written for these tests in the way public PyTorch code writes a toy
WGAN-GP (caogang/wgan-gp's gan_toy.py) and physics-informed networks for Burgers' equation
(jayroxis/PINNs' notebooks), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that training did what it should, and, where torch is installed, that
the deterministic parts (gradient penalties and their double backward, PDE residuals through
second derivatives, Adam and LBFGS steps from weights set from numpy) equal the same script's
with ``import torch``.
"""

import copy
import types

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run


def _close_list(ours, theirs, **tol):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        _close(a, b, **tol)


# ------------------------------------------------------------------ WGAN-GP on toy data


def test_wgan_gp_toy_critic_learns_a_wasserstein_estimate():
    g = _run("wgan_gp_toy")
    scribe = g["scribe"]
    assert scribe.flushed == [19, 39, 59] and scribe.step == 60
    costs = scribe.history
    disc = [costs["8gaussians/critic cost"][i] for i in range(60)]
    wass = [costs["8gaussians/wasserstein estimate"][i] for i in range(60)]
    gen = [costs["8gaussians/generator cost"][i] for i in range(60)]
    assert all(np.shape(v) == () for v in disc + wass + gen)  # (.data.numpy() of 0-dim costs)
    # at the start the critic is flat (gradient ~0: the cost is PENALTY_WEIGHT); it learns to tell
    # the real points from the generator's: the cost falls, the distance estimate grows
    assert disc[0] == pytest.approx(0.1, abs=0.01)
    assert np.mean(disc[-10:]) < np.mean(disc[:10]) - 0.05
    assert np.mean(wass[-10:]) > np.mean(wass[:10]) + 0.05 and np.mean(wass[-10:]) > 0
    frames = g["frames"]
    assert len(frames) == 3 and g["n_snapshots"] == 3
    assert all(m.shape == (32, 32) and s.shape == (64, 2) for m, s in frames)
    assert frames[-1][0].std() > frames[0][0].std()  # the critic's map is no longer flat
    # mone/one are 0-dim; backward(mone) through the mean gave -1/B per point
    assert g["mone"].shape == () and g["mone"].item() == -1.0
    # the critic's parameters were frozen for the generator's step and stay so
    assert all(not p.requires_grad for p in g["critic"].parameters())


def test_wgan_gp_toy_old_style_one_of_shape_1_fails_as_on_torch_2():
    # the old idiom ``one = torch.FloatTensor([1])``: backward(mone) from the 0-dim mean
    # raises on torch 2.x (the script uses 0-dim weights); jitgrad raises the same error
    g = _run("wgan_gp_toy")
    torch, critic = g["torch"], g["Critic"]()  # (the script's critic is frozen at its end)
    mone = torch.FloatTensor([1]) * -1
    D_real = critic(torch.Tensor(g["last_batch"])).mean()  # noqa: N806
    with pytest.raises(RuntimeError, match=r"^Mismatch in shape: grad_output\[0\] has a shape "
                       r"of jitgrad.Size\(\[1\]\) and output\[0\] has a shape of "
                       r"jitgrad.Size\(\[\]\)\.$"):
        D_real.backward(mone)


def test_wgan_gp_toy_data_and_shapes():
    g = _run("wgan_gp_toy")
    batches = g["fixed_results"]["other_batches"]
    b25, roll = batches["25gaussians"].numpy(), batches["swissroll"].numpy()
    assert b25.shape == roll.shape == (64, 2) and b25.dtype == roll.dtype == np.float32
    # 25 gaussians: 0.05-wide blobs on the grid 2 * {-2..2}, scaled by 1 / 2.828
    grid = np.round(b25 * 2.828 / 2)
    assert np.all(np.abs(grid) <= 2) and np.abs(b25 * 2.828 - 2 * grid).max() < 0.3
    assert np.abs(roll).max() < 2.5


def test_wgan_gp_toy_penalty_and_steps_match_torch():
    g, t = _run("wgan_gp_toy"), _run_torch("wgan_gp_toy")
    ours, theirs = g["fixed_results"], t["fixed_results"]
    assert ours["penalty"] == pytest.approx(theirs["penalty"], rel=1e-5)
    assert ours["D_cost"] == pytest.approx(theirs["D_cost"], rel=1e-5)
    _close_list(ours["D_real_grads"], theirs["D_real_grads"], rtol=1e-5, atol=1e-6)
    # (the penalty's double backward through the ReLU critic, added to the real/fake grads)
    _close_list(ours["D_grads"], theirs["D_grads"], rtol=1e-4, atol=2e-6)
    _close_list(ours["D_stepped"], theirs["D_stepped"], rtol=1e-6, atol=1e-8)
    _close_list(ours["G_grads"], theirs["G_grads"], rtol=1e-4, atol=1e-6)
    _close_list(ours["D_grads_after_G"], ours["D_grads"], rtol=0, atol=0)
    for name, batch in theirs["other_batches"].items():
        assert np.array_equal(ours["other_batches"][name].numpy(), batch.numpy())


# ------------------------------------------------------------------- PINNs for Burgers


def test_pinn_burgers_lbfgs_lowers_the_physics_loss():
    g = _run("pinn_burgers")
    losses = g["closure_losses"]
    # max_eval (150) stopped LBFGS; its last strong-Wolfe line search may run past it by fewer
    # than max_ls (25) evaluations, as torch's (how far depends on the trajectory's last bits)
    assert g["MAX_ITER"] == 150 <= len(losses) == g["optimizer_state"]["func_evals"] < 175
    assert losses[-1][0] < 0.2 * losses[0][0]
    assert all(abs(total - (lu + lf)) < 1e-6 for total, lu, lf in losses)
    assert min(loss for loss, _, _ in losses) == losses[-1][0]  # (strong Wolfe: no rise kept)
    assert 0 < g["error_u"] < 0.6
    assert g["u_pred"].shape == (65 * 34, 1) and g["f_pred"].shape == (65 * 34, 1)
    assert np.isfinite(g["U_pred"]).all() and g["U_pred"].shape == (34, 65)
    # the synthetic reference: u(x, 0) = -sin(pi x), u(+-1, t) = 0
    exact = g["Exact"]
    _close(exact[0], -np.sin(np.pi * g["x"][:, 0]), rtol=0, atol=1e-12)
    assert np.abs(exact[:, [0, -1]]).max() < 1e-6


def test_pinn_burgers_residual_is_the_pde_by_finite_differences():
    g = _run("pinn_burgers")
    torch = g["torch"]
    dnn = copy.deepcopy(g["model"].dnn).double()
    fake = types.SimpleNamespace(nu=g["nu"], net_u=lambda x, t: dnn(torch.cat([x, t], dim=1)))
    pts = np.random.default_rng(1).uniform([-0.9, 0.1], [0.9, 0.9], (8, 2))
    x = torch.tensor(pts[:, :1], requires_grad=True)
    t = torch.tensor(pts[:, 1:], requires_grad=True)
    f = g["BurgersPINN"].net_f(fake, x, t).detach().numpy()

    def u(dx, dt):
        with torch.no_grad():
            return fake.net_u(x + dx, t + dt).numpy()

    h = 1e-4
    u_t = (u(0, h) - u(0, -h)) / (2 * h)
    u_x = (u(h, 0) - u(-h, 0)) / (2 * h)
    u_xx = (u(h, 0) - 2 * u(0, 0) + u(-h, 0)) / h**2
    _close(f, u_t + u(0, 0) * u_x - g["nu"] * u_xx, rtol=1e-5, atol=1e-7)


def test_pinn_burgers_matches_torch():
    g, t = _run("pinn_burgers"), _run_torch("pinn_burgers")
    ours, theirs = g["fixed_results"], t["fixed_results"]
    _close(ours["f_init"], theirs["f_init"], rtol=1e-4, atol=1e-6)
    _close(ours["loss_init"], theirs["loss_init"], rtol=1e-6, atol=0)
    assert ours["grads_init"].keys() == theirs["grads_init"].keys()
    for name, grad in theirs["grads_init"].items():
        _close(ours["grads_init"][name], grad, rtol=1e-4, atol=1e-7)
    # LBFGS's strong-Wolfe steps: the same trajectory until float32 rounding parts them
    # (a line search's far trial points, loss ~6, magnify the parting: after 8 closures on one
    # host, 6 on another whose BLAS rounds otherwise)
    _close(ours["closure_losses"][:6], theirs["closure_losses"][:6], rtol=1e-5, atol=0)
    assert 150 <= ours["lbfgs_counts"][0] < 175 and 150 <= theirs["lbfgs_counts"][0] < 175


def test_pinn_burgers_identification_learns_the_coefficients():
    g = _run("pinn_burgers_identification")
    clean, noisy = g["fixed_results"]["clean_losses"], g["fixed_results"]["noisy_losses"]
    # model.train(0): no Adam step; max_eval 200 stops LBFGS, its last line search may pass it
    lbfgs = len(clean)
    assert 200 <= lbfgs < 225 and [k for k, *_ in clean] == ["lbfgs"] * lbfgs
    lbfgs = len(noisy) - 20
    assert 200 <= lbfgs < 225 and [k for k, *_ in noisy] == ["adam"] * 20 + ["lbfgs"] * lbfgs
    assert all(b < a for (_, a, *_), (_, b, *_) in zip(noisy[:20], noisy[1:20]))
    for losses in (clean, noisy):
        assert losses[-1][1] < 0.05 * losses[0][1]
        # lambda_1 (the u u_x coefficient, 1 in truth) learned from 0 towards 1
        assert losses[0][2] <= 0.0 and 0.5 < losses[-1][2] < 1.5
    # the registered coefficients are the network's parameters, first (own before children)
    assert g["fixed_results"]["clean_params"][:3] == ["lambda_1", "lambda_2",
                                                      "layers.layer_0.weight"]
    model = g["clean_model"]
    assert model.dnn.lambda_1 is model.lambda_1 and model.lambda_1.is_leaf
    assert model.lambda_1.item() == pytest.approx(1 - g["error_lambda_1"][0] / 100, abs=1e-6)
    assert g["error_u"] < 0.3 and g["noisy_error_u"] < 0.3


def test_pinn_burgers_identification_matches_torch():
    g, t = _run("pinn_burgers_identification"), _run_torch("pinn_burgers_identification")
    ours, theirs = g["fixed_results"], t["fixed_results"]
    assert ours["clean_params"] == theirs["clean_params"]
    _close(ours["f_init"], theirs["f_init"], rtol=1e-4, atol=1e-6)
    # (loss, lambda_1, log lambda_2) per step: Adam's 20 steps and LBFGS's first evaluations
    # the same until float32 rounding parts the trajectories
    def rows(losses, n):
        return [r[1:] for r in losses[:n]]

    _close(rows(ours["clean_losses"], 8), rows(theirs["clean_losses"], 8), rtol=1e-5, atol=1e-8)
    _close(rows(ours["noisy_losses"], 30), rows(theirs["noisy_losses"], 30), rtol=1e-5,
           atol=1e-8)
