"""What the opdb sweep of ``tests/opdb_elementwise3.py`` does not reach: nextafter's float64-only
kernel template (and the CUDA helper's frexp/ldexp form, run as Python), the in-place and
method forms, and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad
from jitgrad.backends import cuda_lib

EDGES = (np.array([1.0, -2.0, 0.0, -0.0, 3.5, 0.5, -0.5, 1e-310, -5e-324, 5e-324,
                   1.7976931348623157e308, np.inf, -np.inf, np.nan, 2.0, 1e300, 4.0, 1.0]),
         np.array([2.0, -3.0, -1.0, 1.0, 3.5, 0.0, 0.0, 0.0, 0.0, -1.0, np.inf, 0.0, 0.0, 1.0,
                   1.0, -np.inf, 5.0, np.nan]))


def test_nextafter_kernel_and_cuda_helper_equal_numpy():
    x, y = EDGES
    with np.errstate(all="ignore"):
        want = np.nextafter(x, y)
    f = jitgrad.jit(lambda a, b: jitgrad.nextafter(a * 1.0, b), backend="numba")
    got = f(jitgrad.tensor(x), jitgrad.tensor(y)).numpy()
    np.testing.assert_array_equal(got, want)
    assert "kernel" in str(f.lower(jitgrad.tensor(x), jitgrad.tensor(y)).kernels)
    helper = np.array([cuda_lib._jg_nextafter(a, b) for a, b in zip(x, y)])
    np.testing.assert_array_equal(helper, want)
    # float32 is left to NumPy (not fused): its spacing is float32's
    x32 = jitgrad.tensor([1.0, -1.0], dtype=jitgrad.float32)
    y32 = jitgrad.tensor([2.0, 0.0], dtype=jitgrad.float32)
    got32 = jitgrad.jit(lambda a, b: jitgrad.nextafter(a * 1.0, b), backend="numba")(x32, y32)
    np.testing.assert_array_equal(got32.numpy(), np.nextafter(np.float32([1, -1]),
                                                              np.float32([2, 0])))


def test_inplace_and_methods_as_torch():
    torch = pytest.importorskip("torch")
    x = np.array([0.2, 0.5, 0.9, 0.0])
    y = np.array([1.5, -2.0, 0.0, 3.0])
    for lib in (jitgrad, torch):
        a, b = lib.tensor(x), lib.tensor(y)
        outs = [a.clone().logit_(0.25), a.clone().xlogy_(b.abs() + 1), a.clone().sinc_(),
                a.clone().copysign_(b), a.clone().copysign_(-1.0), a.clone().heaviside_(b),
                a.clone().nextafter_(b), b.fmax(a), b.fmin(a), b.logaddexp2(a), b.signbit(),
                lib.tensor([1, -4]).bitwise_not_(), a.clone().logical_xor_(b), a.positive(),
                lib.xlogy(2.0, b.abs())]
        if lib is jitgrad:
            mine = [o.numpy() for o in outs]
        else:
            for m, o in zip(mine, outs):
                assert m.dtype == o.numpy().dtype
                np.testing.assert_allclose(m, o.numpy(), rtol=1e-12)


@pytest.mark.parametrize("call,match", [
    (lambda L: L.bitwise_not(L.ones(2)), "\"bitwise_not_cpu\" not implemented for 'Float'"),
    (lambda L: L.positive(L.tensor([True])), "on a bool tensor is not supported"),
    (lambda L: L.heaviside(L.ones(2), L.ones(2, dtype=L.float64)), "with different dtypes"),
    (lambda L: L.nextafter(L.tensor([1]), L.tensor([2])), "\"nextafter_cpu\" not implemented"),
    (lambda L: L.logaddexp2(L.tensor([1]), L.tensor([2])), "\"logaddexp2_cpu\" not implemented"),
    (lambda L: L.signbit(L.tensor([1j])), "signbit is not implemented for complex tensors"),
])
def test_errors_as_torch(call, match):
    torch = pytest.importorskip("torch")
    errors = (RuntimeError, NotImplementedError)
    with pytest.raises(errors, match=match):
        call(torch)
    with pytest.raises(errors, match=match):
        call(jitgrad)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("exponent", [3, 3.0, -2, -2.0, 2.0, -1.0, -1, -0.5])
def test_pow_scalar_rounds_as_torch(dtype, exponent):
    # torch's CPU kernel computes x ** 3 as x * x * x, x ** -2 as 1 / (x * x) and x ** -0.5 as
    # 1 / sqrt(x): bit for bit the same here (NumPy's power rounds once, and is ~100x slower)
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal(4096).astype(dtype) * 3
    x[:4] = [0.0, -0.0, np.inf, np.nan]
    with np.errstate(all="ignore"):
        got = (jitgrad.tensor(x) ** exponent).numpy()
        want = (torch.tensor(x) ** exponent).numpy()
    np.testing.assert_array_equal(got, want)
    t = jitgrad.tensor(x[4:8], requires_grad=True)
    (t ** exponent).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), exponent * x[4:8] ** (exponent - 1), rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pow_scalar_in_a_fused_kernel_rounds_as_eager(dtype):
    # the kernel templates compute the same products, reciprocals and square root as the eager
    # impl: a jitted power is bit for bit the eager one
    x = np.random.default_rng(1).standard_normal(4099).astype(dtype) * 3
    x[:4] = [0.0, -0.0, np.inf, np.nan]
    exponents = (3, -2, -2.0, -1, -1.0, -0.5, 2, 0.5)

    def powers(t):
        return tuple(t ** e for e in exponents)

    t = jitgrad.tensor(x)
    with np.errstate(all="ignore"):
        got = jitgrad.jit(powers, backend="numba")(t)
        want = powers(t)
    for e, a, b in zip(exponents, got, want):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=f"x ** {e}")
