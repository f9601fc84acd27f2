"""A script written for these tests in the way public PyTorch video and volumetric code is
written (set E36: torchvision-style R(2+1)D / C3D video ResNets, a 3D U-Net for segmentation,
TSM's temporal shift, in plain torch), run on jitgrad.

The script in tests/scripts/ runs as ``__main__``; these tests read what it computed from its
globals and assert that Conv3d's padding modes equal explicit ``F.pad`` + ``conv3d``, that the
(2+1)D factorisation is a conv of rank-one kernels, that BatchNorm3d's cumulative statistics
are the batch means, that max-pool indices address the pooled values and max-unpool puts them
back, that a transposed conv is the conv's adjoint, that the three temporal shifts agree (and
the in-place one's backward passes gradcheck), that float64 gradcheck passes on the 3-D ops,
that the 3D U-Net's Dice and the video classifiers' accuracy improve as their losses fall; and,
where torch is installed, that the fixed-weight results, shapes, learning rates and first
losses equal the same script's with ``import torch``.
"""

import math

import numpy as np
import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

SCRIPT = "video_volumetric"


def _close_scaled(ours, theirs, rtol=1e-5):
    """Close to rtol of each entry or of the tensor's largest entry."""
    scale = float(np.abs(np.asarray(theirs, dtype=np.float64)).max())
    _close(ours, theirs, rtol=rtol, atol=rtol * scale)


def _out(size, kernel, stride=1, padding=0, dilation=1):
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def test_conv3d_variants_and_factorisation():
    g = _run(SCRIPT)
    shapes = g["conv_shapes"]
    assert shapes["stride"] == (1, 4, 4, 3, 3)
    assert shapes["dilation"] == (1, 3, _out(4, 2), _out(6, 3, 1, 2, 2), _out(6, 3, 1, 2, 2))
    assert shapes["groups"] == (1, 4, 4, 6, 6)
    for name in ("same", "same_even", "same_dilated", "replicate"):
        assert shapes[name] == (1, 3, 4, 6, 6), name
    assert shapes["circular"] == (1, 3, 4, 8, 6)
    assert shapes["reflect"] == (1, 3, 2, 3, 3)
    # a padding mode is F.pad of the input then an unpadded conv
    assert g["replicate_by_hand_error"] < 1e-12
    assert g["circular_by_hand_error"] < 1e-12
    # spatial (1,3,3) then temporal (3,1,1) with nothing between is one 3x3x3 conv
    assert g["factorised_error"] < 1e-12
    assert g["midplanes"] == {(64, 64): 144, (3, 45): 22, (128, 256): 460}


def test_batchnorm3d_and_norms():
    g = _run(SCRIPT)
    assert g["bn_batches_tracked"] == 3
    # momentum=None keeps the cumulative average of the batch means
    assert g["cumulative_mean_error"] < 1e-12
    # InstanceNorm is GroupNorm with one channel per group
    assert g["instance_vs_group_error"] < 1e-12
    r = g["fixed_results"]["batchnorm3d"]
    # eval mode uses the running statistics: (x - mean) / sqrt(var + eps) with weight 1, bias 0
    x = g["batches"][0].numpy()
    expected = (x - r["running_mean"].numpy()[:, None, None, None]) / np.sqrt(
        r["running_var"].numpy()[:, None, None, None] + 1e-5)
    _close(r["eval_out"], expected, rtol=1e-10, atol=1e-12)
    # train mode normalises each channel over (N, T, H, W)
    out = r["train_out"][2].numpy()
    _close(out.mean(axis=(0, 2, 3, 4)), np.zeros(3), rtol=0, atol=1e-12)
    _close(out.var(axis=(0, 2, 3, 4)), np.ones(3), rtol=1e-4)


def test_pool3d_indices_unpool_and_shapes():
    g = _run(SCRIPT)
    assert g["gather_error"] == 0 and g["unpool_matches"]
    s = g["pool_shapes"]
    assert s["max"] == (2, 2, 3, 4, 4) and s["max_indices"] == s["max"]
    assert s["unpool"] == (2, 2, 5, 7, 7) and s["unpool_ceil"] == (2, 2, 5, 7, 7)
    assert s["max_ceil"] == (2, 2, 3, 4, 4) and s["avg_ceil"] == (2, 2, 3, 4, 4)
    assert s["avg_ceil_no_pad"] == (2, 2, 5, 4, 4)
    assert s["adaptive_avg_none"] == (2, 2, 1, 7, 7)
    assert s["adaptive_max_ri"] == (2, 2, 2, 3, 3)
    r = g["fixed_results"]["pool"]
    v = g["v"].detach().numpy()
    # unpool: zero except at the argmax positions, which hold the max values
    restored = r["unpool"].numpy()
    assert np.count_nonzero(restored) <= r["max"].numel()
    assert set(np.unique(restored[restored != 0])) <= set(v.ravel())
    # count_include_pad=False divides a corner window by the voxels it covers (2*2*2)
    _close(r["avg_no_pad_count"][:, :, 0, 0, 0], v[:, :, :2, :2, :2].mean(axis=(2, 3, 4)),
           rtol=1e-12)
    _close(r["avg_pad_count"][:, :, 0, 0, 0], v[:, :, :2, :2, :2].sum(axis=(2, 3, 4)) / 27,
           rtol=1e-12)
    _close(r["avg_divisor"][:, :, 0, 0, 0], v[:, :, :2, :2, :2].sum(axis=(2, 3, 4)) / 3,
           rtol=1e-12)
    _close(r["adaptive_avg_one"].reshape(2, 2), v.mean(axis=(2, 3, 4)), rtol=1e-12)
    _close(r["adaptive_max_ri"][:, :, 0, 0, 0], v[:, :, :3, :3, :3].max(axis=(2, 3, 4)),
           rtol=0)


def test_conv_transpose3d_and_interpolate():
    g = _run(SCRIPT)
    assert g["transpose_shapes"] == {
        "stride2": (1, 2, 4, 6, 6), "output_padding": (1, 3, 4, 6, 6),
        "mixed": (1, 2, 2, 6, 5), "groups_dilation": (1, 4, 3, 7, 5),
        "output_size": (1, 2, 4, 6, 6)}
    assert g["adjoint_error"] < 1e-12
    assert g["corner_error"] < 1e-12 and g["nearest_repeat"]
    s = g["interp_shapes"]
    assert s["trilinear"] == s["trilinear_ac"] == s["nearest"] == (1, 4, 4, 6, 6)
    assert s["trilinear_size"] == (1, 4, 3, 5, 7) and s["trilinear_frac"] == (1, 4, 2, 4, 7)
    assert s["nearest_frac"] == (1, 4, 4, 4, 1) and s["upsample_module"] == (1, 4, 2, 6, 6)
    r = g["fixed_results"]["interpolate"]
    # trilinear is separable: one linear-interpolation matrix per axis (half-pixel centres)
    y = g["y"].detach().numpy()
    for name, size, corners in (("trilinear_down", (1, 2, 2), False),
                                ("trilinear_size", (3, 5, 7), False),
                                ("trilinear_size_ac", (3, 5, 7), True)):
        expected = np.einsum("ai,bj,ck,nmijk->nmabc",
                             *(_linear_matrix(n, m, corners) for n, m in zip(y.shape[2:], size)),
                             y)
        _close(r[name], expected, rtol=1e-12, atol=1e-12)


def _linear_matrix(n_in, n_out, align_corners):
    if align_corners:
        src = np.arange(n_out) * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        src = np.maximum((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0)
    lo = np.minimum(np.floor(src).astype(int), n_in - 1)
    hi = np.minimum(lo + 1, n_in - 1)
    frac = src - lo
    m = np.zeros((n_out, n_in))
    m[np.arange(n_out), lo] += 1 - frac
    m[np.arange(n_out), hi] += frac
    return m


def test_pad_layouts_and_temporal_shift():
    g = _run(SCRIPT)
    pad = g["fixed_results"]["pad"]
    y = g["y"].detach().numpy()
    assert tuple(pad["constant"].shape) == (1, 4, 4, 4, 6)
    assert (pad["constant"].numpy()[:, :, 0] == -0.5).all()
    _close(pad["replicate"].numpy()[:, :, 1:-1, :3, 1:4], y, rtol=0)
    _close(pad["reflect"].numpy()[:, :, 0, :3, 1:4], y[:, :, 1], rtol=0, atol=0)
    _close(pad["circular"].numpy()[:, :, 0, :3, 1:4], y[:, :, -1], rtol=0, atol=0)
    _close(pad["circular"].numpy()[:, :, 1:-1, 3, 1:4], y[:, :, :, 0], rtol=0, atol=0)
    _close(pad["negative"].numpy(), np.pad(y[..., :-1, 1:], ((0, 0),) * 3 + ((1, 0), (0, 0))),
           rtol=0)
    assert g["layout_roundtrip"] and g["layout_transpose"] and g["layout_flatten"]
    assert not g["bcthw_is_contiguous"]
    assert g["shift_forms_agree"] and g["shift_semantics"] and g["roll_wraps"]
    assert tuple(g["fixed_results"]["temporal_pool"].shape) == (4, 8, 3, 3)


def test_gradcheck_3d_ops():
    g = _run(SCRIPT)
    results = g["gradcheck_results"]
    assert results == {name: True for name in results}
    assert len(results) == 15
    assert g["gradgradcheck_conv3d"]
    curvature = g["pool_curvature"]
    for name in ("max_pool3d", "adaptive_max_pool3d", "relu_max_pool3d"):
        assert tuple(curvature[name].shape) == (1, 2, 2, 4, 4)
        assert float(curvature[name].abs().max()) == 0.0, name
    # the Hessian of sum(maxpool(x)^2): 2 on the diagonal at each window's argmax, else 0
    hessian = curvature["hessian"].numpy().reshape(64, 64)
    assert (np.diag(hessian) == 2).sum() == 8 and np.abs(hessian).sum() == 16


def test_multiclass_segmentation_losses():
    g = _run(SCRIPT)
    counts = g["seg_label_counts"]
    assert len(counts) == 3 and min(counts) > 0 and sum(counts) == 8 * 4 * 8 * 8
    r = g["fixed_results"]["segmentation"]
    assert tuple(r["logits"].shape) == (8, 3, 4, 8, 8)
    assert 0 < float(r["dice"]) < 1 and 0 < float(r["region_dice"]) < 1 and float(r["ce"]) > 0


def test_pool_curvature_matches_torch():
    g, t = _run(SCRIPT), _run_torch(SCRIPT)
    _close_nested(g["pool_curvature"], t["pool_curvature"], rtol=0, atol=0)


def test_unet3d_learns_the_blobs():
    g = _run(SCRIPT)
    losses, dice = g["unet_losses"], g["unet_dice_losses"]
    assert len(losses) == 16
    assert losses[-1] < 0.6 * losses[0]
    assert all(b < a for a, b in zip(losses[:10], losses[1:11]))  # Adam on one batch: falls
    assert dice[-1] < dice[0] - 0.15
    assert g["dice_after"] > g["dice_before"] + 0.25
    assert g["unet_output_shape"] == (4, 1, 4, 8, 8)


def test_video_classifiers_learn_the_direction():
    g = _run(SCRIPT)
    losses = g["video_losses"]
    assert len(losses) == 16
    assert losses[0] == pytest.approx(math.log(4), abs=0.05)  # Linear init normal(0, 0.01)
    assert np.mean(losses[-4:]) < 0.7 * np.mean(losses[:4])
    assert g["train_accuracy"] >= 0.75
    # precise BN: two cumulative batches per BatchNorm3d, and it helped the eval accuracy
    assert g["precise_bn_batches"] == [2] * 11
    assert g["train_accuracy"] >= g["eval_accuracy_before_precise_bn"]
    assert g["video_lrs"] == pytest.approx([0.1 * 0.5 ** ((i + 1) // 6) for i in range(16)])
    tsm_losses, tsm_lrs = g["tsm_losses"], g["tsm_lrs"]
    assert np.mean(tsm_losses[-4:]) < 0.8 * np.mean(tsm_losses[:4])
    assert g["tsm_train_accuracy"] > 0.4  # (chance: 0.25)
    expected = [1e-3 + (0.1 - 1e-3) * (1 + math.cos(math.pi * (i + 1) / 16)) / 2
                for i in range(16)]
    assert tsm_lrs == pytest.approx(expected, rel=1e-9)
    assert g["feature_shapes"] == {"stem": (2, 8, 4, 4, 4), "layer1": (2, 8, 4, 4, 4),
                                   "layer2": (2, 12, 2, 2, 2), "avgpool": (2, 12, 1, 1, 1)}


def test_video_volumetric_fixed_results_match_torch():
    g, t = _run(SCRIPT), _run_torch(SCRIPT)
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    # float32 models (the videos and blobs come from float32 exp/rand: one-ulp differences)
    for key in ("unet_logits", "unet_loss", "unet_trilinear_logits", "video_logits",
                "c3d_logits", "tsm_logits"):
        _close_scaled(ours.pop(key), theirs.pop(key))
    for key in ("unet_grads", "video_grads"):
        a, b = ours.pop(key), theirs.pop(key)
        assert a.keys() == b.keys()
        for name in b:
            if name.startswith(("enc1", "dec1")) and name.endswith(("0.bias", "3.bias")):
                # a conv bias before InstanceNorm: its gradient is zero but for rounding
                assert np.abs(a[name].numpy()).max() < 1e-7 > np.abs(b[name].numpy()).max()
                continue
            _close_scaled(a[name], b[name])
    seg, seg_theirs = ours.pop("segmentation"), theirs.pop("segmentation")
    for key in seg_theirs:
        _close_scaled(seg[key], seg_theirs[key])
    seg, seg_theirs = ours.pop("segmentation_grads"), theirs.pop("segmentation_grads")
    for key in seg_theirs:
        _close_scaled(seg[key], seg_theirs[key])
    # the rest is float64
    _close_nested(ours, theirs, rtol=1e-10, atol=1e-12)


def test_video_volumetric_shapes_lrs_and_first_losses_match_torch():
    g, t = _run(SCRIPT), _run_torch(SCRIPT)
    for key in ("conv_shapes", "pool_shapes", "transpose_shapes", "interp_shapes",
                "feature_shapes", "midplanes", "bn_batches_tracked", "precise_bn_batches"):
        assert g[key] == t[key], key
    assert g["video_lrs"] == pytest.approx(t["video_lrs"], rel=1e-12)
    assert g["tsm_lrs"] == pytest.approx(t["tsm_lrs"], rel=1e-12)
    _close(g["unet_losses"][:8], t["unet_losses"][:8], rtol=1e-5, atol=0)
    # (float32 SGD at lr 0.1 through train-mode BatchNorm: later steps amplify one-ulp
    # differences in the data, as two torch builds would)
    _close(g["video_losses"][:4], t["video_losses"][:4], rtol=1e-5, atol=0)
    _close(g["tsm_losses"][:4], t["tsm_losses"][:4], rtol=1e-5, atol=0)
