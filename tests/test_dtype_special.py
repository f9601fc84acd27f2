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


# ------------------------------------------------- what a sweep of jitgrad.special still found

_POLES = [-0.5, -1.5, -2.3, -0.1, -7.25, -100.5, float("inf"), float("-inf"), float("nan"),
          0.0, -0.0, -1.0, -3.0, 0.5, 2.0, 30.0]


@pytest.mark.parametrize("n", [2, 3, 4, 5])
@pytest.mark.parametrize("dt", ["float64", "float32"])
def test_polygamma_below_zero_and_at_poles(n, dt):
    # (-1)^(n+1) n! zeta(n + 1, x): finite between the negative integers (was NaN), -inf at
    # the poles for even n (was +inf), NaN at +inf, as torch
    j = jitgrad.polygamma(n, jitgrad.tensor(_POLES, dtype=getattr(jitgrad, dt)))
    t = torch.polygamma(n, torch.tensor(_POLES, dtype=getattr(torch, dt)))
    assert str(j.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(j.double().numpy(), t.double().numpy(), rtol=1e-6)


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("dt", ["bool", "int64", "uint8"])
def test_polygamma_on_bool_and_integers_has_torchs_signs(dt, n):
    _same(lambda: jitgrad.polygamma(n, _x(jitgrad, "float64").lt(1).to(getattr(jitgrad, dt))),
          lambda: torch.polygamma(n, _x(torch, "float64").lt(1).to(getattr(torch, dt))))


@pytest.mark.parametrize("a,b", [([1, 2], 2.5), ([True, False], 2), ([1, 2], True),
                                 (2.5, [1, 2]), (True, [1.0, 2.0]), (2, [True]),
                                 ([0.5, 1.0], 3), (2.0, 3.0)])
def test_xlog1py_promotes_a_number_as_torch(a, b):
    def call(mod):
        x = mod.tensor(a) if isinstance(a, list) else a
        y = mod.tensor(b) if isinstance(b, list) else b
        return mod.special.xlog1py(x, y)
    _same(lambda: call(jitgrad), lambda: call(torch))


@pytest.mark.parametrize("form", ["igamma(2., t)", "igamma(t, 2)", "igammac(t, True)",
                                  "t.igamma(2.)", "t.igammac(2)", "t.igamma_(2.)",
                                  "t.igammac_(1)", "special.gammainc(t, 2.)",
                                  "special.gammaincc(2, t)", "special.gammainc(t, t)",
                                  "igammac(t, t)", "t.igamma_(t)"])
def test_igamma_takes_tensors_only(form):
    def call(mod):
        t = mod.tensor([1.0, 2.5])
        return eval(form, {"t": t, "igamma": mod.igamma, "igammac": mod.igammac,  # noqa: S307
                           "special": mod.special})
    _same(lambda: call(jitgrad), lambda: call(torch))


def test_igamma_under_jit_still_computes():
    t = jitgrad.tensor([1.0, 2.5])
    f = jitgrad.jit(lambda a, b: jitgrad.igamma(a, b) + b.igammac(a))
    tt = torch.tensor([1.0, 2.5])
    expect = (torch.igamma(tt, tt) + tt.igammac(tt)).numpy()
    np.testing.assert_allclose(f(t, t).numpy(), expect, rtol=1e-6)
    np.testing.assert_allclose(f(t, t).numpy(), expect, rtol=1e-6)


@pytest.mark.parametrize("decimals", [0, 1, -1])
@pytest.mark.parametrize("dt", ["int64", "uint8", "bool"])
def test_special_round_decimals_names_round_cpu(dt, decimals):
    _same(lambda: jitgrad.special.round(_x(jitgrad, "float64").to(getattr(jitgrad, dt)),
                                        decimals=decimals),
          lambda: torch.special.round(_x(torch, "float64").to(getattr(torch, dt)),
                                      decimals=decimals))


@pytest.mark.parametrize("form", ["mvlgamma(t, 2)", "special.multigammaln(t, 3)",
                                  "t.mvlgamma(2)", "mvlgamma(t, 0)", "special.multigammaln(t, 0)",
                                  "special.multigammaln(t.to(complex64), 0)",
                                  "special.multigammaln(t > 1, 0)", "t.clone().mvlgamma_(2)",
                                  "t.to(int64).mvlgamma_(2)", "t.to(int8).mvlgamma_(2)",
                                  "t.to(int64).mvlgamma_(0)", "(t > 1).mvlgamma_(0)",
                                  "mvlgamma(t.to(float16), 2)", "mvlgamma(t.to(int64), 2)"])
def test_mvlgamma_domain_and_inplace_texts(form):
    # torch 2.13 computes at or below (p - 1) / 2 (inf at a term's pole)
    def call(mod):
        names = {n: getattr(mod, n) for n in ("mvlgamma", "special", "complex64", "int64",
                                              "int8", "float16")}
        return eval(form, {"t": mod.tensor([0.0, 0.3, -1.5, 2.5]), **names})  # noqa: S307
    _same(lambda: call(jitgrad), lambda: call(torch))


@pytest.mark.parametrize("name", ["chebyshev_polynomial_t", "chebyshev_polynomial_w",
                                  "hermite_polynomial_h", "laguerre_polynomial_l",
                                  "legendre_polynomial_p", "shifted_chebyshev_polynomial_v"])
@pytest.mark.parametrize("dt", ["uint8", "int64", "float32"])
def test_polynomial_overflow_is_nan_in_float32_as_torch(name, dt):
    # the recurrence runs in float32: inf, then inf - inf = NaN (float64's value gave inf)
    vals = [-5, -1, 0, 1, 6, 25, 251, 255]
    _same(lambda: getattr(jitgrad.special, name)(jitgrad.tensor(vals).to(getattr(jitgrad, dt)),
                                                 jitgrad.tensor(vals).to(getattr(jitgrad, dt))),
          lambda: getattr(torch.special, name)(torch.tensor(vals).to(getattr(torch, dt)),
                                               torch.tensor(vals).to(getattr(torch, dt))))


@pytest.mark.parametrize("name", ["zeta", "gammainc", "gammaincc"])
def test_binary_special_cases_in_torchs_order(name):
    v = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, float("inf"), float("-inf"), float("nan"),
         251.0, -3.0]
    a, b = (np.array(v).repeat(len(v)), np.tile(np.array(v), len(v)))
    j = getattr(jitgrad.special, name)(jitgrad.tensor(a), jitgrad.tensor(b))
    t = getattr(torch.special, name)(torch.tensor(a), torch.tensor(b))
    np.testing.assert_allclose(j.numpy(), t.numpy(), rtol=1e-10)


_OUT_FORMS = ["special.entr(x, out=o)", "special.ndtr(x, out=o)", "special.round(x, out=o)",
              "special.round(x, decimals=1, out=o)", "special.xlog1py(x, x, out=o)",
              "special.xlog1py(2.0, x, out=o)", "special.multigammaln(x + 2, 2, out=o)",
              "special.polygamma(2, x, out=o)", "special.gammainc(x, x, out=o)"]


@pytest.mark.parametrize("out_dt", ["float32", "float64", "int64", "bool", "complex64"])
@pytest.mark.parametrize("in_dt", ["float32", "int64"])
@pytest.mark.parametrize("form", _OUT_FORMS)
def test_out_argument(form, in_dt, out_dt):
    def call(mod):
        x = mod.tensor([0.25, 0.5, 2.0]).to(getattr(mod, in_dt))
        o = mod.zeros(3, dtype=getattr(mod, out_dt))
        r = eval(form, {"x": x, "o": o, "special": mod.special})  # noqa: S307
        assert r is o
        return o
    _same(lambda: call(jitgrad), lambda: call(torch))


def test_ndtr_out_copies_with_autograd_as_torch():
    grads = []
    for mod in (jitgrad, torch):
        x = mod.tensor([2.5, -3.0], requires_grad=True)
        o = mod.zeros(2)
        mod.special.ndtr(x, out=o)
        assert type(o.grad_fn).__name__ == "CopyBackwards"
        o.sum().backward()
        grads.append(x.grad.numpy())
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            mod.special.ndtr(x, out=mod.zeros(2, requires_grad=True))
        with pytest.raises(RuntimeError, match="special_entr\\(\\): functions with out="):
            mod.special.entr(x, out=mod.zeros(2))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)
