"""``nn.utils.parametrizations.orthogonal`` (its three maps, with and without the
trivialization's base, tall, wide, square, batched, complex) and ``torch.geqrf``/``orgqr``
against torch: values, gradients, state_dict keys, refusals."""

import numpy as np
import pytest

import jitgrad
from torch_compare import jitgrad_sizes, raises_as_torch

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
WEIGHTING = {shape: np.cos(np.arange(np.prod(shape))).reshape(shape)
             for shape in ((3, 3), (5, 3), (3, 5), (2, 4, 4))}


class Holder:
    """(a module of one weight: nn.Linear's or a batch of matrices)"""

    @staticmethod
    def make(lib, w):
        class Batched(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = lib.nn.Parameter(lib.tensor(w))

        if w.ndim == 3:
            return Batched()
        m = lib.nn.Linear(w.shape[1], w.shape[0], dtype=lib.float64)
        with lib.no_grad():
            m.weight.copy_(lib.tensor(w))
            m.bias.zero_()
        return m


def _parametrized(lib, w, kind, trivialization):
    m = Holder.make(lib, w)
    lib.nn.utils.parametrizations.orthogonal(m, orthogonal_map=kind,
                                             use_trivialization=trivialization)
    weight = m.weight
    (weight * lib.tensor(WEIGHTING[w.shape])).sum().backward()
    original = m.parametrizations.weight.original
    return (weight.detach().numpy(), original.grad.numpy(), original.detach().numpy(),
            sorted(m.state_dict()))


@pytest.mark.parametrize("trivialization", [True, False], ids=["base", "no-base"])
@pytest.mark.parametrize("kind", ["matrix_exp", "cayley", "householder", None])
@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (3, 5), (2, 4, 4)], ids=str)
def test_orthogonal_matches_torch(shape, kind, trivialization):
    w = RNG.standard_normal(shape)
    if shape[-2] != shape[-1] and trivialization:
        # (the base completes a tall matrix by random columns: another draw in each library)
        m = Holder.make(jitgrad, w)
        jitgrad.nn.utils.parametrizations.orthogonal(m, orthogonal_map=kind)
        q = m.weight.detach().numpy()
        gram = q.T @ q if shape[0] > shape[1] else q @ q.T
        np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-12)
        return
    ours, theirs = _parametrized(jitgrad, w, kind, trivialization), \
        _parametrized(torch, w, kind, trivialization)
    assert ours[3] == theirs[3]  # state_dict keys (the base buffer among them)
    for a, b in zip(ours[:3], theirs[:3]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    q = ours[0].reshape((-1,) + shape[-2:])
    for m in q:
        gram = m.T @ m if shape[-2] >= shape[-1] else m @ m.T
        np.testing.assert_allclose(gram, np.eye(min(shape[-2:])), atol=1e-12)


def test_training_on_the_orthogonal_manifold_stays_orthogonal():
    m = jitgrad.nn.Linear(4, 4, dtype=jitgrad.float64)
    jitgrad.nn.utils.parametrizations.orthogonal(m)
    opt = jitgrad.optim.SGD(m.parameters(), lr=0.1)
    x = jitgrad.randn(16, 4, dtype=jitgrad.float64)
    target = x.flip(-1)  # (a permutation: orthogonal, so reachable)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = ((m(x) - target) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        w = m.weight.detach().numpy()
        np.testing.assert_allclose(w.T @ w, np.eye(4), atol=1e-10)
    assert losses[-1] < 0.5 * losses[0]


def test_unitary_complex_weights_and_refusals_match_torch():
    m = jitgrad.nn.Linear(3, 3, dtype=jitgrad.complex128)
    jitgrad.nn.utils.parametrizations.orthogonal(m)
    w = m.weight.detach().numpy()
    np.testing.assert_allclose(w.conj().T @ w, np.eye(3), atol=1e-12)
    calls = [
        lambda lib: lib.nn.utils.parametrizations.orthogonal(
            lib.nn.Linear(3, 3, dtype=lib.complex128), orthogonal_map="householder"),
        lambda lib: lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(3, 3),
                                                             orthogonal_map="qr"),
        lambda lib: lib.nn.utils.parametrizations.orthogonal(lib.nn.BatchNorm1d(3)),
        lambda lib: lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(3, 3), "kernel"),
    ]

    def assign(lib, value, kind):
        m = lib.nn.Linear(3, 3)
        lib.nn.utils.parametrizations.orthogonal(m, orthogonal_map=kind,
                                                 use_trivialization=False)
        m.weight = value(lib)

    calls += [lambda lib: assign(lib, lambda L: L.eye(3), "cayley"),
              lambda lib: assign(lib, lambda L: L.eye(4), "householder")]
    for call in calls:
        raises_as_torch(lambda c=call: c(torch), lambda c=call: c(jitgrad), translate=jitgrad_sizes)


# -------------------------------------------------------------------------- geqrf / orgqr


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 5, 3), (0, 3)], ids=str)
def test_geqrf_and_orgqr_match_torch(shape, dtype):
    a = RNG.standard_normal(shape) * (1 + 0.5j if dtype == "complex128" else 1)
    t = torch.geqrf(torch.tensor(a, dtype=getattr(torch, dtype)))
    j = jitgrad.geqrf(jitgrad.tensor(a, dtype=getattr(jitgrad, dtype)))
    assert type(j).__name__ == "geqrf" and j._fields == ("a", "tau")
    tol = 1e-5 if dtype == "float32" else 1e-12
    for ours, theirs in zip(j, t):
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.dtype.is_complex == \
            theirs.dtype.is_complex
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=tol, atol=tol)
    if shape[-2] >= shape[-1]:
        np.testing.assert_allclose(jitgrad.orgqr(*j).numpy(), torch.orgqr(*t).numpy(),
                                   rtol=tol, atol=tol)
        np.testing.assert_allclose(j.a.orgqr(j.tau).numpy(), torch.orgqr(*t).numpy(),
                                   rtol=tol, atol=tol)


def test_geqrf_is_not_differentiable_and_refuses_as_torch():
    x = jitgrad.randn(4, 3, requires_grad=True)
    out = x.geqrf()
    assert type(out.a.grad_fn).__name__ == "GeqrfBackward0"
    with pytest.raises(NotImplementedError, match="the derivative for 'geqrf' is not "
                                                  "implemented."):
        out.a.sum().backward()
    for call in (lambda lib: lib.geqrf(lib.ones(3)),
                 lambda lib: lib.geqrf(lib.ones(3, 2, dtype=lib.long)),
                 lambda lib: lib.geqrf(lib.ones(3, 2, dtype=lib.float16))):
        raises_as_torch(lambda c=call: c(torch), lambda c=call: c(jitgrad))
