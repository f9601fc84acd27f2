"""Scripts written for these tests in the way common PyTorch code of two kinds is written (set
D35: TabNet with sparsemax/entmax-1.5 attention as dreamquark-ai's pytorch-tabnet writes it,
and a categorical VAE with Gumbel-softmax latents and ``torch.distributions``), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that the hand-written sparsemax/entmax backward passes gradcheck and
equals autograd through the sort/gather form, that sparsemax lies on the simplex with exact
zeros, that ghost batch norm normalises each virtual batch, that the attention masks sum to one
and grouped features share one weight, that TabNet learns a classification and a regression and
its importances find the informative columns; that the straight-through Gumbel-softmax is
one-hot forward and soft backward, that the distributions' KLs and log-probabilities agree with
the formulas by hand, that the VAE learns its codes and its exact ELBO stays under the exact
``log p(x)``; and, where torch is installed, that the fixed-weight parts, the seeded Gumbel
noise and the first training losses equal the same script's with ``import torch``.
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


# ------------------------------------------------------------------ TabNet, sparsemax, entmax


def test_sparsemax_entmax_on_the_simplex_with_exact_zeros():
    g = _run("tabnet_sparsemax")
    r = g["fixed_results"]
    # sparsemax([1.5, .3, 1.2, -2, 0]): tau = (1.5 + 1.2 - 1) / 2, two entries survive
    _close(r["sparsemax"], [[0.65, 0, 0.35, 0, 0], [0.2] * 5, [0.7, 0, 0, 0, 0.3]],
           rtol=1e-6, atol=1e-7)
    assert g["sparse_zero_counts"] == [3, 0, 3]  # exact zeros, not tiny numbers
    _close(g["sparse_row_sums"], np.ones(3), rtol=0, atol=1e-7)
    # entmax-1.5 is less sparse: the 0.3 and 0.0 of the first row keep some mass
    assert g["entmax_zero_counts"] == [1, 0, 3]
    _close(g["entmax_row_sums"], np.ones(3), rtol=0, atol=1e-6)
    entmax = r["entmax15"].numpy()
    assert (entmax >= 0).all() and entmax[0, 1] > 0 and entmax[0, 4] > 0
    _close(g["uniform_row"], np.full(5, 0.2), rtol=1e-6)
    assert g["sharp_is_argmax"]
    # along dim 0 every column is on the simplex
    _close(r["sparsemax_module_dim0"].numpy().sum(0), np.ones(5), rtol=0, atol=1e-6)
    _close(r["entmax_module_dim0"].numpy().sum(0), np.ones(5), rtol=0, atol=1e-6)


def test_sparsemax_entmax_hand_written_backward():
    g = _run("tabnet_sparsemax")
    assert g["gradcheck_results"] == {"sparsemax": True, "sparsemax_dim0": True,
                                      "entmax15": True, "entmax15_dim0": True}
    out_diff, grad_diff = g["sparsemax_custom_vs_autograd"]
    assert out_diff < 1e-14 and grad_diff < 1e-14
    # the Jacobian of a map onto the simplex: gradients sum to zero, none off the support
    _close(g["sparse_grad_row_sums"], np.zeros(6), rtol=0, atol=1e-12)
    assert g["grad_off_support"] == 0.0
    r = g["fixed_results"]
    _close(r["entmax_grad"].numpy().sum(-1), np.zeros(6), rtol=0, atol=1e-12)


def test_tabnet_blocks():
    g = _run("tabnet_sparsemax")
    # ghost batch norm: every virtual batch (5, 5, 3 rows) is normalised on its own
    assert g["chunk_sizes"] == [5, 5, 3]
    _close(g["chunk_means"], np.zeros((3, 4)), rtol=0, atol=2e-6)
    _close(g["chunk_vars"], np.ones((3, 4)), rtol=0, atol=1e-3)  # (var + eps under the root)
    assert g["gbn_batches_tracked"] == 3
    assert g["glu_agree"] and g["shared_fc_is_shared"]
    # each step's attention mask is a distribution over the features, and a sparse one
    _close(g["mask_row_sums"], np.ones((3, 64)), rtol=0, atol=1e-5)
    assert g["mask_sparsity_untrained"] > 0.3
    # grouped features: one attention weight spread evenly over x3, x4, x5
    assert g["grouped_equal"] and g["grouped_attention_dim"] == 7
    groups = g["fixed_results"]["group_matrix"].numpy()
    _close(groups.sum(1), np.ones(7), rtol=1e-6)
    _close(groups[0, 3:6], np.full(3, 1 / 3), rtol=1e-6)
    # the float64 copy: the same model, every floating tensor of its state_dict float64
    assert g["clf64_dtypes"] in ({"torch.float64"}, {"jitgrad.float64"})
    r = g["fixed_results"]
    _close_scaled(r["clf_logits"], r["clf64_logits"], rtol=1e-4)
    _close(r["clf_loss"], r["clf64_loss"], rtol=1e-5)


def test_tabnet_learns_and_finds_the_informative_columns():
    g = _run("tabnet_sparsemax")
    clf_losses, reg_losses = g["clf_losses"], g["reg_losses"]
    assert len(clf_losses) == 25 and len(reg_losses) == 12
    assert np.mean(clf_losses[-3:]) < 0.6 * clf_losses[0]
    assert g["clf_accuracy"] > 0.7
    assert reg_losses[-1] < 0.35 * reg_losses[0]
    assert g["reg_valid_mse"] < 0.5 * g["target_variance"]
    # importances over the post-embedding columns: x0..x7, then the category's embedding
    for importances, informative in ((g["reg_importances"], [0, 1, 8, 9]),
                                     (g["clf_importances"], [0, 1, 2, 8, 9, 10])):
        imp = importances.numpy()
        _close(imp.sum(), 1.0, rtol=1e-5)
        assert (imp >= 0).all()
        assert imp[informative].sum() > 0.6
    assert g["clf64_losses"][-1] < g["clf64_losses"][0]


def test_tabnet_fixed_results_match_torch():
    g, t = _run("tabnet_sparsemax"), _run_torch("tabnet_sparsemax")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    # float64: the sparsemax/entmax gradients and the whole model copied to float64
    _close(ours.pop("sparsemax_grad"), theirs.pop("sparsemax_grad"), rtol=1e-12, atol=1e-14)
    _close(ours.pop("entmax_grad"), theirs.pop("entmax_grad"), rtol=1e-12, atol=1e-14)
    _close(ours.pop("clf64_loss"), theirs.pop("clf64_loss"), rtol=1e-12)
    _close_scaled(ours.pop("clf64_logits"), theirs.pop("clf64_logits"), rtol=1e-11)
    for key in ("clf64_grads", "clf64_state"):
        ours_d, theirs_d = ours.pop(key), theirs.pop(key)
        assert ours_d.keys() == theirs_d.keys()
        for name in theirs_d:
            _close_scaled(ours_d[name], theirs_d[name], rtol=1e-9)
    # float32 through three steps of batch norms and sparsemax supports: torch's own logits
    # and gradients are off the float64 ones by up to 1.6e-5 of each tensor's largest entry
    _close_scaled(ours.pop("clf_logits"), theirs.pop("clf_logits"), rtol=5e-5)
    ours_g, theirs_g = ours.pop("clf_grads"), theirs.pop("clf_grads")
    assert ours_g.keys() == theirs_g.keys()
    for name in theirs_g:
        _close_scaled(ours_g[name], theirs_g[name], rtol=5e-5)
    _close_nested(ours, theirs, rtol=2e-6, atol=3e-7)
    assert g["n_params"] == t["n_params"] == 6364


def test_tabnet_first_losses_match_torch():
    g, t = _run("tabnet_sparsemax"), _run_torch("tabnet_sparsemax")
    _close(g["clf64_losses"], t["clf64_losses"], rtol=1e-10)
    # float32 training: a sparsemax support flips on a rounding difference, and from the
    # fourth Adam step on the runs part (torch's own do too with weights moved by one ulp)
    _close(g["clf_step_losses"][:2], t["clf_step_losses"][:2], rtol=1e-5)
    # the entmax regressor stays close for longer
    _close(g["reg_step_losses"][:12], t["reg_step_losses"][:12], rtol=1e-4)
    _close(g["reg_losses"][:3], t["reg_losses"][:3], rtol=1e-5)


# ------------------------------------------------------------ categorical VAE, Gumbel-softmax


def test_gumbel_softmax_straight_through():
    g = _run("gumbel_categorical_vae")
    r = g["fixed_results"]
    assert g["hard_is_one_hot"] and g["hard_is_argmax_of_soft"]
    _close(g["soft_rows_sum"], np.ones((3, 4)), rtol=0, atol=1e-6)
    # forward one-hot, backward the relaxed sample's gradient
    assert g["straight_through_grad_equal"]
    assert g["F_matches_exponential"] and g["F_hard_is_argmax"]
    f_hard = r["F_gumbel_hard"].numpy()
    assert set(np.unique(f_hard)) <= {0.0, 1.0}
    _close(f_hard.sum(-1), np.ones((3, 4)), rtol=0, atol=0)
    # F.gumbel_softmax(hard=True) passes the soft gradient: softmax's, which sums to zero
    grad = r["F_gumbel_hard_grad"].numpy()
    assert np.abs(grad).max() > 1e-3
    _close(grad.sum(-1), np.zeros((3, 4)), rtol=0, atol=1e-6)
    st = r["st_dist_sample"].numpy()
    assert st.shape == (3, 4, 4) and set(np.unique(st)) <= {0.0, 1.0}
    _close(st.sum(-1), np.ones((3, 4)), rtol=0, atol=0)
    assert g["st_dist_grad_nonzero"]


def test_categorical_distributions_agree_with_the_formulas():
    g = _run("gumbel_categorical_vae")
    r = g["fixed_results"]
    _close(r["onehot_log_prob"], g["onehot_log_prob_by_hand"], rtol=1e-6, atol=1e-6)
    assert tuple(r["onehot_samples"].shape) == (5, 4, 4)
    assert r["onehot_batch_event"] == ((4,), (4,))
    _close(r["onehot_probs"].numpy().sum(-1), np.ones(4), rtol=0, atol=1e-6)
    assert tuple(r["onehot_support"].shape) == (4, 1, 4)
    _close(r["onehot_support"].numpy()[:, 0], np.eye(4), rtol=0, atol=0)
    # KL to the uniform prior: per latent, through Independent, for OneHotCategorical, by hand
    kl = r["kl_per_latent"].numpy()
    assert (kl >= 0).all()
    _close(r["onehot_kl_uniform"], kl, rtol=1e-6, atol=1e-7)
    _close(r["kl_independent"], kl.sum(), rtol=1e-6)
    _close(g["kl_by_hand"], kl.sum(), rtol=1e-5)
    _close(g["kl_model_by_distributions"], r["kl"], rtol=1e-5, atol=1e-8)
    # entropy <= log K, with KL = log K - H for the uniform prior
    _close(kl, np.log(4) - r["onehot_entropy"].numpy(), rtol=1e-5, atol=1e-6)
    relaxed = r["relaxed_sample"].numpy()
    assert relaxed.shape == (6, 4, 4) and (relaxed > 0).all()
    _close(relaxed.sum(-1), np.ones((6, 4)), rtol=0, atol=1e-6)
    assert np.isfinite(r["relaxed_log_prob"].numpy()).all()


def test_gumbel_vae_learns_its_codes():
    g = _run("gumbel_categorical_vae")
    losses, bces = g["losses"], g["bces"]
    assert len(losses) == 20
    assert losses[-1] < 0.65 * losses[0] and bces[-1] < 0.5 * bces[0]
    assert g["temps"][0] < 1.0 and g["temps"][-1] == 0.5
    # 3% of the pixels are flipped noise; the mode's reconstruction gets most of the rest
    assert g["pixel_error"] < 0.13
    # the exact ELBO (all 256 codes) is under the exact log p(x), for every test image
    _close(g["q_total_mass"], np.ones(64), rtol=0, atol=1e-5)
    assert g["elbo_gap"] > -1e-3
    assert g["mean_elbo"] <= g["mean_log_px"]
    assert -30 < g["mean_log_px"] < -10
    # each latent's code predicts one quadrant's stroke: some completely, all above chance
    recovery = g["latent_recovery"]
    assert max(recovery) > 0.85 and np.mean(recovery) > 0.6


def test_gumbel_vae_fixed_results_match_torch():
    g, t = _run("gumbel_categorical_vae"), _run_torch("gumbel_categorical_vae")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    # seeded noise: torch.rand, exponential_ and the categorical samplers draw the same
    # numbers; the one-hot samples are equal, the Gumbel transforms within a log's rounding
    for key in ("manual_hard", "F_gumbel_hard", "onehot_samples", "st_dist_sample",
                "onehot_support", "onehot_mode"):
        _close(ours.pop(key), theirs.pop(key), rtol=0, atol=0)
    ours_g, theirs_g = ours.pop("grads"), theirs.pop("grads")
    assert ours_g.keys() == theirs_g.keys()
    for name in theirs_g:
        _close_scaled(ours_g[name], theirs_g[name], rtol=1e-5)
    for key in ("relaxed_log_prob", "relaxed_prior_log_prob", "recon_logits", "st_grad",
                "F_gumbel_hard_grad"):
        _close_scaled(ours.pop(key), theirs.pop(key), rtol=1e-5)
    _close_nested(ours, theirs, rtol=2e-6, atol=1e-7)


def test_gumbel_vae_first_losses_match_torch():
    g, t = _run("gumbel_categorical_vae"), _run_torch("gumbel_categorical_vae")
    # the same Gumbel noise from the seeded generator; Adam's sign-like steps on tiny
    # gradients part float32 runs after ~100 steps (as they part torch's own)
    _close(g["losses"][:2], t["losses"][:2], rtol=1e-5)
    _close(g["bces"][:2], t["bces"][:2], rtol=1e-5)
    assert g["temps"] == pytest.approx(t["temps"], rel=1e-12)
