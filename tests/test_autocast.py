"""autocast (jitgrad.amp): which ops cast to bfloat16/float16 or float32, against torch's CPU
autocast."""

import threading
import warnings

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _pair(shape, seed, requires_grad=False, dtype=np.float32):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return (jg.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


X, TX = _pair((4, 6), 0)
W, TW = _pair((6, 6), 1, requires_grad=True)
B3, TB3 = _pair((2, 4, 6), 2)
IMG, TIMG = _pair((1, 2, 6, 6), 3)
K, TK = _pair((3, 2, 3, 3), 4)
T, TT = _pair((4, 6), 5)
LABELS = [0, 1, 2, 3]


def _calls(m, fn, x, w, b3, img, k, t, labels):
    """name -> a thunk computing one op with module ``m`` (jitgrad or torch)."""
    y = x @ w
    return {
        "matmul": lambda: x @ w,
        "matmul_1d": lambda: m.matmul(x[0], w[0]),
        "matmul_batched": lambda: b3 @ w,
        "mm": lambda: m.mm(x, w),
        "bmm": lambda: m.bmm(b3, b3.transpose(1, 2)),
        "addmm": lambda: m.addmm(x[:, 0:1], x, w),
        "baddbmm": lambda: m.baddbmm(b3[:, :, :4], b3, b3.transpose(1, 2)),
        "linear": lambda: fn.linear(x, w, w[0]),
        "linear_3d": lambda: fn.linear(b3, w, w[0]),
        "conv2d": lambda: fn.conv2d(img, k, k[:, 0, 0, 0], padding=1),
        "conv_transpose2d": lambda: fn.conv_transpose2d(img, k.transpose(0, 1)),
        "prelu": lambda: fn.prelu(x, w[0, :1]),
        "sdpa": lambda: fn.scaled_dot_product_attention(b3, b3, b3),
        "cross_entropy": lambda: fn.cross_entropy(y, labels),
        "nll_loss": lambda: fn.nll_loss(fn.log_softmax(y, 1), labels),
        "mse_loss": lambda: fn.mse_loss(y, t),
        "l1_loss": lambda: fn.l1_loss(y, t),
        "smooth_l1_loss": lambda: fn.smooth_l1_loss(y, t),
        "huber_loss": lambda: fn.huber_loss(y, t),
        "bce_with_logits": lambda: fn.binary_cross_entropy_with_logits(y, t.sigmoid()),
        "kl_div": lambda: fn.kl_div(fn.log_softmax(y, 1), t.softmax(1), reduction="batchmean"),
        "prod": lambda: m.prod(y),
        "trace": lambda: m.trace(y),
        "cdist": lambda: m.cdist(y, y),
        "softmax": lambda: m.softmax(y, 0),
        "gelu": lambda: fn.gelu(y),
        "layer_norm": lambda: fn.layer_norm(y, (6,)),
        "sum": lambda: y.sum(),
        "add_float32": lambda: y + x,
        "cat": lambda: m.cat([y, x]),
        "float64_mm": lambda: m.mm(x.double(), w.double()),
    }


def _torch_calls():
    return _calls(torch, TF, TX, TW, TB3, TIMG, TK, TT, torch.tensor(LABELS))


def _jg_calls():
    return _calls(jg, F, X, W, B3, IMG, K, T, jg.tensor(LABELS))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(_jg_calls()))
def test_output_dtype_and_value_match_torch(name, dtype):
    with jg.autocast("cpu", dtype=getattr(jg, dtype)):
        ours = _jg_calls()[name]()
    with torch.autocast("cpu", dtype=getattr(torch, dtype)):
        theirs = _torch_calls()[name]()
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    want = theirs.detach().double().numpy()
    tol = 2e-2 if ours.dtype in (jg.float16, jg.bfloat16) else 1e-3
    np.testing.assert_allclose(ours.detach().double().numpy(), want, rtol=tol, atol=tol)


def test_gradients_flow_back_to_float32_parameters_as_torch():
    with jg.autocast("cpu", dtype=jg.float16):
        out = F.cross_entropy(F.linear(B3, W, W[0]).relu().sum(1), jg.tensor([0, 1]))
    with torch.autocast("cpu", dtype=torch.float16):
        tout = TF.cross_entropy(TF.linear(TB3, TW, TW[0]).relu().sum(1), torch.tensor([0, 1]))
    assert out.dtype is jg.float32 and tout.dtype == torch.float32
    (g,) = jg.autograd.grad(out, W)
    (tg,) = torch.autograd.grad(tout, TW)
    assert g.dtype is jg.float32
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=2e-2, atol=2e-2)
    # the cast is an ordinary node, as torch records it
    with jg.autocast("cpu"):
        y = X @ W
    assert y.grad_fn.name() == "MmBackward0"
    assert [f.name() if f else None for f, _ in y.grad_fn.next_functions] == \
        [None, "ToCopyBackward0"]


def test_nesting_disabling_decorator_and_state():
    assert not jg.is_autocast_enabled("cpu") and not jg.is_autocast_enabled()
    with jg.autocast("cpu"):
        assert jg.is_autocast_enabled("cpu") and not jg.is_autocast_enabled()  # cuda's
        assert jg.get_autocast_dtype("cpu") is jg.bfloat16  # torch's CPU default
        with jg.autocast("cpu", enabled=False):
            assert (X @ W).dtype is jg.float32
            assert not jg.is_autocast_enabled("cpu")
        assert (X @ W).dtype is jg.bfloat16
    assert (X @ W).dtype is jg.float32
    with pytest.raises(ZeroDivisionError), jg.autocast("cpu"):
        1 / 0
    assert not jg.is_autocast_enabled("cpu")  # restored after an exception

    @jg.autocast("cpu")
    def product(a, b):
        return a @ b

    assert product(X, W).dtype is jg.bfloat16 and (X @ W).dtype is jg.float32
    jg.set_autocast_enabled("cpu", True)
    try:
        assert (X @ W).dtype is jg.bfloat16
    finally:
        jg.set_autocast_enabled("cpu", False)
    assert (X @ W).dtype is jg.float32


def test_state_belongs_to_the_thread():
    seen = []
    with jg.autocast("cpu"):
        thread = threading.Thread(target=lambda: seen.append((X @ W).dtype))
        thread.start()
        thread.join()
        assert (X @ W).dtype is jg.bfloat16
    assert seen == [jg.float32]


def test_bad_arguments_as_torch():
    with pytest.raises(ValueError,
                       match="Expected `device_type` of type `str`, got: `<class 'int'>`"):
        jg.autocast(3)
    with pytest.raises(RuntimeError, match="device type at start of device string: foo"):
        jg.autocast("foo")
    with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not "
                      "supported. Disabling autocast."):
        region = jg.autocast("cpu", dtype=jg.float64)
    with region:
        assert not jg.is_autocast_enabled("cpu") and (X @ W).dtype is jg.float32


def test_cuda_autocast_without_cuda_warns_and_disables(monkeypatch):
    monkeypatch.setattr(jg.cuda, "is_available", lambda: False)
    with pytest.warns(UserWarning, match="CUDA is not available or torch_xla is imported. "
                      "Disabling autocast."):
        region = jg.autocast("cuda")
    with region:
        assert not jg.is_autocast_enabled("cuda")


def test_deprecated_spellings_warn_as_torch():
    with pytest.warns(FutureWarning, match=r"`torch.cpu.amp.autocast\(args...\)` is deprecated"):
        region = jg.cpu.amp.autocast(dtype=jg.float16)
    with region:
        assert (X @ W).dtype is jg.float16
    with warnings.catch_warnings(), pytest.warns(FutureWarning, match="torch.cuda.amp.autocast"):
        warnings.simplefilter("ignore", UserWarning)  # (CUDA may be unavailable: disabled)
        jg.cuda.amp.autocast()
    assert jg.amp.autocast is jg.autocast


def test_jit_keys_on_autocast(capsys, monkeypatch):
    monkeypatch.setenv("JITGRAD_LOG", "recompiles")

    @jg.jit
    def product(a, b):
        return (a @ b).relu()

    assert product(X, W).dtype is jg.float32
    with jg.autocast("cpu"):
        inside = product(X, W)
    assert inside.dtype is jg.bfloat16
    assert product(X, W).dtype is jg.float32
    assert "because autocast: () -> (('cpu', jitgrad.bfloat16),)" in capsys.readouterr().err
    np.testing.assert_allclose(inside.detach().float().numpy(), (X @ W).relu().detach().numpy(),
                               rtol=1e-2,
                               atol=1e-2)
    inside.sum().backward()
    assert W.grad.dtype is jg.float32
    W.grad = None


def test_custom_fwd_casts_inputs_and_custom_bwd_restores_the_state():
    seen = {}

    class Product(jg.autograd.Function):
        @staticmethod
        @jg.amp.custom_fwd(device_type="cpu", cast_inputs=jg.float32)
        def forward(ctx, a, b):
            seen["forward"] = (a.dtype, jg.is_autocast_enabled("cpu"))
            ctx.save_for_backward(a, b)
            return a @ b

        @staticmethod
        @jg.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            seen["backward"] = jg.is_autocast_enabled("cpu")
            return g @ b.t(), a.t() @ g

    with jg.autocast("cpu"):
        half = X.half()
        out = Product.apply(half, W)
    assert seen["forward"] == (jg.float32, False) and out.dtype is jg.float32
    out.sum().backward()
    assert seen["backward"] is False  # forward ran with autocast off (cast_inputs)
    W.grad = None

    class Plain(jg.autograd.Function):
        @staticmethod
        @jg.amp.custom_fwd(device_type="cpu")
        def forward(ctx, a):
            return a * 2

        @staticmethod
        @jg.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            seen["plain"] = jg.is_autocast_enabled("cpu")
            return g * 2

    with jg.autocast("cpu"):
        out = Plain.apply(W)
    out.sum().backward()  # outside autocast, but the backward runs in the forward's state
    assert seen["plain"] is True and not jg.is_autocast_enabled("cpu")
    W.grad = None


LINALG = {
    "inv": lambda m, a: m.linalg.inv(a), "solve": lambda m, a: m.linalg.solve(a, a),
    "cholesky": lambda m, a: m.linalg.cholesky(a), "eigh": lambda m, a: m.linalg.eigh(a)[0],
    "qr": lambda m, a: m.linalg.qr(a)[1], "svd": lambda m, a: m.linalg.svd(a)[1],
    "eigvals": lambda m, a: m.linalg.eig(a)[0].real.sort().values,
    "cholesky_solve": lambda m, a: m.cholesky_solve(a, m.linalg.cholesky(a)),
    "lstsq": lambda m, a: m.linalg.lstsq(a, a)[0],
    "matrix_rank": lambda m, a: m.linalg.matrix_rank(a),
    "svdvals": lambda m, a: m.linalg.svdvals(a), "cond": lambda m, a: m.linalg.cond(a),
    "inverse": lambda m, a: m.inverse(a),
}


@pytest.mark.parametrize("name", sorted(LINALG))
def test_linalg_runs_in_float32_on_half_inputs_as_torch(name):
    spd = np.random.default_rng(9).standard_normal((4, 4))
    spd = (spd @ spd.T + 4 * np.eye(4)).astype(np.float16)
    with jg.autocast("cpu", dtype=jg.float16):
        ours = LINALG[name](jg, jg.tensor(spd))
    with torch.autocast("cpu", dtype=torch.float16):
        theirs = LINALG[name](torch, torch.tensor(spd))
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    np.testing.assert_allclose(ours.double().numpy(), theirs.double().numpy(), rtol=1e-3,
                               atol=1e-3)


def test_deprecated_grad_scaler_spellings_warn_as_torch():
    with pytest.warns(FutureWarning, match=r"`torch.cpu.amp.GradScaler\(args...\)` is "
                      r"deprecated. Please use `torch.amp.GradScaler\('cpu', args...\)`"):
        scaler = jg.cpu.amp.GradScaler(init_scale=8.0)
    assert isinstance(scaler, jg.amp.GradScaler) and scaler.get_scale() == 8.0
    with warnings.catch_warnings(), pytest.warns(FutureWarning, match="torch.cuda.amp.GradScaler"):
        warnings.simplefilter("ignore", UserWarning)  # (CUDA may be unavailable: disabled)
        jg.cuda.amp.GradScaler()


def test_the_amp_recipe_trains_as_torch():
    """torch's AMP recipe (autocast forward, scaled backward, unscale, clip, step, update)."""
    rng = np.random.default_rng(11)
    w1, w2 = rng.standard_normal((16, 32)) * 0.3, rng.standard_normal((4, 16)) * 0.3
    xs = rng.standard_normal((5, 8, 32)).astype(np.float32)
    ys = rng.integers(0, 4, (5, 8))

    def run(m, fn):
        model = m.nn.Sequential(m.nn.Linear(32, 16), m.nn.ReLU(), m.nn.Linear(16, 4))
        with m.no_grad():
            model[0].weight.copy_(m.tensor(w1, dtype=m.float32))
            model[2].weight.copy_(m.tensor(w2, dtype=m.float32))
            model[0].bias.zero_()
            model[2].bias.zero_()
        opt = m.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        scaler = m.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=2)
        losses, scales = [], []
        for x, y in zip(xs, ys):
            opt.zero_grad()
            with m.autocast("cpu", dtype=m.float16):
                loss = fn.cross_entropy(model(m.tensor(x)), m.tensor(y))
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            m.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            losses.append(loss.item())
            scales.append(scaler.get_scale())
        return losses, scales, model[0].weight.detach().numpy().copy()

    ours, theirs = run(jg, F), run(torch, TF)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=5e-3, atol=5e-3)
    assert ours[1] == theirs[1]
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-2, atol=1e-2)


def test_cuda_amp_custom_fwd_and_custom_bwd_are_deprecated_aliases():
    """``torch.cuda.amp.custom_fwd``/``custom_bwd`` (mamba_ssm 1.x imports them): the device
    type "cuda" forms of ``amp.custom_fwd``/``custom_bwd``, with torch's FutureWarning."""
    with pytest.warns(FutureWarning, match=r"`torch.cuda.amp.custom_fwd\(args...\)` is "
                      r"deprecated. Please use `torch.amp.custom_fwd\(args..., "
                      r"device_type='cuda'\)` instead."):
        fwd = jg.cuda.amp.custom_fwd(cast_inputs=jg.float32)
    with pytest.warns(FutureWarning, match=r"`torch.cuda.amp.custom_bwd\(args...\)` is "
                      r"deprecated"):
        class Double(jg.autograd.Function):
            @staticmethod
            @fwd
            def forward(ctx, x):
                return x * 2

            @staticmethod
            @jg.cuda.amp.custom_bwd
            def backward(ctx, g):
                return g * 2

    x = jg.ones(3, dtype=jg.float64, requires_grad=True)
    y = Double.apply(x)
    y.sum().backward()
    assert y.dtype is jg.float64 and x.grad.tolist() == [2.0, 2.0, 2.0]
    assert jg.cuda.amp.amp_definitely_not_available() is not jg.cuda.is_available()
    assert sorted(jg.cuda.amp.__all__) == ["GradScaler", "amp_definitely_not_available",
                                           "autocast", "custom_bwd", "custom_fwd"]
