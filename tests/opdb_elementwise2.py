"""opdb records of ``jitgrad/ops/elementwise2.py`` (asin ... erfc), appended to
``opdb.OP_DB``: swept against NumPy, torch, gradcheck and the jit by ``tests/test_ops.py``."""

from __future__ import annotations

import math

import numpy as np
from opdb import OpInfo, _u, _unary

_LOOSE = {"rtol": {"float32": 1e-4, "float64": 1e-9}, "atol": {"float32": 1e-5,
                                                               "float64": 1e-10}}


def _in(lo, hi):
    return _unary(lambda rng, *s: _u(rng, *s, lo=lo, hi=hi))


def _erfc_ref(x):
    return np.vectorize(math.erfc, otypes=[np.float64])(x).astype(x.dtype)


def elementwise2_records() -> list[OpInfo]:
    unit, wide = _in(-0.9, 0.9), _in(-2.0, 2.0)
    table = [("asin", unit, np.arcsin), ("acos", unit, np.arccos), ("atan", wide, np.arctan),
             ("sinh", wide, np.sinh), ("cosh", wide, np.cosh), ("asinh", wide, np.arcsinh),
             ("acosh", _in(1.1, 3.0), np.arccosh), ("atanh", unit, np.arctanh),
             ("log2", _in(0.1, 3.0), np.log2), ("log10", _in(0.1, 3.0), np.log10),
             ("exp2", wide, np.exp2), ("erfc", wide, _erfc_ref)]
    recs = [OpInfo(n, n, s, r, **_LOOSE) for n, s, r in table]
    recs += [OpInfo("deg2rad", "deg2rad", wide, np.deg2rad, **_LOOSE),
             OpInfo("rad2deg", "rad2deg", wide, np.rad2deg, **_LOOSE),
             OpInfo("frac", "frac", _in(-3.3, 3.3), lambda x: x - np.trunc(x), gradgrad=False)]
    return recs
