"""torch's deprecated scalar-first overloads (``p.data.add_(-lr, p.grad.data)`` in old
tutorials): same values and gradients as the current signatures, torch's warning once, named at
the caller's line."""

import warnings

import pytest

import jitgrad
from jitgrad.autograd import gradcheck
from jitgrad.ops import overloads

CALLS = {
    "add": (lambda x, y, z: x.add(-0.5, y), lambda x, y, z: x.add(y, alpha=-0.5)),
    "torch.add": (lambda x, y, z: jitgrad.add(x, 2, y), lambda x, y, z: jitgrad.add(x, y, alpha=2)),
    "sub": (lambda x, y, z: x.sub(3, y), lambda x, y, z: x.sub(y, alpha=3)),
    "torch.sub": (lambda x, y, z: jitgrad.sub(x, 3, y), lambda x, y, z: jitgrad.sub(x, y, alpha=3)),
    "addcmul": (lambda x, y, z: x.addcmul(0.5, y, z), lambda x, y, z: x.addcmul(y, z, value=0.5)),
    "torch.addcmul": (lambda x, y, z: jitgrad.addcmul(x, 2, y, z),
                      lambda x, y, z: jitgrad.addcmul(x, y, z, value=2)),
    "addcdiv": (lambda x, y, z: x.addcdiv(-2, y, z), lambda x, y, z: x - 2 * y / z),
}


def _xyz():
    g = jitgrad.Generator().manual_seed(0)
    return [(jitgrad.rand(3, generator=g, dtype=jitgrad.float64) + 0.5).requires_grad_()
            for _ in range(3)]


@pytest.mark.parametrize("name", sorted(CALLS))
def test_scalar_first_overload_equals_the_keyword_form_with_gradients(name):
    old, new = CALLS[name]
    x, y, z = _xyz()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert jitgrad.equal(old(x, y, z), new(x, y, z))
        assert gradcheck(old, (x, y, z))


@pytest.mark.parametrize("method", ["add_", "sub_", "addcmul_", "addcdiv_"])
def test_in_place_scalar_first_overload(method):
    x, y, z = (t.detach() for t in _xyz())
    extra = (y,) if method in ("add_", "sub_") else (y, z)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = getattr(x.clone(), method)(2, *extra)
    assert jitgrad.equal(got, getattr(x.clone(), method)(*extra, **(
        {"alpha": 2} if method in ("add_", "sub_") else {"value": 2})))


def test_the_warning_is_torchs_once_per_process_at_the_callers_line(monkeypatch):
    monkeypatch.setattr(overloads, "_WARNED", set())
    p, g = jitgrad.ones(3), jitgrad.full((3,), 2.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p.add_(-0.5, g)
        p.add_(-0.5, g)
    assert len(caught) == 1
    assert str(caught[0].message) == (
        "This overload of add is deprecated:\n\tadd(Number alpha, Tensor other)\nConsider using "
        "one of the following signatures instead:\n\tadd(Tensor other, *, Number alpha = 1)")
    assert caught[0].filename == __file__
    assert p.tolist() == [-1.0, -1.0, -1.0]


def test_other_extra_positional_arguments_are_a_type_error():
    x = jitgrad.ones(3)
    with pytest.raises(TypeError, match=r"add\(\) takes 2 positional arguments but 3 were given"):
        x.add(x, 2)
    with pytest.raises(TypeError, match="addcmul"):
        jitgrad.addcmul(x, 2, x, 3)


def test_matches_torch():
    torch = pytest.importorskip("torch")
    x, y, z = (t.detach() for t in _xyz())
    tx, ty, tz = (torch.tensor(t.tolist(), dtype=torch.float64) for t in (x, y, z))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (old, _) in CALLS.items():
            if not name.startswith("torch."):
                expect = old(tx, ty, tz)
                assert old(x, y, z).tolist() == pytest.approx(expect.tolist(), rel=1e-15), name


def test_cross_without_dim_warns_at_the_callers_line():
    x = jitgrad.ones(3)
    for call in (lambda: jitgrad.cross(x, x), lambda: x.cross(x),
                 lambda: jitgrad.cross(x, x, out=jitgrad.empty(3))):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        assert caught[0].filename == __file__
        assert str(caught[0].message).startswith("Using torch.cross without specifying the dim")
