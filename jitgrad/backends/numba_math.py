"""Vectorizable scalar math for generated Numba kernels.

Numba lowers ``math.exp`` and friends to scalar libm calls (this llvmlite has no SVML), and a
call in a loop body stops LLVM's loop vectorizer. The helpers here use range reduction,
minimax polynomials and branch-free selects only, so a kernel loop such as::

    @numba.njit(fastmath=set(KERNEL_FASTMATH), error_model="numpy")
    def kernel(x, out):
        for i in range(x.shape[0]):
            out[i] = tanh(x[i])

compiles to packed SIMD code (16 float32 / 8 float64 lanes on AVX-512) with no call in the
loop; ``asm_stats.loop_asm_stats`` checks that on the assembly.

Names: ``exp, expm1, log, log1p, tanh, sigmoid, erf, gelu_tanh, gelu_none`` (``gelu_erf`` is
an alias; the op templates say ``gelu_{approximate}``), each also as ``<name>_f32`` and
``<name>_f64``; and ``maximum``/``minimum`` with ``np.maximum``'s NaN propagation. The generic
names pick the variant from the argument's Numba type at compile time and also run from
Python on NumPy scalars. Only float32 and float64 are accepted (a TypingError otherwise): the
renderer casts integer and bool inputs first, as eager mode's type promotion does.

How they are compiled, and why:

- Each helper is ``njit(inline="never", fastmath=HELPER_FASTMATH, error_model="numpy",
  cache=True)``, compiled once per dtype, and called through ``_call_inline``, an intrinsic
  that puts LLVM's ``alwaysinline`` attribute on the call. So LLVM inlines it into the kernel
  loop whatever its size (without the attribute erf and gelu exceed LLVM's inlining threshold,
  the loop keeps a call and does not vectorize), and since LLVM fast-math flags belong to
  instructions, the helper's code keeps *its* flags inside a kernel compiled with any others
  (even ``fastmath=True``). Numba-level ``inline="always"`` would recompile the body with the
  kernel's flags, and ``reassoc`` could undo the Cody-Waite range reduction
  (``(x - n*hi) - n*lo``) and the compensated terms.
- ``HELPER_FASTMATH = {"contract"}``: lets LLVM fuse multiply-adds into FMA (faster and more
  accurate Horner steps). The accuracy below was measured with FMA (x86-64 with FMA3); without
  FMA hardware, expect up to about one more ulp. gelu_tanh's float64 double-float steps are
  compiled without ``contract`` and use an explicit ``llvm.fma``.
- ``KERNEL_FASTMATH = {"contract", "reassoc"}`` is the recommended flag set for generated
  kernels. ``reassoc`` is what LLVM needs to vectorize a floating-point sum reduction
  (measured: ``s += x[i]`` stays scalar without it, 16-wide with it); ``contract`` gives FMA.
  Neither changes NaN or inf. ``nnan``/``ninf`` (part of ``fastmath=True``) are excluded:
  LLVM may then assume no NaN or inf exists, and does, e.g. it folds ``x != x`` (the
  ``isnan`` template) to False (measured). ``nsz`` is excluded so -0.0 keeps its sign where
  NumPy keeps it; ``arcp`` and ``afn`` because nothing needs them to vectorize (a division
  vectorizes as ``vdivps``; no libm calls are left to approximate) and ``arcp`` changes
  results. Max/min *reductions* do not vectorize under these flags (LLVM recognizes them only
  with ``nnan``); they run scalar.
- Helpers are cached on disk by Numba (``NUMBA_CACHE_DIR``, else ``__pycache__`` next to this
  file, else Numba's user cache), and a cached helper still inlines and vectorizes. Measured
  (``python -m benchmarks.numba_math``): a kernel loop without helpers compiles in ~0.1 s;
  the first one using a helper in 0.4-1.0 s (the helper is compiled: exp 0.4 s, erf and
  gelu_none 0.7-1.0 s); later ones in 0.1-0.15 s in the same process, 0.15-0.3 s in a new
  process (helper loaded from the cache). Helpers call each other by name (``_call_named``),
  never through closure cells, which would change Numba's cache key in every process.

Two traps for generated kernel source, measured here: Numba's builtin ``max(a, b)`` returns
``a`` when ``b`` is NaN (``max(0.0, nan)`` is 0.0), so relu/clamp/max-reduction templates
should call ``maximum``/``minimum``; and a Python float literal makes a float32 expression
float64 (``1.0 / (1.0 + exp(-x))`` with a float32 ``x`` is computed, more slowly, in float64):
write typed constants or call ``sigmoid``.

Accuracy: max error in ulp against NumPy's float64 result rounded to the dtype (references:
np.exp, np.expm1, np.log, np.log1p, np.tanh; sigmoid: the stable eager formula; erf:
scipy.special.erf / math.erf; gelu_tanh: x*sigmoid(2u) in long double for float64 inputs;
gelu_none: 0.5*x*erfc(-x/sqrt2), mpmath for float64 inputs). Sample: float32, every 433rd bit
pattern (~9.9 million values, both signs, subnormals) plus edge values and a dense sweep of
[-12, 12]; float64, 2 million log-uniform magnitudes over the whole range (both signs), 2
million in [-40, 40], [-1, 1], [-750, 750], plus edges. Measured on x86-64 (AMD Zen 4, FMA),
``tests/test_numba_math.py`` holds the helpers to these numbers:

=========  =======  =======  =================================================================
helper     float32  float64  notes
=========  =======  =======  =================================================================
exp        1        1        overflow to inf, gradual underflow through the subnormals
expm1      2        2        -0.0 kept
log        1        1        subnormal inputs included
log1p      1        1        -0.0 kept
tanh       2        3        -0.0 kept; +-1 beyond 10 (float32) / 20 (float64)
sigmoid    2        2        exactly 1 / 0 at +-large; subnormal results near -88 / -745
erf        2        3        float64: 1 ulp against correctly rounded (mpmath, 12k values);
                             scipy's erf is itself 2 ulp off there
gelu_tanh  4        4        x * sigmoid(2u), u = sqrt(2/pi)(x + 0.044715x^3), no cancellation.
                             Below x = -10 (float32) / -21 (float64) sigmoid(2u) is subnormal
                             and only its absolute precision is kept (error <= 2 |x| * 2^-149
                             / 2^-1074); eager's own formula returns 0 there
gelu_none  5        5        0.5x(1 + erf(x/sqrt2)); 0 (with x's sign) below x = -4sqrt2
                             (float32) / -6sqrt2 (float64), as eager's formula gives
=========  =======  =======  =================================================================

Against correctly rounded float64 values (mpmath, 12k values) the float64 exp, log, log1p
are 1 ulp, expm1 2, tanh 2, sigmoid 2 (NumPy's own are 0-2 ulp).

Speed (Zen 5, float32, cycles per 16 lanes in a loop that only applies the helper; a bare
load-multiply-store loop takes 3.5): exp 11, expm1 13, tanh 14, sigmoid 16, log 16, erf 33.
Two choices matter for that. Where Numba targets AVX-512 (``_SCALEF``), exp multiplies by
``2**n`` with one ``vscalef`` (``llvm.ldexp``, which rounds a subnormal result once) instead of
two power-of-two factors built from bits (exp 15 -> 11 cycles); without AVX-512, LLVM would
make ``llvm.ldexp`` a libm call, so the bit-built factors stay. tanh works on ``|x|`` and puts
x's sign back with ``copysign``, so the reduced expm1 it calls needs no clamps or selects of
its own (tanh 20 -> 14 cycles; W1's fused kernel at 1e5 elements 159 -> 125 us).

Special values follow NumPy: NaN in gives NaN out; exp overflows to inf and underflows
through the subnormals to 0; log(0) = -inf, log(x<0) = nan, log1p(-1) = -inf, log1p(x<-1) =
nan; tanh(+-large) = +-1; sigmoid(+-large) = 1 / 0; erf(+-inf) = +-1; -0.0 is kept by expm1,
log1p, tanh, erf and both gelus. ``maximum``/``minimum`` return NaN if either argument is NaN,
and ``b`` on ties, like ``np.maximum``/``np.minimum``.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import errors
from numba.core.typing import signature
from numba.extending import intrinsic, overload

from . import _numba_math_coefficients as _coef
from . import _numba_bits as _bits

__all__ = [
    "HELPER_FASTMATH", "KERNEL_FASTMATH", "HELPERS", "erf", "exp", "expm1", "gelu_none",
    "gelu_tanh", "log", "log1p", "maximum", "minimum", "sigmoid", "tanh",
]

#: Fast-math flags recommended for generated kernels (see the module docstring).
KERNEL_FASTMATH = frozenset({"contract", "reassoc"})
#: Fast-math flags the helpers themselves are compiled with.
HELPER_FASTMATH = frozenset({"contract"})


def _jit(fn, fastmath):
    # inline="never": compiled once per dtype with its own flags, inlined by LLVM (see
    # _call_inline). cache=True: a later process loads it from Numba's cache (a few ms instead
    # of 0.1-0.8 s per helper); the cached helper still inlines and vectorizes.
    options = {"inline": "never", "fastmath": fastmath, "error_model": "numpy", "nogil": True}
    try:
        return numba.njit(cache=True, **options)(fn)
    except RuntimeError:  # no writable cache location: compile in every process instead
        return numba.njit(**options)(fn)


def _helper(fn):
    return _jit(fn, set(HELPER_FASTMATH))


def _exact_helper(fn):
    # for code whose error terms must not be fused into FMAs by the compiler
    return _jit(fn, False)



def _mark_calls_alwaysinline(block, start: int) -> None:
    for instr in block.instructions[start:]:
        if isinstance(instr, ir.CallInstr):
            instr.attributes.add("alwaysinline")


def _inline_call_intrinsic(arity: int):
    """An intrinsic ``f(dispatcher, *args)`` that calls the Numba function ``dispatcher``
    with an ``alwaysinline`` call-site attribute, so LLVM inlines the helper into the kernel
    loop whatever its size (erf and gelu exceed LLVM's inlining threshold: the loop
    would keep a call and not vectorize), while the helper keeps its own fast-math flags."""

    def typer(typingctx, fn, *args):
        if not isinstance(fn, types.Dispatcher) or len(args) != arity:
            return None
        inner = fn.get_call_type(typingctx, args, {})
        if inner is None:
            return None

        def codegen(context, builder, sig, llargs):
            impl = context.get_function(fn, inner)
            block = builder.block
            start = len(block.instructions)
            result = impl(builder, llargs[1:])
            _mark_calls_alwaysinline(block, start)
            return result

        return signature(inner.return_type, fn, *args), codegen

    return typer


def _call_inline1_typer(typingctx, fn, x):
    return _inline_call_intrinsic(1)(typingctx, fn, x)


def _call_inline2_typer(typingctx, fn, a, b):
    return _inline_call_intrinsic(2)(typingctx, fn, a, b)


_call_inline = intrinsic(_call_inline1_typer)
_call_inline2 = intrinsic(_call_inline2_typer)


@intrinsic
def _call_named(typingctx, name, x):
    """``_call_inline`` of the helper called ``name`` (a string literal) for ``x``'s dtype.

    Helpers call each other through this rather than holding each other in closure cells:
    Numba's cache key hashes the pickled closure cells, and a pickled dispatcher differs
    from process to process (the helper would miss the cache every time and add an entry)."""
    if not isinstance(name, types.StringLiteral) or not _bits.is_float(x):
        return None
    fnty = typingctx.resolve_value_type(_BY_WIDTH[x.bitwidth][name.literal_value])
    inner_sig, inner_codegen = _inline_call_intrinsic(1)(typingctx, fnty, x)

    def codegen(context, builder, sig, llargs):
        return inner_codegen(context, builder, inner_sig, (None, llargs[1]))

    return signature(inner_sig.return_type, name, x), codegen


@numba.njit(inline="always")
def _horner(z, c):
    # c[0] + c[1]*z + ...; the loop has a constant trip count and LLVM unrolls it fully
    p = c[len(c) - 1]
    for k in range(len(c) - 2, -1, -1):
        p = p * z + c[k]
    return p


@numba.njit(inline="always")
def _horner_pick(z, a, b, c, use_a, use_b):
    # _horner(z, a if use_a else b if use_b else c): the coefficients are picked per lane (two
    # blends per term, no branch); LLVM folds the blends away where the tuples agree
    n = len(a) - 1
    p = a[n] if use_a else (b[n] if use_b else c[n])
    for k in range(n - 1, -1, -1):
        p = p * z + (a[k] if use_a else (b[k] if use_b else c[k]))
    return p



# ------------------------------------------------------------------ per-dtype builders
def _build(bits: int, scalef: bool) -> dict:
    ft = np.float32 if bits == 32 else np.float64
    c = ft  # constant of the target dtype (a Python float would promote float32 to float64)
    zero, half, one, two = c(0.0), c(0.5), c(1.0), c(2.0)
    inf, nan = c(np.inf), c(np.nan)
    log2e = c(1 / math.log(2))
    ln2_hi, ln2_lo = c(_coef.LN2[bits][0]), c(_coef.LN2[bits][1])
    exp_q = tuple(c(v) for v in _coef.EXP_Q[bits])
    expm1_q = tuple(c(v) for v in _coef.EXPM1_Q[bits])
    log_q = tuple(c(v) for v in _coef.LOG_Q[bits])
    erf_p = tuple(c(v) for v in _coef.ERF_P[bits])
    exp_lo, exp_hi = c(_coef.EXP_CLAMP[bits][0]), c(_coef.EXP_CLAMP[bits][1])
    expm1_lo = c(_coef.EXPM1_LO[bits])
    tanh_clamp = c(_coef.TANH_CLAMP[bits])
    tiny = c(np.finfo(ft).tiny)
    shift = _coef.SUBNORMAL_SHIFT[bits]
    sub_scale, sub_shift = c(2.0 ** shift), c(shift)
    pieces = _coef.ERFC_H[bits] * (3 // len(_coef.ERFC_H[bits]))  # float32: one piece, 3 times
    n_h = max(len(h) for _, _, h in pieces)
    h_a, h_b, h_c = (tuple(c(v) for v in h + (0.0,) * (n_h - len(h))) for _, _, h in pieces)
    mid_a, mid_b, mid_c = (c((1 / lo + 1 / hi) / 2) for lo, hi, _ in pieces)
    ih_a, ih_b, ih_c = (c(2 / (1 / lo - 1 / hi)) for lo, hi, _ in pieces)
    split_ab, split_bc = c(pieces[0][1]), c(pieces[1][1])
    erfc_lo, erfc_xmax = c(pieces[0][0]), c(pieces[2][1])
    inv_sqrt2 = c(1 / math.sqrt(2))
    # gelu_tanh: v = 2u = x * (k2 + ka2 * x^2), constants as float64 hi + lo
    k2_hi, k2_lo = 1.5957691216057308, -9.96930880911092e-17
    ka2_hi, ka2_lo = 0.07135481627260025, -6.175149918155315e-19
    v_max = c(120.0 if bits == 32 else 760.0)  # sigmoid(+-v) is 1 / 0 (or subnormal) beyond
    use_s_form = bits == 64

    @_helper
    def exp(x):
        xc = x if x < exp_hi else exp_hi  # NaN -> exp_hi: finite until the last select
        xc = xc if xc > exp_lo else exp_lo
        n = np.rint(xc * log2e)
        r = (xc - n * ln2_hi) - n * ln2_lo
        p = one + (r + r * r * _horner(r, exp_q))
        if scalef:
            y = _bits.ldexp(p, n)
        else:
            # two scale factors: 2**n alone leaves the normal range at both ends, and p * 2**n1
            # is exact, so a subnormal result is rounded once
            n1 = np.floor(n * half)
            y = p * _bits.pow2(n1) * _bits.pow2(n - n1)
        return x if x != x else y

    @_helper
    def expm1_reduced(xc):
        # expm1(xc) for expm1_lo <= xc <= exp_hi; NaN gives NaN (bit arithmetic only, no
        # float-to-int conversion), +-0 gives +0
        n = np.rint(xc * log2e)
        r = (xc - n * ln2_hi) - n * ln2_lo
        r2 = r * r
        em = r + (r2 * half + r2 * r * _horner(r, expm1_q))  # expm1(r), relative accuracy
        # expm1(x) = 2**n * (em + 1) - 1 = 2 * (s*em + (s - 1/2)) with s = 2**(n-1)
        s = _bits.pow2(n - one)
        return (s * em + (s - half)) * two

    @_helper
    def expm1(x):
        xc = x if x < exp_hi else exp_hi
        xc = xc if xc > expm1_lo else expm1_lo
        y = _call_named("expm1_reduced", xc)
        return x if (x == zero) | (x != x) else y  # keeps -0.0 and NaN

    @_helper
    def log1p_reduced(f):
        # log(1 + f) for f in [sqrt(.5)-1, sqrt(2)-1]
        if use_s_form:
            s = f / (two + f)
            z = s * s
            return f - s * (f - z * _horner(z, log_q))
        f2 = f * f
        return f + (f2 * f * _horner(f, log_q) - f2 * half)

    @_helper
    def log(x):
        sub = x < tiny
        m, k = _bits.split(x * sub_scale if sub else x)
        k = k - sub_shift if sub else k
        y = k * ln2_hi + (_call_named("log1p_reduced", m - one) + k * ln2_lo)
        y = -inf if x == zero else y
        y = nan if x < zero else y
        return x if not (x < inf) else y  # +inf and NaN come back as they are

    @_helper
    def log1p(x):
        u = one + x
        m, k = _bits.split(u)
        # rounding error of u = 1 + x, relative to u (exact by construction, see k's range)
        c = (x - (u - one)) if k < two else (one - (u - x))
        near = k == zero  # u in [sqrt(.5), sqrt(2)): use x itself, no rounding to undo
        f = x if near else m - one
        k = zero if near else k
        c = zero if near else c / u
        y = k * ln2_hi + (_call_named("log1p_reduced", f) + (c + k * ln2_lo))
        y = -inf if x == -one else y
        y = nan if x < -one else y
        return x if (x == zero) | (not (x < inf)) else y

    @_helper
    def tanh(x):
        # tanh(|x|) = e / (e + 2), e = expm1(2|x|), then x's sign: -0.0 and NaN come through
        # (NaN stays NaN in every step) without the clamps and selects of expm1 itself
        ax = abs(x)
        axc = tanh_clamp if ax > tanh_clamp else ax
        e = _call_named("expm1_reduced", axc + axc)
        return math.copysign(e / (e + two), x)

    @_helper
    def sigmoid(x):
        # 1/(1+e) for x >= 0, e/(1+e) below (e = exp(-|x|) <= 1): one division, no overflow
        e = _call_named("exp", -abs(x))
        return (one if x >= zero else e) / (one + e)

    @_helper
    def erfcx(ax):
        # erfc(ax) * exp(ax^2), relative accuracy, for erfc_lo <= ax <= erfc_xmax (callers
        # clamp)
        u = one / ax
        use_a = ax < split_ab
        use_b = ax < split_bc
        t = (u - (mid_a if use_a else (mid_b if use_b else mid_c))) * (
            ih_a if use_a else (ih_b if use_b else ih_c))
        return u * _horner_pick(t, h_a, h_b, h_c, use_a, use_b)

    @_helper
    def erf(x):
        ax = abs(x)
        small = x * _horner(x * x, erf_p)
        axc = erfc_xmax if ax > erfc_xmax else ax  # NaN stays NaN
        large = one - _call_named("exp", -(axc * axc)) * _call_named("erfcx", axc)
        large = large if x >= zero else -large
        return small if ax < one else large

    if bits == 32:
        @_helper
        def gelu_tanh(x):
            # 0.5*x*(1 + tanh(u)) == x * sigmoid(2u): no cancellation for negative x. An error
            # in v = 2u is multiplied by |v| in sigmoid's relative error, so v is computed in
            # float64 and its float32 rounding error vl goes back in to first order.
            xd = np.float64(x)
            v = xd * (k2_hi + ka2_hi * (xd * xd))
            vh = np.float32(v)
            vl = np.float32(v - np.float64(vh))
            vl = vl if abs(vh) < v_max else zero
            s = _call_named("sigmoid", vh)
            return x * (s + s * (one - s) * vl)
    else:
        @_exact_helper
        def gelu_tanh(x):
            # as for float32, with v = x * (k2 + ka2 * x^2) in double-float arithmetic
            # (compiled without contract, so the error terms are not fused away)
            x2 = x * x
            x2l = _bits.fma(x, x, -x2)
            p = ka2_hi * x2
            pl = _bits.fma(ka2_hi, x2, -p) + (ka2_hi * x2l + ka2_lo * x2)
            w = k2_hi + p
            bb = w - k2_hi
            wl = ((k2_hi - (w - bb)) + (p - bb)) + (pl + k2_lo)
            v = x * w
            vl = _bits.fma(x, w, -v) + x * wl
            vl = vl if abs(v) < v_max else zero
            s = _call_named("sigmoid", v)
            return x * (s + s * (one - s) * vl)

    @_helper
    def gelu_none(x):
        # 0.5 * x * w, w = 1 + erf(z), z = x/sqrt2, from one polynomial and one erfc tail:
        # w = 1 + z*P(z^2) near 0, erfc(|z|) = q below z = -erfc_lo (no cancellation), 2 - q
        # above z = 1, where q = exp(-z^2) * erfcx(|z|) and z^2 = x^2/2 is split exactly
        # (hi + lo) so exp's argument carries no rounding error. Beyond erfc_xmax, w is 0 (as
        # 1 + erf(z) rounds to 0 in eager mode) or 2.
        z = x * inv_sqrt2
        az = abs(z)
        h = x * x
        lo = _bits.fma(x, x, -h)
        azc = az if az < erfc_xmax else erfc_xmax
        azc = azc if azc > erfc_lo else erfc_lo
        q = _call_named("exp", -(h * half)) * (one - lo * half) * _call_named("erfcx", azc)
        q = q if az < erfc_xmax else zero
        w = one + z * _horner(z * z, erf_p)
        w = (two - q) if z >= one else w
        w = q if z < -erfc_lo else w
        return half * x * w

    return {"exp": exp, "expm1": expm1, "log": log, "log1p": log1p, "tanh": tanh,
            "sigmoid": sigmoid, "erf": erf, "gelu_tanh": gelu_tanh, "gelu_none": gelu_none,
            "log1p_reduced": log1p_reduced, "erfcx": erfcx, "expm1_reduced": expm1_reduced}


_SCALEF = _bits.SCALEF
_BY_WIDTH = {32: _build(32, _SCALEF), 64: _build(64, _SCALEF)}
#: Names of the unary float helpers, each available as ``name``, ``name_f32`` and ``name_f64``.
HELPERS = ("exp", "expm1", "log", "log1p", "tanh", "sigmoid", "erf", "gelu_tanh", "gelu_none")


def _typed(name: str, bits: int):
    impl = _BY_WIDTH[bits][name]

    def call(x):
        return _call_inline(impl, x)

    call.__name__ = call.__qualname__ = f"{name}_f{bits}"
    call.__doc__ = f"{name}(x) for a float{bits} scalar (see the module docstring)."
    # inline="always" puts only the marked call into the kernel: no arithmetic of its own
    return numba.njit(inline="always")(call)


def _generic(name: str):
    f32, f64 = _BY_WIDTH[32][name], _BY_WIDTH[64][name]

    def fn(x):
        if isinstance(x, np.float32):
            return f32(x)
        if isinstance(x, (float, np.float64)):
            return f64(x)
        raise TypeError(f"numba_math.{name} takes a float32 or float64 scalar, got "
                        f"{type(x).__name__}")

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{name}(x) for a float32 or float64 scalar, in Numba code (picks "
                  f"{name}_f32 or {name}_f64 by type) or from Python.")

    @overload(fn, inline="always")
    def _overload(x):
        if _bits.is_float(x):
            impl = _BY_WIDTH[x.bitwidth][name]
            return lambda x: _call_inline(impl, x)
        raise errors.NumbaTypeError(
            f"jitgrad numba_math.{name} takes a float32 or float64 scalar, got {x}; cast the "
            "input to a float dtype first")

    return fn


exp = _generic("exp")
expm1 = _generic("expm1")
log = _generic("log")
log1p = _generic("log1p")
tanh = _generic("tanh")
sigmoid = _generic("sigmoid")
erf = _generic("erf")
gelu_tanh = _generic("gelu_tanh")
gelu_none = _generic("gelu_none")
gelu_erf = gelu_none  # the name torch's docs use for approximate="none"

exp_f32, exp_f64 = _typed("exp", 32), _typed("exp", 64)
expm1_f32, expm1_f64 = _typed("expm1", 32), _typed("expm1", 64)
log_f32, log_f64 = _typed("log", 32), _typed("log", 64)
log1p_f32, log1p_f64 = _typed("log1p", 32), _typed("log1p", 64)
tanh_f32, tanh_f64 = _typed("tanh", 32), _typed("tanh", 64)
sigmoid_f32, sigmoid_f64 = _typed("sigmoid", 32), _typed("sigmoid", 64)
erf_f32, erf_f64 = _typed("erf", 32), _typed("erf", 64)
gelu_tanh_f32, gelu_tanh_f64 = _typed("gelu_tanh", 32), _typed("gelu_tanh", 64)
gelu_none_f32, gelu_none_f64 = _typed("gelu_none", 32), _typed("gelu_none", 64)


@_helper
def _maximum(a, b):
    return a if (a > b) | (a != a) else b


@_helper
def _minimum(a, b):
    return a if (a < b) | (a != a) else b


@numba.njit(inline="always")
def maximum(a, b):
    """``np.maximum(a, b)`` on scalars: NaN if either is NaN, else the larger (``b`` on ties, so
    ``maximum(-0.0, 0.0)`` is 0.0 as in NumPy),
    written as compare-and-select so a loop over it vectorizes without ``nnan``."""
    return _call_inline2(_maximum, a, b)


@numba.njit(inline="always")
def minimum(a, b):
    """``np.minimum(a, b)`` on scalars: NaN if either is NaN, else the smaller (``b`` on ties)."""
    return _call_inline2(_minimum, a, b)
