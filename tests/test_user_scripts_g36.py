"""Scripts written for these tests in the way common PyTorch code of two kinds is written (set
G36: knowledge-graph embedding models as PyKEEN, OpenKE and the RotatE authors' code write them
in plain torch, and a DDSP harmonic-plus-noise synthesiser as the DDSP papers' PyTorch ports
write it), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that the two spellings of each score function (``torch.norm`` and
``torch.linalg.vector_norm``, ComplEx on complex tensors and on real halves, RotatE through
``torch.polar`` and through cos/sin) agree in value and gradient, that every score passes
gradcheck (complex128 inputs for ComplEx and RotatE), that the three margin losses agree, that
``nn.Embedding(max_norm=...)`` renormalises only the rows it looks up, that sparse embedding
gradients equal the dense ones and ``SparseAdam`` moves only those rows, that filtered ranks
by comparison and by ``argsort`` agree, that training lowers each model's loss and ranks the
training triples well; and, where torch is installed, that the fixed-weight parts and the
first training losses equal the same script's with ``import torch``.
"""

import numpy as np

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

# ------------------------------------------------------------------ knowledge-graph embeddings


def test_kg_score_functions_agree_and_gradcheck():
    g = _run("kg_embeddings")
    assert g["score_agree"] == dict.fromkeys(
        ("transe_l1", "transe_l2", "distmult", "complex", "rotate"), True)
    assert g["gradcheck_results"] == dict.fromkeys(
        ("transe_l1", "transe_l2", "distmult", "complex_real", "complex", "rotate",
         "rotate_real", "self_adversarial_fixed_weights"), True)
    assert g["detach_holds_weights"]
    assert g["view_roundtrip"] and g["polar_agrees"]
    assert g["linalg_agrees"] and g["complex_layouts_agree"] and g["cdist_agrees"]
    # TransE's renormalisation puts every entity on the unit sphere
    _close(g["entity_norms"].detach(), np.ones(12), rtol=0, atol=1e-6)
    # RotatE through polar/abs equals the authors' cos/sin and stacked norm, on trained weights
    assert g["rotate_forms_difference"] < 1e-5
    assert g["rotate_frozen"]


def test_kg_losses_sampling_and_embeddings():
    g = _run("kg_embeddings")
    r = g["fixed_results"]
    # MarginRankingLoss, relu(margin + pos - neg) and OpenKE's max form are one loss
    losses = r["margin_losses"].numpy()
    _close(losses, np.full(3, losses[0]), rtol=1e-12, atol=1e-15)
    weights = r["self_adversarial"]["weights"].numpy()
    _close(weights.sum(1), np.ones(6), rtol=1e-12)
    assert g["corruption_valid"]
    negatives = r["negatives"].numpy()
    assert negatives.shape == (6, 5, 3) and negatives.min() >= 0 and negatives.max() < 12
    assert g["max_norm_rows"] == {"looked_up_capped": True, "others_untouched": True}
    grad = r["max_norm"]["grad"].numpy()
    assert (grad[[1, 3]] != 0).all() and (grad[[0, 2, 4, 5]] == 0).all()
    info = g["sparse_grad_info"]
    assert info["is_sparse"] and info["matches_dense"] and info["only_used_rows_moved"]
    assert info["rows"] == info["used_rows"]


def test_kg_filtered_ranking():
    g = _run("kg_embeddings")
    r = g["fixed_results"]
    ranks = r["ranks"]
    _close(ranks["argsort"], ranks["optimistic"], rtol=0, atol=0)
    n_test = g["n_test"]
    assert ranks["optimistic"].numpy().max() <= 12 and ranks["optimistic"].numpy().min() >= 1
    # the mask holds every known tail: two for the one-to-many relation
    test, known = g["test_triples"].numpy(), g["all_triples"].numpy()
    expected = [((known[:, 0] == h) & (known[:, 1] == rel)).sum() for h, rel, _ in test]
    assert max(expected) == 2
    _close(ranks["mask"], expected, rtol=0, atol=0)
    tie = r["tie_ranks"]
    assert (tie["pessimistic"].numpy() >= tie["optimistic"].numpy()).all()
    metrics = r["rank_metrics"]
    _close(metrics["mrr"], np.mean(1.0 / ranks["optimistic"].numpy()), rtol=1e-6)
    assert len(ranks["optimistic"]) == n_test
    _close(r["hits@3_topk"], metrics["hits@3"], rtol=1e-6)
    # bern sampling: one-to-one relations corrupt either side at even odds, the one-to-many
    # relation r2 (about two tails per head) its head more often
    probs = r["bern_head_probability"].numpy()
    _close(probs[:2], [0.5, 0.5], rtol=1e-12)
    assert 0.6 < probs[2] < 0.7
    # with every other true tail boosted above the target, the raw rank counts them (it is
    # the number of known tails) and the filtered rank is one
    boosted = r["boosted_ranks"]
    _close(boosted["raw"], expected, rtol=0, atol=0)
    _close(boosted["filtered"], np.ones(n_test), rtol=0, atol=0)
    for name in g["metrics"]:
        assert 0 < g["metrics"][name]["mrr"] <= 1


def test_kg_models_learn():
    g = _run("kg_embeddings")
    for name in ("transe_losses", "distmult_losses", "complex_losses", "rotate_losses",
                 "sparse_losses"):
        losses = g[name]
        assert np.mean(losses[-10:]) < 0.75 * np.mean(losses[:5]), name
    train = g["train_metrics"]
    # random ranking of 12 entities has an MRR of about 0.26
    for name in ("transe", "complex", "rotate", "distmult"):
        assert train[name]["mrr"] > 0.55, (name, train[name])
    assert train["rotate"]["mrr"] > 0.9 and train["rotate"]["hits@3"] == 1.0
    assert g["metrics"]["rotate"]["mrr"] > 0.6


def test_kg_fixed_results_match_torch():
    g, t = _run("kg_embeddings"), _run_torch("kg_embeddings")
    _close_nested(dict(g["fixed_results"]), dict(t["fixed_results"]), rtol=1e-5, atol=1e-6)
    _close(g["sparse_grad_info"]["dense"], t["sparse_grad_info"]["dense"], rtol=1e-5,
           atol=1e-6)


def test_kg_first_losses_match_torch():
    g, t = _run("kg_embeddings"), _run_torch("kg_embeddings")
    for name in ("transe_losses", "distmult_losses", "complex_losses", "rotate_losses",
                 "sparse_losses"):
        _close(g[name][:10], t[name][:10], rtol=1e-5, atol=0)
    for name in g["metrics"]:
        _close(g["train_metrics"][name]["mrr"], t["train_metrics"][name]["mrr"], rtol=1e-5)


# ------------------------------------------------------------------ DDSP synthesiser


def test_ddsp_oscillator_upsampling_and_nyquist():
    g = _run("ddsp_synth")
    r = g["fixed_results"]
    assert g["nearest_is_repeat"]
    # linear upsampling by 4 (half-pixel centres): the first and last two samples hold the
    # end frames, and every sample lies between its neighbouring frames
    up, frames = r["upsample_linear"].numpy(), g["controls"].numpy()
    assert up.shape == (2, 20, 3)
    _close(up[:, :2], np.repeat(frames[:, :1], 2, 1), rtol=0, atol=1e-7)
    _close(up[:, -2:], np.repeat(frames[:, -1:], 2, 1), rtol=0, atol=1e-7)
    _close(r["upsample_align"][..., 0], frames[:, 0], rtol=0, atol=1e-7)
    _close(r["upsample_align"][..., -1], frames[:, -1], rtol=0, atol=1e-7)
    # the second harmonic of a 250 Hz cumulative phase is a 500 Hz sine
    assert g["sine_error"] < 1e-9 and g["tone_peak_hz"] == 500.0
    assert g["wrap_error"] < 1e-10
    # harmonics of 300, 700 and 1500 Hz below 4 kHz: 12 (all), 5 and 2
    assert g["audible"].tolist() == [12, 5, 2]
    k = np.arange(1, 13)
    expected = (k * np.array([[300.0], [700.0], [1500.0]]) < 4000) + 1e-4
    _close(r["nyquist_mask"][0], expected, rtol=1e-7, atol=0)


def test_ddsp_noise_filter_and_reverb():
    g = _run("ddsp_synth")
    r = g["fixed_results"]
    assert tuple(r["impulse"].shape) == (2, 3, 64)
    # zero phase: the centred FIR is symmetric; beyond its 32 taps the response is zero
    assert g["symmetric_error"] < 1e-12
    _close(np.roll(r["impulse"].numpy(), 16, -1)[..., 32:], np.zeros((2, 3, 32)), rtol=0,
           atol=0)
    # FFT convolution equals the direct causal FIR (F.conv1d, frames as groups)
    assert g["conv_error"] < 1e-12
    # a flat magnitude response is a unit impulse
    assert g["flat_peak"] == (0, 1.0)
    impulse = r["reverb_impulse"].numpy()[0, :, 0]
    assert g["reverb_first_tap"] == 1.0 and impulse[0] == 1.0
    # the tail decays as exp(-softplus(1) * 500 t): its first quarter outweighs its last
    assert np.abs(impulse[1:33]).mean() > 20 * np.abs(impulse[-32:]).mean()
    reverb = r["reverb"]
    assert float(reverb["grad_decay"]) != 0 and float(reverb["grad_wet"]) != 0
    assert (reverb["grad_noise"].numpy()[0] == 0).all()  # the first tap is overwritten
    assert (reverb["grad_noise"].numpy()[1:] != 0).all()


def test_ddsp_gradcheck_and_fits():
    g = _run("ddsp_synth")
    assert g["gradcheck_results"] == dict.fromkeys(
        ("harmonic", "impulse", "fft_convolve", "upsample", "spectral_loss"), True)
    losses = g["fit_losses"]
    assert len(losses) == 30
    assert np.mean(losses[-5:]) < 0.6 * losses[0]
    assert g["spectrum_error_after"] < 0.7 * g["spectrum_error_before"]
    f0_losses, f0_track = g["f0_losses"], g["f0_track"]
    assert f0_losses[-1] < 0.01 * f0_losses[0]
    assert abs(f0_track[-1] - 240.0) < 0.5


def test_ddsp_fixed_results_match_torch():
    g, t = _run("ddsp_synth"), _run_torch("ddsp_synth")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    # (the float64 synthesiser, its spectral loss and gradients agree to 1e-10; the float32
    # parts to float32's rounding)
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)


def test_ddsp_first_losses_match_torch():
    g, t = _run("ddsp_synth"), _run_torch("ddsp_synth")
    # the amplitude fit: only the first loss. |log S_x - log S_y| has a kink wherever the
    # estimate's and the target's magnitudes cross, and float32 rounding (sin, the FFT) moves
    # bins across it: the first gradients already differ there (as two torch builds would)
    _close(g["fit_losses"][0], t["fit_losses"][0], rtol=1e-5, atol=0)
    # the f0 fit: float32 phases of ~200 rad carry 1.5e-5 of rounding into each sample
    _close(g["f0_losses"][:10], t["f0_losses"][:10], rtol=1e-4, atol=0)
    _close(g["f0_track"], t["f0_track"], rtol=1e-6, atol=0)
