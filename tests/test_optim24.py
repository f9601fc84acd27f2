"""optim.Adafactor, optim.Muon and optim.SparseAdam: trajectories against torch over 20 steps,
state_dict round trips, torch's argument errors."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import jitgrad
from jitgrad import optim

RNG = np.random.default_rng(24024)
SHAPES = {"matrix": [(5, 3), (3,)], "tall": [(6, 2)], "wide": [(2, 7)], "batched": [(2, 4, 3)]}


def _loss_grads(params, t):
    """A fixed smooth loss whose gradient changes with the parameters: sum(sin(p) * c_t)."""
    return [np.cos(p) * (1.0 + 0.1 * t) + 0.3 * p for p in params]


def _trajectories(make_j, make_t, shapes, steps=20, dtype=np.float64):
    torch = pytest.importorskip("torch")
    init = [RNG.standard_normal(s).astype(dtype) for s in shapes]
    pj = [jitgrad.tensor(a.copy(), requires_grad=True) for a in init]
    pt = [torch.tensor(a.copy(), requires_grad=True) for a in init]
    oj, ot = make_j(pj), make_t(pt)
    for t in range(steps):
        for p, q in zip(pj, pt):
            g = _loss_grads([p.detach().numpy()], t)[0]
            p.grad = jitgrad.tensor(g.astype(dtype))
            q.grad = torch.tensor(g.astype(dtype))
        oj.step()
        ot.step()
    return pj, pt, oj, ot


@pytest.mark.parametrize("kind", list(SHAPES))
@pytest.mark.parametrize("kw", [{}, {"lr": 0.05, "weight_decay": 0.1},
                                {"eps": (1e-20, 1e-2), "d": 1.5, "beta2_decay": -0.5},
                                {"maximize": True}])
def test_adafactor_matches_torch(kind, kw):
    torch = pytest.importorskip("torch")
    pj, pt, oj, ot = _trajectories(lambda ps: optim.Adafactor(ps, **kw),
                                   lambda ps: torch.optim.Adafactor(ps, **kw), SHAPES[kind])
    for p, q in zip(pj, pt):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)
    sj, st = oj.state_dict(), ot.state_dict()
    for i in st["state"]:
        assert set(sj["state"][i]) == set(st["state"][i])
        for k, v in st["state"][i].items():
            np.testing.assert_allclose(sj["state"][i][k].numpy(), v.numpy(), rtol=1e-10,
                                       atol=1e-14)


def test_adafactor_float32_and_state_dict_round_trip():
    torch = pytest.importorskip("torch")
    pj, pt, oj, ot = _trajectories(lambda ps: optim.Adafactor(ps, lr=0.02),
                                   lambda ps: torch.optim.Adafactor(ps, lr=0.02),
                                   SHAPES["matrix"], dtype=np.float32)
    for p, q in zip(pj, pt):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)
    # round trip: a fresh optimizer loaded from the state continues the same trajectory
    saved = copy.deepcopy(oj.state_dict())
    clones = [jitgrad.tensor(p.detach().numpy().copy(), requires_grad=True) for p in pj]
    fresh = optim.Adafactor(clones, lr=0.02)
    fresh.load_state_dict(saved)
    for a, b in zip(pj, clones):
        g = _loss_grads([a.detach().numpy()], 99)[0]
        a.grad, b.grad = jitgrad.tensor(g), jitgrad.tensor(g)
    oj.step()
    fresh.step()
    for a, b in zip(pj, clones):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert float(fresh.state_dict()["state"][0]["step"]) == 21.0


def test_adafactor_errors():
    p = [jitgrad.zeros(3, requires_grad=True)]
    for kw, msg in [({"lr": -1.0}, "Learning rate should be >= 0 but is: -1.0"),
                    ({"beta2_decay": 0.5}, "beta2_decay should be <= 0 but is: 0.5"),
                    ({"eps": (-1.0, 1e-3)}, "epsilon1 should be >= 0 but is: -1.0"),
                    ({"d": 0.5}, "Clipping threshold d should be >= 1 but is: 0.5"),
                    ({"weight_decay": -0.1}, "weight_decay should be >= 0 but is: -0.1")]:
        with pytest.raises(ValueError, match=msg.replace("(", r"\(")):
            optim.Adafactor(p, **kw)


@pytest.mark.parametrize("kind", ["matrix2d", "tall", "wide"])
@pytest.mark.parametrize("kw", [{}, {"lr": 0.02, "nesterov": False},
                                {"adjust_lr_fn": "match_rms_adamw", "weight_decay": 0.0},
                                {"momentum": 0.5, "ns_steps": 3, "adjust_lr_fn": "original"}])
def test_muon_matches_torch(kind, kw):
    """Both orthogonalize in bfloat16 (float32 sums rounded once per addmm, as torch's)."""
    torch = pytest.importorskip("torch")
    shapes = {"matrix2d": [(5, 3)], "tall": SHAPES["tall"], "wide": SHAPES["wide"]}[kind]
    pj, pt, oj, ot = _trajectories(lambda ps: optim.Muon(ps, **kw),
                                   lambda ps: torch.optim.Muon(ps, **kw), shapes,
                                   dtype=np.float32)
    for p, q in zip(pj, pt):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(oj.state[pj[0]]["momentum_buffer"].numpy(),
                               ot.state[pt[0]]["momentum_buffer"].numpy(), rtol=1e-5, atol=1e-6)


def test_muon_state_dict_and_errors():
    p = jitgrad.randn(4, 3, requires_grad=True)
    opt = optim.Muon([p])
    p.grad = jitgrad.randn(4, 3)
    opt.step()
    sd = copy.deepcopy(opt.state_dict())
    assert set(sd["state"][0]) == {"momentum_buffer"}
    assert sd["param_groups"][0]["ns_coefficients"] == (3.4445, -4.775, 2.0315)
    q = jitgrad.tensor(p.detach().numpy().copy(), requires_grad=True)
    other = optim.Muon([q])
    other.load_state_dict(sd)
    g = jitgrad.randn(4, 3)
    p.grad, q.grad = g, g.clone()
    opt.step()
    other.step()
    np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    with pytest.raises(ValueError, match=r"Muon only supports 2D parameters whereas we found a "
                                         r"parameter with size: jitgrad.Size\(\[3\]\)"):
        optim.Muon([jitgrad.zeros(3, requires_grad=True)])
    with pytest.raises(ValueError, match="Adjust learning rate function x is not supported"):
        optim.Muon([p], adjust_lr_fn="x")
    with pytest.raises(ValueError, match="momentum should be >= 0 but is: -1"):
        optim.Muon([p], momentum=-1)
    bad = optim.Muon([p], ns_steps=100)
    p.grad = g
    with pytest.raises(ValueError, match="Number of steps must be less than 100"):
        bad.step()


def test_sparse_adam_refuses_dense_gradients_as_torch():
    torch = pytest.importorskip("torch")
    p = jitgrad.zeros(3, requires_grad=True)
    opt = optim.SparseAdam([p], lr=0.1)
    p.grad = jitgrad.ones(3)
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients, "
                                           "please consider Adam instead"):
        opt.step()
    q = torch.zeros(3, requires_grad=True)
    q.grad = torch.ones(3)
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        torch.optim.SparseAdam([q], lr=0.1).step()
    assert opt.defaults == {"lr": 0.1, "betas": (0.9, 0.999), "eps": 1e-8, "maximize": False}
    with pytest.raises(ValueError, match="Invalid learning rate: 0.0"):
        optim.SparseAdam([p], lr=0.0)
    with pytest.raises(ValueError, match="Invalid epsilon value: 0"):
        optim.SparseAdam([p], eps=0)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.0"):
        optim.SparseAdam([p], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match=r"Complex params at indices \[\[0, 0\]\]"):
        optim.SparseAdam([jitgrad.zeros(2, dtype=jitgrad.complex64, requires_grad=True)])
