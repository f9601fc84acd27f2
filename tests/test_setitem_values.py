"""``x[key] = value`` against torch, over 8 dtypes, 5 kinds of key and 19 kinds of value
(Python numbers of each type, complex, an int beyond int64, lists and tuples, tensors of other
dtypes and shapes, NumPy scalars): the same exception class and text (torch's type names read
as jitgrad's), or the same dtype and values."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import jitgrad
from torch_compare import jitgrad_type_names


DTYPES = ["int64", "int32", "uint8", "bool", "float16", "float32", "float64", "complex64"]
VALUES = ["2.7", "-3", "True", "1j", "float('nan')", "float('inf')", "300", "-1", "10**20",
          "L.tensor(2.7)", "L.tensor([1, 2])", "L.tensor(1j)", "L.tensor(True)",
          "L.tensor([[1.5, 2.5]])", "L.tensor(2.5, dtype=L.float64)", "[1, 2]", "(1.5,)",
          "np.float64(2.5)", "np.int32(7)", "L.ones(2, 3)", "L.ones(1, 1, 2)"]
KEYS = ["0", "slice(None)", "(L.tensor([0, 1]),)", "L.tensor([True, False])", "..."]


def _outcome(lib, dtype: str, key: str, value: str):
    x = lib.tensor([5, 6]).to(getattr(lib, dtype))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            v = eval(value, {"L": lib, "np": np})  # noqa: S307 - the cases above
            x[eval(key, {"L": lib})] = v  # noqa: S307
    except Exception as e:  # noqa: BLE001  (the class and text are what is compared)
        return type(e).__name__, jitgrad_type_names(" ".join(str(e).split()))
    return str(x.dtype).split(".")[-1], str(x.tolist())


@pytest.mark.parametrize("dtype", DTYPES)
def test_setitem_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    bad = []
    for key, value in itertools.product(KEYS, VALUES):
        t, j = _outcome(torch, dtype, key, value), _outcome(jitgrad, dtype, key, value)
        if t != j:
            bad.append(f"x[{key}] = {value}: torch {t}, jitgrad {j}")
    assert bad == []


def test_without_torch():
    x = jitgrad.tensor([5, 6])
    with pytest.raises(TypeError, match="can't assign a list to a jitgrad.LongTensor"):
        x[:] = [1, 2]
    with pytest.raises(RuntimeError, match="value cannot be converted to type int64_t"):
        x[jitgrad.tensor([True, False])] = jitgrad.tensor(1j)
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        x[0] = 2**63
    x[:] = jitgrad.ones(1, 2)  # (leading 1s dropped, as torch)
    assert x.tolist() == [1, 1]
