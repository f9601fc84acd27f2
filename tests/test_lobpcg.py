"""``lobpcg``: torch's LOBPCG eigensolver ported to jitgrad ops, against torch's (eigenvalues,
residuals, the generalized and batched problems, gradients with respect to ``A``, errors)."""

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.autograd import gradcheck

torch = pytest.importorskip("torch")


def _spd(m, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(m, m, dtype=torch.float64, generator=g))
    a = q @ torch.diag(torch.arange(1.0, m + 1, dtype=torch.float64) * scale) @ q.T
    return (a + a.T) / 2


def _j(t, grad=False):
    out = jg.tensor(t.detach().numpy())
    return out.requires_grad_() if grad else out


@pytest.mark.parametrize("method", ["ortho", "basic"])
@pytest.mark.parametrize("largest", [True, False])
def test_eigenpairs_match_torch(method, largest):
    a = _spd(20, 0)
    x = torch.randn(20, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    e, _ = torch.lobpcg(a, k=3, X=x, method=method, largest=largest)
    je, jv = jg.lobpcg(_j(a), k=3, X=_j(x), method=method, largest=largest)
    np.testing.assert_allclose(je.numpy(), e.numpy(), atol=1e-6)
    assert float((_j(a) @ jv - jv * je).abs().max()) < 1e-5  # eigenvectors: A v = e v
    np.testing.assert_allclose((jv.mT @ jv).numpy(), np.eye(3), atol=1e-6)


def test_generalized_batched_and_tracked_problems():
    a, b = _spd(18, 2), torch.eye(18, dtype=torch.float64) * 2
    e, _ = torch.lobpcg(a, k=2, B=b)
    je, _ = jg.lobpcg(_j(a), k=2, B=_j(b))
    np.testing.assert_allclose(je.numpy(), e.numpy(), atol=1e-6)
    batch = torch.stack([_spd(15, 3), _spd(15, 4, 2.0)])
    je, jv = jg.lobpcg(_j(batch), k=2, largest=False)
    assert tuple(je.shape) == (2, 2) and tuple(jv.shape) == (2, 15, 2)
    np.testing.assert_allclose(je.numpy(), [[1.0, 2.0], [2.0, 4.0]], atol=1e-6)
    steps = []

    def tracker(worker):
        steps.append(worker.ivars["istep"])
        if worker.ivars["istep"] == 2:
            worker.bvars["force_stop"] = True

    jg.lobpcg(_j(a), k=2, tracker=tracker, tol=1e-30)
    assert steps == [1, 2]


def test_gradients_with_respect_to_a_match_torch():
    a = _spd(16, 5)
    x = torch.randn(16, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    for pick in (lambda m, e, v: e.sum(),  # (a sign-independent function of the vectors)
                 lambda m, e, v: (v[:, 0] ** 2 * m.arange(16.0).to(v.dtype)).sum()):
        ta = a.clone().requires_grad_()
        pick(torch, *torch.lobpcg(ta, k=2, X=x)).backward()
        ja = _j(a, True)
        pick(jg, *jg.lobpcg(ja, k=2, X=_j(x))).backward()
        np.testing.assert_allclose(ja.grad.numpy(), ta.grad.numpy(), atol=1e-6)
    # all eigenpairs: the complete-eigenspace formula, checked numerically
    small = _j(_spd(6, 7), True)
    assert gradcheck(lambda m: jg.lobpcg((m + m.mT) / 2, k=2, n=2, X=_j(x[:6]))[0], (small,),
                     atol=1e-5)


def test_errors_match_torch():
    cases = [lambda m, t: m.lobpcg(t(np.ones((5, 5))), k=2),
             lambda m, t: m.lobpcg(t(np.ones((5, 4))))]
    for case in cases:
        with pytest.raises((ValueError, AssertionError)) as te:
            case(torch, torch.tensor)
        with pytest.raises(type(te.value)) as je:
            case(jg, jg.tensor)
        assert str(je.value).replace("jitgrad", "torch") == str(te.value)
    a = _j(_spd(12, 8), True)
    e, _ = jg.lobpcg(a, k=2, B=jg.eye(12, dtype=jg.float64))
    with pytest.raises(ValueError, match="does not support backward with B != I"):
        e.sum().backward()
