"""Tensor attributes, NumPy interop, .grad rules, printing and type promotion against torch."""

import re
import warnings

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")


def jg_text(s):
    return re.sub(r"\btorch\b", "jitgrad", s)


def outcome(fn, lib):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result, err = fn(lib), None
        except Exception as e:  # noqa: BLE001 - compared with torch's below
            result, err = None, (type(e).__name__, str(e))
    msgs = [(w.category.__name__, re.sub(r" \(Triggered internally at .*\)$", "",
                                         str(w.message), flags=re.S)) for w in caught]
    return result, err, msgs


def same_error(fn):
    _, terr, _ = outcome(fn, torch)
    _, jerr, _ = outcome(fn, jitgrad)
    assert terr is not None, "torch did not raise"
    assert jerr == (terr[0], jg_text(terr[1]))


# ---------------------------------------------------------------- attributes


def test_metadata_matches_torch():
    def fn(lib):
        t = lib.ones(2, 3, 4, dtype=lib.float64)
        return (tuple(t.shape), repr(t.shape), t.ndim, t.dim(), tuple(t.size()), t.size(1),
                t.size(-1), t.numel(), repr(t.dtype), str(t.device), t.device.type,
                t.is_leaf, t.requires_grad, t.grad_fn, tuple(t.T.shape), t.element_size(),
                t.is_floating_point(), t.is_contiguous(), t.stride(), len(t))

    t, j = fn(torch), fn(jitgrad)
    assert j == tuple(jg_text(v) if isinstance(v, str) else v for v in t)


def test_item_tolist_and_conversions():
    for lib in (torch, jitgrad):
        t = lib.tensor([[1.5, 2.0], [3.0, 4.0]])
        assert t.tolist() == [[1.5, 2.0], [3.0, 4.0]]
        assert lib.tensor([[7]]).item() == 7 and isinstance(lib.tensor([[7]]).item(), int)
        assert lib.tensor(2.5).item() == 2.5
        assert float(lib.tensor([2.5])) == 2.5 and int(lib.tensor(3)) == 3
        assert bool(lib.tensor([1.0])) is True
    same_error(lambda lib: lib.ones(2, 3).item())
    same_error(lambda lib: bool(lib.ones(2)))
    same_error(lambda lib: lib.ones(2, 3).size(2))
    same_error(lambda lib: len(lib.tensor(1.0)))


def test_numpy_shares_memory_both_ways():
    t = jitgrad.zeros(3)
    a = t.numpy()
    a[0] = 5.0
    assert t.tolist() == [5.0, 0.0, 0.0]
    t.add_(1)
    assert a.tolist() == [6.0, 1.0, 1.0]
    src = np.arange(4.0)
    f = jitgrad.from_numpy(src)
    assert f.dtype == jitgrad.float64
    src[1] = 10.0
    assert f.tolist() == [0.0, 10.0, 2.0, 3.0]
    assert np.shares_memory(f.numpy(), src)
    assert np.asarray(f) is f.numpy() or np.shares_memory(np.asarray(f), src)
    np.testing.assert_array_equal(np.asarray(jitgrad.ones(2), dtype=np.float64), [1.0, 1.0])
    same_error(lambda lib: lib.ones(2, requires_grad=True).numpy())
    assert jitgrad.ones(2, requires_grad=True).numpy(force=True).tolist() == [1.0, 1.0]


def test_to_cpu_and_dtype_conversion():
    x = jitgrad.tensor([1.0, 2.0], requires_grad=True)
    assert x.cpu() is x and x.to("cpu") is x and x.to(jitgrad.float32) is x
    y = x.to(jitgrad.float64)
    assert y.dtype == jitgrad.float64 and y.grad_fn.name() == "ToCopyBackward0"
    y.sum().backward()
    assert x.grad.dtype == jitgrad.float32 and x.grad.tolist() == [1.0, 1.0]
    assert x.double().dtype == jitgrad.float64 and x.long().tolist() == [1, 2]
    assert jitgrad.ones(2).to(torch_like_device()).device.type == "cpu"


def torch_like_device():
    return jitgrad.device("cpu")


def test_detach_data_and_detach_():
    x = jitgrad.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    d = h.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    d.add_(1)  # shares data and version counter with h
    assert h.tolist() == [3.0, 5.0] and h._version == 1
    data = x.data
    assert not data.requires_grad and np.shares_memory(data.numpy(), x.detach().numpy())
    h2 = x * 3
    assert h2.detach_() is h2
    assert h2.is_leaf and not h2.requires_grad and h2.grad_fn is None


def test_variable_volatile_warns_like_torch():
    def fn(lib):
        v = lib.autograd.Variable(lib.ones(2), volatile=True)
        return v.requires_grad

    t, j = outcome(fn, torch), outcome(fn, jitgrad)
    assert t[0] is False and j[0] is False
    assert j[2] == [(c, jg_text(m)) for c, m in t[2]] and t[2]


def test_variable_of_a_non_leaf_is_detached():
    x = jitgrad.ones(2, requires_grad=True)
    v = jitgrad.autograd.Variable(x * 2)
    assert v.grad_fn is None and not v.requires_grad and v.tolist() == [2.0, 2.0]


def test_is_inference_and_variable_shim():
    for lib in (torch, jitgrad):
        v = lib.autograd.Variable(lib.ones(2), requires_grad=True)
        assert isinstance(v, lib.Tensor) and v.requires_grad and v.is_leaf
        assert not lib.autograd.Variable(lib.ones(2)).requires_grad
        assert not v.is_inference()
        with lib.inference_mode():
            assert lib.ones(1).is_inference()


# ---------------------------------------------------------------- .grad rules


def test_grad_of_a_non_leaf_warns_like_torch():
    def fn(lib):
        x = lib.ones(2, requires_grad=True)
        return (x * 2).grad

    t, j = outcome(fn, torch), outcome(fn, jitgrad)
    assert t[0] is None and j[0] is None
    assert len(t[2]) == 1 and j[2] == [(c, jg_text(m)) for c, m in t[2]]

    def retained(lib):
        x = lib.ones(2, requires_grad=True)
        h = x * 2
        h.retain_grad()
        return h.grad

    assert outcome(retained, jitgrad)[2] == outcome(retained, torch)[2] == []


def _grad_setter_cases():
    def wrong_size(lib):
        lib.ones(2, requires_grad=True).grad = lib.ones(3)

    def wrong_dtype(lib):
        lib.ones(2, requires_grad=True).grad = lib.ones(2, dtype=lib.float64)

    def int_grad(lib):
        lib.ones(2, dtype=lib.float64, requires_grad=True).grad = lib.ones(2, dtype=lib.int64)

    def not_a_tensor(lib):
        lib.ones(2, requires_grad=True).grad = [1.0, 2.0]

    return [wrong_size, wrong_dtype, int_grad, not_a_tensor]


@pytest.mark.parametrize("case", _grad_setter_cases(), ids=lambda f: f.__name__)
def test_grad_setter_validation(case):
    same_error(case)


def test_grad_setter_and_deleter():
    x = jitgrad.ones(2, requires_grad=True)
    g = jitgrad.tensor([3.0, 4.0])
    x.grad = g
    assert x.grad is g
    (x * 1).sum().backward()
    assert x.grad.tolist() == [4.0, 5.0]
    del x.grad
    assert x.grad is None
    x.grad = None
    assert x.grad is None


# ---------------------------------------------------------------- printing


REPR_CASES = [
    lambda lib: lib.tensor([[1.0, 3.0]]),
    lambda lib: lib.tensor([1.0, 3.0], requires_grad=True) * 2,
    lambda lib: lib.tensor([1.0, 3.0], requires_grad=True),
    lambda lib: lib.tensor([1.5, 3.25], dtype=lib.float64, requires_grad=True),
    lambda lib: lib.tensor([1.0, 3.0], dtype=lib.float64),
    lambda lib: lib.tensor([[1.1234567, 2.0], [3.0, 4.0]]),
    lambda lib: lib.tensor(3.5),
    lambda lib: lib.tensor([1e10, 1.0]),
    lambda lib: lib.tensor([1.0, 2000.0]),
    lambda lib: lib.tensor([0.001, 1.0]),
    lambda lib: lib.tensor([1e-5, 1.0]),
    lambda lib: lib.tensor([-1.0, 2.0]),
    lambda lib: lib.tensor([0.0, 1.5, float("nan")]),
    lambda lib: lib.tensor([float("nan"), float("inf"), 1.5]),
    lambda lib: lib.tensor([1, 2]),
    lambda lib: lib.tensor([1, 2], dtype=lib.int32),
    lambda lib: lib.tensor([True, False]),
    lambda lib: lib.zeros(0),
    lambda lib: lib.zeros(2, 0),
    lambda lib: lib.tensor([1 + 2j, 3.5]),
    lambda lib: lib.arange(2000.0),
    lambda lib: lib.ones(40, 40),
    lambda lib: lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True).sum(),
    lambda lib: lib.tensor([1.0, 2.0], requires_grad=True).exp(),
]


@pytest.mark.parametrize("i", range(len(REPR_CASES)))
def test_repr_like_torch(i):
    assert repr(REPR_CASES[i](jitgrad)) == jg_text(repr(REPR_CASES[i](torch)))


def test_seed_example_repr():
    x = jitgrad.tensor([[2.0, 1.0]], requires_grad=True)
    y = jitgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    z = jitgrad.mm(x, y)
    assert repr(z) == "tensor([[5., 8.]], grad_fn=<MmBackward0>)"
    z.backward(jitgrad.tensor([[1.0, 0.0]]))
    assert repr(x.grad) == "tensor([[1., 3.]])"
    assert repr(y.grad) == "tensor([[2., 0.],\n        [1., 0.]])"


# ---------------------------------------------------------------- type promotion

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
          "complex64", "complex128"]
SCALARS = [True, 2, 2.5, 1 + 1j]


def _result(lib, a, b, kind):
    x = lib.ones(3, dtype=getattr(lib, a))
    if kind == "scalar":
        y = b
    else:
        y = lib.ones(3 if kind == "tensor" else (), dtype=getattr(lib, b))
    return str((x + y).dtype).split(".")[-1], str((y * x).dtype).split(".")[-1]


@pytest.mark.parametrize("kind", ["tensor", "zero_dim"])
def test_type_promotion_between_tensors_matches_torch(kind):
    bad = []
    for a in DTYPES:
        for b in DTYPES:
            if "float16" in (a, b) and "complex" in a + b:
                continue  # torch promotes to complex32, which jitgrad does not have
            if _result(jitgrad, a, b, kind) != _result(torch, a, b, kind):
                bad.append((a, b))
    assert bad == []


def test_type_promotion_with_python_scalars_matches_torch():
    bad = []
    for a in DTYPES:
        for s in SCALARS:
            if a == "float16" and isinstance(s, complex):
                continue
            if _result(jitgrad, a, s, "scalar") != _result(torch, a, s, "scalar"):
                bad.append((a, s))
    assert bad == []


def test_true_division_and_default_dtype():
    for lib in (torch, jitgrad):
        assert str((lib.ones(2, dtype=lib.int64) / 2).dtype).endswith("float32")
        lib.set_default_dtype(lib.float64)
        try:
            assert str((lib.ones(2, dtype=lib.int64) / 2).dtype).endswith("float64")
            assert str(lib.tensor([1.5]).dtype).endswith("float64")
        finally:
            lib.set_default_dtype(lib.float32)


_NUMPY_SCALAR_OPS = ["np.float64(0.5) * t", "np.float32(0.5) + t", "np.int64(2) - t",
                     "np.float64(1) / t", "np.float64(2) ** t", "np.float64(2) > t",
                     "np.int32(2) == t", "np.float16(2) * t", "np.int8(3) * t",
                     "np.int64(7) // t", "np.int64(7) % t", "np.float64(0.5) * t[0]"]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_numpy_scalar_on_the_left_gives_a_tensor_as_torch(dtype):
    """``np.float64(gamma) * t`` is a tensor on the graph (NumPy defers to the Tensor's operator,
    through ``__array_priority__``), not an ndarray made from ``t.__array__``."""

    def run(lib):
        t = lib.tensor([3, 1], dtype=getattr(lib, dtype),
                       requires_grad=dtype.startswith("float"))
        out = []
        for expr in _NUMPY_SCALAR_OPS:
            r = eval(expr, {"np": np, "t": t})  # noqa: S307
            assert isinstance(r, lib.Tensor), expr
            out.append((expr, str(r.dtype).split(".")[1], r.tolist(),
                        r.requires_grad and r.grad_fn is not None))
        return out
    assert run(jitgrad) == run(torch)
    t = jitgrad.tensor([2.0, 3.0], requires_grad=True)
    (np.float64(0.5) * t + np.float32(2.0) * t).sum().backward()
    assert t.grad.tolist() == [2.5, 2.5]


_SEQUENCES = {
    "np64_and_int": lambda L: L.tensor([np.float64(1.0), 2]),
    "float_and_np64": lambda L: L.tensor([2.0, np.float64(1)]),
    "np32_np64": lambda L: L.tensor([np.float32(1), np.float64(2)]),
    "np16": lambda L: L.tensor([np.float16(1)]),
    "np16_float": lambda L: L.tensor([np.float16(1), 1.0]),
    "np_int16_int": lambda L: L.tensor([np.int16(1), 1]),
    "np_int8": lambda L: L.tensor([np.int8(1)]),
    "np_int64_float": lambda L: L.tensor([np.int64(1), 2.5]),
    "np_c128": lambda L: L.tensor([np.complex128(1)]),
    "nested_np64": lambda L: L.tensor([[np.float64(1)], [1.0]]),
    "t64_float": lambda L: L.tensor([L.tensor(1.0, dtype=L.float64), 1.0]),
    "t_int32": lambda L: L.tensor([L.tensor(1, dtype=L.int32)]),
    "t_int32_int": lambda L: L.tensor([L.tensor(1, dtype=L.int32), 1]),
    "t16_t64": lambda L: L.tensor([L.tensor(1.0, dtype=L.float16),
                                   L.tensor(1.0, dtype=L.float64)]),
    "tbool_int": lambda L: L.tensor([L.tensor(True), 1]),
    "one_element_tensors": lambda L: L.tensor([L.tensor([1.0]), L.tensor([[2.0]])]),
    "nested_one_element": lambda L: L.tensor([[L.tensor([1.0])]]),
    "np_arrays": lambda L: L.tensor([np.array([1.0], dtype=np.float32), np.array([2.0])]),
    "np_int32_array": lambda L: L.tensor([np.array([1], dtype=np.int32)]),
    "as_tensor_np64": lambda L: L.as_tensor([np.float64(1.0)]),
    "legacy_Tensor": lambda L: L.Tensor([[L.tensor(3)]]),
    "python_only": lambda L: L.tensor([[1, 2.5], [True, 0]]),
}


@pytest.mark.parametrize("name", sorted(_SEQUENCES))
def test_sequence_dtype_and_shape_inference_as_torch(name):
    """``torch.tensor(returns)`` over NumPy float64 rewards is float64; a tensor inside a list
    counts as one number: dtypes promote over the elements as torch's."""
    def run(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (torch: "a list of numpy.ndarrays is slow")
            t = _SEQUENCES[name](lib)
        return str(t.dtype).split(".")[1], tuple(t.shape), t.tolist()
    assert run(jitgrad) == run(torch)


def test_a_many_element_tensor_in_a_list_is_torch_error():
    for lib in (jitgrad, torch):
        with pytest.raises(ValueError, match="only one element tensors can be converted"):
            lib.tensor([lib.tensor([1.0, 2.0])])


def test_split_method_and_modules_take_torch_argument_names():
    for lib in (jitgrad, torch):
        t = lib.arange(5)
        assert [x.tolist() for x in t.split(split_size=2)] == [[0, 1], [2, 3], [4]]
        assert [x.tolist() for x in lib.split(t, split_size_or_sections=[2, 3])] == \
            [[0, 1], [2, 3, 4]]
        layer = lib.nn.Linear(1, 1)
        shared = lib.nn.Sequential(layer, layer)
        assert len(list(shared.modules())) == 2
        assert len(list(shared.modules(remove_duplicate=False))) == 3


_ARRAY_SEQUENCES = {
    "arrays": lambda L: [np.array([0, 5]), np.array([5, 1])],
    "array_then_tensor": lambda L: [np.array([0, 5]), L.tensor([1.5, 2])],
    "tensor_then_array": lambda L: [L.tensor([1, 2]), np.array([0, 5])],
    "many_element_tensors": lambda L: [L.tensor([1, 2]), L.tensor([3, 4])],
    "zero_d_arrays": lambda L: [np.array(1), np.array(2)],
    "zero_d_array_later": lambda L: [1, np.array(2.5)],
    "array_as_leaf": lambda L: [1, np.array([1, 2])],
    "ragged_arrays": lambda L: [np.array([1, 2]), np.array([1])],
    "empty_array": lambda L: [np.zeros((0, 3))],
    "float32_arrays": lambda L: [np.array([0, 5], dtype=np.float32), np.array([1, 2])],
    "bool_arrays": lambda L: [np.array([True, False])],
    "uint8_over": lambda L: [np.array([1, 2], dtype=np.uint8), np.array([300, -1])],
    "numpy_scalars": lambda L: [np.float32(1.5), np.bool_(True), np.int16(3)],
    "numpy_bool_then_int": lambda L: [np.bool_(True), 2],
    "float_tensor_leaf": lambda L: [L.tensor(1.5), 2],
    "complex_scalar": lambda L: [np.complex64(1 + 2j)],
    "big_float": lambda L: [np.float64(1e30), 1],
}


@pytest.mark.parametrize("name", sorted(_ARRAY_SEQUENCES))
@pytest.mark.parametrize("make", ["tensor", "as_tensor", "LongTensor", "BoolTensor",
                                  "FloatTensor", "uint8"])
def test_sequences_of_arrays_and_tensors_convert_as_torch(name, make):
    """torch's sequence conversion: the shape from the chain of first elements (a NumPy array
    is a sequence, a tensor is not), each element through the dtype's Python protocol. Before,
    jitgrad handed such lists to NumPy: [array, tensor] failed, a 0-d array's len() error, an
    integer dtype's refusal of np.float32 / np.bool_ and torch's overflow error did not come."""
    def build(lib):
        data = _ARRAY_SEQUENCES[name](lib)
        if make == "uint8":
            return lib.tensor(data, dtype=lib.uint8)
        return getattr(lib, make)(data)

    def run(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                t = build(lib)
            except Exception as e:  # noqa: BLE001 - compared with torch's below
                return type(e).__name__, jg_text(str(e))
            return str(t.dtype).split(".")[1], tuple(t.shape), t.tolist()

    assert run(jitgrad) == run(torch)


def test_a_list_of_numpy_arrays_warns_as_torch():
    """torch's TORCH_WARN_ONCE for a list holding NumPy arrays (every time under
    set_warn_always), naming the caller's line; none for arrays of arrays or NumPy scalars."""
    seen = {}
    for lib in (jitgrad, torch):
        lib.set_warn_always(True)
        try:
            for case in ([np.array([1, 2])], [[np.array([1.0])]], [np.int64(1)], np.ones(2)):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    lib.LongTensor(case)
                seen.setdefault(lib.__name__, []).append(
                    [(w.category, re.sub(r" \(Triggered internally at .*\)$", "",
                                         str(w.message)), w.filename) for w in caught])
        finally:
            lib.set_warn_always(False)
    assert seen["jitgrad"] == seen["torch"]
    assert len(seen["torch"][0]) == 1 and seen["torch"][0][0][2] == __file__
    assert seen["torch"][2] == seen["torch"][3] == []


def _set_slice(t, x):
    t[:] = x
    return t


_COMPLEX_CASTS = {
    "to_int": lambda L, x: x.to(L.int64), "to_bool": lambda L, x: x.to(L.bool),
    "float": lambda L, x: x.float(), "type": lambda L, x: x.type(L.float64),
    "half": lambda L, x: x.to(L.float16), "copy_": lambda L, x: L.zeros(2).copy_(x),
    "copy_bool": lambda L, x: L.zeros(2, dtype=L.bool).copy_(x),
    "copy_complex": lambda L, x: L.zeros(2, dtype=L.complex128).copy_(x),
    "setitem_slice": lambda L, x: _set_slice(L.zeros(2), x),
    "real": lambda L, x: x.real.clone(),
}


@pytest.mark.parametrize("name", sorted(_COMPLEX_CASTS))
def test_complex_to_real_casts_warn_as_torch(name):
    """A cast or copy dropping imaginary parts gives torch's UserWarning (once per process;
    every time under set_warn_always) at the caller's line. Before: NumPy's ComplexWarning from
    jitgrad's own line at every cast, and nothing from copy_."""
    seen = []
    for lib in (jitgrad, torch):
        lib.set_warn_always(True)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                r = _COMPLEX_CASTS[name](lib, lib.tensor([1j, 2 + 0j]))
        finally:
            lib.set_warn_always(False)
        seen.append((str(r.dtype).split(".")[1], r.tolist(),
                     [(w.category, str(w.message).split(" (Triggered")[0], w.filename)
                      for w in caught]))
    assert seen[0] == seen[1]
