"""torch.cholesky / qr / lu / lu_solve (deprecated; on torch.linalg), against torch."""

import warnings

import numpy as np
import pytest

import jitgrad as jg
from jitgrad import _config

torch = pytest.importorskip("torch")


def _spd(seed=0):
    a = np.random.default_rng(seed).standard_normal((2, 4, 4))
    return a @ a.transpose(0, 2, 1) + 4 * np.eye(4)


def _run(lib, name):
    a = _spd()
    x = lib.tensor(a, requires_grad=True)
    b = lib.tensor(np.random.default_rng(1).standard_normal((2, 4, 3)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "cholesky":
            out = [lib.cholesky(x), lib.cholesky(x, upper=True), x.cholesky()]
        elif name == "qr":
            out = [*lib.qr(x), *lib.qr(x, some=False), x.qr().R]
        elif name == "lu":
            factors, pivots, infos = lib.lu(x, get_infos=True)
            out = [factors, pivots, infos, x.lu()[0]]
        else:
            factors, pivots = lib.linalg.lu_factor(x)
            out = [lib.lu_solve(b, factors, pivots), b.lu_solve(factors, pivots)]
    floating = [o for o in out if o.is_floating_point()]
    sum(o.sin().sum() for o in floating).backward()
    return [o.detach().numpy() for o in out], x.grad.numpy()


@pytest.mark.parametrize("name", ["cholesky", "qr", "lu", "lu_solve"])
def test_values_and_gradients_match_torch(name):
    ours, theirs = _run(jg, name), _run(torch, name)
    for a, b in zip(ours[0], theirs[0]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-9, atol=1e-11)


def test_each_warns_once_with_torchs_text(monkeypatch):
    monkeypatch.setattr(_config, "WARNED", set())
    a = jg.tensor(_spd())
    with pytest.warns(UserWarning, match="torch.cholesky is deprecated in favor of "
                      "torch.linalg.cholesky"):
        jg.cholesky(a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jg.cholesky(a)  # once per process
    with pytest.warns(UserWarning, match="torch.qr is deprecated in favor of torch.linalg.qr"):
        jg.qr(a)
    assert type(jg.qr(a)).__name__ == "qr"


def test_warnings_name_the_callers_line_and_errors_torch_cholesky(monkeypatch):
    """The deprecation warnings point at the user's line (they named jitgrad's out= wrapper),
    and torch.cholesky's error names ``cholesky``, not ``linalg.cholesky``, as torch's."""
    monkeypatch.setattr(_config, "WARNED", set())
    bad = np.stack([np.eye(3), np.diag([1.0, -1.0, 1.0])])
    for lib in (jg, torch):
        lib.set_warn_always(True)  # (torch's warned once in this process already)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                lib.cholesky(lib.tensor(np.eye(3)))
        finally:
            lib.set_warn_always(False)
        assert [w.filename for w in caught] == [__file__]
        with pytest.raises(RuntimeError, match=r"^cholesky: \(Batch element 1\): The "
                           r"factorization could not be completed .* order 2 is not"):
            lib.cholesky(lib.tensor(bad))
