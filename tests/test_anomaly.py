"""Anomaly mode: detect_anomaly / set_detect_anomaly, forward tracebacks, NaN checks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import Function, detect_anomaly, set_detect_anomaly
from jitgrad.autograd.anomaly import is_anomaly_check_nan_enabled, is_anomaly_enabled

ENABLED_MSG = ("Anomaly Detection has been enabled. This mode will increase the runtime and "
               "should only be enabled for debugging.")

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's 0/0 in the rules


@pytest.fixture(autouse=True)
def _restore_anomaly():
    yield
    set_detect_anomaly(False)
    assert not is_anomaly_enabled()


def _nan_sqrt():
    x = jitgrad.tensor([0.0, 1.0], requires_grad=True)
    y = (x.sqrt() * 0).sum()  # SqrtBackward0: 0 / (2 * sqrt(0)) = nan
    return x, y


def test_enabling_warns():
    with pytest.warns(UserWarning, match="^" + ENABLED_MSG.replace(".", r"\.") + "$"):
        ctx = detect_anomaly()
    assert not is_anomaly_enabled()  # only entering enables it
    with ctx:
        assert is_anomaly_enabled() and is_anomaly_check_nan_enabled()
    assert not is_anomaly_enabled()


def test_nan_in_backward_raises_and_warns_with_forward_traceback():
    with pytest.warns(UserWarning) as record:
        with detect_anomaly():
            x, y = _nan_sqrt()
            with pytest.raises(RuntimeError, match=r"^Function 'SqrtBackward0' returned nan "
                                                   r"values in its 0th output\.$"):
                y.backward()
    messages = [str(w.message) for w in record]
    assert messages[0] == ENABLED_MSG
    trace = next(m for m in messages if m.startswith("Error detected in SqrtBackward0."))
    assert trace.startswith("Error detected in SqrtBackward0. Traceback of forward call that "
                            "caused the error:\n")
    assert __file__ in trace and "y = (x.sqrt() * 0).sum()" in trace
    assert "jitgrad" + "/ops" not in trace  # the user's frames, not jitgrad's internals
    assert x.grad is None


def test_nan_in_other_output_index():
    a = jitgrad.tensor([1.0], requires_grad=True)
    b = jitgrad.tensor([0.0], requires_grad=True)
    with pytest.warns(UserWarning):
        with detect_anomaly():
            y = (a * b.sqrt()).sum()  # MulBackward0's 1st output: g * a, fine; sqrt then nan
            z = (a.detach() * 0 / b).sum()  # DivBackward0 grad w.r.t. b: -0 * a / 0 = nan
            y.backward()
            with pytest.raises(RuntimeError, match=r"^Function 'DivBackward0' returned nan "
                                                   r"values in its 1th output\.$"):
                z.backward()


def test_check_nan_false():
    with pytest.warns(UserWarning):
        with detect_anomaly(check_nan=False):
            assert is_anomaly_enabled() and not is_anomaly_check_nan_enabled()
            x, y = _nan_sqrt()
            y.backward()
    assert np.isnan(x.grad.numpy()[0])
    assert is_anomaly_check_nan_enabled()


def test_no_check_when_disabled():
    x, y = _nan_sqrt()
    y.backward()  # NaN gradients are not an error without anomaly mode
    assert np.isnan(x.grad.numpy()[0]) and x.grad.numpy()[1] == 0


def test_set_detect_anomaly_call_and_context_manager():
    set_detect_anomaly(True)
    assert is_anomaly_enabled() and is_anomaly_check_nan_enabled()
    x, y = _nan_sqrt()
    with pytest.warns(UserWarning, match="Error detected in SqrtBackward0"):
        with pytest.raises(RuntimeError, match="returned nan values"):
            y.backward()
    set_detect_anomaly(False)
    assert not is_anomaly_enabled()
    with set_detect_anomaly(True, check_nan=False):
        assert is_anomaly_enabled() and not is_anomaly_check_nan_enabled()
    assert not is_anomaly_enabled() and is_anomaly_check_nan_enabled()


def test_detect_anomaly_as_decorator():
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        @detect_anomaly()
        def f():
            return is_anomaly_enabled()

    assert not is_anomaly_enabled()
    assert f() is True
    assert not is_anomaly_enabled()


def test_error_in_backward_warns_forward_traceback():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("bad backward")

    x = jitgrad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning) as record:
        with detect_anomaly():
            out = Bad.apply(x).sum()
            with pytest.raises(ValueError, match="bad backward"):
                out.backward()
    trace = next(str(w.message) for w in record if "Error detected in" in str(w.message))
    assert trace.startswith("Error detected in BadBackward. Traceback of forward call that "
                            "caused the error:\n")
    assert "out = Bad.apply(x).sum()" in trace


def test_nodes_keep_traceback_only_in_anomaly_mode():
    x = jitgrad.tensor([1.0], requires_grad=True)
    assert (x * 2).grad_fn._anomaly_trace is None
    with pytest.warns(UserWarning):
        with detect_anomaly():
            y = x * 2
    assert any("y = x * 2" in line for line in y.grad_fn._anomaly_trace)


def test_double_backward_nan_detected():
    x = jitgrad.tensor([0.0, 4.0], requires_grad=True)
    with pytest.warns(UserWarning):
        with detect_anomaly():
            y = (x ** 1.5).sum()
            (g,) = jitgrad.autograd.grad(y, x, create_graph=True)  # 1.5 * x ** 0.5: finite
            np.testing.assert_allclose(g.detach().numpy(), [0.0, 3.0])
            with pytest.raises(RuntimeError, match="^Function 'PowBackward0' returned nan values "
                                                   "in its 0th output.$"):
                (g * 0).sum().backward()  # d/dx x ** 0.5 at 0 is inf, times 0 is nan


def test_matches_torch():
    torch = pytest.importorskip("torch")

    def run(lib):
        x = lib.tensor([0.0, 1.0], requires_grad=True)
        b = lib.tensor([0.0, 2.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.autograd.detect_anomaly():
                out = (x.sqrt() * 0 + (x * 0) / b).sum()
                try:
                    out.backward()
                except RuntimeError as e:
                    return str(e)
        return None

    assert run(jitgrad) == run(torch) is not None
