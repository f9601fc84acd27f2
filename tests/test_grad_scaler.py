"""jitgrad.amp.GradScaler against torch.amp.GradScaler("cpu"): the same training loops (scale
history, skipped steps, parameters after every step, state_dict), the error texts, the
disabled pass-through, and the documented recipes (clipping after unscale_, two optimizers)."""

from __future__ import annotations

import math
import os
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest

import jitgrad
from jitgrad import nn, optim
from jitgrad.amp import GradScaler
from jitgrad.amp.grad_scaler import OptState

INF_STEPS = {2, 5, 6}  # the steps whose input holds an inf (so the weight's gradient does)
RNG = np.random.default_rng(0)
W, B = RNG.standard_normal((3, 4)).astype(np.float32), RNG.standard_normal(3).astype(np.float32)
XS = [RNG.standard_normal((5, 4)).astype(np.float32) for _ in range(10)]
YS = [RNG.standard_normal((5, 3)).astype(np.float32) for _ in range(10)]


def _lib(name):
    if name == "torch":
        return pytest.importorskip("torch")
    return jitgrad


def _model(lib, dtype=np.float32):
    m = lib.nn.Linear(4, 3)
    with lib.no_grad():
        m.weight.copy_(lib.tensor(W.astype(dtype)))
        m.bias.copy_(lib.tensor(B.astype(dtype)))
    return m.double() if dtype == np.float64 else m


def _input(lib, i, dtype=np.float32):
    x = XS[i].astype(dtype)
    if i in INF_STEPS:
        x = x.copy()
        x[1, 2] = np.inf if i != 6 else np.nan
    return lib.tensor(x)


def _np(t):
    return t.detach().cpu().numpy().copy()


def _train(lib, make_opt, steps=10, clip=None, dtype=np.float32, **scaler_kw):
    """Runs the loop with ``lib``'s GradScaler("cpu"); per step: scale and growth tracker after
    update, whether the step ran, the parameters and the step's return value."""
    model = _model(lib, dtype)
    opt = make_opt(lib, model.parameters())
    scaler = lib.amp.GradScaler("cpu", **scaler_kw)
    history = []
    for i in range(steps):
        opt.zero_grad()
        out = model(_input(lib, i, dtype))
        loss = ((out - lib.tensor(YS[i].astype(dtype))) ** 2).mean()
        scaler.scale(loss).backward()
        if clip is not None:
            scaler.unscale_(opt)
            lib.nn.utils.clip_grad_norm_(model.parameters(), clip)
        before = _np(model.weight)
        ret = scaler.step(opt)
        ran = not np.array_equal(before, _np(model.weight))
        scaler.update()
        history.append({"scale": scaler.get_scale(), "tracker": scaler._get_growth_tracker(),
                        "ran": ran, "ret": ret, "weight": _np(model.weight),
                        "bias": _np(model.bias), "grad": _np(model.weight.grad)})
    return history, scaler, model, opt


SGD = lambda lib, p: lib.optim.SGD(p, lr=0.1, momentum=0.9)  # noqa: E731
ADAM = lambda lib, p: lib.optim.Adam(p, lr=1e-2)  # noqa: E731


def _compare(ours, theirs, rtol=1e-5, atol=1e-6):
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a["scale"] == b["scale"], (i, a["scale"], b["scale"])
        assert a["tracker"] == b["tracker"], i
        assert a["ran"] == b["ran"] == (i not in INF_STEPS), i
        assert a["ret"] is None and b["ret"] is None
        for k in ("weight", "bias"):
            np.testing.assert_allclose(a[k], b[k], rtol=rtol, atol=atol, err_msg=f"{k} {i}")
        # (the gradients left after the step are the unscaled ones: inf/nan where skipped)
        np.testing.assert_allclose(a["grad"], b["grad"], rtol=rtol, atol=atol)


@pytest.mark.parametrize("make_opt", [SGD, ADAM], ids=["sgd", "adam"])
@pytest.mark.parametrize("kw", [{}, {"growth_interval": 2},
                                {"init_scale": 1024.0, "growth_factor": 3.0,
                                 "backoff_factor": 0.25, "growth_interval": 3}])
def test_training_loop_matches_torch(make_opt, kw):
    theirs, *_ = _train(_lib("torch"), make_opt, **kw)
    ours, *_ = _train(jitgrad, make_opt, **kw)
    _compare(ours, theirs)
    # and both follow the rule: back off on an inf step, grow after growth_interval clean ones
    scale, tracker = kw.get("init_scale", 2.0**16), 0
    for i, h in enumerate(ours):
        if i in INF_STEPS:
            scale, tracker = scale * kw.get("backoff_factor", 0.5), 0
        elif tracker + 1 == kw.get("growth_interval", 2000):
            scale, tracker = scale * kw.get("growth_factor", 2.0), 0
        else:
            tracker += 1
        assert (h["scale"], h["tracker"]) == (scale, tracker), i


def test_float64_model_matches_torch():
    theirs, *_ = _train(_lib("torch"), ADAM, dtype=np.float64, growth_interval=2)
    ours, *_ = _train(jitgrad, ADAM, dtype=np.float64, growth_interval=2)
    _compare(ours, theirs, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("make_opt", [SGD, ADAM], ids=["sgd", "adam"])
def test_unscale_then_clip_grad_norm_then_step(make_opt):
    theirs, *_ = _train(_lib("torch"), make_opt, clip=0.5, growth_interval=3)
    ours, *_ = _train(jitgrad, make_opt, clip=0.5, growth_interval=3)
    _compare(ours, theirs)
    for h in ours:  # the clipped (unscaled) gradient is what the step used
        if h["ran"]:
            assert np.linalg.norm(h["grad"]) <= 0.5 + 1e-5


def test_grads_are_unscaled_exactly():
    model = _model(jitgrad)
    opt = optim.SGD(model.parameters(), lr=0.1)
    scaler = GradScaler("cpu", init_scale=3.0)  # (1/3 is inexact: the reciprocal in float64)
    loss = model(_input(jitgrad, 0)).sum()
    scaler.scale(loss).backward()
    scaled = _np(model.weight.grad)
    scaler.unscale_(opt)
    inv = np.float32(1 / np.float64(np.float32(3.0)))
    np.testing.assert_array_equal(_np(model.weight.grad), scaled * inv)
    assert scaler._found_inf_per_device(opt)[jitgrad.device("cpu")].item() == 0.0


def test_state_dict_round_trip_and_continue():
    torch = _lib("torch")
    theirs, tscaler, *_ = _train(torch, SGD, steps=5, growth_interval=3)
    ours, scaler, *_ = _train(jitgrad, SGD, steps=5, growth_interval=3)
    sd = scaler.state_dict()
    assert sd == tscaler.state_dict()
    assert list(sd) == ["scale", "growth_factor", "backoff_factor", "growth_interval",
                        "_growth_tracker"]
    assert sd["_growth_tracker"] == 2 and isinstance(sd["scale"], float)
    # a fresh scaler (no tensors yet) and a used one both take the state
    fresh = GradScaler("cpu")
    fresh.load_state_dict(sd)
    assert fresh.state_dict() == sd and fresh._scale is None
    used = GradScaler("cpu", init_scale=8.0)
    used.scale(jitgrad.ones(()))
    used.load_state_dict(sd)
    assert used.state_dict() == sd
    # the next clean step grows the scale (tracker 2 of 3) in both scalers
    for s in (fresh, used):
        model = _model(jitgrad)
        opt = optim.SGD(model.parameters(), lr=0.1)
        s.scale(model(_input(jitgrad, 0)).sum()).backward()
        s.step(opt)
        s.update()
        assert s.get_scale() == sd["scale"] * 2 and s._get_growth_tracker() == 0
    with pytest.raises(RuntimeError, match="saved from a disabled instance of GradScaler"):
        GradScaler("cpu").load_state_dict({})


def test_pickle_only_between_iterations():
    scaler = GradScaler("cpu", growth_interval=3)
    model = _model(jitgrad)
    opt = optim.SGD(model.parameters(), lr=0.1)
    scaler.scale(model(_input(jitgrad, 0)).sum()).backward()
    scaler.step(opt)
    with pytest.raises(AssertionError, match=r"may only be pickled at the beginning of an "
                       r"iteration, or at the end after scaler\.update\(\)\."):
        pickle.dumps(scaler)
    scaler.update()
    copy = pickle.loads(pickle.dumps(scaler))
    assert copy._scale is None and copy.state_dict() == scaler.state_dict()
    assert copy._per_optimizer_states[0]["stage"] is OptState.READY  # (the factory pickled)


def _outcome(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the outcome compared with torch's
        return type(e).__name__, str(e)
    return None


def _scenario(lib, name):
    model = lib.nn.Linear(4, 3)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    s = lib.amp.GradScaler("cpu")
    x = lib.ones(2, 4)

    def backward():
        s.scale(model(x).sum()).backward()

    if name == "unscale_twice":
        backward()
        s.unscale_(opt)
        s.unscale_(opt)
    elif name == "unscale_after_step":
        backward()
        s.step(opt)
        s.unscale_(opt)
    elif name == "step_twice":
        backward()
        s.step(opt)
        s.step(opt)
    elif name == "closure":
        backward()
        s.step(opt, closure=lambda: None)
    elif name == "step_before_scale":
        s.step(opt)
    elif name == "unscale_before_scale":
        s.unscale_(opt)
    elif name == "update_before_scale":
        s.update()
    elif name == "update_without_step":
        backward()
        s.update()
    elif name == "growth_factor":
        lib.amp.GradScaler("cpu", growth_factor=1.0)
    elif name == "backoff_factor":
        lib.amp.GradScaler("cpu", backoff_factor=1.0)
    elif name == "scale_not_tensor":
        s.scale([x, (x, 3)])
    elif name == "fp16_grads":
        h = lib.nn.Linear(2, 2).half()
        o = lib.optim.SGD(h.parameters(), lr=0.1)
        h.weight.grad = lib.ones(2, 2, dtype=lib.float16)
        s.scale(x)
        s.unscale_(o)
    elif name.startswith("new_scale"):
        backward()
        s.step(opt)
        bad = {"new_scale_numel": lib.ones(2), "new_scale_grad": lib.ones((), requires_grad=True),
               "new_scale_shape": lib.ones(1)}[name]
        s.update(bad)
    elif name == "no_grads":  # (every gradient None: nothing was checked)
        s.scale(x)
        s.step(opt)
    elif name == "load_empty":
        s.load_state_dict({})


ERRORS = ["unscale_twice", "unscale_after_step", "step_twice", "closure", "step_before_scale",
          "unscale_before_scale", "update_before_scale", "update_without_step", "growth_factor",
          "backoff_factor", "scale_not_tensor", "fp16_grads", "new_scale_numel",
          "new_scale_grad", "new_scale_shape", "no_grads", "load_empty"]


@pytest.mark.parametrize("name", ERRORS)
def test_errors_match_torch(name):
    torch = _lib("torch")
    theirs = _outcome(lambda: _scenario(torch, name))
    assert theirs is not None
    assert _outcome(lambda: _scenario(jitgrad, name)) == theirs


def test_new_scale_float_and_tensor():
    torch = _lib("torch")
    for lib in (torch, jitgrad):
        s = lib.amp.GradScaler("cpu")
        model = lib.nn.Linear(4, 3)
        opt = lib.optim.SGD(model.parameters(), lr=0.1)
        s.scale(model(lib.ones(2, 4)).sum()).backward()
        s.step(opt)
        s.update(3.5)
        assert s.get_scale() == 3.5 and s._get_growth_tracker() == 0
        new = lib.tensor(12.0, dtype=lib.float64)
        s.update(new)
        new.fill_(1.0)  # (copied: a later change does not reach the scale)
        assert s.get_scale() == 12.0
        assert isinstance(s.get_scale(), float)


@pytest.mark.parametrize("init_scale,growth_factor", [
    (3e38, 2.0), (2.0**127, 2.0), (2.0**127, 2.0 - 2.0**-24), (2.0**127, 2.0 - 2.0**-23),
    (2.0**127, 1.999999), (1.5, 1.1)])
def test_scale_growth_near_float32_overflow(init_scale, growth_factor):
    torch = _lib("torch")
    results = []
    for lib in (torch, jitgrad):
        s = lib.amp.GradScaler("cpu", init_scale=init_scale, growth_factor=growth_factor,
                               growth_interval=1)
        model = lib.nn.Linear(4, 3)
        opt = lib.optim.SGD(model.parameters(), lr=0.0)
        s.scale(model(lib.ones(2, 4)).sum() * 0.0).backward()
        s.step(opt)
        s.update()  # (a product that overflows float32 keeps the scale; the tracker resets)
        results.append((s.get_scale(), s._get_growth_tracker()))
    assert results[0] == results[1] and results[1][1] == 0
    assert math.isfinite(results[1][0])


def test_scale_nested_outputs():
    s = GradScaler("cpu", init_scale=4.0)
    a, b = jitgrad.ones(2), jitgrad.full((3,), 2.0)
    out = s.scale([a, (b, [a]), (t for t in [b])])
    assert isinstance(out, list) and isinstance(out[1], tuple) and isinstance(out[1][1], list)
    assert out[0].tolist() == [4.0, 4.0] and out[1][0].tolist() == [8.0] * 3
    assert out[1][1][0].tolist() == [4.0, 4.0]
    assert isinstance(out[2], map) and next(out[2]).tolist() == [8.0] * 3
    assert s.scale(a).tolist() == [4.0, 4.0]
    assert s.scale(jitgrad.ones((), dtype=jitgrad.float64)).dtype == jitgrad.float64
    assert s._scale.dtype == jitgrad.float32 and s._growth_tracker.dtype == jitgrad.int32


def test_none_grads_are_left_alone_and_step_returns_value():
    model = _model(jitgrad)
    frozen = nn.Parameter(jitgrad.ones(2))
    opt = optim.SGD([{"params": list(model.parameters())}, {"params": [frozen]}], lr=0.1)
    s = GradScaler("cpu")
    loss = model(_input(jitgrad, 0)).sum()
    s.scale(loss).backward()
    assert s.step(opt, lambda: 7.5) == 7.5  # (a positional closure is passed on, as torch)
    assert frozen.grad is None and frozen.tolist() == [1.0, 1.0]
    s.update()


def test_two_optimizers_skip_only_the_one_with_inf():
    torch = _lib("torch")
    results = []
    for lib in (torch, jitgrad):
        m1, m2 = _model(lib), _model(lib)
        o1, o2 = lib.optim.SGD(m1.parameters(), lr=0.1), lib.optim.SGD(m2.parameters(), lr=0.1)
        s = lib.amp.GradScaler("cpu")
        loss = m1(_input(lib, 2)).sum() + m2(_input(lib, 0)).sum()
        s.scale(loss).backward()
        s.step(o1)
        s.step(o2)
        s.update()
        results.append((_np(m1.weight), _np(m2.weight), s.get_scale()))
    np.testing.assert_array_equal(results[1][0], W)  # (skipped)
    assert not np.array_equal(results[1][1], W)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5, atol=1e-6)
    assert results[0][2] == results[1][2] == 2.0**15


def test_disabled_is_a_pass_through():
    model = _model(jitgrad)
    opt = optim.SGD(model.parameters(), lr=0.1)
    s = GradScaler("cpu", enabled=False, growth_factor=0.5)  # (not checked when disabled)
    assert not s.is_enabled() and s.get_scale() == 1.0 and s.state_dict() == {}
    loss = model(_input(jitgrad, 2)).sum()
    assert s.scale(loss) is loss
    outs = [loss]
    assert s.scale(outs) is outs
    loss.backward()
    s.unscale_(opt)
    s.unscale_(opt)
    assert s.step(opt, closure=lambda: 3.0) == 3.0  # (runs, even with inf grads)
    assert not np.isfinite(_np(model.weight)).all()
    s.update()
    s.update(5.0)
    s.load_state_dict({})
    assert pickle.loads(pickle.dumps(s)).is_enabled() is False
    assert s._get_growth_tracker() == 0


def test_getters_and_setters():
    s = GradScaler("cpu", init_scale=8.0, growth_factor=4.0, backoff_factor=0.125,
                   growth_interval=7)
    assert (s.get_scale(), s.get_growth_factor(), s.get_backoff_factor(),
            s.get_growth_interval(), s.is_enabled()) == (8.0, 4.0, 0.125, 7, True)
    s.set_growth_factor(3.0)
    s.set_backoff_factor(0.75)
    s.set_growth_interval(1)
    assert (s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval()) == (
        3.0, 0.75, 1)
    model = _model(jitgrad)
    opt = optim.SGD(model.parameters(), lr=0.1)
    for i, want in [(0, 24.0), (2, 18.0)]:
        s.scale(model(_input(jitgrad, i)).sum()).backward()
        s.step(opt)
        s.update()
        opt.zero_grad()
        assert s.get_scale() == want


def test_cuda_unavailable_warns_and_disables(monkeypatch):
    monkeypatch.setattr(jitgrad.cuda, "is_available", lambda: False)
    with pytest.warns(UserWarning, match=r"^torch\.cuda\.amp\.GradScaler is enabled, but CUDA "
                      r"is not available\.  Disabling\.$") as rec:
        s = GradScaler()
    assert rec[0].filename == __file__  # (stacklevel: the caller's line)
    assert not s.is_enabled() and s.state_dict() == {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not GradScaler(enabled=False).is_enabled()  # (no warning when not asked)
        assert GradScaler("cpu").is_enabled()


class _SelfScaling(optim.SGD):
    """An optimizer that unscales itself (torch's ``_step_supports_amp_scaling`` contract)."""

    _step_supports_amp_scaling = True

    def step(self, closure=None):
        self.seen = (self.grad_scale.item(), self.found_inf.item())
        if self.found_inf.item():
            return "skipped"
        with jitgrad.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    p.grad.div_(self.grad_scale)
        return super().step(closure)


def test_optimizer_that_handles_the_scale():
    model = _model(jitgrad)
    opt = _SelfScaling(model.parameters(), lr=0.1)
    s = GradScaler("cpu", init_scale=4.0)
    s.scale(model(_input(jitgrad, 5)).sum()).backward()
    assert s.step(opt) == "skipped" and opt.seen == (4.0, 1.0)
    assert not hasattr(opt, "grad_scale") and not hasattr(opt, "found_inf")
    s.update()
    assert s.get_scale() == 2.0
    opt.zero_grad()
    s.scale(model(_input(jitgrad, 0)).sum()).backward()
    assert s.step(opt) is None and opt.seen == (2.0, 0.0)
    assert not np.array_equal(_np(model.weight), W)


class _TakesTheScaler(optim.SGD):
    """The deprecated contract: ``step`` takes the scaler as a ``grad_scaler`` keyword."""

    _step_supports_amp_scaling = True

    def step(self, closure=None, grad_scaler=None):
        self.got = grad_scaler
        return "stepped"


def test_optimizer_that_takes_the_scaler_warns():
    model = _model(jitgrad)
    opt = _TakesTheScaler(model.parameters(), lr=0.1)
    s = GradScaler("cpu")
    s.scale(model(_input(jitgrad, 0)).sum()).backward()
    with pytest.warns(FutureWarning, match="GradScaler is going to stop passing itself") as rec:
        assert s.step(opt) == "stepped"
    assert rec[0].filename == __file__ and opt.got is s
    assert s._per_optimizer_states[id(opt)]["stage"] is OptState.STEPPED


_CUDA_SCRIPT = r"""
import sys
import numpy as np
sys.path.insert(0, ".")
import jitgrad
from jitgrad.amp import GradScaler

rng = np.random.default_rng(0)
w = rng.standard_normal((3, 4)).astype(np.float32)
xs = [rng.standard_normal((5, 4)).astype(np.float32) for _ in range(5)]
xs[2][0, 0] = np.inf
runs = {}
for dev in ("cpu", "cuda"):
    m = jitgrad.nn.Linear(4, 3, bias=False)
    with jitgrad.no_grad():
        m.weight.copy_(jitgrad.tensor(w))
    m = m.to(dev)
    opt = jitgrad.optim.SGD(m.parameters(), lr=0.1)
    s = GradScaler(dev, growth_interval=2)
    hist = []
    for x in xs:
        opt.zero_grad()
        s.scale((m(jitgrad.tensor(x, device=dev)) ** 2).mean()).backward()
        s.unscale_(opt)
        want = jitgrad.device("cpu" if dev == "cpu" else "cuda:0")
        assert list(s._found_inf_per_device(opt)) == [want]
        s.step(opt)
        s.update()
        assert s._scale.device.type == dev
        weight = m.weight.detach().cpu().numpy().copy()
        hist.append((s.get_scale(), s._get_growth_tracker(), weight))
    runs[dev] = hist
for a, b in zip(runs["cpu"], runs["cuda"]):
    assert a[:2] == b[:2], (a[:2], b[:2])
    np.testing.assert_allclose(a[2], b[2], rtol=1e-5, atol=1e-6)
s = GradScaler("cuda", init_scale=4.0)
a, b = s.scale([jitgrad.ones(2, device="cuda"), (jitgrad.ones(2),)])
assert a.device.type == "cuda" and b[0].device.type == "cpu" and s._scale.device.type == "cuda"
assert a.tolist() == b[0].tolist() == [4.0, 4.0]
print("scales", [h[0] for h in runs["cuda"]])
"""


def test_cuda_tensors_on_the_simulator():
    pytest.importorskip("numba.cuda")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-c", _CUDA_SCRIPT], cwd=root, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "scales [65536.0, 131072.0, 65536.0, 65536.0, 131072.0]" in r.stdout
