"""A script written for these tests in the way differentiable-physics and curve-fitting code
writes torch code (set T35: a bouncing projectile and a mass-spring chain unrolled for 50
semi-implicit Euler steps and optimised through the rollout, LBFGS curve fitting and system
identification, ``torch.func`` Jacobians, Hessians, a Newton solve and ``vmap``), run on
jitgrad.

The script in tests/scripts/ runs as ``__main__``; these tests read what it computed from its
globals and assert that the ball bounces and the shooting hits its target (the clamp holding
the launch speed when the target is out of reach), that checkpointed rollouts give the plain
rollout's values and gradients, that Adam identifies the chain's spring constants and LBFGS
the oscillation's and the damped spring's parameters (with and without the strong-Wolfe line
search, stopping on ``tolerance_change`` and ``max_iter``), that ``jacrev`` equals ``jacfwd``,
the stiffness matrix is symmetric, Newton converges quadratically and ``vmap`` equals a loop;
and, where torch is installed, that the fixed-data results, every LBFGS closure evaluation and
the optimizer's counters equal the same script's with ``import torch``.
"""

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

NAME = "diff_physics_lbfgs"


# ------------------------------------------------------------------- projectile, shooting


def test_ball_bounces_and_checkpointed_rollouts_agree():
    g = _run(NAME)
    r = g["fixed_results"]
    path = r["ball_path"].numpy()
    assert path.shape == (51, 2) and g["bounced"]
    assert path[:, 1].min() >= 0  # the contact reflects every penetration
    assert np.all(np.diff(path[:, 0]) > 0)  # friction slows the ball, never turns it
    # the gradient through the contacts and its Hessian-vector product are finite
    assert np.isfinite(r["ball_grad"].numpy()).all() and np.isfinite(r["ball_hvp"].numpy()).all()
    # checkpointing recomputes the same ops: the same end state and gradients, bit for bit
    assert g["checkpoint_end_difference"] == 0
    assert g["checkpoint_grad_difference"] == 0
    assert g["restitution_grad_difference"] == 0
    assert g["chain_checkpoint_grad_difference"] < 1e-12
    assert g["gradcheck_segment"] is True


def test_shooting_hits_the_target_and_the_clamp_holds_the_speed():
    g = _run(NAME)
    losses = g["shoot_losses"]
    assert len(losses) == 15 and losses[-1] < 1e-3 * losses[0]
    assert g["shot_miss"] < 0.02
    speed = float(np.linalg.norm(g["fixed_results"]["shoot_v0"].numpy()))
    assert speed < g["MAX_SPEED"]
    # out of reach: each step ends on the speed limit
    assert g["far_speed"] == pytest.approx(6.0, rel=1e-6)


def test_chain_spring_constants_identified_by_adam():
    g = _run(NAME)
    losses = g["chain_losses"]
    assert len(losses) == 12 and losses[-1] < 1e-3 * losses[0]
    k = np.exp(g["log_k"].detach().numpy())
    _close(k, g["k_true"], rtol=0.03, atol=0)


# ------------------------------------------------------------------------------ LBFGS


def test_lbfgs_fits_the_damped_oscillation():
    g = _run(NAME)
    runs, counts = g["lbfgs_runs"], g["lbfgs_counts"]
    truth = [g["TRUE"][key] for key in ("amp", "decay", "omega", "phase")]
    for name in ("wolfe64", "plain64", "wolfe32", "loose64"):
        theta = runs[name]["theta"].numpy()
        _close(theta, truth, rtol=0, atol=0.03)
        # the noise floor: 0.02 ** 2 on average
        assert runs[name]["evals"][-1] < 4.5e-4, name
        # func_evals counts the closure's calls, n_iter the iterations over all steps
        assert counts[name][0] == counts[name][2]
    # both searches find the same minimum
    _close(runs["plain64"]["theta"], runs["wolfe64"]["theta"], rtol=1e-6, atol=1e-8)
    # strong Wolfe needs far fewer evaluations than the fixed step of 0.3
    assert counts["wolfe64"][0] < 0.5 * counts["plain64"][0]
    # a loose tolerance_change stops earlier, short of the minimum
    assert counts["loose64"][0] < counts["wolfe64"][0]
    assert runs["loose64"]["evals"][-1] > runs["wolfe64"]["evals"][-1]
    # max_iter=1: one iteration per step; step() returns the loss it started from, the
    # first closure value of the step
    one = runs["one_iter64"]
    assert counts["one_iter64"][1] == 4
    assert one["returned"][:2] == [one["evals"][0], one["evals"][2]]
    assert all(b <= a for a, b in zip(one["returned"], one["returned"][1:]))


def test_lbfgs_system_identification_of_the_damped_spring():
    g = _run(NAME)
    _close(g["spring_params"].detach(), g["spring_true"], rtol=0.01)
    losses = g["sysid_losses"]
    assert losses[-1] < 1e-3 * losses[0]
    assert losses[-1] < 2 * 50 * 0.005 ** 2  # about the noise's sum of squares
    assert max(losses) > 1e3 * losses[0]  # the line search tried (and left) a blown-up k


# ------------------------------------------------------------------------- torch.func


def test_func_jacobians_hessian_newton_and_vmap():
    g = _run(NAME)
    r = g["fixed_results"]
    assert g["jacobian_difference"] < 1e-14
    assert tuple(r["step_jacobian"].shape) == (12, 12)
    assert tuple(r["step_jacobian_k"].shape) == (3, 2, 3)
    # mass i moves only with springs i and i + 1 in one step
    jac_k = r["step_jacobian_k"].numpy()
    assert np.all(jac_k[0, :, 2] == 0) and np.all(jac_k[2, :, 0] == 0)
    assert g["hessian_asymmetry"] == 0 and tuple(r["stiffness"].shape) == (6, 6)
    # Newton on the implicit step: quadratic convergence down to rounding
    for norms in g["newton_norms"]:
        assert norms[1] < 1e-2 * norms[0] and norms[2] < 1e-4 * norms[1]
        assert norms[3] < 1e-14
    assert g["final_residual"] < 1e-14
    assert g["vmap_difference"] == 0 and g["vmap_jacobian_difference"] == 0
    assert g["chain_vmap_difference"] == 0
    assert tuple(r["vmap_landing_jacobian"].shape) == (6, 2, 2)
    assert tuple(r["chain_vmap_end"].shape) == (3, 3, 2)


# ------------------------------------------------------------------------- vs torch


def test_fixed_results_match_torch():
    g, t = _run(NAME), _run_torch(NAME)
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    # float32 LBFGS: NumPy's float32 exp and cos (jitgrad's) are up to ~2 ulp from torch's,
    # which moves the second closure value by ~1e-6 and, near the minimum (losses ~3e-4 that
    # differ in their last digits), the line search's steps; every value stays within 1e-4
    _close_nested(ours.pop("lbfgs_wolfe32"), theirs.pop("lbfgs_wolfe32"), rtol=1e-4, atol=1e-6)
    float32 = ("ball_path", "ball_end_velocity", "ball_loss", "ball_grad", "ball_hvp",
               "ball_checkpoint_grad", "restitution_grad", "shoot_v0", "shoot_losses",
               "far_v0", "vmap_landing", "vmap_landing_jacobian")
    _close_nested({k: ours.pop(k) for k in float32}, {k: theirs.pop(k) for k in float32},
                  rtol=1e-5, atol=1e-6)
    # the rest is float64
    _close_nested(ours, theirs, rtol=1e-10, atol=1e-13)


def test_lbfgs_evaluations_and_counters_match_torch():
    g, t = _run(NAME), _run_torch(NAME)
    # (the float64 runs' counts; float32's line search may take one trial more or less where
    # the host's BLAS rounds otherwise)
    ours_counts, theirs_counts = dict(g["lbfgs_counts"]), dict(t["lbfgs_counts"])
    assert ours_counts.pop("wolfe32")[0] == theirs_counts.pop("wolfe32")[0]
    assert ours_counts == theirs_counts
    for name in ("wolfe64", "plain64", "loose64", "one_iter64"):
        ours, theirs = g["lbfgs_runs"][name], t["lbfgs_runs"][name]
        _close(ours["evals"], theirs["evals"], rtol=1e-10, atol=0)
        _close(ours["returned"], theirs["returned"], rtol=1e-10, atol=0)
        _close(ours["iterates"], theirs["iterates"], rtol=1e-10, atol=1e-14)
    _close(g["sysid_losses"], t["sysid_losses"], rtol=1e-10, atol=0)
    assert len(g["sysid_losses"]) == len(t["sysid_losses"])
    _close(g["newton_norms"], t["newton_norms"], rtol=1e-6, atol=1e-15)
