"""The scalar functions that rendered kernels call (names used by the ops' templates).

Templates name ``exp``, ``log``, ``max``, ``sign``, ... (see ``ops.registry.OpDef.template``);
the renderer calls them ``_jg_exp``, ``_jg_max``, ... and a kernel module imports them from
here. Each is a small ``@njit(inline="always")`` function, so LLVM sees through it and can
vectorize the loop around it. ``max``/``min`` propagate NaN as NumPy's ``maximum``/``minimum``
(and torch's) do. This module imports numba: only the Numba backends import it.
"""

from __future__ import annotations

import math
import sys

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

_inline = numba.njit(inline="always", cache=False)

NAMES = ("exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "erf",
         "max", "min", "abs", "sign", "gelu_none", "gelu_tanh", "floor", "ceil", "trunc", "round",
         "isfinite", "isinf", "atan2", "hypot", "fmod_f", "fmod_i", "remainder_f",
         "remainder_i", "floordiv_f", "floordiv_i", "truncdiv_i", "asin", "acos", "atan", "sinh",
         "cosh", "asinh", "acosh", "atanh", "log2", "log10", "exp2", "erfc")
__all__ = [f"_jg_{name}" for name in NAMES] + ["_jg_hugepages"]


@_inline
def _jg_exp(x):
    return math.exp(x)


@_inline
def _jg_log(x):
    return math.log(x)


@_inline
def _jg_log1p(x):
    return math.log1p(x)


@_inline
def _jg_expm1(x):
    return math.expm1(x)


@_inline
def _jg_sqrt(x):
    return math.sqrt(x)


@_inline
def _jg_sin(x):
    return math.sin(x)


@_inline
def _jg_cos(x):
    return math.cos(x)


@_inline
def _jg_tan(x):
    return math.tan(x)


@_inline
def _jg_tanh(x):
    return math.tanh(x)


@_inline
def _jg_sigmoid(x):
    # eager mode's stable form: e/(1+e) below 0, 1/(1+e) above, with e = exp(-|x|)
    e = math.exp(-abs(x))
    return (e if x < 0 else e - e + 1) / (1 + e)


@_inline
def _jg_erf(x):
    return math.erf(x)


@_inline
def _jg_max(a, b):
    # NumPy's maximum: NaN if either is NaN (``a != a`` is false for integers and folds away)
    return a if (a > b or a != a) else b


@_inline
def _jg_min(a, b):
    return a if (a < b or a != a) else b


@_inline
def _jg_abs(x):
    return abs(x)


@_inline
def _jg_sign(x):
    if x > 0:
        return 1
    if x < 0:
        return -1
    return 0  # zeros and NaN (torch's sign: (0 < x) - (x < 0))


@_inline
def _jg_floor(x):
    return np.floor(x)


@_inline
def _jg_ceil(x):
    return np.ceil(x)


@_inline
def _jg_trunc(x):
    return np.trunc(x)


@_inline
def _jg_round(x):
    return np.rint(x)  # halves to even, as torch.round


@_inline
def _jg_isfinite(x):
    return np.isfinite(x)


@_inline
def _jg_isinf(x):
    return np.isinf(x)


@_inline
def _jg_atan2(a, b):
    return math.atan2(a, b)


@_inline
def _jg_hypot(a, b):
    return math.hypot(a, b)


# The division family on floats and on integers (``bool`` included): NumPy's loops, value for
# value (``npy_fmod``, ``npy_remainder``, ``npy_floor_divide``). A template picks the ``_f`` or
# ``_i`` helper by its compute dtype. An integer divisor of 0 gives 0 (NumPy's value; torch
# raises "ZeroDivisionError" there), and -1 is taken apart so no kernel divides the lowest
# integer by -1 (a hardware trap).
@_inline
def _jg_fmod_f(a, b):
    return np.fmod(a, b)


@_inline
def _jg_remainder_f(a, b):
    mod = np.fmod(a, b)
    if not b:
        return mod
    if mod:
        if (b < 0) != (mod < 0):
            mod += b
    return mod  # (a zero keeps fmod's sign, the dividend's, as torch's kernel)


@_inline
def _jg_floordiv_f(a, b):
    if not b:
        return a / b
    mod = np.fmod(a, b)
    div = (a - mod) / b
    if mod and (b < 0) != (mod < 0):
        div -= np.abs(np.sign(b))  # (1 in b's dtype: a float32 stays float32)
    if div:
        fl = np.floor(div)
        return np.ceil(div) if div - fl > 0.5 else fl
    return np.copysign(div, a / b)


@_inline
def _jg_fmod_i(a, b):
    if b == 0 or b == -1:
        return a - a
    r = a % b
    return r - b if r != 0 and (r < 0) != (a < 0) else r


@_inline
def _jg_remainder_i(a, b):
    if b == 0 or b == -1:
        return a - a
    return a % b


@_inline
def _jg_floordiv_i(a, b):
    if b == 0:
        return a - a
    if b == -1:
        return -a
    return a // b


@_inline
def _jg_truncdiv_i(a, b):
    if b == 0:
        return a - a
    if b == -1:
        return -a
    q = a // b
    if q < 0 and q * b != a:  # the floor quotient of an inexact negative division: one up
        return q + 1
    return q


@_inline
def _jg_gelu_none(x):
    return 0.5 * x * (1.0 + math.erf(x * 0.7071067811865476))


@_inline
def _jg_gelu_tanh(x):
    return 0.5 * x * (1.0 + math.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


# The transcendental functions come from ``numba_math``: polynomial, branch-free versions that
# LLVM vectorizes (the ``math`` module's become scalar libm calls in every loop iteration).
# Their accuracy and special values are documented and tested there.
from . import numba_math  # noqa: E402

_jg_exp = numba_math.exp
_jg_log = numba_math.log
_jg_log1p = numba_math.log1p
_jg_expm1 = numba_math.expm1
_jg_tanh = numba_math.tanh
_jg_sigmoid = numba_math.sigmoid
_jg_erf = numba_math.erf
_jg_gelu_none = numba_math.gelu_none
_jg_gelu_tanh = numba_math.gelu_tanh


# ------------------------------------------------------------------ output arrays' pages
# A kernel's outputs are fresh arrays, and their first write faults their pages in. NumPy asks
# Linux for transparent huge pages on every allocation of at least 4 MiB (``madvise``); an
# array that a Numba program allocates (``np.empty`` in nopython mode: NRT's ``malloc``) gets
# no such advice, so writing it faults in 4 KiB pages, 512 times as many faults: W1 at 1e7
# elements (two 40 MB gradients) spent 25 of its 46 ms in them. A kernel therefore gives each
# full-size output the same advice as NumPy before its loop (one system call per large array;
# a no-op where the pages are already advised or in use, and off Linux).
HUGEPAGE_MIN_BYTES = 4 << 20  # NumPy's threshold
_MADV_HUGEPAGE = 14  # <sys/mman.h> on Linux
_PAGE = 4096


@intrinsic
def _madvise(typingctx, addr, length, advice):
    """``madvise(addr, length, advice)`` from libc (a direct call: a kernel using it can still
    be cached on disk, which a ctypes function pointer would prevent)."""
    if not all(isinstance(t, types.Integer) for t in (addr, length, advice)):
        return None
    sig = types.int32(types.uintp, types.uintp, types.int32)

    def codegen(context, builder, sig, args):
        i8p = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.IntType(32), [i8p, args[1].type, ir.IntType(32)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "madvise")
        return builder.call(fn, [builder.inttoptr(args[0], i8p), args[1], args[2]])

    return sig, codegen


def hugepage_range(address: int, nbytes: int) -> tuple[int, int]:
    """The page-aligned part ``(start, length)`` of the memory ``[address, address + nbytes)``
    that ``_jg_hugepages`` advises (length 0: nothing to advise), as NumPy computes it."""
    if nbytes < HUGEPAGE_MIN_BYTES:
        return address, 0
    offset = (_PAGE - address % _PAGE) % _PAGE
    return address + offset, nbytes - offset


if sys.platform.startswith("linux"):
    @_inline
    def _jg_hugepages(a):
        # hugepage_range, in nopython mode
        nbytes = np.uint64(a.size) * np.uint64(a.itemsize)
        if nbytes >= np.uint64(HUGEPAGE_MIN_BYTES):
            address = np.uint64(a.ctypes.data)
            offset = (np.uint64(_PAGE) - address % np.uint64(_PAGE)) % np.uint64(_PAGE)
            return _madvise(address + offset, nbytes - offset, np.int32(_MADV_HUGEPAGE))
        return np.int32(0)
else:
    @_inline
    def _jg_hugepages(a):
        return np.int32(0)


# asin ... erfc (elementwise2's templates)


@_inline
def _jg_asin(x):
    return math.asin(x)


@_inline
def _jg_acos(x):
    return math.acos(x)


@_inline
def _jg_atan(x):
    return math.atan(x)


@_inline
def _jg_sinh(x):
    return math.sinh(x)


@_inline
def _jg_cosh(x):
    return math.cosh(x)


@_inline
def _jg_asinh(x):
    return math.asinh(x)


@_inline
def _jg_acosh(x):
    return math.acosh(x)


@_inline
def _jg_atanh(x):
    return math.atanh(x)


@_inline
def _jg_log2(x):
    return math.log2(x)


@_inline
def _jg_log10(x):
    return math.log10(x)


@_inline
def _jg_erfc(x):
    return math.erfc(x)


@_inline
def _jg_exp2(x):
    return 2.0 ** x


# signbit, copysign, nextafter (elementwise3's templates)
NAMES = NAMES + ("signbit", "copysign", "nextafter")
__all__ += ["_jg_signbit", "_jg_copysign", "_jg_nextafter"]


@_inline
def _jg_signbit(x):
    return math.copysign(1.0, x) < 0.0


@_inline
def _jg_copysign(x, y):
    return math.copysign(x, y)


@_inline
def _jg_nextafter(x, y):
    return math.nextafter(x, y)
