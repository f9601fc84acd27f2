"""Scripts written for these tests in the way common PyTorch code of two kinds is written (set
U34: proximal policy optimisation on vectorised tensor environments as CleanRL and Spinning Up
write it, and Hamiltonian/Lagrangian neural networks as the HNN paper's code and LNN ports
write them), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that PPO raised the return of a continuous and a discrete agent
(with annealed learning rates, a value function that explains the returns and a KL early
stop), that the Normal/Independent/Categorical log-probabilities, GAE and the two surrogate
forms agree with their definitions; that the HNN learned the mass-spring and pendulum fields
and keeps the energy better than a baseline MLP, that the LNN learned the accelerations of two
coupled oscillators by double backward, ``torch.func`` and ``torch.autograd.functional`` alike,
that gradcheck passes through the double-backward fields; and, where torch is installed, that
the fixed-weight parts and the first training losses equal the same script's with
``import torch``.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

# ------------------------------------------------------------------------------------ PPO


def test_ppo_continuous_agent_improves_the_return():
    g = _run("ppo_continuous")
    h = g["history"]
    returns = h["episodic_returns"]
    assert len(returns) == 20 and all(r is not None for r in returns)
    # minus the distance to the origin summed over 32 steps: from about -35 to under -10
    assert np.mean(returns[-3:]) > 0.4 * np.mean(returns[:3])
    assert g["after"] > 0.4 * g["before"]
    # the time-aware critic explains most of the returns once trained
    assert np.mean(h["explained_variance"][-5:]) > 0.6
    assert h["explained_variance"][0] < 0.3
    # LR annealing: frac * lr, from 3e-3 down to 3e-3 / 20
    assert h["lrs"][0] == pytest.approx(3e-3) and h["lrs"][-1] == pytest.approx(3e-3 / 20)
    assert all(a > b for a, b in zip(h["lrs"], h["lrs"][1:]))
    assert len(h["losses"]) == 20 * 4 * 4 and h["epochs_run"] == [4] * 20
    assert all(0 <= kl < 0.1 for kl in h["approx_kls"])
    assert all(0 <= cf <= 1 for cf in h["clipfracs"])
    # the learned log-std moved from zero
    assert float(np.abs(g["log_std_after"].numpy()).max()) > 0.01
    # rewards were normalised by the running std of the discounted return
    rms = g["env"].return_rms
    assert rms.count == pytest.approx(20 * 32 * 8 + 1e-4)
    assert float(rms.var) > 1.0


def test_ppo_discrete_agent_improves_and_stops_early():
    g = _run("ppo_continuous")
    h = g["dhistory"]
    returns = h["episodic_returns"]
    assert np.mean(returns[-3:]) > 0.6 * np.mean(returns[:3])
    assert g["dafter"] > 0.6 * g["dbefore"]
    assert np.mean(h["explained_variance"][-5:]) > 0.6
    # target_kl = 0.01: an update that stopped early had passed it
    assert min(h["epochs_run"]) < 4
    for epochs, kl in zip(h["epochs_run"], h["approx_kls"]):
        if epochs < 4:
            assert kl > 0.01
    assert len(h["losses"]) == 4 * sum(h["epochs_run"])


def test_ppo_distributions_gae_and_losses_agree_with_definitions():
    g = _run("ppo_continuous")
    r = g["fixed_results"]
    # Independent(Normal, 1) is the Normal with log-probs and entropies summed over actions
    assert g["independent_agrees"] == {"log_prob": 0.0, "entropy": 0.0}
    assert g["independent_shapes"] == ((12,), (2,))
    _close(r["kl_independent"], r["kl_normal"], rtol=1e-6)
    assert g["by_hand_difference"] < 1e-5 and g["log_softmax_difference"] < 1e-6
    # the Gaussian's entropy: sum of 0.5 + 0.5 log(2 pi) + log_std
    entropy = 2 * (0.5 + 0.5 * math.log(2 * math.pi)) + (-0.3 + 0.2)
    _close(r["normal_entropy"], np.full(12, entropy), rtol=1e-6)
    # GAE's reversed loop equals the truncated discounted sum of TD errors
    assert g["gae_reference_difference"] < 1e-5
    _close(r["gae_returns"], (g["gae_adv"] + g["gae_values"]).numpy(), rtol=0, atol=0)
    # CleanRL's max of negatives is Spinning Up's min (without advantage normalisation)
    assert g["surrogate_forms_difference"] < 1e-6
    stats = r["ppo_stats"]
    assert stats["approx_kl"] >= 0 and 0 <= stats["clipfrac"] <= 1
    # orthogonal_ with gain sqrt(2): W W^T = 2 I
    _close(r["orthogonal_gram"], 2 * np.eye(64), rtol=0, atol=1e-5)
    # clip_grad_norm_ returns the norm before clipping and leaves max_norm
    assert r["grad_norm"] > 0.5
    assert r["clipped_grad_norm"] == pytest.approx(0.5, rel=1e-5)
    # masked actions: never sampled, zero probability, finite entropy and gradient
    assert g["masked_actions_taken"]
    assert np.isfinite(r["masked_entropy"].numpy()).all()
    grad = r["masked_entropy_grad"].numpy()
    mask = g["action_mask"].numpy()
    assert np.isfinite(grad).all() and (grad[~mask] == 0).all()
    assert (r["masked_entropy"].numpy() < r["categorical_entropy"].numpy() + 1e-6).all()
    _close(r["categorical_probs"].sum(-1), np.ones(12), rtol=1e-6)


def test_ppo_fixed_results_match_torch():
    g, t = _run("ppo_continuous"), _run_torch("ppo_continuous")
    _close_nested(g["fixed_results"], t["fixed_results"], rtol=1e-5, atol=1e-6)
    assert g["masked_actions_taken"] == t["masked_actions_taken"]


def test_ppo_first_losses_match_torch():
    g, t = _run("ppo_continuous"), _run_torch("ppo_continuous")
    for key in ("history", "dhistory"):
        ours, theirs = g[key], t[key]
        _close(ours["losses"][:16], theirs["losses"][:16], rtol=1e-5, atol=0)
        _close(ours["episodic_returns"][:2], theirs["episodic_returns"][:2], rtol=1e-5)
        _close(ours["mean_rewards"][:2], theirs["mean_rewards"][:2], rtol=1e-5)
        assert ours["lrs"] == pytest.approx(theirs["lrs"], rel=1e-12)
    _close(g["before"], t["before"], rtol=1e-5)
    _close(g["dbefore"], t["dbefore"], rtol=1e-5)


# ------------------------------------------------------------------------- HNN, LNN


def test_hnn_learns_the_fields_and_keeps_the_energy():
    g = _run("hamiltonian_nn")
    for system, record in g["results"].items():
        hnn, baseline = record["hnn"], record["baseline"]
        assert hnn["losses"][-1] < 0.01 * hnn["losses"][0], system
        assert baseline["losses"][-1] < 0.01 * baseline["losses"][0], system
        assert hnn["field_error"] < 0.005, system  # relative squared error on test states
        # over 30 time units the HNN's trajectory keeps the true energy, the baseline's less
        assert hnn["energy_drift"] < 0.05, system
        assert hnn["energy_drift"] < 0.5 * baseline["energy_drift"], system
        # RK4 on the learned field conserves the learned H up to its own step error
        assert hnn["learned_H_drift"] < 1e-3 * hnn["learned_H_range"], system
        assert hnn["leapfrog_energy_drift"] < 0.2, system
        # on the true field: leapfrog (symplectic) keeps the energy, explicit Euler does not
        assert record["true_leapfrog_drift"] < 0.01 and record["true_euler_drift"] > 1.0
    # the mass-spring's learned flow stays on the true one's circle
    ms = g["results"]["mass_spring"]
    _close(np.linalg.norm(ms["hnn"]["final_state"].numpy()), 1.0, rtol=0.05)


def test_hnn_field_definitions_and_gradcheck():
    g = _run("hamiltonian_nn")
    r = g["fixed_results"]
    J = r["permutation"].numpy()
    _close(J @ J, -np.eye(4), rtol=0, atol=0)
    _close(J.T, -J, rtol=0, atol=0)
    # the double-backward field is (dH/dp, -dH/dq): central differences agree in float64
    assert g["field_fd_difference"] < 1e-8
    assert abs(g["divergence"]) < 1e-12  # a Hamiltonian flow preserves volume
    assert g["true_acc_difference"] < 1e-6
    assert tuple(r["rk4_trajectory"].shape) == (6, 2, 2)
    _close(r["rk4_trajectory"][0], g["points"][:2], rtol=0, atol=0)
    _close(r["leapfrog_trajectory"], r["rk4_trajectory"], rtol=0, atol=0.05)
    assert g["gradcheck_results"] == {
        "field_in_state": True, "field_gradgrad": True, "field_in_weights": True,
        "lnn_acceleration": True, "lnn_acceleration_func": True}


def test_lnn_accelerations_agree_and_learn():
    g = _run("hamiltonian_nn")
    r = g["fixed_results"]
    # double backward, vmap(hessian)/jacrev + solve, pinv, autograd.functional
    for name in ("lnn_acc_func", "lnn_acc_pinv", "lnn_acc_functional"):
        _close(r[name], r["lnn_acc"], rtol=1e-4, atol=1e-5)
    hessians = r["lnn_hessian"].numpy()
    assert hessians.shape == (5, 4, 4)
    _close(hessians, hessians.transpose(0, 2, 1), rtol=1e-5, atol=1e-6)
    losses = g["lnn_losses"]
    assert len(losses) == 200
    assert np.mean(losses[-10:]) < 0.02 * np.mean(losses[:10])
    assert g["lnn_test_error"] < 0.02
    assert g["lnn_func_gap"] < 1e-4
    # the learned energy qdot dL/dqdot - L is a constant of the learned motion
    assert g["lnn_learned_energy_drift"] < 1e-4
    assert g["lnn_true_energy_drift"] < 0.2


def test_hnn_fixed_results_match_torch():
    g, t = _run("hamiltonian_nn"), _run_torch("hamiltonian_nn")
    _close_nested(g["fixed_results"], t["fixed_results"], rtol=1e-5, atol=1e-6)
    assert g["gradcheck_results"] == t["gradcheck_results"]


def test_hnn_first_losses_match_torch():
    g, t = _run("hamiltonian_nn"), _run_torch("hamiltonian_nn")
    for system in ("mass_spring", "pendulum"):
        for kind in ("hnn", "baseline"):
            ours = g["results"][system][kind]["losses"][:10]
            theirs = t["results"][system][kind]["losses"][:10]
            _close(ours, theirs, rtol=1e-5, atol=0)
    _close(g["lnn_losses"][:10], t["lnn_losses"][:10], rtol=1e-5, atol=0)
