"""Fractional max pooling: exact against torch with ``_random_samples`` given, structural and
statistical checks with drawn samples, gradcheck, the layers' surface and errors."""

import numpy as np
import pytest

import jitgrad
import jitgrad.nn as nn
import jitgrad.nn.functional as F

rng = np.random.default_rng(2024)

CASES = [(2, (2, 3, 11, 9), (3, 2), (4, 5)), (2, (3, 11, 9), 2, (5, 4)),
         (2, (2, 3, 11, 9), (3, 2), (1, 5)), (3, (2, 3, 7, 9, 8), 2, (3, 4, 5)),
         (3, (3, 7, 9, 8), (2, 3, 2), (4, 4, 3))]


@pytest.mark.parametrize("nd,shape,k,size", CASES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_exact_vs_torch_with_samples(nd, shape, k, size, dtype):
    torch = pytest.importorskip("torch")
    a = rng.standard_normal(shape).astype(dtype)
    n = shape[0] if len(shape) == nd + 2 else 1
    u = rng.random((n, shape[-nd - 1], nd)).astype(dtype)
    xj, xt = jitgrad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    name = f"fractional_max_pool{nd}d"
    vj, ij = getattr(F, name)(xj, k, output_size=size, return_indices=True,
                              _random_samples=jitgrad.tensor(u))
    vt, it = getattr(torch.nn.functional, name)(xt, k, output_size=size, return_indices=True,
                                                _random_samples=torch.tensor(u))
    np.testing.assert_array_equal(ij.numpy(), it.numpy())
    np.testing.assert_array_equal(vj.detach().numpy(), vt.detach().numpy())
    g = rng.standard_normal(tuple(vt.shape)).astype(dtype)
    vj.backward(jitgrad.tensor(g))
    vt.backward(torch.tensor(g))
    np.testing.assert_allclose(xj.grad.numpy(), xt.grad.numpy(), rtol=1e-6)
    wj = getattr(F, name + "_with_indices")(xj, k, size, _random_samples=jitgrad.tensor(u))
    np.testing.assert_array_equal(wj[1].numpy(), it.numpy())


@pytest.mark.parametrize("nd", [2, 3])
def test_structure_with_drawn_samples(nd):
    shape = (2, 3) + (11,) * nd  # alpha = 9 / 4: the windows depend on the samples
    x = jitgrad.randn(*shape, dtype=jitgrad.float64)
    k = 2
    outs = set()
    for _ in range(8):
        v, i = getattr(F, f"fractional_max_pool{nd}d")(x, k, output_ratio=0.5,
                                                        return_indices=True)
        assert v.shape == shape[:2] + (5,) * nd and i.dtype == jitgrad.int64
        flat = x.reshape(2, 3, -1).numpy()
        idx = i.reshape(2, 3, -1).numpy()
        # every value is the input at its index, the max of a k-window containing it
        np.testing.assert_array_equal(np.take_along_axis(flat, idx, -1),
                                      v.reshape(2, 3, -1).numpy())
        coords = np.stack(np.unravel_index(idx, shape[2:]), -1)  # (2, 3, P, nd)
        # the windows advance monotonically along each dim (strides 1 or 2 for ratio 0.5)
        assert (coords >= 0).all() and (coords < 11).all()
        outs.add(v.numpy().tobytes())
    assert len(outs) > 1  # the samples are drawn anew per call


def test_samples_are_uniform_and_drive_window_starts():
    from jitgrad.nn.fractional import _starts

    u = np.linspace(0, 0.999, 200)
    seq = _starts(u, 25, 10, 3)
    assert (seq[:, 0] == 0).all() and (seq[:, -1] == 22).all()
    steps = np.diff(seq, axis=1)
    assert set(np.unique(steps)) <= {2, 3}  # alpha = 22 / 9: steps floor/ceil of alpha
    # the mean step is alpha
    assert abs(steps.mean() - 22 / 9) < 0.05
    jitgrad.manual_seed(0)
    draws = []
    m = nn.FractionalMaxPool2d(2, output_size=4, return_indices=True)
    x = jitgrad.arange(100.0).reshape(1, 1, 10, 10)  # increasing: the max is each window's last
    for _ in range(200):
        draws.append(tuple(m(x)[1].numpy().ravel()))
    assert len(set(draws)) > 3
    # alpha = 8 / 3: the second window starts at int((1 + u) a) - int(u a), 2 for u in
    # [0, 1/8), [3/8, 1/2) and [3/4, 7/8) (probability 3/8), else 3
    second = np.array([d[1] % 10 - 1 for d in draws])
    assert set(second) == {2, 3}
    assert 0.25 < (second == 2).mean() < 0.5


def test_gradcheck():
    x = jitgrad.tensor(rng.standard_normal((1, 2, 7, 6)), requires_grad=True)
    u = jitgrad.tensor(rng.random((1, 2, 2)))
    assert jitgrad.autograd.gradcheck(
        lambda x: F.fractional_max_pool2d(x, 2, (3, 4), _random_samples=u), (x,))
    x3 = jitgrad.tensor(rng.standard_normal((1, 2, 5, 4, 5)), requires_grad=True)
    u3 = jitgrad.tensor(rng.random((1, 2, 3)))
    assert jitgrad.autograd.gradgradcheck(
        lambda x: F.fractional_max_pool3d(x, 2, 3, _random_samples=u3), (x3,))


def test_modules_vs_torch():
    torch = pytest.importorskip("torch")
    for name, args, kw in [("FractionalMaxPool2d", (3,), dict(output_size=(4, 5))),
                           ("FractionalMaxPool2d", (2,), dict(output_ratio=0.5,
                                                              return_indices=True)),
                           ("FractionalMaxPool3d", ((2, 3, 2),), dict(output_ratio=(0.5, 0.4,
                                                                                    0.6)))]:
        mj, mt = getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
        assert repr(mj) == repr(mt)
        for a in ("kernel_size", "output_size", "output_ratio", "return_indices"):
            assert getattr(mj, a) == getattr(mt, a)
        assert list(mj.state_dict()) == list(mt.state_dict()) == []
    u = rng.random((1, 2, 2))
    mj = nn.FractionalMaxPool2d(2, output_size=3, _random_samples=jitgrad.tensor(u))
    mt = torch.nn.FractionalMaxPool2d(2, output_size=3, _random_samples=torch.tensor(u))
    assert list(mj.state_dict()) == list(mt.state_dict()) == ["_random_samples"]
    a = rng.standard_normal((1, 2, 6, 6))
    np.testing.assert_array_equal(mj(jitgrad.tensor(a)).numpy(), mt(torch.tensor(a)).numpy())


def test_errors():
    with pytest.raises(ValueError, match="FractionalMaxPool2d requires specifying either an "
                                         "output size, or a pooling ratio"):
        nn.FractionalMaxPool2d(2)
    with pytest.raises(ValueError, match="only one of output_size and output_ratio"):
        nn.FractionalMaxPool3d(2, 2, 0.5)
    with pytest.raises(ValueError, match=r"output_ratio must be between 0 and 1 \(got 1.5\)"):
        nn.FractionalMaxPool2d(2, output_ratio=1.5)
    with pytest.raises(ValueError, match="kernel_size must be greater than 0, but got 0"):
        nn.FractionalMaxPool3d(0, output_size=2)
    with pytest.raises(ValueError, match="fractional_max_pool2d requires specifying either"):
        F.fractional_max_pool2d(jitgrad.randn(1, 2, 5, 5), 2)
    with pytest.raises(RuntimeError, match="fractional_max_pool2d\\(\\): pool height 3 too "
                                           "large relative to input height 5"):
        F.fractional_max_pool2d(jitgrad.randn(1, 2, 5, 5), 3, output_size=4)
    with pytest.raises(RuntimeError, match="fractional_max_pool3d_out\\(\\): pool time 3 too "
                                           "large relative to input time 5"):
        F.fractional_max_pool3d(jitgrad.randn(1, 2, 5, 5, 5), 3, output_size=4)
    with pytest.raises(RuntimeError, match="Expect _random_samples.size\\(1\\) equals to input "
                                           "channel size."):
        F.fractional_max_pool2d(jitgrad.randn(1, 2, 5, 5), 2, output_size=3,
                                _random_samples=jitgrad.rand(1, 3, 2))
