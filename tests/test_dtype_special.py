"""The special functions take exactly the dtypes torch's CPU kernels take: torch's error class
and text for the refused kinds (functional, Tensor method, in-place, under ``jitgrad.jit``), and
the accepted dtypes (integers promote to float32, float16 where torch computes) still compute."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")

HALF = ("float16", "bfloat16")
INTS = ("int64", "int32", "int16", "int8", "uint8", "bool")


def _get(mod, name):
    for part in name.split("."):
        mod = getattr(mod, part)
    return mod


def _outcome(fn):
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - the class and text are compared
        return type(e), " ".join(str(e).split())
    return str(out.dtype).split(".")[-1], np.asarray(out.double().tolist())


def _same(mod_fn_j, mod_fn_t):
    j, t = _outcome(mod_fn_j), _outcome(mod_fn_t)
    if isinstance(t[1], str) or isinstance(j[1], str):
        assert j == t
    else:
        assert j[0] == t[0]
        np.testing.assert_allclose(j[1], t[1], rtol=2e-3, atol=1e-6)


UNARY_HALF = ["special.erfcx", "special.log_ndtr", "special.ndtri", "special.airy_ai",
              "special.bessel_j0", "special.bessel_j1", "special.bessel_y0", "special.bessel_y1",
              "special.modified_bessel_i0", "special.modified_bessel_i1",
              "special.modified_bessel_k0", "special.modified_bessel_k1",
              "special.scaled_modified_bessel_k0", "special.scaled_modified_bessel_k1",
              "special.spherical_bessel_j0"]
BINARY_HALF = ["special.zeta", "special.chebyshev_polynomial_t", "special.chebyshev_polynomial_u",
               "special.chebyshev_polynomial_v", "special.chebyshev_polynomial_w",
               "special.shifted_chebyshev_polynomial_t", "special.hermite_polynomial_h",
               "special.hermite_polynomial_he", "special.laguerre_polynomial_l",
               "special.legendre_polynomial_p"]
UNARY_COMPLEX = ["lgamma", "digamma", "erfinv", "special.entr", "special.gammaln",
                 "special.psi", "special.ndtr", "special.erfcx", "special.bessel_j0"]


def _x(mod, dt):
    return mod.tensor([0.25, 0.5, 2.0], dtype=getattr(mod, dt))


@pytest.mark.parametrize("dt", HALF + ("complex64",) + INTS)
@pytest.mark.parametrize("name", UNARY_HALF + UNARY_COMPLEX)
def test_unary(name, dt):
    _same(lambda: _get(jitgrad, name)(_x(jitgrad, dt)), lambda: _get(torch, name)(_x(torch, dt)))


@pytest.mark.parametrize("dt", HALF + ("complex64", "int64", "bool"))
@pytest.mark.parametrize("name", BINARY_HALF)
def test_binary(name, dt):
    _same(lambda: _get(jitgrad, name)(_x(jitgrad, dt), 2),
          lambda: _get(torch, name)(_x(torch, dt), 2))
    _same(lambda: _get(jitgrad, name)(_x(jitgrad, dt), _x(jitgrad, dt)),
          lambda: _get(torch, name)(_x(torch, dt), _x(torch, dt)))


@pytest.mark.parametrize("dt", HALF + ("complex64", "int64", "bool"))
@pytest.mark.parametrize("n", [0, 1, 2])
def test_polygamma_names_its_kernel(n, dt):
    x = [1.0, 2.5]
    _same(lambda: jitgrad.polygamma(n, jitgrad.tensor(x).to(getattr(jitgrad, dt))),
          lambda: torch.polygamma(n, torch.tensor(x).to(getattr(torch, dt))))
    _same(lambda: jitgrad.tensor(x).to(getattr(jitgrad, dt)).polygamma(n),
          lambda: torch.tensor(x).to(getattr(torch, dt)).polygamma(n))


@pytest.mark.parametrize("dt", HALF + ("complex64", "int64", "bool"))
@pytest.mark.parametrize("name", ["mvlgamma", "special.multigammaln"])
def test_mvlgamma(name, dt):
    x = [1.0, 2.5]
    _same(lambda: _get(jitgrad, name)(jitgrad.tensor(x).to(getattr(jitgrad, dt)), 1),
          lambda: _get(torch, name)(torch.tensor(x).to(getattr(torch, dt)), 1))


@pytest.mark.parametrize("dt", ["complex64", "float16"])
def test_xlog1py(dt):
    _same(lambda: jitgrad.special.xlog1py(_x(jitgrad, dt), _x(jitgrad, dt)),
          lambda: torch.special.xlog1py(_x(torch, dt), _x(torch, dt)))


@pytest.mark.parametrize("method", ["lgamma", "digamma", "erfinv", "lgamma_", "digamma_",
                                    "erfinv_", "mvlgamma", "mvlgamma_"])
@pytest.mark.parametrize("dt", ["complex64", "bool"])
def test_method_and_inplace_forms(method, dt):
    args = (1,) if method.startswith("mvlgamma") else ()
    _same(lambda: getattr(_x(jitgrad, dt), method)(*args),
          lambda: getattr(_x(torch, dt), method)(*args))


@pytest.mark.parametrize("name,dt", [("special.bessel_j0", "float16"),
                                     ("lgamma", "complex64"),
                                     ("special.erfcx", "bfloat16")])
def test_refused_under_jit(name, dt):
    fn = _get(jitgrad, name)
    with pytest.raises(NotImplementedError) as info:
        jitgrad.jit(lambda t: fn(t))(_x(jitgrad, dt))
    with pytest.raises(NotImplementedError) as expected:
        _get(torch, name)(_x(torch, dt))
    assert str(info.value) == str(expected.value)


def test_accepted_mixes_compute():
    j = jitgrad.special.bessel_j0(jitgrad.tensor([1, 2, 3]))
    t = torch.special.bessel_j0(torch.tensor([1, 2, 3]))
    assert str(j.dtype) == "jitgrad.float32" and str(t.dtype) == "torch.float32"
    np.testing.assert_allclose(j.tolist(), t.tolist(), rtol=1e-6)
    j = jitgrad.special.zeta(jitgrad.tensor([2.0, 3.0], dtype=jitgrad.float64), 2)
    t = torch.special.zeta(torch.tensor([2.0, 3.0], dtype=torch.float64), 2)
    np.testing.assert_allclose(j.tolist(), t.tolist(), rtol=1e-12)
    assert jitgrad.jit(lambda t: jitgrad.lgamma(t))(jitgrad.tensor([3.0])).tolist() == \
        pytest.approx([float(np.log(2.0))])


def test_special_round_refuses_integers_where_round_takes_them():
    x = jitgrad.tensor([1, 2])
    assert jitgrad.round(x).tolist() == [1, 2]
    with pytest.raises(NotImplementedError, match="\"round_vml_cpu\" not implemented for 'Long'"):
        jitgrad.special.round(x)
    assert jitgrad.special.round(jitgrad.tensor([1.26]), decimals=1).tolist() == \
        torch.special.round(torch.tensor([1.26]), decimals=1).tolist()
