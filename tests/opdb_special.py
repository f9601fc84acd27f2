"""opdb records of ``jitgrad/ops/special_fns.py`` (lgamma, digamma, polygamma, erfinv),
appended to ``opdb.OP_DB``. The references are mpmath's where it is installed (it comes with
torch); without it the records have no NumPy reference and the other comparisons still run."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
from opdb import OpInfo, _many, _s, _u, _unary

_LOOSE = {"rtol": {"float32": 1e-4, "float64": 1e-9}, "atol": {"float32": 1e-5,
                                                               "float64": 1e-10}}
_HAVE_MPMATH = importlib.util.find_spec("mpmath") is not None


def _elementwise(scalar):
    def ref(x):
        out = np.array([scalar(float(v)) for v in np.ravel(x)], dtype=np.float64)
        return out.reshape(np.shape(x)).astype(x.dtype)
    return ref


def _mp(name, *lead):
    if not _HAVE_MPMATH:
        return None
    import mpmath

    mpmath.mp.dps = 30
    fn = getattr(mpmath, name)
    return _elementwise(lambda v: float(fn(*lead, mpmath.mpf(v))))


def _in(lo, hi):
    return _unary(lambda rng, *s: _u(rng, *s, lo=lo, hi=hi))


def _polygamma_ref(n, x):
    return None if not _HAVE_MPMATH else _mp("polygamma", n)(x)


def special_records() -> list[OpInfo]:
    positive = _in(0.2, 4.0)
    return [
        OpInfo("lgamma", "lgamma", positive, _elementwise(math.lgamma), **_LOOSE),
        OpInfo("digamma", "digamma", positive, _mp("digamma"), **_LOOSE),
        OpInfo("polygamma", "polygamma",
               _many(_s(1, lambda rng: _u(rng, 3, 2, lo=0.2, hi=4.0), name="trigamma"),
                     _s(3, lambda rng: _u(rng, 4, lo=0.3, hi=3.0), name="n3")),
               _polygamma_ref if _HAVE_MPMATH else None, **_LOOSE),
        OpInfo("erfinv", "erfinv", _in(-0.9, 0.9), _mp("erfinv"), **_LOOSE),
        OpInfo("special.entr", "special.entr", _in(0.05, 3.0),
               lambda x: -x * np.log(x), **_LOOSE),
    ]
