"""The optimizers' multi-tensor fast path (jitgrad/optim/_foreach.py) against their op-by-op
loop (``foreach=False``): the same parameters, states and version counters, bit for bit; and
the cases that must take the loop do."""

import numpy as np
import pytest

import jitgrad
from jitgrad.optim import _foreach

CONFIGS = [
    ("Adam", {}),
    ("Adam", {"amsgrad": True, "weight_decay": 0.1}),
    ("Adam", {"maximize": True, "betas": (0.3, 0.9), "eps": 1e-3}),
    ("Adam", {"decoupled_weight_decay": True, "weight_decay": 0.2, "lr": 0.01}),
    ("AdamW", {"weight_decay": 0.05}),
    ("AdamW", {"amsgrad": True, "maximize": True}),
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "maximize": True}),
]


def _train(name, kwargs, dtype, foreach, steps=6, seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(7, 5), (3,), (), (2, 3, 4)]
    params = [jitgrad.nn.Parameter(jitgrad.tensor(rng.standard_normal(s).astype(dtype)))
              for s in shapes]
    opt = getattr(jitgrad.optim, name)(params, foreach=foreach, **kwargs)
    for step in range(steps):
        for i, p in enumerate(params):
            # one parameter skips a step (no grad), one gets a transposed (strided) grad
            if i == 1 and step == 2:
                p.grad = None
            elif i == 0:
                p.grad = jitgrad.tensor(rng.standard_normal(p.shape[::-1]).astype(dtype)).t()
            else:
                p.grad = jitgrad.tensor(rng.standard_normal(p.shape).astype(dtype))
        opt.step()
    return params, opt


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in
                                                      enumerate(CONFIGS)])
def test_fast_path_equals_the_op_by_op_loop_bit_for_bit(name, kwargs, dtype, monkeypatch):
    calls = []
    for fn in ("adam_", "sgd_"):
        real = getattr(_foreach, fn)
        monkeypatch.setattr(_foreach, fn, lambda *a, _real=real: calls.append(1) or _real(*a))
    loop_params, loop_opt = _train(name, kwargs, dtype, foreach=False)
    assert not calls
    fast_params, fast_opt = _train(name, kwargs, dtype, foreach=None)
    assert len(calls) == 4 * 6 - 1  # every update but the skipped one took the fast path
    for a, b in zip(loop_params, fast_params):
        assert a.dtype == b.dtype and np.array_equal(a.detach().numpy(), b.detach().numpy())
        assert a._version == b._version
        sa, sb = loop_opt.state[a], fast_opt.state[b]
        assert sa.keys() == sb.keys()
        for key in sa:
            assert sa[key].dtype == sb[key].dtype
            assert np.array_equal(sa[key].numpy(), sb[key].numpy()), key
            assert sa[key]._version == sb[key]._version, key


def test_foreach_true_also_takes_the_fast_path(monkeypatch):
    calls = []
    real = _foreach.adam_
    monkeypatch.setattr(_foreach, "adam_", lambda *a: calls.append(1) or real(*a))
    p = jitgrad.nn.Parameter(jitgrad.ones(3))
    p.grad = jitgrad.ones(3)
    jitgrad.optim.Adam([p], foreach=True).step()
    assert calls == [1]


def _loop_only(make_opt, params, monkeypatch):
    monkeypatch.setattr(_foreach, "adam_", pytest.fail)
    monkeypatch.setattr(_foreach, "sgd_", pytest.fail)
    opt = make_opt(params)
    opt.step()
    return opt


def test_cases_the_fast_path_leaves_to_the_loop(monkeypatch):
    # float16 and bfloat16 parameters (bfloat16 is held in float32 arrays: each of its ops
    # rounds to bfloat16), a tensor learning rate, a profiled step: the op-by-op loop
    for dtype in (jitgrad.float16, jitgrad.bfloat16):
        half = jitgrad.nn.Parameter(jitgrad.ones(4, dtype=dtype))
        half.grad = jitgrad.ones(4, dtype=dtype)
        _loop_only(lambda ps: jitgrad.optim.Adam(ps), [half], monkeypatch)
        _loop_only(lambda ps: jitgrad.optim.SGD(ps, lr=0.1, momentum=0.9), [half], monkeypatch)
    p = jitgrad.nn.Parameter(jitgrad.ones(4))
    p.grad = jitgrad.ones(4)
    _loop_only(lambda ps: jitgrad.optim.Adam(ps, lr=jitgrad.tensor(0.01)), [p], monkeypatch)
    with jitgrad.autograd.profiler.profile():
        _loop_only(lambda ps: jitgrad.optim.SGD(ps, lr=0.1), [p], monkeypatch)


def test_fast_path_matches_torch_foreach():
    torch = pytest.importorskip("torch")
    for name, kwargs in CONFIGS:
        ours, _ = _train(name, kwargs, np.float32, foreach=None)
        rng = np.random.default_rng(0)
        shapes = [(7, 5), (3,), (), (2, 3, 4)]
        theirs = [torch.nn.Parameter(torch.tensor(rng.standard_normal(s).astype(np.float32)))
                  for s in shapes]
        opt = getattr(torch.optim, name)(theirs, foreach=True, **kwargs)
        for step in range(6):
            for i, p in enumerate(theirs):
                if i == 1 and step == 2:
                    p.grad = None
                elif i == 0:
                    p.grad = torch.tensor(rng.standard_normal(p.shape[::-1]).astype(
                        np.float32)).t()
                else:
                    p.grad = torch.tensor(rng.standard_normal(p.shape).astype(np.float32))
            opt.step()
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6,
                                       atol=1e-7, err_msg=f"{name} {kwargs}")
