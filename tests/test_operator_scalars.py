"""Python operators between a tensor and a Python number, against torch: 26 operators, 8 dtypes,
13 numbers (zero, signs, bools, floats, 1j, inf, nan, an int beyond int64, shifts past the
dtype's width). Both raise the same exception class and text, or both give the same dtype and
values (NaN where NaN, zeros' signs included)."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

import jitgrad
from torch_compare import same_outcome

OPERATORS = ["a + b", "a - b", "a * b", "a / b", "a // b", "a % b", "a ** b", "a & b", "a | b",
             "a ^ b", "a << b", "a >> b", "a == b", "a < b", "b + a", "b - a", "b / a", "b // a",
             "b % a", "b ** a", "b << a", "b & a", "divmod(a, b)", "abs(a)", "-a", "~a", "+a"]
DTYPES = ["int64", "int32", "uint8", "int8", "bool", "float32", "float64", "complex64"]
NUMBERS = ["0", "2", "-3", "True", "False", "2.5", "-0.0", "1j", "math.inf", "math.nan", "10**20",
           "64", "-1"]

# torch computes complex powers as exp(b log a) (0 ** -1 is inf+nanj, 1j ** 1 is -4e-8+1j),
# and complex + real infinity as a complex product with 1 + 0j (inf + nanj): jitgrad keeps
# NumPy's values there
_COMPLEX_POW = "torch's complex pow is exp(b log a): its values at 0, inf and exact powers differ"
_COMPLEX_INF = "torch adds a real inf/nan as a complex product (inf + nanj); jitgrad gives inf + 0j"


def _known(expr: str, dtype: str, number: str) -> str | None:
    if "**" in expr and (dtype == "complex64" or number == "1j"):
        return _COMPLEX_POW
    if expr in ("a + b", "a - b", "b + a") and dtype == "complex64" and \
            number in ("math.inf", "math.nan"):
        return _COMPLEX_INF
    return None


def _outcome(lib, expr: str, dtype: str, number: str):
    values = [0, 1, 3, -2] if dtype not in ("uint8", "bool") else [0, 1, 3, 2]
    a = lib.tensor(values).to(getattr(lib, dtype))
    b = eval(number, {"math": math})  # noqa: S307 - the numbers above
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = eval(expr, {"a": a, "b": b, "divmod": divmod, "abs": abs})  # noqa: S307
    except Exception as e:  # noqa: BLE001  (the class and text are what is compared)
        return type(e).__name__, str(e).split("\n")[0]
    r = r[0] if isinstance(r, tuple) else r
    return str(r.dtype).split(".")[-1], np.asarray(r.tolist())



@pytest.mark.parametrize("expr", OPERATORS)
def test_operators_with_numbers_match_torch(expr):
    torch = pytest.importorskip("torch")
    bad = []
    for dtype, number in itertools.product(DTYPES, NUMBERS if "b" in expr else ["0"]):
        t = _outcome(torch, expr, dtype, number)
        j = _outcome(jitgrad, expr, dtype, number)
        if not same_outcome(t, j, rtol=1e-6, atol=0, signed_zeros=True) and \
                _known(expr, dtype, number) is None:
            bad.append(f"{dtype} b={number}: torch {t}, jitgrad {j}")
    assert bad == []


def test_without_torch():
    a = jitgrad.tensor([1, 2, 3])
    assert (2.5 // a).tolist() == [2.0, 1.0, 0.0] and (2.5 // a).dtype is jitgrad.float32
    assert (2.5 % a).tolist() == [0.5, 0.5, 2.5]
    assert (a << 64).tolist() == [0, 0, 0] and (-a >> 70).tolist() == [-1, -1, -1]
    assert (+a) is a
    with pytest.raises(OverflowError, match="int too big to convert"):
        jitgrad.ones(2) + 10**20
    assert np.signbit((jitgrad.tensor([-2.0]) % 2).item())  # (fmod's zero, as torch)
