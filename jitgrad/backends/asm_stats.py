"""Reading a compiled Numba function's x86 assembly: did its loop vectorize, is a call left?

Used by the tests (and by anyone checking a kernel) to prove that a loop over the
``numba_math`` helpers compiles to packed SIMD code with no libm call in it.
"""

from __future__ import annotations

import re
from typing import NamedTuple


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
    ``math.exp`` left as a libm call shows up in ``calls``. x86-64 mnemonics only, and not for
    a function loaded from Numba's cache (Numba cannot show its assembly).
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
