"""Scripts written for these tests in the way common PyTorch code of two kinds is written (set
T33: audio features and a keyword-spotting classifier as torchaudio's transforms and speech
tutorials write them, in plain torch, and an RWKV-4 language model beside Katharopoulos linear
attention as RWKV-LM and linear-transformer code write them), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that istft(stft(x)) recovers x, that Griffin-Lim's spectral
convergence improves (faster with momentum), that gradients through ``torch.stft``/``istft``
pass gradcheck and fit a waveform to a spectrogram, that the log-mel CNN and the MFCC Conv1d
classify tones and chirps; that the RWKV WKV loop, causal-matrix and cumsum forms agree in
value and gradient, that state-carrying generation equals the full-sequence forward, that the
model learned its recurrence rule, and that the three linear-attention forms agree; and, where
torch is installed, that the fixed-weight parts and the first training losses equal the same
script's with ``import torch``.
"""

import math

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


# ------------------------------------------------------------------ audio features, KWS


def test_audio_stft_istft_and_features():
    g = _run("audio_spectrogram")
    r = g["fixed_results"]
    # istft(stft(x)) recovers x (hann window, hop 64 and 128, an odd length)
    assert g["roundtrip_error"] < 1e-5
    _close(r["istft"], g["batch_wave"], rtol=0, atol=1e-5)
    _close(r["istft_hop128"], g["clip"], rtol=0, atol=1e-5)
    # shapes: (freq, frames), (freq, mels), (mfcc, frames)
    assert tuple(r["spectrogram"].shape) == (129, 1000 // 128 + 1)
    assert tuple(r["mel_fb"].shape) == (129, 32) and tuple(r["mfcc"].shape) == (13, 8)
    # reflect padding by hand + center=False is what center=True does
    _close(r["manual_center"], r["spectrogram"], rtol=1e-6, atol=1e-6)
    # HTK filters peak at one (no norm) and are non-negative; slaney-normalised ones are not
    plain = r["mel_fb_htk_plain"].numpy()
    assert plain.min() >= 0 and 0.9 < plain.max() <= 1.0
    assert (plain.sum(0) > 0).all()  # no empty filter
    # top_db clips the dynamic range; the orthonormal DCT is orthonormal
    log_mel = r["log_mel_top_db_20"].numpy()
    assert log_mel.max() - log_mel.min() == pytest.approx(20.0, abs=1e-4)
    dct = g["transform"].dct_mat.numpy()
    _close(dct.T @ dct, np.eye(13), rtol=0, atol=1e-6)
    assert tuple(r["dct_none"].shape) == (8, 5)  # (n_mels, n_mfcc)
    _close(r["dct_none"][:, 0], np.full(8, 2.0), rtol=1e-6)
    # SpecAugment masked some bands, and only to zero
    assert 0.05 < float(r["masked_fraction"]) < 0.5
    # resampling down and up by linear interpolation keeps a 200 Hz tone
    assert tuple(r["resample_down"].shape) == (1, 400) and g["resample_error"] < 0.02


def test_audio_griffinlim_and_stft_gradients():
    g = _run("audio_spectrogram")
    r = g["fixed_results"]
    conv = g["gl_convergence"]
    assert len(conv) == 24 and conv[-1] < 0.2 * conv[0]
    assert g["gl_final_convergence"] < 0.2 and g["gl_polar_convergence"] < 0.2
    # momentum converges faster than plain Griffin-Lim
    assert conv[-1] < r["griffinlim_no_momentum"][-1]
    assert r["griffinlim_no_momentum"][-1] < r["griffinlim_no_momentum"][0]
    assert g["gradcheck_results"] == {"stft_power": True, "stft_istft": True, "log_mel": True}
    spectral = g["spectral_losses"]
    assert spectral[-1] < 0.2 * spectral[0]


def test_audio_keyword_classifiers_learn():
    g = _run("audio_spectrogram")
    losses, mfcc_losses = g["losses"], g["mfcc_losses"]
    per_epoch = len(g["train_loader"])
    assert per_epoch == 6 and len(losses) == len(mfcc_losses) == g["epochs"] * per_epoch
    # label smoothing 0.1 over 4 classes: the floor is ~0.3; from about log 4
    assert np.mean(losses[-per_epoch:]) < 0.6 * np.mean(losses[:per_epoch])
    assert np.mean(mfcc_losses[-per_epoch:]) < 0.6 * np.mean(mfcc_losses[:per_epoch])
    assert g["accuracy"] >= 0.9 and g["mfcc_accuracy"] >= 0.9
    assert g["predicted"] == "up"
    # the collate function padded each batch to its own longest clip
    for shape, longest in g["batch_shapes"]:
        assert shape[1] == longest
    assert len({shape[1] for shape, _ in g["batch_shapes"]}) > 1


def test_audio_fixed_results_match_torch():
    g, t = _run("audio_spectrogram"), _run_torch("audio_spectrogram")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    # MFCCs are DCT sums of log-mels near -100 dB: small coefficients carry the float32
    # rounding of those terms, so the absolute tolerance follows the coefficients' scale
    _close_scaled(ours.pop("mfcc"), theirs.pop("mfcc"))
    # the same for the STFT's bins: an FFT's rounding follows the spectrum's norm (torch's
    # float32 FFT leaves ~1e-6 in the imaginary parts that reflect padding makes zero)
    _close_scaled(ours.pop("stft_batch"), theirs.pop("stft_batch"))
    # and SpecAugment's input: log-mels near -100 dB, normalised (mean and std), carry the
    # float32 rounding of terms ~30x larger than the results near 0 (1e-6 on some hosts)
    _close_scaled(ours.pop("spec_augment"), theirs.pop("spec_augment"))
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)


def test_audio_first_losses_match_torch():
    g, t = _run("audio_spectrogram"), _run_torch("audio_spectrogram")
    _close(g["losses"][:6], t["losses"][:6], rtol=1e-5, atol=0)
    _close(g["mfcc_losses"][:6], t["mfcc_losses"][:6], rtol=1e-5, atol=0)
    assert g["batch_shapes"] == t["batch_shapes"]


# ------------------------------------------------------------------ RWKV, linear attention


def test_rwkv_wkv_forms_agree():
    g = _run("rwkv_linear_attention")
    assert g["shift_agrees"]
    outputs, grads = g["wkv_outputs"], g["wkv_grads"]
    for name in ("parallel", "cumsum"):
        _close(outputs[name], outputs["loop"], rtol=1e-10, atol=1e-12)
        for ours, loop in zip(grads[name], grads["loop"]):
            _close(ours, loop, rtol=1e-9, atol=1e-12)
    assert g["gradcheck_wkv"] == {"loop": True, "parallel": True}
    # exp(200) overflows float32: the max trick and the softmax keep the weighted mean
    big = g["fixed_results"]["wkv_big"].numpy()
    assert np.isfinite(big).all()
    _close(g["fixed_results"]["wkv_big_parallel"], big, rtol=1e-6)


def test_rwkv_model_loop_parallel_and_rnn_agree():
    g = _run("rwkv_linear_attention")
    _close(g["mode_logits"]["parallel"], g["mode_logits"]["loop"], rtol=1e-5, atol=1e-5)
    loop, parallel = g["mode_grads"]["loop"], g["mode_grads"]["parallel"]
    assert loop.keys() == parallel.keys()
    for name in loop:
        scale = float(np.abs(loop[name].numpy()).max())
        _close(parallel[name], loop[name], rtol=1e-4, atol=1e-5 * scale)
    assert g["trained_mode_difference"] < 1e-4
    # generation carrying the state equals the full-sequence forward of what it generated
    assert tuple(g["generated"].shape) == (4, 15)
    assert g["rnn_difference"] < 1e-4
    state = g["final_state"]
    assert tuple(state.shape) == (10, 4, 32)


def test_rwkv_learns_the_recurrence():
    g = _run("rwkv_linear_attention")
    losses = g["losses"]
    assert len(losses) == g["max_iters"] == 150
    assert losses[0] > 0.9 * math.log(8)
    assert np.mean(losses[-10:]) < 0.05 * losses[0]
    assert g["val_loss"] < 0.1 and g["val_accuracy"] > 0.95
    assert g["rule_followed"]
    lrs = g["lrs"]
    assert lrs[0] == pytest.approx(6e-3 * 2 / 10) and lrs[-1] == pytest.approx(6e-3)
    # AdamW groups: the time_* and LayerNorm parameters are not decayed
    groups = g["optimizer"].param_groups
    assert [group["weight_decay"] for group in groups] == [0.01, 0.0]
    n_params = sum(len(group["params"]) for group in groups)
    assert n_params == len(list(g["model"].parameters()))


def test_linear_attention_forms_agree_and_learn():
    g = _run("rwkv_linear_attention")
    outputs, grads = g["la_outputs"], g["la_grads"]
    for name in ("quadratic", "recurrent"):
        _close(outputs[name], outputs["cumsum"], rtol=1e-10, atol=1e-12)
        for ours, ref in zip(grads[name], grads["cumsum"]):
            _close(ours, ref, rtol=1e-9, atol=1e-12)
    assert g["gradcheck_linear"]
    logits = g["lin_logits"]
    for name in ("quadratic", "recurrent"):
        _close(logits[name], logits["cumsum"], rtol=1e-4, atol=1e-5)
    lin_losses = g["lin_losses"]
    assert np.mean(lin_losses[-10:]) < 0.7 * np.mean(lin_losses[:10])


def test_rwkv_fixed_results_match_torch():
    g, t = _run("rwkv_linear_attention"), _run_torch("rwkv_linear_attention")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    ours["grads"], theirs["grads"] = dict(ours["grads"]), dict(theirs["grads"])
    # the embedding starts at 1e-4 and ln0 rescales it: its gradient spans 0.1 to 400, and
    # the small entries carry the large ones' rounding
    _close_scaled(ours["grads"].pop("emb.weight"), theirs["grads"].pop("emb.weight"))
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-6)


def test_rwkv_first_losses_match_torch():
    g, t = _run("rwkv_linear_attention"), _run_torch("rwkv_linear_attention")
    _close(g["losses"][:10], t["losses"][:10], rtol=1e-5, atol=0)
    _close(g["lin_losses"][:10], t["lin_losses"][:10], rtol=1e-5, atol=0)
    assert g["lrs"] == pytest.approx(t["lrs"], rel=1e-12)
