"""A script written for these tests in the way speech-recognition encoders are written in
public PyTorch code (set F35: a tiny Conformer-CTC recognizer as ESPnet, wenet and torchaudio
write one, in plain torch), run on jitgrad.

The script in tests/scripts/ runs as ``__main__``; these tests read what it computed from its
globals and assert that the Transformer-XL ``rel_shift`` picks the score of relative position
``i - j``, that relative-position attention ignores padded keys and passes gradcheck, that the
subsampled lengths follow ``((L - 1) // 2 - 1) // 2`` and the encoder's output on an utterance
does not depend on the padding of its batch, that ``F.ctc_loss`` equals a brute-force sum over
alignments (value and gradient) and its reductions relate as documented, that
``zero_infinity`` zeroes impossible utterances, that both Conformers learn the synthetic
keywords (the character error rate falls); and, where torch is installed, that the
fixed-weight parts and the first training losses equal the same script's with ``import torch``.
"""

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

SCRIPT = "conformer_ctc"


def _close_scaled(ours, theirs, rtol=1e-5):
    """Close to rtol of each entry or of the tensor's largest entry."""
    scale = float(np.abs(np.asarray(theirs, dtype=np.float64)).max())
    _close(ours, theirs, rtol=rtol, atol=rtol * scale)


def test_conformer_features_and_specaugment():
    g = _run(SCRIPT)
    r = g["fixed_results"]
    # 64-sample frames, hop 32, 16 pooled bins; every utterance long enough to subsample
    assert tuple(r["features"].shape) == (g["utterance_frames"][0], 16)
    assert min(g["utterance_frames"]) >= 30
    # global CMVN: the normalized training frames have zero mean and unit deviation
    first = g["first_batch"]
    assert tuple(first[0].shape) == (6, int(first[1].max()), 16)
    assert float(first[2].min()) == -1  # targets padded with the ignore id
    # SpecAugment only zeroes whole bands (time rows or frequency columns), some of them
    xs, aug = g["xs_pad"].numpy(), r["spec_augment"].numpy()
    assert ((aug == xs) | (aug == 0)).all()
    assert 0.05 < g["masked_fraction"] < 0.6
    for b in range(xs.shape[0]):
        zero = aug[b] == 0
        rows, cols = zero.all(axis=1), zero.all(axis=0)
        # a zero entry lies in a masked row or a masked column (or was zero-padded)
        covered = rows[:, None] | cols[None, :] | (xs[b] == 0)
        assert covered[zero].all()
        assert cols.sum() <= 2 * 3  # two frequency masks of width < 4


def test_conformer_rel_shift_and_relative_attention():
    g = _run(SCRIPT)
    r = g["fixed_results"]
    assert g["rel_shift_is_gather"]
    shifted = r["rel_shift"].numpy()
    # entry (i, j) of a (T, 2T - 1) row of positions T - 1 .. -(T - 1) is position i - j
    assert shifted[0, 0, 0].tolist() == [3.0, 4.0, 5.0, 6.0]
    assert shifted[0, 1, 3].tolist() == [49.0, 50.0, 51.0, 52.0]
    pos = r["pos_emb"].numpy()
    assert pos.shape == (1, 9, 8)
    _close(pos[0, 4, 0::2], np.zeros(4), atol=0)  # the center is relative position 0
    _close(pos[0, 4, 1::2], np.ones(4), atol=0)
    _close(pos[0, ::-1, 1::2], pos[0, :, 1::2], atol=0)  # cos is even, sin odd
    _close(pos[0, ::-1, 0::2], -pos[0, :, 0::2], atol=0)
    attn = r["rel_attention"]["attn"].numpy()
    _close(attn.sum(-1), np.ones(attn.shape[:-1]), rtol=1e-12)
    assert g["padded_keys_ignored"] and g["gradcheck_rel_attention"]
    assert g["swish_is_silu"]


def test_conformer_lengths_and_padding_invariance():
    g = _run(SCRIPT)
    ilens = g["ilens"].tolist()
    expected = [((n - 1) // 2 - 1) // 2 for n in ilens]
    assert g["hlens"].tolist() == expected == g["subsampled_lengths"].tolist()
    assert tuple(g["fixed_results"]["encoder_out"].shape) == (6, max(expected), 32)
    # the masks keep padded frames out of attention and out of the depthwise convolution
    assert g["padding_invariance_error"] < 1e-5
    assert g["n_params"] == sum(p.numel() for p in g["model"].parameters())


def test_ctc_loss_brute_force_reductions_and_zero_infinity():
    g = _run(SCRIPT)
    r = g["fixed_results"]
    assert g["n_alignments"] == 15
    _close(g["ctc_small"].item(), g["brute_force_nll"].item(), rtol=1e-12)
    _close(g["ctc_small_grad"], g["brute_force_grad"], rtol=1e-10, atol=1e-12)
    assert g["gradcheck_ctc"]
    losses, ylens = r["ctc_losses"], g["ylens"].numpy()
    none = losses["none"].numpy()
    _close(losses["sum"].item(), none.sum(), rtol=1e-6)
    _close(losses["mean"].item(), (none / ylens).mean(), rtol=1e-6)
    assert g["mean_is_per_target"]
    _close(losses["module_padded"].item(), losses["mean"].item(), rtol=1e-6)
    _close(losses["tuple_lengths"].item(), losses["sum"].item(), rtol=1e-6)
    _close(r["ctc_loss_sum_over_batch"].item(), losses["sum"].item() / 6, rtol=1e-5)
    # a target longer than its input: inf, or zero loss and zero gradient with zero_infinity
    assert g["infinite_without"]
    zi = r["zero_infinity"]
    assert zi["loss"][0].item() == 0 and np.isfinite(zi["loss"][1].item())
    assert (zi["grad"][:, 0].numpy() == 0).all() and (zi["grad"][:, 1].numpy() != 0).any()
    # frames past an input length get no gradient; torch's gradient w.r.t. log-probabilities
    # is exp(log_probs) - posteriors (it assumes a log_softmax before), so it sums to zero over
    # the classes of every frame an utterance has
    assert g["beyond_length_grad_zero"]
    leaf = r["ctc_doc"]["leaf_grad"].numpy()
    _close(leaf[:9].sum(-1), np.zeros((9, 3)), atol=1e-6)  # (not -1 / (3 target_len))
    assert (leaf[9:, 2] == 0).all() and (np.abs(leaf[9:, :2]) > 0).any()


def test_conformer_ctc_learns_the_keywords():
    g = _run(SCRIPT)
    losses, cers = g["losses"], g["valid_cers"]
    assert len(losses) == g["epochs"] * len(g["train_loader"]) == 100
    assert np.mean(losses[-10:]) < 0.1 * np.mean(losses[:10])
    assert cers[0] > 0.5 and g["final_cer"] < 0.1 and g["averaged_cer"] < 0.1
    assert sum(h == ref for h, ref in zip(g["final_hyps"], g["valid_refs"])) >= 28
    assert all(np.isfinite(g["grad_norms"]))
    # Noam: linear warm-up to the peak at step 20, then inverse square root decay
    lrs = g["lrs"]
    assert int(np.argmax(lrs)) == g["warmup_steps"] - 2
    assert max(lrs) == pytest.approx(4e-3)
    assert lrs[-1] == pytest.approx(4e-3 * (20 / 101) ** 0.5)
    groups = g["optimizer"].param_groups
    assert [group["weight_decay"] for group in groups] == [1e-3, 0.0]
    # the torchaudio-style Conformer on the same data
    ta_losses, ta_cers = g["ta_losses"], g["ta_cers"]
    assert np.mean(ta_losses[-10:]) < 0.2 * np.mean(ta_losses[:10])
    assert ta_cers[0] > 0.5 and ta_cers[-1] < 0.1


def test_conformer_fixed_results_match_torch():
    g, t = _run(SCRIPT), _run_torch(SCRIPT)
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    assert ours.pop("untrained_hyps") == theirs.pop("untrained_hyps")
    # an FFT's float32 rounding follows the spectrum's norm; the log and the CMVN carry it
    _close_scaled(ours.pop("features"), theirs.pop("features"))
    _close_nested(ours.pop("cmvn"), theirs.pop("cmvn"), rtol=1e-5, atol=1e-5)
    ours["torchaudio"], theirs["torchaudio"] = dict(ours["torchaudio"]), dict(theirs["torchaudio"])
    # the depthwise kernel's gradient sums over all frames: small taps carry the rounding of
    # the large ones
    _close_scaled(ours["torchaudio"].pop("depthwise_grad"),
                  theirs["torchaudio"].pop("depthwise_grad"))
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)
    # the float64 parts, tighter
    _close_nested(g["fixed_results"]["rel_attention"], t["fixed_results"]["rel_attention"],
                  rtol=1e-10, atol=1e-12)
    _close_nested(g["fixed_results"]["ctc_small"], t["fixed_results"]["ctc_small"],
                  rtol=1e-10, atol=1e-12)


def test_conformer_first_losses_match_torch():
    g, t = _run(SCRIPT), _run_torch(SCRIPT)
    _close(g["losses"][:20], t["losses"][:20], rtol=1e-5, atol=0)
    _close(g["grad_norms"][:20], t["grad_norms"][:20], rtol=2e-5, atol=0)
    _close(g["ta_losses"][:10], t["ta_losses"][:10], rtol=1e-5, atol=0)
    assert g["lrs"] == pytest.approx(t["lrs"], rel=1e-12)
    assert g["valid_cers"][:2] == t["valid_cers"][:2]
    assert g["ta_cers"][:2] == t["ta_cers"][:2]
