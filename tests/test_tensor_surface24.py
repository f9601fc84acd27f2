"""torch's Tensor aliases, in-place forms, top-level in-place functions and dtype/info methods
(``jitgrad/ops/surface24.py``): values, dtypes, versions, gradients and error texts against
torch."""

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import gradcheck
from torch_compare import arr, same_error

RNG = np.random.default_rng(24)
X = RNG.standard_normal((3, 4))


def _both(fn, data=X, **kw):
    """``fn(lib, tensor)`` under torch and jitgrad: values and dtypes compared."""
    torch = pytest.importorskip("torch")
    out = {}
    for lib in (torch, jitgrad):
        out[lib] = fn(lib, lib.tensor(np.array(data), **kw))
    np.testing.assert_allclose(arr(out[jitgrad]), arr(out[torch]), rtol=1e-6, atol=1e-7)
    assert str(out[jitgrad].dtype).split(".")[1] == str(out[torch].dtype).split(".")[1]
    return out[jitgrad]


@pytest.mark.parametrize("name", ["arccos", "arcsin", "arctan", "arcsinh", "arctanh"])
def test_arc_aliases_match_torch(name):
    _both(lambda lib, t: getattr(lib, name)(t / 4))
    _both(lambda lib, t: getattr(t / 4, name)())
    _both(lambda lib, t: getattr((t / 4).clone(), name + "_")())
    _both(lambda lib, t: (t.abs() + 1.5).arccosh())


@pytest.mark.parametrize("name,arg", [("divide_", 2.0), ("multiply_", 3.0), ("subtract_", 1.0),
                                      ("true_divide_", 4.0), ("arctan2_", None)])
def test_binary_inplace_aliases_match_torch(name, arg):
    out = _both(lambda lib, t: getattr(t.clone(), name)(t.flip(0) if arg is None else arg))
    assert out._version == 1


def test_negative_and_absolute_inplace():
    _both(lambda lib, t: t.clone().negative_())
    _both(lambda lib, t: t.clone().absolute_())
    _both(lambda lib, t: lib.negative_(t.clone()))


@pytest.mark.parametrize("name", ["eq_", "ne_", "lt_", "le_", "gt_", "ge_", "greater_",
                                  "greater_equal_", "less_", "less_equal_", "not_equal_",
                                  "logical_and_", "logical_or_"])
def test_inplace_comparisons_keep_the_dtype(name):
    out = _both(lambda lib, t: getattr(t.clone(), name)(0.25 if "logical" not in name else t))
    assert out.dtype is jitgrad.float64 and out._version == 1
    _both(lambda lib, t: getattr(t.clone(), name)(t.flip(0)))


def test_inplace_comparison_gives_a_zero_gradient():
    torch = pytest.importorskip("torch")
    grads = []
    for lib in (torch, jitgrad):
        a = lib.tensor(X, requires_grad=True)
        b = a * 2
        b.gt_(0.0)
        assert b.grad_fn is not None
        (b * 3).sum().backward()
        grads.append(arr(a.grad))
    np.testing.assert_array_equal(grads[1], grads[0])
    assert not grads[1].any()


def test_logical_not_inplace():
    _both(lambda lib, t: (t > 0).to(lib.float64).logical_not_())


@pytest.mark.parametrize("name", ["bitwise_and_", "bitwise_or_", "bitwise_xor_",
                                  "bitwise_left_shift_", "bitwise_right_shift_"])
def test_bitwise_inplace_match_torch(name):
    data = np.array([1, 8, -7, 100, 0])
    _both(lambda lib, t: getattr(t.clone(), name)(lib.tensor([1, 2, 3, 0, 5])), data=data)
    _both(lambda lib, t: getattr(t.clone(), name)(2), data=data)


def test_shifts_functions_and_operators():
    data = np.array([1, 8, -7, 100, 0], dtype=np.int32)
    _both(lambda lib, t: lib.bitwise_left_shift(t, lib.tensor([1, 2, 3, 0, 5])), data=data)
    _both(lambda lib, t: lib.bitwise_right_shift(t, 1), data=data)
    _both(lambda lib, t: t << 3, data=data)
    _both(lambda lib, t: t >> 2, data=data)
    _both(lambda lib, t: 1 << lib.tensor([0, 1, 4]), data=data)

    def ishift(lib, t):
        t = t.clone()
        t <<= 2
        t >>= 1
        return t
    _both(ishift, data=data)
    same_error(lambda lib: lib.bitwise_left_shift(lib.ones(2), 1))


def test_sgn_and_polygamma_inplace():
    _both(lambda lib, t: t.clone().sgn_())
    _both(lambda lib, t: (t.abs() + 0.5).polygamma_(1))


def test_inplace_on_a_leaf_requiring_grad_is_an_error():
    same_error(lambda lib: lib.ones(3, requires_grad=True).eq_(1.0))
    same_error(lambda lib: lib.ones(2, 3, requires_grad=True).t_())


@pytest.mark.parametrize("fn", [
    lambda t: t.t_(), lambda t: t.transpose_(0, 1), lambda t: t.swapaxes_(1, 0),
    lambda t: t.swapdims_(0, 1), lambda t: t.unsqueeze_(1), lambda t: t.unsqueeze_(0).squeeze_(),
    lambda t: t.unsqueeze_(2).squeeze_(2)])
def test_inplace_view_ops_match_torch_with_gradients(fn):
    torch = pytest.importorskip("torch")
    res = {}
    for lib in (torch, jitgrad):
        a = lib.tensor(X, requires_grad=True)
        b = a * 2
        out = fn(b)
        assert out is b and b._version >= 1
        w = lib.tensor(np.cos(np.arange(b.numel())).reshape(tuple(b.shape)))
        (b * w).sum().backward()
        res[lib] = (arr(b), arr(a.grad), tuple(b.shape))
    for x, y in zip(res[jitgrad], res[torch]):
        np.testing.assert_allclose(x, y)


def test_inplace_view_op_on_a_view_then_write_through_it():
    torch = pytest.importorskip("torch")
    res = {}
    for lib in (torch, jitgrad):
        a = lib.tensor(X, requires_grad=True)
        c = a * 1
        v = c[0:2]
        v.t_()
        assert v._base is c and tuple(v.shape) == (4, 2)
        v.mul_(lib.arange(8.0, dtype=lib.float64).reshape(4, 2))
        c.sum().backward()
        res[lib] = (arr(c), arr(a.grad))
    for x, y in zip(res[jitgrad], res[torch]):
        np.testing.assert_allclose(x, y)


@pytest.mark.parametrize("name,args", [
    ("abs_", ()), ("sin_", ()), ("exp_", ()), ("relu_", ()), ("sigmoid_", ()), ("tanh_", ()),
    ("clamp_", (-0.5, 0.5)), ("clip_", (-0.5, 0.5)), ("zero_", ()), ("fill_", (2.5,)),
    ("round_", ()), ("square_", ()), ("neg_", ()), ("arccos_", ())])
def test_top_level_inplace_functions_are_the_methods(name, args):
    out = _both(lambda lib, t: getattr(lib, name)((t / 4).clone(), *args))
    assert out._version == 1


def test_fill_out_of_place():
    out = _both(lambda lib, t: lib.fill(t, 3.0))
    torch = pytest.importorskip("torch")
    for lib in (torch, jitgrad):
        a = lib.tensor(X, requires_grad=True)
        lib.fill(a * 1, 2.0).sum().backward()
        assert not arr(a.grad).any()
    assert out.shape == X.shape


def test_constants():
    torch = pytest.importorskip("torch")
    for name in ("e", "pi", "inf"):
        assert getattr(jitgrad, name) == getattr(torch, name)
    assert np.isnan(jitgrad.nan) and jitgrad.newaxis is None
    assert jitgrad.ones(3)[:, jitgrad.newaxis].shape == (3, 1)


# ---------------------------------------------------------------- dtype and info
@pytest.mark.parametrize("name", ["byte", "char", "short"])
def test_dtype_conversions(name):
    _both(lambda lib, t: getattr(t * 10, name)())


def test_info_methods_match_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, jitgrad):
        t = lib.tensor(X, dtype=lib.float32)
        assert t.nbytes == 48 and t.itemsize == 4 and t.ndimension() == 2
        assert t.get_device() == -1
        assert t[1:].storage_offset() == 4 and t[1:, 2:].storage_offset() == 6
        assert t.t()[1:].storage_offset() == 1 and t.storage_offset() == 0
        assert t.dim_order() == (0, 1) and t.t().dim_order() == (1, 0)
        assert t.is_same_size(t * 2) and not t.is_same_size(t.t())
        assert t.is_signed() and not t.byte().is_signed() and not (t > 0).is_signed()
        assert not t.is_conj() and not t.is_neg() and not t.is_inference()
        assert t.resolve_conj() is t and t.resolve_neg() is t
        assert lib.is_same_size(t, t) and lib.is_signed(t) and not lib.is_conj(t)
        assert lib.tensor([2.0]).is_nonzero() and not lib.is_nonzero(lib.tensor(0))
        assert t.data_ptr() == t.const_data_ptr() != 0
        assert t[1:].data_ptr() - t.data_ptr() == 16
    same_error(lambda lib: lib.tensor([1.0, 2.0]).is_nonzero())
    same_error(lambda lib: lib.tensor([]).is_nonzero())
    with jitgrad.inference_mode():
        assert jitgrad.ones(2).is_inference()


def test_new_and_new_empty_strided_and_empty_strided():
    torch = pytest.importorskip("torch")
    for lib in (torch, jitgrad):
        t = lib.tensor([1, 2])
        assert tuple(t.new(2, 3).shape) == (2, 3) and t.new(2, 3).dtype is lib.int64
        assert tuple(t.new().shape) == (0,)
        assert t.new([1.5]).dtype is lib.int64 and t.new([1.5]).tolist() == [1]
        assert tuple(t.new(lib.Size([4])).shape) == (4,)
        e = lib.empty_strided((2, 3), (1, 2))
        assert e.stride() == (1, 2) and e.dtype is lib.float32
        f = t.new_empty_strided((3, 2), (1, 3))
        assert f.stride() == (1, 3) and f.dtype is lib.int64
        s = lib.scalar_tensor(3)
        assert s.dtype is lib.float32 and s.ndim == 0 and s.item() == 3.0
        assert lib.scalar_tensor(2, dtype=lib.int64).dtype is lib.int64


def test_detach_functions():
    torch = pytest.importorskip("torch")
    for lib in (torch, jitgrad):
        a = lib.ones(3, requires_grad=True)
        assert not lib.detach(a).requires_grad
        b = a * 2
        assert b.detach_() is b and not b.requires_grad and b.grad_fn is None
    same_error(lambda lib: (lib.ones(3, requires_grad=True) * 1)[:2].detach_())


def test_gradcheck_through_inplace_aliases():
    def fn(x):
        y = x * 1
        y.arctan_()
        y.multiply_(x)
        y.t_()
        return y
    x = jitgrad.tensor(RNG.standard_normal((2, 3)), requires_grad=True)
    assert gradcheck(fn, (x,))


def test_layout_and_backend_flags_match_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, jitgrad):
        t = lib.ones(2, 3)
        assert t.layout is lib.strided and isinstance(lib.strided, lib.layout)
        assert repr(lib.strided) == f"{lib.__name__}.strided"
        for flag in ("is_meta", "is_mps", "is_xpu", "is_sparse", "is_sparse_csr",
                     "is_quantized", "is_nested", "is_mkldnn", "is_vulkan", "is_xla"):
            assert getattr(t, flag) is False
        assert not t.is_pinned() and not t.is_shared() and not lib.is_distributed(t)
        assert t.is_set_to(t) and not t.is_set_to(t.clone()) and not t.is_set_to(t.t())


def test_adjoint_view_as_real_complex_and_range():
    torch = pytest.importorskip("torch")
    z = RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))
    _both(lambda lib, t: lib.adjoint(t).resolve_conj(), data=z)
    _both(lambda lib, t: t.adjoint())
    _both(lambda lib, t: lib.view_as_real(t), data=z)
    _both(lambda lib, t: lib.view_as_complex(t.reshape(3, 2, 2)))
    same_error(lambda lib: lib.view_as_real(lib.ones(2)))
    same_error(lambda lib: lib.view_as_complex(lib.ones(3, 3)))
    same_error(lambda lib: lib.adjoint(lib.ones(3)))
    res = {}
    for lib in (torch, jitgrad):  # the rotary-embedding pattern: complex product, then real
        x = lib.tensor(X, requires_grad=True)
        c = lib.view_as_complex(x.reshape(3, 2, 2))
        out = lib.view_as_real(c * lib.tensor([1j, 2 - 1j])).flatten(1)
        (out * lib.tensor(np.cos(np.arange(12.0)).reshape(3, 4))).sum().backward()
        res[lib] = (arr(out), arr(x.grad))
    for a, b in zip(res[jitgrad], res[torch]):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    with pytest.warns(UserWarning, match="range is deprecated"):
        _both(lambda lib, t: lib.range(0, 1, 0.25) + t[0, 0] * 0)
    with pytest.warns(UserWarning):
        r = jitgrad.range(1, 4)
    assert r.dtype is jitgrad.float32 and r.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_as_subclass_resize_to_dense_typename():
    torch = pytest.importorskip("torch")
    for lib in (torch, jitgrad):
        class Sub(lib.Tensor):
            pass
        a = lib.ones(2, requires_grad=True)
        s = (a * 2).as_subclass(Sub)
        assert type(s) is Sub and s.data_ptr() == s.data_ptr() and s.grad_fn is not None
        (s * 3).sum().backward()
        assert a.grad.tolist() == [6.0, 6.0]
        x = lib.ones(2, 3)
        assert x.to_dense() is x
        with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
            y = x.resize(3, 2)
        assert tuple(y.shape) == (3, 2) and tuple(x.shape) == (2, 3)
        assert y.data_ptr() == x.data_ptr()
        with pytest.warns(UserWarning):
            assert tuple(x.resize_as(lib.ones(6)).shape) == (6,)
        assert lib.typename(x) == f"{lib.__name__}.FloatTensor"
        assert lib.typename(1) == "int" and not lib.is_storage(x)


@pytest.mark.parametrize("name", ["logical_and", "logical_or"])
def test_logical_and_or_on_the_values_truth(name):
    data = np.array([[0.0, 2.5, -1.0], [0.0, 0.0, 3.0]])
    _both(lambda lib, t: getattr(lib, name)(t[0], t[1]), data=data)
    _both(lambda lib, t: getattr(t[0], name)(t[1].to(lib.int64)), data=data)
    _both(lambda lib, t: getattr(lib, name)(t[0] > 0, t[1] > 0), data=data)
    _both(lambda lib, t: getattr(lib, name)(t[0], lib.tensor(0)), data=data)
    _both(lambda lib, t: getattr(lib, name)(t[0], t[1], out=lib.empty(3, dtype=lib.bool)),
          data=data)
    _both(lambda lib, t: getattr(t[0].clone(), name + "_")(t[1]), data=data)


def test_top_level_inplace_names_are_torchs():
    torch = pytest.importorskip("torch")
    ours = {n for n, v in vars(jitgrad).items()
            if callable(v) and n.endswith("_") and not n.startswith("_")}
    assert {n for n in ours if not hasattr(torch, n)} == set()
    x = jitgrad.zeros(2, 2)
    jitgrad.index_put_(x, (jitgrad.tensor([0, 1]), jitgrad.tensor([1, 0])), jitgrad.tensor(5.0))
    assert x.tolist() == [[0.0, 5.0], [5.0, 0.0]]
