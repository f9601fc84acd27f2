"""Bit-level Numba intrinsics for ``numba_math``'s helpers: powers of two and mantissa splits
built from a float's bits, ``ldexp`` (one ``vscalef`` with AVX-512) and an explicit FMA.

They take and return floats of one width, so a loop calling them still vectorizes."""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

# (total width, mantissa bits, exponent bias) of float32 and float64
LAYOUT = {32: (32, 23, 127), 64: (64, 52, 1023)}
# bit patterns of sqrt(0.5) rounded to float32 / float64
SQRT_HALF_BITS = {32: 0x3F3504F3, 64: 0x3FE6A09E667F3BCD}


def is_float(t) -> bool:
    return isinstance(t, types.Float) and t.bitwidth in LAYOUT


@intrinsic
def pow2(typingctx, n):
    """2.0**n for a float n holding an integer in the normal exponent range (-126..127 for
    float32, -1022..1023 for float64), built from bits without a float-to-int conversion."""
    if not is_float(n):
        return None

    def codegen(context, builder, sig, args):
        width, mbits, bias = LAYOUT[n.bitwidth]
        ity = ir.IntType(width)
        # n + 1.5*2**mbits is exact; its low mantissa bits hold 2**(mbits-1) + n
        shifted = builder.fadd(args[0], ir.Constant(args[0].type, float(3 << (mbits - 1))))
        bits = builder.add(builder.bitcast(shifted, ity), ir.Constant(ity, bias))
        # shifting left by mbits drops everything but (n + bias) into the exponent field
        bits = builder.shl(bits, ir.Constant(ity, mbits))
        return builder.bitcast(bits, args[0].type)

    return n(n), codegen


@intrinsic
def ldexp(typingctx, p, n):
    """p * 2.0**n rounded once (``llvm.ldexp``), for a float n holding an integer that is finite
    and within int32 (callers clamp first: converting NaN or a huge value is undefined).

    With AVX-512 it is one ``vscalefps``/``vscalefpd`` per vector, which also overflows to inf
    and rounds subnormal results correctly; used only where ``SCALEF`` says so, since without
    AVX-512 LLVM lowers it to a libm call that stops the loop from vectorizing."""
    if not (is_float(p) and p == n):
        return None

    def codegen(context, builder, sig, args):
        ty, i32 = args[0].type, ir.IntType(32)
        name = f"llvm.ldexp.f{p.bitwidth}.i32"
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ty, [ty, i32]), name)
        return builder.call(fn, [args[0], builder.fptosi(args[1], i32)])

    return p(p, n), codegen


def target_has_avx512() -> bool:
    """Whether Numba compiles for a CPU with AVX-512F (``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES``
    respected: a portable ``generic`` target has none)."""
    from numba.core import config

    if config.CPU_FEATURES is not None:
        features = config.CPU_FEATURES
    elif config.CPU_NAME not in (None, "host"):
        return False
    else:
        import llvmlite.binding as llvm

        features = llvm.get_host_cpu_features().flatten()
    return "+avx512f" in features.split(",")


# exp's final scaling by 2**n: one vscalef with AVX-512 (measured on Zen 5: float32 exp 11 ->
# 8 cycles per 16 lanes), else two exact power-of-two factors built from bits
SCALEF = target_has_avx512()


@intrinsic
def split(typingctx, x):
    """(m, k) with x = m * 2**k and m in [sqrt(0.5), sqrt(2)), for a positive normal x."""
    if not is_float(x):
        return None

    def codegen(context, builder, sig, args):
        width, mbits, bias = LAYOUT[x.bitwidth]
        ity = ir.IntType(width)
        s = SQRT_HALF_BITS[x.bitwidth]
        # adding 1.0 - sqrt(0.5) (as bits) carries into the exponent exactly when the
        # mantissa is >= sqrt(2)/2 * 2, which makes m land in [sqrt(0.5), sqrt(2))
        b = builder.add(builder.bitcast(args[0], ity), ir.Constant(ity, (bias << mbits) - s))
        k = builder.sub(builder.ashr(b, ir.Constant(ity, mbits)), ir.Constant(ity, bias))
        mb = builder.add(builder.and_(b, ir.Constant(ity, (1 << mbits) - 1)), ir.Constant(ity, s))
        m = builder.bitcast(mb, args[0].type)
        kf = builder.sitofp(k, args[0].type)
        return context.make_tuple(builder, sig.return_type, (m, kf))

    return types.UniTuple(x, 2)(x), codegen


@intrinsic
def fma(typingctx, a, b, c):
    """a * b + c with one rounding (llvm.fma: one instruction on x86-64 with FMA3)."""
    if not (is_float(a) and a == b == c):
        return None

    def codegen(context, builder, sig, args):
        ty = args[0].type
        name = f"llvm.fma.f{a.bitwidth}"
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ty, [ty] * 3), name)
        return builder.call(fn, args)

    return a(a, b, c), codegen
