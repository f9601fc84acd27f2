"""``autograd.gradcheck`` / ``gradgradcheck``: torch's signatures, checks, errors and texts."""

from __future__ import annotations

import importlib.util
import inspect

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import Function, GradcheckError, gradcheck, gradgradcheck

HAS_FORWARD_AD = importlib.util.find_spec("jitgrad.autograd.forward_ad") is not None


def _randn(*shape, dtype=jitgrad.float64):
    return jitgrad.randn(tuple(shape), dtype=dtype, requires_grad=True)


def _wrong_square(lib):
    """x ** 2 whose backward claims 3x instead of 2x (a custom Function of ``lib``)."""
    class WrongSquare(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x
    return WrongSquare


class DetachedSquare(Function):
    """x ** 2 with a correct first derivative whose own derivative is wrong (x is detached)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x.detach()


# ---------------------------------------------------------------- API surface


def test_gradcheck_is_the_function_and_module_access_works():
    assert callable(jitgrad.autograd.gradcheck)
    assert jitgrad.autograd.gradcheck is gradcheck
    assert jitgrad.autograd.gradgradcheck is gradgradcheck
    assert issubclass(GradcheckError, RuntimeError)


@pytest.mark.parametrize("name", ["gradcheck", "gradgradcheck"])
def test_signature_matches_torch(name):
    torch = pytest.importorskip("torch")
    ours = inspect.signature(getattr(jitgrad.autograd, name)).parameters
    theirs = inspect.signature(getattr(torch.autograd, name)).parameters
    assert list(ours) == list(theirs)
    for p in theirs.values():
        assert ours[p.name].kind == p.kind
        assert ours[p.name].default == p.default


def test_needs_one_of_the_modes():
    x = _randn(2)
    with pytest.raises(AssertionError, match="at least one of check_forward_ad or "
                                             "check_backward_ad"):
        gradcheck(lambda a: a * 2, (x,), check_backward_ad=False)
    with pytest.raises(AssertionError, match="check_batched_grad=True requires "
                                             "check_backward_ad"):
        gradcheck(lambda a: a * 2, (x,), check_backward_ad=False, check_forward_ad=True,
                  check_batched_grad=True)


# ---------------------------------------------------------------- correct functions pass


@pytest.mark.parametrize("fast_mode", [False, True])
def test_true_on_correct_functions(fast_mode):
    x, y = _randn(3, 4), _randn(4)
    assert gradcheck(lambda a, b: (a * b).tanh(), (x, y), fast_mode=fast_mode)
    assert gradcheck(lambda a: a.softmax(-1), x, fast_mode=fast_mode)  # a bare tensor input
    assert gradcheck(lambda a, b: (a @ b, a.sum(0)), (x, y), fast_mode=fast_mode)  # 2 outputs
    assert gradcheck(lambda a, k: a.pow(k).sum(), (x, 3), fast_mode=fast_mode)  # non-tensor arg
    assert gradcheck(lambda a: a.max(1), (x,), fast_mode=fast_mode)  # int64 indices output
    assert gradcheck(lambda a: (a > 0), (x,), fast_mode=fast_mode)  # no differentiable output


def test_only_inputs_requiring_grad_are_checked():
    x = _randn(3)
    c = jitgrad.randn(3, dtype=jitgrad.float64)
    assert gradcheck(lambda a, b: a * b.exp(), (x, c))


def test_check_batched_grad():
    x, y = _randn(3, 4), _randn(4)
    assert gradcheck(lambda a, b: (a * b).sin(), (x, y), check_batched_grad=True)
    assert gradgradcheck(lambda a, b: (a * b).sin(), (x, y), check_batched_grad=True)


# ---------------------------------------------------------------- wrong gradients fail


def test_wrong_gradient_raises_jacobian_mismatch():
    x = jitgrad.tensor([1.0, 2.0], dtype=jitgrad.float64, requires_grad=True)
    with pytest.raises(GradcheckError) as info:
        gradcheck(_wrong_square(jitgrad).apply, (x,))
    msg = str(info.value)
    assert msg.startswith("Jacobian mismatch for output 0 with respect to input 0,\nnumerical:")
    assert "analytical:" in msg
    numerical = msg.split("numerical:")[1].split("analytical:")[0]
    analytical = msg.split("analytical:")[1]
    assert "2.0000" in numerical and "4.0000" in numerical  # d(x^2)/dx = 2x at 1 and 2
    assert "3." in analytical and "6." in analytical  # the wrong 3x


def test_wrong_gradient_returns_false_without_raising():
    x = _randn(3)
    assert gradcheck(_wrong_square(jitgrad).apply, (x,), raise_exception=False) is False
    assert gradcheck(_wrong_square(jitgrad).apply, (x,), fast_mode=True,
                     raise_exception=False) is False


def test_fast_mode_reports_the_slow_mode_jacobians():
    x = _randn(3)
    with pytest.raises(GradcheckError) as info:
        gradcheck(_wrong_square(jitgrad).apply, (x,), fast_mode=True)
    msg = str(info.value)
    assert msg.startswith("Jacobian mismatch for output 0 with respect to input 0,\nnumerical:")
    assert "computed \nin fast mode" in msg
    assert "The max per-element difference (slow mode) is:" in msg


@pytest.mark.parametrize("fast_mode", [False, True])
def test_outputs_are_numbered_among_the_differentiable_ones(fast_mode):
    x = _randn(3)
    with pytest.raises(GradcheckError) as info:
        gradcheck(lambda a: (a.detach() * 2, _wrong_square(jitgrad).apply(a)), (x,),
                  fast_mode=fast_mode)
    msg = str(info.value)
    assert msg.startswith("Jacobian mismatch for output 0 with respect to input 0,")
    slow = msg.split("Numerical:")[-1] if fast_mode else msg
    assert f"{2 * x[0].item():.4f}" in slow  # the Jacobian of the wrong output, not a.detach()


def test_message_matches_torch_for_the_same_function():
    torch = pytest.importorskip("torch")
    data = np.array([[1.0, -2.0], [0.5, 3.0]])
    with pytest.raises(GradcheckError) as ours:
        gradcheck(_wrong_square(jitgrad).apply,
                  (jitgrad.tensor(data, dtype=jitgrad.float64, requires_grad=True),))
    with pytest.raises(RuntimeError) as theirs:
        torch.autograd.gradcheck(_wrong_square(torch).apply,
                                 (torch.tensor(data, dtype=torch.float64, requires_grad=True),))
    assert str(ours.value).replace("jitgrad.", "torch.") == str(theirs.value)


def test_gradgradcheck_catches_a_wrong_second_derivative():
    x = _randn(3)
    assert gradcheck(DetachedSquare.apply, (x,))
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to "
                                             "input 0"):
        gradgradcheck(DetachedSquare.apply, (x,))
    assert gradgradcheck(DetachedSquare.apply, (x,), raise_exception=False) is False


def test_nondeterministic_backward():
    class Noisy(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * (2 + jitgrad.rand(tuple(g.shape), dtype=g.dtype) * 1e-9)

    x = _randn(3)
    with pytest.raises(GradcheckError, match="Backward is not reentrant"):
        gradcheck(Noisy.apply, (x,), check_undefined_grad=False)
    assert gradcheck(Noisy.apply, (x,), nondet_tol=1e-7, atol=1e-6, check_undefined_grad=False)


def test_backward_must_scale_with_grad_output():
    class Offset(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2 + (g.abs().sum() == 0).to(g.dtype)  # wrong only for zero g

    with pytest.raises(GradcheckError, match="backward not multiplied by grad_output"):
        gradcheck(Offset.apply, (_randn(3),))


def test_undefined_output_grads():
    class Undef(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return jitgrad.ones_like(x) if g is None else g * 2

    x = _randn(3)
    with pytest.warns(UserWarning, match="Backwards compatibility: New undefined gradient"):
        with pytest.raises(GradcheckError, match="Expected all input grads to be undefined or "
                                                 "zero when all output grads are undefined"):
            gradcheck(Undef.apply, (x,))
    assert gradcheck(Undef.apply, (x,), check_undefined_grad=False)


# ---------------------------------------------------------------- inputs


def test_warns_on_single_precision_input():
    x = _randn(3, dtype=jitgrad.float32)
    with pytest.warns(UserWarning, match=r"Input #0 requires gradient and is not a double "
                                         r"precision floating point or complex\."):
        assert gradcheck(lambda a: a * 2, (x,), eps=1e-3, atol=1e-3)


def test_numerical_jacobian_uses_the_input_dtype():
    # In float32 a 1e-6 step is below resolution: the numerical Jacobian is garbage and the
    # check fails, as torch's does.
    x = jitgrad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning):
        assert gradcheck(lambda a: a.exp(), (x,), raise_exception=False) is False


def test_no_input_requires_grad():
    with pytest.raises(ValueError, match="gradcheck expects at least one input tensor to "
                                         "require gradient, but none of them have "
                                         "requires_grad=True."):
        gradcheck(lambda a: a * 2, (jitgrad.zeros(3, dtype=jitgrad.float64),))


def test_stride_zero_input_is_rejected():
    x = jitgrad.zeros(3, dtype=jitgrad.float64).expand(2, 3).requires_grad_()
    with pytest.raises(RuntimeError, match="The 0th input has a dimension with stride 0"):
        gradcheck(lambda a: a * 2, (x,))


# ---------------------------------------------------------------- complex


@pytest.mark.parametrize("fast_mode", [False, True])
def test_complex_functions(fast_mode):
    z = jitgrad.tensor([1 + 2j, 0.5 - 1j, -0.3 + 0.2j], dtype=jitgrad.complex128,
                       requires_grad=True)
    w = jitgrad.tensor([0.7 - 1j, 2 + 0.1j, 1j], dtype=jitgrad.complex128, requires_grad=True)
    assert gradcheck(lambda a: a * a, (z,), fast_mode=fast_mode)  # C -> C
    assert gradcheck(lambda a: (a * a.conj()).real, (z,), fast_mode=fast_mode)  # C -> R
    assert gradcheck(lambda a, b: (a * b).exp(), (z, w), fast_mode=fast_mode)
    x = _randn(3)
    assert gradcheck(lambda a: a * (1 + 2j), (x,), fast_mode=fast_mode)  # R -> C


def test_complex_wrong_gradient_names_the_part():
    class WrongConj(Function):  # z * z whose backward forgets the conjugate
        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return z * z

        @staticmethod
        def backward(ctx, g):
            (z,) = ctx.saved_tensors
            return g * 2 * z

    z = jitgrad.tensor([1 + 2j, 0.5 - 1j], dtype=jitgrad.complex128, requires_grad=True)
    with pytest.raises(GradcheckError, match="^While considering the imaginary part of complex "
                                             "outputs only, Jacobian mismatch for output 0"):
        gradcheck(WrongConj.apply, (z,))


def test_complex_message_matches_torch():
    torch = pytest.importorskip("torch")
    data = np.array([1 + 2j, 0.5 - 1j])

    def wrong(lib):
        class WrongConj(lib.autograd.Function):
            @staticmethod
            def forward(ctx, z):
                ctx.save_for_backward(z)
                return z * z

            @staticmethod
            def backward(ctx, g):
                (z,) = ctx.saved_tensors
                return g * 2 * z
        return WrongConj.apply

    with pytest.raises(GradcheckError) as ours:
        gradcheck(wrong(jitgrad), (jitgrad.tensor(data, requires_grad=True),))
    with pytest.raises(RuntimeError) as theirs:
        torch.autograd.gradcheck(wrong(torch), (torch.tensor(data, requires_grad=True),))
    # (the first line only: jitgrad's repr of complex tensors is not torch's number format)
    assert str(ours.value).split("\n")[0] == str(theirs.value).split("\n")[0]


# ---------------------------------------------------------------- gradgradcheck


@pytest.mark.parametrize("fast_mode", [False, True])
def test_gradgradcheck_on_functions(fast_mode):
    x, y = _randn(3, 4), _randn(4)
    assert gradgradcheck(lambda a, b: (a * b).tanh(), (x, y), fast_mode=fast_mode)
    assert gradgradcheck(lambda a: a.log_softmax(1), (x,), fast_mode=fast_mode)
    assert gradgradcheck(lambda a, b: a @ b, (x, y), fast_mode=fast_mode)
    assert gradgradcheck(lambda a: (a.exp().sum(), a.var(0)), (x,), fast_mode=fast_mode)


def test_gradgradcheck_with_given_and_noncontiguous_grad_outputs():
    x = _randn(2, 3)
    go = jitgrad.randn(2, 3, dtype=jitgrad.float64, requires_grad=True)
    assert gradgradcheck(lambda a: a.sigmoid(), (x,), (go,))
    assert gradgradcheck(lambda a: a.sigmoid(), (x,), gen_non_contig_grad_outputs=True)


def test_gradgradcheck_checks_its_flags():
    x = _randn(2)
    with pytest.raises(AssertionError, match="check_undefined_grad=True requires "
                                             "check_rev_over_rev"):
        gradgradcheck(lambda a: a * a, (x,), check_rev_over_rev=False, check_fwd_over_rev=True)


# ---------------------------------------------------------------- forward AD


def test_check_batched_forward_grad_is_unavailable():
    with pytest.raises(RuntimeError, match="check_batched_forward_grad=True needs vmap"):
        gradcheck(lambda a: a * 2, (_randn(2),), check_forward_ad=True,
                  check_batched_forward_grad=True)


@pytest.mark.skipif(HAS_FORWARD_AD, reason="jitgrad.autograd.forward_ad exists")
def test_check_forward_ad_without_forward_ad_raises():
    with pytest.raises(RuntimeError, match="forward-mode AD"):
        gradcheck(lambda a: a * 2, (_randn(2),), check_forward_ad=True)


@pytest.mark.skipif(not HAS_FORWARD_AD, reason="jitgrad.autograd.forward_ad is not there yet")
@pytest.mark.parametrize("fast_mode", [False, True])
def test_check_forward_ad(fast_mode):
    x, y = _randn(3, 4), _randn(4)
    assert gradcheck(lambda a, b: (a * b).tanh().sum(1), (x, y), check_forward_ad=True,
                     fast_mode=fast_mode)
    assert gradcheck(lambda a, b: a @ b, (x, y), check_forward_ad=True,
                     check_backward_ad=False, fast_mode=fast_mode)


@pytest.mark.skipif(not HAS_FORWARD_AD, reason="jitgrad.autograd.forward_ad is not there yet")
def test_check_forward_ad_complex_and_fwd_over_rev():
    z = jitgrad.tensor([1 + 2j, 0.5 - 1j], dtype=jitgrad.complex128, requires_grad=True)
    assert gradcheck(lambda a: a * a, (z,), check_forward_ad=True)
    assert gradcheck(lambda a: (a * a.conj()).real, (z,), check_forward_ad=True, fast_mode=True)
    x, y = _randn(3, 4), _randn(4)
    assert gradgradcheck(lambda a, b: (a * b).tanh(), (x, y), check_fwd_over_rev=True)


@pytest.mark.parametrize("complex_input", [False, True], ids=["real", "complex"])
def test_fast_mode_projects_on_torchs_vectors(complex_input):
    """Fast mode's random vectors are torch's (float32 draws of a fresh default-seeded
    Generator, in the tensor's real dtype, of unit norm): a hook inside the checked function
    sees the same output vector in both libraries."""
    torch = pytest.importorskip("torch")
    seen = {}
    for lib in (jitgrad, torch):
        got = seen[lib.__name__] = []

        def f(z, lib=lib, got=got):
            out = (z * z).abs() if complex_input else z.sin() * 2
            out.register_hook(lambda g: got.append(g.detach().clone().numpy()))
            return out

        dtype = lib.complex128 if complex_input else lib.float64
        z = lib.tensor([0.1 + 0.2j, 0.3j, -0.5] if complex_input else [0.1, 0.2, 0.3],
                       dtype=dtype, requires_grad=True)
        assert lib.autograd.gradcheck(f, (z,), fast_mode=True, check_undefined_grad=False)
        assert lib.rand(1).numel() == 1  # (the user's generator is not the one drawn from)
    assert len(seen["jitgrad"]) == len(seen["torch"]) > 0
    np.testing.assert_array_equal(seen["jitgrad"][0], seen["torch"][0])
