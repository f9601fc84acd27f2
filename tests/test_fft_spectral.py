"""Window functions and stft/istft against torch: values, dtypes, gradients in the signal and
the window (torch's, and gradcheck in float64/complex128), round trips, torch's errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import gradcheck

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore:A window was not provided:UserWarning")

WINDOWS = ["hann_window", "hamming_window", "bartlett_window", "blackman_window",
           "kaiser_window"]


def _np(t):
    return t.detach().resolve_conj().numpy() if isinstance(t, torch.Tensor) else \
        t.detach().numpy()


@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("length", [0, 1, 2, 5, 8, 33])
@pytest.mark.parametrize("name", WINDOWS)
def test_windows_match_torch(name, length, periodic):
    j = getattr(jitgrad, name)(length, periodic)
    t = getattr(torch, name)(length, periodic)
    assert j.dtype == jitgrad.float32 and tuple(j.shape) == tuple(t.shape)
    np.testing.assert_allclose(j.numpy(), t.numpy(), atol=2e-6)  # (torch: in float32)
    j64 = getattr(jitgrad, name)(length, periodic, dtype=jitgrad.float64, requires_grad=True)
    t64 = getattr(torch, name)(length, periodic, dtype=torch.float64)
    assert j64.requires_grad and j64.dtype == jitgrad.float64
    np.testing.assert_allclose(j64.detach().numpy(), t64.numpy(), atol=1e-14)


def test_window_parameters():
    for j, t in [(jitgrad.hamming_window(9, False, 0.6, 0.3),
                  torch.hamming_window(9, False, 0.6, 0.3)),
                 (jitgrad.kaiser_window(9, True, 5.0), torch.kaiser_window(9, True, 5.0)),
                 (jitgrad.kaiser_window(6, False, beta=1.5),
                  torch.kaiser_window(6, False, beta=1.5))]:
        np.testing.assert_allclose(j.numpy(), t.numpy(), atol=2e-6)  # (torch: in float32)


@pytest.mark.parametrize("call", [
    lambda lib: lib.hann_window(-1),
    lambda lib: lib.kaiser_window(-2),
    lambda lib: lib.hann_window(3, dtype=lib.int64),
    lambda lib: lib.blackman_window(3, dtype=lib.int32),
])
def test_window_errors_match_torch(call):
    with pytest.raises(RuntimeError) as t_err:
        call(torch)
    with pytest.raises(RuntimeError) as j_err:
        call(jitgrad)
    assert str(j_err.value) == str(t_err.value)


STFT_CASES = [
    dict(n_fft=16),
    dict(n_fft=16, hop_length=5, win_length=10, window="hann_window"),
    dict(n_fft=15, center=False, normalized=True),
    dict(n_fft=16, pad_mode="constant", onesided=False),
    dict(n_fft=8, pad_mode="replicate", window="hamming_window"),
    dict(n_fft=8, pad_mode="circular", hop_length=3),
    dict(n_fft=16, hop_length=4, win_length=9),  # no window: ones over win_length, centred
]


def _window(lib, kw, requires_grad=False):
    kw = dict(kw)
    name = kw.pop("window", None)
    if name is None:
        return None, kw
    w = getattr(lib, name)(kw.get("win_length", kw["n_fft"]), dtype=lib.float64)
    return w.requires_grad_(requires_grad), kw


@pytest.mark.parametrize("cplx", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("shape", [(64,), (2, 50)], ids=["1d", "batch"])
@pytest.mark.parametrize("kw", STFT_CASES, ids=lambda kw: ",".join(f"{k}={v}" for k, v in
                                                                  kw.items()))
def test_stft_values_and_gradients_match_torch(kw, shape, cplx):
    if cplx and "onesided" in kw:
        pytest.skip("onesided is for real input")
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if cplx else 0)
    jx, tx = jitgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    jw, jkw = _window(jitgrad, kw, True)
    tw, tkw = _window(torch, kw, True)
    j = jitgrad.stft(jx, window=jw, return_complex=True, **jkw)
    t = torch.stft(tx, window=tw, return_complex=True, **tkw)
    assert tuple(j.shape) == tuple(t.shape) and j.dtype == jitgrad.complex128
    np.testing.assert_allclose(_np(j), _np(t), rtol=1e-10, atol=1e-10)
    w = rng.standard_normal(tuple(t.shape))
    ((j.abs() ** 2).sum() + (j.real * jitgrad.tensor(w)).sum() + 2 * j.imag.sum()).backward()
    ((t.abs() ** 2).sum() + (t.real * torch.tensor(w)).sum() + 2 * t.imag.sum()).backward()
    np.testing.assert_allclose(_np(jx.grad), _np(tx.grad), rtol=1e-10, atol=1e-10)
    if jw is not None:
        np.testing.assert_allclose(_np(jw.grad), _np(tw.grad), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("length", [None, 40, 70])
@pytest.mark.parametrize("kw", [c for c in STFT_CASES if "onesided" not in c],
                         ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_istft_values_and_gradients_match_torch(kw, length):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 64))
    jw, jkw = _window(jitgrad, kw)
    tw, tkw = _window(torch, kw)
    jkw.pop("pad_mode", None)
    tkw.pop("pad_mode", None)
    z = torch.stft(torch.tensor(x), window=tw, return_complex=True, **tkw).numpy()
    jz, tz = jitgrad.tensor(z, requires_grad=True), torch.tensor(z, requires_grad=True)
    try:
        t = torch.istft(tz, window=tw, length=length, **tkw)
    except RuntimeError as e:  # a window whose overlap-add vanishes on the requested span
        with pytest.raises(RuntimeError) as j_err:
            jitgrad.istft(jz, window=jw, length=length, **jkw)
        assert str(j_err.value) == str(e)
        return
    j = jitgrad.istft(jz, window=jw, length=length, **jkw)
    assert tuple(j.shape) == tuple(t.shape) and j.dtype == jitgrad.float64
    np.testing.assert_allclose(_np(j), _np(t), rtol=1e-10, atol=1e-10)
    if length is None and kw.get("center", True):  # the round trip
        np.testing.assert_allclose(_np(j), x[:, :j.shape[1]], atol=1e-10)
    w = rng.standard_normal(tuple(t.shape))
    (j * jitgrad.tensor(w)).sum().backward()
    (t * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(_np(jz.grad), _np(tz.grad), rtol=1e-9, atol=1e-10)


def test_stft_istft_gradcheck():
    w = jitgrad.hann_window(8, dtype=jitgrad.float64, requires_grad=True)
    x = jitgrad.randn(40, dtype=jitgrad.float64, requires_grad=True)
    assert gradcheck(lambda x, w: jitgrad.stft(x, 8, window=w, return_complex=True).abs(),
                     (x, w))
    z = jitgrad.stft(x, 8, window=w, return_complex=True).detach().requires_grad_()
    assert gradcheck(lambda z: jitgrad.istft(z, 8, window=w.detach()), (z,))
    c = jitgrad.randn(30, dtype=jitgrad.complex128, requires_grad=True)
    assert gradcheck(lambda c: jitgrad.stft(c, 8, hop_length=3, return_complex=True), (c,))


def test_stft_method_and_return_complex_false():
    x = jitgrad.randn(32, dtype=jitgrad.float64)
    z = x.stft(8, return_complex=True)
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        parts = jitgrad.stft(x, 8, return_complex=False)
    assert tuple(parts.shape) == tuple(z.shape) + (2,)
    np.testing.assert_allclose(parts[..., 0].numpy(), z.real.numpy())
    np.testing.assert_allclose(parts[..., 1].numpy(), z.imag.numpy())
    np.testing.assert_allclose(z.istft(8).numpy(), x.numpy(), atol=1e-12)


def _warned(lib, call):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        lib.set_warn_always(True)  # (torch's TORCH_WARN_ONCE, every time)
        try:
            call()
        finally:
            lib.set_warn_always(False)
    return [(w.category, str(w.message).split(" (Triggered internally")[0], w.filename)
            for w in seen]


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.stft(x, 16, return_complex=True),
    lambda lib, x: lib.stft(x, 16, win_length=8, window=lib.hann_window(8), return_complex=True),
    lambda lib, x: lib.istft(lib.stft(x, 16, window=lib.ones(16), return_complex=True), 16),
    lambda lib, x: lib.istft(lib.stft(x, 16, window=lib.ones(16), return_complex=True), 16,
                             window=lib.ones(16), length=120),
], ids=["stft-no-window", "stft-window", "istft-no-window", "istft-longer"])
def test_stft_istft_warn_as_torch_at_the_callers_line(call):
    x = np.random.default_rng(2).standard_normal(100).astype(np.float32)
    ours = _warned(jitgrad, lambda: call(jitgrad, jitgrad.tensor(x)))
    theirs = _warned(torch, lambda: call(torch, torch.tensor(x)))
    assert [w[:2] for w in ours] == [w[:2] for w in theirs], (ours, theirs)
    assert all(filename == __file__ for _, _, filename in ours)


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.stft(x, 16),
    lambda lib, x: lib.stft(x, 16, hop_length=0, return_complex=True),
    lambda lib, x: lib.stft(x, 16, win_length=20, return_complex=True),
    lambda lib, x: lib.stft(x, 200, return_complex=True, center=False),
    lambda lib, x: lib.stft(x, 16, window=lib.ones(5), return_complex=True),
    lambda lib, x: lib.stft(x.reshape(2, 5, 10), 4, return_complex=True),
    lambda lib, x: lib.stft(x.to(lib.complex64), 16, onesided=True, return_complex=True),
    lambda lib, x: lib.stft(x, 16, return_complex=True, pad_mode="bad"),
    lambda lib, x: lib.istft(x.reshape(4, 25), 16),
    lambda lib, x: lib.istft(lib.stft(x, 16, return_complex=True), 15),
    lambda lib, x: lib.istft(lib.stft(x, 16, return_complex=True), 16, hop_length=0),
    lambda lib, x: lib.istft(lib.stft(x, 16, return_complex=True), 16, window=lib.zeros(16)),
    lambda lib, x: lib.istft(lib.stft(x, 16, return_complex=True), 16, return_complex=True),
], ids=lambda f: "")
def test_stft_errors_match_torch(call):
    x = np.random.default_rng(2).standard_normal(100).astype(np.float32)
    with pytest.raises(Exception) as t_err:
        call(torch, torch.tensor(x))
    with pytest.raises(type(t_err.value)) as j_err:
        call(jitgrad, jitgrad.tensor(x))
    assert str(j_err.value) == str(t_err.value)


def test_stft_and_istft_under_jit():
    w = jitgrad.hann_window(16, dtype=jitgrad.float64)

    def spectrum(x):
        return (jitgrad.stft(x, 16, window=w, return_complex=True).abs() ** 2).sum()

    def inverse(z):
        return jitgrad.istft(z, 16, window=w, length=90)

    x = jitgrad.randn(2, 100, dtype=jitgrad.float64, requires_grad=True)
    loss = jitgrad.jit(spectrum)(x)
    loss.backward()
    g = x.grad.clone()
    x.grad = None
    eager = spectrum(x)
    eager.backward()
    np.testing.assert_allclose(loss.item(), eager.item(), rtol=1e-12)
    np.testing.assert_allclose(g.numpy(), x.grad.numpy(), atol=1e-10)
    z = jitgrad.stft(x.detach(), 16, window=w, return_complex=True)
    np.testing.assert_allclose(jitgrad.jit(inverse)(z).numpy(), inverse(z).numpy(), atol=1e-12)
    np.testing.assert_allclose(inverse(z).numpy(), x.detach().numpy()[:, :90], atol=1e-10)
