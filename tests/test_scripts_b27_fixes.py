"""Regression tests for what the set-B tutorial scripts (tests/scripts/, run by
tests/test_user_scripts_b27.py) found missing or broken, one focused test per fix."""

import numpy as np
import pytest

import jitgrad
from jitgrad.func import functional_call, jacfwd, jacrev, jvp, vjp, vmap


def _close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


# ------------------------------------------------------------------ torch.func pytrees


def _net():
    jitgrad.manual_seed(0)
    return jitgrad.nn.Linear(3, 2).double()


def test_jacrev_and_jacfwd_of_a_dict_of_parameters():
    net = _net()
    params = {k: v.detach() for k, v in net.named_parameters()}
    x = jitgrad.randn(3, dtype=jitgrad.float64)

    def f(p, x):
        return functional_call(net, p, (x,)).tanh()

    for jac in (jacrev, jacfwd):
        j = jac(f)(params, x)
        assert set(j) == {"weight", "bias"}
        assert tuple(j["weight"].shape) == (2, 2, 3) and tuple(j["bias"].shape) == (2, 2)
        # d tanh(Wx+b)_i / dW_jk = (1 - y_i^2) [i == j] x_k
        y = f(params, x)
        expect_w = jitgrad.einsum("i,ij,k->ijk", 1 - y ** 2, jitgrad.eye(2, dtype=y.dtype), x)
        _close(j["weight"], expect_w)
        _close(j["bias"], jitgrad.diag(1 - y ** 2))
        jw, jx = jac(f, argnums=(0, 1))(params, x)
        _close(jw["bias"], j["bias"])
        _close(jx, (1 - y ** 2)[:, None] * params["weight"])


def test_jvp_of_a_dict_of_parameters_equals_the_jacobian_product():
    net = _net()
    params = {k: v.detach() for k, v in net.named_parameters()}
    x = jitgrad.randn(3, dtype=jitgrad.float64)
    tangents = {k: jitgrad.randn_like(v) for k, v in params.items()}

    def f(p):
        return functional_call(net, p, (x,)).sin()

    out, tout = jvp(f, (params,), (tangents,))
    j = jacrev(f)(params)
    expect = sum((j[k].flatten(1) @ tangents[k].flatten()) for k in params)
    _close(out, f(params))
    _close(tout, expect)
    with pytest.raises(RuntimeError, match="same python structure"):
        jvp(f, (params,), (tangents["weight"],))


def test_vmap_over_the_vjp_fn_of_a_vjp_taken_inside_vmap():
    # the Neural Tangent Kernel tutorial: vmap(vmap(get_ntk)) where get_ntk vmaps its vjp_fn
    w = jitgrad.randn(4, 3, dtype=jitgrad.float64)

    def f(w, x):
        return (w @ x).tanh()

    def rows(x):
        _, vjp_fn = vjp(lambda w: f(w, x), w)
        return vmap(vjp_fn)(jitgrad.eye(4, dtype=w.dtype))[0]

    xs = jitgrad.randn(5, 3, dtype=jitgrad.float64)
    got = vmap(rows)(xs)
    expect = jitgrad.stack([jacrev(f)(w, x) for x in xs])
    assert tuple(got.shape) == (5, 4, 4, 3)
    _close(got, expect)


# ------------------------------------------------------------------ autograd.Function + vmap


def test_numpy_of_a_tensor_that_requires_grad_is_allowed_under_no_grad():
    x = jitgrad.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        x.numpy()
    with jitgrad.no_grad():
        assert x.numpy().tolist() == [1.0, 1.0]


def test_numpy_asarray_of_a_tensor_that_requires_grad_is_refused_as_torch():
    y = jitgrad.ones(2, requires_grad=True) * 2
    for call in (np.asarray, np.array, lambda t: np.asarray(t, dtype=np.float64), np.exp):
        with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires "
                           "grad. Use tensor.detach\\(\\).numpy\\(\\) instead."):
            call(y)
    assert np.asarray(y.detach()).tolist() == [2.0, 2.0]
    with jitgrad.no_grad():
        assert np.asarray(y).tolist() == [2.0, 2.0]


class _StraightThroughRound(jitgrad.autograd.Function):
    """round() forward, a custom (identity times a weight) backward: autodiff of the forward
    would give zeros, so the tests see which rule ran."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x, w):
        return x.round(), x * 0  # (a second output, non-differentiable)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, w = inputs
        ctx.mark_non_differentiable(output[1])
        ctx.save_for_backward(w)
        ctx.scale = 2.0

    @staticmethod
    def backward(ctx, g, _):
        (w,) = ctx.saved_tensors
        return g * w * ctx.scale, g * 0 + 1


def test_generate_vmap_rule_batches_forward_and_uses_the_custom_backward():
    x = jitgrad.tensor([[0.2, 1.7, -0.6], [2.4, 0.5, 1.1]], dtype=jitgrad.float64)
    w = jitgrad.tensor([1.0, 2.0, 3.0], dtype=jitgrad.float64)
    out, zeros = vmap(_StraightThroughRound.apply, in_dims=(0, None))(x, w)
    assert out.tolist() == x.round().tolist() and zeros.abs().sum().item() == 0
    # grad inside vmap: the custom backward per sample
    g = vmap(jitgrad.func.grad(lambda x, w: _StraightThroughRound.apply(x, w)[0].sum()),
             in_dims=(0, None))(x, w)
    _close(g, (2 * w).expand(2, 3))
    # grad outside vmap: the unbatched w gets the per-sample gradients summed
    xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
    vmap(lambda x, w: _StraightThroughRound.apply(x, w)[0], in_dims=(0, None))(xr, wr).sum() \
        .backward()
    _close(xr.grad, (2 * w).expand(2, 3))
    _close(wr.grad, jitgrad.full((3,), 2.0, dtype=jitgrad.float64))


def test_vmap_staticmethod_gets_info_and_in_dims():
    seen = []

    class Double(jitgrad.autograd.Function):
        @staticmethod
        def forward(x, y):
            return x * 2 + y

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return 2 * g, g

        @staticmethod
        def vmap(info, in_dims, x, y):
            seen.append((info.batch_size, info.randomness, in_dims))
            x = x.movedim(in_dims[0], 0)
            return Double.apply(x, y), 0

    x = jitgrad.arange(6.0).view(3, 2)
    out = vmap(Double.apply, in_dims=(1, None), randomness="same")(x, jitgrad.ones(3))
    assert seen == [(2, "same", (0, None))]  # (the batch dim is moved first before the rule)
    assert out.tolist() == (x.T * 2 + 1).tolist()


def test_function_without_a_vmap_rule_raises_torchs_error():
    class NoRule(jitgrad.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    with pytest.raises(RuntimeError, match="You tried to vmap over NoRule, but it does not have "
                                           "vmap support"):
        vmap(NoRule.apply)(jitgrad.ones(3, 2))

    class OldStyle(jitgrad.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    with pytest.raises(RuntimeError, match="it must override the setup_context staticmethod"):
        vmap(OldStyle.apply)(jitgrad.ones(3, 2))


# ------------------------------------------------------------------ nn.utils.parametrize


def test_parametrize_cached_computes_each_parametrized_tensor_once():
    from jitgrad.nn.utils import parametrize

    calls = []

    class Counting(jitgrad.nn.Module):
        def forward(self, x):
            calls.append(1)
            return x * 2

    layer = jitgrad.nn.Linear(3, 3)
    parametrize.register_parametrization(layer, "weight", Counting())
    calls.clear()
    layer.weight, layer.weight
    assert len(calls) == 2
    with parametrize.cached():
        a, b = layer.weight, layer.weight
        with parametrize.cached():  # (nested: the same cache)
            c = layer.weight
        assert a is b is c and len(calls) == 3
    d = layer.weight  # the cache is gone with the outermost context
    assert d is not a and len(calls) == 4
    _close(d.detach(), layer.parametrizations.weight.original.detach() * 2)


# ------------------------------------------------------------------ saved tensor hooks


def test_an_unpack_hook_returning_a_non_tensor_raises_torchs_type_error():
    a = jitgrad.randn(5, requires_grad=True)
    b = jitgrad.randn(5, requires_grad=True)
    with jitgrad.autograd.graph.saved_tensors_hooks(lambda x: None, lambda x: None):
        y = a * b
    with pytest.raises(TypeError, match="Output of saved tensor unpack_hook expected to be a "
                                        "Tensor but got result of type NoneType"):
        y.sum().backward()


# ------------------------------------------------------------------ channels_last


def test_channels_last_strides_and_contiguity_checks():
    x = jitgrad.randn(2, 3, 4, 5)
    assert x.stride() == (60, 20, 5, 1) and x.is_contiguous()
    y = x.to(memory_format=jitgrad.channels_last)
    assert y.stride() == (60, 1, 15, 3) and tuple(y.shape) == (2, 3, 4, 5)
    assert y.is_contiguous(memory_format=jitgrad.channels_last) and not y.is_contiguous()
    assert torch_equal(y, x)
    assert y.contiguous(memory_format=jitgrad.channels_last) is y
    assert y.contiguous().stride() == (60, 20, 5, 1)
    assert jitgrad.empty(2, 3, 4, 5, memory_format=jitgrad.channels_last).stride() \
        == (60, 1, 15, 3)
    assert jitgrad.empty(4, 1, 4, 4).is_contiguous(memory_format=jitgrad.channels_last)
    z = jitgrad.randn(2, 3, 4, 5, 6).contiguous(memory_format=jitgrad.channels_last_3d)
    assert z.stride() == (360, 1, 90, 18, 3)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        jitgrad.randn(3, 4).contiguous(memory_format=jitgrad.channels_last)
    with pytest.raises(RuntimeError, match="preserve memory format is unsupported"):
        x.contiguous(memory_format=jitgrad.preserve_format)


def torch_equal(a, b):
    return a.tolist() == b.tolist()


def test_channels_last_layout_is_kept_by_pointwise_ops_and_conv_and_differentiates():
    x = jitgrad.randn(2, 3, 6, 6, dtype=jitgrad.float64).contiguous(
        memory_format=jitgrad.channels_last).requires_grad_()
    assert (x * 2 + 1).relu().is_contiguous(memory_format=jitgrad.channels_last)
    conv = jitgrad.nn.Conv2d(3, 4, 3).double()
    ref = conv(x.detach().contiguous())
    conv = conv.to(memory_format=jitgrad.channels_last)
    assert conv.weight.is_contiguous(memory_format=jitgrad.channels_last)
    assert isinstance(conv.weight, jitgrad.nn.Parameter) and conv.bias.dim() == 1
    out = conv(x)
    assert out.is_contiguous(memory_format=jitgrad.channels_last) and not out.is_contiguous()
    _close(out.detach(), ref.detach())
    assert jitgrad.autograd.gradcheck(
        lambda t: conv(t.contiguous(memory_format=jitgrad.channels_last)), (x,))
    out.sum().backward()
    assert tuple(conv.weight.grad.shape) == (4, 3, 3, 3)


def test_channels_last_matches_torch():
    torch = pytest.importorskip("torch")
    for shape, fmt in (((2, 3, 4, 5), "channels_last"), ((1, 3, 1, 5), "channels_last"),
                       ((2, 1, 4, 4), "channels_last"), ((2, 3, 2, 4, 5), "channels_last_3d")):
        ours = jitgrad.empty(shape).contiguous(memory_format=getattr(jitgrad, fmt))
        theirs = torch.empty(shape).contiguous(memory_format=getattr(torch, fmt))
        assert ours.stride() == theirs.stride(), shape
        for name in ("channels_last", "channels_last_3d", "contiguous_format"):
            assert ours.is_contiguous(memory_format=getattr(jitgrad, name)) == \
                theirs.is_contiguous(memory_format=getattr(torch, name)), (shape, name)
    p = jitgrad.empty(2, 4, 3, 5).permute(0, 3, 1, 2)
    tp = torch.empty(2, 4, 3, 5).permute(0, 3, 1, 2)
    assert p.is_contiguous(memory_format=jitgrad.channels_last) == \
        tp.is_contiguous(memory_format=torch.channels_last)


def test_contiguous_and_memory_format_checks_inside_vmap_and_jit():
    def f(x):
        cl = x.is_contiguous(memory_format=jitgrad.channels_last)
        return x.contiguous() * 2, cl

    x = jitgrad.randn(3, 2, 4, 5)
    out, _ = f(x)
    vout = vmap(lambda t: f(t)[0])(x)
    _close(vout, out)
    jout = jitgrad.jit(lambda t: f(t)[0])(x)
    _close(jout, out)
    traced = []
    jitgrad.jit(lambda t: traced.append(f(t.view(1, 3, 2, 20))[1]) or t * 1)(x)
    assert traced == [False]


# ------------------------------------------------------------------ utils.benchmark


def test_benchmark_timer_and_measurement():
    from jitgrad.utils.benchmark import Measurement, TaskSpec, Timer

    x = jitgrad.ones(3)
    t = Timer(stmt="torch.add(x, 1)", setup="y = 2", globals={"x": x}, label="add",
              sub_label="ones(3)", description="tiny", num_threads=1)
    m = t.timeit(7)
    assert m.number_per_run == 7 and len(m.times) == 1 and m.times[0] > 0
    assert m.title == "add: ones(3)" and m.stmt == "torch.add(x, 1)"  # (task fields forwarded)
    lines = repr(m).splitlines()
    assert lines[0].startswith("<jitgrad.utils.benchmark.utils.common.Measurement object at")
    assert lines[1:4] == ["add: ones(3)", "tiny", "setup: y = 2"]
    assert lines[-1] == "  1 measurement, 7 runs , 1 thread"
    b = t.blocked_autorange(min_run_time=0.01)
    assert b.number_per_run >= 1 and sum(b.raw_times) >= 0.01
    assert b.median > 0 and b.mean > 0 and b.iqr >= 0
    fixed = Measurement(10, [1e-3, 2e-3, 3e-3, 4e-3], TaskSpec("f()", "pass"))
    assert fixed.times == pytest.approx([1e-4, 2e-4, 3e-4, 4e-4])
    assert fixed.median == pytest.approx(2.5e-4) and fixed.iqr == pytest.approx(1.5e-4)
    assert fixed.has_warnings and "IQR:    150.00 us (175.00 to 325.00)" in repr(fixed)
    with pytest.raises(ValueError, match="Currently only a `str` stmt is supported."):
        Timer(stmt=lambda: None)
    with pytest.raises(NotImplementedError, match="See `Timer.blocked_autorange.`"):
        t.repeat()


def test_pytree_jacobians_with_aux_argnums_and_chunks_match_torch():
    torch = pytest.importorskip("torch")

    def run(lib):
        p = {"a": lib.sin(lib.arange(6, dtype=lib.float64)).view(2, 3),
             "b": lib.cos(lib.arange(3, dtype=lib.float64))}
        x = lib.linspace(-1, 1, 3, dtype=lib.float64)

        def f(p, x):
            y = (p["a"] @ (x * p["b"])).tanh()
            return {"y": y, "s": y.sum()}, y.mean()

        out = []
        for jac in (lib.func.jacrev, lib.func.jacfwd):
            j, aux = jac(f, argnums=(0, 1), has_aux=True)(p, x)
            out += [j["y"][0]["a"], j["y"][0]["b"], j["y"][1], j["s"][0]["a"], aux]
        j = lib.func.jacrev(lambda p: f(p, x)[0]["y"], chunk_size=1)(p)
        return out + [j["a"], j["b"]]

    for ours, theirs in zip(run(jitgrad), run(torch)):
        assert tuple(ours.shape) == tuple(theirs.shape)
        _close(ours.detach().numpy(), theirs.detach().numpy(), tol=1e-12)
