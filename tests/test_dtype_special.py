"""The special functions take the dtypes torch's CPU kernels take: float16/bfloat16 refused
where torch builds its kernel for float32/64 only (Bessel, Airy, the orthogonal polynomials,
erfcx, log_ndtr, ndtri, zeta), complex refused by lgamma, digamma, polygamma (trigamma for
n = 1), erfinv and entr, bool by mvlgamma; integers promote to the default float dtype."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad

DTYPES = ("float16", "bfloat16", "complex64", "int64", "bool", "float32")
UNARY = ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
         "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
         "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "airy_ai",
         "spherical_bessel_j0", "erfcx", "log_ndtr", "ndtri", "i0", "i0e", "i1", "i1e", "entr",
         "erfinv", "digamma", "psi", "gammaln", "expit", "ndtr", "sinc", "log1p", "expm1",
         "exp2")
def _special(name: str):
    return lambda L, x: getattr(L.special, name)(x)


CALLS = {**{f"special.{n}": _special(n) for n in UNARY},
         "lgamma": lambda L, x: x.lgamma(), "digamma_": lambda L, x: x.clone().digamma_(),
         "polygamma1": lambda L, x: L.polygamma(1, x + 1),
         "polygamma2": lambda L, x: L.polygamma(2, x + 1),
         "zeta": lambda L, x: L.special.zeta(x, 2.0),
         "chebyshev_t": lambda L, x: L.special.chebyshev_polynomial_t(x, 3),
         "hermite_h": lambda L, x: L.special.hermite_polynomial_h(x, 2),
         "mvlgamma": lambda L, x: L.mvlgamma(x + 2, 1)}


def _outcome(lib, call, dtype):
    x = lib.tensor(np.array([0.25, 0.5, 0.75])).to(getattr(lib, dtype)) if dtype != "bool" \
        else lib.tensor([True, False, True])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = CALLS[call](lib, x)
    except Exception as e:  # noqa: BLE001  (the class and text are compared)
        return f"{type(e).__name__}: {e}"
    values = out.to(lib.complex128 if out.dtype.is_complex else lib.float64).numpy()
    return str(out.dtype).split(".")[-1], np.round(values, 3).tolist()


@pytest.mark.parametrize("call", sorted(CALLS))
def test_special_dtypes_match_torch(call):
    torch = pytest.importorskip("torch")
    bad = []
    for dtype in DTYPES:
        t, j = _outcome(torch, call, dtype), _outcome(jitgrad, call, dtype)
        if isinstance(t, tuple) and isinstance(j, tuple):
            same = t[0] == j[0] and np.allclose(t[1], j[1], rtol=2e-2, atol=2e-2,
                                                equal_nan=True)
        else:
            same = t == j
        if not same:
            bad.append((dtype, t, j))
    assert bad == []
