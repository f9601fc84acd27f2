"""Set J of the user scripts: a U-Net segmentation script, a TCN on the adding problem and a
fast style-transfer script, written for these tests in the way such PyTorch code is commonly
written (modelled on the API usage of milesial/Pytorch-UNet, locuslab/TCN and pytorch/examples'
fast_neural_style, not copies of them), run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that training lowered the loss, that the scripts' plumbing (data
sets, loaders, logging, checkpoints, the weight_norm hooks) did what they rely on, and, where
torch is installed, that the deterministic parts (fixed-weight forwards, losses, gradients,
clipped norms, RMSprop/Adam steps, the plateau scheduler) equal the same script's with
``import torch``. The jitgrad fixes these scripts needed have their regression tests here too.
"""

import importlib.util
import math
import os
import warnings
from unittest import mock

import numpy as np
import pytest

import jitgrad
from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

# (the U-Net and style scripts write their images as PNGs with Pillow, tensorboard's dependency)
needs_pil = pytest.mark.skipif(importlib.util.find_spec("PIL") is None,
                               reason="Pillow is not installed")

# ---------------------------------------------------------------- the U-Net (unet_milesial)


@needs_pil
def test_unet_trains_evaluates_and_checkpoints():
    g = _run("unet_milesial")
    torch = g["torch"]
    log, losses = g["log"], g["losses"]
    assert len(losses) == 2 * 32 // 4 and all(math.isfinite(v) for v in losses)
    assert np.mean(losses[-4:]) < 0.3 * np.mean(losses[:4]), losses
    model, args = g["model"], g["args"]
    assert (args.epochs, args.batch_size, args.lr, args.holdout, args.classes) == \
        (2, 4, 1e-3, 20.0, 2)
    # the data set scanned all 40 masks for their values; 32 images train an epoch
    assert log["masks_scanned"] == 40 and log["mask_values"] == [0, 255]
    assert log["epoch_images"] == [32, 32]
    # a validation round each step, over two batches of the 8 held out (drop_last)
    rounds = g["val_rounds"]
    assert [d["step"] for d in rounds] == list(range(1, 17))
    assert all(d["batches"] == 2 and 0 <= d["dice"] <= 1 for d in rounds)
    # ReduceLROnPlateau('max', patience=5) on the rounds' scores: lr / 10 after 6 bad rounds
    best, bad, lr = -math.inf, 0, 1e-3
    for d in rounds:
        score = d["dice"]
        best, bad = (score, 0) if score > best * (1 + 1e-4) else (best, bad + 1)
        if bad > 5:
            lr, bad = lr * 0.1, 0
        assert d["lr"] == pytest.approx(lr, rel=1e-12)
    # the transposed-convolution net in channels_last, its checkpoints, the resumed copy
    assert not model.bilinear and isinstance(model.decoders[0].grow, torch.nn.ConvTranspose2d)
    assert model.stem[0].weight.is_contiguous(memory_format=torch.channels_last)
    assert sorted(os.listdir(g["ckpt_dir"])) == ["unet_e1.pt", "unet_e2.pt"]
    assert g["resumed"]["epoch"] == 2 and g["resumed"]["mask_values"] == [0, 255]
    loaded = g["loaded"].state_dict()
    assert list(loaded) == list(model.state_dict())
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in loaded.items())
    assert tuple(g["prediction"].shape) == (32, 32)
    # the out-of-memory fallback retried with the stages checkpointed; the training run never
    # needed it
    assert g["fallback_calls"] == [False, True] and g["fallback_result"] == "done"
    assert not model.checkpoint_stages
    # torch.utils.checkpoint is a module (the function is torch.utils.checkpoint.checkpoint)
    assert g["module_call_error"] == "'module' object is not callable"


@needs_pil
def test_unet_fixed_parts_behave():
    g = _run("unet_milesial")
    r = g["fixed_results"]
    for key in ("transposed_2", "transposed_1", "bilinear_2", "bilinear_1"):
        v = r[key]
        one = key.endswith("_1")
        assert v["channels_last"] and v["scale"] == 1.0 and v["scaled_is_loss"]
        assert tuple(v["logits"].shape) == (2, int(key[-1]), 36, 36)
        assert v["losses"][1] < v["losses"][0] and v["norms"][1] < v["norms"][0]
        # one class: BCEWithLogitsLoss of float64 logits and the float32 mask is float32, as
        # torch's (the loss has the target's dtype); the validation restores training mode
        assert v["training_after_evaluate"]
        assert v["dtypes"] == ["jitgrad.float32" if one else "jitgrad.float64",
                               "jitgrad.float64"]
        assert 0 < v["dice"] < 1
    # a Dice score of two empty masks is 1; the plateau scheduler cut lr 10x after 6 bad rounds
    assert r["dice_coeff"][2] == 1.0
    assert r["plateau_lrs"] == pytest.approx([1e-3] * 8 + [1e-4] * 7 + [1e-5] * 3)
    # checkpointing every stage recomputes the same forward and gradients
    plain, ckpt = g["checkpointed"][False], g["checkpointed"][True]
    _close(ckpt["out"], plain["out"], rtol=1e-12, atol=1e-12)
    _close(ckpt["x_grad"], plain["x_grad"], rtol=1e-10, atol=1e-14)
    _close_nested(ckpt["grads"], plain["grads"], rtol=1e-10, atol=1e-14)


@needs_pil
def test_unet_fixed_weights_match_torch():
    g, t = _run("unet_milesial"), _run_torch("unet_milesial")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    for key in ("transposed_2", "transposed_1", "bilinear_2", "bilinear_1"):
        a, b = dict(ours.pop(key)), dict(theirs.pop(key))
        assert a.pop("dice") == pytest.approx(b.pop("dice"), rel=1e-6)
        assert [d.split(".")[1] for d in a.pop("dtypes")] == \
            [d.split(".")[1] for d in b.pop("dtypes")]
        # float32: 23 convolutions and 18 batch norms deep
        _close(a.pop("logits"), b.pop("logits"), rtol=1e-4, atol=5e-5)
        assert a.pop("loss") == pytest.approx(b.pop("loss"), rel=1e-6)
        # float64 (with one class, the float32 mask rounds the loss to float32)
        _close_nested(a.pop("grads"), b.pop("grads"), rtol=1e-5, atol=1e-9)
        _close_nested(a.pop("params"), b.pop("params"), rtol=1e-5, atol=1e-6)
        _close_nested(a.pop("running"), b.pop("running"), rtol=1e-5, atol=1e-7)
        _close_nested(a, b, rtol=1e-6, atol=1e-9)
    _close(ours.pop("dice_coeff"), theirs.pop("dice_coeff"), rtol=1e-6)
    _close(ours.pop("plateau_lrs"), theirs.pop("plateau_lrs"), rtol=0, atol=0)
    _close_nested(ours.pop("checkpoint"), theirs.pop("checkpoint"), rtol=1e-9, atol=1e-12)
    assert ours == theirs == {}
    assert g["module_call_error"] == t["module_call_error"]
    assert g["fallback_calls"] == t["fallback_calls"]


# ---------------------------------------------------------------- the TCN (tcn_adding)


def test_tcn_learns_the_adding_problem():
    g = _run("tcn_adding")
    torch = g["torch"]
    losses, test_losses = g["losses"], g["test_losses"]
    assert len(losses) == 4 * 63 and all(math.isfinite(v) for v in losses)
    # below the 1/6 of always answering 1 (the variance of the sum of two U(0, 1))
    assert test_losses[-1] < 0.5 * test_losses[0] and test_losses[-1] < 0.1, test_losses
    assert [e for e, _, _ in g["logged"]] == [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4]
    assert [n for _, n, _ in g["logged"][:3]] == [640, 1280, 1920]  # (every 20 batches of 32)
    model = g["model"]
    assert not g["args"].cuda and next(model.parameters()).device.type == "cpu"
    # the adding problem: two marked numbers of 20, their sum the target
    x, y = g["train_x"], g["train_y"]
    assert tuple(x.shape) == (2000, 2, 20) and tuple(y.shape) == (2000, 1)
    assert torch.equal(x[:, 1].sum(1), torch.full((2000,), 2.0))
    _close((x[:, 0] * x[:, 1]).sum(1, keepdim=True), y, rtol=1e-6)
    # three levels, dilations 1, 2, 4; causal: trimmed back to the input's length
    levels = model.levels
    assert [lv.first.conv.dilation for lv in levels] == [(1,), (2,), (4,)]
    assert [lv.first.trim for lv in levels] == [2, 4, 8]
    assert levels[0].project is not None and levels[1].project is None
    out = model.features(x[:2])
    assert tuple(out.shape) == (2, 16, 20)
    later = x[:2].clone()
    later[:, :, 10:] += 1.0  # the first 10 outputs see only the first 10 steps
    _close(model.features(later)[:, :, :10].detach(), out[:, :, :10].detach(), rtol=0, atol=0)


def test_tcn_weight_norm_hooks():
    g = _run("tcn_adding")
    r, fixed = g["fixed_results"], g["fixed"]
    # .data.normal_(0, 0.01) wrote into the hook's computed weight ...
    assert 0.005 < r["init_weight_std"] < 0.02
    # ... which the next forward recomputes from weight_g and weight_v
    _close(r["weight"], r["weight_from_g_v"], rtol=1e-6, atol=1e-7)
    assert r["weight_requires_grad"]
    conv = fixed.levels[0].first.conv
    assert tuple(conv.weight_g.shape) == (6, 1, 1) and tuple(conv.weight_v.shape) == (6, 2, 3)
    assert r["names"][:3] == ["levels.0.first.conv.bias", "levels.0.first.conv.weight_g",
                              "levels.0.first.conv.weight_v"]
    # (weight itself is no parameter, nor a buffer)
    assert r["names"] == r["state_dict"]
    assert not any(k.endswith("conv.weight") for k in r["state_dict"])
    assert all(v.abs().sum() > 0 for v in r["grads"].values())
    assert r["losses"][1] < r["losses"][0]


def test_tcn_fixed_weights_match_torch():
    g, t = _run("tcn_adding"), _run_torch("tcn_adding")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    ours.pop("init_weight_std"), theirs.pop("init_weight_std")  # (each library's normal_)
    for key in ("names", "state_dict", "weight_requires_grad"):
        assert ours.pop(key) == theirs.pop(key), key
    _close_nested(ours.pop("grads"), theirs.pop("grads"), rtol=1e-5, atol=1e-7)
    _close_nested(ours, theirs, rtol=1e-5, atol=1e-7)
    _close(g["fixed_x"], t["fixed_x"], rtol=0, atol=0)


# ---------------------------------------------------------------- the jitgrad fixes


def test_out_of_memory_error_and_empty_cache_as_torch():
    """train.py catches torch.cuda.OutOfMemoryError and calls torch.cuda.empty_cache()."""
    torch = pytest.importorskip("torch")
    for lib in (torch, jitgrad):
        for name in ("OutOfMemoryError", "AcceleratorError"):
            cls = getattr(lib, name)
            assert cls.__mro__[1:] == (RuntimeError, Exception, BaseException, object)
            assert cls.__module__ == lib.__name__ and cls.__name__ == name
        assert lib.cuda.OutOfMemoryError is lib.OutOfMemoryError
    assert jitgrad.OutOfMemoryError.__doc__ == torch.OutOfMemoryError.__doc__
    assert jitgrad.AcceleratorError.__doc__ == torch.AcceleratorError.__doc__
    assert jitgrad.cuda.empty_cache() is None  # (no tensor on the device: nothing to hand back)


def test_a_cuda_allocation_out_of_memory_raises_out_of_memory_error():
    from jitgrad import _cuda_array as ca

    class DriverError(Exception):
        def __init__(self, code):
            super().__init__(f"[{code}] Call to cuMemAlloc results in CUDA_ERROR")
            self.code = code

    class Context:
        def get_memory_info(self):
            return 3 << 30, 80 << 30

    class FakeCuda:
        def __init__(self, code):
            self.code = code

        def device_array(self, n, dtype):
            raise DriverError(self.code)

        def to_device(self, host):
            raise DriverError(self.code)

        def current_context(self):
            return Context()

    with mock.patch.object(ca, "cuda", lambda: FakeCuda(2)):
        with pytest.raises(jitgrad.cuda.OutOfMemoryError) as err:
            ca.empty((1 << 28, 5), np.float32)
    assert str(err.value) == ("CUDA out of memory. Tried to allocate 5.00 GiB. GPU 0 has a total "
                              "capacity of 80.00 GiB of which 3.00 GiB is free.")
    assert isinstance(err.value.__cause__, DriverError)
    with mock.patch.object(ca, "cuda", lambda: FakeCuda(2)):
        with pytest.raises(jitgrad.OutOfMemoryError, match="allocate 1.50 KiB"):
            ca.to_device(np.zeros(384, np.float32))
    with mock.patch.object(ca, "cuda", lambda: FakeCuda(700)):  # (other driver errors pass)
        with pytest.raises(DriverError):
            ca.empty((4,), np.float32)
    sizes = [512, 1024, 1536, 1 << 20, (1 << 20) + 512, 3 << 29]
    assert [ca.format_size(n) for n in sizes] == [
        "512 bytes", "1024 bytes", "1.50 KiB", "1024.00 KiB", "1.00 MiB", "1.50 GiB"]


def test_pin_memory_without_an_accelerator_warns_each_pass_as_torch():
    torch = pytest.importorskip("torch")
    if torch.accelerator.is_available() or jitgrad.accelerator.is_available():
        pytest.skip("an accelerator is present: pinned memory is used, nothing to warn of")
    texts = {}
    for lib in (torch, jitgrad):
        loader = lib.utils.data.DataLoader(list(range(4)), batch_size=2, pin_memory=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert len(list(loader)) == 2
            assert len(list(loader)) == 2
            list(lib.utils.data.DataLoader(list(range(4)), batch_size=2))
            list(lib.utils.data.DataLoader(list(range(4)), pin_memory=True,
                                           pin_memory_device="cpu"))
        texts[lib.__name__] = [(w.category, str(w.message)) for w in caught]
    assert len(texts["torch"]) == 4
    assert texts["jitgrad"] == texts["torch"]


# ---------------------------------------------------------- style transfer (fast_neural_style)


@needs_pil
def test_fast_neural_style_trains_checkpoints_and_stylizes():
    g = _run("fast_neural_style")
    torch = g["torch"]
    losses = g["losses"]
    assert len(losses) == 4 * 16 // 4 and all(math.isfinite(c) and math.isfinite(s)
                                              for c, s in losses)
    totals = [c + s for c, s in losses]
    assert totals[-1] < 0.85 * totals[0], totals  # (the style term, 1e10-weighted, dominates)
    root = g["data_root"]
    assert sorted(os.listdir(os.path.join(root, "ckpt"))) == [
        f"epoch{e}_batch{b}.pth" for e in range(4) for b in (2, 4)]
    # the trained net, saved after eval().cpu(): InstanceNorm2d(affine=True) keeps no running
    # statistics, so the state has no running_* key
    model, path = g["trained"]["model"], g["trained"]["path"]
    assert not model.training and model.encode[1].running_mean is None
    state = torch.load(path)
    assert list(state) == list(model.state_dict()) and not any("running" in k for k in state)
    # stylize: the first image through the loaded net, clamped and saved as an 8-bit PNG
    out = g["stylized"]["output"]
    assert tuple(g["stylized"]["input"].shape) == (1, 3, 40, 40)
    assert tuple(out.shape) == (1, 3, 40, 40)
    with torch.no_grad():
        _close(model(g["stylized"]["input"]), out, rtol=1e-6, atol=1e-5)
    saved = np.asarray(g["Image"].open(os.path.join(root, "out.png")))
    np.testing.assert_array_equal(saved, out[0].clamp(0, 255).numpy().transpose(1, 2, 0)
                                  .astype("uint8"))


@needs_pil
def test_fast_neural_style_fixed_parts_behave():
    g = _run("fast_neural_style")
    torch = g["torch"]
    r = g["fixed_results"]
    assert r["feature_names"] == ["relu1_2", "relu2_2", "relu3_3", "relu4_3"]
    assert [tuple(f.shape) for f in r["features"]] == [(2, 8, 32, 32), (2, 16, 16, 16),
                                                       (2, 32, 8, 8), (2, 64, 4, 4)]
    assert all(v is None for v in r["vgg_grads"])  # (the loss network's requires_grad_(False))
    assert r["buffers"] == []
    # a Gram matrix: features times their transpose over ch * h * w, symmetric
    for gram, ch in zip(r["gram_style"], (8, 16, 32, 64)):
        assert tuple(gram.shape) == (2, ch, ch)
        _close(gram, gram.transpose(1, 2), rtol=1e-12, atol=0)
    # the normalization divides its argument in place
    batch = torch.full((1, 3, 2, 2), 255.0)
    normalized = g["imagenet_normalize"](batch)
    assert batch.eq(1.0).all()
    _close(normalized[0, :, 0, 0], (1 - np.array([0.485, 0.456, 0.406]))
           / np.array([0.229, 0.224, 0.225]), rtol=1e-6)
    # a conv bias before an InstanceNorm2d has no effect, so no gradient (rounding only); the
    # last convolution's has
    grads = r["grads"]
    top = max(float(v.abs().max()) for v in grads.values())
    assert float(grads["encode.3.conv.bias"].abs().max()) < 1e-12 * top
    assert float(grads["decode.6.conv.bias"].abs().max()) > 0.1 * top


@needs_pil
def test_fast_neural_style_fixed_weights_match_torch():
    g, t = _run("fast_neural_style"), _run_torch("fast_neural_style")
    ours, theirs = dict(g["fixed_results"]), dict(t["fixed_results"])
    for key in ("feature_names", "buffers", "vgg_grads"):
        assert ours.pop(key) == theirs.pop(key), key
    _close(ours.pop("output32"), theirs.pop("output32"), rtol=1e-5, atol=1e-5)  # (float32)
    # float64 from here. The biases before an InstanceNorm have rounding for a gradient, which
    # Adam's first step, lr * g / (|g| + eps), turns into a full step either way: they are
    # compared as gradients (both at rounding level), not as parameters after the steps
    grads, t_grads = ours.pop("grads"), theirs.pop("grads")
    top = max(float(v.abs().max()) for v in t_grads.values())
    flat = {k for k, v in t_grads.items() if float(v.abs().max()) < 1e-12 * top}
    # (the three encoding and two upsampling convolutions, each residual block's two
    # convolutions and its second InstanceNorm2d's bias, whose constant the next norm removes)
    assert len(flat) == 20
    assert all(float(grads[k].abs().max()) < 1e-12 * top for k in flat)
    # the gradients run to 1e8 (the style weight is 1e10); an entry is a sum of terms of its
    # tensor's scale, so its float64 rounding is some epsilons of that scale, whatever its own
    # size: the absolute tolerance is 1e-14 of the tensor's largest entry (about 50 epsilons)
    assert grads.keys() == t_grads.keys()
    for k in sorted(set(t_grads) - flat):
        scale = float(t_grads[k].abs().max())
        _close(grads[k], t_grads[k], rtol=1e-9, atol=1e-14 * scale)
    params, t_params = ours.pop("params"), theirs.pop("params")
    _close_nested({k: v for k, v in params.items() if k not in flat},
                  {k: v for k, v in t_params.items() if k not in flat}, rtol=1e-9, atol=1e-12)
    for key in ("features", "gram_style"):  # (lists of tensors of several shapes)
        for a, b in zip(ours.pop(key), theirs.pop(key), strict=True):
            _close(a, b, rtol=1e-10, atol=1e-12)
    _close_nested(ours, theirs, rtol=1e-10, atol=1e-12)
