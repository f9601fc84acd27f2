"""Eager erf/erfc/sigmoid on large arrays (the compiled erf loop, the one-pass sigmoid):
values against libm and torch, tails and specials included."""

import math

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.ops import nn_kernels

SPECIALS = [-np.inf, -1e4, -200.0, -100.0, -88.0, -20.0, -1.0, -1e-8, -0.0, 0.0, 1e-8, 1.0,
            20.0, 100.0, 1e4, np.inf, np.nan]


def _big(dtype):
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.standard_normal(nn_kernels.SPECIAL_LOOP_MIN) * 4, SPECIALS])
    return values.astype(dtype)


@pytest.mark.parametrize("name", ["erf", "erfc"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erf_and_erfc_of_large_arrays_are_libms_rounded(name, dtype):
    x = _big(dtype)
    assert x.size >= nn_kernels.SPECIAL_LOOP_MIN  # (the compiled loop, not np.vectorize)
    got = getattr(jg, name)(jg.tensor(x.reshape(-1, 1)[::1].T)).numpy().ravel()
    want = np.array([getattr(math, name)(float(v)) for v in x]).astype(dtype)
    np.testing.assert_array_equal(got, want)  # libm's double result, rounded


def test_erf_of_a_strided_view():
    x = jg.randn(100, 200, dtype=jg.float64)
    view = x.t()[::2]
    want = np.vectorize(math.erf)(view.numpy())
    np.testing.assert_array_equal(jg.erf(view).numpy(), want)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_sigmoid_tails_match_torch(dtype):
    # within an ulp of torch's 1/(1+exp(-x)); below the normal range torch's float32 kernel
    # flushes to 0 where eager mode (as the jit kernel) keeps the subnormal e/(1+e)
    torch = pytest.importorskip("torch")
    x = np.array(SPECIALS * 300, dtype=np.float64)
    got = jg.sigmoid(jg.tensor(x, dtype=getattr(jg, dtype))).numpy()
    want = torch.sigmoid(torch.tensor(x, dtype=getattr(torch, dtype))).numpy()
    info = np.finfo(got.dtype)
    np.testing.assert_allclose(got, want, rtol=2 * info.eps, atol=info.smallest_normal)
    exact = np.exp(np.minimum(x, 0)) / (1 + np.exp(-np.abs(x)))
    np.testing.assert_allclose(jg.sigmoid(jg.tensor(x)).numpy(), exact, rtol=2e-16, atol=0)
    assert jg.sigmoid(jg.tensor(-100.0)).item() > 0  # the lower tail keeps relative accuracy
    np.testing.assert_allclose(jg.sigmoid(jg.tensor(-20.0, dtype=jg.float64)).item(),
                               1 / (1 + math.exp(20.0)), rtol=1e-15)


@pytest.mark.parametrize("slope", [0.01, 0.2, -0.5, 0.0, 1.0, 1.5, 3.0])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_leaky_relu_is_torchs_bit_for_bit(slope, dtype):
    # (the branch-free max/min forms keep signed zeros, infinities and NaN)
    torch = pytest.importorskip("torch")
    v = np.array([-np.inf, -3, -1e-30, -0.0, 0.0, 1e-30, 2, np.inf, np.nan] * 500)
    got = jg.nn.functional.leaky_relu(jg.tensor(v, dtype=getattr(jg, dtype)), slope).numpy()
    want = torch.nn.functional.leaky_relu(torch.tensor(v, dtype=getattr(torch, dtype)),
                                          slope).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
