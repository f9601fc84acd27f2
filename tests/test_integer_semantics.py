"""Where NumPy's integer and NaN rules differ from torch's, jitgrad follows torch: integer
powers with negative exponents, division by zero, Python ints outside the dtype, the sign of
NaN, exact integer floor/trunc division."""

import re

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch")

VALUES = {
    "int_pow_negative_tensor": lambda m: m.tensor([2, 3, 1, -1, -1, 0]) ** m.tensor(
        [2, -1, -3, -3, -2, 2]),
    "sign_of_nan_and_zeros": lambda m: m.tensor([float("nan"), 0.0, -0.0, -2.0, 3.0]).sign(),
    "int8_plus_out_of_range_int": lambda m: m.tensor([1, 2], dtype=m.int8) + 200,
    "uint8_minus": lambda m: m.tensor([1, 2], dtype=m.uint8) - 3,
    "div_floor_ints": lambda m: m.div(m.tensor([-7, 7, -6, 6, 5, 2**62]),
                                      m.tensor([2, -2, 4, -4, 5, 3]), rounding_mode="floor"),
    "div_trunc_ints": lambda m: m.div(m.tensor([-7, 7, -6, 6, 5, 2**62]),
                                      m.tensor([2, -2, 4, -4, 5, 3]), rounding_mode="trunc"),
    "div_trunc_scalar": lambda m: m.div(m.tensor([-5, 5]), 2, rounding_mode="trunc"),
    # the fmod-based floor quotient: 1.0 / 0.1 rounds up to 10.0, the exact quotient is 9.99...
    "div_floor_floats": lambda m: m.div(m.tensor([1.0, -7.5, 3.0, -0.0, 5.0]),
                                        m.tensor([0.1, 2.0, 0.0, 3.0, -0.1]),
                                        rounding_mode="floor"),
    "div_trunc_floats": lambda m: m.div(m.tensor([1.0, -7.5, 3.0, -2.0]),
                                        m.tensor([0.1, 2.0, 0.0, -0.3]), rounding_mode="trunc"),
    "div_floor_int_by_float": lambda m: m.div(m.tensor([7, -7]), 2.5, rounding_mode="floor"),
    "add_bools_int_alpha": lambda m: m.add(m.tensor([True, False]), m.tensor([True, False]),
                                           alpha=2),
    "add_int_tensor_times_float_alpha": lambda m: m.add(m.tensor([1.0, 0.1]), m.tensor([2, 3]),
                                                        alpha=2.5),
    "sub_number_times_alpha": lambda m: m.sub(m.tensor([1.0, 0.1]), 2, alpha=3),
}

ERRORS = {
    "int_pow_negative_scalar": lambda m: m.tensor([2]) ** -1,
    "floor_divide_by_zero": lambda m: m.tensor([1, 0]) // m.tensor([0, 1]),
    "remainder_by_zero": lambda m: m.tensor([3, -3]).remainder(m.tensor([0, 2])),
    "fmod_by_zero_scalar": lambda m: m.fmod(m.tensor([3]), 0),
    "div_floor_by_zero": lambda m: m.div(m.tensor([3]), m.tensor([0]), rounding_mode="floor"),
    "div_trunc_by_zero": lambda m: m.div(m.tensor([3]), 0, rounding_mode="trunc"),
    "div_unknown_rounding_mode": lambda m: m.div(m.tensor([3.0]), 2, rounding_mode="round"),
    "sub_two_bools": lambda m: m.tensor([True]) - m.tensor([False]),
    "sub_int_minus_bool": lambda m: m.tensor([1, 2]) - m.tensor([True, False]),
    "sub_bool_minus_int": lambda m: m.sub(m.tensor([True]), m.tensor([1])),
    "sub_float_minus_true": lambda m: m.tensor([1.5]) - True,
    "rsub_bool": lambda m: m.rsub(m.tensor([True]), 1),
    "add_float_alpha_to_ints": lambda m: m.add(m.tensor([1]), m.tensor([2]), alpha=2.5),
    "add_bool_alpha_to_floats": lambda m: m.add(m.tensor([1.0]), m.tensor([2.0]), alpha=True),
    "add_complex_alpha_to_floats": lambda m: m.sub(m.tensor([1.0]), m.tensor([2.0]), alpha=1j),
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_and_dtypes_as_torch(name):
    ours, theirs = VALUES[name](jg), VALUES[name](torch)
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_as_torch(name):
    with pytest.raises(Exception) as theirs:
        ERRORS[name](torch)
    with pytest.raises(type(theirs.value), match=re.escape(str(theirs.value).splitlines()[0])):
        ERRORS[name](jg)


def test_div_with_rounding_mode_has_a_zero_gradient_as_torch():
    x = np.array([1.0, -7.5, 3.0])
    for mode in ("floor", "trunc"):
        ours, theirs = jg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        q, tq = jg.div(ours, 0.7, rounding_mode=mode), torch.div(theirs, 0.7, rounding_mode=mode)
        assert q.grad_fn is not None
        (q * ours).sum().backward()
        (tq * theirs).sum().backward()
        np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


def _jitted_divisions(a, b):
    return (a // b, a % b, jg.fmod(a, b), jg.div(a, b, rounding_mode="trunc"),
            jg.div(a, b, rounding_mode="floor"), (a + 1) // 3 * b)


def test_jitted_integer_divisions_equal_eager_and_refuse_a_zero_divisor():
    f = jg.jit(_jitted_divisions)
    a, b = jg.tensor([5, -7, 9, -9, 2**40]), jg.tensor([2, 2, -3, -4, 7])
    for ours, eager in zip(f(a, b), _jitted_divisions(a, b), strict=True):
        np.testing.assert_array_equal(ours.numpy(), eager.numpy())
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        f(a, jg.tensor([2, 0, 1, 1, 1]))  # NumPy's (and a bare kernel's) value would be 0


def test_jitted_float_div_with_rounding_mode_equals_eager_with_gradients():
    def f(x, y):
        return (jg.div(x, y, rounding_mode="floor") * x + jg.div(x, y, rounding_mode="trunc")).sum()

    x, y = np.array([1.0, -7.5, 3.0, 0.25]), np.array([0.1, 2.0, 0.0, -0.1])
    xs = [jg.tensor(x, requires_grad=True) for _ in range(2)]
    outs = [jg.jit(f)(xs[0], jg.tensor(y)), f(xs[1], jg.tensor(y))]
    for out in outs:
        out.backward()
    np.testing.assert_array_equal(outs[0].detach().numpy(), outs[1].detach().numpy())
    np.testing.assert_array_equal(xs[0].grad.numpy(), xs[1].grad.numpy())


def test_jitted_sign_of_nan_is_zero_as_eager():
    x = jg.tensor([float("nan"), -1.0, 0.0, 2.0])
    np.testing.assert_array_equal(jg.jit(lambda t: (t * 1.0).sign() + 0.0)(x).numpy(),
                                  [0.0, -1.0, 0.0, 1.0])


def test_view_dtype_reads_the_same_bytes_as_torch():
    a = np.arange(6, dtype=np.float32).reshape(2, 3) + 0.5
    for dtype in ("int32", "float16", "uint8", "float32"):
        ours = jg.tensor(a).view(getattr(jg, dtype))
        theirs = torch.tensor(a).view(getattr(torch, dtype))
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    x = jg.zeros(2, requires_grad=True)
    bits = x.detach().view(jg.int32)
    bits[0] = 1065353216  # the bits of 1.0f: written through the view
    assert x.tolist() == [1.0, 0.0] and not x.view(jg.int32).requires_grad
    for bad in (lambda m: m.arange(6.0).reshape(2, 3).t().view(m.float16),
                lambda m: m.tensor(1.0).view(m.float16),
                lambda m: m.arange(3, dtype=m.float16).view(m.float32)):
        with pytest.raises(RuntimeError) as theirs:
            bad(torch)
        with pytest.raises(RuntimeError, match=re.escape(str(theirs.value))):
            bad(jg)
