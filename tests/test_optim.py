"""jitgrad.optim: SGD and Adam trajectories vs torch for every option, groups, state_dict."""

import copy
import itertools
import re

import numpy as np
import pytest

import jitgrad
from jitgrad import nn, optim


SHAPES = [(3, 4), (4,)]
TOL = {jitgrad.float64: {"rtol": 1e-10, "atol": 1e-12},
       jitgrad.float32: {"rtol": 1e-5, "atol": 1e-6}}


def _params(dtype, seed=0, with_torch=True):
    """The same initial values as jitgrad Parameters and (when asked) torch Parameters."""
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(dtype.np) for s in SHAPES]
    ours = [nn.Parameter(jitgrad.tensor(a)) for a in arrays]
    if not with_torch:
        return ours, None
    import torch

    return ours, [torch.nn.Parameter(torch.tensor(a)) for a in arrays]


def _grads(dtype, steps, seed=1):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(s).astype(dtype.np) for s in SHAPES] for _ in range(steps)]


def run_both(make_ours, make_theirs, dtype, steps=6, none_grad_at=None):
    """Feeds both optimizers the same gradients; compares parameters after every step."""
    import torch

    ours, theirs = _params(dtype)
    opt, topt = make_ours(ours), make_theirs(theirs)
    for k, grads in enumerate(_grads(dtype, steps)):
        for i, (p, tp, g) in enumerate(zip(ours, theirs, grads)):
            skip = none_grad_at is not None and (k, i) == none_grad_at
            p.grad = None if skip else jitgrad.tensor(g)
            tp.grad = None if skip else torch.tensor(g)
        opt.step()
        topt.step()
        for p, tp in zip(ours, theirs):
            np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), **TOL[dtype])
    return opt, topt


def _sgd_options():
    out = []
    for momentum, dampening, wd, nesterov, maximize in itertools.product(
            (0.0, 0.9), (0.0, 0.5), (0.0, 0.1), (False, True), (False, True)):
        if nesterov and (momentum == 0 or dampening != 0):
            continue
        out.append({"lr": 0.1, "momentum": momentum, "dampening": dampening,
                    "weight_decay": wd, "nesterov": nesterov, "maximize": maximize})
    return out


def _adam_options():
    out = []
    for amsgrad, wd, maximize, decoupled, betas in itertools.product(
            (False, True), (0.0, 0.1), (False, True), (False, True), ((0.9, 0.999), (0.5, 0.6))):
        if decoupled and wd == 0.0:
            continue
        out.append({"lr": 0.05, "betas": betas, "eps": 1e-8, "weight_decay": wd,
                    "amsgrad": amsgrad, "maximize": maximize, "decoupled_weight_decay": decoupled})
    out.append({"lr": 0.01, "eps": 0.1})
    return out


def _id(opts):
    return ",".join(f"{k}={v}" for k, v in opts.items() if k != "lr")


@pytest.mark.parametrize("dtype", [jitgrad.float64, jitgrad.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("opts", _sgd_options(), ids=_id)
def test_sgd_trajectory_matches_torch(opts, dtype):
    torch = pytest.importorskip("torch")
    opt, topt = run_both(lambda ps: optim.SGD(ps, **opts),
                         lambda ps: torch.optim.SGD(ps, foreach=False, **opts), dtype)
    if opts["momentum"]:
        for p, tp in zip(opt.param_groups[0]["params"], topt.param_groups[0]["params"]):
            np.testing.assert_allclose(opt.state[p]["momentum_buffer"].numpy(),
                                       topt.state[tp]["momentum_buffer"].numpy(), **TOL[dtype])
    else:
        assert len(opt.state) == 0


@pytest.mark.parametrize("dtype", [jitgrad.float64, jitgrad.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("opts", _adam_options(), ids=_id)
def test_adam_trajectory_matches_torch(opts, dtype):
    torch = pytest.importorskip("torch")
    opt, topt = run_both(lambda ps: optim.Adam(ps, **opts),
                         lambda ps: torch.optim.Adam(ps, foreach=False, **opts), dtype)
    for p, tp in zip(opt.param_groups[0]["params"], topt.param_groups[0]["params"]):
        s, ts = opt.state[p], topt.state[tp]
        assert sorted(s) == sorted(ts)
        assert s["step"].item() == ts["step"].item() == 6.0
        assert s["step"].dtype is jitgrad.float32
        for key in s:
            np.testing.assert_allclose(s[key].numpy(), ts[key].numpy(), **TOL[dtype])


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_parameter_without_grad_is_skipped(name):
    torch = pytest.importorskip("torch")
    kw = {"lr": 0.1, "momentum": 0.9} if name == "SGD" else {"lr": 0.1}
    opt, topt = run_both(lambda ps: getattr(optim, name)(ps, **kw),
                         lambda ps: getattr(torch.optim, name)(ps, foreach=False, **kw),
                         jitgrad.float64, none_grad_at=(0, 1))
    p, tp = opt.param_groups[0]["params"][1], topt.param_groups[0]["params"][1]
    if name == "Adam":
        assert opt.state[p]["step"].item() == topt.state[tp]["step"].item() == 5.0


def test_mlp_training_with_adam_matches_torch():
    torch = pytest.importorskip("torch")
    tm = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    m = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
    m.load_state_dict({k: jitgrad.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    m.double()
    tm.double()
    opt = optim.Adam(m.parameters(), lr=0.01, weight_decay=0.01, amsgrad=True)
    topt = torch.optim.Adam(tm.parameters(), lr=0.01, weight_decay=0.01, amsgrad=True,
                            foreach=False)
    x = jitgrad.randn(16, 5, dtype=jitgrad.float64)
    y = jitgrad.randint(0, 3, (16,))
    tx, ty = torch.tensor(x.numpy()), torch.tensor(y.numpy())
    for _ in range(5):
        opt.zero_grad()
        topt.zero_grad()
        loss = nn.functional.cross_entropy(m(x), y)
        tloss = torch.nn.functional.cross_entropy(tm(tx), ty)
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-10)
        loss.backward()
        tloss.backward()
        opt.step()
        topt.step()
    for p, tp in zip(m.parameters(), tm.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-9,
                                   atol=1e-11)


def test_param_groups_and_add_param_group():
    a, b, c = (nn.Parameter(jitgrad.ones(2)) for _ in range(3))
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[1]["params"] == [b] and opt.param_groups[1]["momentum"] == 0.9
    opt.add_param_group({"params": [c], "momentum": 0.0})
    assert opt.param_groups[2]["lr"] == 0.1 and opt.param_groups[2]["momentum"] == 0.0
    for p in (a, b, c):
        p.grad = jitgrad.ones(2)
    opt.step()
    np.testing.assert_allclose([a.tolist(), b.tolist(), c.tolist()],
                               [[0.9, 0.9], [0.5, 0.5], [0.9, 0.9]], rtol=1e-7)
    with pytest.raises(ValueError, match="^some parameters appear in more than one parameter "
                                         "group$"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(TypeError, match="^param_group must be a dict, but got"):
        opt.add_param_group([a])
    named = optim.Adam([("w", a), ("v", b)])
    assert named.param_groups[0]["param_names"] == ["w", "v"]


def test_zero_grad():
    p = nn.Parameter(jitgrad.ones(2))
    opt = optim.SGD([p], lr=0.1)
    p.grad = jitgrad.ones(2)
    g = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is g and g.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_closure_runs_with_grad_and_returns_loss():
    p = nn.Parameter(jitgrad.tensor([1.0, -2.0]))
    opt = optim.SGD([p], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with jitgrad.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 5.0
    np.testing.assert_allclose(p.detach().numpy(), [0.8, -1.6], rtol=1e-6)
    assert p.is_leaf and p.grad_fn is None


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_state_dict_round_trip_continues_the_trajectory(name):
    kw = {"lr": 0.1, "momentum": 0.9, "nesterov": True} if name == "SGD" else \
        {"lr": 0.1, "amsgrad": True}
    grads = _grads(jitgrad.float64, 6)
    ref, _ = _params(jitgrad.float64, with_torch=False)
    ref_opt = getattr(optim, name)(ref, **kw)
    ps, _ = _params(jitgrad.float64, with_torch=False)
    opt = getattr(optim, name)(ps, **kw)
    for k, gs in enumerate(grads):
        for p, q, g in zip(ref, ps, gs):
            p.grad, q.grad = jitgrad.tensor(g), jitgrad.tensor(g)
        ref_opt.step()
        opt.step()
        if k == 2:  # restart from a checkpoint: fresh optimizer, loaded state
            sd = copy.deepcopy(opt.state_dict())
            opt = getattr(optim, name)(ps, lr=123.0)
            opt.load_state_dict(sd)
            assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["params"] == ps
    for p, q in zip(ref, ps):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


def test_state_dict_layout_matches_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = _params(jitgrad.float32)
    opt, topt = run_both(lambda ps: optim.Adam(ps, lr=0.1, foreach=False),
                         lambda ps: torch.optim.Adam(ps, lr=0.1, foreach=False),
                         jitgrad.float32, steps=2)
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert list(sd) == list(tsd) == ["state", "param_groups"]
    assert list(sd["state"]) == list(tsd["state"]) == [0, 1]
    assert list(sd["state"][0]) == list(tsd["state"][0])
    assert sd["param_groups"][0]["params"] == tsd["param_groups"][0]["params"] == [0, 1]
    shared = set(sd["param_groups"][0]) & set(tsd["param_groups"][0])
    assert {k: sd["param_groups"][0][k] for k in shared} == \
        {k: tsd["param_groups"][0][k] for k in shared}
    assert sd["state"][0]["exp_avg"] is opt.state[opt.param_groups[0]["params"][0]]["exp_avg"]


def test_load_state_dict_errors():
    a, b = nn.Parameter(jitgrad.ones(1)), nn.Parameter(jitgrad.ones(1))
    sd = optim.SGD([a, b]).state_dict()
    with pytest.raises(ValueError, match="^loaded state dict contains a parameter group that "
                                         "doesn't match the size of optimizer's group$"):
        optim.SGD([a]).load_state_dict(sd)
    with pytest.raises(ValueError, match="^loaded state dict has a different number of "
                                         "parameter groups$"):
        optim.SGD([{"params": [a]}, {"params": [b]}]).load_state_dict(sd)


def test_constructor_errors_match_torch():
    torch = pytest.importorskip("torch")
    p, tp = nn.Parameter(jitgrad.ones(1)), torch.nn.Parameter(torch.ones(1))
    cases = [
        ("SGD", {"lr": -1.0}), ("SGD", {"momentum": -0.5}), ("SGD", {"weight_decay": -1e-3}),
        ("SGD", {"nesterov": True}), ("SGD", {"nesterov": True, "momentum": 0.9,
                                              "dampening": 0.1}),
        ("Adam", {"lr": -1.0}), ("Adam", {"eps": -1.0}), ("Adam", {"betas": (1.0, 0.9)}),
        ("Adam", {"betas": (0.9, -0.1)}), ("Adam", {"weight_decay": -1.0}),
        ("Adam", {"betas": (0.9, 1)}),
    ]
    for name, kw in cases:
        with pytest.raises(ValueError) as theirs:
            getattr(torch.optim, name)([tp], **kw)
        with pytest.raises(ValueError, match="^" + re.escape(str(theirs.value)) + "$"):
            getattr(optim, name)([p], **kw)
    with pytest.raises(ValueError, match="^optimizer got an empty parameter list$"):
        optim.SGD([])
    with pytest.raises(TypeError, match="^params argument given to the optimizer should be an "
                                        "iterable of Tensors or dicts, but got jitgrad."):
        optim.SGD(p)
    with pytest.raises(ValueError, match="^can't optimize a non-leaf Tensor$"):
        optim.SGD([jitgrad.ones(1, requires_grad=True) * 2])
    with pytest.raises(TypeError, match="^optimizer can only optimize Tensors, but one of the "
                                        "params is int$"):
        optim.SGD([1])
    with pytest.raises(TypeError, match="^optimizer parameters need to be organized in ordered "
                                        "collections"):
        optim.SGD([{"params": {p}}])
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([p, p])


def test_repr_matches_torch_for_shared_keys():
    torch = pytest.importorskip("torch")
    p = nn.Parameter(jitgrad.ones(1))
    text = repr(optim.SGD([p], lr=0.5, momentum=0.9))
    assert text.startswith("SGD (\nParameter Group 0\n    dampening: 0\n") and text.endswith(")")
    tp = torch.nn.Parameter(torch.ones(1))
    assert text == repr(torch.optim.SGD([tp], lr=0.5, momentum=0.9))  # (foreach, fused too)
    assert repr(optim.SGD([p], foreach=False)) == repr(torch.optim.SGD([tp], foreach=False))
    assert repr(optim.SGD([p], fused=True)) == repr(torch.optim.SGD([tp], fused=True))
