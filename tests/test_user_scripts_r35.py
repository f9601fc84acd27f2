"""Scripts written for these tests in the way common PyTorch code of one kind is written (set
R35: geometric deep learning for molecules by hand, without torch_geometric: an E(n)-equivariant
GNN as the EGNN code writes it and SchNet continuous-filter convolutions as SchNet/SchNetPack
code writes them, trained on Lennard-Jones molecules), run on jitgrad.

The script in tests/scripts/ runs as ``__main__``; these tests read what it computed from its
globals and assert that the Lennard-Jones forces by autograd equal the analytic ones, that the
batching and the segment sums/means agree however they are written, that every EGNN variant is
equivariant to rotations, reflections and translations (and an MLP is not), that the EGNN learnt
a relaxation step and SchNet energies and forces (a double backward), that SchNet's energies are
invariant and its forces equivariant and sum to zero, that the edge-list, dense ``cdist`` and
three readouts agree, that gradcheck/gradgradcheck pass; and, where torch is installed, that the
fixed-weight parts and the first training losses equal the same script's with ``import torch``.
"""

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested


def _close_scaled(ours, theirs, rtol=1e-5):
    """Close to rtol of each entry or of the tensor's largest entry."""
    scale = float(np.abs(np.asarray(theirs, dtype=np.float64)).max())
    _close(ours, theirs, rtol=rtol, atol=rtol * scale)


def _close_nested_scaled(ours, theirs, rtol=1e-5):
    if isinstance(theirs, dict):
        assert ours.keys() == theirs.keys()
        for key in theirs:
            _close_nested_scaled(ours[key], theirs[key], rtol)
    else:
        _close_scaled(ours, theirs, rtol)


# ------------------------------------------------------------------------- data, batching


def test_lennard_jones_data_and_batching():
    g = _run("egnn_schnet")
    # autograd forces equal the analytic LJ forces, sum to zero per molecule, and the batched
    # energy equals the per-molecule one
    assert g["lj_force_error"] < 1e-4 and g["lj_net_force"] < 1e-5
    assert g["lj_batched_error"] < 1e-5
    batch = g["train_batch"]
    counts = batch["counts"].tolist()
    assert len(counts) == 16 and all(3 <= c <= 6 for c in counts)
    assert batch["batch"].tolist() == [i for i, c in enumerate(counts) for _ in range(c)]
    assert batch["ptr"].tolist() == list(np.cumsum([0] + counts))
    assert tuple(batch["forces"].shape) == (sum(counts), 3)
    assert (batch["energy"].numpy() < 0).all()  # bound clusters near the LJ minimum
    # meshgrid and combinations build the same fully connected edges
    assert g["edge_sets_agree"]
    seg = g["segment_results"]
    _close(seg["scatter_add"], seg["index_add"], rtol=1e-6, atol=1e-6)
    for name in ("scatter_reduce_mean", "mean_bincount"):
        _close(seg[name], seg["mean"], rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------------------------------ EGNN


def test_egnn_is_e3_equivariant():
    g = _run("egnn_schnet")
    assert g["orthogonality_error"] < 1e-12
    assert g["rotation_det"] == pytest.approx(1.0, abs=1e-12)
    assert g["reflection_det"] == pytest.approx(-1.0, abs=1e-12)
    assert g["equivariance"].keys() == {"plain", "attention_normalize", "tanh_sum"}
    for name, errors in g["equivariance"].items():
        assert errors["moved"] > 1e-2, name  # the layers moved the coordinates
        for kind in ("h_rotation", "x_rotation", "h_reflection", "x_reflection"):
            assert errors[kind] < 1e-11 * max(1.0, errors["moved"]), (name, kind)
    # an MLP on raw coordinates is not equivariant
    assert g["baseline_error"] > 0.1
    # the trained float32 model stays equivariant to float32 rounding
    assert g["egnn_trained_equivariance"] < 1e-5


def test_egnn_learns_a_relaxation_step():
    g = _run("egnn_schnet")
    losses = g["egnn_losses"]
    # normalised by the identity map's loss; the coordinate MLP starts near zero (gain 1e-3)
    assert len(losses) == 100 and losses[0] == pytest.approx(1.0, abs=0.1)
    assert np.mean(losses[-5:]) < 0.6 * losses[0]
    assert g["egnn_val_loss"] < 0.6


# ---------------------------------------------------------------------------------- SchNet


def test_schnet_building_blocks_and_graph():
    g = _run("egnn_schnet")
    r = g["fixed_results"]
    rbf = r["rbf"].numpy()
    assert rbf.shape == (15, 8) and rbf.max() <= 1.0 and rbf[0, 0] == pytest.approx(1.0)
    cutoff = r["cosine_cutoff"].numpy()
    assert cutoff[0] == pytest.approx(1.0) and (cutoff[-2:] == 0).all()  # d = 3.25, 3.5
    assert (np.diff(cutoff) <= 1e-7).all()
    assert g["ssp_at_zero"] == 0.0
    _close(r["ssp"], np.logaddexp(0, np.linspace(-4, 4, 9)) - np.log(2), rtol=1e-6, atol=1e-7)
    assert g["radius_graph_ok"] and 0 < g["radius_edges"] < g["edges_mesh"].shape[1]


def test_schnet_energies_and_forces_are_consistent():
    g = _run("egnn_schnet")
    # the dense cdist model and the three readouts agree with the edge-list model
    assert g["dense_energy_error"] < 1e-5 and g["dense_force_error"] < 1e-6
    readouts = g["readouts"]
    for kind in ("scatter_reduce", "segment_reduce"):
        _close(readouts[kind][0], readouts["index_add"][0], rtol=1e-6, atol=1e-6)
        _close(readouts[kind][1], readouts["index_add"][1], rtol=1e-6, atol=1e-8)
    # E(QX + t) = E(X), F(QX + t) = Q F(X), forces of a molecule sum to zero
    assert g["schnet_energy_invariance"] < 1e-5
    assert g["schnet_force_equivariance"] < 1e-6
    assert g["schnet_net_force"] < 1e-7
    assert g["gradcheck_energy"] and g["gradgradcheck_energy"] and g["gradcheck_rbf"]
    # every parameter got a gradient from the force loss's double backward
    grads = g["fixed_results"]["schnet"]["grads"]
    assert grads.keys() == {n for n, _ in g["schnet"].named_parameters()}
    assert all(np.abs(v.numpy()).max() > 0 for v in grads.values())


def test_schnet_learns_energies_and_forces():
    g = _run("egnn_schnet")
    losses, force_losses = g["losses"], g["force_losses"]
    assert len(losses) == 40
    assert np.mean(losses[-5:]) < 0.05 * losses[0]
    assert np.mean(force_losses[-5:]) < 0.05 * force_losses[0]
    assert g["energy_losses"][-1] < g["energy_losses"][0]
    assert g["val_force_mse"] < 0.2 * g["val_force_baseline"]
    assert g["final_lr"] in (2e-2, 1e-2, 5e-3)


# ------------------------------------------------------------------------------ vs torch


def test_egnn_schnet_fixed_results_match_torch():
    g, t = _run("egnn_schnet"), _run_torch("egnn_schnet")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    # float64 EGNN on float64 random coordinates
    _close_nested(ours.pop("egnn"), theirs.pop("egnn"), rtol=1e-10, atol=1e-12)
    # the positions are centred by mean(dim=0) of 5-6 rows, which torch sums with four
    # accumulators and jitgrad in order (1 ulp apart); LJ forces are sums of pair forces up to
    # ~10x larger; SchNet forces and double-backward gradients are sums over edges of terms
    # larger than the result: compare to the tensors' scale
    for key in ("lj_forces", "schnet", "schnet_dense", "egnn_float32"):
        _close_nested_scaled(ours.pop(key), theirs.pop(key), rtol=1e-5)
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)
    assert g["radius_edges"] == t["radius_edges"]
    assert g["gradcheck_energy"] == t["gradcheck_energy"]


def test_egnn_schnet_first_losses_match_torch():
    g, t = _run("egnn_schnet"), _run_torch("egnn_schnet")
    _close(g["egnn_losses"][:10], t["egnn_losses"][:10], rtol=1e-5, atol=0)
    _close(g["losses"][:10], t["losses"][:10], rtol=1e-5, atol=0)
    _close(g["force_losses"][:10], t["force_losses"][:10], rtol=1e-5, atol=0)
    _close(g["energy_losses"][:10], t["energy_losses"][:10], rtol=1e-5, atol=0)
    assert g["final_lr"] == t["final_lr"]
