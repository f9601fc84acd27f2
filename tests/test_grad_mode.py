"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode as context managers and
decorators, nesting, thread-locality, and inference tensors with torch's errors."""

import re
import threading
import warnings

import pytest

import jitgrad
from jitgrad.autograd.grad_mode import is_inference_mode_enabled


def leaf():
    return jitgrad.tensor([1.0, 2.0], requires_grad=True)


def test_no_grad_context_manager():
    x = leaf()
    with jitgrad.no_grad():
        assert not jitgrad.is_grad_enabled()
        y = x * 2
    assert jitgrad.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf


def test_enable_grad_inside_no_grad():
    x = leaf()
    with jitgrad.no_grad():
        with jitgrad.enable_grad():
            y = x * 2
        z = x * 2
    assert y.requires_grad and y.grad_fn.name() == "MulBackward0"
    assert not z.requires_grad


@pytest.mark.parametrize("parens", [True, False])
def test_no_grad_and_enable_grad_as_decorators(parens):
    x = leaf()
    ng = jitgrad.no_grad() if parens else jitgrad.no_grad
    eg = jitgrad.enable_grad() if parens else jitgrad.enable_grad

    @ng
    def double(t):
        """Doubles."""
        return t * 2

    @eg
    def triple(t):
        return t * 3

    assert double.__name__ == "double" and double.__doc__ == "Doubles."
    assert not double(x).requires_grad
    with jitgrad.no_grad():
        assert triple(x).requires_grad
        assert not jitgrad.is_grad_enabled()
    assert jitgrad.is_grad_enabled()


def test_set_grad_enabled_as_call_context_and_decorator():
    x = leaf()
    jitgrad.set_grad_enabled(False)
    try:
        assert not jitgrad.is_grad_enabled()
        assert not (x * 2).requires_grad
    finally:
        jitgrad.set_grad_enabled(True)
    assert jitgrad.is_grad_enabled()
    with jitgrad.set_grad_enabled(False):
        assert not (x * 2).requires_grad
        with jitgrad.set_grad_enabled(True):
            assert (x * 2).requires_grad
        assert not jitgrad.is_grad_enabled()
    assert jitgrad.is_grad_enabled()

    @jitgrad.set_grad_enabled(False)
    def f(t):
        return t * 2

    assert jitgrad.is_grad_enabled()  # building the decorator does not change the mode
    assert not f(x).requires_grad
    assert jitgrad.is_grad_enabled()


def test_modes_restore_on_exception():
    with pytest.raises(ValueError):
        with jitgrad.no_grad():
            raise ValueError
    assert jitgrad.is_grad_enabled()

    @jitgrad.no_grad()
    def boom():
        raise KeyError

    with pytest.raises(KeyError):
        boom()
    assert jitgrad.is_grad_enabled()


def test_generator_functions_keep_the_mode_per_step():
    x = leaf()

    @jitgrad.no_grad()
    def gen():
        for _ in range(2):
            yield (x * 2).requires_grad, jitgrad.is_grad_enabled()

    out = []
    for item in gen():
        out.append(item)
        assert jitgrad.is_grad_enabled()  # the caller's mode between steps
    assert out == [(False, False), (False, False)]


def test_decorating_a_class_warns_like_torch():
    class A:
        def __init__(self):
            self.enabled = jitgrad.is_grad_enabled()

    with pytest.warns(FutureWarning, match="Decorating classes is deprecated"):
        make = jitgrad.no_grad()(A)
    assert make().enabled is False


def test_thread_sees_its_own_mode():
    seen = {}

    def worker():
        seen["start"] = jitgrad.is_grad_enabled()
        with jitgrad.no_grad():
            seen["inside"] = jitgrad.is_grad_enabled()
            barrier.wait()
            barrier.wait()

    barrier = threading.Barrier(2)
    with jitgrad.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        barrier.wait()
        main_inside = jitgrad.is_grad_enabled()
    barrier_main_after = jitgrad.is_grad_enabled()  # worker is still inside its no_grad
    barrier.wait()
    t.join()
    assert seen == {"start": True, "inside": False}
    assert main_inside is False and barrier_main_after is True


def test_inference_mode_context_and_decorators():
    x = leaf()
    with jitgrad.inference_mode():
        assert not jitgrad.is_grad_enabled() and is_inference_mode_enabled()
        y = x * 2
    assert y.is_inference() and not y.requires_grad
    assert not x.is_inference()
    assert jitgrad.is_grad_enabled() and not is_inference_mode_enabled()

    @jitgrad.inference_mode
    def f(t):
        return t * 2

    @jitgrad.inference_mode()
    def g(t):
        return t * 2

    @jitgrad.inference_mode(mode=False)
    def h(t):
        return t * 2

    assert f(x).is_inference() and g(x).is_inference()
    assert not h(x).is_inference() and h(x).requires_grad


def test_inference_mode_false_enables_grad_like_torch():
    with jitgrad.no_grad():
        with jitgrad.inference_mode(False):
            assert jitgrad.is_grad_enabled()
    with jitgrad.inference_mode():
        with jitgrad.inference_mode(False):
            assert jitgrad.is_grad_enabled() and not is_inference_mode_enabled()
            assert not jitgrad.ones(1).is_inference()
        assert is_inference_mode_enabled()


def test_inference_tensors_and_their_views():
    normal = jitgrad.ones(2)
    with jitgrad.inference_mode():
        t = jitgrad.ones(2)
        v = normal.view(2)
        t.add_(1)  # in-place inside inference mode is fine
        normal.add_(1)  # on a normal tensor too
    assert t.is_inference() and t.view(2).is_inference()
    assert not v.is_inference()
    assert not (t + 1).is_inference() and not t.clone().is_inference()
    assert t.tolist() == [2.0, 2.0] and normal.tolist() == [2.0, 2.0]


torch = None


def _inference_error_cases():
    def inplace_outside(lib):
        with lib.inference_mode():
            t = lib.ones(2)
        t.add_(1)

    def saved_for_backward(lib):
        with lib.inference_mode():
            t = lib.ones(2)
        x = lib.ones(2, requires_grad=True)
        return x * t

    def requires_grad_outside(lib):
        with lib.inference_mode():
            t = lib.ones(2)
        t.requires_grad_()

    return [inplace_outside, saved_for_backward, requires_grad_outside]


@pytest.mark.parametrize("case", _inference_error_cases(), ids=lambda f: f.__name__)
def test_inference_tensor_errors_match_torch(case):
    torch = pytest.importorskip("torch")
    errors = []
    for lib in (torch, jitgrad):
        with pytest.raises(RuntimeError) as info:
            case(lib)
        errors.append(str(info.value))
    assert errors[1] == re.sub(r"\btorch\b", "jitgrad", errors[0])


def test_modes_match_torch_for_the_same_program():
    torch = pytest.importorskip("torch")

    def program(lib):
        x = lib.ones(2, requires_grad=True)
        flags = []
        with lib.no_grad():
            flags.append((x * 2).requires_grad)
            with lib.enable_grad():
                flags.append((x * 2).requires_grad)
                with lib.set_grad_enabled(False):
                    flags.append((x * 2).requires_grad)
            with lib.inference_mode(False):
                flags.append(lib.is_grad_enabled())
        with lib.inference_mode():
            y = x * 2
            flags.append((y.requires_grad, y.is_inference(), lib.is_grad_enabled()))
            with lib.enable_grad():
                flags.append(((x * 2).requires_grad, (x * 2).is_inference()))
        flags.append(lib.is_grad_enabled())
        return flags

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert program(jitgrad) == program(torch)
