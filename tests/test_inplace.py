"""In-place ops and version counters against torch: ``_version`` bumps, the "modified by an
inplace operation" errors, leaf errors, in-place through views, ``x[idx] = y``, and the values,
gradients and node names of zero_/fill_/copy_/add_/mul_."""


import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")

from torch_compare import arr, both, same_error  # noqa: E402



def leaf(lib, values=(1.0, 2.0, 3.0)):
    return lib.tensor(list(values), dtype=lib.float64, requires_grad=True)


def name(t):
    # torch's C++-only nodes name themselves torch::autograd::X; jitgrad's are plain X
    return t.grad_fn.name().replace("torch::autograd::", "")




def test_version_bumps_and_is_shared_by_views():
    def fn(lib):
        t = lib.zeros(2, 3)
        versions = [t._version]
        t.add_(1)
        versions.append(t._version)
        v = t[0]
        v.mul_(2)
        versions += [t._version, v._version]
        t.zero_()
        t.fill_(2.0)
        t.copy_(lib.ones(3))
        t[1] = 5.0
        versions += [t._version, v._version]
        d = t.detach()
        d.add_(1)
        versions.append(t._version)
        return versions, arr(t).tolist()

    t, j = both(fn)
    assert j == t


def test_out_of_place_ops_do_not_bump():
    t = jitgrad.ones(2)
    (t + 1).add_(1)
    t.clone().mul_(2)
    assert t._version == 0


def _version_error_cases():
    def saved_input(lib):
        x = leaf(lib)
        a = x * 1
        b = a * a
        a.add_(1)
        b.sum().backward()

    def saved_output(lib):
        x = leaf(lib)
        e = x.exp()
        e.add_(1)
        e.sum().backward()

    def saved_output_used_elsewhere(lib):
        x = leaf(lib)
        e = x.tanh()
        f = e * x
        e.mul_(2)
        f.sum().backward()

    def saved_leaf_modified_under_no_grad(lib):
        x = leaf(lib)
        y = (x * x).sum()
        with lib.no_grad():
            x.mul_(2)
        y.backward()

    def float32_saved_2d(lib):
        x = lib.ones(2, 2, requires_grad=True)
        a = x + 0
        b = a.sin()
        a.zero_()
        b.sum().backward()

    return [saved_input, saved_output, saved_output_used_elsewhere,
            saved_leaf_modified_under_no_grad, float32_saved_2d]


@pytest.mark.parametrize("case", _version_error_cases(), ids=lambda f: f.__name__)
def test_modified_by_an_inplace_operation_matches_torch(case):
    same_error(case)


def _leaf_error_cases():
    def leaf_add_(lib):
        leaf(lib).add_(1)

    def leaf_zero_(lib):
        leaf(lib).zero_()

    def leaf_setitem(lib):
        x = leaf(lib)
        x[0] = 1.0

    def view_of_leaf(lib):
        leaf(lib)[0:2].mul_(2)

    def inference_outside(lib):
        with lib.inference_mode():
            t = lib.ones(2)
        t.mul_(2)

    def int_result_into_float(lib):
        t = lib.ones(2, dtype=lib.int64)
        t.add_(1.5)

    def broadcast_into_smaller(lib):
        t = lib.ones(2)
        t.add_(lib.ones(3, 2))

    return [leaf_add_, leaf_zero_, leaf_setitem, view_of_leaf, inference_outside,
            int_result_into_float, broadcast_into_smaller]


@pytest.mark.parametrize("case", _leaf_error_cases(), ids=lambda f: f.__name__)
def test_in_place_errors_match_torch(case):
    same_error(case)


def test_leaf_in_place_under_no_grad_is_allowed():
    for lib in (torch, jitgrad):
        x = leaf(lib)
        with lib.no_grad():
            x.mul_(2)
            x[0] = 10.0
        assert x.is_leaf and x.requires_grad and x._version == 2
        assert arr(x).tolist() == [10.0, 4.0, 6.0]


def _view_cases():
    def slice_mul_(lib):
        x = leaf(lib)
        b = x * 1
        b[0:2].mul_(2)
        (b * b).sum().backward()
        return b, x.grad, name(b)

    def view_add_then_use_both(lib):
        x = leaf(lib)
        b = x * 1
        v = b.view(3)
        v.add_(1)
        (v * b).sum().backward()
        return b, x.grad, v._version, b._version

    def transposed_row_mul_by_a_tensor_requiring_grad(lib):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64, requires_grad=True)
        b = x * 2
        c = b.t()[1]
        c.mul_(x[0])
        v = b[0]
        (b.sin().sum() + v.sum()).backward()
        return b, x.grad

    def augmented_assignment_on_an_element(lib):
        x = leaf(lib)
        b = x * 1
        b[0] += 5
        (b * b).sum().backward()
        return b, x.grad, name(b), b._version

    def copy_into_a_slice_of_a_plain_tensor(lib):
        x = leaf(lib)
        y = lib.tensor([5.0, 6.0], dtype=lib.float64, requires_grad=True)
        b = lib.zeros(3, dtype=lib.float64)
        b[1:].copy_(y)
        (b * x).sum().backward()
        return b, x.grad, y.grad, name(b)

    def double_backward_through_copy_slices(lib):
        x = leaf(lib)
        b = x * 1
        b[1:].exp_()
        (g,) = lib.autograd.grad((b ** 2).sum(), x, create_graph=True)
        (g2,) = lib.autograd.grad(g.sum(), x)
        return g, g2

    def sibling_view_taken_before(lib):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64, requires_grad=True)
        b = x * 1
        v1 = b[0]
        v2 = b[:, 1]
        v2.mul_(3)
        (v1 * v1).sum().backward()
        return v1, x.grad

    def base_modified_after_view(lib):
        x = leaf(lib)
        b = x * 1
        v = b[0:2]
        b.mul_(2)
        (v * 1).sum().backward()
        return v, x.grad

    def augmented_assignments(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        b = x * 1
        alias = b
        b += 1
        b *= x
        b /= 2
        b -= 1
        b **= 2
        alias.sum().backward()
        return alias, b is alias, x.grad, alias._version

    return [slice_mul_, view_add_then_use_both, transposed_row_mul_by_a_tensor_requiring_grad,
            augmented_assignment_on_an_element, copy_into_a_slice_of_a_plain_tensor,
            double_backward_through_copy_slices, sibling_view_taken_before,
            base_modified_after_view, augmented_assignments]


def _no_grad_view_cases():
    def modified_in_grad_mode(lib):
        y = lib.ones(2, requires_grad=True)
        c = lib.zeros(3)
        with lib.no_grad():
            w = c[0:2]
        w.mul_(y)

    def base_modified_after(lib):
        x = leaf(lib)
        b = x * 1
        with lib.no_grad():
            v = b[0:2]
        b.mul_(2)
        return v.grad_fn

    return [modified_in_grad_mode, base_modified_after]


@pytest.mark.parametrize("case", _no_grad_view_cases(), ids=lambda f: f.__name__)
def test_views_made_in_no_grad_mode_errors_match_torch(case):
    same_error(case)


def test_view_modified_inside_no_grad_is_not_recorded():
    for lib in (torch, jitgrad):
        x = leaf(lib)
        b = x * 1
        with lib.no_grad():
            b[0:2].mul_(2)
        assert b.grad_fn.name() == "MulBackward0"
        assert arr(b).tolist() == [2.0, 4.0, 3.0]


@pytest.mark.parametrize("case", _view_cases(), ids=lambda f: f.__name__)
def test_in_place_through_views_rebases_like_torch(case):
    t, j = both(case)
    for a, b in zip(j, t):
        if hasattr(b, "detach"):
            np.testing.assert_allclose(arr(a), arr(b), rtol=1e-12)
        else:
            assert a == b


def test_in_place_on_views_without_autograd_writes_through():
    t = jitgrad.zeros(2, 3)
    t[1].add_(2)
    t.T[0].fill_(7.0)
    assert t.tolist() == [[7.0, 0.0, 0.0], [7.0, 2.0, 2.0]]


@pytest.mark.parametrize("op", ["add_", "mul_", "sub_", "div_"])
@pytest.mark.parametrize("other", ["scalar", "tensor", "broadcast"])
def test_arithmetic_in_place_values_gradients_and_names(op, other):
    def fn(lib):
        x = leaf(lib)
        y = lib.tensor([0.5, -2.0, 4.0], dtype=lib.float64, requires_grad=True)
        b = x + 0.5
        arg = {"scalar": 3.0, "tensor": y, "broadcast": y[1:2]}[other]
        r = getattr(b, op)(arg)
        assert r is b
        (b * b).sum().backward()
        return arr(b), x.grad, y.grad, b.grad_fn.name(), b._version

    (tb, tx, ty, tn, tv), (jb, jx, jy, jn, jv) = both(fn)
    np.testing.assert_allclose(jb, tb, rtol=1e-12)
    np.testing.assert_allclose(arr(jx), arr(tx), rtol=1e-12)
    if ty is None:
        assert jy is None
    else:
        np.testing.assert_allclose(arr(jy), arr(ty), rtol=1e-12)
    assert (jn, jv) == (tn, tv)


@pytest.mark.parametrize("case", ["zero_", "fill_scalar", "fill_tensor", "copy_same",
                                  "copy_broadcast_cast", "copy_into_plain"])
def test_overwriting_ops_values_gradients_and_names(case):
    def fn(lib):
        x = leaf(lib)
        v = lib.tensor(2.5, dtype=lib.float64, requires_grad=True)
        src = lib.tensor([[4.0, 5.0, 6.0]], dtype=lib.float32, requires_grad=True)
        b = x * 2
        if case == "zero_":
            b.zero_()
        elif case == "fill_scalar":
            b.fill_(7)
        elif case == "fill_tensor":
            b.fill_(v)
        elif case == "copy_same":
            b.copy_(x.detach() * 3)
        elif case == "copy_broadcast_cast":
            b = lib.zeros(2, 3, dtype=lib.float64)
            b.copy_(src)
        else:
            b = lib.zeros(3, dtype=lib.float64)
            b.copy_(x)
            b.mul_(x)
        (b * x).sum().backward()
        return arr(b), x.grad, v.grad, src.grad, name(b)

    t, j = both(fn)
    for a, b in zip(j[:4], t[:4]):
        if b is None:
            assert a is None
        else:
            np.testing.assert_allclose(arr(a) if not isinstance(a, np.ndarray) else a,
                                       arr(b) if not isinstance(b, np.ndarray) else b)
    assert j[4] == t[4]


def test_in_place_with_an_argument_requiring_grad_makes_the_tensor_require_grad():
    def fn(lib):
        x = leaf(lib)
        b = lib.ones(3, dtype=lib.float64)
        b.mul_(x)
        assert b.requires_grad and not b.is_leaf
        b.sum().backward()
        return x.grad, b.grad_fn.name()

    (tg, tn), (jg, jn) = both(fn)
    np.testing.assert_allclose(arr(jg), arr(tg))
    assert jn == tn


@pytest.mark.parametrize("index", ["int", "slice", "tensor", "bool_mask"])
def test_setitem_with_a_value_requiring_grad(index):
    def fn(lib):
        y = lib.tensor([5.0, 6.0], dtype=lib.float64, requires_grad=True)
        b = lib.zeros(4, dtype=lib.float64)
        if index == "int":
            b[1] = y[1]
        elif index == "slice":
            b[1:3] = y
        elif index == "tensor":
            b[lib.tensor([3, 0])] = y
        else:
            b[lib.tensor([True, False, False, True])] = y
        w = lib.tensor([1.0, 2.0, 3.0, 4.0], dtype=lib.float64)
        (b * w).sum().backward()
        return arr(b), y.grad, name(b), b._version

    (tb, tg, tn, tv), (jb, jg, jn, jv) = both(fn)
    np.testing.assert_allclose(jb, tb)
    np.testing.assert_allclose(arr(jg), arr(tg))
    assert (jn, jv) == (tn, tv)


def test_setitem_on_a_non_leaf_keeps_the_rest_of_its_gradient():
    def fn(lib):
        x = leaf(lib)
        y = lib.tensor([9.0], dtype=lib.float64, requires_grad=True)
        b = x * 2
        b[1:2] = y
        (b * b).sum().backward()
        return x.grad, y.grad, name(b)

    (tx, ty, tn), (jx, jy, jn) = both(fn)
    np.testing.assert_allclose(arr(jx), arr(tx))
    np.testing.assert_allclose(arr(jy), arr(ty))
    assert jn == tn


def test_forward_ad_tangents_through_in_place_on_views():
    def fn(lib):
        fw = __import__(lib.__name__ + ".autograd.forward_ad", fromlist=["dual_level"])
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)
        t = lib.tensor([1.0, -1.0, 0.5], dtype=lib.float64)
        with fw.dual_level():
            d = fw.make_dual(x, t)
            b = d * 2
            v = b[0:2]
            v.mul_(d[1:])
            c = lib.zeros(3, dtype=lib.float64)
            c[1:].copy_(d[:2])
            return [fw.unpack_dual(r).tangent.clone() for r in (b, v, c)]

    for a, b in zip(*both(fn)):
        np.testing.assert_allclose(arr(a), arr(b))
