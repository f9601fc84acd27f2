"""In-place methods over mixed dtypes against torch: 45 methods, 8 x 8 dtype pairs for the
binary ones. torch checks that the operands' promoted dtype can be written into ``self`` before
its kernel refuses a dtype (``int_tensor.atan2_(complex_tensor)`` is a cast error, not
"atan2_cpu not implemented"); comparisons compute a bool and refuse in their kernel first."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import jitgrad
from torch_compare import jitgrad_type_names, same_outcome


BINARY = ["a.add_(b)", "a.sub_(b)", "a.mul_(b)", "a.div_(b)", "a.div_(b, rounding_mode='floor')",
          "a.pow_(b)", "a.remainder_(b)", "a.fmod_(b)", "a.floor_divide_(b)", "a.atan2_(b)",
          "a.bitwise_and_(b)", "a.logical_and_(b)", "a.clamp_min_(b)", "a.copysign_(b)",
          "a.hypot_(b)", "a.lerp_(b, 0.5)", "a.xlogy_(b)", "a.addcmul_(b, b)", "a.eq_(b)",
          "a.lt_(b)", "a.float_power_(b)"]
UNARY = ["a.masked_fill_(a > 0, 2.5)", "a.fill_(2.5)", "a.zero_()", "a.sin_()", "a.exp_()",
         "a.sqrt_()", "a.abs_()", "a.neg_()", "a.round_()", "a.sigmoid_()", "a.relu_()",
         "a.nan_to_num_()", "a.reciprocal_()", "a.logit_()", "a.sign_()", "a.trunc_()",
         "a.frac_()", "a.square_()", "a.log_()", "a.erf_()", "a.tanh_()"]
DTYPES = ["int64", "int32", "uint8", "bool", "float16", "float32", "float64", "complex64"]


def _outcome(lib, expr: str, da: str, db: str):
    a = lib.tensor([0, 1, 3, -2] if da not in ("uint8", "bool") else [0, 1, 3, 2])
    b = lib.tensor([2, -1, 1, 5] if db not in ("uint8", "bool") else [2, 1, 1, 5])
    a, b = a.to(getattr(lib, da)), b.to(getattr(lib, db))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = eval(expr, {"a": a, "b": b})  # noqa: S307 - the cases above
    except Exception as e:  # noqa: BLE001  (the class and text are what is compared)
        return type(e).__name__, jitgrad_type_names(" ".join(str(e).split()))
    return str(r.dtype).split(".")[-1], np.asarray(r.tolist())



@pytest.mark.parametrize("expr", BINARY + UNARY)
def test_inplace_matches_torch(expr):
    torch = pytest.importorskip("torch")
    pairs = itertools.product(DTYPES, DTYPES) if expr in BINARY else \
        [(d, "int64") for d in DTYPES]
    bad = [f"{da}, {db}: torch {t}, jitgrad {j}" for da, db in pairs
           if not same_outcome(t := _outcome(torch, expr, da, db),
                               j := _outcome(jitgrad, expr, da, db), rtol=2e-3)]
    assert bad == []


def test_without_torch():
    a = jitgrad.tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type ComplexFloat can't be cast to the "
                       "desired output type Long"):
        a.atan2_(jitgrad.tensor([1j, 1j]))
    with pytest.raises(NotImplementedError, match='"lt_cpu" not implemented'):
        a.lt_(jitgrad.tensor([1j, 1j]))
    with pytest.raises(RuntimeError, match="In-place abs is not supported for complex"):
        jitgrad.tensor([1j]).abs_()
