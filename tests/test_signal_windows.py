"""``jitgrad.signal.windows`` and the top-level ``*_window`` functions against torch."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")

NAMES = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "hamming", "hann",
         "kaiser", "nuttall"]
EXTRA = {  # (keyword parameters of some windows)
    "exponential": [{"tau": 0.5}, {"tau": 3.0, "center": 2.5, "sym": False}],
    "gaussian": [{"std": 0.4}, {"std": 7.0}],
    "kaiser": [{"beta": 0.0}, {"beta": 5.5}],
}


def _tdtype(dt):
    return getattr(torch, dt.name)


def _close(ours, theirs, dtype):
    assert ours.dtype == dtype and tuple(ours.shape) == tuple(theirs.shape)
    tol = 2e-6 if dtype == jitgrad.float32 else 1e-12
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=tol,
                               atol=tol)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("dtype", [jitgrad.float32, jitgrad.float64])
def test_windows_match_torch(name, sym, dtype):
    ours_fn = getattr(jitgrad.signal.windows, name)
    theirs_fn = getattr(torch.signal.windows, name)
    for kwargs in [{}] + EXTRA.get(name, []):
        kw = {"sym": sym, **kwargs}
        if kw.get("center") is not None and kw["sym"]:
            continue
        for M in [0, 1, 2, 3, 8, 11, 64]:
            _close(ours_fn(M, dtype=dtype, **kw), theirs_fn(M, dtype=_tdtype(dtype), **kw),
                   dtype)


@pytest.mark.parametrize("sym", [True, False])
def test_general_windows_match_torch(sym):
    for M in [0, 1, 5, 16]:
        for a in [[0.5, 0.5], (0.3, 0.4, 0.2, 0.1), [1.0]]:
            _close(jitgrad.signal.windows.general_cosine(M, a=a, sym=sym, dtype=jitgrad.float64),
                   torch.signal.windows.general_cosine(M, a=a, sym=sym, dtype=torch.float64),
                   jitgrad.float64)
        for alpha in [0.54, 0.7]:
            _close(jitgrad.signal.windows.general_hamming(M, alpha=alpha, sym=sym),
                   torch.signal.windows.general_hamming(M, alpha=alpha, sym=sym),
                   jitgrad.float32)


def test_default_dtype_and_requires_grad_as_torch():
    w = jitgrad.signal.windows.hann(6)
    assert w.dtype == jitgrad.float32 and not w.requires_grad
    prior = jitgrad.get_default_dtype()
    jitgrad.set_default_dtype(jitgrad.float64)
    try:
        assert jitgrad.signal.windows.gaussian(4).dtype == jitgrad.float64
    finally:
        jitgrad.set_default_dtype(prior)
    for name in NAMES:
        ours = getattr(jitgrad.signal.windows, name)(5, requires_grad=True)
        theirs = getattr(torch.signal.windows, name)(5, requires_grad=True)
        assert ours.requires_grad and theirs.requires_grad
        assert ours.is_leaf == theirs.is_leaf, name
        ours.sum().backward()  # (differentiable: the linspace inside is the leaf)


ERRORS = [
    (lambda m: m.hann(-1), ValueError,  # (torch names the window hann delegates to)
     "general_cosine requires non-negative window length, got M=-1"),
    (lambda m: m.kaiser(4, dtype=m._int64), ValueError,
     "kaiser expects float32 or float64 dtypes, got: "),
    (lambda m: m.exponential(4, tau=0), ValueError, "Tau must be positive, got: 0 instead."),
    (lambda m: m.exponential(4, center=1.0), ValueError,
     "Center must be None for symmetric windows"),
    (lambda m: m.gaussian(4, std=-1.0), ValueError,
     "Standard deviation must be positive, got: -1.0 instead."),
    (lambda m: m.kaiser(4, beta=-1.0), ValueError, "beta must be non-negative, got: -1.0"),
    (lambda m: m.general_cosine(4, a=[]), ValueError, "Coefficients cannot be empty"),
    (lambda m: m.general_cosine(4, a=3), TypeError, "Coefficients must be a list/tuple"),
    (lambda m: m.bartlett(4, layout=m._sparse), ValueError,
     "bartlett is implemented for strided tensors only, got: "),
]


class _Mod:
    def __init__(self, mod, lib):
        self._mod = mod
        self._int64 = lib.int64
        self._sparse = getattr(lib, "sparse_coo", "sparse")

    def __getattr__(self, name):
        return getattr(self._mod, name)


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_as_torch(case):
    call, exc, text = ERRORS[case]
    with pytest.raises(exc, match=text) as ours:
        call(_Mod(jitgrad.signal.windows, jitgrad))
    with pytest.raises(exc, match=text) as theirs:
        call(_Mod(torch.signal.windows, torch))
    if "dtypes, got" not in text and "strided" not in text:
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(TypeError):
        jitgrad.signal.windows.hann(4, False)  # (sym is keyword-only)


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window",
                                  "bartlett_window", "kaiser_window"])
@pytest.mark.parametrize("periodic", [True, False])
def test_top_level_windows_match_torch(name, periodic):
    for M in [0, 1, 2, 9, 32]:
        for dtype in [jitgrad.float32, jitgrad.float64]:
            _close(getattr(jitgrad, name)(M, periodic, dtype=dtype),
                   getattr(torch, name)(M, periodic, dtype=_tdtype(dtype)), dtype)
    if name == "hamming_window":
        _close(jitgrad.hamming_window(10, True, 0.6, 0.4), torch.hamming_window(10, True, 0.6, 0.4),
               jitgrad.float32)
    if name == "kaiser_window":
        _close(jitgrad.kaiser_window(10, False, 3.0), torch.kaiser_window(10, False, 3.0),
               jitgrad.float32)
