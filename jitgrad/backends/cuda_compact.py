"""Ops whose result has a size that depends on the data: ``nonzero``, ``masked_select``, and
``masked_scatter`` (which reads its source in the order of the mask's True elements).

What a GPU does: the flat mask is cut into chunks; a first kernel counts each chunk's True
elements (one thread per chunk), a block-wise scan turns the counts into each chunk's start (an
exclusive prefix sum over the chunks: ``exclusive_scan``), and the total is the one number read back
to the host (the result's size; torch synchronizes there too). A third kernel then has each
chunk's thread write its elements from its start, in order, so results come in row-major order
as on the CPU.
"""

from __future__ import annotations

import numpy as np

from .. import _cuda_array as ca
from .. import dtypes
from .._cuda_array import CudaArray, simulated
from ..ops import registry
from .cuda_lines import contiguous
from .numba_cuda import block_size, compile_source, full, launch_config

CHUNK = 256
SIM_CHUNK = 4

_COUNT = """def count(m, counts, n, chunk, nchunks):
    for c in range(cuda.grid(1), nchunks, cuda.gridsize(1)):
        k = 0
        end = (c + 1) * chunk
        if end > n:
            end = n
        for e in range(c * chunk, end):
            if m[e]:
                k += 1
        counts[c] = k
"""
# An exclusive prefix sum of the counts, block by block: each block scans its piece in shared
# memory (Hillis-Steele) and writes its total; the totals are scanned the same way (one level
# per factor of the block size) and added back to each block's piece.
_SCAN = """def scan(a, sums, n):
    sh = cuda.shared.array({B}, np.int64)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * {B} + tid
    v = a[i] if i < n else 0
    sh[tid] = v
    cuda.syncthreads()
    off = 1
    while off < {B}:
        t = sh[tid - off] if tid >= off else 0
        cuda.syncthreads()
        sh[tid] += t
        cuda.syncthreads()
        off *= 2
    if i < n:
        a[i] = sh[tid] - v
    if tid == {B} - 1:
        sums[cuda.blockIdx.x] = sh[tid]
"""
_ADD = """def add(a, sums, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        a[i] += sums[i // {B}]
"""


def exclusive_scan(a: CudaArray) -> None:
    """Replaces the int64 values of the flat array ``a`` by their exclusive prefix sum."""
    n = a.size
    block = block_size()
    blocks = -(-n // block)
    sums = ca.empty((blocks,), np.int64)
    compile_source(_SCAN.format(B=block), "scan")[blocks, block](a.dev(), sums.dev(), n)
    if blocks > 1:
        exclusive_scan(sums)
        _launch(_ADD.format(B=block), "add", n, a.dev(), sums.dev(), n)


_WRITE = """def write(m, counts, n, chunk, nchunks, {ARGS}):
    for c in range(cuda.grid(1), nchunks, cuda.gridsize(1)):
        pos = counts[c]
        end = (c + 1) * chunk
        if end > n:
            end = n
        for e in range(c * chunk, end):
{BODY}
"""
_BODIES = {
    "nonzero": """            if m[e]:
                q = e
                for d in range(nd - 1, -1, -1):
                    out[pos, d] = q % dims[d]
                    q = q // dims[d]
                pos += 1""",
    "select": """            if m[e]:
                out[pos] = x[e]
                pos += 1""",
    "scatter": """            if m[e]:
                out[e] = src[pos]
                pos += 1
            else:
                out[e] = x[e]""",
}
_ARGS = {"nonzero": "dims, nd, out", "select": "x, out", "scatter": "x, src, out"}


def _launch(src: str, name: str, count: int, *args) -> None:
    blocks, threads = launch_config(count)
    compile_source(src, name)[blocks, threads](*args)


def _flat(a: CudaArray, shape: tuple) -> CudaArray:
    """``a`` broadcast to ``shape``, as a flat contiguous array."""
    pad = (1,) * (len(shape) - a.ndim) + a.shape
    strides = (0,) * (len(shape) - a.ndim) + a.strides
    b = a.view(shape, tuple(0 if p != s else st for p, s, st in zip(pad, shape, strides)),
               a.offset)
    return contiguous(b).view((b.size,))


def _starts(m: CudaArray) -> tuple[CudaArray, int, int, int]:
    """Each chunk's start in the result (``counts``), the number of True elements, the chunk
    size and the number of chunks."""
    n = m.size
    chunk = SIM_CHUNK if simulated() else CHUNK
    nchunks = -(-n // chunk)
    counts = full((nchunks + 1,), 0, np.int64)
    if nchunks:
        _launch(_COUNT, "count", nchunks, m.dev(), counts.dev(), n, chunk, nchunks)
    exclusive_scan(counts)  # (its last element, 0 before: the total)
    total = int(counts.view((1,), (1,), counts.offset + nchunks).copy_to_host()[0])
    return counts, total, chunk, nchunks


def _write(kind: str, m, counts, n, chunk, nchunks, *args) -> None:
    if nchunks:
        src = _WRITE.format(ARGS=_ARGS[kind], BODY=_BODIES[kind])
        _launch(src, "write", nchunks, m.dev(), counts.dev(), n, chunk, nchunks, *args)


def nonzero(x: CudaArray) -> CudaArray:
    """The ``(count, ndim)`` int64 indices of the non-zero elements of ``x``, row-major."""
    m = _flat(x, x.shape)
    counts, total, chunk, nchunks = _starts(m)
    out = ca.empty((total, x.ndim), np.int64)
    if total and x.ndim:
        dims = ca.to_device(np.array(x.shape, dtype=np.int64))
        _write("nonzero", m, counts, m.size, chunk, nchunks, dims.dev(), x.ndim, out.dev())
    return out


def masked_select(x: CudaArray, mask: CudaArray) -> CudaArray:
    """The elements of ``x`` where ``mask`` is True (both broadcast), as a 1-D array."""
    shape = registry.broadcast_shapes(x.shape, mask.shape)
    m, xs = _flat(mask, shape), _flat(x, shape)
    counts, total, chunk, nchunks = _starts(m)
    out = ca.empty((total,), x.dtype)
    if total:
        _write("select", m, counts, m.size, chunk, nchunks, xs.dev(), out.dev())
    return out


def masked_scatter(x: CudaArray, mask: CudaArray, source: CudaArray) -> CudaArray:
    """``x`` (broadcast with ``mask``) with its masked positions filled, in order, from
    ``source``."""
    shape = registry.broadcast_shapes(x.shape, mask.shape)
    m, xs = _flat(mask, shape), _flat(x, shape)
    counts, total, chunk, nchunks = _starts(m)
    if total > source.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    src = contiguous(source).view((source.size,)) if source.size else xs
    out = ca.empty((m.size,), x.dtype)
    _write("scatter", m, counts, m.size, chunk, nchunks, xs.dev(), src.dev(), out.dev())
    return out.view(shape)


# ---------------------------------------------------------------- eager entry points
def _nonzero_op(op, args, params):
    return nonzero(args[0]._data), dtypes.int64


def _masked_select_op(op, args, params):
    x, mask = args
    return masked_select(x._data, mask._data), x._dtype


def _masked_scatter_op(op, args, params):
    from .cuda_eager import unsupported

    x, mask, source = args
    if source._dtype is not x._dtype:
        raise unsupported(op, "a source of another dtype")
    return masked_scatter(x._data, mask._data, source._data), x._dtype


BY_NAME = {"nonzero": _nonzero_op, "masked_select": _masked_select_op,
           "masked_scatter": _masked_scatter_op}
__all__ = ["BY_NAME", "nonzero", "masked_select", "masked_scatter"]
