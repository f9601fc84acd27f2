"""torch's fused CPU arithmetic (``jitgrad/ops/fused_arith.py``): add/sub with ``alpha``,
addcmul and lerp round their multiply-add once, addcdiv divides the product; against exact
rational arithmetic, against torch bit for bit (float32 and float64), and SGD trajectories
equal to torch's to the bit."""

from fractions import Fraction

import numpy as np
import pytest

import jitgrad
from jitgrad.ops import fused_arith

FUSED = ["float32", "float64"]


def _exact_fma(a, b, c, dtype):
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    return dtype(np.float64(exact)) if dtype is np.float32 else np.float64(exact)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fma_is_rounded_once(dtype):
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(400).astype(dtype) * rng.choice([1e-3, 1, 1e3], 400)
               .astype(dtype) for _ in range(3))
    c[:100] = -(a[:100].astype(np.float64) * b[:100]).astype(dtype)  # cancellation
    ours = fused_arith.fma(a, b, c, np.dtype(dtype))
    if dtype is np.float64:  # (float32: rounding float64 to float32 is the double rounding
        # the module documents; Fraction -> float64 -> float32 is the same path)
        expected = np.array([_exact_fma(x, y, z, dtype) for x, y, z in zip(a, b, c)])
    else:
        expected = np.array([np.float32(np.float64(Fraction(float(x)) * Fraction(float(y))
                                                   + Fraction(float(z))))
                             for x, y, z in zip(a, b, c)])
    np.testing.assert_array_equal(ours, expected)
    assert not np.array_equal(ours, (a * b + c).astype(dtype))  # the unfused form differs
    # strided operands take the NumPy form (contiguous ones a Numba pass): the same values
    strided = fused_arith.fma(*(np.repeat(v, 2)[::2] for v in (a, b, c)), np.dtype(dtype))
    np.testing.assert_array_equal(strided, expected)
    # the in-place Numba pass (contracted to the CPU's fma) agrees with the NumPy form
    out = c.copy()
    fused_arith.fma_(out, float(a[7]), b, out)
    np.testing.assert_array_equal(out, fused_arith.fma(a[7], b, c, np.dtype(dtype)))
    # non-finite values: the plain product and sum
    special = fused_arith.fma(np.array([np.inf, 1e308, np.nan], dtype),
                              np.array([2.0, 10.0, 1.0], dtype), np.zeros(3, dtype),
                              np.dtype(dtype))
    assert special[0] == np.inf and special[1] == np.inf and np.isnan(special[2])


OPS = {
    "add_alpha": lambda L, x, y, z: x.add(y, alpha=0.3),
    "sub_alpha": lambda L, x, y, z: x.sub(y, alpha=1.7),
    "add_int_alpha": lambda L, x, y, z: L.add(x, y, alpha=3),
    "add_alpha_inplace": lambda L, x, y, z: x.clone().add_(y, alpha=-0.7),
    "addcmul": lambda L, x, y, z: x.addcmul(y, z, value=0.3),
    "addcmul_inplace": lambda L, x, y, z: x.clone().addcmul_(y, z, value=-0.3),
    "addcdiv": lambda L, x, y, z: x.addcdiv(y, z.abs() + 0.1, value=0.3),
    "addcdiv_inplace": lambda L, x, y, z: x.clone().addcdiv_(y, z.abs() + 0.1, value=-3.0),
    "lerp_small": lambda L, x, y, z: x.lerp(y, 0.3),
    "lerp_large": lambda L, x, y, z: x.lerp(y, 0.7),
    "lerp_inplace": lambda L, x, y, z: x.clone().lerp_(y, 0.1),
    # (a weight from IEEE-exact ops: both libraries hold the same weights)
    "lerp_tensor_weight": lambda L, x, y, z: x.lerp(y, z.abs() / (z.abs() + 1e-3) - 0.2),
}


@pytest.mark.parametrize("n", [5, 1003])
@pytest.mark.parametrize("dtype", FUSED)
@pytest.mark.parametrize("name", sorted(OPS))
def test_bitwise_equal_to_torch(name, dtype, n):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(n)
    values = [rng.standard_normal(n) * scale for scale in (1.0, 1e3, 1e-3)]
    ours = OPS[name](jitgrad, *(jitgrad.tensor(v, dtype=getattr(jitgrad, dtype))
                                for v in values))
    theirs = OPS[name](torch, *(torch.tensor(v, dtype=getattr(torch, dtype)) for v in values))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def _trajectory(lib, dtype, kwargs, steps=12):
    rng = np.random.default_rng(3)
    p = lib.nn.Parameter(lib.tensor(rng.standard_normal((30, 20)), dtype=getattr(lib, dtype)))
    opt = lib.optim.SGD([p], lr=0.05, **kwargs)
    for _ in range(steps):
        p.grad = lib.tensor(rng.standard_normal((30, 20)), dtype=getattr(lib, dtype))
        opt.step()
    return p.detach().numpy()


SGD_SETTINGS = [{}, {"momentum": 0.9}, {"momentum": 0.9, "dampening": 0.1},
                {"momentum": 0.9, "nesterov": True, "weight_decay": 1e-3},
                {"weight_decay": 0.01, "maximize": True}]


@pytest.mark.parametrize("foreach", [None, False])
@pytest.mark.parametrize("dtype", FUSED)
@pytest.mark.parametrize("kwargs", SGD_SETTINGS, ids=str)
def test_sgd_trajectories_equal_torch_to_the_bit(kwargs, dtype, foreach):
    """jitgrad's default (fused NumPy) step and its op-by-op loop both; torch's default."""
    torch = pytest.importorskip("torch")
    ours = _trajectory(jitgrad, dtype, dict(kwargs, foreach=foreach))
    np.testing.assert_array_equal(ours, _trajectory(torch, dtype, kwargs))
