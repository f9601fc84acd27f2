"""Vectorizable scalar math for generated Numba kernels.

Numba lowers ``math.exp`` and friends to scalar libm calls (this llvmlite has no SVML), and a
call in a loop body stops LLVM's loop vectorizer. The helpers here are written with range
reduction, minimax polynomials and branch-free selects only, so a kernel loop such as::

    @numba.njit(fastmath=set(KERNEL_FASTMATH), error_model="numpy")
    def kernel(x, out):
        for i in range(x.shape[0]):
            out[i] = tanh(x[i])

compiles to packed SIMD code (8 or 16 lanes) with no call in the loop.

Each helper exists per dtype (``exp_f32``, ``exp_f64``, ...) and as a generic name (``exp``)
that picks the variant from the argument's Numba type at compile time; the generic names also
run from Python on NumPy scalars. Only float32 and float64 are accepted: the renderer casts
integer and bool inputs first, as eager mode's type promotion does.

How they are compiled, and why:

- Helpers are ``njit(inline="never", fastmath=HELPER_FASTMATH, error_model="numpy")``.
  LLVM inlines them into the calling loop anyway (they are tiny), and LLVM fast-math flags are
  per instruction, so the helper's instructions keep *its* flags after inlining, whatever the
  kernel uses. Numba-level ``inline="always"`` would instead recompile the body with the
  kernel's flags, and ``reassoc`` would be free to undo the Cody-Waite range reduction
  (``(x - n*hi) - n*lo``) and the compensated terms. Measured: both vectorize, same speed.
- ``HELPER_FASTMATH = {"contract"}``: lets LLVM fuse multiply-adds into FMA (faster and more
  accurate Horner steps). The accuracy figures below were measured with FMA (x86-64 with FMA3);
  without FMA hardware the error can grow by about one ulp.
- ``KERNEL_FASTMATH = {"contract", "reassoc"}`` is the recommended flag set for the generated
  kernels. ``reassoc`` is what LLVM needs to vectorize a floating-point sum reduction (it lets
  the loop keep several partial sums); ``contract`` gives FMA. Both leave NaN and inf alone.
  ``nnan`` and ``ninf`` (part of ``fastmath=True``) are excluded: with them LLVM folds
  ``x != x`` (the ``isnan`` template) to False and turns NaN-propagating ``maximum``/relu into
  plain ``maxps``, so NaN and inf would not behave as in eager mode. ``nsz`` is excluded so
  -0.0 keeps its sign where NumPy keeps it; ``arcp`` and ``afn`` are excluded because nothing
  needs them to vectorize (a division vectorizes as ``vdivps``; there are no libm calls left
  to approximate) and ``arcp`` would change results by an ulp.

Accuracy: max error in ulp against NumPy/the float64 computation rounded to the target dtype
(``tests/test_numba_math.py`` measures it; float32: every 97th float32 bit pattern over the
whole range, ~44 million values with the subnormals, plus edge values; float64: ~4 million
values log-uniform in magnitude over the whole range plus dense sweeps where the functions
bend). Measured on x86-64 (AMD Zen 4, FMA):

=========  ==========  ==========  ==============================================
helper     float32     float64     reference / notes
=========  ==========  ==========  ==============================================
exp        {exp32}     {exp64}     np.exp; overflow to inf, subnormal underflow
expm1      {expm132}   {expm164}   np.expm1
log        {log32}     {log64}     np.log; subnormal inputs included
log1p      {log1p32}   {log1p64}   np.log1p
tanh       {tanh32}    {tanh64}    np.tanh
sigmoid    {sigm32}    {sigm64}    1/(1+exp(-x)), stable form (jitgrad's eager one)
erf        {erf32}     {erf64}     math.erf
gelu_tanh  {gelt32}    {gelt64}    x*sigmoid(2u), u = sqrt(2/pi)*(x+0.044715x^3)
gelu_none  {geln32}    {geln64}    0.5x(1+erf(x/sqrt2)); for x < -5.5 (float32) /
                                   -8.3 (float64) it is 0, as eager's formula gives
=========  ==========  ==========  ==============================================

Special values follow NumPy: NaN in gives NaN out; exp overflows to inf and underflows
through the subnormals to 0; log(0) = -inf, log(x<0) = nan, log1p(-1) = -inf; tanh(+-large) =
+-1; sigmoid(+-large) = 1 / 0; erf(+-inf) = +-1; -0.0 is kept by expm1, log1p, tanh, erf,
gelu. ``maximum``/``minimum`` propagate NaN from either side like ``np.maximum``.
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils, errors
from numba.core.typing import signature
from numba.extending import intrinsic, overload

__all__ = [
    "HELPER_FASTMATH", "KERNEL_FASTMATH", "HELPERS", "AsmStats", "erf", "exp", "expm1", "gelu_none",
    "gelu_tanh", "log", "log1p", "loop_asm_stats", "maximum", "minimum", "sigmoid", "tanh",
]

#: Fast-math flags recommended for generated kernels (see the module docstring).
KERNEL_FASTMATH = frozenset({"contract", "reassoc"})
#: Fast-math flags the helpers themselves are compiled with.
HELPER_FASTMATH = frozenset({"contract"})


def _jit(fn, fastmath):
    # inline="never": compiled once per dtype with its own flags, inlined by LLVM (see
    # _call_inline). cache=True: a later process loads it from Numba's cache (~5 ms instead
    # of 0.1-0.4 s per helper); the cached helper still inlines and vectorizes.
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


# ------------------------------------------------------------------ bit-level intrinsics
# (total width, mantissa bits, exponent bias) of float32 and float64
_LAYOUT = {32: (32, 23, 127), 64: (64, 52, 1023)}
# bit patterns of sqrt(0.5) rounded to float32 / float64
_SQRT_HALF_BITS = {32: 0x3F3504F3, 64: 0x3FE6A09E667F3BCD}


def _is_float(t) -> bool:
    return isinstance(t, types.Float) and t.bitwidth in _LAYOUT


@intrinsic
def _pow2(typingctx, n):
    """2.0**n for a float n holding an integer in the normal exponent range (-126..127 for
    float32, -1022..1023 for float64), built from bits without a float-to-int conversion."""
    if not _is_float(n):
        return None

    def codegen(context, builder, sig, args):
        width, mbits, bias = _LAYOUT[n.bitwidth]
        ity = ir.IntType(width)
        # n + 1.5*2**mbits is exact; its low mantissa bits hold 2**(mbits-1) + n
        shifted = builder.fadd(args[0], ir.Constant(args[0].type, float(3 << (mbits - 1))))
        bits = builder.add(builder.bitcast(shifted, ity), ir.Constant(ity, bias))
        # shifting left by mbits drops everything but (n + bias) into the exponent field
        bits = builder.shl(bits, ir.Constant(ity, mbits))
        return builder.bitcast(bits, args[0].type)

    return n(n), codegen


@intrinsic
def _split(typingctx, x):
    """(m, k) with x = m * 2**k and m in [sqrt(0.5), sqrt(2)), for a positive normal x."""
    if not _is_float(x):
        return None

    def codegen(context, builder, sig, args):
        width, mbits, bias = _LAYOUT[x.bitwidth]
        ity = ir.IntType(width)
        s = _SQRT_HALF_BITS[x.bitwidth]
        # adding 1.0 - sqrt(0.5) (as bits) carries into the exponent exactly when the
        # mantissa is >= sqrt(2)/2 * 2, which makes m land in [sqrt(0.5), sqrt(2))
        b = builder.add(builder.bitcast(args[0], ity), ir.Constant(ity, (bias << mbits) - s))
        k = builder.sub(builder.ashr(b, ir.Constant(ity, mbits)), ir.Constant(ity, bias))
        mb = builder.add(builder.and_(b, ir.Constant(ity, (1 << mbits) - 1)), ir.Constant(ity, s))
        m = builder.bitcast(mb, args[0].type)
        kf = builder.sitofp(k, args[0].type)
        return context.make_tuple(builder, sig.return_type, (m, kf))

    return types.UniTuple(x, 2)(x), codegen


def _mark_calls_alwaysinline(block, start: int) -> None:
    for instr in block.instructions[start:]:
        if isinstance(instr, ir.CallInstr):
            instr.attributes.add("alwaysinline")


def _inline_call_intrinsic(arity: int):
    """An intrinsic ``f(dispatcher, *args)`` that calls the Numba function ``dispatcher``
    with an ``alwaysinline`` call-site attribute, so LLVM inlines the helper into the kernel
    loop whatever its size (a 22-term erf would exceed LLVM's inlining threshold, the loop
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


@intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c with one rounding (llvm.fma: one instruction on x86-64 with FMA3)."""
    if not (_is_float(a) and a == b == c):
        return None

    def codegen(context, builder, sig, args):
        ty = args[0].type
        name = f"llvm.fma.f{a.bitwidth}"
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ty, [ty] * 3), name)
        return builder.call(fn, args)

    return a(a, b, c), codegen


# ------------------------------------------------------------------ coefficients
# Minimax-style polynomials fitted for this module: Lawson-weighted least squares of the
# relative error (mpmath, 50 digits) on Chebyshev nodes, then rounded to the target dtype.

# exp(r) = 1 + r + r^2 * Q(r), |r| <= ln2/2
_EXP_Q = {
    32: (0.49999993449157887, 0.16666520641960142, 0.0416683876532625, 0.008368715574613186,
         0.0013814622000498553),
    64: (0.5, 0.16666666666666682, 0.041666666666666095, 0.008333333333317042,
         0.00138888888891155, 0.0001984126989636118, 2.4801586926795392e-05,
         2.755723488514511e-06, 2.755758176919427e-07, 2.5112028553641496e-08,
         2.082663616687335e-09),
}
# expm1(r) = r + r^2/2 + r^3 * Q(r), |r| <= ln2/2
_EXPM1_Q = {
    32: (0.16666548707486056, 0.04166685409547783, 0.008366040765756099, 0.001389823709769178),
    64: (0.16666666666666677, 0.04166666666666658, 0.008333333333322163, 0.0013888888888942633,
         0.0001984126988492852, 2.480158719827656e-05, 2.755724531035807e-06,
         2.755738701100881e-07, 2.5108680164806788e-08, 2.0878917379729176e-09),
}
# float32: log1p(f) = f - f^2/2 + f^3 * Q(f), f in [sqrt(.5)-1, sqrt(2)-1]
# float64: log1p(f) = 2*atanh(s) = 2s + s*z*Q(z), s = f/(2+f), z = s^2
_LOG_Q = {
    32: (0.33333910955777313, -0.2500133773939088, 0.19963054041839576, -0.16577556336930907,
         0.14914852919969235, -0.14267759143217204, 0.08700533660371385),
    64: (0.6666666666666734, 0.39999999999414565, 0.2857142874241434, 0.2222219857024715,
         0.18183564488596574, 0.15314046152829602, 0.14795996062169622),
}
# erf(x) = x * P(x^2) for |x| < 1
_ERF_P = {
    32: (1.1283791657337652, -0.3761262584019334, 0.11283585248977572, -0.026853814503720153,
         0.005188330582904167, -0.0008010206130217451, 7.853867878153395e-05),
    64: (1.1283791670955126, -0.3761263890318375, 0.11283791670954858, -0.026866170645072938,
         0.005223977624781157, -0.0008548326978754593, 0.0001205533103723851,
         -1.4925593512959162e-05, 1.6460972887784507e-06, -1.635002574034968e-07,
         1.4657882007628716e-08, -1.1365669984540807e-09, 5.945262211116129e-11),
}
# erfc(x) * exp(x^2) = u * H(t), u = 1/x, t = (u - mid) / half, fitted for relative error
# (so gelu's tail 0.5*x*erfc(-x/sqrt2) is accurate too) on x in [lo, hi]; float64 uses three
# pieces, picked per lane. Above the last hi, erf rounds to +-1.
_ERFC_H = {
    32: ((0.5, 4.0, (
                 0.40885421456715465, -0.12707796472917718, 0.02843970949980837,
                 0.0007356947303946486, -0.00616812450736492, 0.004991791169632286,
                 -0.0029048870570787407, 0.0013292735009433618, -0.00041969048965580913,
                 0.00011077542367547796, -4.560192979220144e-05, -0.00010246352857082194,
                 0.0001658805054500761, -6.34363135707656e-05)),),
    64: ((0.5, 1.0, (
                 0.35952293862040013, -0.059199010672768615, 0.008289237738504276,
                 -0.0007416500983061072, -7.279606235729766e-05, 6.449072467111726e-05,
                 -2.3324415374930607e-05, 6.613881416073609e-06, -1.6200831451386922e-06,
                 3.472974847594509e-07, -6.23910722217783e-08, 7.640018652960825e-09,
                 3.853259316450042e-10, -6.868900305247518e-10, 2.8920320696555955e-10,
                 -1.035786273106585e-10, 4.4650968051608553e-11, -1.1719254778633607e-11)),
         (1.0, 1.8, (
                 0.46349866131733464, -0.03731489797796556, 0.0011101194146539476,
                 0.0003837471502196517, -0.00011081243813542427, 1.8799584793430837e-05,
                 -2.1429773964470473e-06, 7.015566725845725e-08, 4.508060556283081e-08,
                 -1.6270536622556215e-08, 3.676235717492613e-09, -6.343816589591658e-10,
                 7.939435426307579e-11, -3.5083960375816853e-12, -1.752587653391877e-12,
                 7.729552805175959e-13, -2.4159234714870654e-13, 4.7761074423848154e-14)),
         (1.8, 6.0, (
                 0.5329474700275076, -0.02895764648664098, -0.0037642138795236754,
                 0.0013500946149279987, -0.0001616245526836353, -1.5347929674207616e-05,
                 1.1987286750281549e-05, -2.831569403985346e-06, 2.240736022300527e-07,
                 1.0170856132178126e-07, -5.258479688814142e-08, 1.2936586590006898e-08,
                 -1.243533198722378e-09, -5.026338725317817e-10, 3.4309522616907267e-10,
                 -1.0641004737896706e-10, 3.991794674764219e-12, 5.86680236904164e-12))),
}
# ln(2) split so that k * _LN2[0] is exact for every exponent k in range
_LN2 = {32: (0.693145751953125, 1.4286068203094173e-06),
        64: (0.6931471805598903, 5.497923018708371e-14)}
# exp: inputs clamped to [lo, hi]; beyond, the result is 0 / inf anyway
_EXP_CLAMP = {32: (-104.0, 89.0), 64: (-746.0, 710.0)}
# expm1 rounds to -1 below this
_EXPM1_LO = {32: -30.0, 64: -40.0}
# tanh rounds to +-1 beyond this
_TANH_CLAMP = {32: 10.0, 64: 20.0}
# log: subnormal inputs are scaled by 2**shift first
_SUBNORMAL_SHIFT = {32: 25, 64: 54}


# ------------------------------------------------------------------ per-dtype builders
def _build(bits: int) -> dict:
    ft = np.float32 if bits == 32 else np.float64
    c = ft  # constant of the target dtype (a Python float would promote float32 to float64)
    zero, half, one, two = c(0.0), c(0.5), c(1.0), c(2.0)
    inf, nan = c(np.inf), c(np.nan)
    log2e = c(1 / math.log(2))
    ln2_hi, ln2_lo = c(_LN2[bits][0]), c(_LN2[bits][1])
    exp_q = tuple(c(v) for v in _EXP_Q[bits])
    expm1_q = tuple(c(v) for v in _EXPM1_Q[bits])
    log_q = tuple(c(v) for v in _LOG_Q[bits])
    erf_p = tuple(c(v) for v in _ERF_P[bits])
    exp_lo, exp_hi = c(_EXP_CLAMP[bits][0]), c(_EXP_CLAMP[bits][1])
    expm1_lo = c(_EXPM1_LO[bits])
    tanh_clamp = c(_TANH_CLAMP[bits])
    tiny = c(np.finfo(ft).tiny)
    sub_scale, sub_shift = c(2.0 ** _SUBNORMAL_SHIFT[bits]), c(_SUBNORMAL_SHIFT[bits])
    pieces = _ERFC_H[bits] * (3 // len(_ERFC_H[bits]))  # float32: one piece, used thrice
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
        # two scale factors: 2**n alone leaves the normal range at both ends, and p * 2**n1
        # is exact, so a subnormal result is rounded once
        n1 = np.floor(n * half)
        y = p * _pow2(n1) * _pow2(n - n1)
        return x if x != x else y

    @_helper
    def expm1(x):
        xc = x if x < exp_hi else exp_hi
        xc = xc if xc > expm1_lo else expm1_lo
        n = np.rint(xc * log2e)
        r = (xc - n * ln2_hi) - n * ln2_lo
        r2 = r * r
        em = r + (r2 * half + r2 * r * _horner(r, expm1_q))  # expm1(r), relative accuracy
        # expm1(x) = 2**n * (em + 1) - 1 = 2 * (s*em + (s - 1/2)) with s = 2**(n-1)
        s = _pow2(n - one)
        y = (s * em + (s - half)) * two
        return x if (x == zero) | (x != x) else y  # keeps -0.0 and NaN

    @numba.njit(inline="always")
    def _log1p_reduced(f):
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
        m, k = _split(x * sub_scale if sub else x)
        k = k - sub_shift if sub else k
        y = k * ln2_hi + (_log1p_reduced(m - one) + k * ln2_lo)
        y = -inf if x == zero else y
        y = nan if x < zero else y
        return x if not (x < inf) else y  # +inf and NaN come back as they are

    @_helper
    def log1p(x):
        u = one + x
        m, k = _split(u)
        # rounding error of u = 1 + x, relative to u (exact by construction, see k's range)
        c = (x - (u - one)) if k < two else (one - (u - x))
        near = k == zero  # u in [sqrt(.5), sqrt(2)): use x itself, no rounding to undo
        f = x if near else m - one
        k = zero if near else k
        c = zero if near else c / u
        y = k * ln2_hi + (_log1p_reduced(f) + (c + k * ln2_lo))
        y = -inf if x == -one else y
        y = nan if x < -one else y
        return x if (x == zero) | (not (x < inf)) else y

    @_helper
    def tanh(x):
        xc = tanh_clamp if x > tanh_clamp else x  # NaN stays NaN
        xc = -tanh_clamp if xc < -tanh_clamp else xc
        e = _call_inline(expm1, xc + xc)
        return e / (e + two)

    @_helper
    def sigmoid(x):
        # 1/(1+e) for x >= 0, e/(1+e) below (e = exp(-|x|) <= 1): one division, no overflow
        e = _call_inline(exp, -abs(x))
        return (one if x >= zero else e) / (one + e)

    @numba.njit(inline="always")
    def _erfcx(ax):
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
        large = one - _call_inline(exp, -(axc * axc)) * _erfcx(axc)
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
            s = _call_inline(sigmoid, vh)
            return x * (s + s * (one - s) * vl)
    else:
        @_exact_helper
        def gelu_tanh(x):
            # as for float32, with v = x * (k2 + ka2 * x^2) in double-float arithmetic
            # (compiled without contract, so the error terms are not fused away)
            x2 = x * x
            x2l = _fma(x, x, -x2)
            p = ka2_hi * x2
            pl = _fma(ka2_hi, x2, -p) + (ka2_hi * x2l + ka2_lo * x2)
            w = k2_hi + p
            bb = w - k2_hi
            wl = ((k2_hi - (w - bb)) + (p - bb)) + (pl + k2_lo)
            v = x * w
            vl = _fma(x, w, -v) + x * wl
            vl = vl if abs(v) < v_max else zero
            s = _call_inline(sigmoid, v)
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
        lo = _fma(x, x, -h)
        azc = az if az < erfc_xmax else erfc_xmax
        azc = azc if azc > erfc_lo else erfc_lo
        q = _call_inline(exp, -(h * half)) * (one - lo * half) * _erfcx(azc)
        q = q if az < erfc_xmax else zero
        w = one + z * _horner(z * z, erf_p)
        w = (two - q) if z >= one else w
        w = q if z < -erfc_lo else w
        return half * x * w

    return {"exp": exp, "expm1": expm1, "log": log, "log1p": log1p, "tanh": tanh,
            "sigmoid": sigmoid, "erf": erf, "gelu_tanh": gelu_tanh, "gelu_none": gelu_none}


_BY_WIDTH = {32: _build(32), 64: _build(64)}
#: Names of the unary float helpers, each available as ``name``, ``name_f32`` and ``name_f64``.
HELPERS = tuple(_BY_WIDTH[32])


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
        if _is_float(x):
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


# ------------------------------------------------------------------ assembly check
class AsmStats(NamedTuple):
    """What the x86 assembly of a compiled function's body shows."""

    packed: int
    """Packed (SIMD) floating-point arithmetic instructions: ``vmulps``, ``vfmadd231pd``..."""
    widest: int
    """Widest vector register those use, in bits (128, 256, 512); 0 when there are none."""
    calls: tuple
    """Call targets in the body (a libm ``expf``, a helper that was not inlined...)."""


_PACKED_OP = re.compile(
    r"^\s*v?(?:add|sub|mul|div|max|min|sqrt|fn?madd\w*|fn?msub\w*|round|rndscale|cmp\w*|"
    r"blendv)p[sd]\s+(.*)$")
_CALL = re.compile(r"^\s*call\w*\s+(\S+)")
_MOVABS = re.compile(r"^\s*movabsq\s+\$([^,]+),\s*(%\w+)")


def loop_asm_stats(dispatcher, signature=None) -> AsmStats:
    """Counts packed float arithmetic and lists calls in the body of a compiled Numba function
    (its first signature unless ``signature`` is given), from ``inspect_asm``.

    A kernel loop whose helpers inlined and vectorized shows ``packed > 0`` and no calls; a
    ``math.exp`` left as a libm call shows up in ``calls``. x86-64 mnemonics only.
    """
    sig = dispatcher.signatures[0] if signature is None else signature
    asm = dispatcher.inspect_asm(sig)
    body = asm.split(".Lfunc_end0", 1)[0]  # the function itself, not its CPython wrapper
    packed, widest, calls, loaded = 0, 0, [], {}
    for line in body.splitlines():
        m = _PACKED_OP.match(line)
        if m:
            packed += 1
            operands = m.group(1)
            for reg, bits in (("zmm", 512), ("ymm", 256), ("xmm", 128)):
                if reg in operands:
                    widest = max(widest, bits)
                    break
            continue
        m = _MOVABS.match(line)
        if m:
            loaded[m.group(2)] = m.group(1)
            continue
        m = _CALL.match(line)
        if m:
            target = m.group(1)
            calls.append(loaded.get(target.lstrip("*"), target))
    return AsmStats(packed, widest, tuple(calls))
