"""The eager fast paths of ``x[i]``, ``x[key] = number`` (a dataset's ``__getitem__``) and
``cat``/``stack`` of plain tensors (a batch collated) agree with the general path and with
torch: values, dtypes, wrapping, layouts, version counters, views, autograd, and every error
(out of range, overflow, 0-d tensors, read-only expanded tensors, shape mismatches)."""

import itertools

import numpy as np
import pytest

import jitgrad

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64")
KEYS = (0, -1, 2, slice(None, 3), slice(1, None, 2), slice(-2, None), (1, 2), (slice(None), 0),
        (-1, slice(0, 2)), (slice(None, None, 3), slice(1, 3)))
VALUES = (-1, 0, 2, 7.9, -0.5, 255, 300, -129, 3e9, float("nan"), float("inf"), 1e39)


def _outcome(lib, dtype, key, value):
    x = lib.arange(12).reshape(3, 4).to(getattr(lib, dtype))
    view = x[1:]
    before = x._version
    try:
        x[key] = value
    except Exception as e:  # noqa: BLE001 - compared with torch's
        return type(e).__name__, str(e).replace("jitgrad", "torch")
    return x.double().tolist(), view.double().tolist(), x._version - before


def _same(a, b):
    if isinstance(a[0], str) or isinstance(b[0], str):
        return a == b
    return np.array_equal(np.array(a[0]), np.array(b[0]), equal_nan=True) and \
        np.array_equal(np.array(a[1]), np.array(b[1]), equal_nan=True) and a[2] == b[2]


@pytest.mark.parametrize("dtype", DTYPES)
def test_writing_numbers_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    for key, value in itertools.product(KEYS, VALUES):
        ours, theirs = _outcome(jitgrad, dtype, key, value), _outcome(torch, dtype, key, value)
        assert _same(ours, theirs), (dtype, key, value, ours, theirs)


def test_writing_numbers_equals_the_general_path():
    # the same writes through a tensor value (never the fast path) give the same memory
    for dtype in ("bool", "uint8", "int32", "int64", "float32", "float64"):
        for key, value in itertools.product(KEYS, (-1, 0, 2, 7.9, -0.5, 100)):
            if dtype == "uint8" and value in (-0.5,):
                continue  # (a negative float into uint8: the number's error, the tensor's cast)
            dt = getattr(jitgrad, dtype)
            fast = jitgrad.arange(12).reshape(3, 4).to(dt)
            general = fast.clone()
            fast[key] = value
            general[key] = jitgrad.tensor(value, dtype=jitgrad.float64).to(dt)
            assert jitgrad.equal(fast, general), (dtype, key, value)


def test_errors_of_the_fast_cases():
    x = jitgrad.zeros(3, 4, dtype=jitgrad.int32)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x[3] = 1
    with pytest.raises(IndexError, match="index -5 is out of bounds for dimension 1 with size 4"):
        x[0, -5] = 1
    with pytest.raises(RuntimeError, match="value cannot be converted to type int without "
                                           "overflow"):
        x[0] = 3e9
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        x[0] = 2 ** 70
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1] = 0
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        x[0, 0, 0] = 1
    e = jitgrad.zeros(1).expand(3)  # read-only memory: torch's overlap error
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        e[0] = 1.0
    with jitgrad.inference_mode():
        inf = jitgrad.zeros(3)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside "
                                           "InferenceMode"):
        inf[0] = 1.0
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        jitgrad.tensor(1.0)[0] = 2.0


def test_writes_that_autograd_sees_take_the_general_path():
    leaf = jitgrad.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        leaf[0] = 1.0
    y = leaf * 2
    y[1] = 5.0  # recorded: the written position has no gradient
    view = y[1:]
    view[1] = 4.0  # (through a view of a tensor that requires grad)
    y.sum().backward()
    assert leaf.grad.tolist() == [2.0, 0.0, 0.0]
    with jitgrad.no_grad():
        leaf[0] = 3.0
    assert leaf.tolist() == [3.0, 0.0, 0.0]


def test_reading_one_index():
    x = jitgrad.arange(6).reshape(2, 3)
    assert x[1].tolist() == [3, 4, 5] and x[-2].tolist() == [0, 1, 2]
    row = x[1]
    x.add_(10)
    assert row.tolist() == [13, 14, 15] and row.grad_fn is None and row._version == x._version
    with pytest.raises(IndexError, match="index 2 is out of bounds for dimension 0 with size 2"):
        x[2]
    with pytest.raises(IndexError, match="index -3 is out of bounds for dimension 0 with size 2"):
        x[-3]
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        jitgrad.tensor(1.0)[0]
    w = jitgrad.ones(2, 3, requires_grad=True)
    row = w[1]
    assert type(row.grad_fn).__name__ == "SelectBackward0"
    row.sum().backward()
    assert w.grad.tolist() == [[0.0] * 3, [1.0] * 3]
    f = jitgrad.jit(lambda t: t[1] * 2)
    assert f(jitgrad.arange(4.0)).item() == 2.0


def _joined(lib, how, make, dim):
    xs = make(lib)
    try:
        out = getattr(lib, how)(xs, dim=dim)
    except Exception as e:  # noqa: BLE001 - compared with torch's
        return type(e).__name__, str(e).replace("jitgrad", "torch")
    # (a stack of channels-last tensors is laid out otherwise than torch's, on either path:
    # its values and shape are compared)
    strides = None if how == "stack" and xs[0].dim() == 4 else out.stride()
    return (out.double().tolist(), str(out.dtype).split(".")[1], tuple(out.shape), strides,
            out.requires_grad, out.element_size())


def _rows(lib, n=3, shape=(2, 3), dtype="float32"):
    return [lib.arange(6 * k, 6 * k + 6).reshape(shape).to(getattr(lib, dtype))
            for k in range(n)]


JOINS = {
    "rows": lambda lib: _rows(lib),
    "int64": lambda lib: _rows(lib, dtype="int64"),
    "bool": lambda lib: _rows(lib, dtype="bool"),
    "bfloat16": lambda lib: _rows(lib, dtype="bfloat16"),
    "mixed dtypes": lambda lib: [_rows(lib)[0], _rows(lib, dtype="int64")[1]],
    "transposed": lambda lib: [x.t() for x in _rows(lib)],
    "channels_last": lambda lib: [lib.arange(24.0).reshape(1, 2, 3, 4).to(
        memory_format=lib.channels_last) for _ in range(2)],
    "mismatch": lambda lib: [lib.zeros(2, 3), lib.zeros(3, 2)],
    "scalars": lambda lib: [lib.tensor(1.0), lib.tensor(2.0)],
    "legacy empty": lambda lib: [lib.zeros(0), lib.ones(2, 3)],
    "one": lambda lib: [lib.ones(4)],
    "expanded": lambda lib: [lib.ones(1, 3).expand(2, 3), lib.zeros(2, 3)],
}


@pytest.mark.parametrize("how", ["cat", "stack"])
@pytest.mark.parametrize("name", sorted(JOINS))
def test_joining_plain_tensors_matches_torch(how, name):
    torch = pytest.importorskip("torch")
    for dim in (0, 1, -1, 3):
        ours = _joined(jitgrad, how, JOINS[name], dim)
        theirs = _joined(torch, how, JOINS[name], dim)
        assert ours == theirs, (how, name, dim, ours, theirs)


def test_joins_that_autograd_sees_take_the_general_path():
    w = jitgrad.ones(2, requires_grad=True)
    plain = jitgrad.zeros(2)
    for how in (jitgrad.cat, jitgrad.stack):
        out = how([plain, w * 2])
        assert out.grad_fn is not None
        out.sum().backward()
    assert w.grad.tolist() == [4.0, 4.0]
    with jitgrad.no_grad():
        row = w[0:1]  # a view made under no_grad of a base that requires grad
    joined = jitgrad.cat([row, plain])
    assert joined.requires_grad  # (torch's: its node leads nowhere)
    with jitgrad.no_grad():
        assert not jitgrad.cat([w, plain]).requires_grad
    with jitgrad.inference_mode():
        assert jitgrad.stack([plain, plain]).is_inference()
    out = jitgrad.cat([plain, plain])
    out[0] = 5.0  # a fresh tensor, not a view of an input
    assert plain.tolist() == [0.0, 0.0] and out._version == 1
    f = jitgrad.jit(lambda a, b: jitgrad.stack([a, b]).sum(0))
    assert f(jitgrad.ones(2), jitgrad.ones(2)).tolist() == [2.0, 2.0]
