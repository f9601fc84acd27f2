"""The ``__torch_function__`` protocol (``jitgrad.overrides``), checked against torch: each
scenario runs the same subclass / mode code on both libraries and compares what the overrides
saw (``func.__name__``) and the result types."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jitgrad
from jitgrad import overrides
from jitgrad.autograd import gradcheck
from jitgrad.ops import registry

torch = pytest.importorskip("torch")


def _logging_subclass(lib):
    log = []

    class LoggingTensor(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            log.append(func.__name__)
            return super().__torch_function__(func, types, args, kwargs)

    return LoggingTensor, log


def _short(kind) -> str:
    """A result type named the same way on both libraries."""
    return "Tensor" if kind.__name__ == "Tensor" else kind.__name__


def _logging_scenario(lib):
    sub, log = _logging_subclass(lib)
    x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
    s = x.as_subclass(sub)
    seen = []
    y = s * 2 + 1
    seen.append(("arith", list(log), _short(type(y))))
    log.clear()
    z = lib.tanh(y).sum()
    seen.append(("fn", list(log), _short(type(z))))
    log.clear()
    z.backward()
    seen.append(("backward", list(log), _short(type(x.grad))))
    log.clear()
    shape, _ = s.shape, s.dtype
    seen.append(("props", list(log), list(shape)))
    log.clear()
    v = s[0]
    seen.append(("getitem", list(log), _short(type(v))))
    log.clear()
    m = s.max(0)
    seen.append(("max", list(log), _short(type(m.values)), type(m).__name__))
    log.clear()
    c = lib.cat([x, s])
    seen.append(("cat", list(log), _short(type(c))))
    log.clear()
    s2 = s.detach().clone()
    log.clear()
    s2 += 1
    s2.mul_(2)
    seen.append(("inplace", list(log), _short(type(s2))))
    log.clear()
    r = 1 - s
    q = s / 2
    e = s == s
    n = -s
    seen.append(("more", list(log), [_short(type(t)) for t in (r, q, e, n)]))
    return seen


def test_logging_subclass_matches_torch():
    assert _logging_scenario(jitgrad) == _logging_scenario(torch)


def test_subclass_results_keep_the_subclass_and_values():
    class Mine(jitgrad.Tensor):
        pass

    a = jitgrad.tensor([1.0, 2.0]).as_subclass(Mine)
    out = a + 1
    assert type(out) is Mine and out.tolist() == [2.0, 3.0]
    assert type(jitgrad.exp(a)) is Mine and type(a.sum()) is Mine
    assert type(a.tolist()) is list and type(a.shape) is jitgrad.Size
    assert repr(a) == "Mine([1., 2.])"
    with jitgrad._C.DisableTorchFunctionSubclass():
        assert type(a + 1) is jitgrad.Tensor
    assert jitgrad._C._is_torch_function_enabled()


def _metadata_scenario(lib):
    class Tagged(lib.Tensor):
        @staticmethod
        def __new__(cls, data, tag):
            t = lib.Tensor._make_subclass(cls, data) if hasattr(lib.Tensor, "_make_subclass") \
                else data.as_subclass(cls)
            t.tag = tag
            return t

        def __init__(self, data, tag):
            pass

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            tags = {a.tag for a in args if isinstance(a, Tagged) and hasattr(a, "tag")}
            out = super().__torch_function__(func, types, args, kwargs)
            if isinstance(out, Tagged) and tags:
                out.tag = "+".join(sorted(tags))
            return out

    a = Tagged(lib.tensor([1.0, 2.0]), "a")
    b = Tagged(lib.tensor([3.0, 4.0]), "b")
    c = a * b
    d = lib.add(c, 1)
    return type(c).__name__, c.tag, d.tag, d.tolist()


def test_metadata_carrying_subclass():
    assert _metadata_scenario(jitgrad) == _metadata_scenario(torch)


def _mode_scenario(lib):
    mode_base = __import__(lib.__name__ + ".overrides", fromlist=["x"]).TorchFunctionMode
    log = []

    class Logging(mode_base):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            log.append(func.__name__)
            return func(*args, **(kwargs or {}))

    class AddIsMul(mode_base):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func is lib.add or func is lib.Tensor.add:
                func = lib.mul
            return func(*args, **(kwargs or {}))

    with Logging():
        a = lib.zeros(2)
        b = lib.tensor([1.0, 3.0])
        c = a + b
        lib.add(a, b)
        _ = a.shape
        lib.nn.functional.relu(b)
        w = lib.ones(2, requires_grad=True)
        (w * 2).sum().backward()
    outside = len(log)
    lib.add(a, b)
    assert len(log) == outside
    with AddIsMul():
        rewritten = (lib.add(b, b).tolist(), (b + b).tolist())
    return log, c.tolist(), rewritten, w.grad.tolist()


def test_mode_logs_and_rewrites_like_torch():
    assert _mode_scenario(jitgrad) == _mode_scenario(torch)


def test_nested_modes_see_the_inner_modes_calls():
    def run(lib):
        base = __import__(lib.__name__ + ".overrides", fromlist=["x"]).TorchFunctionMode
        log = []

        class Named(base):
            def __init__(self, name):
                super().__init__()
                self.name = name

            def __torch_function__(self, func, types, args=(), kwargs=None):
                log.append((self.name, func.__name__))
                return func(*args, **(kwargs or {}))

        x = lib.ones(2)
        with Named("outer"), Named("inner"):
            x.exp()
        return log

    assert run(jitgrad) == run(torch)


def _autograd_scenario(lib):
    sub, log = _logging_subclass(lib)
    w = lib.tensor([0.3, -0.7, 1.1], dtype=lib.float64, requires_grad=True)
    x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64).as_subclass(sub)
    loss = (lib.tanh(x * w) ** 2).sum()
    loss.backward()
    return _short(type(loss)), _short(type(w.grad)), np.round(w.grad.tolist(), 12).tolist()


def test_autograd_through_a_subclass_matches_torch():
    assert _autograd_scenario(jitgrad) == _autograd_scenario(torch)


def test_gradcheck_through_a_subclass():
    class Sub(jitgrad.Tensor):
        pass

    def f(a, b):
        return (a.as_subclass(Sub) * b).sin().sum(0)

    a = jitgrad.randn(3, 2, dtype=jitgrad.float64, requires_grad=True)
    b = jitgrad.randn(2, dtype=jitgrad.float64, requires_grad=True)
    assert gradcheck(f, (a, b))


def _module_scenario(lib):
    sub, log = _logging_subclass(lib)
    lib.manual_seed(0)
    lin = lib.nn.Linear(3, 2)
    x = lib.ones(4, 3).as_subclass(sub)
    out = lin(x)
    names = list(log)
    out.sum().backward()
    param = lib.nn.Parameter(lib.ones(2))
    return names, _short(type(out)), _short(type(lin.weight.grad)), _short(type(param + 1))


def test_nn_module_with_a_subclass_input_and_parameters():
    assert _module_scenario(jitgrad) == _module_scenario(torch)


def test_subclass_before_superclass_left_to_right():
    def run(lib):
        order = []

        class A(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                order.append("A")
                return NotImplemented

        class B(A):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                order.append("B")
                return NotImplemented

        a = lib.ones(1).as_subclass(A)
        b = lib.ones(1).as_subclass(B)
        order.clear()
        with pytest.raises(TypeError) as err:
            lib.add(a, b)
        return order, str(err.value).replace("jitgrad", "torch").split("<class")[0]

    assert run(jitgrad) == run(torch)


class _Duck:
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return NotImplemented


def test_error_texts_match_torch():
    for lib in (jitgrad, torch):
        with pytest.raises(TypeError, match=r"^Multiple dispatch failed for 'torch\.add'; all "
                           r"__torch_function__ handlers returned NotImplemented:\n\n  - tensor "
                           r"subclass <class '.*_Duck'>\n\nFor more information, try re-running "
                           r"with TORCH_LOGS=not_implemented$"):
            lib.add(_Duck(), 1)
        with pytest.raises(TypeError, match=r"^Multiple dispatch failed for 'torch\.Tensor\.add'"):
            lib.ones(1).add(_Duck())
        with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+: 'Tensor' "
                           r"and '_Duck'"):
            lib.ones(1) + _Duck()
        with pytest.raises(TypeError, match=r"^no implementation found for 'torch\.nn\."
                           r"functional\.relu' on types that implement __torch_function__: "
                           r"\[<class '.*_Duck'>\]$"):
            lib.nn.functional.relu(_Duck())


def test_mode_returning_not_implemented_error():
    for lib in (jitgrad, torch):
        base = __import__(lib.__name__ + ".overrides", fromlist=["x"]).TorchFunctionMode

        class Refuses(base):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                return NotImplemented

        with pytest.raises(TypeError, match=r"^Multiple dispatch failed for 'torch\.add'; all "
                           r"__torch_function__ handlers returned NotImplemented:\n\n  - mode "
                           r"object <.*Refuses object at 0x[0-9a-f]+>\n\nFor more"):
            one = lib.ones(1)
            with Refuses():
                lib.add(one, 1)


def test_overrides_helpers():
    class Sub(jitgrad.Tensor):
        pass

    t = jitgrad.ones(2)
    s = t.as_subclass(Sub)
    p = jitgrad.nn.Parameter(jitgrad.ones(2))
    assert not overrides.has_torch_function((t, p, 1))
    assert overrides.has_torch_function((t, s))
    assert overrides.has_torch_function((_Duck(),))
    assert overrides.has_torch_function_unary(s) and not overrides.has_torch_function_unary(t)
    assert overrides.has_torch_function_variadic(t, s)
    assert not overrides.has_torch_function_variadic(t, p)
    assert overrides.is_tensor_like(t) and overrides.is_tensor_like(_Duck())
    assert overrides.is_tensor_like(_Duck) and not overrides.is_tensor_like(1.0)
    assert overrides.is_tensor_method_or_property(jitgrad.Tensor.add)
    assert overrides.is_tensor_method_or_property(jitgrad.Tensor.shape.__get__)
    assert not overrides.is_tensor_method_or_property(jitgrad.nn.functional.relu)
    nowrap = overrides.get_default_nowrap_functions()
    assert jitgrad.Tensor.grad.__get__ in nowrap
    assert jitgrad.tensor in overrides.get_ignored_functions()
    overridable = overrides.get_overridable_functions()
    assert jitgrad.add in overridable[jitgrad] and jitgrad.Tensor.add in \
        overridable[jitgrad.Tensor]
    with jitgrad._C.DisableTorchFunction():
        assert not overrides.has_torch_function((s,))
        assert not jitgrad._C._is_torch_function_enabled()


def test_handle_torch_function_for_a_python_function():
    def run(lib):
        ov = __import__(lib.__name__ + ".overrides", fromlist=["x"])

        def double(a):
            if ov.has_torch_function_unary(a):
                return ov.handle_torch_function(double, (a,), a)
            return a * 2

        class Sub(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                if func is double:
                    return "handled"
                return super().__torch_function__(func, types, args, kwargs)

        plain = double(lib.ones(1)).tolist()
        return plain, double(lib.ones(1).as_subclass(Sub))

    assert run(jitgrad) == run(torch)


def test_grad_of_a_subclass_leaf_is_not_converted():
    def run(lib):
        class Sub(lib.Tensor):
            pass

        w = lib.ones(2).as_subclass(Sub)
        w.requires_grad_()
        (w * 3).sum().backward()
        return _short(type(w)), _short(type(w.grad)), w.grad.tolist(), w.is_leaf

    assert run(jitgrad) == run(torch)


def _run_fresh(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_protocol_is_not_live_until_used():
    """Importing jitgrad and its own Tensor subclasses (Parameter, sparse, jit tracers) leaves
    the eager fast paths untouched: nothing checks for overrides."""
    out = _run_fresh("""
        import jitgrad, jitgrad.nn, jitgrad.sparse, jitgrad.jit, jitgrad.nn.attention.bias
        from jitgrad.ops import registry
        lin = jitgrad.nn.Linear(2, 2)
        lin(jitgrad.ones(1, 2)).sum().backward()
        add = jitgrad.add
        before = add.__code__.co_name
        print(registry.torch_function_live, before == "trampoline")
        class Sub(jitgrad.Tensor):
            pass
        print(registry.torch_function_live, add.__code__.co_name == "trampoline")
        print(type(add(jitgrad.ones(1).as_subclass(Sub), 1)).__name__)
    """)
    assert out.split() == ["False", "False", "True", "True", "Sub"]


def test_a_tensor_like_seen_first_makes_the_protocol_live():
    """The docs' ScalarTensor: a duck type registered with ``implements(torch.mean)`` before
    anything else used the protocol."""
    out = _run_fresh("""
        import jitgrad as torch
        HANDLED_FUNCTIONS = {}

        def implements(torch_function):
            def decorator(func):
                HANDLED_FUNCTIONS[torch_function] = func
                return func
            return decorator

        class ScalarTensor:
            def __init__(self, N, value):
                self._N, self._value = N, value

            def tensor(self):
                return self._value * torch.eye(self._N)

            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                if func not in HANDLED_FUNCTIONS or not all(
                        issubclass(t, (torch.Tensor, ScalarTensor)) for t in types):
                    return NotImplemented
                return HANDLED_FUNCTIONS[func](*args, **(kwargs or {}))

        @implements(torch.mean)
        def mean(input):
            return float(input._value) / input._N

        @implements(torch.tanh)
        def tanh(input):
            return "tanh"

        from jitgrad.ops import registry
        print(registry.torch_function_live)
        s = ScalarTensor(5, 2)
        print(torch.mean(s), torch.tanh(s), registry.torch_function_live)
        try:
            torch.sum(s)
        except TypeError as e:
            print(str(e).splitlines()[0])
    """)
    assert out.splitlines() == [
        "False", "0.4 tanh True",
        "Multiple dispatch failed for 'torch.sum'; all __torch_function__ handlers returned "
        "NotImplemented:"]


def test_backward_runs_without_the_protocol():
    def run(lib):
        log = []

        class Watch(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                log.append(func.__name__)
                return super().__torch_function__(func, types, args, kwargs)

        x = lib.randn(3, requires_grad=True)
        y = lib.exp(x.as_subclass(Watch)) * x
        log.clear()
        (g,) = lib.autograd.grad(y.sum(), x, retain_graph=True)
        seen = [list(log), _short(type(g))]
        log.clear()
        y.sum().backward()
        return seen + [list(log), _short(type(x.grad))]

    assert run(jitgrad) == run(torch)
    assert registry.torch_function_live


def test_a_tensor_like_seen_first_by_an_operator():
    out = _run_fresh("""
        import jitgrad

        class Duck:
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                return func.__name__

        class Refuses:
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                return NotImplemented

        t = jitgrad.ones(2)
        try:
            t + Refuses()
        except TypeError as e:
            print(e)
        print(t * Duck(), t @ Duck(), t / Duck())
    """)
    assert out.splitlines() == ["unsupported operand type(s) for +: 'Tensor' and 'Refuses'",
                                "mul matmul div"]


def test_kwargs_and_resolve_name_as_torch():
    def run(lib):
        ov = __import__(lib.__name__ + ".overrides", fromlist=["x"])
        seen = []

        class Sub(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                seen.append((func.__name__, kwargs))
                return super().__torch_function__(func, types, args, kwargs)

        class Names(ov.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                seen.append(ov.resolve_name(func).replace(lib.__name__, "torch"))
                return func(*args, **(kwargs or {}))

        t = lib.ones(2).as_subclass(Sub)
        lib.add(t, 1)
        t.add(1, alpha=2)
        _ = t.shape
        x = lib.ones(2)
        with Names():
            _ = x + 1, x.shape, lib.linalg.norm(x), x[0], lib.nn.functional.relu(x)
        return seen

    assert run(jitgrad) == run(torch)


def test_a_live_protocol_leaves_the_users_line_in_jit_ir_and_errors():
    """Once the protocol is live, public functions run through jitgrad.overrides' trampolines,
    code compiled from a string: they are jitgrad's frames, not the user's line (the IR's source
    comments and the jit's errors named ``<jitgrad.overrides trampoline>:5`` instead)."""
    out = _run_fresh("""
        import jitgrad
        from jitgrad.ops import registry
        class Sub(jitgrad.Tensor):
            pass
        jitgrad.add(jitgrad.ones(1).as_subclass(Sub), 1)
        def f(x):
            return jitgrad.tanh(x).sum()
        ir = jitgrad.jit(f, backend="interpreter").lower(jitgrad.randn(3)).forward_ir
        print(registry.torch_function_live)
        print(sorted({ln.rsplit("# ", 1)[1] for ln in ir.splitlines() if "# " in ln}))
        def g(x):
            if jitgrad.add(x, 1).sum() > 0:
                return x
            return -x
        try:
            jitgrad.jit(g)(jitgrad.ones(2))
        except Exception as e:
            print("<string>:13" in str(e), "trampoline" in str(e))
    """)
    assert out.split("\n")[:3] == ["True", "['<string>:8']", "True False"]
