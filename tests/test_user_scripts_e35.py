"""Scripts written for these tests in the way public PyTorch code of three small training
recipes is written (set E35): an energy-based model sampled by SGLD from a replay buffer beside
denoising and sliced score matching on 2-D toy data; Poincaré embeddings of a small WordNet-like
hierarchy trained by a Riemannian SGD optimiser on sparse and dense ``nn.Embedding``
gradients; BYOL and SimSiam on tiny synthetic images with an EMA target and LARS; run on
jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that the SGLD chains, the score-matching objectives (the exact one
against many slices) and the energy's second and third derivatives are right, that the EBM's
density and the score nets fit the data; that the Poincaré distance's hand-written backward
equals autograd through ``acosh``, that sparse and dense gradients train alike, and that the
embedding reconstructs the hierarchy with depth growing outward; that the BYOL target is a
frozen copy, the EMA forms agree, the stop-gradient matters and neither method collapses;
and, where torch is installed, that the fixed-weight parts and the first training losses equal
the same script's with ``import torch``.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested


def _close_scaled_nested(ours, theirs, rtol=1e-5):
    """Key by key, each tensor close to rtol of its entries or of its largest entry."""
    if isinstance(theirs, dict):
        assert ours.keys() == theirs.keys()
        for key in theirs:
            _close_scaled_nested(ours[key], theirs[key], rtol)
        return
    theirs = np.asarray(theirs, dtype=np.float64)
    scale = float(np.abs(theirs).max()) if theirs.size else 0.0
    _close(ours, theirs, rtol=rtol, atol=rtol * scale)


# ------------------------------------------------------------ EBM, SGLD, score matching


def test_ebm_derivatives_and_sampling():
    g = _run("ebm_score_matching")
    r = g["fixed_results"]
    assert tuple(g["ring"].shape) == (512, 2) and tuple(g["moons"].shape) == (512, 2)
    radius = g["ring"].norm(dim=1).numpy()
    assert 1.6 < radius.min() and radius.max() < 2.4
    assert g["gradchecks"] == {"grad": True, "gradgrad": True, "score_grad": True}
    # the last bias moves E, not dE/dx: unused by the gradient penalty, zero when materialised
    assert g["unused_grad_names"] == ["net.4.bias"]
    assert float(np.abs(r["ssm_energy_grads"]["net.4.bias"].numpy()).max()) == 0.0
    # sampling touched no parameter's .grad and gave the parameters back their requires_grad
    assert g["frozen_restored"] and g["params_untouched_by_sampling"]
    for chain in ("sgld_chain", "sgld_in_place_chain"):
        values = r[chain].numpy()
        assert values.shape == (8, 2) and np.abs(values).max() <= 3.0
        assert not r[chain].requires_grad
    # the exact score-matching objective (Jacobian trace) equals the sliced one over many
    # unit directions
    assert g["esm_gap"] < 5e-3
    # the SSM loss is its two parts' sum; the variance-reduced form differs
    ssm, ssm_1, ssm_2 = r["ssm"]
    assert ssm == pytest.approx(ssm_1 + ssm_2, rel=1e-5, abs=1e-7)
    assert r["ssm_vr"] != pytest.approx(ssm)


def test_ebm_learns_the_ring():
    g = _run("ebm_score_matching")
    nll = g["nll_curve"]
    assert len(nll) == 7 and len(g["ebm_losses"]) == 300
    assert nll[-1] < nll[0] - 0.4
    assert g["ring_energy_gap"] > 0.5  # low energy on the ring, high off it
    assert g["chain_on_ring"] > 0.8  # long SGLD chains end on the ring
    buffer = g["buffer"].buffer.numpy()
    assert buffer.shape == (2000, 2) and np.abs(buffer).max() <= 3.0


def test_score_matching_learns():
    g = _run("ebm_score_matching")
    assert g["dsm_eval_after"] < 0.9 * g["dsm_eval_before"]
    # annealed Langevin samples lie on the moons, much closer than uniform points
    assert g["langevin_fit"] < 0.5 * g["uniform_fit"]
    ssm_losses = g["ssm_losses"]
    assert np.mean(ssm_losses[-20:]) < np.mean(ssm_losses[:20]) - 0.1
    assert g["score_points_inward"]


def test_ebm_fixed_results_match_torch():
    g, t = _run("ebm_score_matching"), _run_torch("ebm_score_matching")
    _close_scaled_nested(g["fixed_results"], t["fixed_results"], rtol=1e-5)
    assert g["unused_grad_names"] == t["unused_grad_names"]
    assert g["esm_gap"] == pytest.approx(t["esm_gap"], rel=1e-3)


def test_ebm_first_losses_match_torch():
    g, t = _run("ebm_score_matching"), _run_torch("ebm_score_matching")
    for key in ("ebm_losses", "dsm_losses", "ssm_losses"):
        _close(g[key][:10], t[key][:10], rtol=1e-5, atol=1e-6)
    _close(g["nll_curve"][:2], t["nll_curve"][:2], rtol=1e-5)


# ----------------------------------------------------------------------------- Poincaré


def test_poincare_hierarchy_and_distance():
    g = _run("poincare_embeddings")
    r = g["fixed_results"]
    assert g["n_nodes"] == 23 and g["n_pairs"] == 48  # 4 * 1 + 10 * 2 + 8 * 3 closure pairs
    assert r["closure_rows"].tolist()[:5] == [0, 1, 1, 1, 1]
    # the hand-written backward equals autograd through acosh (away from u == v)
    assert g["distance_grad_gap"] < 1e-12
    keep = g["keep"].numpy()  # (acosh's clamp to 1 + eps leaves sqrt(2 eps) at u == v)
    _close(r["distance"][keep], r["distance_acosh"][keep], rtol=1e-12, atol=1e-12)
    assert float(r["distance_acosh"][3]) == pytest.approx(math.acosh(1 + 1e-5), rel=1e-9)
    assert g["gradcheck_distance"]
    # at u == v the distance is zero and the Function's clamp keeps its gradient finite (0)
    assert float(r["distance"][3]) == pytest.approx(0.0, abs=1e-7)
    for side in ("u", "v"):
        grads = r["distance_grads"][side].numpy()
        assert np.isfinite(grads).all() and np.abs(grads[3]).max() < 1e-9
    assert g["symmetric_gap"] == 0.0 and g["triangle_holds"]
    # the exponential map moves lambda_x |v| along the geodesic
    assert g["expmap_origin_gap"] < 1e-12 and g["expmap_point_gap"] < 1e-12


def test_poincare_riemannian_sgd_step():
    g = _run("poincare_embeddings")
    torch = g["torch"]
    sparse, dense = g["step_results"][True], g["step_results"][False]
    assert sparse["layout"] == str(torch.sparse_coo) and dense["layout"] == str(torch.strided)
    assert sparse["grad_rows"].tolist() == g["inputs"].unique().tolist()
    _close(sparse["grad"], dense["grad"], rtol=1e-6, atol=1e-7)
    assert sparse["state_step"] == dense["state_step"] == 1
    assert g["sparse_dense_weight_gap"] < 1e-6
    assert g["expmap_untouched_rows_same"]
    norms = g["fixed_results"]["projected_norms"].numpy()
    _close(norms[:2], g["edge"][:2].norm(dim=1), rtol=1e-6)  # inside: unchanged
    assert norms.max() <= 1 - 1e-5 + 1e-7


def test_poincare_embeds_the_tree():
    g = _run("poincare_embeddings")
    losses = g["losses"]
    assert len(losses) == 200 and losses[0] == pytest.approx(math.log(11), rel=0.01)
    assert losses[-1] < 0.2 * losses[0]
    _close(g["dense_losses"][:50], losses[:50], rtol=1e-4)
    assert g["sparse_dense_train_gap"] < 1e-3
    assert g["mean_rank"] < 1.1 and g["mean_ap"] > 0.95
    by_depth = g["mean_norm_by_depth"]
    assert by_depth == sorted(by_depth) and by_depth[0] < 0.2 < 0.8 < by_depth[1]
    assert g["root_is_closest"] and g["max_norm"] < 1.0
    closure, index = g["closure"], g["index"]
    for name, nearest in g["nearest"].items():
        assert closure[index[name], index[nearest]], (name, nearest)  # a hypernym
    assert g["final_steps"] == g["restored_steps"] == 200 * 3
    assert g["restored_group"]["lr"] == 0.5 and g["restored_group"]["retraction"] == "euclidean"


def test_poincare_fixed_results_match_torch():
    g, t = _run("poincare_embeddings"), _run_torch("poincare_embeddings")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    _close_nested(ours.pop("step_grad"), theirs.pop("step_grad"), rtol=1e-5, atol=1e-7)
    _close_nested(ours, theirs, rtol=1e-6, atol=1e-7)
    assert g["step_results"][True]["grad_rows"].tolist() == \
        t["step_results"][True]["grad_rows"].tolist()


def test_poincare_first_losses_match_torch():
    g, t = _run("poincare_embeddings"), _run_torch("poincare_embeddings")
    _close(g["losses"][:20], t["losses"][:20], rtol=1e-6)
    _close(g["dense_losses"][:20], t["dense_losses"][:20], rtol=1e-6)
    assert g["mean_rank"] == t["mean_rank"] and g["nearest"] == t["nearest"]


# ------------------------------------------------------------------------ BYOL, SimSiam


def test_byol_target_ema_and_lars():
    g = _run("byol_simsiam")
    r = g["fixed_results"]
    assert tuple(r["augmented"].shape) == (8, 1, 12, 12) and g["crop_keeps_shape"]
    assert g["crop_forms_agree"]  # advanced-index crops equal the per-sample slices
    assert g["target_frozen"] and g["target_is_copy"] and g["target_shares_no_storage"]
    assert g["target_grads_none"]
    assert g["ema_gaps"]["foreach"] == 0.0
    assert g["ema_gaps"]["lerp"] < 1e-6 and g["ema_gaps"]["averaged"] < 1e-6
    assert g["ema_target_still_frozen"] and g["averaged_count"] == 2
    _close(r["momentum_schedule"], [0.99, 0.99 + 0.01 * (1 - math.sqrt(0.5)) / 2, 0.995,
                                    0.99 + 0.01 * (1 + math.sqrt(0.5)) / 2, 1.0], rtol=1e-12)
    # LARS scales a weight's step to lr * eta * |w|; biases and norms keep their own
    assert g["lars_ratio"] == pytest.approx(1.0, abs=1e-3)
    assert g["lars_state_size"] == sum(
        p.requires_grad for p in list(g["byol"].online.parameters())
        + list(g["byol"].predictor.parameters()))
    assert g["stop_gradient_changes_grad"] > 1e-3
    assert g["cos_gap"] < 1e-6 and g["mse_gap"] < 1e-5


def test_deepcopy_of_a_module_drops_parameter_grads():
    # torch's Parameter.__deepcopy__ makes a fresh leaf: the copy has no .grad
    g = _run("byol_simsiam")
    assert not any(g["deepcopy_grads"])


def test_byol_learns_without_collapse():
    g = _run("byol_simsiam")
    losses = g["byol_losses"]
    assert np.mean(losses[-10:]) < 0.05 * np.mean(losses[:10])
    assert g["byol_std"] > 0.5 / math.sqrt(32)
    assert g["byol_knn"] >= 0.9
    momentums = g["momentums"]
    assert momentums == sorted(momentums) and momentums[0] == pytest.approx(0.9, abs=1e-3)
    assert momentums[-1] > 0.999
    assert g["target_online_gap"] > 0  # the target trails the online network


def test_simsiam_learns_without_collapse():
    g = _run("byol_simsiam")
    losses = g["simsiam_losses"]
    assert losses[0] > -0.5 and np.mean(losses[-10:]) < -0.9
    assert min(g["simsiam_stds"]) > 0.5 / math.sqrt(32)
    assert g["simsiam_knn"] >= 0.9
    lrs = g["simsiam_lrs"]
    assert lrs[0] == pytest.approx(0.1 * (1 + math.cos(math.pi / 120)) / 2)
    assert lrs[-1] == pytest.approx(0.0, abs=1e-12)


def test_byol_simsiam_fixed_results_match_torch():
    g, t = _run("byol_simsiam"), _run_torch("byol_simsiam")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    # w + step - w: the step's float32 rounding at |w| ~ 0.3 is 3e-8
    _close(ours.pop("lars_update"), theirs.pop("lars_update"), rtol=0, atol=1e-7)
    _close_scaled_nested(ours, theirs, rtol=1e-5)
    assert g["ema_gaps"] == t["ema_gaps"]


def test_byol_simsiam_first_losses_match_torch():
    g, t = _run("byol_simsiam"), _run_torch("byol_simsiam")
    _close(g["byol_losses"][:10], t["byol_losses"][:10], rtol=1e-5)
    _close(g["simsiam_losses"][:10], t["simsiam_losses"][:10], rtol=1e-5, atol=1e-6)
    assert g["momentums"] == pytest.approx(t["momentums"], rel=1e-12)
    assert g["simsiam_lrs"] == pytest.approx(t["simsiam_lrs"], rel=1e-12)
