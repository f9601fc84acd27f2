"""Module hooks against torch: forward (pre-)hooks with kwargs/prepend/always_call, and full
backward (pre-)hooks: what they see, what they replace, and torch's errors."""

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")


def _net(lib):
    lib.manual_seed(0)
    net = lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.Tanh(), lib.nn.Linear(5, 2))
    with lib.no_grad():
        for k, p in enumerate(net.parameters()):
            p.copy_(lib.sin(lib.arange(p.numel(), dtype=lib.float64) + k).reshape(p.shape))
    return net.double()


def _x(lib, requires_grad=True):
    return lib.cos(lib.arange(12, dtype=lib.float64)).reshape(3, 4).requires_grad_(requires_grad)


def _np(v):
    if v is None:
        return None
    if isinstance(v, tuple):
        return tuple(_np(e) for e in v)
    return v.detach().numpy().tolist()


def _record(lib, requires_grad=True, replace=False):
    net, x = _net(lib), _x(lib, requires_grad)
    log = []

    def hook(name):
        def f(m, grad_input, grad_output):
            log.append((name, "full", _np(grad_input), _np(grad_output)))
            if replace and grad_input[0] is not None:
                return (grad_input[0] * 3,)
        return f

    def pre(name):
        def f(m, grad_output):
            log.append((name, "pre", _np(grad_output)))
            if replace:
                return (grad_output[0] * 2,)
        return f

    for i in (0, 2):
        net[i].register_full_backward_hook(hook(i))
        net[i].register_full_backward_pre_hook(pre(i))
    net[1].register_full_backward_hook(hook(1))
    net(x).pow(2).sum().backward()
    return log, _np(x.grad) if requires_grad else None, _np(net[0].weight.grad)


@pytest.mark.parametrize("requires_grad", [True, False])
@pytest.mark.parametrize("replace", [False, True])
def test_full_backward_hooks_see_and_replace_what_torch_does(requires_grad, replace):
    ours = _record(jitgrad, requires_grad, replace)
    theirs = _record(torch, requires_grad, replace)
    assert [e[:2] for e in ours[0]] == [e[:2] for e in theirs[0]]
    _same(ours, theirs)


def _same(a, b):
    if a is None or isinstance(a, (str, int)):
        assert a == b
    elif isinstance(a, (tuple, list)) and a and isinstance(a[0], float):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    else:
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)


def test_backward_hook_on_a_multi_input_module_with_non_tensor_args():
    class Mul(jitgrad.nn.Module):
        def forward(self, a, k, b):
            return a * b * k

    seen = []
    m = Mul()
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(
        (gi[0].tolist(), gi[1], gi[2].tolist(), go[0].tolist())))
    a = jitgrad.tensor([1.0, 2.0], requires_grad=True)
    b = jitgrad.tensor([3.0, 4.0], requires_grad=True)
    m(a, 2.0, b).sum().backward()
    assert seen == [([6.0, 8.0], None, [2.0, 4.0], [1.0, 1.0])]


@pytest.mark.parametrize("case", ["bad_count", "no_input_grad_returns"])
def test_backward_hook_errors_match_torch(case):
    msgs = []
    for lib in (torch, jitgrad):
        lin = lib.nn.Linear(2, 2)
        x = lib.ones(1, 2, requires_grad=case == "bad_count")
        lin.register_full_backward_hook(lambda m, gi, go, lib=lib: (lib.ones(1, 2),) * 2)
        with pytest.raises(RuntimeError) as e:
            lin(x).sum().backward()
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


def test_forward_hooks_with_kwargs_prepend_and_always_call():
    for lib in (torch, jitgrad):
        order = []

        class M(lib.nn.Module):
            def forward(self, x, scale=1.0):
                if scale < 0:
                    raise ValueError("negative")
                return x * scale

        m = M()
        m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"scale": 3.0}),
                                    with_kwargs=True)
        m.register_forward_pre_hook(lambda mod, args, order=order: order.append("pre-first"),
                                    prepend=True)
        m.register_forward_hook(lambda mod, args, kwargs, out: out + kwargs["scale"],
                                with_kwargs=True)
        m.register_forward_hook(lambda mod, args, out, order=order: order.append(("always", out)),
                                always_call=True)
        assert m(lib.ones(2), scale=5.0).tolist() == [6.0, 6.0]
        m._forward_pre_hooks.clear()
        with pytest.raises(ValueError, match="negative"):
            m(lib.ones(2), scale=-1.0)
        assert order[0] == "pre-first" and order[-1] == ("always", None)
        with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
            m.register_forward_pre_hook(lambda mod, a, k: 1, with_kwargs=True)
            m(lib.ones(2))


def test_no_hooks_no_identity_nodes():
    lin = jitgrad.nn.Linear(2, 2)
    assert lin(jitgrad.ones(1, 2)).grad_fn.name() == "AddmmBackward0"
    h = lin.register_full_backward_hook(lambda *a: None)
    assert lin(jitgrad.ones(1, 2)).grad_fn.name() == "BackwardHookFunctionBackward"
    h.remove()
    assert lin(jitgrad.ones(1, 2)).grad_fn.name() == "AddmmBackward0"
