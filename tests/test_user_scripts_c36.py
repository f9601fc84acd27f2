"""Scripts written for these tests in the way common PyTorch code of one kind is written (set
C36: image augmentation pipelines written by hand with tensor ops, no torchvision), run on
jitgrad.

The script in tests/scripts/ runs as ``__main__``; these tests read what it computed from its
globals and assert that the resize modes keep their invariants (nearest x2 is
``repeat_interleave``, area halving is ``avg_pool2d``, ``align_corners=True`` keeps the corners,
antialiasing removes a checkerboard), that pads, crops, flips and quarter turns agree with
each other (circular padding is ``roll``, an integer shift through ``grid_sample`` is padding
plus a slice, a quarter-turn grid is ``rot90``), that the HSV conversion round-trips and
mixup/CutMix targets are distributions matching the pasted area, that the gradients of
``interpolate``/``grid_sample``/``affine_grid``/``pad`` pass ``gradcheck``, that a small CNN
learns from mixed batches and a registration recovers its affine matrix; and, where torch is
installed, that every fixed-input result (outputs and gradients) equals the same script's with
``import torch``.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run


def _close_scaled_nested(ours, theirs, rtol):
    """Key by key, close to rtol of each entry or of the tensor's largest entry: the bicubic
    kernels and grid_sample's grid gradients sum 16 float32 products whose order differs, so
    entries that nearly cancel keep only an absolute agreement."""
    if isinstance(theirs, dict):
        assert ours.keys() == theirs.keys()
        for key in theirs:
            _close_scaled_nested(ours[key], theirs[key], rtol)
        return
    expected = np.asarray(theirs, dtype=np.float64)
    scale = float(np.abs(expected).max()) if expected.size else 0.0
    _close(ours, expected, rtol=rtol, atol=rtol * max(scale, 1e-3))


def test_augment_resize_modes_keep_their_invariants():
    g = _run("augment_by_hand")
    c, r = g["checks"], g["fixed_results"]["resize"]
    for name in ("nearest_x2_is_repeat", "area_half_is_avg_pool", "area_adaptive",
                 "align_corners_keeps_corners", "antialias_keeps_flat", "bicubic_overshoots",
                 "recompute_changes_values"):
        assert c[name] is True, name
    # 12x16 by 1.7: floor(20.4) x floor(27.2), recomputed or not
    assert c["odd_sizes"] == ((20, 27), (20, 27))
    # a one-pixel checkerboard aliases without antialiasing and is smoothed flat with it
    assert c["checker_std_plain"] > 0.4 and c["checker_std_antialias"] < 0.01
    assert tuple(r["nearest_down"].shape) == (4, 3, 7, 9)
    assert tuple(r["area_sf_tuple"].shape) == (4, 3, 18, 12)
    assert tuple(r["1d_linear_down"].shape) == (2, 3, 5)
    assert tuple(r["3d_trilinear_sf"].shape) == (1, 2, 6, 3, 10)
    assert tuple(r["upsample_bilinear2d"].shape) == (4, 3, 18, 24)
    # bilinear and area stay inside the input's range, bicubic need not
    images = g["images"]
    for key in ("bilinear_ac0_up", "bilinear_antialias", "area_down", "nearest-exact_up"):
        assert float(r[key].min()) >= float(images.min()) - 1e-6, key
        assert float(r[key].max()) <= float(images.max()) + 1e-6, key


def test_augment_pads_crops_flips_and_warps_agree():
    g = _run("augment_by_hand")
    c = g["checks"]
    for name in ("circular_is_roll", "reflect_mirrors", "affine_crop_matches_resize",
                 "shift_is_pad_slice", "shift_zeros_border", "rot90_four_times",
                 "rot90_is_flip_transpose", "rot_neg_is_rot_3", "flip_twice", "blur_keeps_mean",
                 "blur_smooths"):
        assert c[name] is True, name
    for mode in ("bilinear", "nearest", "bicubic"):
        for ac in (0, 1):
            assert c[f"identity_{mode}_ac{ac}"] is True, (mode, ac)
    assert c["quarter_turn_is_rot90"] == [1]
    crop = g["fixed_results"]["crop"]
    assert tuple(crop["padded_crops"].shape) == (4, 3, 12, 16)
    assert 0 <= int(crop["tops"].min()) and int(crop["tops"].max()) <= 8
    assert 0 <= int(crop["lefts"].min()) and int(crop["lefts"].max()) <= 8
    assert tuple(crop["rrc"].shape) == (4, 3, 8, 8)
    for top, left, h, w in g["rrc_boxes"]:
        assert 0 <= top and top + h <= 12 and 0 <= left and left + w <= 16
        assert 0.3 * 192 * 0.8 <= h * w <= 192
    # an impossible aspect ratio falls back to the centre square
    assert g["fallback_box"] == (0, 2, 12, 12)
    # the same seed draws the same boxes
    torch = g["torch"]
    boxes = [g["random_resized_crop_box"](12, 16, (0.3, 1.0), (0.75, 4 / 3),
                                          torch.Generator().manual_seed(5)) for _ in range(2)]
    assert boxes[0] == boxes[1]
    pads = g["fixed_results"]["pad"]
    assert tuple(pads["5d_circular"].shape) == (1, 2, 6, 9, 8)
    assert tuple(pads["3d_reflect"].shape) == (3, 15, 21)
    assert tuple(pads["negative"].shape) == (4, 3, 10, 15)
    assert tuple(pads["constant_channels"].shape) == (4, 4, 12, 16)
    warps = g["fixed_results"]["affine"]
    assert tuple(warps["bicubic_reflection_ac1_small"].shape) == (4, 3, 9, 11)
    assert tuple(warps["3d_nearest_border_ac0"].shape) == (1, 2, 5, 4, 6)
    # zeros padding leaves black corners after a rotation; border/reflection do not
    zeros = warps["bilinear_zeros_ac0"].numpy()
    assert (zeros == 0).any() and not (warps["bilinear_border_ac0"].numpy() == 0).any()


def test_augment_color_jitter_and_mixing():
    g = _run("augment_by_hand")
    c = g["checks"]
    assert c["hsv_roundtrip_error"] < 1e-5 and c["full_hue_turn"] < 1e-5
    assert c["primary_hues"] == [0.0, 0.3333, 0.6667, 0.1667, 0.0, 0.0]
    assert c["gray_has_no_saturation"] < 1e-6
    assert c["jitter_in_range"] is True
    color = g["fixed_results"]["color"]
    assert sorted(color["order"].tolist()) == [0, 1, 2, 3]
    hsv = color["hsv"].numpy()
    assert hsv[:, 0].min() >= 0 and hsv[:, 0].max() < 1 and hsv[:, 1:].max() <= 1
    for name in ("mix_targets_sum_to_one", "cut_targets_sum_to_one", "cut_area_matches_lam"):
        assert c[name] is True, name
    mix = g["fixed_results"]["mix"]
    lam = float(mix["lam"])
    assert 0.0 < lam < 1.0
    targets = mix["targets"].numpy()
    # each row is lam * its label + (1 - lam) * its partner's: one peak of 1 or of max(lam, 1-lam)
    for peak in targets.max(1):
        assert min(abs(peak - 1.0), abs(peak - max(lam, 1 - lam))) < 1e-6
    y0, y1, x0, x1 = mix["cut_box"].tolist()
    assert 0 <= y0 <= y1 <= 12 and 0 <= x0 <= x1 <= 16
    assert float(mix["cut_lam"]) == pytest.approx(1 - (y1 - y0) * (x1 - x0) / 192)
    samples = mix["beta_samples"].numpy()
    assert samples.shape == (3, 2) and ((samples > 0) & (samples < 1)).all()
    _close(mix["beta_mean"], [0.5, 2 / 7], rtol=1e-6)


def test_augment_gradients_training_and_registration():
    g = _run("augment_by_hand")
    assert all(g["gradcheck_results"].values()), g["gradcheck_results"]
    assert len(g["gradcheck_results"]) == 12
    losses = g["train_losses"]
    assert len(losses) == 24 and np.mean(losses[-6:]) < 0.75 * np.mean(losses[:6])
    assert g["test_accuracy"] >= 0.9
    reg = g["registration_losses"]
    assert len(reg) == 40 and reg[-1] < 0.05 * reg[0]
    assert g["registration_error"] < 0.03
    grads = g["fixed_results"]["grad"]
    # every gradient is finite; nearest sampling has none w.r.t. the grid; constant padding
    # passes 2x straight back from sum(pad(x) ** 2)
    for key, value in grads.items():
        assert np.isfinite(value.numpy()).all(), key
    assert float(grads["nearest_13x17"].abs().sum()) > 0
    assert float(grads["gs_nearest_zeros_ac0_theta"].abs().max()) == 0.0  # nearest: no grid grad
    assert math.isclose(float(grads["pad_constant"].sum()),
                        2 * float(g["x_req"].detach().sum()), rel_tol=1e-5)


def test_augment_fixed_results_match_torch():
    g, t = _run("augment_by_hand"), _run_torch("augment_by_hand")
    ours, theirs = g["fixed_results"], t["fixed_results"]
    assert ours.keys() == theirs.keys()
    # copies, pads, flips, crops, the random draws and the integer results: exactly
    for section in ("pad", "flip"):
        _close_scaled_nested(ours[section], theirs[section], rtol=0)
    resampled = ("rrc", "grid_crops")
    for key in theirs["crop"]:
        _close_scaled_nested(ours["crop"][key], theirs["crop"][key],
                             rtol=1e-5 if key in resampled else 0)
    _close_scaled_nested(ours["mix"]["rng_state"], theirs["mix"]["rng_state"], rtol=0)
    # arithmetic: float32 to 1e-5 of each tensor's largest entry, float64 to 1e-10
    for section in ("resize", "affine", "blur", "color", "mix", "train", "grad", "registration"):
        _close_scaled_nested(ours[section], theirs[section], rtol=1e-5)
    _close(ours["resize"]["bicubic_f64"], theirs["resize"]["bicubic_f64"], rtol=1e-10,
           atol=1e-12)
    assert g["gradcheck_results"] == t["gradcheck_results"]
    for key, value in t["checks"].items():
        if isinstance(value, float):
            assert g["checks"][key] == pytest.approx(value, rel=1e-4, abs=1e-6), key
        else:
            assert g["checks"][key] == value, key
    _close(g["train_losses"][:4], t["train_losses"][:4], rtol=1e-5)
