"""Small dtype cases found by sweeping against torch: each expression runs on torch and on
jitgrad (``L`` is the library), and both raise the same exception class and text, or both
give the same dtype and values."""

from __future__ import annotations

import math
import warnings

import pytest

import jitgrad

CASES = [
    # integer products keep their dtype (were summed into int64)
    "L.vdot(L.ones(3, dtype=L.int32), L.ones(3, dtype=L.int32))",
    "L.vdot(L.ones(3, dtype=L.uint8), L.ones(3, dtype=L.uint8))",
    "L.addbmm(L.zeros(2, 2, dtype=L.uint8), L.ones(3, 2, 2, dtype=L.uint8), "
    "L.ones(3, 2, 2, dtype=L.uint8))",
    "L.addbmm(L.zeros(2, 2, dtype=L.int32), L.ones(3, 2, 2, dtype=L.int32), "
    "L.ones(3, 2, 2, dtype=L.int32))",
    "L.nn.functional.bilinear(L.ones(2, 3, dtype=L.int32), L.ones(2, 3, dtype=L.int32), "
    "L.ones(4, 3, 3, dtype=L.int32), L.ones(4, dtype=L.int32))",
    "L.linalg.vecdot(L.ones(3, dtype=L.int8), L.ones(3, dtype=L.int8))",
    "L.linalg.vecdot(L.ones(3), L.ones(3, dtype=L.int8))",
    # a bool tensor clamped by Python bools has no kernel; clamp(0, 1) promotes to int64
    "L.tensor([True, False]).clamp(True, True)",
    "L.tensor([True, False]).clamp(True)",
    "L.tensor([True, False]).clamp(None, False)",
    "L.tensor([True, False]).clip_(True)",
    "L.tensor([True, False]).clamp_min(True)",
    "L.tensor([True, False]).clamp_max_(False)",
    "L.tensor([True, False]).clamp(0, 1)",
    "L.tensor([True, False]).clamp_min(L.tensor(True))",
    "L.tensor([1, 0]).clamp(True)",
    # logsumexp of integers is float32, computed without NumPy's float16 or uint8 wrap-around
    "L.logsumexp(L.tensor([1, 2, 3], dtype=L.int8), 0)",
    "L.logsumexp(L.tensor([100, 2, 3], dtype=L.uint8), 0)",
    "L.logsumexp(L.tensor([[1, 2, 3]], dtype=L.int16), 1)",
    # nansum's dtype: NaN counts as zero before the cast; nanmean's must be floating
    "L.nansum(L.tensor([[1.5, math.nan], [3.5, 4.0]]), dtype=L.int64)",
    "L.nansum(L.tensor([[1.5, math.nan], [3.5, 4.0]]), 1, dtype=L.int64)",
    "L.nansum(L.tensor([[1.5, math.nan], [3.5, 4.0]]), dtype=L.complex64)",
    "L.nansum(L.tensor([1, 2]), dtype=L.complex64)",
    "L.nanmean(L.tensor([[1.5, math.nan], [3.5, 4.0]]), 1, dtype=L.int64)",
    "L.nanmean(L.tensor([[1.5, math.nan], [3.5, 4.0]]), 1, dtype=L.complex64)",
    "L.mean(L.tensor([1.5, 2.0]), 0, dtype=L.int64)",
    "L.mean(L.tensor([1, 2]), 0)",
    "L.nanmean(L.tensor([1, 2]), 0)",
    # out= and the reduction's dtype
    "L.sum(L.tensor([[1.5, -2.25], [3.5, 4.0]]), 1, out=L.empty(0, dtype=L.int64))",
    "L.prod(L.tensor([[1.5, -2.25], [3.5, 4.0]]), 1, out=L.empty(0, dtype=L.bool))",
    "L.cumsum(L.tensor([[1.5, -2.25], [3.5, 4.0]]), 1, out=L.empty(0, dtype=L.int64))",
    "L.nansum(L.tensor([1.5, math.nan]), 0, out=L.empty(0, dtype=L.int64))",
    "L.nansum(L.tensor([1, 2]), 0, out=L.empty(0, dtype=L.bool))",
    "L.nanmean(L.tensor([1.5, math.nan]), 0, out=L.empty(0, dtype=L.float64))",
    # two numbers are no tensor call
    "L.xlogy(2.0, 3.0)",
    "L.special.xlogy(2.0, 3.0)",
    "L.special.xlog1py(2, 3.0)",
]


def _outcome(lib, code: str):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = eval(code, {"L": lib, "math": math})  # noqa: S307 - the cases above
    except Exception as e:  # noqa: BLE001  (the class and text are what is compared)
        return type(e).__name__, " ".join(str(e).split())
    return str(result.dtype).split(".")[-1], result.tolist()


def test_without_torch():
    assert _outcome(jitgrad, CASES[0]) == ("int32", 3)
    assert _outcome(jitgrad, "L.tensor([True, False]).clamp(True, True)") == (
        "NotImplementedError", "\"clamp_scalar_cpu\" not implemented for 'Bool'")
    assert _outcome(jitgrad, "L.nansum(L.tensor([[1.5, math.nan], [3.5, 4.0]]), "
                             "dtype=L.int64)") == ("int64", 8)


@pytest.mark.parametrize("dim", [0, 1])
def test_complex_logcumsumexp(dim):
    """torch's step-by-step complex logaddexp; its gradient is the conjugated (holomorphic)
    one: against finite differences, and against torch where it is installed."""
    import numpy as np

    x = np.array([[1 + 1j, 2 - 1j, -0.5 + 0.3j], [0.2 - 2j, 1.5 + 0.5j, 3 + 0j]])
    t = jitgrad.tensor(x, requires_grad=True)
    assert jitgrad.autograd.gradcheck(lambda a: jitgrad.logcumsumexp(a, dim), (t,))
    assert jitgrad.autograd.gradgradcheck(lambda a: jitgrad.logcumsumexp(a, dim), (t,))
    out = jitgrad.logcumsumexp(t, dim)
    expected = np.log(np.cumsum(np.exp(x), axis=dim))  # (no overflow at these values)
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-12)
    torch = pytest.importorskip("torch")
    g = np.array([[0.3 + 0.1j, -1 + 2j, 0.5 - 0.5j], [1 + 0j, 0.2j, -0.7 + 0.1j]])
    tt = torch.tensor(x, requires_grad=True)
    torch.logcumsumexp(tt, dim).backward(torch.tensor(g))
    out.backward(jitgrad.tensor(g))
    np.testing.assert_allclose(t.grad.resolve_conj().numpy(), tt.grad.resolve_conj().numpy(),
                               rtol=1e-12, atol=1e-14)


MIXED = [
    # two tensors of different dtypes (torch promotes, then its kernel may refuse)
    "L.gcd(L.tensor([4, 6]), L.tensor([True, False]))",
    "L.gcd(L.tensor([True]), L.tensor([True]))",
    "L.lcm(L.tensor([4, 6], dtype=L.uint8), L.tensor([True, True]))",
    "L.clamp(L.tensor([1, 5]), L.tensor([2.0 + 0j]), L.tensor([3.0 + 0j]))",
    "L.clamp(L.tensor([True]), L.tensor([False]), L.tensor([True]))",
    "L.tensor([1 + 1j]).clamp(L.tensor([0]), L.tensor([2]))",
    "L.clamp(L.tensor([1, 5]), L.tensor([2.5]), L.tensor([3]))",
    "L.heaviside(L.tensor([1, 0]), L.tensor([0.5 + 0j]))",
    "L.heaviside(L.tensor([1, 0]), L.tensor([0.5]))",
    "L.isclose(L.tensor([1]), L.tensor([1], dtype=L.int32))",
    "L.isin(L.tensor([1, 2]), L.tensor([True]))",
    "L.isin(L.tensor([1j]), L.tensor([1j]))",
    "L.isin(L.tensor([1, 2]), L.tensor([2.0]))",
    "L.polar(L.tensor([1, 2]), L.tensor([0, 1]))",
    "L.polar(L.tensor([1.0]), L.tensor([0.5], dtype=L.float64))",
    "L.polar(L.tensor([1.0], dtype=L.float16), L.tensor([0.5], dtype=L.float16))",
    "L.ldexp(L.tensor([1.5], dtype=L.float16), L.tensor([3]))",
    "L.ldexp(L.tensor([3]), L.tensor([2]))",
    "L.ldexp(L.tensor([1.5], dtype=L.float64), L.tensor([3], dtype=L.int8))",
]

DTYPE_ARGUMENTS = [
    # dtype= and the factories' dtypes, as torch's kernels take them
    "L.as_tensor(L.tensor([1, 2]), dtype=L.float32)",
    "L.tensor([-2, 5], dtype=L.uint8)",
    "L.tensor([-256], dtype=L.uint8)",
    "L.tensor([-1.5], dtype=L.uint8)",
    "L.arange(3, dtype=L.bool)",
    "L.arange(3, dtype=L.complex64)",
    "L.linspace(0, 1, 3, dtype=L.bool)",
    "L.logspace(0, 1, 3, dtype=L.bool)",
    "L.cumsum(L.ones(3), 0, dtype=L.bool)",
    "L.cumprod(L.ones(3), 0, dtype=L.bool)",
    "L.cumsum(L.ones(()), 0, dtype=L.bool)",
    "L.cumsum(L.ones(0), 0, dtype=L.bool)",
    "L.quantile(L.ones(3).half(), 0.5)",
    "L.linalg.vector_norm(L.ones(3), dtype=L.int64)",
    "L.linalg.vector_norm(L.ones(3), dtype=L.complex64)",
    "L.linalg.vector_norm(L.ones(3) * 1j, dtype=L.float32)",
    "L.nanmean(L.ones(3) * 1j, dtype=L.int64)",
    "L.tensor([1j, 2j]).abs_()",
    "L.tensor([1, 2]).atan2_(L.tensor([1j, 1j]))",
    "L.tensor([1, 2]).lt_(L.tensor([1j, 1j]))",
]


@pytest.mark.parametrize("code", CASES + MIXED + DTYPE_ARGUMENTS)
def test_matches_torch(code):
    torch = pytest.importorskip("torch")
    assert _outcome(jitgrad, code) == _outcome(torch, code)
