"""The vectorizable math helpers for Numba kernels (jitgrad/backends/numba_math.py).

Accuracy is measured as the max ulp distance from NumPy's float64 result rounded to the
dtype, over a strided sweep of every float32 bit pattern and a wide float64 sample; special
values are compared exactly; vectorization is checked on the generated assembly.
"""

from __future__ import annotations

import math
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from jitgrad.backends import numba_math as nm  # noqa: E402
from jitgrad.backends.asm_stats import loop_asm_stats  # noqa: E402

KERNEL_FLAGS = set(nm.KERNEL_FASTMATH)

# ----------------------------------------------------------------------------- references


def _erf64(x: np.ndarray) -> np.ndarray:
    try:
        from scipy import special
    except ImportError:
        return np.vectorize(math.erf, otypes=[np.float64])(x)
    return special.erf(x)


def _erfc64(x: np.ndarray) -> np.ndarray:
    try:
        from scipy import special
    except ImportError:
        return np.vectorize(math.erfc, otypes=[np.float64])(x)
    return special.erfc(x)


def _sigmoid64(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _gelu_tanh64(x: np.ndarray) -> np.ndarray:
    u = math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)
    return x * _sigmoid64(2 * u)


def _gelu_none64(x: np.ndarray) -> np.ndarray:
    # 0.5 * x * (1 + erf(x / sqrt2)) without the cancellation for negative x
    return 0.5 * x * _erfc64(-x / math.sqrt(2))


def _gelu_tanh_ld(x: np.ndarray) -> np.ndarray:
    # in long double with exact constants: an error in 2u is multiplied by |2u| in the result
    ld = np.longdouble
    x = x.astype(ld)
    k = np.sqrt(ld(2) / ld("3.14159265358979323846264338327950288"))
    v = 2 * k * (x + ld("0.044715") * x ** 3)
    e = np.exp(-np.abs(v))
    return x * np.where(v >= 0, 1 / (1 + e), e / (1 + e))


def _gelu_none_mp(x: np.ndarray) -> np.ndarray:
    # float64's own erfc(-x/sqrt2) carries the rounding of x/sqrt2, magnified by 2z^2
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(40):
        return np.array([float(mpmath.mpf(v) / 2 * mpmath.erfc(-mpmath.mpf(v) / mpmath.sqrt(2)))
                         if 0 < abs(v) < 40 else 0.5 * v * (1 + math.erf(v))  # +-0, +-inf
                         for v in x.tolist()])


REFERENCES = {
    "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "tanh": np.tanh,
    "sigmoid": _sigmoid64, "erf": _erf64, "gelu_tanh": _gelu_tanh64, "gelu_none": _gelu_none64,
}
# where float64 itself is not precise enough to judge a float64 result
REFERENCES_FLOAT64 = {"gelu_tanh": _gelu_tanh_ld, "gelu_none": _gelu_none_mp}

# Max ulp error measured on x86-64 with FMA (see the module docstring); the tests hold the
# helpers to it.
MAX_ULP = {
    "float32": {"exp": 1, "expm1": 2, "log": 1, "log1p": 1, "tanh": 2, "sigmoid": 2, "erf": 2,
                "gelu_tanh": 4, "gelu_none": 5},
    "float64": {"exp": 1, "expm1": 2, "log": 1, "log1p": 1, "tanh": 3, "sigmoid": 2, "erf": 3,
                "gelu_tanh": 4, "gelu_none": 5},
}

# gelu_none is 0 below this (1 + erf(x/sqrt2) rounds to 0 there in eager mode too)
GELU_NONE_CUTOFF = {"float32": -4.0 * math.sqrt(2), "float64": -6.0 * math.sqrt(2)}


# ----------------------------------------------------------------------------- tools


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Ulps between same-dtype float arrays: 0 for two NaNs, huge for NaN vs a number,
    +-0 are 0 apart, and inf is one ulp above the largest finite value."""
    ity = np.int32 if a.dtype == np.float32 else np.int64
    ia = a.view(ity).astype(np.int64)
    ib = b.view(ity).astype(np.int64)
    low = np.int64(np.iinfo(ity).min)
    ia = np.where(ia < 0, low - ia, ia)  # monotone map of the bit patterns
    ib = np.where(ib < 0, low - ib, ib)
    d = np.abs(ia - ib)
    na, nb = np.isnan(a), np.isnan(b)
    d = np.where(na & nb, 0, d)
    return np.where(na ^ nb, np.iinfo(np.int64).max, d)


def float32_sweep(stride: int = 433) -> np.ndarray:
    """Every stride-th float32 bit pattern (both signs, subnormals included), plus edges."""
    bits = np.arange(0, 2 ** 32, stride, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([bits.view(np.float32), _edges(np.float32),
                           np.linspace(-12, 12, 400_001, dtype=np.float32)])


def float64_sample(n: int = 1_000_000) -> np.ndarray:
    """Log-uniform magnitudes over the whole float64 range (both signs), dense sweeps where
    the functions bend, and edges."""
    rng = np.random.default_rng(12)
    mag = np.exp(rng.uniform(math.log(5e-324), math.log(1.7e308), n))
    return np.concatenate([mag, -mag, rng.uniform(-40, 40, n), rng.uniform(-1, 1, n // 2),
                           rng.uniform(-750, 750, n // 2), _edges(np.float64)])


def _edges(dt) -> np.ndarray:
    fi = np.finfo(dt)
    tiny_sub = np.nextafter(dt(0), dt(1))
    vals = [0.0, fi.tiny, tiny_sub, fi.max, fi.eps, 1.0, 0.5, 2.0, 88.72283, 88.72284, 89.0,
            -87.33654, -103.27893, -103.97208, -104.0, 709.782712893384, 709.7827128933841,
            -745.1332191019411, -745.1332191019412, 708.39641853226408, 0.6931471805599453,
            0.34657359, 1e-8, 1e-20, 1e-40, 0.9, 0.99, 0.999999, 1.000001, 3.92, 4.0, 5.92, 6.0,
            9.0, 10.0, 19.06, 20.0]
    vals = np.array(vals, dtype=np.float64)
    vals = np.concatenate([vals, [tiny_sub]])
    with np.errstate(over="ignore"):
        v = vals.astype(dt)
    with np.errstate(over="ignore"):
        around = np.concatenate([v, np.nextafter(v, dt(np.inf)), np.nextafter(v, dt(-np.inf))])
    return np.concatenate([around, -around, dt([np.inf, -np.inf, np.nan, -1.0])])


def _loop(helper, fastmath=None):
    flags = KERNEL_FLAGS if fastmath is None else fastmath

    @numba.njit(fastmath=flags, error_model="numpy")
    def loop(x, out):
        for i in range(x.shape[0]):
            out[i] = helper(x[i])

    return loop


def _run(loop, x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    loop(x, out)
    return out


def _reference(name: str, x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        if x.dtype == np.float64 and name in REFERENCES_FLOAT64:
            want = REFERENCES_FLOAT64[name](x).astype(x.dtype)
        else:
            want = REFERENCES[name](x.astype(np.float64)).astype(x.dtype)
        if name == "gelu_none":  # documented: 0 (times x's sign) where eager's formula gives 0
            want = np.where(x < GELU_NONE_CUTOFF[x.dtype.name], x * 0, want)
        return want


def _subnormal_sigmoid(name: str, x: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Where gelu_tanh = x * sigmoid(2u) has a subnormal sigmoid (x < -10 in float32, -21 in
    float64), it keeps only the subnormal's absolute precision."""
    if name != "gelu_tanh":
        return np.zeros(x.shape, bool)
    with np.errstate(all="ignore"):
        return np.abs(want) < np.abs(x) * np.finfo(x.dtype).tiny


_SAMPLES: dict = {}


def _sample(dtype: str) -> np.ndarray:
    if dtype not in _SAMPLES:
        _SAMPLES[dtype] = float32_sweep() if dtype == "float32" else float64_sample()
    return _SAMPLES[dtype]


def max_ulp_error(name: str, dtype: str) -> tuple[int, float]:
    """(max ulp error, the input where it is reached) of helper ``name`` in a kernel loop."""
    x = _sample(dtype)
    if name == "gelu_none" and dtype == "float64":
        # the mpmath reference is slow: a subsample, dense where gelu bends and in the tail
        rng = np.random.default_rng(3)
        x = np.concatenate([rng.choice(x, 20_000), rng.uniform(-9, 3, 20_000),
                            _edges(x.dtype.type)])
    got = _run(_loop(getattr(nm, name)), x)
    want = _reference(name, x)
    d = ulp_distance(got, want)
    d[_subnormal_sigmoid(name, x, want)] = 0  # held to an absolute bound below
    i = int(np.argmax(d))
    return int(d[i]), float(x[i])


# ----------------------------------------------------------------------------- accuracy


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", nm.HELPERS)
def test_max_ulp_error(name, dtype):
    err, where = max_ulp_error(name, dtype)
    assert err <= MAX_ULP[dtype][name], f"{name} {dtype}: {err} ulp at x={where!r}"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_exp_other_scaling_keeps_the_accuracy(dtype):
    # exp scales by 2**n with one vscalef where Numba targets AVX-512 (nm._SCALEF), else with
    # two power-of-two factors; the variant this machine does not use is held to the same bound
    bits = 32 if dtype == "float32" else 64
    other = nm._build(bits, not nm._SCALEF)["exp"]
    x = _sample(dtype)
    got = _run(_loop(other), x)
    want = _reference("exp", x)
    assert ulp_distance(got, want).max() <= MAX_ULP[dtype]["exp"]
    special = np.isnan(want) | np.isinf(want) | (want == 0)  # overflow, underflow, NaN
    assert special.sum() > 100
    np.testing.assert_array_equal(got[special], want[special])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gelu_tanh_tail_has_the_subnormal_absolute_error(dtype):
    x = np.linspace(-60, -5, 200_001).astype(dtype)
    got = _run(_loop(nm.gelu_tanh), x)
    want = _reference("gelu_tanh", x)
    tail = _subnormal_sigmoid("gelu_tanh", x, want)
    assert tail.sum() > 1000
    smallest = np.nextafter(x.dtype.type(0), x.dtype.type(1))
    err = np.abs(got[tail].astype(np.float64) - want[tail])
    assert np.all(err <= np.abs(x[tail]) * smallest * 2)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gelu_none_is_zero_where_eager_rounds_to_zero(dtype):
    x = np.linspace(GELU_NONE_CUTOFF[dtype] * 3, GELU_NONE_CUTOFF[dtype], 10_001).astype(dtype)
    x = x[x < GELU_NONE_CUTOFF[dtype]]
    got = _run(_loop(nm.gelu_none), x)
    erf = _erf64(x.astype(np.float64) / math.sqrt(2)).astype(dtype)
    eager = x.dtype.type(0.5) * x * (1 + erf)
    np.testing.assert_array_equal(got, eager)
    assert np.all(np.signbit(got))


# ----------------------------------------------------------------------------- special values

SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e-30, -1e-30, 1e30, -1e30, 100.0,
            -100.0, 1000.0, -1000.0, 1e-45, -1e-45, 5e-324, -5e-324, -2.0, 0.5]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", nm.HELPERS)
def test_special_values_match_numpy(name, dtype):
    with np.errstate(all="ignore"):
        x = np.array(SPECIALS, dtype=np.float64).astype(dtype)
    got = _run(_loop(getattr(nm, name)), x)
    want = _reference(name, x)
    assert ulp_distance(got, want).max() <= MAX_ULP[dtype][name], (x, got, want)
    # exact where the answer is a special value: NaN, +-inf, +-0 (with its sign), +-1
    special = np.isnan(want) | np.isinf(want) | (want == 0) | (np.abs(want) == 1)
    np.testing.assert_array_equal(got[special], want[special])
    signed = special & ~np.isnan(want)  # a NaN's sign bit means nothing
    np.testing.assert_array_equal(np.signbit(got[signed]), np.signbit(want[signed]))


def test_named_special_cases():
    f32 = np.float32
    for dt in (np.float32, np.float64):
        def run(name, v, dt=dt):
            return _run(_loop(getattr(nm, name)), np.array([v], dtype=dt))[0]
        assert np.isnan(run("exp", np.nan))
        assert run("exp", np.inf) == np.inf
        assert run("exp", 1000.0) == np.inf and run("exp", -1000.0) == 0
        assert run("log", 0.0) == -np.inf and run("log", -0.0) == -np.inf
        assert np.isnan(run("log", -1.0)) and np.isnan(run("log", -np.inf))
        assert run("log", np.inf) == np.inf
        assert run("log1p", -1.0) == -np.inf and np.isnan(run("log1p", -2.0))
        assert run("tanh", 1000.0) == 1 and run("tanh", -1000.0) == -1
        assert run("sigmoid", 1000.0) == 1 and run("sigmoid", -1000.0) == 0
        assert run("erf", np.inf) == 1 and run("erf", -np.inf) == -1
        assert run("expm1", -np.inf) == -1 and run("expm1", np.inf) == np.inf
        for name in ("expm1", "log1p", "tanh", "erf", "gelu_tanh", "gelu_none"):
            assert np.signbit(run(name, -0.0)), name
            assert np.isnan(run(name, np.nan)), name
    # exp underflows through the subnormals as NumPy does
    x = np.linspace(-104, -87, 2001, dtype=f32)
    got = _run(_loop(nm.exp), x)
    want = np.exp(x.astype(np.float64)).astype(f32)
    assert np.any((want > 0) & (want < np.finfo(f32).tiny))
    assert ulp_distance(got, want).max() <= 1


# ----------------------------------------------------------------------------- NaN semantics


def _patterns():
    @numba.njit(fastmath=KERNEL_FLAGS, error_model="numpy")
    def patterns(x, y, c, out):
        for i in range(x.shape[0]):
            a, b = x[i], y[i]
            out[0, i] = nm.maximum(a, 0.0)          # relu, NaN-propagating like np.maximum
            out[1, i] = nm.maximum(a, b)
            out[2, i] = nm.minimum(a, b)
            out[3, i] = a if a > b else b            # a plain select: NaN > b is False
            out[4, i] = a if c[i] else b             # where
            out[5, i] = nm.minimum(nm.maximum(a, -1.0), 1.0)  # clamp
            out[6, i] = 1.0 if a != a else 0.0       # isnan template
            out[7, i] = a * 0.0 + b                  # no 0*x folding: NaN/inf survive
    return patterns


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nan_inf_patterns_match_numpy(dtype):
    vals = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.5, 3.0], dtype=dtype)
    x = np.repeat(vals, len(vals))
    y = np.tile(vals, len(vals))
    c = (np.arange(x.size) % 3) == 0
    out = np.empty((8, x.size), dtype=dtype)
    _patterns()(x, y, c, out)
    with np.errstate(invalid="ignore"):
        want = [np.maximum(x, 0.0), np.maximum(x, y), np.minimum(x, y), np.where(x > y, x, y),
                np.where(c, x, y), np.clip(x, -1.0, 1.0), np.isnan(x), x * 0.0 + y]
    for row, w in enumerate(want):
        np.testing.assert_array_equal(out[row], np.asarray(w, dtype=dtype), err_msg=str(row))
        w = np.asarray(w, dtype)
        signed = ~np.isnan(w)
        np.testing.assert_array_equal(np.signbit(out[row][signed]), np.signbit(w[signed]),
                                      err_msg=str(row))


def test_kernel_fastmath_keeps_nan_and_inf_semantics():
    assert nm.KERNEL_FASTMATH.isdisjoint({"nnan", "ninf", "nsz", "fast"})
    assert {"reassoc", "contract"} <= nm.KERNEL_FASTMATH
    assert nm.HELPER_FASTMATH == frozenset({"contract"})


def test_helpers_keep_their_semantics_under_any_kernel_flags():
    # the helpers carry their own fast-math flags into the kernel: even fastmath=True in the
    # caller leaves exp's NaN/inf handling alone
    x = np.array([np.nan, np.inf, -np.inf, 0.5, -1000.0], dtype=np.float32)
    np.testing.assert_array_equal(_run(_loop(nm.exp, fastmath=True), x),
                                  _run(_loop(nm.exp), x))


# ----------------------------------------------------------------------------- vectorization

x86 = pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                         reason="the assembly check reads x86 mnemonics")


def _reduction_loop():
    @numba.njit(fastmath=KERNEL_FLAGS, error_model="numpy")
    def total(x):
        s = x.dtype.type(0)
        for i in range(x.shape[0]):
            s += nm.tanh(x[i])
        return s
    return total


@x86
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", nm.HELPERS + ("maximum", "minimum"))
def test_helper_loop_vectorizes_without_calls(name, dtype):
    helper = getattr(nm, name)
    if name in ("maximum", "minimum"):
        @numba.njit(fastmath=KERNEL_FLAGS, error_model="numpy")
        def loop(x, out):
            for i in range(x.shape[0]):
                out[i] = helper(x[i], 0.0)
    else:
        loop = _loop(helper)
    _run(loop, np.linspace(-3, 3, 64).astype(dtype))
    stats = loop_asm_stats(loop)
    assert stats.packed > 0, stats
    assert stats.calls == (), stats


@x86
def test_reduction_over_a_helper_vectorizes():
    total = _reduction_loop()
    x = np.linspace(-3, 3, 1001).astype(np.float32)
    assert total(x) == pytest.approx(np.tanh(x.astype(np.float64)).sum(), abs=1e-3)
    stats = loop_asm_stats(total)
    assert stats.packed > 0 and stats.calls == (), stats


@x86
def test_asm_check_sees_a_libm_call():
    # the check can fail: math.exp in a float32 loop is a scalar libm call here
    @numba.njit(fastmath=KERNEL_FLAGS, error_model="numpy")
    def loop(x, out):
        for i in range(x.shape[0]):
            out[i] = math.exp(x[i])

    _run(loop, np.ones(8, np.float32))
    assert loop_asm_stats(loop).calls


# ----------------------------------------------------------------------------- API


def test_generic_names_dispatch_on_type_from_python_and_numba():
    assert isinstance(nm.exp(np.float32(1.0)), (np.float32, float))
    assert nm.exp(np.float32(1.0)) == nm.exp_f32(np.float32(1.0))
    assert nm.exp(1.0) == nm.exp_f64(1.0) == pytest.approx(math.e, rel=1e-15)
    assert nm.erf(np.float64(0.5)) == pytest.approx(math.erf(0.5), rel=1e-15)
    assert nm.gelu_erf is nm.gelu_none
    assert nm.maximum(np.nan, 1.0) != nm.maximum(np.nan, 1.0)
    assert nm.minimum(2.0, 1.0) == 1.0
    with pytest.raises(TypeError, match="float32 or float64"):
        nm.exp(1)


def test_integer_input_in_numba_is_a_typing_error():
    @numba.njit
    def f(i):
        return nm.exp(i)

    with pytest.raises(numba.core.errors.TypingError, match="float32 or float64"):
        f(3)


def test_import_jitgrad_does_not_import_numba():
    code = ("import sys, jitgrad, jitgrad.backends, jitgrad.backends.interpreter; "
            "assert 'numba' not in sys.modules, 'numba imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[1])


def test_helpers_load_from_numba_cache_in_a_second_process(tmp_path):
    # compiled once per machine, not per process: the second process finds exp_f32 cached,
    # and the kernel using it still inlines and vectorizes
    # (tanh calls expm1, and gelu_none erfcx and exp: helpers that call helpers hit too)
    code = ("import numpy as np, numba; from jitgrad.backends import numba_math as nm; "
            "hs = [nm._BY_WIDTH[b][n] for b in (32, 64) for n in ('exp', 'tanh', 'gelu_none')];"
            "[h(np.float32(1) if i < 3 else 1.0) for i, h in enumerate(hs)]; "
            "k = numba.njit(lambda x: nm.exp_f32(x) + np.float32(1)); k(np.float32(0)); "
            "print(sum(sum(h.stats.cache_hits.values()) for h in hs), "
            "sum(sum(h.stats.cache_misses.values()) for h in hs))")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                           text=True, env=env, cwd=Path(__file__).parents[1]).stdout.split()
            for _ in range(2)]
    assert runs[0] == ["0", "6"] and runs[1] == ["6", "0"], runs


_CACHED_KERNEL = """
import numba
from jitgrad.backends.numba_math import KERNEL_FASTMATH, exp, gelu_none, maximum, tanh


@numba.njit(fastmath=set(KERNEL_FASTMATH), error_model="numpy", cache=True)
def kernel(x, out):
    s = x.dtype.type(0)
    for i in range(x.shape[0]):
        v = maximum(tanh(x[i]) * exp(x[i]), gelu_none(x[i]))
        out[i] = v
        s += v
    return s
"""


def test_a_kernel_module_using_helpers_is_cached_across_processes(tmp_path):
    # the numba backend writes kernels as modules compiled with cache=True: a kernel calling
    # the helpers must load from the cache in the next process and compute the same values
    (tmp_path / "jg_kernel_probe.py").write_text(_CACHED_KERNEL)
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[1]); "
            "import jg_kernel_probe as m; x = np.linspace(-5, 5, 1001).astype(np.float32); "
            "out = np.empty_like(x); s = m.kernel(x, out); "
            "print(sum(m.kernel.stats.cache_hits.values()), repr(float(s)), out.tobytes().hex())")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    runs = [subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True,
                           capture_output=True, text=True, env=env,
                           cwd=Path(__file__).parents[1]).stdout.split() for _ in range(2)]
    assert runs[0][0] == "0" and runs[1][0] == "1", runs
    assert runs[0][1:] == runs[1][1:]
