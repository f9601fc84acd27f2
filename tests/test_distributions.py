"""jitgrad.distributions against torch.distributions: log_prob, entropy, moments, cdf, their
gradients, sample shapes, rsample gradients, validation errors, and a REINFORCE loop."""

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.distributions as D
from jitgrad.autograd import gradcheck

torch = pytest.importorskip("torch")
TD = torch.distributions

rng = np.random.default_rng(0)
LOC, SCALE = rng.standard_normal(4), rng.uniform(0.5, 2.0, 4)
P = rng.uniform(0.1, 0.9, 4)
LOGITS = rng.standard_normal((2, 5))
COV = (lambda m: m @ m.T + 3 * np.eye(3))(rng.standard_normal((3, 3)))

# name, jitgrad/torch constructor args (as arrays), a value sampler, the methods to compare
CASES = [
    ("Normal", (LOC, SCALE), lambda: rng.standard_normal(4), ("mean", "stddev", "variance")),
    ("Uniform", (LOC - 1, LOC + SCALE), lambda: LOC - 1 + 0.5 * SCALE, ("mean", "variance")),
    ("Exponential", (SCALE,), lambda: rng.uniform(0.1, 3, 4), ("mean", "variance")),
    ("Laplace", (LOC, SCALE), lambda: rng.standard_normal(4), ("mean", "variance")),
    ("LogNormal", (LOC, SCALE), lambda: rng.uniform(0.2, 3, 4), ("mean", "variance")),
    ("Gumbel", (LOC, SCALE), lambda: rng.standard_normal(4), ("mean", "variance")),
    ("Cauchy", (LOC, SCALE), lambda: rng.standard_normal(4), ()),
    ("Bernoulli", (P,), lambda: (rng.uniform(size=4) < 0.5).astype(float), ("mean", "variance")),
    ("Geometric", (P,), lambda: rng.integers(0, 5, 4).astype(float), ("mean", "variance")),
    ("Poisson", (SCALE,), lambda: rng.integers(0, 5, 4).astype(float), ("mean", "variance")),
]


def _make(lib, name, args, grad=False):
    tensors = [(jg if lib is D else torch).tensor(a, requires_grad=grad) for a in args]
    return getattr(lib, name)(*tensors), tensors


@pytest.mark.parametrize("name,args,value,moments", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_torch(name, args, value, moments):
    v = value()
    mine, mine_args = _make(D, name, args, grad=True)
    theirs, their_args = _make(TD, name, args, grad=True)
    lp = mine.log_prob(jg.tensor(v))
    tlp = theirs.log_prob(torch.tensor(v))
    np.testing.assert_allclose(lp.detach().numpy(), tlp.detach().numpy(), rtol=1e-10)
    for attr in moments:
        np.testing.assert_allclose(getattr(mine, attr).detach().numpy(),
                                   getattr(theirs, attr).detach().numpy(), rtol=1e-10)
    try:
        want_entropy = theirs.entropy()
    except NotImplementedError:
        want_entropy = None
    if want_entropy is not None:
        np.testing.assert_allclose(mine.entropy().detach().numpy(),
                                   want_entropy.detach().numpy(), rtol=1e-10)
        (lp.sum() + mine.entropy().sum()).backward()
        (tlp.sum() + want_entropy.sum()).backward()
    else:
        lp.sum().backward()
        tlp.sum().backward()
    for a, b in zip(mine_args, their_args):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert tuple(mine.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(mine.sample((3,)).shape) == tuple(theirs.sample((3,)).shape)


def test_categorical_logits_and_probs():
    for kw in ("logits", "probs"):
        arg = LOGITS if kw == "logits" else np.exp(LOGITS) / np.exp(LOGITS).sum(-1, keepdims=True)
        mine = D.Categorical(**{kw: jg.tensor(arg, requires_grad=True)})
        theirs = TD.Categorical(**{kw: torch.tensor(arg, requires_grad=True)})
        value = np.array([1, 4])
        np.testing.assert_allclose(mine.log_prob(jg.tensor(value)).detach().numpy(),
                                   theirs.log_prob(torch.tensor(value)).detach().numpy(),
                                   rtol=1e-12)
        np.testing.assert_allclose(mine.entropy().detach().numpy(),
                                   theirs.entropy().detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(mine.probs.detach().numpy(), theirs.probs.detach().numpy(),
                                   rtol=1e-12)
        draws = mine.sample((4000,))
        assert draws.shape == (4000, 2) and draws.dtype is jg.int64
        freq = np.stack([(draws.numpy()[:, b, None] == np.arange(5)).mean(0) for b in range(2)])
        np.testing.assert_allclose(freq, theirs.probs.detach().numpy(), atol=0.04)


def test_one_hot_categorical_and_independent():
    mine = D.OneHotCategorical(logits=jg.tensor(LOGITS))
    theirs = TD.OneHotCategorical(logits=torch.tensor(LOGITS))
    value = np.eye(5)[[2, 0]]
    np.testing.assert_allclose(mine.log_prob(jg.tensor(value)).numpy(),
                               theirs.log_prob(torch.tensor(value)).numpy(), rtol=1e-12)
    assert tuple(mine.sample().shape) == (2, 5) and mine.sample().sum().item() == 2
    base = D.Normal(jg.tensor(LOC), jg.tensor(SCALE))
    ind = D.Independent(base, 1)
    tind = TD.Independent(TD.Normal(torch.tensor(LOC), torch.tensor(SCALE)), 1)
    assert tuple(ind.batch_shape) == () and tuple(ind.event_shape) == (4,)
    v = rng.standard_normal((3, 4))
    np.testing.assert_allclose(ind.log_prob(jg.tensor(v)).numpy(),
                               tind.log_prob(torch.tensor(v)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(ind.entropy().numpy(), tind.entropy().numpy(), rtol=1e-12)


def test_binomial():
    mine = D.Binomial(10, probs=jg.tensor(P))
    theirs = TD.Binomial(10, probs=torch.tensor(P))
    v = np.array([0.0, 3.0, 7.0, 10.0])
    np.testing.assert_allclose(mine.log_prob(jg.tensor(v)).numpy(),
                               theirs.log_prob(torch.tensor(v)).numpy(), rtol=1e-10)
    np.testing.assert_allclose(mine.mean.numpy(), theirs.mean.numpy(), rtol=1e-12)
    s = mine.sample((2000,)).numpy()
    assert s.min() >= 0 and s.max() <= 10
    np.testing.assert_allclose(s.mean(0), 10 * P, atol=0.25)


@pytest.mark.parametrize("kind", ["covariance_matrix", "scale_tril", "precision_matrix"])
def test_multivariate_normal(kind):
    arg = {"covariance_matrix": COV, "scale_tril": np.linalg.cholesky(COV),
           "precision_matrix": np.linalg.inv(COV)}[kind]
    loc = rng.standard_normal(3)
    mine = D.MultivariateNormal(jg.tensor(loc), **{kind: jg.tensor(arg)})
    theirs = TD.MultivariateNormal(torch.tensor(loc), **{kind: torch.tensor(arg)})
    v = rng.standard_normal((5, 3))
    np.testing.assert_allclose(mine.log_prob(jg.tensor(v)).numpy(),
                               theirs.log_prob(torch.tensor(v)).numpy(), rtol=1e-10)
    np.testing.assert_allclose(mine.entropy().numpy(), theirs.entropy().numpy(), rtol=1e-10)
    np.testing.assert_allclose(mine.covariance_matrix.numpy(),
                               theirs.covariance_matrix.numpy(), rtol=1e-10)
    draws = mine.sample((20000,)).numpy()
    np.testing.assert_allclose(np.cov(draws.T), COV, atol=0.25)


def test_rsample_gradients_and_gradcheck():
    loc = jg.tensor(LOC, requires_grad=True)
    scale = jg.tensor(SCALE, requires_grad=True)
    jg.manual_seed(0)
    d = D.Normal(loc, scale)
    z = d.rsample((1000,))
    (z ** 2).mean(0).sum().backward()
    # d/dloc E[z^2] = 2 loc, d/dscale = 2 scale (up to sampling noise)
    np.testing.assert_allclose(loc.grad.numpy(), 2 * LOC, atol=0.35)
    np.testing.assert_allclose(scale.grad.numpy(), 2 * SCALE, atol=0.5)
    assert gradcheck(lambda m, s: D.Normal(m, s).log_prob(jg.tensor(LOC * 0.5)),
                     (jg.tensor(LOC, requires_grad=True), jg.tensor(SCALE, requires_grad=True)))


def test_validation_errors_match_torch(monkeypatch):
    # (torch.compile's first use in this process, by a ported script, turns torch's default
    # validation off: both libraries' defaults are validation on)
    monkeypatch.setattr(TD.Distribution, "_validate_args", True)
    for ctor in (lambda lib, t: lib.Normal(t([0.0]), t([-1.0])),
                 lambda lib, t: lib.Bernoulli(probs=t([1.5]))):
        with pytest.raises(ValueError) as theirs:
            ctor(TD, torch.tensor)
        with pytest.raises(ValueError) as mine:
            ctor(D, jg.tensor)
        assert str(mine.value).replace("jitgrad.", "torch.") == str(theirs.value)


def test_reinforce_learns_the_best_arm():
    jg.manual_seed(0)
    logits = jg.zeros(4, requires_grad=True)
    rewards = jg.tensor([0.1, 0.2, 1.0, 0.3])
    opt = jg.optim.Adam([logits], lr=0.1)
    for _ in range(200):
        dist = D.Categorical(logits=logits)
        action = dist.sample((32,))
        loss = -(dist.log_prob(action) * rewards[action]).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert int(logits.argmax()) == 2 and D.Categorical(logits=logits).probs[2].item() > 0.8


def test_log_prob_under_jit():
    # (validate_args reads values, so under jit it is turned off, as torch.compile users do)
    def f(m, s, v):
        return D.Normal(m, s, validate_args=False).log_prob(v).sum()

    args = [jg.tensor(LOC), jg.tensor(SCALE, requires_grad=True), jg.tensor(LOC * 0.3)]
    jitted = jg.jit(f)
    out = jitted(*args)
    (g,) = jg.autograd.grad(out, [args[1]])
    (want,) = jg.autograd.grad(f(*args), [args[1]])
    np.testing.assert_allclose(out.item(), f(*args).item(), rtol=1e-12)
    np.testing.assert_allclose(g.numpy(), want.numpy(), rtol=1e-12)


def _pairs(lib, t):
    rng2 = np.random.default_rng(5)
    a, b = rng2.standard_normal(4), rng2.uniform(0.5, 2, 4)
    c, d = rng2.standard_normal(4), rng2.uniform(0.5, 2, 4)
    pr, qr = rng2.uniform(0.05, 0.95, 4), rng2.uniform(0.05, 0.95, 4)
    la, lb = rng2.standard_normal((2, 5)), rng2.standard_normal((2, 5))
    cov_q = (lambda m: m @ m.T + 2 * np.eye(3))(rng2.standard_normal((3, 3)))
    return {
        "Normal": (lib.Normal(t(a), t(b)), lib.Normal(t(c), t(d))),
        "Laplace": (lib.Laplace(t(a), t(b)), lib.Laplace(t(c), t(d))),
        "Exponential": (lib.Exponential(t(b)), lib.Exponential(t(d))),
        "Poisson": (lib.Poisson(t(b)), lib.Poisson(t(d))),
        "Bernoulli": (lib.Bernoulli(probs=t(pr)), lib.Bernoulli(logits=t(qr))),
        "Categorical": (lib.Categorical(logits=t(la)), lib.Categorical(logits=t(lb))),
        "OneHotCategorical": (lib.OneHotCategorical(logits=t(la)),
                              lib.OneHotCategorical(logits=t(lb))),
        "Uniform": (lib.Uniform(t(a - 1), t(a + 1)), lib.Uniform(t(a - 2), t(a + 1.5))),
        "Uniform_outside": (lib.Uniform(t(a - 1), t(a + 1)), lib.Uniform(t(a), t(a + 1.5))),
        "Independent": (lib.Independent(lib.Normal(t(a), t(b)), 1),
                        lib.Independent(lib.Normal(t(c), t(d)), 1)),
        "MultivariateNormal": (lib.MultivariateNormal(t(a[:3]), covariance_matrix=t(COV)),
                               lib.MultivariateNormal(t(c[:3]), covariance_matrix=t(cov_q))),
    }


@pytest.mark.parametrize("name", list(_pairs(TD, torch.tensor)))
def test_kl_divergence_matches_torch(name):
    mine = D.kl_divergence(*_pairs(D, jg.tensor)[name])
    theirs = TD.kl_divergence(*_pairs(TD, torch.tensor)[name])
    np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-10)


def test_kl_gradient_and_registry():
    m = jg.tensor(LOC, requires_grad=True)
    kl = D.kl_divergence(D.Normal(m, jg.tensor(SCALE)), D.Normal(jg.zeros(4), jg.ones(4)))
    kl.sum().backward()
    np.testing.assert_allclose(m.grad.numpy(), LOC, rtol=1e-12)  # d/dm (m^2 / 2)
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p "
                                                  "type Laplace and q type Poisson"):
        D.kl_divergence(D.Laplace(m, jg.tensor(SCALE)), D.Poisson(jg.tensor(SCALE)))
    # (Normal and Poisson are exponential families: torch's Bregman rule refuses the pair)
    with pytest.raises(NotImplementedError, match="between different exponential families "
                                                  "cannot {29}be computed"):
        D.kl_divergence(D.Normal(m, jg.tensor(SCALE)), D.Poisson(jg.tensor(SCALE)))

    class Wide(D.Normal):
        pass

    @D.register_kl(Wide, D.Normal)
    def _wide(p, q):
        return p.loc * 0 + 7.0

    assert D.kl_divergence(Wide(m, jg.tensor(SCALE)), D.Normal(m, jg.tensor(SCALE)))[0] == 7.0
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        D.register_kl(int, D.Normal)
