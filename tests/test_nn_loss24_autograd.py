"""autograd.set_multithreading_enabled / is_multithreading_enabled, the autograd.anomaly_mode
and autograd.variable modules, autograd.variable(), func.functionalize and
func.replace_all_batch_norm_modules_."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import jitgrad
import jitgrad.autograd as A
import jitgrad.nn as nn
from jitgrad import func


def test_multithreading_flag_function_context_and_decorator():
    assert A.is_multithreading_enabled() is True
    with A.set_multithreading_enabled(False):
        assert A.is_multithreading_enabled() is False
        x = jitgrad.randn(3, requires_grad=True)
        (x * x).sum().backward()  # the backward runs the same
        np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy(), rtol=1e-6)
    assert A.is_multithreading_enabled() is True
    A.set_multithreading_enabled(False)  # a function call sets it at once
    try:
        assert A.is_multithreading_enabled() is False
        seen = []
        t = threading.Thread(target=lambda: seen.append(A.is_multithreading_enabled()))
        t.start()
        t.join()
        assert seen == [True]  # thread-local, as torch's
    finally:
        A.set_multithreading_enabled(True)

    @A.set_multithreading_enabled(False)
    def inside():
        return A.is_multithreading_enabled()

    A.set_multithreading_enabled(True)
    assert inside() is False and A.is_multithreading_enabled() is True


def test_anomaly_mode_and_variable_modules():
    from jitgrad.autograd import anomaly_mode
    from jitgrad.autograd.variable import Variable

    assert anomaly_mode.detect_anomaly is A.detect_anomaly
    assert anomaly_mode.set_detect_anomaly is A.set_detect_anomaly
    assert Variable is A.Variable
    v = Variable(jitgrad.ones(2), requires_grad=True)
    assert v.requires_grad and isinstance(v, Variable)
    with pytest.raises(RuntimeError, match=r"torch.autograd.variable\(...\) is deprecated, use "
                                           r"torch.tensor\(...\) instead"):
        A.variable(jitgrad.ones(2))


def test_functionalize_same_values_and_input_mutation():
    def f(x):
        y = x.clone()
        y.add_(1)
        x.mul_(2)  # a mutated input: the update reaches the caller, as torch's
        return y * x

    a = jitgrad.tensor([1.0, 2.0])
    b = jitgrad.tensor([1.0, 2.0])
    out = func.functionalize(f)(a)
    np.testing.assert_array_equal(out.numpy(), f(b).numpy())
    np.testing.assert_array_equal(a.numpy(), [2.0, 4.0])
    g = func.functionalize(lambda x: (x * x).sum(), remove="mutations_and_views")
    assert float(func.grad(g)(jitgrad.tensor(3.0))) == 6.0
    with pytest.raises(RuntimeError, match="received invalid argument for remove=x"):
        func.functionalize(f, remove="x")


def test_replace_all_batch_norm_modules_():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4),
                          nn.Sequential(nn.BatchNorm1d(4, track_running_stats=False)))
    assert func.replace_all_batch_norm_modules_(model) is model
    bn = model[1]
    assert bn.running_mean is None and bn.running_var is None
    assert bn.num_batches_tracked is None and bn.track_running_stats is False
    assert "running_mean" not in model.state_dict() and "1.running_mean" not in model.state_dict()
    x = jitgrad.randn(5, 3)
    model.eval()  # no running stats: batch statistics even in eval, as torch
    out = model(x).detach().numpy()
    np.testing.assert_allclose(out.mean(0), 0, atol=1e-5)
