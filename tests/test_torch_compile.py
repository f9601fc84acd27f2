"""jitgrad.compile: torch.compile's entry point on jit, its fallback and its errors."""

import warnings

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.jit.torch_compile import InvalidBackend, OptimizedModule


def _model():
    jg.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 12), nn.BatchNorm1d(12), nn.ReLU(), nn.Linear(12, 3))


def _train(model, call, steps=4):
    x, y = jg.randn(16, 6), jg.randint(0, 3, (16,))
    opt = jg.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        loss = F.cross_entropy(call(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_a_compiled_module_trains_as_the_eager_one(backend):
    eager = _model()
    jg.manual_seed(1)
    want = _train(eager, eager)
    model = _model()
    compiled = jg.compile(model, backend=backend)
    assert isinstance(compiled, OptimizedModule)
    jg.manual_seed(1)
    got = _train(model, compiled)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(model[1].running_mean.numpy(), eager[1].running_mean.numpy(),
                               rtol=1e-5, atol=1e-7)
    assert compiled._compiled_call._jitted.cache_info().misses >= 1


def test_an_optimized_module_looks_like_torchs():
    lin = nn.Linear(2, 3)
    m = jg.compile(lin)
    assert list(m.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]
    assert m.weight is lin.weight and m.in_features == 2
    assert repr(m) == ("OptimizedModule(\n  (_orig_mod): Linear(in_features=2, out_features=3, "
                       "bias=True)\n)")
    m.eval()
    assert not lin.training


def test_a_function_that_cannot_be_traced_runs_eagerly_after_one_warning():
    calls = []

    @jg.compile
    def f(x):
        calls.append(1)
        return x * 2 if x.sum() > 0 else x - 1

    with pytest.warns(UserWarning, match="f cannot be traced .*needs the value of a traced "
                                         "tensor.*runs eagerly from now on"):
        np.testing.assert_array_equal(f(jg.ones(2)).numpy(), [2.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(f(-jg.ones(2)).numpy(), [-2.0, -2.0])
    strict = jg.compile(lambda x: x * 2 if x.sum() > 0 else x, fullgraph=True)
    with pytest.raises(jg.jit.ConcretizationError):
        strict(jg.ones(2))


def test_a_traceable_function_is_jitted_and_differentiates():
    f = jg.compile(lambda x, w: (x @ w).tanh().sum(), mode="max-autotune")
    x = jg.randn(3, 4, dtype=jg.float64)
    w = jg.randn(4, 2, dtype=jg.float64, requires_grad=True)
    f(x, w).backward()
    w2 = w.detach().requires_grad_()
    (x @ w2).tanh().sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), w2.grad.numpy(), rtol=1e-12)
    assert f._jitted.cache_info().misses == 1


def test_compile_arguments():
    fn = lambda x: x  # noqa: E731
    assert jg.compile(fn, disable=True) is fn
    assert jg.compile(fn, backend="eager") is fn
    assert jg.compile(mode="default")(fn)(jg.ones(1)).item() == 1
    with pytest.raises(RuntimeError, match="Unrecognized mode=fast, should be one of: default, "
                                           "lite, reduce-overhead"):
        jg.compile(fn, mode="fast")
    with pytest.raises(InvalidBackend, match="Invalid backend: 'nope'"):
        jg.compile(fn, backend="nope")
    with pytest.raises(AssertionError, match="A callable function is expected, but <class "
                                             "'int'> is provided."):
        jg.compile(3)


def test_set_logs_recompiles_prints_why_a_function_retraces(capsys):
    f = jg.jit(lambda x: x * 2)
    jg._logging.set_logs(recompiles=True)
    try:
        f(jg.ones(2))
        f(jg.ones(3))
    finally:
        jg._logging.set_logs()
    err = capsys.readouterr().err
    assert "jitgrad.jit: compiling" in err and "shape" in err
    f(jg.ones(4))  # set_logs() turned it off again
    assert capsys.readouterr().err == ""
    jg._logging.set_logs(dynamo=10, graph_breaks=True)  # torch's other names: accepted
    jg._logging.set_logs()
    with pytest.raises(TypeError, match="^set_logs\\(\\) got an unexpected keyword argument "
                                        "'foo'$"):
        jg._logging.set_logs(foo=True)


def test_dynamo_reset_forgets_compiled_code_and_fallbacks():
    calls = []

    def f(x):
        calls.append(1)
        return x * 2

    def g(x):
        calls.append(2)
        return -x if x.sum() < 0 else x

    cf, cg = jg.compile(f), jg.compile(g)
    x = jg.ones(3)
    cf(x)
    cf(x)
    with pytest.warns(UserWarning, match="cannot be traced"):
        cg(x)
    assert calls == [1, 2, 2]  # f traced once; g traced, failed, and ran eagerly
    calls.clear()
    jg._dynamo.reset()
    cf(x)
    with pytest.warns(UserWarning, match="cannot be traced"):  # g tries to trace again
        np.testing.assert_allclose(cg(-x).numpy(), [1, 1, 1])
    assert calls == [1, 2, 2]


def test_compiler_stances():
    @jg.compile
    def f(x):  # +1 when traced (compiled), -1 when run eagerly
        return x + 1 if jg.compiler.is_compiling() else x - 1

    def ran(x):
        return "compiled" if f(x).tolist()[0] == 1 else "eager"

    assert not jg.compiler.is_compiling()
    x3, x4, x5 = jg.zeros(3), jg.zeros(4), jg.zeros(5)
    assert ran(x3) == "compiled"
    with jg.compiler.set_stance("force_eager"):
        assert ran(x3) == "eager"
    with jg.compiler.set_stance("eager_on_recompile"):
        assert [ran(x3), ran(x4), ran(x3)] == ["compiled", "eager", "compiled"]
    with jg.compiler.set_stance("fail_on_recompile"):
        assert ran(x3) == "compiled"
        with pytest.raises(RuntimeError, match="^Detected recompile when torch.compile stance "
                                               "is 'fail_on_recompile'. filename: .*f"):
            f(x4)
    with jg.compiler.set_stance("eager_then_compile"):
        assert [ran(x5), ran(x5)] == ["eager", "compiled"]
    jg.compiler.reset()
    with jg.compiler.set_stance("eager_on_recompile"):  # reset: nothing cached any more
        assert ran(x3) == "eager"
    jg.compiler.set_stance("bogus")
    try:
        with pytest.raises(RuntimeError, match="^invalid torch.compile stance 'bogus'$"):
            f(x3)
    finally:
        jg.compiler.set_stance("default")
    assert ran(x3) == "compiled"
    with pytest.raises(RuntimeError, match="^non-default stance cannot have force_backend set$"):
        jg.compiler.set_stance("force_eager", force_backend="eager")
    with pytest.raises(NotImplementedError, match="force_backend"):
        jg.compiler.set_stance(force_backend="eager")


def test_set_stance_inside_a_compiled_region_raises():
    @jg.compiler.set_stance("force_eager")
    def inner(x):
        return x + 1

    @jg.compile
    def outer(x):
        return inner(x)

    with pytest.raises(AssertionError, match="^Attempt to trace forbidden callable <function "
                                             ".*inner"):
        outer(jg.zeros(2))
    np.testing.assert_allclose(inner(jg.zeros(2)).numpy(), [1, 1])  # outside: fine


def test_compiler_disable_runs_eagerly_inside_and_outside_compiled_code():
    calls = []

    @jg.compiler.disable
    def logged(x):
        calls.append(type(x).__name__)  # (a Python side effect: eager, once per call)
        return x * 2

    @jg.compiler.disable(reason="prints")
    def shifted(x):
        return x + 1

    def f(x):
        return logged(x.sin()) + shifted(x)

    x = jg.ones(3)
    for fullgraph in (False, True):  # (torch runs a disabled callee under fullgraph too)
        calls.clear()
        compiled = jg.compile(f, fullgraph=fullgraph)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            outs = [compiled(x), compiled(x)]
        assert calls == ["Tensor", "Tensor"]
        for out in outs:
            np.testing.assert_allclose(out.numpy(), 2 * np.sin(1.0) + 2, rtol=1e-6)
    assert jg.compile(logged) is logged and logged.__name__ == "logged"
    with pytest.raises(jg.errors.JitTraceError, match="shifted is marked "
                       r"torch.compiler.disable \(prints\)"):
        jg.jit(lambda t: shifted(t) * 3)(x)  # (jit itself has no eager fallback)


def test_compiler_helpers():
    assert jg.compiler.list_backends() == ["inductor"]
    assert jg.compiler.list_backends(exclude_tags=()) == ["aot_eager", "eager", "inductor"]
    assert not jg.compiler.is_exporting() and not jg.compiler.is_dynamo_compiling()

    def f(x):
        return x * 2

    assert jg.compiler.allow_in_graph(f) is f
    compiled = jg.compiler.compile(f)
    assert compiled(jg.ones(2)).tolist() == [2.0, 2.0]
