"""nn.utils.weight_norm / remove_weight_norm (torch's hook form) against torch: parameter
names and shapes, outputs, gradients of g and v, removal, errors and the FutureWarning."""

import numpy as np
import pytest

import jitgrad
from jitgrad import nn
from jitgrad.autograd import gradcheck
from jitgrad.nn.utils.weight_norm import _weight_norm

from torch_compare import same_error

pytestmark = pytest.mark.filterwarnings("ignore:`torch.nn.utils.weight_norm` is deprecated")

CASES = [("Linear", (3, 4), (5, 3), 0), ("Linear", (3, 4), (5, 3), None),
         ("Linear", (3, 4), (2, 3), 1), ("Conv2d", (2, 3, 2), (2, 2, 4, 4), 0),
         ("Conv2d", (2, 3, 2), (1, 2, 3, 3), 1), ("Conv1d", (2, 3, 2), (2, 2, 5), -1)]


@pytest.mark.parametrize("name,args,shape,dim", CASES, ids=[f"{c[0]}-{c[3]}" for c in CASES])
def test_weight_norm_matches_torch(name, args, shape, dim):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    j_mod, t_mod = getattr(nn, name)(*args).double(), getattr(torch.nn, name)(*args).double()
    w = rng.standard_normal(tuple(t_mod.weight.shape))
    b = rng.standard_normal(tuple(t_mod.bias.shape))
    outs = []
    for lib, m in ((jitgrad, j_mod), (torch, t_mod)):
        with lib.no_grad():
            m.weight.copy_(lib.tensor(w))
            m.bias.copy_(lib.tensor(b))
        lib.nn.utils.weight_norm(m, dim=dim)
        assert [n for n, _ in m.named_parameters()] == ["bias", "weight_g", "weight_v"]
        with lib.no_grad():
            m.weight_g.mul_(1.5)  # g no longer the norm of v: the output changes
        out = m(lib.tensor(x))
        (out * out).sum().backward()
        outs.append((out.detach().numpy(), m.weight_g.grad.numpy(), m.weight_v.grad.numpy(),
                     tuple(m.weight_g.shape)))
    for a, c in zip(*outs):
        if isinstance(a, tuple):
            assert a == c
        else:
            np.testing.assert_allclose(a, c, rtol=1e-10, atol=1e-12)
    for lib, m in ((jitgrad, j_mod), (torch, t_mod)):
        lib.nn.utils.remove_weight_norm(m)
    assert [n for n, _ in j_mod.named_parameters()] == [n for n, _ in t_mod.named_parameters()]
    np.testing.assert_allclose(j_mod.weight.detach().numpy(), t_mod.weight.detach().numpy(),
                               rtol=1e-12)
    assert isinstance(j_mod.weight, nn.Parameter)


def test_weight_norm_gradcheck():
    rng = np.random.default_rng(1)
    v = jitgrad.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    g = jitgrad.tensor(rng.standard_normal((3, 1)), requires_grad=True)
    assert gradcheck(lambda a, c: _weight_norm(a, c, 0), (v, g))
    g0 = jitgrad.tensor(1.7, dtype=jitgrad.float64, requires_grad=True)
    assert gradcheck(lambda a, c: _weight_norm(a, c, -1), (v, g0))


def test_weight_norm_warns_and_errors_as_torch():
    pytest.importorskip("torch")
    m = nn.Linear(2, 2)
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        nn.utils.weight_norm(m)

    def twice(lib):
        mod = lib.nn.utils.weight_norm(lib.nn.Linear(2, 2))
        lib.nn.utils.weight_norm(mod)

    same_error(twice)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in Linear"):
        nn.utils.remove_weight_norm(nn.Linear(2, 2))


def test_weight_norm_warning_names_the_librarys_line_as_torch():
    """torch's WeightNorm.apply is @deprecated: the FutureWarning names weight_norm's call of
    apply, one line for every caller, so the default filter shows it once a process (locuslab's
    TCN wraps two convolutions a block, from two lines of its own)."""
    import warnings

    torch = pytest.importorskip("torch")
    seen = {}
    for lib in (torch, jitgrad):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.nn.utils.weight_norm(lib.nn.Linear(2, 2))
            lib.nn.utils.weight_norm(lib.nn.Conv1d(2, 2, 3))
        assert [w.category for w in caught] == [FutureWarning] * 2
        assert caught[0].lineno == caught[1].lineno
        seen[lib.__name__] = caught[0].filename.replace("\\", "/").split("/")[-4:]
    assert seen["jitgrad"] == ["jitgrad", "nn", "utils", "weight_norm.py"]
    assert seen["torch"] == ["torch", "nn", "utils", "weight_norm.py"]


# ---------------------------------------------------------------- spectral_norm


SN_CASES = [("Linear", (3, 4), (5, 3), {}), ("Linear", (4, 6), (2, 4), {"n_power_iterations": 3}),
            ("Conv2d", (2, 3, 2), (2, 2, 4, 4), {}),
            ("ConvTranspose1d", (2, 3, 2), (2, 2, 5), {}),
            ("Conv1d", (3, 2, 2), (1, 3, 5), {"dim": 1, "eps": 1e-3})]


@pytest.mark.parametrize("name,args,shape,kwargs", SN_CASES,
                         ids=[f"{c[0]}-{c[3]}" for c in SN_CASES])
def test_spectral_norm_matches_torch_with_the_same_start_vectors(name, args, shape, kwargs):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    j_mod, t_mod = getattr(nn, name)(*args).double(), getattr(torch.nn, name)(*args).double()
    w = rng.standard_normal(tuple(t_mod.weight.shape))
    for lib, m in ((jitgrad, j_mod), (torch, t_mod)):
        with lib.no_grad():
            m.weight.copy_(lib.tensor(w))
            m.bias.zero_()
        lib.nn.utils.spectral_norm(m, **kwargs)
    assert list(j_mod.state_dict()) == list(t_mod.state_dict())
    assert [n for n, _ in j_mod.named_parameters()] == [n for n, _ in t_mod.named_parameters()]
    for key in ("weight_u", "weight_v"):  # the same start vectors (torch's, drawn with its RNG)
        assert tuple(getattr(j_mod, key).shape) == tuple(getattr(t_mod, key).shape)
        np.testing.assert_allclose(np.linalg.norm(getattr(j_mod, key).numpy()), 1.0)
        with jitgrad.no_grad():
            getattr(j_mod, key).copy_(jitgrad.tensor(getattr(t_mod, key).numpy()))
    for step in range(4):
        if step == 3:
            j_mod.eval()
            t_mod.eval()
        x = rng.standard_normal(shape)
        outs = []
        for lib, m in ((jitgrad, j_mod), (torch, t_mod)):
            m.zero_grad()
            out = m(lib.tensor(x))
            (out * out).sum().backward()
            outs.append((out.detach().numpy(), m.weight_orig.grad.numpy(),
                         m.weight_u.numpy(), m.weight.detach().numpy()))
        for a, c in zip(*outs):
            np.testing.assert_allclose(a, c, rtol=1e-9, atol=1e-12)
    for lib, m in ((jitgrad, j_mod), (torch, t_mod)):
        lib.nn.utils.remove_spectral_norm(m)
    assert list(j_mod.state_dict()) == list(t_mod.state_dict())
    np.testing.assert_allclose(j_mod.weight.detach().numpy(), t_mod.weight.detach().numpy(),
                               rtol=1e-10)


def test_spectral_norm_converges_to_the_largest_singular_value():
    jitgrad.manual_seed(0)
    m = nn.utils.spectral_norm(nn.Linear(6, 5), n_power_iterations=30)
    m(jitgrad.randn(2, 6))
    sigma = np.linalg.svd(m.weight.detach().numpy(), compute_uv=False)[0]
    np.testing.assert_allclose(sigma, 1.0, rtol=1e-4)


def test_spectral_norm_errors_match_torch():
    pytest.importorskip("torch")
    same_error(lambda lib: lib.nn.utils.spectral_norm(lib.nn.Linear(2, 2),
                                                      n_power_iterations=0))

    def twice(lib):
        lib.nn.utils.spectral_norm(lib.nn.utils.spectral_norm(lib.nn.Linear(2, 2)))

    same_error(twice)
    same_error(lambda lib: lib.nn.utils.remove_spectral_norm(lib.nn.Linear(2, 2)))
