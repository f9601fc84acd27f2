"""jitgrad.optim: RMSprop, Adagrad and AdamW trajectories vs torch over 20 steps, their
state_dict layout, zero_grad, and the lr_scheduler sequences vs torch's."""

import copy
import itertools
import math

import numpy as np
import pytest

import jitgrad
from jitgrad import nn, optim
from jitgrad.optim import lr_scheduler

from test_optim import TOL, run_both

STEPS = 20
DTYPES = pytest.mark.parametrize("dtype", [jitgrad.float64, jitgrad.float32],
                                 ids=["f64", "f32"])


def _id(opts):
    return ",".join(f"{k}={v}" for k, v in opts.items()) or "default"


def _compare_state(opt, topt, dtype):
    for p, tp in zip(opt.param_groups[0]["params"], topt.param_groups[0]["params"]):
        s, ts = opt.state[p], topt.state[tp]
        assert sorted(s) == sorted(ts)
        for key in s:
            np.testing.assert_allclose(np.asarray(s[key].numpy()), ts[key].numpy(),
                                       **TOL[dtype])


RMSPROP = [{}, {"lr": 0.05, "momentum": 0.9}, {"lr": 0.05, "centered": True},
           {"lr": 0.05, "centered": True, "momentum": 0.5, "weight_decay": 0.1},
           {"lr": 0.02, "alpha": 0.5, "eps": 1e-3, "maximize": True}]


@DTYPES
@pytest.mark.parametrize("opts", RMSPROP, ids=_id)
def test_rmsprop_trajectory_matches_torch(opts, dtype):
    torch = pytest.importorskip("torch")
    opt, topt = run_both(lambda ps: optim.RMSprop(ps, **opts),
                         lambda ps: torch.optim.RMSprop(ps, foreach=False, **opts), dtype,
                         steps=STEPS)
    _compare_state(opt, topt, dtype)


ADAGRAD = [{}, {"lr": 0.1, "lr_decay": 0.05}, {"lr": 0.1, "weight_decay": 0.1},
           {"lr": 0.1, "initial_accumulator_value": 0.5, "eps": 1e-3, "maximize": True}]


@DTYPES
@pytest.mark.parametrize("opts", ADAGRAD, ids=_id)
def test_adagrad_trajectory_matches_torch(opts, dtype):
    torch = pytest.importorskip("torch")
    opt, topt = run_both(lambda ps: optim.Adagrad(ps, **opts),
                         lambda ps: torch.optim.Adagrad(ps, foreach=False, **opts), dtype,
                         steps=STEPS)
    _compare_state(opt, topt, dtype)


ADAMW = [{}, {"lr": 0.05, "weight_decay": 0.1}, {"lr": 0.05, "amsgrad": True},
         {"lr": 0.05, "betas": (0.5, 0.6), "maximize": True, "weight_decay": 0.0}]


@DTYPES
@pytest.mark.parametrize("opts", ADAMW, ids=_id)
def test_adamw_trajectory_matches_torch(opts, dtype):
    torch = pytest.importorskip("torch")
    opt, topt = run_both(lambda ps: optim.AdamW(ps, **opts),
                         lambda ps: torch.optim.AdamW(ps, foreach=False, **opts), dtype,
                         steps=STEPS)
    _compare_state(opt, topt, dtype)


@pytest.mark.parametrize("name", ["RMSprop", "Adagrad", "AdamW", "Adam", "SGD"])
def test_state_dict_layout_equals_torch(name):
    torch = pytest.importorskip("torch")
    ps = [nn.Parameter(jitgrad.ones(2)), nn.Parameter(jitgrad.ones(3))]
    tps = [torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(3))]
    opt = getattr(optim, name)([{"params": ps[:1]}, {"params": ps[1:], "lr": 0.5}])
    topt = getattr(torch.optim, name)([{"params": tps[:1]}, {"params": tps[1:], "lr": 0.5}])
    for p, tp in zip(ps, tps):
        p.grad = jitgrad.ones(p.shape)
        tp.grad = torch.ones(tp.shape)
    opt.step()
    topt.step()
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert [sorted(g) for g in sd["param_groups"]] == \
        [sorted(g) for g in tsd["param_groups"]]  # (torch's group keys, SGD's foreach/fused too)
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert sorted(sd["state"]) == sorted(tsd["state"])
    for k in sd["state"]:
        assert sorted(sd["state"][k]) == sorted(tsd["state"][k])


@pytest.mark.parametrize("name", ["RMSprop", "Adagrad", "AdamW"])
def test_state_dict_round_trip_continues_like_torch(name):
    torch = pytest.importorskip("torch")
    kw = {"lr": 0.05, "momentum": 0.9, "centered": True} if name == "RMSprop" else {"lr": 0.05}
    ours, theirs = [], []
    rng = np.random.default_rng(3)
    init = rng.standard_normal((3,))
    p = nn.Parameter(jitgrad.tensor(init))
    tp = torch.nn.Parameter(torch.tensor(init))
    opt = getattr(optim, name)([p], **kw)
    topt = getattr(torch.optim, name)([tp], foreach=False, **kw)
    for k in range(10):
        g = rng.standard_normal((3,))
        if k == 5:  # restore a copy of the state into a fresh optimizer
            sd = copy.deepcopy(opt.state_dict())
            opt = getattr(optim, name)([p], **kw)
            opt.load_state_dict(sd)
        p.grad, tp.grad = jitgrad.tensor(g), torch.tensor(g)
        opt.step()
        topt.step()
        ours.append(p.detach().numpy().copy())
        theirs.append(tp.detach().numpy().copy())
    np.testing.assert_allclose(np.array(ours), np.array(theirs), rtol=1e-12, atol=1e-14)


def test_zero_grad_set_to_none_and_zeros():
    p = nn.Parameter(jitgrad.ones(2))
    opt = optim.RMSprop([p])
    p.grad = jitgrad.ones(2)
    opt.zero_grad(set_to_none=False)
    assert p.grad is not None and p.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


@pytest.mark.parametrize("name,kw,msg", [
    ("RMSprop", {"alpha": -1.0}, "Invalid alpha value: -1.0"),
    ("RMSprop", {"momentum": -1.0}, "Invalid momentum value: -1.0"),
    ("Adagrad", {"lr_decay": -1.0}, "Invalid lr_decay value: -1.0"),
    ("Adagrad", {"initial_accumulator_value": -1.0},
     "Invalid initial_accumulator_value value: -1.0"),
    ("AdamW", {"betas": (1.0, 0.9)}, "Invalid beta parameter at index 0: 1.0"),
])
def test_invalid_hyperparameters_raise_torchs_error(name, kw, msg):
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match=msg.replace("(", r"\(")):
        getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(1))], **kw)
    with pytest.raises(ValueError, match=msg.replace("(", r"\(")):
        getattr(optim, name)([nn.Parameter(jitgrad.ones(1))], **kw)


def test_unsupported_flags_raise():
    p = [nn.Parameter(jitgrad.ones(1))]
    with pytest.raises(NotImplementedError, match="differentiable"):
        optim.AdamW(p, differentiable=True)
    optim.RMSprop(p, foreach=True)  # accepted: same math


FUSED = [("Adam", {"amsgrad": True, "weight_decay": 0.1}), ("AdamW", {"weight_decay": 0.1}),
         ("SGD", {"momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
         ("Adagrad", {"lr_decay": 0.01, "weight_decay": 0.1})]


@pytest.mark.parametrize("name,kw", FUSED, ids=[f[0] for f in FUSED])
def test_fused_runs_the_update_and_refuses_torchs_combinations(name, kw):
    """``fused=True`` runs the same update as torch's fused kernels, to float32 rounding (the
    other optimizer tests' tolerance; torch's fused and non-fused updates differ by one ulp in
    a few elements themselves)."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (jitgrad, torch):
        lib.manual_seed(0)
        q = lib.nn.Parameter(lib.randn(1000))
        opt = getattr(lib.optim, name)([q], lr=0.01, fused=True, **kw)
        g = lib.Generator().manual_seed(1)
        for _ in range(20):
            q.grad = lib.randn(1000, generator=g)
            opt.step()
        results.append(q.detach().numpy().copy())
        assert opt.param_groups[0]["fused"] is True
        for flags, text in (
                ({"foreach": True}, "`fused` and `foreach` cannot be `True` together."),
                ({"differentiable": True}, "`fused` does not support `differentiable`")):
            with pytest.raises(RuntimeError, match=text):
                getattr(lib.optim, name)([q], lr=0.01, fused=True, **flags)
    np.testing.assert_allclose(results[0], results[1], **TOL[jitgrad.float32])


# ---------------------------------------------------------------- lr_scheduler


def _sched_pair(make, lr=0.1, groups=1):
    torch = pytest.importorskip("torch")
    ps = [nn.Parameter(jitgrad.ones(1)) for _ in range(groups)]
    tps = [torch.nn.Parameter(torch.ones(1)) for _ in range(groups)]
    opt = optim.SGD([{"params": [p], "lr": lr * (i + 1)} for i, p in enumerate(ps)])
    topt = torch.optim.SGD([{"params": [p], "lr": lr * (i + 1)} for i, p in enumerate(tps)])
    return (make(lr_scheduler, opt), opt), (make(torch.optim.lr_scheduler, topt), topt)


SCHEDULERS = {
    "StepLR": lambda m, o: m.StepLR(o, step_size=3, gamma=0.5),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=7, eta_min=0.01),
    "LambdaLR": lambda m, o: m.LambdaLR(o, lr_lambda=lambda e: 1 / (1 + e)),
    "LambdaLR_list": lambda m, o: m.LambdaLR(o, lr_lambda=[lambda e: 0.9 ** e,
                                                           lambda e: 1 + e]),
}


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_lr_sequence_matches_torch(name):
    (s, opt), (ts, topt) = _sched_pair(SCHEDULERS[name], groups=2)
    ours, theirs = [s.get_last_lr()], [ts.get_last_lr()]
    for _ in range(25):
        opt.step()
        topt.step()
        s.step()
        ts.step()
        ours.append(s.get_last_lr())
        theirs.append(ts.get_last_lr())
        assert [g["lr"] for g in opt.param_groups] == ours[-1]
    np.testing.assert_allclose(np.array(ours), np.array(theirs), rtol=1e-13, atol=0)
    assert sorted(s.state_dict()) == sorted(ts.state_dict())
    assert s.state_dict()["last_epoch"] == ts.state_dict()["last_epoch"] == 25


def test_scheduler_epoch_argument_uses_closed_form():
    (s, opt), (ts, topt) = _sched_pair(SCHEDULERS["CosineAnnealingLR"])
    opt.step()
    topt.step()
    with pytest.warns(UserWarning, match="epoch parameter"):
        s.step(4)
    with pytest.warns(UserWarning):
        ts.step(4)
    assert math.isclose(s.get_last_lr()[0], ts.get_last_lr()[0], rel_tol=1e-14)


def test_scheduler_warns_when_stepped_before_optimizer():
    (s, _), _ = _sched_pair(SCHEDULERS["StepLR"])
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        s.step()


def test_scheduler_state_dict_round_trip():
    (s, opt), _ = _sched_pair(SCHEDULERS["StepLR"])
    for _ in range(4):
        opt.step()
        s.step()
    sd = s.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 4
    s2 = lr_scheduler.StepLR(opt, step_size=1, gamma=0.9)
    s2.load_state_dict(sd)
    assert s2.step_size == 3 and s2.last_epoch == 4 and s2.get_last_lr() == s.get_last_lr()


@pytest.mark.parametrize("mode,threshold_mode,cooldown", list(itertools.product(
    ("min", "max"), ("rel", "abs"), (0, 2))))
def test_reduce_lr_on_plateau_matches_torch(mode, threshold_mode, cooldown):
    kw = {"mode": mode, "threshold_mode": threshold_mode, "cooldown": cooldown, "patience": 2,
          "factor": 0.5, "min_lr": 0.01, "threshold": 0.05}
    (s, opt), (ts, topt) = _sched_pair(lambda m, o: m.ReduceLROnPlateau(o, **kw))
    metrics = [1.0, 0.9, 0.91, 0.92, 0.93, 0.95, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.7, 0.8, 0.9,
               1.0, 1.1, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2]
    for metric in metrics:
        opt.step()
        topt.step()
        s.step(metric)
        ts.step(metric)
        assert s.get_last_lr() == ts.get_last_lr()
    assert s.num_bad_epochs == ts.num_bad_epochs and s.best == ts.best
    assert sorted(s.state_dict()) == sorted(ts.state_dict())


def test_reduce_lr_on_plateau_errors():
    opt = optim.SGD([nn.Parameter(jitgrad.ones(1))], lr=0.1)
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        lr_scheduler.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode foo is unknown!"):
        lr_scheduler.ReduceLROnPlateau(opt, mode="foo")
    with pytest.raises(TypeError, match="int is not an Optimizer"):
        lr_scheduler.StepLR(3, step_size=1)


def test_scheduler_drives_an_optimizer_like_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((4,))
    p, tp = nn.Parameter(jitgrad.tensor(w0)), torch.nn.Parameter(torch.tensor(w0))
    opt, topt = optim.Adam([p], lr=0.1), torch.optim.Adam([tp], lr=0.1)
    s = lr_scheduler.CosineAnnealingLR(opt, T_max=5)
    ts = torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=5)
    for _ in range(12):
        g = rng.standard_normal((4,))
        p.grad, tp.grad = jitgrad.tensor(g), torch.tensor(g)
        opt.step()
        topt.step()
        s.step()
        ts.step()
    np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-12)
