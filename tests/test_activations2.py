"""relu6 ... prelu (functions and modules) against torch: values and gradients on inputs that
include the kinks exactly, reprs, in-place variants and errors; gradcheck on the smooth ones."""

import numpy as np
import pytest

import jitgrad
import jitgrad.nn.functional as F

X = np.array([[-4.0, -3.0, -1.0, -0.5, -0.25, 0.0], [0.25, 0.5, 1.0, 3.0, 6.0, 7.5]])

CASES = [("relu6", {}), ("hardtanh", {}), ("hardtanh", {"min_val": -0.5, "max_val": 3.0}),
         ("hardsigmoid", {}), ("hardswish", {}), ("selu", {}), ("celu", {"alpha": 0.7}),
         ("mish", {}), ("softsign", {}), ("softmin", {"dim": 1}),
         ("threshold", {"threshold": 0.25, "value": -2.0}), ("tanhshrink", {}),
         ("softshrink", {}), ("softshrink", {"lambd": 1.0}), ("hardshrink", {}),
         ("logsigmoid", {}), ("glu", {"dim": 1}), ("glu", {"dim": 0})]


@pytest.mark.parametrize("name,kw", CASES, ids=lambda v: str(v))
def test_functions_match_torch_at_and_between_the_kinks(name, kw):
    torch = pytest.importorskip("torch")
    tx, jx = torch.tensor(X, requires_grad=True), jitgrad.tensor(X, requires_grad=True)
    ty = getattr(torch.nn.functional, name)(tx, **kw)
    jy = getattr(F, name)(jx, **kw)
    np.testing.assert_allclose(jy.detach().numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-15)
    w = np.random.default_rng(0).standard_normal(tuple(ty.shape))
    (ty * torch.tensor(w)).sum().backward()
    (jy * jitgrad.tensor(w)).sum().backward()
    # torch's celu and hardsigmoid backward round their float64 coefficients (1/alpha, 1/6)
    # through float32
    rtol = 1e-7 if name in ("celu", "hardsigmoid") else 1e-12
    np.testing.assert_allclose(jx.grad.numpy(), tx.grad.numpy(), rtol=rtol, atol=1e-15)


@pytest.mark.parametrize("weight", [[0.25], [0.1, -0.2]])
def test_prelu_matches_torch(weight):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).standard_normal((3, 2, 4))
    tx, jx = torch.tensor(x, requires_grad=True), jitgrad.tensor(x, requires_grad=True)
    tw = torch.tensor(weight, dtype=torch.float64, requires_grad=True)
    jw = jitgrad.tensor(weight, dtype=jitgrad.float64, requires_grad=True)
    ty, jy = torch.nn.functional.prelu(tx, tw), F.prelu(jx, jw)
    np.testing.assert_allclose(jy.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
    (ty ** 2).sum().backward()
    (jy ** 2).sum().backward()
    np.testing.assert_allclose(jx.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(jw.grad.numpy(), tw.grad.numpy(), rtol=1e-12)


MODULES = [("ReLU6", (), {}), ("ReLU6", (), {"inplace": True}), ("Hardtanh", (-2.0, 2.0), {}),
           ("Hardsigmoid", (), {}), ("Hardswish", (), {"inplace": True}), ("SELU", (), {}),
           ("CELU", (0.5,), {}), ("Mish", (), {}), ("Softsign", (), {}), ("Softmin", (1,), {}),
           ("Threshold", (0.1, 20.0), {}), ("Tanhshrink", (), {}), ("Softshrink", (0.3,), {}),
           ("Hardshrink", (), {}), ("LogSigmoid", (), {}), ("GLU", (), {}), ("PReLU", (), {}),
           ("PReLU", (6,), {"init": 0.1})]


@pytest.mark.parametrize("name,args,kw", MODULES, ids=lambda v: str(v))
def test_modules_match_torch(name, args, kw):
    torch = pytest.importorskip("torch")
    theirs = getattr(torch.nn, name)(*args, **kw)
    ours = getattr(jitgrad.nn, name)(*args, **kw)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x = X.astype(np.float32)  # (a PReLU's weight is float32)
    got = ours(jitgrad.tensor(x.copy()))
    want = theirs(torch.tensor(x.copy()))
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)


def test_inplace_writes_the_input_and_errors():
    x = jitgrad.tensor([-1.0, 2.0, 7.0])
    assert F.relu6(x, inplace=True) is x and x.tolist() == [0.0, 2.0, 6.0]
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1 is "
                                           "size 3"):
        F.glu(jitgrad.ones(2, 3), dim=1)
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        jitgrad.nn.Hardtanh(2.0, 1.0)
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel "
                                           "size"):
        F.prelu(jitgrad.ones(2, 3), jitgrad.ones(2))


def test_gradcheck_of_the_smooth_ones():
    x = jitgrad.randn(3, 4, dtype=jitgrad.float64, requires_grad=True)
    for fn in (F.selu, F.mish, F.softsign, F.logsigmoid, F.tanhshrink,
               lambda t: F.softmin(t, 1), lambda t: F.glu(t, 1)):
        assert jitgrad.autograd.gradcheck(fn, (x,))



def _second_derivative(lib, act):
    """A network's u_x and u_xx (a PINN with ReLU / LeakyReLU activations), and the gradient
    of sum(u_xx^2) that reaches the first layer's bias."""
    rng = np.random.default_rng(0)
    w1 = lib.tensor(rng.normal(size=(4, 1)), requires_grad=True)
    b1 = lib.zeros(4, dtype=lib.float64, requires_grad=True)
    w2 = lib.tensor(rng.normal(size=(1, 4)), requires_grad=True)
    x = lib.tensor(np.linspace(-1, 1, 5)[:, None], requires_grad=True)
    u = lib.nn.functional.linear(act(lib)(lib.nn.functional.linear(x, w1, b1)), w2)
    u_x, = lib.autograd.grad(u, x, lib.ones_like(u), create_graph=True)
    u_xx, = lib.autograd.grad(u_x, x, lib.ones_like(u_x), create_graph=True)
    (u_xx ** 2).sum().backward()
    return u_x, u_xx, b1.grad


# (the activation, its double-backward node, whether u_xx's graph reaches the first bias: as in
# torch, through relu's result yes, through leaky_relu's input no)
ACTS = {"relu": (lambda lib: lib.relu, "ThresholdBackwardBackward0", True),
        "leaky_relu": (lambda lib: lambda v: lib.nn.functional.leaky_relu(v, 0.2),
                       "LeakyReluBackwardBackward0", False)}


@pytest.mark.parametrize("name", ACTS)
def test_second_derivative_of_a_kinked_activation_is_zeros_connected_as_torch(name):
    # relu's and leaky_relu's gradients depend on their result/input (torch's threshold_backward,
    # leaky_relu_backward): u_xx is zeros with a graph, where it was "appears to not have been
    # used in the graph"
    act, node, reaches_bias = ACTS[name]
    u_x, u_xx, b_grad = _second_derivative(jitgrad, act)
    assert u_x.grad_fn is not None
    assert np.array_equal(u_xx.detach().numpy(), np.zeros((5, 1))) and u_xx.grad_fn is not None
    if reaches_bias:
        assert np.array_equal(b_grad.numpy(), np.zeros(4))
    else:
        assert b_grad is None
    x = jitgrad.tensor([-1.0, 0.0, 2.0], dtype=jitgrad.float64, requires_grad=True)
    g, = jitgrad.autograd.grad(act(jitgrad)(x).sum(), x, create_graph=True)
    assert type(g.grad_fn).__name__ == node  # (torch's name)
    assert jitgrad.autograd.gradgradcheck(
        act(jitgrad), jitgrad.tensor([-1.0, 0.5, 2.0], dtype=jitgrad.float64, requires_grad=True))
    torch = pytest.importorskip("torch")
    t_u_x, t_u_xx, t_b_grad = _second_derivative(torch, act)
    np.testing.assert_allclose(u_x.detach().numpy(), t_u_x.detach().numpy(), rtol=1e-12)
    assert np.array_equal(t_u_xx.detach().numpy(), u_xx.detach().numpy())
    assert (t_b_grad is None) == (b_grad is None)
    t_x = torch.tensor([-1.0, 0.0, 2.0], dtype=torch.float64, requires_grad=True)
    t_g, = torch.autograd.grad(act(torch)(t_x).sum(), t_x, create_graph=True)
    assert type(t_g.grad_fn).__name__ == node and t_g.tolist() == g.tolist()


# ---------------------------------------------------------------- double backward, per family
# hardtanh/relu6, threshold, hardshrink, softshrink and prelu are single ops whose gradients are
# ops of their own that depend on the input (torch's hardtanh_backward, threshold_backward, ...):
# a network's second derivatives through them reach its weights and input, as torch's (they
# were "not used in the graph")

def _families(lib):
    F = lib.nn.functional
    return {
        "hardtanh": (lambda v: F.hardtanh(v, -0.5, 0.5), "HardtanhBackwardBackward0"),
        "relu6": (F.relu6, "HardtanhBackwardBackward0"),
        "relu6_inplace": (lambda v: F.relu6(v * 1, inplace=True), "MulBackward0"),
        "threshold": (lambda v: F.threshold(v, 0.1, -2.0), "ThresholdBackwardBackward0"),
        "threshold_inplace": (lambda v: F.threshold(v * 1, 0.1, -2.0, inplace=True),
                              "MulBackward0"),
        "hardshrink": (lambda v: F.hardshrink(v, 0.3), "HardshrinkBackwardBackward0"),
        "softshrink": (lambda v: F.softshrink(v, 0.3), "SoftshrinkBackwardBackward0"),
    }


def _mlp_second_derivatives(lib, act, prelu):
    rng = np.random.default_rng(0)
    w1 = lib.tensor(rng.normal(size=(4, 2)), requires_grad=True)
    b1 = lib.tensor(rng.normal(size=(4,)), requires_grad=True)
    w2 = lib.tensor(rng.normal(size=(1, 4)), requires_grad=True)
    x = lib.tensor(rng.normal(size=(5, 2)), requires_grad=True)
    params = [w1, b1, w2, x]
    h = lib.nn.functional.linear(x, w1, b1)
    if prelu:
        params.append(lib.tensor([0.1, -0.2, 0.3, 0.25], dtype=lib.float64, requires_grad=True))
        a = lib.nn.functional.prelu(h, params[-1])
    else:
        a = act(h)
    out = lib.nn.functional.linear(a, w2)
    g, = lib.autograd.grad(out.sum(), x, create_graph=True)
    unused = lib.autograd.grad((g ** 2).sum(), params, retain_graph=True, allow_unused=True)
    strict = lib.autograd.grad((g ** 2).sum(), params)
    return g, unused, strict


@pytest.mark.parametrize("name", ["hardtanh", "relu6", "relu6_inplace", "threshold",
                                  "threshold_inplace", "hardshrink", "softshrink", "prelu"])
def test_second_derivatives_through_piecewise_activations_match_torch(name):
    torch = pytest.importorskip("torch")
    prelu = name == "prelu"
    act, node = (None, "PreluKernelBackwardBackward0") if prelu else _families(jitgrad)[name]
    t_act = None if prelu else _families(torch)[name][0]
    g, unused, strict = _mlp_second_derivatives(jitgrad, act, prelu)
    t_g, t_unused, t_strict = _mlp_second_derivatives(torch, t_act, prelu)
    np.testing.assert_allclose(g.detach().numpy(), t_g.detach().numpy(), rtol=1e-12)
    # every input is reached (as torch's), with torch's values: zeros but for prelu's
    assert all(u is not None for u in unused) and all(u is not None for u in t_unused)
    for a, b, c in zip(unused, t_unused, strict):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(a.numpy(), c.numpy())
    # the gradient's node, elementwise on the input (torch's name)
    for lib in (jitgrad, torch):
        x = lib.tensor([-1.0, 0.2, 0.0, 2.0], dtype=lib.float64, requires_grad=True)
        if prelu:
            w = lib.tensor([0.25], dtype=lib.float64, requires_grad=True)
            y = lib.nn.functional.prelu(x, w)
        else:
            y = (act if lib is jitgrad else t_act)(x)
        gx, = lib.autograd.grad(y.sum(), x, create_graph=True)
        assert type(gx.grad_fn).__name__ == node
    # gradgradcheck in float64, clear of the kinks
    x = jitgrad.tensor([[-1.3, -0.7, -0.2, 0.05], [0.15, 0.4, 0.8, 1.7]], dtype=jitgrad.float64,
                       requires_grad=True)
    if prelu:
        w = jitgrad.tensor([0.25, -0.1], dtype=jitgrad.float64, requires_grad=True)
        assert jitgrad.autograd.gradgradcheck(jitgrad.nn.functional.prelu, (x.T, w))
    else:
        assert jitgrad.autograd.gradgradcheck(act, (x,))


_SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 0.3, -0.3, 0.1, 6.0, -1.5,
                     2.0, 7.0, -0.2, 0.2, -1.0, 1.0])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_piecewise_activations_at_kinks_nan_and_signed_zeros_match_torch(dtype):
    torch = pytest.importorskip("torch")
    for name in _families(jitgrad):
        got = []
        for lib in (jitgrad, torch):
            x = lib.tensor(_SPECIAL, dtype=getattr(lib, dtype), requires_grad=True)
            y = _families(lib)[name][0](x)
            g, = lib.autograd.grad(y, x, lib.ones_like(y) * 0.5)
            got.append((y.detach().numpy(), g.numpy()))
        (y, g), (t_y, t_g) = got
        np.testing.assert_array_equal(y, t_y, err_msg=name)
        assert np.array_equal(np.signbit(y), np.signbit(t_y)), name  # (-0.0 as torch)
        np.testing.assert_array_equal(g, t_g, err_msg=name)
    # relu's threshold_backward passes the gradient at NaN, as torch's
    x = jitgrad.tensor(_SPECIAL, dtype=getattr(jitgrad, dtype), requires_grad=True)
    tx = torch.tensor(_SPECIAL, dtype=getattr(torch, dtype), requires_grad=True)
    np.testing.assert_array_equal(jitgrad.autograd.grad(x.relu().sum(), x)[0].numpy(),
                                  torch.autograd.grad(tx.relu().sum(), tx)[0].numpy())
    w = jitgrad.tensor([0.25], dtype=getattr(jitgrad, dtype), requires_grad=True)
    tw = torch.tensor([0.25], dtype=getattr(torch, dtype), requires_grad=True)
    y, t_y = F.prelu(x, w), torch.nn.functional.prelu(tx, tw)
    np.testing.assert_array_equal(y.detach().numpy(), t_y.detach().numpy())
    gx, gw = jitgrad.autograd.grad(y.sum(), (x, w))
    t_gx, t_gw = torch.autograd.grad(t_y.sum(), (tx, tw))
    np.testing.assert_array_equal(gx.numpy(), t_gx.numpy())  # (w at 0, as torch's)
    np.testing.assert_array_equal(gw.numpy(), t_gw.numpy())


@pytest.mark.parametrize("name", ["hardtanh", "relu6", "threshold", "hardshrink", "softshrink",
                                  "prelu"])
def test_piecewise_activations_under_jit_match_eager_to_second_order(name):
    # the kernel templates (numba) against the eager impls: values, gradient and the gradient
    # of the gradient, on NaN, inf, signed zeros and the kinks
    pytest.importorskip("numba")
    from jitgrad.jit import jit

    w = jitgrad.tensor(0.25, dtype=jitgrad.float64)
    fn = (lambda v: F.prelu(v, w)) if name == "prelu" else _families(jitgrad)[name][0]

    def run(f, x):
        y = f(x)
        g, = jitgrad.autograd.grad(y, x, y.detach() * 0 + 0.5, create_graph=True)
        gg, = jitgrad.autograd.grad((g * g * x).sum(), x)
        return y, g, gg

    with np.errstate(all="ignore"):
        want = run(fn, jitgrad.tensor(_SPECIAL, requires_grad=True))
        compiled = jit(fn, backend="numba")
        got = run(compiled, jitgrad.tensor(_SPECIAL, requires_grad=True))
    # the gradient op is fused into a kernel with its neighbours (it has a template)
    low = jit(lambda v: fn(v) * 2, backend="numba").lower(
        jitgrad.tensor(_SPECIAL, requires_grad=True))
    op = {"relu6": "hardtanh", "prelu": "prelu_kernel"}.get(name, name) + "_backward"
    fused = [ln for ln in low.backward_ir.splitlines() if op in ln]
    assert fused and all(ln.startswith("      ") for ln in fused)  # (inside a kernel)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        assert np.array_equal(np.signbit(a.detach().numpy()), np.signbit(b.detach().numpy()))


@pytest.mark.parametrize("dtype", ["int64", "bool", "complex64"])
def test_shrinks_refuse_non_floating_inputs_as_torch(dtype):
    torch = pytest.importorskip("torch")
    for name in ("hardshrink", "softshrink"):
        with pytest.raises(NotImplementedError) as theirs:
            getattr(torch.nn.functional, name)(torch.ones(2, dtype=getattr(torch, dtype)))
        with pytest.raises(NotImplementedError) as ours:
            getattr(F, name)(jitgrad.ones(2, dtype=getattr(jitgrad, dtype)))
        assert str(ours.value) == str(theirs.value)


def test_hardsigmoid_second_derivative_raises_as_torch():
    # torch's hardsigmoid_backward has no derivative (its node is "NotImplemented"): a double
    # backward raises, where jitgrad's gradient used to be a constant that ignored the input
    torch = pytest.importorskip("torch")
    vals = [-4.0, -3.0, -0.0, 0.5, 2.9, 3.0, 4.0, float("nan")]
    for dtype in ("float32", "float64"):
        got = []
        for lib in (jitgrad, torch):
            x = lib.tensor(vals, dtype=getattr(lib, dtype), requires_grad=True)
            y = lib.nn.functional.hardsigmoid(x)
            g, = lib.autograd.grad(y.sum(), x, create_graph=True)
            with pytest.raises(RuntimeError) as err:
                lib.autograd.grad(g.sum(), x)
            got.append((y.detach().numpy(), g.detach().numpy(), type(y.grad_fn).__name__,
                        type(g.grad_fn).__name__, str(err.value)))
        (y, g, *names), (t_y, t_g, *t_names) = got
        np.testing.assert_array_equal(y, t_y)
        np.testing.assert_array_equal(g, t_g)  # (torch's 1/6 rounded through float32)
        assert names == t_names
        assert names[-1] == "derivative for aten::hardsigmoid_backward is not implemented"
    x = jitgrad.tensor([-1.0, 4.0])
    assert F.hardsigmoid(x, inplace=True) is x and x.tolist() == [float(np.float32(1 / 3)), 1.0]
    with pytest.raises(NotImplementedError, match="\"hardsigmoid_cpu\" not implemented for "
                                                  "'Long'"):
        F.hardsigmoid(jitgrad.tensor([1, 2]))


def test_hardswish_second_derivative_matches_torch():
    # hardswish_backward is an op with torch's derivative (1/3 strictly inside (-3, 3)); -0.0,
    # NaN and inf as torch's
    torch = pytest.importorskip("torch")
    vals = [-4.0, -3.0, -1.0, -0.0, 0.0, 2.0, 2.9, 3.0, 4.0, float("nan"), float("inf"),
            -float("inf")]
    for dtype in ("float32", "float64"):
        got = []
        for lib in (jitgrad, torch):
            x = lib.tensor(vals, dtype=getattr(lib, dtype), requires_grad=True)
            y = lib.nn.functional.hardswish(x)
            g, = lib.autograd.grad(y.sum(), x, create_graph=True)
            gg, = lib.autograd.grad((g * g).sum(), x)
            got.append(([v.detach().numpy() for v in (y, g, gg)],
                        (type(y.grad_fn).__name__, type(g.grad_fn).__name__)))
        (ours, names), (theirs, t_names) = got
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(a, b)
            assert np.array_equal(np.signbit(a), np.signbit(b))
        assert names == t_names == ("HardswishBackward0", "HardswishBackwardBackward0")
    x = jitgrad.tensor([[-2.5, -1.0, 0.3], [1.2, 2.0, 2.8]], dtype=jitgrad.float64,
                       requires_grad=True)
    assert jitgrad.autograd.gradgradcheck(F.hardswish, (x,))


MASKED = [("relu", {}), ("relu6", {}), ("hardtanh", {}), ("hardshrink", {}), ("softshrink", {}),
          ("hardsigmoid", {}), ("threshold", {"threshold": 0.25, "value": -2.0})]


@pytest.mark.parametrize("name,kw", MASKED, ids=lambda v: str(v))
def test_masked_off_gradients_are_positive_zeros_even_from_inf_and_nan(name, kw):
    # torch's "keep ? grad : 0": a gradient masked off is +0.0 whatever it was (-5, inf, NaN);
    # a product with the mask gave -0.0 and NaN there
    torch = pytest.importorskip("torch")
    x = np.array([-1.0, 2.0, -3.0, 0.3, 5.0, -0.2, 9.0, -7.0], np.float32)
    g = np.array([np.inf, np.nan, -5.0, -1.0, -2.0, -3.0, -np.inf, np.nan], np.float32)
    for upstream in (g, np.where(np.isfinite(g), g, -1.0).astype(np.float32)):
        grads = []
        for lib, fn in ((torch, getattr(torch.nn.functional, name)), (jitgrad, getattr(F, name))):
            t = lib.tensor(x, requires_grad=True)
            fn(t, **kw).backward(lib.tensor(upstream))
            grads.append(t.grad.numpy())
        theirs, ours = grads
        np.testing.assert_array_equal(ours, theirs)
        np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))


def test_relu_gradient_under_jit_is_a_positive_zero_where_masked_off():
    pytest.importorskip("numba")
    x = jitgrad.tensor([-1.0, 2.0, -3.0, 4.0])
    w = jitgrad.tensor([-2.0, -3.0, -4.0, -5.0])
    grad = jitgrad.jit(jitgrad.func.grad(lambda x: (F.relu(x) * w).sum()))(x)
    np.testing.assert_array_equal(grad.numpy(), [0.0, -3.0, 0.0, -5.0])
    assert not np.signbit(grad.numpy()[[0, 2]]).any()
