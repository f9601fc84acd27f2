"""KLDivLoss ... MultiLabelSoftMarginLoss against torch: values and gradients for every
reduction and option, the modules, and torch's errors; gradcheck on a few."""

import warnings

import numpy as np
import pytest

import jitgrad
import jitgrad.nn.functional as F

rng = np.random.default_rng(0)
X, Y = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
P = rng.uniform(0.05, 1.0, (4, 5))
P[0, 0] = 0.0  # kl_div's target may be zero
SIGNS = np.where(rng.standard_normal(4) > 0, 1.0, -1.0)
SIGNS_2D = np.where(rng.standard_normal((4, 5)) > 0, 1.0, -1.0)
COUNTS = rng.poisson(2.0, (4, 5)).astype(np.float64)
LABELS = (rng.uniform(size=(4, 5)) > 0.5).astype(np.float64)
VAR = rng.uniform(0.1, 2.0, (4, 5))

# name -> (arrays, of which the first ones require grad: n_grad, kwargs variants)
CASES = {
    "kl_div": ((np.log(rng.uniform(0.1, 1.0, (4, 5))), P), 1,
               [{"reduction": "batchmean"}, {"reduction": "sum"}, {"reduction": "none"},
                {"reduction": "batchmean", "log_target": True}]),
    "margin_ranking_loss": ((X[:, 0], Y[:, 0], SIGNS), 2,
                            [{}, {"margin": 0.5, "reduction": "sum"}, {"reduction": "none"}]),
    "hinge_embedding_loss": ((X, SIGNS_2D), 1, [{}, {"margin": 0.3, "reduction": "none"}]),
    "soft_margin_loss": ((X, SIGNS_2D), 1, [{}, {"reduction": "sum"}]),
    "cosine_embedding_loss": ((X, Y, SIGNS), 2, [{}, {"margin": 0.2, "reduction": "none"}]),
    "triplet_margin_loss": ((X, Y, X[::-1].copy()), 3,
                            [{}, {"margin": 0.5, "p": 1.0}, {"swap": True, "reduction": "none"}]),
    "poisson_nll_loss": ((X, COUNTS), 1, [{}, {"full": True}, {"log_input": False,
                                                                "reduction": "sum"}]),
    "gaussian_nll_loss": ((X, Y, VAR), 3, [{}, {"full": True, "reduction": "none"}]),
    "multilabel_soft_margin_loss": ((X, LABELS), 1, [{}, {"reduction": "none"}]),
}
PARAMS = [(name, i) for name, (_, _, variants) in CASES.items() for i in range(len(variants))]


@pytest.mark.parametrize("name,variant", PARAMS)
def test_matches_torch(name, variant):
    torch = pytest.importorskip("torch")
    arrays, n_grad, variants = CASES[name]
    kw = variants[variant]
    if name == "poisson_nll_loss" and kw.get("log_input") is False:
        arrays = (np.abs(arrays[0]) + 0.1, arrays[1])
    theirs = [torch.tensor(a, requires_grad=i < n_grad) for i, a in enumerate(arrays)]
    ours = [jitgrad.tensor(a, requires_grad=i < n_grad) for i, a in enumerate(arrays)]
    ty = getattr(torch.nn.functional, name)(*theirs, **kw)
    jy = getattr(F, name)(*ours, **kw)
    np.testing.assert_allclose(jy.detach().numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = np.random.default_rng(1).standard_normal(tuple(ty.shape))
    (ty * torch.tensor(w)).sum().backward()
    (jy * jitgrad.tensor(w)).sum().backward()
    for o, t in zip(ours[:n_grad], theirs[:n_grad]):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("module,args,kw", [
    ("KLDivLoss", 2, {"reduction": "batchmean"}), ("MarginRankingLoss", 3, {"margin": 0.1}),
    ("HingeEmbeddingLoss", 2, {}), ("SoftMarginLoss", 2, {}), ("CosineEmbeddingLoss", 3, {}),
    ("TripletMarginLoss", 3, {"swap": True}), ("PoissonNLLLoss", 2, {"full": True}),
    ("GaussianNLLLoss", 3, {"full": True}), ("MultiLabelSoftMarginLoss", 2, {})])
def test_modules_match_torch(module, args, kw):
    torch = pytest.importorskip("torch")
    name = {"KLDivLoss": "kl_div", "MarginRankingLoss": "margin_ranking_loss",
            "HingeEmbeddingLoss": "hinge_embedding_loss", "SoftMarginLoss": "soft_margin_loss",
            "CosineEmbeddingLoss": "cosine_embedding_loss",
            "TripletMarginLoss": "triplet_margin_loss", "PoissonNLLLoss": "poisson_nll_loss",
            "GaussianNLLLoss": "gaussian_nll_loss",
            "MultiLabelSoftMarginLoss": "multilabel_soft_margin_loss"}[module]
    arrays = CASES[name][0]
    theirs, ours = getattr(torch.nn, module)(**kw), getattr(jitgrad.nn, module)(**kw)
    assert repr(ours) == repr(theirs)
    got = ours(*(jitgrad.tensor(a) for a in arrays))
    want = theirs(*(torch.tensor(a) for a in arrays))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10)


def test_gradcheck_and_kl_div_mean_warning():
    x = jitgrad.randn(3, 4, dtype=jitgrad.float64, requires_grad=True)
    y = jitgrad.randn(3, 4, dtype=jitgrad.float64, requires_grad=True)
    s = jitgrad.tensor([1.0, -1.0, 1.0], dtype=jitgrad.float64)
    assert jitgrad.autograd.gradcheck(lambda a, b: F.cosine_embedding_loss(a, b, s), (x, y))
    assert jitgrad.autograd.gradcheck(lambda a, b: F.triplet_margin_loss(a, b, -a), (x, y))
    var = jitgrad.rand(3, 4, dtype=jitgrad.float64) + 0.5
    var.requires_grad_()
    assert jitgrad.autograd.gradcheck(lambda a, v: F.gaussian_nll_loss(a, y.detach(), v), (x, var))
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(x, y.detach().exp())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.kl_div(x, y.detach().exp(), reduction="batchmean")


def test_torchs_errors():
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(jitgrad.ones(2), jitgrad.ones(2), jitgrad.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="TripletMarginLoss: expected margin to be greater"):
        jitgrad.nn.TripletMarginLoss(margin=0.0)
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        F.soft_margin_loss(jitgrad.ones(2), jitgrad.ones(2), reduction="bad")
