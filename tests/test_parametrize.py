"""nn.utils.parametrize and parametrizations.weight_norm against torch: the injected class,
repr, state_dict keys, values and gradients of the originals, chained parametrizations,
assignment through right_inverse, removal and errors."""

import numpy as np
import pytest

import jitgrad
from jitgrad import nn
from jitgrad.nn.utils import parametrize

from torch_compare import same_error


def _symmetric(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(-1, -2)

        def right_inverse(self, a):
            return a.triu()

    return Symmetric()


def _scale(lib):
    class Scale(lib.nn.Module):
        def forward(self, x):
            return x * 2.0

        def right_inverse(self, y):
            return y / 2.0

    return Scale()


@pytest.mark.parametrize("dim", [0, 1, None])
def test_parametrized_weight_norm_matches_torch(dim):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((4, 3)), rng.standard_normal((5, 3))
    res = []
    for lib in (jitgrad, torch):
        m = lib.nn.Linear(3, 4).double()
        with lib.no_grad():
            m.weight.copy_(lib.tensor(w))
            m.bias.zero_()
        lib.nn.utils.parametrizations.weight_norm(m, dim=dim)
        with lib.no_grad():
            m.parametrizations.weight.original0.mul_(1.3)
        out = m(lib.tensor(x))
        (out * out).sum().backward()
        p = m.parametrizations.weight
        res.append((repr(m), list(m.state_dict()), out.detach().numpy(), p.original0.grad.numpy(),
                    p.original1.grad.numpy()))
    assert res[0][:2] == res[1][:2]
    for a, b in zip(res[0][2:], res[1][2:]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_custom_chained_parametrizations_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    w, x, new = (rng.standard_normal((3, 3)), rng.standard_normal((2, 3)),
                 rng.standard_normal((3, 3)))
    res = []
    for lib in (jitgrad, torch):
        m = lib.nn.Linear(3, 3).double()
        with lib.no_grad():
            m.weight.copy_(lib.tensor(w))
            m.bias.zero_()
        lib.nn.utils.parametrize.register_parametrization(m, "weight", _symmetric(lib))
        lib.nn.utils.parametrize.register_parametrization(m, "weight", _scale(lib))
        assert lib.nn.utils.parametrize.is_parametrized(m, "weight")
        assert not lib.nn.utils.parametrize.is_parametrized(m, "bias")
        out = m(lib.tensor(x))
        out.sum().backward()
        grad = m.parametrizations.weight.original.grad.numpy()
        m.weight = lib.tensor(new + new.T)  # through right_inverse, last first
        after = m.weight.detach().numpy()
        lib.nn.utils.parametrize.remove_parametrizations(m, "weight")
        res.append((out.detach().numpy(), grad, after, m.weight.detach().numpy(),
                    type(m).__name__, list(m.state_dict())))
    for a, b in zip(*res):
        if isinstance(a, np.ndarray):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
        else:
            assert a == b
    np.testing.assert_allclose(res[0][2], new + new.T, rtol=1e-12)


def test_remove_without_leaving_parametrized_keeps_the_original():
    m = nn.Linear(2, 2)
    parametrize.register_parametrization(m, "weight", _scale(jitgrad))
    original = m.parametrizations.weight.original.detach().numpy().copy()
    np.testing.assert_allclose(m.weight.detach().numpy(), original * 2)
    parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    np.testing.assert_allclose(m.weight.detach().numpy(), original)
    assert type(m) is nn.Linear and isinstance(m.weight, nn.Parameter)
    assert parametrize.type_before_parametrizations(m) is nn.Linear


def test_parametrize_errors_match_torch():
    pytest.importorskip("torch")
    same_error(lambda lib: lib.nn.utils.parametrize.remove_parametrizations(
        lib.nn.Linear(2, 2), "weight"))

    def unknown(lib):
        lib.nn.utils.parametrize.register_parametrization(lib.nn.Linear(2, 2), "w",
                                                          _scale(lib))

    same_error(unknown)

    def sequence_left(lib):
        m = lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(2, 2))
        lib.nn.utils.parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)

    same_error(sequence_left)


@pytest.mark.parametrize("name,args,shape,kwargs", [
    ("Linear", (3, 4), (5, 3), {}), ("Conv2d", (2, 3, 2), (1, 2, 4, 4), {"n_power_iterations": 2}),
    ("ConvTranspose1d", (2, 3, 2), (2, 2, 5), {"eps": 1e-4})])
def test_parametrized_spectral_norm_matches_torch_with_the_same_vectors(name, args, shape,
                                                                        kwargs):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    mods = [getattr(nn, name)(*args).double(), getattr(torch.nn, name)(*args).double()]
    w = rng.standard_normal(tuple(mods[1].weight.shape))
    for lib, m in zip((jitgrad, torch), mods):
        with lib.no_grad():
            m.weight.copy_(lib.tensor(w))
            m.bias.zero_()
        lib.nn.utils.parametrizations.spectral_norm(m, **kwargs)
    j, t = mods
    assert list(j.state_dict()) == list(t.state_dict()) and repr(j) == repr(t)
    for key in ("_u", "_v"):  # torch's start vectors (drawn with its generator)
        with jitgrad.no_grad():
            getattr(j.parametrizations.weight[0], key).copy_(
                jitgrad.tensor(getattr(t.parametrizations.weight[0], key).numpy()))
    for step in range(3):
        if step == 2:
            j.eval()
            t.eval()
        x = rng.standard_normal(shape)
        res = []
        for lib, m in zip((jitgrad, torch), mods):
            m.zero_grad()
            out = m(lib.tensor(x))
            (out * out).sum().backward()
            res.append((out.detach().numpy(), m.parametrizations.weight.original.grad.numpy(),
                        m.parametrizations.weight[0]._u.numpy()))
        for a, b in zip(*res):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_parametrized_spectral_norm_normalizes_the_largest_singular_value():
    jitgrad.manual_seed(0)
    m = nn.utils.parametrizations.spectral_norm(nn.Linear(6, 5))
    sigma = np.linalg.svd(m.weight.detach().numpy(), compute_uv=False)[0]
    np.testing.assert_allclose(sigma, 1.0, rtol=1e-3)  # after the 15 start iterations


def test_parametrized_spectral_norm_errors_match_torch():
    pytest.importorskip("torch")
    same_error(lambda lib: lib.nn.utils.parametrizations.spectral_norm(
        lib.nn.Linear(2, 2), n_power_iterations=0))
    same_error(lambda lib: lib.nn.utils.parametrizations.spectral_norm(lib.nn.Linear(2, 2),
                                                                       dim=2))
    same_error(lambda lib: lib.nn.utils.parametrizations.spectral_norm(lib.nn.Linear(2, 2),
                                                                       "w"))
