"""Forward-mode AD: dual_level, make_dual, unpack_dual, and the ops' JVP rules.

Tangents are checked against central finite differences (float64) always, and against torch's
forward AD with the same tangents when torch is installed.
"""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad
import jitgrad.autograd.forward_ad as fwAD
from jitgrad.autograd import Function
from jitgrad.ops import nn_ops  # noqa: F401 - registers the nn ops

rng = np.random.default_rng(1234)


def _t(a, requires_grad=False):
    return jitgrad.tensor(np.array(a), requires_grad=requires_grad)


# ---------------------------------------------------------------- API and errors


def test_make_dual_outside_level_raises():
    x = jitgrad.randn(3, dtype=jitgrad.float64)
    with pytest.raises(RuntimeError, match=r"^Trying to create a dual Tensor for forward AD but "
                                           r"no level exists, make sure to enter_dual_level\(\) "
                                           r"first\.$"):
        fwAD.make_dual(x, x)


def test_unpack_dual_outside_level():
    x = jitgrad.randn(3)
    out = fwAD.unpack_dual(x)
    assert isinstance(out, fwAD.UnpackedDualTensor)
    assert out.primal is x and out.tangent is None
    assert out._fields == ("primal", "tangent")


def test_make_dual_errors():
    x = jitgrad.randn(3, dtype=jitgrad.float64)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match=re_escape(
                "Trying to set a forward gradient that has a different size than that of the "
                "original Tensor, this is not supported. Tensor is of size [3] while the given "
                "forward gradient is of size [4].")):
            fwAD.make_dual(x, jitgrad.randn(4, dtype=jitgrad.float64))
        with pytest.raises(ValueError, match="Expected tangent to be floating point or complex, "
                                             "but got: jitgrad.int64"):
            fwAD.make_dual(x, jitgrad.ones(3, dtype=jitgrad.int64))
        with pytest.raises(ValueError, match="Expected primal to be floating point or complex, "
                                             "but got: jitgrad.int64"):
            fwAD.make_dual(jitgrad.ones(3, dtype=jitgrad.int64), x)
        d = fwAD.make_dual(x, x)
        with pytest.raises(RuntimeError, match="Making a dual Tensor based on a Tensor that "
                                               "already has a forward gradient at the same "
                                               "level 0 is not supported."):
            fwAD.make_dual(d, x)


def re_escape(s: str) -> str:
    import re

    return "^" + re.escape(s) + "$"


def test_levels():
    with pytest.raises(RuntimeError, match="Dual level must be a positive number."):
        fwAD.exit_dual_level()
    with fwAD.dual_level() as level:
        assert level == 0
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported at the "
                                               "moment"):
            fwAD.enter_dual_level()
        with pytest.raises(RuntimeError, match="Trying to exit a forward AD level that was not "
                                               "the last one that was created"):
            fwAD.exit_dual_level(level=5)
    level = fwAD.enter_dual_level()
    assert level == 0
    fwAD.exit_dual_level(level=level)
    with fwAD.dual_level() as level:  # levels are reusable after exit
        assert level == 0


def test_exit_deletes_tangents():
    x = jitgrad.randn(3, dtype=jitgrad.float64)
    t = jitgrad.randn(3, dtype=jitgrad.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        y = d.exp()
        primal, tangent = fwAD.unpack_dual(d)
        assert tangent is t
        np.testing.assert_array_equal(primal.numpy(), x.numpy())
        assert fwAD.unpack_dual(primal).tangent is None  # the primal is not dual
        assert fwAD.unpack_dual(x).tangent is None  # make_dual returns a new (view) tensor
        assert fwAD.unpack_dual(y).tangent is not None
    assert fwAD.unpack_dual(d).tangent is None
    assert fwAD.unpack_dual(y).tangent is None
    with fwAD.dual_level():
        assert fwAD.unpack_dual(y).tangent is None


def test_dual_level_as_decorator():
    @fwAD.dual_level()
    def f(x, t):
        return fwAD.unpack_dual(fwAD.make_dual(x, t).sin()).tangent

    x = jitgrad.randn(4, dtype=jitgrad.float64)
    t = jitgrad.randn(4, dtype=jitgrad.float64)
    np.testing.assert_allclose(f(x, t).numpy(), np.cos(x.numpy()) * t.numpy())
    assert fwAD._current_level == -1


def test_error_inside_level_exits_it():
    with pytest.raises(ValueError):
        with fwAD.dual_level():
            raise ValueError("boom")
    assert fwAD._current_level == -1
    assert jitgrad.ops.registry.fw_hook is None


def test_non_dual_ops_have_no_tangent():
    with fwAD.dual_level():
        a = jitgrad.randn(3) * 2
        assert fwAD.unpack_dual(a).tangent is None
        d = fwAD.make_dual(jitgrad.randn(3), jitgrad.randn(3))
        assert fwAD.unpack_dual(d > 0).tangent is None  # bool outputs carry no tangent
        assert fwAD.unpack_dual(d.argmax()).tangent is None
        assert fwAD.unpack_dual(d.detach()).tangent is None


def test_tangent_propagates_under_no_grad():
    x, t = jitgrad.randn(3, dtype=jitgrad.float64), jitgrad.randn(3, dtype=jitgrad.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        with jitgrad.no_grad():
            y = d * d
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(),
                                   2 * x.numpy() * t.numpy())


def test_every_differentiable_op_has_a_jvp_rule():
    import jitgrad.nn.functional  # noqa: F401 - registers its ops
    from jitgrad.ops.registry import OPS

    assert [name for name, op in OPS.items() if op.differentiable and op.jvp is None] == []


def test_missing_jvp_rule_raises(monkeypatch):
    from jitgrad.ops import elementwise

    monkeypatch.setattr(elementwise.EXP, "jvp", None)
    with fwAD.dual_level():
        d = fwAD.make_dual(jitgrad.randn(2), jitgrad.randn(2))
        with pytest.raises(NotImplementedError, match="Trying to use forward AD with exp that "
                                                      "does not support it"):
            d.exp()
        assert fwAD.unpack_dual(d.sin()).tangent is not None  # the level still works


def test_inplace_on_dual():
    x, t = jitgrad.randn(3, dtype=jitgrad.float64), jitgrad.randn(3, dtype=jitgrad.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        z = d.clone()
        z.mul_(3)
        np.testing.assert_allclose(fwAD.unpack_dual(z).tangent.numpy(), 3 * t.numpy())
        a = jitgrad.zeros(3, dtype=jitgrad.float64)
        a.add_(d * d)  # a plain tensor becomes dual through an in-place op
        np.testing.assert_allclose(fwAD.unpack_dual(a).tangent.numpy(),
                                   2 * x.numpy() * t.numpy())
        b = jitgrad.zeros(3, dtype=jitgrad.float64, requires_grad=True) * 1
        b.copy_(d)
        np.testing.assert_allclose(fwAD.unpack_dual(b).tangent.numpy(), t.numpy())
        c = jitgrad.zeros(3, dtype=jitgrad.float64)
        c.fill_(d[1])
        np.testing.assert_allclose(fwAD.unpack_dual(c).tangent.numpy(), np.full(3, t.numpy()[1]))
        c.fill_(2.0)  # a constant: the tangent becomes zero
        np.testing.assert_array_equal(fwAD.unpack_dual(c).tangent.numpy(), np.zeros(3))
        z.zero_()
        np.testing.assert_array_equal(fwAD.unpack_dual(z).tangent.numpy(), np.zeros(3))
    assert fwAD.unpack_dual(a).tangent is None


def test_make_dual_and_unpack_are_backward_differentiable():
    x = jitgrad.randn(3, dtype=jitgrad.float64, requires_grad=True)
    t = jitgrad.randn(3, dtype=jitgrad.float64, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        assert d.grad_fn.name() == "ViewBackward0"
        y = (d * d).sin()
        primal, tangent = fwAD.unpack_dual(y)
        # d/dx of the tangent 2 x t cos(x^2) and of the primal, by reverse mode
        (tangent.sum() + primal.sum()).backward()
    xv, tv = x.detach().numpy(), t.detach().numpy()
    expect_x = (2 * tv * np.cos(xv ** 2) - 4 * xv ** 2 * tv * np.sin(xv ** 2)
                + 2 * xv * np.cos(xv ** 2))
    np.testing.assert_allclose(x.grad.numpy(), expect_x, rtol=1e-10)
    np.testing.assert_allclose(t.grad.numpy(), 2 * xv * np.cos(xv ** 2), rtol=1e-10)


# ---------------------------------------------------------------- custom Function


class MulConst(Function):
    @staticmethod
    def forward(ctx, x, y, k):
        ctx.save_for_forward(x, y)
        ctx.k = k
        ctx.seen = fwAD.unpack_dual(x).tangent
        return x * y * k

    @staticmethod
    def backward(ctx, g):
        return g, g, None

    @staticmethod
    def jvp(ctx, tx, ty, tk):
        ctx.tangents = (tx, ty, tk)
        x, y = ctx.saved_tensors
        return (tx * y + x * ty) * ctx.k


class NoJvp(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_custom_function_jvp():
    x, y = jitgrad.randn(3, dtype=jitgrad.float64), jitgrad.randn(3, dtype=jitgrad.float64)
    tx = jitgrad.randn(3, dtype=jitgrad.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, tx)
        out = MulConst.apply(d, y, 2.0)
        np.testing.assert_allclose(fwAD.unpack_dual(out).tangent.numpy(),
                                   2.0 * tx.numpy() * y.numpy())
        ctx = out.grad_fn if out.grad_fn is not None else None
        with pytest.raises(NotImplementedError, match="You must implement the jvp function for "
                                                      "custom autograd.Function to use it with "
                                                      "forward mode AD."):
            NoJvp.apply(d)
    del ctx


def test_custom_function_jvp_arguments():
    seen = {}

    class Spy(MulConst):
        @staticmethod
        def jvp(ctx, tx, ty, tk):
            seen["t"] = (tx, ty, tk)
            seen["fwd"] = ctx.seen
            return MulConst.jvp(ctx, tx, ty, tk)

    x, y = jitgrad.randn(2, dtype=jitgrad.float64), jitgrad.randn(2, dtype=jitgrad.float64)
    with fwAD.dual_level():
        Spy.apply(fwAD.make_dual(x, jitgrad.ones(2, dtype=jitgrad.float64)), y, 3.0)
    tx, ty, tk = seen["t"]
    np.testing.assert_array_equal(tx.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(ty.numpy(), [0.0, 0.0])  # zeros for a non-dual tensor
    assert tk is None  # None for a non-tensor
    assert seen["fwd"] is None  # forward does not see tangents (as torch)


def test_custom_function_jvp_vs_torch():
    torch = pytest.importorskip("torch")
    import torch.autograd.forward_ad as tfw

    class TMulConst(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, k):
            ctx.save_for_forward(x, y)
            ctx.k = k
            return x * y * k

        @staticmethod
        def backward(ctx, g):
            return g, g, None

        @staticmethod
        def jvp(ctx, tx, ty, tk):
            x, y = ctx.saved_tensors
            return (tx * y + x * ty) * ctx.k

    x, y, tx, ty = (rng.standard_normal(4) for _ in range(4))
    with fwAD.dual_level():
        a = MulConst.apply(fwAD.make_dual(_t(x), _t(tx)), fwAD.make_dual(_t(y), _t(ty)), 1.5)
        ours = fwAD.unpack_dual(a.exp()).tangent.numpy()
    with tfw.dual_level():
        b = TMulConst.apply(tfw.make_dual(torch.tensor(x), torch.tensor(tx)),
                            tfw.make_dual(torch.tensor(y), torch.tensor(ty)), 1.5)
        theirs = tfw.unpack_dual(b.exp()).tangent.numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)


# ---------------------------------------------------------------- JVP rules, op by op


def _nn(L, name, *args, **kw):
    """An nn op through jitgrad's registry or torch.nn.functional."""
    if L is jitgrad:
        from jitgrad.ops.registry import OPS, apply

        return apply(OPS[name], *args, **kw)
    import torch.nn.functional as tf

    if name == "gelu":
        return tf.gelu(args[0], approximate=kw["approximate"])
    if name == "silu":
        return tf.silu(args[0])
    if name == "native_layer_norm":
        return tf.layer_norm(args[0], kw["normalized_shape"], args[1], args[2], kw["eps"])
    if name == "nll_loss":
        return tf.nll_loss(args[0], args[1], args[2], reduction=kw["reduction"],
                           ignore_index=kw["ignore_index"])
    return tf.mse_loss(args[0], args[1], reduction=kw["reduction"])


IDX = np.array([2, 0, 2])
IDX2 = np.array([[0, 2, 1, 1], [2, 2, 0, 1], [1, 0, 0, 0]])
TARGET = np.array([1, 0, 3])
POS = "pos"

# (id, f(L, *inputs), input shapes, domain) — every input is dual
CASES = [
    ("neg", lambda L, a: -a, [(3, 4)], None),
    ("exp", lambda L, a: a.exp(), [(3, 4)], None),
    ("log", lambda L, a: a.log(), [(3, 4)], POS),
    ("log1p", lambda L, a: a.log1p(), [(3, 4)], POS),
    ("expm1", lambda L, a: a.expm1(), [(3, 4)], None),
    ("sqrt", lambda L, a: a.sqrt(), [(3, 4)], POS),
    ("rsqrt", lambda L, a: a.rsqrt(), [(3, 4)], POS),
    ("reciprocal", lambda L, a: a.reciprocal(), [(3, 4)], POS),
    ("sin_cos_tan", lambda L, a: a.sin() * a.cos() + (a * 0.3).tan(), [(3, 4)], None),
    ("tanh_sigmoid", lambda L, a: a.tanh() + a.sigmoid(), [(3, 4)], None),
    ("erf", lambda L, a: L.erf(a), [(3, 4)], None),
    ("relu_abs", lambda L, a: a.relu() + a.abs(), [(3, 4)], None),
    ("sign_sgn", lambda L, a: a.sign() * a + a.sgn() * a, [(3, 4)], None),
    ("clone", lambda L, a: a.clone(), [(3, 4)], None),
    ("add_bcast", lambda L, a, b: a + b, [(3, 1), (3, 4)], None),
    ("sub", lambda L, a, b: a - b, [(3, 4), (4,)], None),
    ("mul", lambda L, a, b: a * b, [(3, 4), (3, 4)], None),
    ("div", lambda L, a, b: a / b, [(3, 4), (3, 4)], POS),
    ("pow", lambda L, a, b: a ** b, [(3, 4), (3, 4)], POS),
    ("maximum_minimum", lambda L, a, b: L.maximum(a, b) + L.minimum(a, b) * 2,
     [(3, 4), (3, 4)], None),
    ("scalars", lambda L, a: (a + 2) * 3 - 1 / a + (2 - a) / 4, [(3, 4)], POS),
    ("pow_scalar", lambda L, a: a ** 2.5 + 2 ** a + a ** 2, [(3, 4)], POS),
    ("where", lambda L, a, b: L.where(a > 0, a, b) + L.where(b > 0, b, 1.5), [(3, 4), (4,)],
     None),
    ("clamp", lambda L, a: a.clamp(-0.5, 0.5) + a.clamp(min=0.1), [(3, 4)], None),
    ("clamp_tensor", lambda L, a, b, c: a.clamp(b - 0.5, c + 0.5) + a.clamp(min=b), [(3, 4), (4,),
                                                                               (3, 1)], None),
    ("to", lambda L, a: (a.to(L.complex128) * (1 + 2j)).real * a, [(3, 4)], None),
    ("sum", lambda L, a: a.sum() + a.sum(1).sum(), [(3, 4)], None),
    ("sum_dims", lambda L, a: a.sum((0, 2), keepdim=True), [(2, 3, 4)], None),
    ("mean", lambda L, a: a.mean(1, keepdim=True) * a.mean(), [(3, 4)], None),
    ("prod", lambda L, a: a.prod() + a.prod(1).sum(), [(3, 4)], None),
    ("prod_zero", lambda L, a: (a * L.tensor([1.0, 0.0, 1.0, 1.0],
                                             dtype=L.float64)).prod(1), [(3, 4)], None),
    ("amax_amin", lambda L, a: a.amax(1) + a.amin(0).sum(), [(3, 4)], None),
    ("max_min_all", lambda L, a: a.max() * a.min(), [(3, 4)], None),
    ("max_min_dim", lambda L, a: a.max(1)[0] + a.min(0, keepdim=True)[0].sum(), [(3, 4)],
     None),
    ("var_std", lambda L, a: a.var(1) + a.std(0).sum() + a.var(correction=0), [(3, 4)], None),
    ("logsumexp", lambda L, a: a.logsumexp(1) + a.logsumexp((0, 1)), [(3, 4)], None),
    ("softmax", lambda L, a: a.softmax(1), [(3, 4)], None),
    ("log_softmax", lambda L, a: a.log_softmax(0), [(3, 4)], None),
    ("mm", lambda L, a, b: a.mm(b), [(3, 4), (4, 2)], None),
    ("bmm", lambda L, a, b: a.bmm(b), [(2, 3, 4), (2, 4, 2)], None),
    ("mv_dot_outer", lambda L, a, b: a.mv(b).sum() * b.dot(b) + L.outer(b, b), [(3, 4), (4,)],
     None),
    ("matmul_batched", lambda L, a, b: a @ b, [(2, 3, 4), (4, 5)], None),
    ("matmul_bcast", lambda L, a, b: a @ b, [(2, 1, 3, 4), (3, 4, 2)], None),
    ("addmm", lambda L, a, b, c: L.addmm(a, b, c), [(3, 2), (3, 4), (4, 2)], None),
    ("reshape_view", lambda L, a: a.reshape(4, 3).t() + a.view(2, 6).reshape(3, 4), [(3, 4)],
     None),
    ("permute_transpose", lambda L, a: a.permute(2, 0, 1).transpose(0, 1) * 2,
     [(2, 3, 4)], None),
    ("expand_squeeze", lambda L, a: a.unsqueeze(0).expand(2, 3, 1).squeeze(-1).squeeze()
     + a.squeeze(1), [(3, 1)], None),
    ("flatten", lambda L, a: a.flatten(1) * 1.5, [(2, 3, 4)], None),
    ("select_slice", lambda L, a: a[1] + a[:, 1:3].sum(1).sum() + a.narrow(1, 0, 2)[2, 1],
     [(3, 4)], None),
    ("cat_stack", lambda L, a, b: L.cat([a, b, a], 0).sum(0) + L.stack([b[0], a[1]], 1).sum(1),
     [(3, 4), (2, 4)], None),
    ("split_chunk", lambda L, a: a.split(2, 1)[1] * a.chunk(2, 1)[0]
     + a.split([1, 3], 1)[1][:, :2], [(3, 4)], None),
    ("index_adv", lambda L, a: a[L.tensor(IDX)] + a[L.tensor(IDX), 1:2], [(3, 4)], None),
    ("index_mask", lambda L, a: a[a > 0], [(3, 4)], None),
    ("index_select", lambda L, a: a.index_select(1, L.tensor(IDX)), [(3, 4)], None),
    ("gather_scatter", lambda L, a, b: a.gather(1, L.tensor(IDX2))
     + L.zeros(3, 4, dtype=L.float64).scatter_add(0, L.tensor(IDX2), b), [(3, 4), (3, 4)], None),
    ("index_add", lambda L, a, b: a.index_add(0, L.tensor(IDX), b), [(3, 4), (3, 4)], None),
    ("setitem", lambda L, a, b: _setitem(a, b, L), [(3, 4), (4,)], None),
    ("gelu", lambda L, a: _nn(L, "gelu", a, approximate="none")
     + _nn(L, "gelu", a, approximate="tanh"), [(3, 4)], None),
    ("silu", lambda L, a: _nn(L, "silu", a), [(3, 4)], None),
    ("layer_norm", lambda L, a, w, b: _nn(L, "native_layer_norm", a, w, b,
                                          normalized_shape=(4,), eps=1e-5),
     [(3, 4), (4,), (4,)], None),
    ("nll_loss", lambda L, a: _nn(L, "nll_loss", a.log_softmax(1), L.tensor(TARGET), None,
                                  reduction="mean", ignore_index=0)
     + _nn(L, "nll_loss", a, L.tensor(TARGET), None, reduction="none", ignore_index=-100).sum(),
     [(3, 4)], None),
    ("mse_loss", lambda L, a, b: _nn(L, "mse_loss", a, b, reduction="mean")
     + _nn(L, "mse_loss", a, b, reduction="none").sum(1).mean(), [(3, 4), (3, 4)], None),
]


def _setitem(a, b, L):
    c = a * 1
    c[1] = b
    c[L.tensor([0, 2]), 3] = b[:2]
    return c


def _inputs(shapes, domain, seed):
    r = np.random.default_rng(seed)
    xs = [r.standard_normal(s) for s in shapes]
    if domain == POS:
        xs = [np.abs(x) + 0.5 for x in xs]
    ts = [r.standard_normal(s) for s in shapes]
    return xs, ts


def _jvp_jitgrad(f, xs, ts):
    with fwAD.dual_level():
        duals = [fwAD.make_dual(_t(x), _t(t)) for x, t in zip(xs, ts)]
        out = f(jitgrad, *duals)
        primal, tangent = fwAD.unpack_dual(out)
        assert tangent is not None
        assert tangent.shape == primal.shape and tangent.dtype == primal.dtype
        return primal.numpy(), tangent.numpy()


@pytest.mark.parametrize("name,f,shapes,domain", CASES, ids=[c[0] for c in CASES])
def test_jvp_vs_finite_differences(name, f, shapes, domain):
    xs, ts = _inputs(shapes, domain, 7)
    value, tangent = _jvp_jitgrad(f, xs, ts)
    eps = 1e-6
    plus = f(jitgrad, *[_t(x + eps * t) for x, t in zip(xs, ts)]).numpy()
    minus = f(jitgrad, *[_t(x - eps * t) for x, t in zip(xs, ts)]).numpy()
    np.testing.assert_allclose(value, f(jitgrad, *[_t(x) for x in xs]).numpy())
    np.testing.assert_allclose(tangent, (plus - minus) / (2 * eps), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,f,shapes,domain", CASES, ids=[c[0] for c in CASES])
def test_jvp_vs_torch(name, f, shapes, domain):
    torch = pytest.importorskip("torch")
    import torch.autograd.forward_ad as tfw

    xs, ts = _inputs(shapes, domain, 11)
    _, ours = _jvp_jitgrad(f, xs, ts)
    with tfw.dual_level():
        duals = [tfw.make_dual(torch.tensor(x), torch.tensor(t)) for x, t in zip(xs, ts)]
        theirs = tfw.unpack_dual(f(torch, *duals)).tangent.numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_jvp_with_some_inputs_dual():
    # Only b is dual: a's contribution is zero (LINEAR, BILINEAR and ELEMENTWISE rules).
    a = jitgrad.randn(3, 4, dtype=jitgrad.float64)
    b, tb = jitgrad.randn(4, 2, dtype=jitgrad.float64), jitgrad.randn(4, 2, dtype=jitgrad.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(b, tb)
        mm = fwAD.unpack_dual(a.mm(d)).tangent
        cat = fwAD.unpack_dual(jitgrad.cat([a.t(), d], 1)).tangent
        mul = fwAD.unpack_dual(a[:, :2] * d[:3]).tangent
    np.testing.assert_allclose(mm.numpy(), a.numpy() @ tb.numpy())
    np.testing.assert_allclose(cat.numpy(), np.concatenate([np.zeros((4, 3)), tb.numpy()], 1))
    np.testing.assert_allclose(mul.numpy(), a.numpy()[:, :2] * tb.numpy()[:3])


def test_jvp_complex_vs_torch():
    torch = pytest.importorskip("torch")
    import torch.autograd.forward_ad as tfw

    r = np.random.default_rng(5)
    x = r.standard_normal((3, 4)) + 1j * r.standard_normal((3, 4))
    t = r.standard_normal((3, 4)) + 1j * r.standard_normal((3, 4))
    m = r.standard_normal((4, 2)) + 1j * r.standard_normal((4, 2))
    fs = [lambda L, a: a.exp() * a.conj() + a.sin() / (a + 3),
          lambda L, a: a.abs() + a.real * a.imag,
          lambda L, a: a.sgn(),
          lambda L, a: (a * a).sum(1) + a.mean() + a.prod(0).sum(),
          lambda L, a: a.mm(L.tensor(m)),
          lambda L, a: a.var(1) + a.abs().sqrt().sum()]
    for f in fs:
        with fwAD.dual_level():
            ours = fwAD.unpack_dual(f(jitgrad, fwAD.make_dual(_t(x), _t(t)))).tangent.numpy()
        with tfw.dual_level():
            theirs = tfw.unpack_dual(f(torch, tfw.make_dual(torch.tensor(x),
                                                            torch.tensor(t)))).tangent.numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_jvp_through_nn_functional_vs_torch():
    torch = pytest.importorskip("torch")
    import torch.autograd.forward_ad as tfw
    import torch.nn.functional as tnnf

    import jitgrad.nn.functional as jnnf

    r = np.random.default_rng(2)
    x, t = r.standard_normal((4, 5)), r.standard_normal((4, 5))
    w, tw = r.standard_normal((3, 5)), r.standard_normal((3, 5))
    target = np.array([0, 2, 1, 4])
    probs = np.abs(r.standard_normal((4, 5)))
    probs /= probs.sum(1, keepdims=True)
    fs = [lambda F, L, a, b: F.cross_entropy(a, L.tensor(target)),
          lambda F, L, a, b: F.cross_entropy(a, L.tensor(target), label_smoothing=0.1,
                                             reduction="sum"),
          lambda F, L, a, b: F.cross_entropy(a, L.tensor(probs)),
          lambda F, L, a, b: F.linear(a, b).tanh(),
          lambda F, L, a, b: F.layer_norm(a, (5,)),
          lambda F, L, a, b: F.gelu(a, approximate="tanh") + F.silu(a) + F.relu(a)]
    for f in fs:
        with fwAD.dual_level():
            out = f(jnnf, jitgrad, fwAD.make_dual(_t(x), _t(t)), fwAD.make_dual(_t(w), _t(tw)))
            ours = fwAD.unpack_dual(out).tangent.numpy()
        with tfw.dual_level():
            out = f(tnnf, torch, tfw.make_dual(torch.tensor(x), torch.tensor(t)),
                    tfw.make_dual(torch.tensor(w), torch.tensor(tw)))
            theirs = tfw.unpack_dual(out).tangent.numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_jit_function_with_dual_inputs_runs_eagerly():
    f = jitgrad.jit(lambda a, b: (a.exp() * b).sum(), backend="interpreter")
    x, t = jitgrad.randn(3, dtype=jitgrad.float64), jitgrad.randn(3, dtype=jitgrad.float64)
    y = jitgrad.randn(3, dtype=jitgrad.float64)
    f(x, y)  # compiled once without tangents
    with fwAD.dual_level():
        out = f(fwAD.make_dual(x, t), y)
        tangent = fwAD.unpack_dual(out).tangent
    assert tangent is not None  # never silently dropped by a compiled program
    np.testing.assert_allclose(tangent.numpy(), np.sum(np.exp(x.numpy()) * y.numpy() * t.numpy()))
    np.testing.assert_allclose(out.numpy(), f(x, y).numpy())
