"""torch.fake_quantize_per_tensor_affine / fake_quantize_per_channel_affine: values and the
straight-through gradient against a NumPy reference and against torch (every dtype, both
per-tensor overloads, int and float zero points, inf/NaN/out-of-range inputs, exact ties),
torch's errors, and the op under jit, vmap, forward-mode AD and a quantization-aware training
loop."""

import warnings

import numpy as np
import pytest

import jitgrad

FLOATS = ["float32", "float64", "float16", "bfloat16"]
RANGES = [(-128, 127), (0, 255), (0, 15), (-8, 7)]


def _inputs(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((4, 5, 3)) * rng.choice([0.1, 1.0, 10.0, 100.0])
    if seed % 3 == 0:
        a.flat[:6] = [np.inf, -np.inf, np.nan, 1e30, 3e9, -3e9]
    if seed % 4 == 1:
        a = np.round(a * 20) / 20  # ties at scale 0.1: x / scale lands on .5
    return a


def _call(lib, variant, x, seed):
    rng = np.random.default_rng(1000 + seed)
    quant_min, quant_max = RANGES[seed % 4]
    scale = float(rng.choice([0.1, 0.05, 1.0, 0.0123, 3.7]))
    zero_point = int(rng.integers(quant_min, quant_max + 1))
    if variant == "scalars":
        return lib.fake_quantize_per_tensor_affine(x, scale, zero_point, quant_min, quant_max)
    if variant == "tensors":
        return lib.fake_quantize_per_tensor_affine(
            x, lib.tensor(scale), lib.tensor(zero_point, dtype=lib.int32), quant_min, quant_max)
    axis = seed % 3
    n = x.shape[axis]
    scales = lib.tensor(rng.uniform(0.01, 1.0, n).astype(np.float32))
    points = rng.integers(quant_min, quant_max, n).astype(np.int32)
    if variant == "channels_float_zero":
        points = points.astype(np.float32) + np.float32(0.3)
    return lib.fake_quantize_per_channel_affine(x, scales, lib.tensor(points), axis, quant_min,
                                                quant_max)


VARIANTS = ["scalars", "tensors", "channels", "channels_float_zero"]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_values_gradients_and_nodes_match_torch(dtype, variant):
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    for seed in range(12):
        a = _inputs(seed)
        x_t = torch.tensor(a).to(getattr(torch, dtype)).requires_grad_()
        x_j = jitgrad.tensor(a).to(getattr(jitgrad, dtype)).requires_grad_()
        y_t, y_j = _call(torch, variant, x_t, seed), _call(jitgrad, variant, x_j, seed)
        assert str(y_j.dtype).split(".")[-1] == str(y_t.dtype).split(".")[-1]
        assert y_j.grad_fn.name() == y_t.grad_fn.name()
        # bitwise: the same float32 arithmetic as torch's kernels
        np.testing.assert_array_equal(y_j.detach().double().numpy(),
                                      y_t.detach().double().numpy())
        g = np.random.default_rng(seed).standard_normal(a.shape)
        (g_t,) = torch.autograd.grad(y_t, x_t, torch.tensor(g).to(x_t.dtype))
        (g_j,) = jitgrad.autograd.grad(y_j, x_j, jitgrad.tensor(g).to(x_j.dtype))
        np.testing.assert_array_equal(g_j.double().numpy(), g_t.double().numpy())


def test_reference_values_and_straight_through_gradient():
    """Against NumPy: round half to even, clamp, and a gradient that passes exactly where the
    code was in range (scale a power of two, so float32 and float64 agree)."""
    x = jitgrad.tensor([-3.0, -1.125, -0.375, -0.125, 0.125, 0.375, 0.625, 1.6, 2.0, 9.0],
                       requires_grad=True)
    y = jitgrad.fake_quantize_per_tensor_affine(x, 0.25, 2, -8, 7)
    codes = np.rint(x.detach().numpy() / 0.25) + 2
    expected = (np.clip(codes, -8, 7) - 2) * 0.25
    np.testing.assert_array_equal(y.detach().numpy(), expected)
    assert y.detach().numpy()[3] == 0.0 and y.detach().numpy()[4] == 0.0  # -0.5, 0.5 -> 0
    y.backward(jitgrad.arange(1.0, 11.0))
    inside = (codes >= -8) & (codes <= 7)
    np.testing.assert_array_equal(x.grad.numpy(), np.where(inside, np.arange(1.0, 11.0), 0.0))
    assert not inside.all() and inside.any()
    # per channel: each slice along axis 0 has its own scale and zero point
    w = jitgrad.tensor([[0.3, -0.3, 5.0], [0.3, -0.3, 5.0]], requires_grad=True)
    q = jitgrad.fake_quantize_per_channel_affine(
        w, jitgrad.tensor([0.5, 0.125]), jitgrad.tensor([0, -4], dtype=jitgrad.int32), 0,
        -4, 3)
    np.testing.assert_array_equal(q.detach().numpy(), [[0.5, -0.5, 1.5], [0.25, 0.0, 0.875]])
    q.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [[1, 1, 0], [1, 0, 0]])  # -6 < -4: clamped


def test_output_layout_follows_the_input():
    torch = pytest.importorskip("torch")
    a = np.arange(12.0).reshape(3, 4) / 7
    for lib in (torch, jitgrad):
        x = lib.tensor(a).t()
        y = lib.fake_quantize_per_tensor_affine(x, 0.1, 0, -128, 127)
        z = lib.fake_quantize_per_channel_affine(x, lib.tensor([0.1, 0.2, 0.3]),
                                                 lib.tensor([0, 0, 0], dtype=lib.int32), 1,
                                                 -128, 127)
        assert y.stride() == x.stride() and z.stride() == x.stride()


ERROR_CALLS = [
    "fake_quantize_per_tensor_affine(x, 0.1, 0, 5, 3)",
    "fake_quantize_per_tensor_affine(x, 0.1, 200, 0, 127)",
    "fake_quantize_per_tensor_affine(x, 0.1, 0.5, -128, 127)",
    "fake_quantize_per_tensor_affine(x, 0.1, 0, -128.0, 127)",
    "fake_quantize_per_tensor_affine([1.0], 0.1, 0, -128, 127)",
    "fake_quantize_per_tensor_affine(x.int(), 0.1, 0, -128, 127)",
    "fake_quantize_per_tensor_affine(x, L.tensor(0.1, requires_grad=True), L.tensor(0), -1, 1)",
    "fake_quantize_per_tensor_affine(x, L.tensor([0.1, 0.2]), L.tensor([0, 0]), -128, 127)",
    "fake_quantize_per_channel_affine(x, s, z.long(), 1, -128, 127)",
    "fake_quantize_per_channel_affine(x, s.double(), z, 1, -128, 127)",
    "fake_quantize_per_channel_affine(x, s[:2], z[:2], 1, -128, 127)",
    "fake_quantize_per_channel_affine(x, s, z[:2], 1, -128, 127)",
    "fake_quantize_per_channel_affine(x, s[None], z, 1, -128, 127)",
    "fake_quantize_per_channel_affine(x, s, z, 2, -128, 127)",
    "fake_quantize_per_channel_affine(x, s, z, -1, -128, 127)",
    "fake_quantize_per_channel_affine(x, s, z + 200, 1, -128, 127)",
    "fake_quantize_per_channel_affine(x, s, z, 1, 5, 3)",
    "fake_quantize_per_channel_affine(x, s, z, 1, -128.0, 127)",
    "fake_quantize_per_channel_affine(x, [0.1, 0.2, 0.3], z, 1, -128, 127)",
    "fake_quantize_per_channel_affine(x.int(), s, z, 1, -128, 127)",
    "fake_quantize_per_channel_affine(x, s.requires_grad_(), z, 1, -128, 127)",
]


@pytest.mark.parametrize("call", ERROR_CALLS)
def test_errors_match_torch(call):
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    raised = []
    for lib in (torch, jitgrad):
        scope = {"L": lib, "x": lib.randn(2, 3), "s": lib.tensor([0.1, 0.2, 0.3]),
                 "z": lib.tensor([0, 1, 2], dtype=lib.int32)}
        with pytest.raises(Exception) as info:  # noqa: PT011 (the class is compared)
            eval("L." + call, scope)  # noqa: S307
        raised.append(info.value)
    theirs, ours = raised
    assert type(ours) is type(theirs)
    # torch's argument parser also lists why each overload did not match; its first line is
    # the one jitgrad writes
    first = str(theirs).split("\n")[0].replace("torch.", "jitgrad.")
    assert str(ours).startswith(first)


def test_jit_vmap_and_forward_mode_agree_with_eager():
    x = jitgrad.randn(5, 4, 3, dtype=jitgrad.float64) * 40
    s = jitgrad.tensor([0.5, 0.25, 1.0])
    z = jitgrad.tensor([0, 3, -2], dtype=jitgrad.int32)

    def loss(t):
        a = jitgrad.fake_quantize_per_channel_affine(t, s, z, 2, -16, 15)
        b = jitgrad.fake_quantize_per_tensor_affine(t * 0.5, jitgrad.tensor(0.5),
                                                    jitgrad.tensor(1), -64, 63)
        c = jitgrad.fake_quantize_per_tensor_affine(t, 2.0, 0, -8, 7)
        return (a * b + c.square()).sum()

    eager_x = x.clone().requires_grad_()
    eager = loss(eager_x)
    eager.backward()
    jit_x = x.clone().requires_grad_()
    compiled = jitgrad.jit(loss)(jit_x)
    compiled.backward()
    assert float(compiled) == pytest.approx(float(eager), rel=1e-12)
    np.testing.assert_allclose(jit_x.grad.numpy(), eager_x.grad.numpy(), rtol=1e-12)
    assert 0 < (eager_x.grad == 0).sum() < x.numel()  # some codes clamp, some pass
    # vmap over the leading dim: the channel axis moves past it
    per_row = jitgrad.func.vmap(
        lambda r: jitgrad.fake_quantize_per_channel_affine(r, s, z, 1, -16, 15))(x)
    assert jitgrad.equal(per_row, jitgrad.fake_quantize_per_channel_affine(x, s, z, 2, -16, 15))
    batched = jitgrad.func.vmap(jitgrad.func.grad(loss))(x[:, None])
    for i in range(x.shape[0]):
        np.testing.assert_allclose(batched[i].numpy(),
                                   jitgrad.func.grad(loss)(x[i:i + 1]).numpy(), rtol=1e-12)
    # forward mode: the tangent passes where the code was in range
    tangent = jitgrad.randn(5, 4, 3, dtype=jitgrad.float64)
    _, jvp = jitgrad.func.jvp(
        lambda t: jitgrad.fake_quantize_per_tensor_affine(t, 2.0, 0, -8, 7), (x,), (tangent,))
    inside = (np.rint(x.numpy() / 2.0) >= -8) & (np.rint(x.numpy() / 2.0) <= 7)
    np.testing.assert_array_equal(jvp.numpy(), np.where(inside, tangent.numpy(), 0.0))


def _qat_losses(lib, steps=25):
    """A per-channel fake-quantized linear layer with per-tensor fake-quantized activations,
    trained by SGD (straight-through gradients), scales from each step's weight range."""
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((64, 6)))
    target = lib.tensor(rng.standard_normal((64, 4)))
    weight = lib.tensor(rng.standard_normal((4, 6)) * 0.5, requires_grad=True)
    bias = lib.zeros(4, dtype=lib.float64, requires_grad=True)
    opt = lib.optim.SGD([weight, bias], lr=0.1, momentum=0.9)
    losses = []
    for _ in range(steps):
        with lib.no_grad():
            scales = (weight.abs().amax(dim=1) / 127).float()
        w_q = lib.fake_quantize_per_channel_affine(
            weight, scales, lib.zeros(4, dtype=lib.int32), 0, -127, 127)
        h = lib.fake_quantize_per_tensor_affine(x @ w_q.t() + bias, 0.05, 128, 0, 255)
        loss = ((h - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


def test_quantization_aware_training_matches_torch():
    ours = _qat_losses(jitgrad)
    assert ours[-1] < 0.8 * ours[0]
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(ours, _qat_losses(torch), rtol=1e-12)


@pytest.mark.parametrize("name", ["quantize_per_tensor", "qint8", "ao", "dequantize"])
def test_quantized_tensor_names_say_what_to_use_instead(name):
    assert not hasattr(jitgrad, name)
    with pytest.raises(AttributeError, match="jitgrad has no quantized tensors .*"
                                             "fake_quantize_per_tensor_affine"):
        getattr(jitgrad, name)
