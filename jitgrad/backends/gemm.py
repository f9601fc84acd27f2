"""Matrix products for the Numba backend: a register-tiled micro-kernel written in LLVM IR.

NumPy's BLAS decides the speed of every matmul-bound workload (W2, W3), and the BLAS a NumPy
wheel ships does not always use the machine's widest vectors: on the 2-core AMD EPYC (Zen 5,
AVX-512) these benchmarks run on, OpenBLAS does not recognize the CPU and runs its AVX2
(Haswell) kernels, about 235 GFLOPS on both cores for W2's products.

This module computes ``C = A @ B`` for 2-D float32/float64 operands with a micro-kernel that
keeps an ``MR x NR`` tile of ``C`` in vector registers while it walks ``k``: per step it loads
``NV`` vectors of a row of ``B``, broadcasts ``MR`` elements of a column of ``A`` and issues
``MR * NV`` fused multiply-adds. It is emitted as LLVM IR with explicit vector types through a
Numba intrinsic, because Numba's own loops leave such a tile in memory (measured: 15 GFLOPS for
the same tile written as scalar Python). LLVM allocates the registers and picks the instruction
encodings for the host, so the same IR serves AVX-512, AVX2 and NEON machines; the vector width
follows the host's features. A ``prange`` over tiles spreads the tiles over Numba's threads.

Layouts: ``A`` may have any strides (its elements are broadcast one at a time); ``B`` must be
unit-stride along its columns. ``A @ B.T`` with both operands unit-stride along ``k`` (a
linear layer's forward, the input gradient of ``x @ W``) runs on a second kernel that computes
a tile of dot products, vectorized along ``k``; other layouts of ``B`` are copied first. The
result is always C-contiguous, as NumPy's is. ``k`` runs in blocks, rows in blocks sized for
L2, and tiles at the right and bottom edges on zero-padded copies. Products of ``PACK_MIN_ROWS``
rows or more first copy ``B`` panel by panel into a cache-line-aligned scratch array, so that
the ``k`` rows of a panel that the tiles walk are contiguous rather than ``n`` elements apart
(W3's three 2048 x 1024 x 1024 products: 5-9% faster on a Zen 4 host, the copy included).

``JITGRAD_GEMM=numpy`` sends every product to NumPy; the default, ``tiled``, uses these
kernels for 2-D float32/float64 products of at least ``MIN_FLOPS`` multiply-adds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from .. import _config

# Below this many multiply-adds a product is NumPy's: OpenBLAS runs such products on the calling
# thread (its SMP threshold, 65536 x GEMM_MULTITHREAD_THRESHOLD 4), so no BLAS worker threads
# wake up to compete with Numba's, and the call costs less than the kernel's set-up.
MIN_FLOPS = 1 << 18
PAGE_BYTES = 4096
CACHE_LINE = 64
# A @ B.T with a B.T of more than this many bytes copies B (in blocks, 0.8 ms for W3's 4 MiB)
# and runs the tiled kernel rather than the dot-product one, which streams B from L3 for each
# row of tiles (W3's input gradient: 12.7 ms instead of 16.3); W2's 1 MiB is faster as dot
# products (177 us against 250).
DOT_MAX_BYTES = 1 << 21
# Products of at least this many rows copy b into panels first (``gemm_kernel.pack_panels``):
# each panel is then read by m / MR tiles, which pays for the copy.
PACK_MIN_ROWS = 1024
# Scratch arrays (b's panels) up to this size are kept between products, per thread and dtype.
WORKSPACE_MAX_BYTES = 1 << 26


def applies(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``tiled`` can compute ``a @ b`` (2-D, one float32/float64 dtype, big enough)."""
    return (type(a) is np.ndarray and type(b) is np.ndarray and a.ndim == 2 and b.ndim == 2
            and a.dtype == b.dtype and a.dtype.char in "fd" and a.shape[1] == b.shape[0]
            and a.shape[0] * a.shape[1] * b.shape[1] >= MIN_FLOPS)


_loaded: set[tuple] = set()


def _call(fn, *args) -> None:
    # The first call of a driver for a dtype loads its machine code from Numba's cache without
    # the refresh of Numba's target context that Numba's own load does first (W2's first call
    # in a warm process: 0.2 s less).
    key = (fn.__name__, args[0].dtype.char)
    if key not in _loaded:
        _loaded.add(key)
        from .._numba_load import load_overload

        load_overload(fn, args)
    fn(*args)


def _unit_columns(x: np.ndarray) -> bool:
    return x.shape[1] <= 1 or x.strides[1] == x.itemsize


def tiled(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` by the tiled kernels (both 2-D, one float dtype; see ``applies``)."""
    from . import gemm_kernel as kernel

    m, k_len = a.shape
    n = b.shape[1]
    if a.size == 0 or b.size == 0:  # (NumPy gives empty arrays zero strides)
        return np.zeros((m, n), a.dtype)
    c = np.empty((m, n), a.dtype)
    nr = kernel.tile_columns(a.dtype)
    pack_b = m >= PACK_MIN_ROWS and n >= nr
    if not _unit_columns(b):
        lanes = kernel.VECTOR_BYTES // a.itemsize
        if (b.nbytes <= DOT_MAX_BYTES and _unit_columns(a) and _unit_columns(b.T)
                and k_len >= 4 * lanes and m >= kernel.MR_NT and n >= kernel.NR_NT):
            a_flat, a_si, _ = _flat(a)
            b_flat, b_sj, _ = _flat(b.T)
            _call(kernel.gemm_nt, a_flat, a_si, b_flat, b_sj, c, k_len, a.size > b.size)
            return c
        if not pack_b:
            # a row-major copy of b (not C.T = B.T @ A.T: that would return C transposed, and
            # the kernels after a product read it row by row: W2's bias gradient took 52 us,
            # not 7)
            b_flat, b_si, b_sj = _flat(b)
            b = np.empty(b.shape, b.dtype)
            _call(kernel.copy_blocked, b_flat, b_si, b_sj, b)
    a_flat, a_si, a_sk = _flat(a)
    # a stored transposed with its columns a page or more apart is packed into tiles first
    # (W3's weight gradient); closer ones read faster in place (W2's: 148 us, 199 packed)
    pack_a = a_si < a_sk and a_sk * a.itemsize >= PAGE_BYTES
    m_full = m - m % kernel.MR
    a_tiles = _workspace("a", m_full * k_len if pack_a and n >= nr else 0, a.dtype)
    if a_tiles.size:
        _call(kernel.pack_panels, a_flat, a_sk, a_si, k_len, m_full, a_tiles, kernel.MR)
    a_tiles = _read_only(a_tiles)
    b_flat, b_sk, b_sj = _flat(b)
    if pack_b:
        panels = _workspace("b", -(-n // nr) * nr * k_len, a.dtype)
        _call(kernel.pack_panels, b_flat, b_sk, b_sj, k_len, n, panels, nr)
        _call(kernel.gemm, a_flat, a_si, a_sk, _read_only(panels), nr, k_len * nr, c, k_len,
              a_tiles, True)
    else:
        _call(kernel.gemm, a_flat, a_si, a_sk, b_flat, b_sk, nr, c, k_len, a_tiles, False)
    return c


_workspaces = threading.local()


def _workspace(name: str, size: int, dtype: np.dtype) -> np.ndarray:
    """A 1-D scratch array ``name`` of ``size`` elements, kept per thread and dtype up to
    ``WORKSPACE_MAX_BYTES`` (a new array's pages fault in on every call: 0.3 ms for 4 MiB)."""
    if size * dtype.itemsize > WORKSPACE_MAX_BYTES:
        return _aligned_empty(size, dtype)
    key = name + dtype.char
    kept = getattr(_workspaces, key, None)
    if kept is None or kept.size < size:
        kept = _aligned_empty(size, dtype)
        setattr(_workspaces, key, kept)
    return kept[:size]


def _aligned_empty(size: int, dtype: np.dtype) -> np.ndarray:
    """``np.empty(size, dtype)`` starting on a cache line (NumPy's start 16 or 32 bytes into
    one, so that every 64-byte vector load of a panel would span two lines)."""
    spare = CACHE_LINE // dtype.itemsize
    buffer = np.empty(size + spare, dtype)
    start = -buffer.ctypes.data % CACHE_LINE // dtype.itemsize
    return buffer[start:start + size]


def _read_only(x: np.ndarray) -> np.ndarray:
    view = x.view()
    view.flags.writeable = False
    return view


def _flat(x: np.ndarray) -> tuple[np.ndarray, int, int]:
    """A 1-D view of the memory a 2-D array spans, from its first element, and its strides in
    elements (a contiguous copy first if a stride is negative or not a whole element)."""
    if x.flags.c_contiguous:
        flat, rows, cols = x.reshape(-1), x.shape[1], 1
    elif x.flags.f_contiguous:
        flat, rows, cols = x.T.reshape(-1), 1, x.shape[0]
    else:
        size = x.itemsize
        if any(s < 0 or s % size for s in x.strides):
            x = np.ascontiguousarray(x)
        rows, cols = x.strides[0] // size, x.strides[1] // size
        span = (x.shape[0] - 1) * rows + (x.shape[1] - 1) * cols + 1
        flat = np.lib.stride_tricks.as_strided(x, (span,), (size,), writeable=False)
    if flat.flags.writeable:  # (one Numba type for every operand: read-only)
        flat = _read_only(flat)
    return flat, rows, cols


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b``: by the tiled kernel where it applies, else by NumPy."""
    return tiled(a, b) if applies(a, b) else np.matmul(a, b)


def addmm(bias: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return bias + matmul(a, b)


def _numpy_addmm(bias: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return bias + np.matmul(a, b)


def implementations() -> dict[str, Callable[..., np.ndarray]]:
    """``mm`` and ``addmm`` as ``JITGRAD_GEMM`` selects, read when a program is compiled (not on
    each product: the lookup costs as much as a small kernel's launch)."""
    if _config.gemm_mode() == "numpy":
        return {"mm": np.matmul, "addmm": _numpy_addmm}
    return {"mm": matmul, "addmm": addmm}
