"""jitgrad.optim: Adadelta, Adamax, NAdam and RAdam trajectories vs torch over 20 steps (and
their state), and LinearLR, PolynomialLR, OneCycleLR, CyclicLR, SequentialLR and
ChainedScheduler sequences (learning rates and momenta) vs torch's."""

import copy

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
            assert s[key].dtype.np == np.dtype(str(ts[key].dtype).replace("torch.", ""))
            np.testing.assert_allclose(np.asarray(s[key].numpy()), ts[key].numpy(),
                                       **TOL[dtype])


CASES = {
    "Adadelta": [{}, {"lr": 0.5, "rho": 0.5, "eps": 1e-3}, {"weight_decay": 0.1},
                 {"lr": 0.3, "maximize": True}],
    "Adamax": [{}, {"lr": 0.05, "betas": (0.5, 0.6), "weight_decay": 0.1},
               {"lr": 0.05, "eps": 1e-2, "maximize": True}],
    "NAdam": [{}, {"lr": 0.05, "weight_decay": 0.1},
              {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True},
              {"lr": 0.05, "momentum_decay": 0.05, "betas": (0.8, 0.9), "maximize": True}],
    "RAdam": [{}, {"lr": 0.05, "weight_decay": 0.1},
              {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True},
              {"lr": 0.05, "betas": (0.5, 0.6), "maximize": True}],  # rho_t > 5 from step 2
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
    assert [{k: v for k, v in g.items() if k != "foreach"}  # (torch's was given foreach=False)
            for g in opt.state_dict()["param_groups"]] == [
        {k: v for k, v in g.items() if k != "foreach"} for g in topt.state_dict()["param_groups"]]


@pytest.mark.parametrize("name", list(CASES))
def test_defaults_and_errors_match_torch(name):
    torch = pytest.importorskip("torch")
    from torch_compare import same_error

    p, tp = nn.Parameter(jitgrad.ones(2)), torch.nn.Parameter(torch.ones(2))
    assert getattr(optim, name)([p]).defaults == getattr(torch.optim, name)([tp]).defaults
    same_error(lambda lib: getattr(lib.optim, name)(
        [lib.nn.Parameter(lib.ones(2))], lr=-1.0))
    same_error(lambda lib: getattr(lib.optim, name)(
        [lib.nn.Parameter(lib.ones(2))], weight_decay=-0.5))
    with pytest.raises(NotImplementedError, match="differentiable"):
        getattr(optim, name)([p], differentiable=True)


def test_optimizer_trains_a_model():
    jitgrad.manual_seed(0)
    model = nn.Linear(3, 1)
    x = jitgrad.randn(32, 3)
    y = x @ jitgrad.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    for name in CASES:
        m = nn.Linear(3, 1)
        m.load_state_dict(model.state_dict())
        opt = getattr(optim, name)(m.parameters(), **({"lr": 10.0} if name == "Adadelta"
                                                       else {"lr": 0.05}))
        first = None
        for _ in range(60):
            opt.zero_grad()
            loss = ((m(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            first = loss.item() if first is None else first
        assert loss.item() < 0.5 * first, name


def _pair(make, opt_name="SGD", groups=2, **opt_kw):
    torch = pytest.importorskip("torch")
    ps = [nn.Parameter(jitgrad.ones(1)) for _ in range(groups)]
    tps = [torch.nn.Parameter(torch.ones(1)) for _ in range(groups)]
    opt = getattr(optim, opt_name)([{"params": [p], "lr": 0.1 * (i + 1)}
                                    for i, p in enumerate(ps)], **opt_kw)
    topt = getattr(torch.optim, opt_name)([{"params": [p], "lr": 0.1 * (i + 1)}
                                           for i, p in enumerate(tps)], **opt_kw)
    return (make(lr_scheduler, opt), opt), (make(torch.optim.lr_scheduler, topt), topt)


SCHEDULERS = {
    "LinearLR": (lambda m, o: m.LinearLR(o, start_factor=0.25, total_iters=6), {}),
    "LinearLR_down": (lambda m, o: m.LinearLR(o, start_factor=1.0, end_factor=0.1,
                                              total_iters=10), {}),
    "PolynomialLR": (lambda m, o: m.PolynomialLR(o, total_iters=12, power=2.0), {}),
    "OneCycleLR": (lambda m, o: m.OneCycleLR(o, max_lr=[1.0, 2.0], total_steps=26),
                   {"momentum": 0.9}),
    "OneCycleLR_adam_linear_3phase": (
        lambda m, o: m.OneCycleLR(o, max_lr=0.5, epochs=2, steps_per_epoch=13,
                                  anneal_strategy="linear", three_phase=True),
        {"opt_name": "Adam"}),
    "CyclicLR": (lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4),
                 {"momentum": 0.9}),
    "CyclicLR_tri2": (lambda m, o: m.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=0.1,
                                              step_size_up=3, step_size_down=5,
                                              mode="triangular2", cycle_momentum=False), {}),
    "CyclicLR_exp_adam": (lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3,
                                                  mode="exp_range", gamma=0.9),
                          {"opt_name": "Adam"}),
    "SequentialLR": (lambda m, o: m.SequentialLR(o, [m.LinearLR(o, start_factor=0.1,
                                                                total_iters=5),
                                                     m.ExponentialLR(o, gamma=0.9)],
                                                 milestones=[5]), {}),
    "SequentialLR_3": (lambda m, o: m.SequentialLR(o, [m.StepLR(o, 2, 0.5),
                                                       m.CosineAnnealingLR(o, T_max=6),
                                                       m.PolynomialLR(o, total_iters=8)],
                                                   milestones=[4, 11]), {}),
    "ConstantLR": (lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=4), {}),
    "MultiplicativeLR": (lambda m, o: m.MultiplicativeLR(o, lambda e: 0.95 if e % 2 else 0.9),
                         {}),
    "CosineAnnealingWarmRestarts": (lambda m, o: m.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=0.001), {}),
    "SequentialLR_warmup": (lambda m, o: m.SequentialLR(o, [m.ConstantLR(o, 0.1, 3),
                                                            m.CosineAnnealingWarmRestarts(o, 4)],
                                                        milestones=[3]), {}),
    "ChainedScheduler": (lambda m, o: m.ChainedScheduler([m.LinearLR(o, start_factor=0.5,
                                                                     total_iters=4),
                                                          m.ExponentialLR(o, gamma=0.9)]), {}),
}


def _momenta(opt):
    return [g["betas"][0] if "betas" in g else g.get("momentum") for g in opt.param_groups]


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_sequence_matches_torch(name):
    make, kw = SCHEDULERS[name]
    (s, opt), (ts, topt) = _pair(make, **kw)
    ours, theirs = [s.get_last_lr()], [ts.get_last_lr()]
    moms, tmoms = [_momenta(opt)], [_momenta(topt)]
    for _ in range(25):
        opt.step()
        topt.step()
        s.step()
        ts.step()
        ours.append(s.get_last_lr())
        theirs.append(ts.get_last_lr())
        moms.append(_momenta(opt))
        tmoms.append(_momenta(topt))
        assert [g["lr"] for g in opt.param_groups] == [g["lr"] for g in topt.param_groups] \
            or np.allclose([g["lr"] for g in opt.param_groups],
                           [g["lr"] for g in topt.param_groups], rtol=1e-13)
    np.testing.assert_allclose(np.array(ours), np.array(theirs), rtol=1e-13, atol=0)
    np.testing.assert_allclose(np.array(moms, dtype=float), np.array(tmoms, dtype=float),
                               rtol=1e-13, atol=0)
    assert sorted(s.state_dict()) == sorted(ts.state_dict())


def test_scheduler_errors_match_torch():
    pytest.importorskip("torch")
    from torch_compare import same_error

    def opt(lib):
        return lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.1)

    same_error(lambda lib: lib.optim.lr_scheduler.LinearLR(opt(lib), start_factor=0))
    same_error(lambda lib: lib.optim.lr_scheduler.OneCycleLR(opt(lib), max_lr=1.0))
    same_error(lambda lib: lib.optim.lr_scheduler.OneCycleLR(opt(lib), max_lr=1.0,
                                                              total_steps=5,
                                                              anneal_strategy="x"))
    same_error(lambda lib: lib.optim.lr_scheduler.CyclicLR(opt(lib), 0.1, 1.0, mode="x"))
    same_error(lambda lib: lib.optim.lr_scheduler.CyclicLR(
        lib.optim.Adagrad([lib.nn.Parameter(lib.ones(1))]), 0.1, 1.0))

    def seq(lib):
        o = opt(lib)
        m = lib.optim.lr_scheduler
        return m.SequentialLR(o, [m.StepLR(o, 2)], milestones=[3])
    same_error(seq)


def test_onecycle_raises_past_total_steps():
    (s, opt), _ = _pair(SCHEDULERS["OneCycleLR"][0], momentum=0.9)
    for _ in range(26):
        opt.step()
        s.step()
    opt.step()
    with pytest.raises(ValueError, match="Tried to step 27 times"):
        s.step()


def test_sequential_state_dict_round_trip():
    (s, opt), _ = _pair(SCHEDULERS["SequentialLR"][0])
    for _ in range(7):
        opt.step()
        s.step()
    sd = s.state_dict()
    (s2, opt2), _ = _pair(SCHEDULERS["SequentialLR"][0])
    s2.load_state_dict(sd)
    assert s2.last_epoch == s.last_epoch == 7
    assert s2._schedulers[1].last_epoch == s._schedulers[1].last_epoch


def test_warm_restarts_fractional_epochs_match_torch():
    make = SCHEDULERS["CosineAnnealingWarmRestarts"][0]
    (s, opt), (ts, topt) = _pair(make)
    opt.step()
    topt.step()
    for epoch in (0.5, 1.25, 4.0, 9.5, 2.0):
        s.step(epoch)
        ts.step(epoch)
        np.testing.assert_allclose(s.get_last_lr(), ts.get_last_lr(), rtol=1e-13)
        assert s.T_i == ts.T_i and s.last_epoch == ts.last_epoch


@pytest.mark.parametrize("name", ["Adam", "AdamW", "NAdam", "RAdam", "Adamax"])
def test_load_state_dict_with_a_numeric_step_continues_as_a_tensor(name):
    """State saved before steps were tensors keeps "step" as a number; loading makes it float32."""
    def run(convert_step):
        p = nn.Parameter(jitgrad.tensor([1.0, -2.0], dtype=jitgrad.float64))
        opt = getattr(optim, name)([p], lr=0.1)
        for k in range(4):
            p.grad = jitgrad.tensor([0.5 * k - 1.0, 0.25], dtype=jitgrad.float64)
            opt.step()
            if k == 1:
                sd = copy.deepcopy(opt.state_dict())
                if convert_step:
                    sd["state"][0]["step"] = int(sd["state"][0]["step"].item())
                opt = getattr(optim, name)([p], lr=0.1)
                opt.load_state_dict(sd)
                step = opt.state[p]["step"]
                assert isinstance(step, jitgrad.Tensor) and step.dtype == jitgrad.float32
                assert step.item() == 2.0
        return p.detach().numpy()

    np.testing.assert_array_equal(run(True), run(False))


def test_lr_scheduler_module_keeps_every_name_and_pickles_under_it():
    import pickle

    names = ["LRScheduler", "_LRScheduler", "EPOCH_DEPRECATION_WARNING", "_lrs", "_per_group",
             "_lambda_state", "_load_lambda_state", "LambdaLR", "StepLR", "MultiStepLR",
             "ExponentialLR", "CosineAnnealingLR", "ReduceLROnPlateau", "LinearLR",
             "PolynomialLR", "OneCycleLR", "CyclicLR", "SequentialLR", "ChainedScheduler",
             "ConstantLR", "MultiplicativeLR", "CosineAnnealingWarmRestarts"]
    assert all(hasattr(lr_scheduler, n) for n in names)
    p = nn.Parameter(jitgrad.ones(2))
    opt = optim.SGD([p], lr=0.1)
    for sched in (lr_scheduler.StepLR(opt, 2), lr_scheduler.LinearLR(opt),
                  lr_scheduler.ConstantLR(opt)):
        assert type(sched).__module__ == "jitgrad.optim.lr_scheduler"
        sched.step()
        back = pickle.loads(pickle.dumps(sched))
        assert type(back) is type(sched) and back.state_dict().keys() == \
            sched.state_dict().keys() and back.get_last_lr() == sched.get_last_lr()
