"""jitgrad.optim: Rprop, ASGD and LBFGS (fixed step and strong-Wolfe line search)
trajectories vs torch over 20 steps, their state, defaults, errors and state_dict round
trips."""

import copy

import numpy as np
import pytest

import jitgrad
from jitgrad import nn, optim

from test_optim import TOL, run_both
from test_optim3 import DTYPES, _compare_state, _id

STEPS = 20

CASES = {
    "Rprop": [{}, {"lr": 0.05, "etas": (0.3, 1.5)}, {"step_sizes": (1e-3, 0.02)},
              {"lr": 0.1, "maximize": True}],
    "ASGD": [{}, {"lr": 0.05, "lambd": 0.1, "alpha": 0.5}, {"t0": 5, "lr": 0.05},
             {"weight_decay": 0.1, "t0": 3}, {"lr": 0.1, "maximize": True, "t0": 10}],
}


@DTYPES
@pytest.mark.parametrize("name,opts", [(n, o) for n, cases in CASES.items() for o in cases],
                         ids=[f"{n}-{_id(o)}" for n, cases in CASES.items() for o in cases])
def test_trajectory_matches_torch(name, opts, dtype):
    torch = pytest.importorskip("torch")
    opt, topt = run_both(lambda ps: getattr(optim, name)(ps, **opts),
                         lambda ps: getattr(torch.optim, name)(ps, foreach=False, **opts), dtype,
                         steps=STEPS)
    _compare_state(opt, topt, dtype)
    assert [{k: v for k, v in g.items() if k != "foreach"}
            for g in opt.state_dict()["param_groups"]] == [
        {k: v for k, v in g.items() if k != "foreach"} for g in topt.state_dict()["param_groups"]]


@pytest.mark.parametrize("name", list(CASES))
def test_defaults_and_errors_match_torch(name):
    torch = pytest.importorskip("torch")
    from torch_compare import same_error

    p, tp = nn.Parameter(jitgrad.ones(2)), torch.nn.Parameter(torch.ones(2))
    assert getattr(optim, name)([p]).defaults == getattr(torch.optim, name)([tp]).defaults
    same_error(lambda lib: getattr(lib.optim, name)([lib.nn.Parameter(lib.ones(2))], lr=-1.0))
    with pytest.raises(NotImplementedError, match="differentiable"):
        getattr(optim, name)([p], differentiable=True)


def test_rprop_eta_errors_match_torch():
    pytest.importorskip("torch")
    from torch_compare import same_error

    for etas in [(1.5, 1.2), (0.5, 0.9), (0.0, 2.0)]:
        same_error(lambda lib, e=etas: lib.optim.Rprop([lib.nn.Parameter(lib.ones(2))], etas=e))
    same_error(lambda lib: lib.optim.ASGD([lib.nn.Parameter(lib.ones(2))], weight_decay=-1))


@pytest.mark.parametrize("name", list(CASES))
def test_state_dict_round_trip_continues_the_trajectory(name):
    torch = pytest.importorskip("torch")
    opts = CASES[name][1]
    dtype = jitgrad.float64
    rng = np.random.default_rng(5)
    p0 = rng.standard_normal((3, 2))
    grads = [rng.standard_normal((3, 2)) for _ in range(10)]
    p = nn.Parameter(jitgrad.tensor(p0))
    opt = getattr(optim, name)([p], **opts)
    tp = torch.nn.Parameter(torch.tensor(p0))
    topt = getattr(torch.optim, name)([tp], foreach=False, **opts)
    for g in grads[:5]:
        p.grad, tp.grad = jitgrad.tensor(g), torch.tensor(g)
        opt.step()
        topt.step()
    # both reloaded (loading casts the float state, ASGD's float32 eta and mu included, to
    # the parameter's dtype, in torch as in jitgrad)
    q = nn.Parameter(p.detach().clone())
    opt2 = getattr(optim, name)([q], **opts)
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
    tstate = copy.deepcopy(topt.state_dict())
    topt = getattr(torch.optim, name)([tp], foreach=False, **opts)
    topt.load_state_dict(tstate)
    assert sorted(opt2.state[q]) == sorted(topt.state[tp])
    for key, v in opt2.state[q].items():
        assert str(v.dtype).split(".")[-1] == str(topt.state[tp][key].dtype).split(".")[-1]
    for g in grads[5:]:
        q.grad, tp.grad = jitgrad.tensor(g), torch.tensor(g)
        opt2.step()
        topt.step()
    np.testing.assert_allclose(q.detach().numpy(), tp.detach().numpy(), **TOL[dtype])


# ---------------------------------------------------------------- LBFGS


def _problem(lib, dtype, params):
    """A small nonlinear least-squares loss of the parameters (the same data for both)."""
    rng = np.random.default_rng(3)
    x = lib.tensor(rng.standard_normal((16, 3)).astype(dtype.np))
    y = lib.tensor(rng.standard_normal((16, 2)).astype(dtype.np))
    w, b = params

    def closure():
        for p in params:
            p.grad = None
        loss = ((lib.tanh(x @ w + b) * 1.5 - y) ** 2).mean() + (w ** 4).sum() * 0.01
        loss.backward()
        return loss

    return closure


LBFGS_CASES = [{}, {"lr": 0.5, "max_iter": 5}, {"history_size": 3, "max_iter": 7},
               {"line_search_fn": "strong_wolfe"},
               {"line_search_fn": "strong_wolfe", "max_iter": 4, "history_size": 2},
               {"max_iter": 3, "max_eval": 2}, {"tolerance_change": 1e-3, "max_iter": 10}]


@DTYPES
@pytest.mark.parametrize("opts", LBFGS_CASES, ids=[_id(o) for o in LBFGS_CASES])
def test_lbfgs_trajectory_matches_torch(opts, dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((3, 2)).astype(dtype.np), np.zeros(2, dtype.np)]
    ours = [nn.Parameter(jitgrad.tensor(a)) for a in arrays]
    theirs = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
    opt, topt = optim.LBFGS(ours, **opts), torch.optim.LBFGS(theirs, **opts)
    c, tc = _problem(jitgrad, dtype, ours), _problem(torch, dtype, theirs)
    # float32: L-BFGS amplifies the rounding of its reductions, so fewer steps, looser
    tol = TOL[dtype] if dtype == jitgrad.float64 else {"rtol": 2e-3, "atol": 2e-4}
    for _ in range(5 if dtype == jitgrad.float64 else 2):
        loss, tloss = opt.step(c), topt.step(tc)
        np.testing.assert_allclose(float(loss.detach()), float(tloss.detach()), **tol)
        for p, tp in zip(ours, theirs):
            np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), **tol)
    s, ts = opt.state[ours[0]], topt.state[theirs[0]]
    assert sorted(s) == sorted(ts)
    if dtype == jitgrad.float64:  # (in float32 a tolerance may stop one iteration apart)
        assert s["func_evals"] == ts["func_evals"] and s["n_iter"] == ts["n_iter"]
        assert len(s["old_dirs"]) == len(ts["old_dirs"])
    assert opt.state_dict()["param_groups"] == topt.state_dict()["param_groups"]


def test_lbfgs_minimizes_a_quadratic_and_round_trips_its_state():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 5))
    h = jitgrad.tensor(a @ a.T + 5 * np.eye(5))
    target = jitgrad.tensor(rng.standard_normal(5))
    x = nn.Parameter(jitgrad.zeros(5, dtype=jitgrad.float64))

    def closure():
        opt.zero_grad()
        r = x - target
        loss = (r @ h @ r) * 0.5
        loss.backward()
        return loss

    opt = optim.LBFGS([x], line_search_fn="strong_wolfe")
    opt.step(closure)
    np.testing.assert_allclose(x.detach().numpy(), target.numpy(), atol=1e-4)
    assert opt.state[x]["n_iter"] < 20  # stopped by a tolerance
    saved = opt.state_dict()
    opt2 = optim.LBFGS([x], line_search_fn="strong_wolfe")
    opt2.load_state_dict(saved)
    assert opt2.state[x]["n_iter"] == opt.state[x]["n_iter"]


def test_lbfgs_errors_match_torch():
    torch = pytest.importorskip("torch")
    from torch_compare import same_error

    same_error(lambda lib: lib.optim.LBFGS([{"params": [lib.nn.Parameter(lib.ones(1))]},
                                            {"params": [lib.nn.Parameter(lib.ones(1))]}]))
    same_error(lambda lib: lib.optim.LBFGS([lib.nn.Parameter(lib.ones(1))], lr=-1))
    p = nn.Parameter(jitgrad.ones(2))

    def closure():
        p.grad = None
        loss = (p * p).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        optim.LBFGS([p], line_search_fn="armijo").step(closure)
    assert optim.LBFGS([p]).defaults == torch.optim.LBFGS([torch.nn.Parameter(
        torch.ones(2))]).defaults
