"""The cross-entropy head: ``nll_loss``'s one-pass forward (``nn_kernels.nll_loss``) against the
NumPy code it replaces, its backward as a comparison with the class numbers (no scatter_add), and
an MLP train step under ``jit`` (W2's shape of graph) against the interpreter and torch."""

from __future__ import annotations

import re

import numpy as np
import pytest

import jitgrad
import jitgrad.nn.functional as F
from jitgrad.jit import jit
from jitgrad.ops import nn_ops

pytest.importorskip("numba")


def _numpy_nll(logp, target, reduction, ignore_index):
    """The NumPy path of ``_nll_impl`` (the one with class weights), weights all one."""
    ones = np.ones(logp.shape[-1], dtype=logp.dtype)
    return nn_ops._nll_impl(logp, target, ones, reduction, ignore_index)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_one_pass_forward_equals_the_numpy_code(dtype, reduction):
    rng = np.random.default_rng(0)
    logp = rng.standard_normal((37, 11)).astype(dtype)
    target = rng.integers(0, 11, 37)
    target[[3, 8, 20]] = -100
    got = nn_ops._nll_impl(logp, target, None, reduction, -100)
    want = _numpy_nll(logp, target, reduction, -100)
    assert got.dtype == logp.dtype and got.shape == ()
    np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-13)
    # unbatched: one row
    one = nn_ops._nll_impl(logp[0], target[:1].reshape(()), None, reduction, -100)
    np.testing.assert_allclose(one, -logp[0, target[0]], rtol=1e-6)


def test_one_pass_forward_names_the_first_bad_target():
    logp = np.zeros((4, 3), np.float32)
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):
        nn_ops._nll_impl(logp, np.array([0, 7, -1, 1]), None, "mean", -100)
    with pytest.raises(IndexError, match="Target -1 is out of bounds."):
        nn_ops._nll_impl(logp, np.array([0, -1, 7, 1]), None, "sum", -100)
    # an ignored row is not checked
    assert nn_ops._nll_impl(logp, np.array([0, 1, 2, 5]), None, "mean", 5) == 0


def test_all_rows_ignored_is_nan_as_torch():
    logp = np.zeros((2, 3), np.float32)
    assert np.isnan(nn_ops._nll_impl(logp, np.array([-100, -100]), None, "mean", -100))


def test_backward_is_one_hot_scaled_and_ignores_rows():
    logp = jitgrad.tensor(np.zeros((3, 4)), requires_grad=True)
    target = jitgrad.tensor(np.array([2, -100, 0]))
    F.nll_loss(logp, target).backward()
    want = np.zeros((3, 4))
    want[0, 2] = want[2, 0] = -0.5
    np.testing.assert_array_equal(logp.grad.numpy(), want)


def test_backward_under_jit_has_no_scatter():
    def f(x, t):
        return F.cross_entropy(x, t)

    x = jitgrad.tensor(np.random.default_rng(1).standard_normal((8, 5)), requires_grad=True)
    t = jitgrad.tensor(np.arange(8) % 5)
    text = str(jit(jitgrad.func.value_and_grad(f), backend="numba").lower(x, t))
    assert "scatter" not in text


def _mlp(x, labels, w1, b1, w2, b2):
    return F.cross_entropy(F.relu(x @ w1 + b1) @ w2 + b2, labels)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mlp_step_equals_the_interpreter_and_keeps_its_results(dtype):
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal((16, 12)), rng.integers(0, 6, 16),
              rng.standard_normal((12, 9)) / 4, rng.standard_normal(9) / 4,
              rng.standard_normal((9, 6)) / 3, rng.standard_normal(6) / 3]
    ts = [jitgrad.tensor(a.astype(dtype) if a.dtype.kind == "f" else a) for a in arrays]
    vg = jitgrad.func.value_and_grad(_mlp, argnums=(2, 3, 4, 5))
    fast, ref = jit(vg, backend="numba"), jit(vg, backend="interpreter")
    want_v, want_g = ref(*ts)
    first = None
    for _ in range(6):  # past the calls run kernel by kernel: the whole programs too
        v, g = fast(*ts)
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(v.numpy(), want_v.numpy(), rtol=tol)
        for a, b in zip(g, want_g):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=tol)
        if first is None:
            first = [a.numpy().copy() for a in g], g
    kept, g0 = first
    for a, b in zip(kept, g0):  # the first call's gradients were not overwritten
        np.testing.assert_array_equal(a, b.numpy())


def test_mlp_step_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal((10, 7)), rng.integers(0, 4, 10),
              rng.standard_normal((7, 5)), rng.standard_normal(5),
              rng.standard_normal((5, 4)), rng.standard_normal(4)]
    ts = [jitgrad.tensor(a) for a in arrays]
    v, g = jit(jitgrad.func.value_and_grad(_mlp, argnums=(2, 3, 4, 5)), backend="numba")(*ts)
    tt = [torch.tensor(a, requires_grad=a.dtype.kind == "f" and i >= 2)
          for i, a in enumerate(arrays)]
    x, labels, w1, b1, w2, b2 = tt
    loss = torch.nn.functional.cross_entropy(torch.relu(x @ w1 + b1) @ w2 + b2, labels)
    want = torch.autograd.grad(loss, [w1, b1, w2, b2])
    np.testing.assert_allclose(v.numpy(), loss.detach().numpy(), rtol=1e-12)
    for a, b in zip(g, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


def test_gradcheck_cross_entropy_with_ignored_rows():
    x = jitgrad.tensor(np.random.default_rng(4).standard_normal((5, 3)), requires_grad=True)
    t = jitgrad.tensor(np.array([0, 2, -100, 1, 2]))
    assert jitgrad.autograd.gradcheck(lambda x: F.cross_entropy(x, t), (x,))


def _bias_grad(x, w, b):
    return ((x @ w + b) ** 2).sum()


def test_bias_gradient_is_one_unkept_sum_and_equals_the_interpreter():
    rng = np.random.default_rng(5)
    ts = [jitgrad.tensor(rng.standard_normal(s)) for s in ((6, 4), (4, 3), (3,))]
    vg = jitgrad.func.value_and_grad(_bias_grad, argnums=(1, 2))
    text = jit(vg, backend="numba").lower(*ts).forward_ir
    assert re.search(r"f64\[3\] = sum_dim \S+ dims=\(0,\) keepdim=False", text)
    assert "keepdim=True" not in text  # (no view after the sum)
    for _ in range(5):
        (v, g), (rv, rg) = jit(vg, backend="numba")(*ts), jit(vg, backend="interpreter")(*ts)
        np.testing.assert_allclose(v.numpy(), rv.numpy(), rtol=1e-12)
        for a, b in zip(g, rg):
            assert a.shape == b.shape
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_a_kept_sum_read_elsewhere_keeps_its_view():
    def f(x):
        s = x.sum(0, keepdim=True)
        return s.view(-1), s * 2

    x = jitgrad.tensor(np.arange(6.0).reshape(2, 3))
    text = jit(f, backend="interpreter").lower(x).forward_ir
    assert "keepdim=True" in text and "view" in text
    a, b = jit(f, backend="numba")(x)
    np.testing.assert_array_equal(a.numpy(), [3.0, 5.0, 7.0])
    np.testing.assert_array_equal(b.numpy(), [[6.0, 10.0, 14.0]])
