"""Scripts written for these tests in the way tensor-network and differentiable linear-algebra
PyTorch code is written (set A36: a matrix product state classifier with QR canonicalisation and
SVD truncation, TT-SVD, gradients through ``torch.linalg``, Tucker and tensor-train layers,
power iteration and Lanczos), run on jitgrad.

The script in tests/scripts/ runs as ``__main__``; these tests read what it computed from its
globals and assert that the MPS classifier learns its rule and its einsum and tensordot
contractions agree, that QR makes left isometries without changing the state, that SVD
truncation keeps the requested bonds and loses exactly the discarded weight, that TT-SVD finds
the exact ranks of a rank-2 tensor, that gradients through the decompositions pass gradcheck,
that the Tucker/TT layers' factorised and dense forms agree and fit a low-rank map, that power
iteration and Lanczos find the extreme eigenvalues; and, where torch is installed, that the
fixed-weight results (values compared through gauge-invariant quantities) and the first
training losses equal the same script's with ``import torch``.
"""

import math

import numpy as np

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run


def _close_scaled(ours, theirs, rtol=1e-5):
    """Close to rtol of each entry or of the tensor's largest entry."""
    scale = float(np.abs(np.asarray(theirs, dtype=np.float64)).max())
    _close(ours, theirs, rtol=rtol, atol=rtol * scale)


def _close_tree(ours, theirs, rtol, atol):
    if isinstance(theirs, dict):
        assert ours.keys() == theirs.keys()
        for key in theirs:
            _close_tree(ours[key], theirs[key], rtol, atol)
    else:
        _close(ours, theirs, rtol=rtol, atol=atol)


# ------------------------------------------------------------------ MPS classifier


def test_mps_classifier_learns_and_contractions_agree():
    g = _run("tensor_networks")
    losses = g["losses"]
    assert len(losses) == 40
    assert abs(losses[0] - math.log(2)) < 0.01  # near-identity cores: logits nearly equal
    assert losses[-1] < 0.05 * losses[0]
    assert g["train_accuracy"] >= 0.95 and g["test_accuracy"] >= 0.85
    # einsum and tensordot + bmm contract the same network
    assert g["contraction_difference"] < 1e-5
    _close(g["test_logits_tensordot"], g["test_logits"], rtol=1e-5, atol=1e-5)
    r = g["fixed_results"]
    assert tuple(r["mps_init_logits"].shape) == (8, 2)
    assert set(r["mps_grads"]) == {"label_core"} | {f"cores.{i}" for i in range(8)}
    assert tuple(r["mps_grads"]["cores.0"].shape) == (1, 2, 6)
    assert tuple(r["mps_grads"]["cores.7"].shape) == (6, 2, 1)


def test_mps_canonical_form_and_truncation():
    g = _run("tensor_networks")
    assert max(g["isometry_errors"]) < 1e-12
    amp = g["amp_before"].numpy()
    _close(g["amp_left"], amp, rtol=1e-10, atol=1e-12)
    # left-canonical: the norm sits in the last core; every bond's Schmidt spectrum has it too
    norm = float(g["norm_before"])
    assert abs(float(g["norm_last_core"]) - norm) < 1e-12 * norm
    for s in g["spectra"]:
        assert abs(float((s ** 2).sum()) - norm ** 2) < 1e-10 * norm ** 2
        assert (s[:-1] >= s[1:]).all()
    # untruncated sweep: the bonds are the exact ranks 2, 4, 8, ... and the state is unchanged
    assert g["full_bonds"] == [2, 4, 8, 8, 8, 4, 2]
    _close(g["amp_full"], amp, rtol=1e-10, atol=1e-12)
    assert g["trunc_bonds"] == [2, 3, 3, 3, 3, 3, 2]
    # the sweep's projections are orthogonal: |psi - psi_k|^2 is the discarded weight
    assert g["discarded_total"] > 0.01
    assert abs(g["distance_sq"] - g["discarded_total"]) < 1e-10
    # the trained classifier after canonicalisation (float64) and compression to bond 2
    _close(g["canonical_logits"], g["test_logits"], rtol=1e-4, atol=1e-4)
    assert g["compressed_accuracy"] >= g["test_accuracy"] - 0.1


def test_tt_svd_ranks_and_denoising():
    g = _run("tensor_networks")
    assert g["sin_ranks"] == [2] * 7  # sin(a + b) = sin a cos b + cos a sin b
    assert g["sin_error"] < 1e-12
    assert g["noisy_ranks"] == [2, 3, 3, 3, 3, 3, 2]
    # the low-rank approximation is nearer to the clean tensor than the noisy one is
    noise = float(np.linalg.norm((g["noisy"] - g["sin_tensor"]).numpy()))
    assert g["noisy_to_clean"] < 0.6 * noise
    assert g["noisy_error"] < noise


# ------------------------------------------------------------------ torch.linalg gradients


def test_linalg_gradchecks_and_identities():
    g = _run("tensor_networks")
    names = ["svd", "svd_batched_tall", "svdvals", "qr", "eigh", "cholesky", "cholesky_solve",
             "solve", "lstsq", "det", "matrix_exp", "pinv", "matrix_norm"]
    assert g["gradcheck_results"] == {name: True for name in names}
    assert g["gradgradcheck_results"] == {"svdvals": True, "nuclear": True, "det": True,
                                          "solve": True, "cholesky": True}
    values = g["linalg_values"]
    # singular values and eigenvalues are the constructed ones
    _close(values["svd"][0], np.linspace(4, 1, 5), rtol=1e-12)
    _close(values["eigh"][0], np.arange(1, 6) * 1.5 - 4.0, rtol=1e-12, atol=1e-12)
    _close(values["eigh"][2], values["eigh"][0], rtol=1e-12, atol=1e-12)
    # sum of singular values is the nuclear norm; |det| of the product of singular values
    _close(values["svdvals"][0], values["svdvals"][1], rtol=1e-12)
    _close(values["svdvals"][0], 10.0, rtol=1e-12)
    _close(values["det"][0], values["det"][1], rtol=1e-12)
    _close(np.abs(values["det"][0].numpy()), 4.0 * 2.5 * 1.0, rtol=1e-12)
    assert g["det_signs"] == [1.0, -1.0]
    _close(values["matrix_norm"][0], 4.0, rtol=1e-12)
    # solve and inv @ B, the two Cholesky solves, agree
    _close(values["solve"][0], values["solve"][1], rtol=1e-10, atol=1e-12)
    _close(values["cholesky_solve"][0], values["cholesky_solve"][1], rtol=1e-10, atol=1e-12)
    # the sign-fixed QR has a positive R diagonal and orthonormal Q
    Q, R = values["qr"][0].numpy(), values["qr"][1].numpy()
    assert (np.diag(R) > 0).all()
    _close(Q.T @ Q, np.eye(4), rtol=0, atol=1e-12)
    P = values["svd"][2].numpy()  # a rank-2 projector
    _close(P @ P, P, rtol=0, atol=1e-12)
    assert abs(np.trace(P) - 2) < 1e-12
    for key in ("svd_reconstruction_error", "eigh_reconstruction_error", "expm_inverse_error",
                "pinv_left_inverse_error"):
        assert g[key] < 1e-12, key


# ------------------------------------------------------------------ Tucker and TT layers


def test_tucker_and_tt_layers():
    g = _run("tensor_networks")
    assert g["tucker_forms_difference"] < 1e-5 and g["tt_forms_difference"] < 1e-5
    assert tuple(g["tucker_out"].shape) == (7, 12) and tuple(g["tt_out"].shape) == (7, 12)
    assert tuple(g["tucker"].full_weight().shape) == (12, 12)
    n_tucker = sum(p.numel() for p in g["tucker"].parameters())
    assert n_tucker == 3 * 2 * 2 * 3 + 4 * 3 + 3 * 2 + 3 * 2 + 4 * 3 + 12
    # HOSVD recovers a weight of exact multilinear rank with orthonormal factors
    assert g["hosvd_error"] < 1e-5 and g["factor_orthogonality"] < 1e-5
    # the orthogonality penalty vanishes, with its gradient, at orthonormal factors, whose
    # singular values all repeat (1); scaled by 1.2 its gradient is 2 (0.2 / 1.2) F
    assert g["penalty_at_hosvd"] < 1e-10 and g["penalty_grad_max"] < 1e-5
    assert abs(g["penalty_scaled"] - 10 * 0.2 ** 2) < 1e-5
    assert g["penalty_direction_error"] < 1e-5
    for name, fit in g["fit_losses"].items():
        assert len(fit) == 60
        assert fit[-1] < 0.02 * fit[0], name
        assert fit[-1] < 0.01, name  # the noise variance is 1e-4


def test_power_iteration_and_lanczos():
    g = _run("tensor_networks")
    assert abs(float(g["power_value"]) - 10.0) < 1e-8
    assert g["power_residual"] < 1e-6
    exact = g["fixed_results"]["exact_extremes"].numpy()
    _close(exact, [-6.0, 7.0, 10.0], rtol=1e-12)
    _close(g["fixed_results"]["lanczos_extremes"], exact, rtol=1e-10)
    _close(g["ritz"][-3:], [5.0, 7.0, 10.0], rtol=1e-8)
    assert g["lanczos_orthogonality"] < 1e-12
    assert abs(g["tt_spectral_power"] - g["tt_spectral_exact"]) < 1e-6 * g["tt_spectral_exact"]
    _close(g["tt_svdvals"][0], g["tt_spectral_exact"], rtol=1e-12)


# ------------------------------------------------------------------ against torch


def test_tensor_networks_fixed_results_match_torch():
    g, t = _run("tensor_networks"), _run_torch("tensor_networks")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.keys() == theirs.keys()
    # float64: the SVD/QR/eigh results enter only through invariants (spectra, projectors,
    # sign-fixed QR, contracted amplitudes), so they are compared tightly
    for key in ("mps64_amplitudes", "mps64_norm", "mps64_bond_spectra",
                "mps64_truncated_amplitudes", "mps64_truncated_norm", "tt_noisy_reconstruction",
                "tt_sin_core_norms", "linalg_values", "linalg_grads", "exact_extremes",
                "lanczos_extremes"):
        _close_tree(ours.pop(key), theirs.pop(key), rtol=1e-10, atol=1e-12)
    # float32. At the near-identity initialisation the two logits almost cancel in the loss
    # (it sits at log 2): the MPS gradients are differences of terms ~10x their size, and
    # carry those terms' rounding, so their tolerance is 3e-5 of each tensor's largest entry
    mps_grads, their_grads = ours.pop("mps_grads"), theirs.pop("mps_grads")
    assert mps_grads.keys() == their_grads.keys()
    for name in their_grads:
        _close_scaled(mps_grads[name], their_grads[name], rtol=3e-5)
    layer_grads, their_layer = ours.pop("layer_grads"), theirs.pop("layer_grads")
    assert layer_grads.keys() == their_layer.keys()
    for name in their_layer:
        _close_scaled(layer_grads[name], their_layer[name])
    penalty, their_penalty = ours.pop("penalty_grads_scaled"), theirs.pop("penalty_grads_scaled")
    assert penalty.keys() == their_penalty.keys()
    for name in their_penalty:
        _close_scaled(penalty[name], their_penalty[name])
    for key in list(theirs):
        _close_scaled(ours.pop(key), theirs.pop(key))


def test_tensor_networks_first_losses_match_torch():
    g, t = _run("tensor_networks"), _run_torch("tensor_networks")
    _close(g["losses"][:8], t["losses"][:8], rtol=1e-5, atol=0)
    for name in ("tt", "tucker"):
        _close(g["fit_losses"][name][:8], t["fit_losses"][name][:8], rtol=1e-5, atol=0)
    for key in ("sin_ranks", "noisy_ranks", "full_bonds", "trunc_bonds", "det_signs"):
        assert g[key] == t[key], key
    assert g["gradcheck_results"] == t["gradcheck_results"]
