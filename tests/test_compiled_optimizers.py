"""Compiled optimizer steps (``jitgrad.compile(opt.step)``, the compiled-optimizer recipes):
one traced program that updates the parameters and the optimizer state in place, with eager
mode's values (and torch's), a new grad per step and a changing lr without recompiles."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import jitgrad
from jitgrad.errors import JitTraceError

SHAPES = [(5, 4), (4,), (3, 3)]

CASES = [
    ("SGD", {"lr": 0.1, "momentum": 0.9}, 1),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}, 1),
    ("SGD", {"lr": 0.1, "momentum": 0.8, "dampening": 0.3, "maximize": True}, 2),
    ("SGD", {"lr": 0.05}, 1),
    ("Adam", {"lr": 0.1}, 1),
    ("Adam", {"lr": 0.05, "betas": (0.5, 0.6), "amsgrad": True, "weight_decay": 0.1}, 1),
    ("Adam", {"lr": 0.05, "maximize": True, "decoupled_weight_decay": True,
              "weight_decay": 0.1}, 1),
    ("AdamW", {"lr": 0.1}, 1),
    ("AdamW", {"lr": 0.1, "amsgrad": True}, 1),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.1}, 1),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9, "centered": True, "weight_decay": 0.1}, 1),
    ("RMSprop", {"lr": 0.01}, 1),
]


def _params(lib, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    return [lib.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
            for s in SHAPES]


def _grads(step: int) -> list:
    rng = np.random.default_rng(100 + step)
    return [rng.standard_normal(s).astype(np.float32) for s in SHAPES]


def _close(a, b, rtol: float = 2e-6, atol: float = 1e-6) -> None:
    """Equal to float32 rounding (the fused kernels may contract a * b + c into an FMA)."""
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), np.asarray(b.detach().numpy()),
                               rtol=rtol, atol=atol)


@pytest.mark.parametrize("name,kwargs,compiles", CASES,
                         ids=[f"{n}-{'-'.join(map(str, k))}" for n, k, _ in CASES])
def test_compiled_step_equals_eager_and_torch(name, kwargs, compiles):
    torch = pytest.importorskip("torch")
    ps, qs, ts = _params(jitgrad), _params(jitgrad), _params(torch)
    opt = getattr(jitgrad.optim, name)(ps, **kwargs)
    eager = getattr(jitgrad.optim, name)(qs, **kwargs)
    ref = getattr(torch.optim, name)(ts, **kwargs)
    step = jitgrad.compile(lambda: opt.step(), fullgraph=True)
    n = 6
    for i in range(n):
        for p, q, t, g in zip(ps, qs, ts, _grads(i)):  # a new grad tensor each step
            p.grad, q.grad, t.grad = jitgrad.tensor(g), jitgrad.tensor(g), torch.tensor(g)
        step()
        eager.step()
        ref.step()
    assert step._jitted.cache_info()[:2] == (n - compiles, compiles)  # no recompile per step
    for p, q, t in zip(ps, qs, ts):
        _close(p, q)
        np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=1e-5,
                                   atol=2e-6)
    for p, q in zip(ps, qs):  # the state too, updated in place by the program
        for key, value in eager.state[q].items():
            _close(opt.state[p][key], value)


def test_one_program_writes_every_param_and_state_tensor_back():
    ps = _params(jitgrad)
    opt = jitgrad.optim.Adam(ps, lr=0.1, amsgrad=True)
    for p, g in zip(ps, _grads(0)):
        p.grad = jitgrad.tensor(g)
    f = jitgrad.jit(lambda: opt.step())
    f()
    (entry,) = f._cache.values()
    # param, step, exp_avg, exp_avg_sq, max_exp_avg_sq per parameter
    assert len(entry.mutations) == 5 * len(ps)
    assert "item" not in str(f.lower().forward_ir)
    assert all(float(opt.state[p]["step"]) == 1.0 for p in ps)


def test_training_loop_new_grads_each_step_do_not_recompile():
    jitgrad.manual_seed(0)
    a = jitgrad.nn.Sequential(jitgrad.nn.Linear(6, 5), jitgrad.nn.Tanh(),
                              jitgrad.nn.Linear(5, 2))
    b = copy.deepcopy(a)
    opt_a = jitgrad.optim.AdamW(a.parameters(), lr=0.05)
    opt_b = jitgrad.optim.AdamW(b.parameters(), lr=0.05)
    step = jitgrad.compile(opt_a.step, fullgraph=True)
    x = jitgrad.randn(8, 6)
    for _ in range(5):
        for m, o in ((a, opt_a), (b, opt_b)):
            o.zero_grad()  # (grads set to None: backward makes new ones)
            m(x).pow(2).mean().backward()
        step()
        opt_b.step()
    assert step._jitted.cache_info()[:2] == (4, 1)
    for p, q in zip(a.parameters(), b.parameters()):
        _close(p, q)


def test_state_dict_round_trip_after_compiled_steps():
    ps, qs = _params(jitgrad), _params(jitgrad)
    opt = jitgrad.optim.Adam(ps, lr=0.1, amsgrad=True)
    eager = jitgrad.optim.Adam(qs, lr=0.1, amsgrad=True)
    step = jitgrad.compile(lambda: opt.step(), fullgraph=True)
    for i in range(3):
        for p, q, g in zip(ps, qs, _grads(i)):
            p.grad, q.grad = jitgrad.tensor(g), jitgrad.tensor(g)
        step()
        eager.step()
    saved = copy.deepcopy(opt.state_dict())
    assert saved["state"][0]["step"].item() == 3.0
    assert sorted(saved["state"][0]) == ["exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"]
    # a fresh eager optimizer continues from the compiled one's state ...
    rs = [p.detach().clone().requires_grad_() for p in ps]
    resumed = jitgrad.optim.Adam(rs, lr=0.1, amsgrad=True)
    resumed.load_state_dict(saved)
    # ... and the compiled one takes state loaded from the eager one (new tensors): it reads
    # them, not the ones it traced with
    opt.load_state_dict(copy.deepcopy(eager.state_dict()))
    for i in range(3, 6):
        for p, q, r, g in zip(ps, qs, rs, _grads(i)):
            p.grad, q.grad, r.grad = jitgrad.tensor(g), jitgrad.tensor(g), jitgrad.tensor(g)
        step()
        eager.step()
        resumed.step()
    for p, q, r in zip(ps, qs, rs):
        _close(p, q)
        _close(r, q)
    assert opt.state[ps[0]]["step"].item() == 6.0
    assert step._jitted.cache_info().misses == 1


def test_tensor_lr_with_a_scheduler_inside_the_compiled_function_compiles_once():
    torch = pytest.importorskip("torch")
    ps, ts = _params(jitgrad), _params(torch)
    opt = jitgrad.optim.Adam(ps, lr=jitgrad.tensor(0.01))
    sched = jitgrad.optim.lr_scheduler.LinearLR(opt, total_iters=5)
    ref = torch.optim.Adam(ts, lr=torch.tensor(0.01))
    ref_sched = torch.optim.lr_scheduler.LinearLR(ref, total_iters=5)
    lr = opt.param_groups[0]["lr"]

    @jitgrad.compile(fullgraph=True)
    def fn():
        opt.step()
        sched.step()

    for i in range(7):
        for p, t, g in zip(ps, ts, _grads(i)):
            p.grad, t.grad = jitgrad.tensor(g), torch.tensor(g)
        fn()
        ref.step()
        ref_sched.step()
        assert opt.param_groups[0]["lr"] is lr  # filled in place, as torch does
        assert float(lr) == pytest.approx(float(ref.param_groups[0]["lr"]), rel=1e-6)
        assert sched.last_epoch == ref_sched.last_epoch == i + 1
    assert fn._jitted.cache_info()[:2] == (6, 1)
    for p, t in zip(ps, ts):
        np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_float_lr_changed_by_a_scheduler_recompiles_as_torch(capsys):
    ps, qs = _params(jitgrad), _params(jitgrad)
    opt, eager = jitgrad.optim.SGD(ps, lr=0.1), jitgrad.optim.SGD(qs, lr=0.1)
    sched = jitgrad.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    eager_sched = jitgrad.optim.lr_scheduler.StepLR(eager, step_size=2, gamma=0.5)

    @jitgrad.compile(fullgraph=True)
    def fn():
        opt.step()
        sched.step()

    jitgrad._logging.set_logs(recompiles=True)
    try:
        for i in range(6):
            for p, q, g in zip(ps, qs, _grads(i)):
                p.grad, q.grad = jitgrad.tensor(g), jitgrad.tensor(g)
            fn()
            eager.step()
            eager_sched.step()
    finally:
        jitgrad._logging.set_logs()
    # a new float lr every second step: lr 0.1, 0.05, 0.025 -> 3 compiles
    assert fn._jitted.cache_info()[:3] == (3, 3, 1)
    assert "['lr']" in capsys.readouterr().err
    assert opt.param_groups[0]["lr"] == eager.param_groups[0]["lr"] == 0.0125
    for p, q in zip(ps, qs):
        _close(p, q)


def test_scheduler_outside_the_compiled_step_with_a_tensor_lr():
    ps, qs = _params(jitgrad), _params(jitgrad)
    opt = jitgrad.optim.SGD(ps, lr=jitgrad.tensor(0.1), momentum=0.9)
    eager = jitgrad.optim.SGD(qs, lr=jitgrad.tensor(0.1), momentum=0.9)
    scheds = [jitgrad.optim.lr_scheduler.ExponentialLR(o, gamma=0.7) for o in (opt, eager)]
    step = jitgrad.compile(lambda: opt.step(), fullgraph=True)
    for i in range(5):
        for p, q, g in zip(ps, qs, _grads(i)):
            p.grad, q.grad = jitgrad.tensor(g), jitgrad.tensor(g)
        step()
        eager.step()
        for s in scheds:
            s.step()
    assert step._jitted.cache_info()[:2] == (4, 1)
    for p, q in zip(ps, qs):
        _close(p, q)


def test_optimizer_step_after_the_scheduler_in_one_compiled_function():
    ps, qs = _params(jitgrad), _params(jitgrad)
    opt, eager = jitgrad.optim.Adam(ps, lr=0.1), jitgrad.optim.Adam(qs, lr=0.1)
    sched = jitgrad.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    eager_sched = jitgrad.optim.lr_scheduler.ExponentialLR(eager, gamma=0.5)
    for p, q, g in zip(ps, qs, _grads(0)):
        p.grad, q.grad = jitgrad.tensor(g), jitgrad.tensor(g)

    def body():
        sched.step()
        opt.step()

    with pytest.raises(JitTraceError, match=r"optimizer.step\(\) after lr_scheduler.step\(\)"):
        jitgrad.compile(body, fullgraph=True)()
    assert sched.last_epoch == 0 and not opt.state  # (nothing ran)
    fn = jitgrad.compile(body)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the scheduler-before-optimizer warning)
        with pytest.warns(UserWarning, match="cannot be traced"):
            fn()  # runs eagerly: the step uses the scheduler's new lr, as in torch
        fn()
        for _ in range(2):
            eager_sched.step()
            eager.step()
    assert sched.last_epoch == 2 and opt.param_groups[0]["lr"] == 0.025
    for p, q in zip(ps, qs):
        assert jitgrad.equal(p, q)


def test_a_param_that_gets_its_first_grad_later_retraces():
    ps, qs = _params(jitgrad), _params(jitgrad)
    opt, eager = jitgrad.optim.Adam(ps, lr=0.1), jitgrad.optim.Adam(qs, lr=0.1)
    step = jitgrad.compile(lambda: opt.step(), fullgraph=True)
    for i in range(4):
        for k, (p, q, g) in enumerate(zip(ps, qs, _grads(i))):
            if k == 2 and i < 2:
                continue  # no grad yet: skipped, as eagerly
            p.grad, q.grad = jitgrad.tensor(g), jitgrad.tensor(g)
        step()
        eager.step()
    assert step._jitted.cache_info()[:2] == (2, 2)
    assert opt.state[ps[2]]["step"].item() == 2.0
    for p, q in zip(ps, qs):
        _close(p, q)


def test_a_global_named_like_an_attribute_does_not_guard_the_compiled_function_itself():
    # ``step = compile(lambda: opt.step())`` at module level: the lambda reads the attribute
    # name ``step``, which is also the global holding the compiled function; its cache
    # changes on every call and must not be guarded (it retraced on every call)
    ps = _params(jitgrad)
    for p, g in zip(ps, _grads(0)):
        p.grad = jitgrad.tensor(g)
    namespace = {"jitgrad": jitgrad, "opt": jitgrad.optim.SGD(ps, lr=0.1)}
    exec("step = jitgrad.compile(lambda: opt.step(), fullgraph=True)", namespace)  # noqa: S102
    for _ in range(3):
        namespace["step"]()
    assert namespace["step"]._jitted.cache_info()[:2] == (2, 1)


SCHEDULERS = {
    "CosineAnnealingWarmRestarts": lambda o: jitgrad.optim.lr_scheduler.
    CosineAnnealingWarmRestarts(o, T_0=2),
    "ChainedScheduler": lambda o: jitgrad.optim.lr_scheduler.ChainedScheduler(
        [jitgrad.optim.lr_scheduler.ExponentialLR(o, gamma=0.9),
         jitgrad.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5)]),
    "SequentialLR": lambda o: jitgrad.optim.lr_scheduler.SequentialLR(
        o, [jitgrad.optim.lr_scheduler.ConstantLR(o, factor=0.5, total_iters=2),
            jitgrad.optim.lr_scheduler.ExponentialLR(o, gamma=0.9)], milestones=[2]),
    "ReduceLROnPlateau": lambda o: jitgrad.optim.lr_scheduler.ReduceLROnPlateau(o, patience=1),
}


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_schedulers_that_define_their_own_step_inside_a_compiled_function(name):
    torch = pytest.importorskip("torch")
    ps, qs = _params(jitgrad), _params(jitgrad)
    opt = jitgrad.optim.Adam(ps, lr=jitgrad.tensor(0.1))
    eager = jitgrad.optim.Adam(qs, lr=jitgrad.tensor(0.1))
    sched, eager_sched = SCHEDULERS[name](opt), SCHEDULERS[name](eager)
    args = (1.0,) if name == "ReduceLROnPlateau" else ()  # (a metric that never improves)

    @jitgrad.compile(fullgraph=True)
    def fn():
        opt.step()
        sched.step(*args)

    lrs = []
    for i in range(6):
        for p, q, g in zip(ps, qs, _grads(i)):
            p.grad, q.grad = jitgrad.tensor(g), jitgrad.tensor(g)
        fn()
        eager.step()
        eager_sched.step(*args)
        lrs.append(float(opt.param_groups[0]["lr"]))
        assert lrs[-1] == float(eager.param_groups[0]["lr"])
    assert len(set(lrs)) > 1  # (the lr did change)
    assert fn._jitted.cache_info()[:2] == (5, 1)
    for p, q in zip(ps, qs):
        _close(p, q)
    # torch fills a tensor lr in place too
    t_opt = torch.optim.Adam(_params(torch), lr=torch.tensor(0.1))
    lr_t = t_opt.param_groups[0]["lr"]
    torch_sched = getattr(torch.optim.lr_scheduler, name)
    if name == "ReduceLROnPlateau":
        s = torch_sched(t_opt, patience=1)
        for _ in range(6):
            s.step(1.0)
        assert float(lr_t) == pytest.approx(lrs[-1])
    assert t_opt.param_groups[0]["lr"] is lr_t


@pytest.mark.parametrize("name", ["Adamax", "NAdam", "RAdam", "ASGD"])
def test_optimizers_that_read_values_in_python_fall_back_to_eager_intact(name):
    ps, qs = _params(jitgrad), _params(jitgrad)
    opt, eager = getattr(jitgrad.optim, name)(ps), getattr(jitgrad.optim, name)(qs)
    step = jitgrad.compile(lambda: opt.step())
    with pytest.raises(jitgrad.errors.ConcretizationError):
        for p, g in zip(ps, _grads(0)):
            p.grad = jitgrad.tensor(g)
        jitgrad.compile(lambda: opt.step(), fullgraph=True)()
    for i in range(3):
        for p, q, g in zip(ps, qs, _grads(i)):
            p.grad, q.grad = jitgrad.tensor(g), jitgrad.tensor(g)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ("cannot be traced ... runs eagerly")
            step()
        eager.step()
    for p, q in zip(ps, qs):  # the failed traces left the state as eager mode's
        assert jitgrad.equal(p, q)
        for key, value in eager.state[q].items():
            assert jitgrad.equal(opt.state[p][key], value)
