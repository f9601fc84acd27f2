"""The compiled part of ``gemm``: the tile intrinsic (LLVM IR with explicit vectors) and the
parallel driver over tiles, compiled once per dtype and kept in Numba's cache.

Imports Numba and llvmlite; ``gemm`` imports this module on its first tiled product only.
"""

from __future__ import annotations

import llvmlite.binding as llvm
import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _vector_bytes() -> int:
    features = llvm.get_host_cpu_features()
    if features.get("avx512f", False):
        return 64
    if features.get("avx", False):
        return 32
    return 16


#: Bytes per vector register on this host.
VECTOR_BYTES = _vector_bytes()
#: Vectors per tile row. With ``MR`` rows, ``MR * NV`` accumulators, ``NV`` vectors of ``B``
#: and one broadcast fit the register file (32 vector registers with AVX-512 and on ARM, 16
#: with AVX2).
NV = 2
#: Rows per tile.
MR = 6 if VECTOR_BYTES == 32 else 8
#: ``k`` per block: a ``KC x NR`` block of ``b`` (32 KiB in float32 with AVX-512) fits L1.
KC = 256
#: Bytes of ``a`` per block of rows (``mc x KC``), meant to stay in L2.
A_BLOCK_BYTES = 1 << 18
#: Rows and columns of a dot-product tile (``tile_nt``): 24 accumulators, 4 + 1 vector loads
MR_NT, NR_NT = 4, 6


def tile_columns(dtype: np.dtype) -> int:
    """Columns per tile (``NR``) for ``dtype``."""
    return NV * VECTOR_BYTES // np.dtype(dtype).itemsize


def _vector_types(size: int):
    """``(element, lanes, vector type, intrinsic suffix)`` for ``size``-byte floats."""
    element = ir.FloatType() if size == 4 else ir.DoubleType()
    lanes = VECTOR_BYTES // size
    return element, lanes, ir.VectorType(element, lanes), f"v{lanes}{'f32' if size == 4 else 'f64'}"


def _data_pointers(context, builder, signature, args, positions):
    return [context.make_array(signature.args[p])(context, builder, args[p]).data
            for p in positions]


def _k_loop(builder, vec, n_accumulators: int, bound, step: int, name: str, body):
    """Emit ``for k in range(0, bound, step)`` carrying ``n_accumulators`` vectors that start at
    zero; ``body(k, accumulators)`` emits one step and returns the updated vectors. Leaves the
    builder after the loop and returns the accumulators' final values."""
    i64 = ir.IntType(64)
    entry = builder.basic_block
    head = builder.append_basic_block(f"{name}_head")
    step_block = builder.append_basic_block(f"{name}_body")
    done = builder.append_basic_block(f"{name}_done")
    builder.branch(head)

    builder.position_at_end(head)
    k = builder.phi(i64)
    k.add_incoming(ir.Constant(i64, 0), entry)
    accumulators = [builder.phi(vec) for _ in range(n_accumulators)]
    for acc in accumulators:
        acc.add_incoming(ir.Constant(vec, None), entry)
    builder.cbranch(builder.icmp_signed("<", k, bound), step_block, done)

    builder.position_at_end(step_block)
    updated = body(k, accumulators)
    k.add_incoming(builder.add(k, ir.Constant(i64, step)), builder.basic_block)
    for acc, new in zip(accumulators, updated):
        acc.add_incoming(new, builder.basic_block)
    builder.branch(head)

    builder.position_at_end(done)
    return accumulators


def _codegen(size: int, nv: int):
    _, lanes, vec, suffix = _vector_types(size)
    i32, i64 = ir.IntType(32), ir.IntType(64)

    def codegen(context, builder, signature, args):
        _, a_off, a_si, a_sk, _, b_off, b_sk, _, c_off, c_si, k_len, accumulate = args
        a_ptr, b_ptr, c_ptr = _data_pointers(context, builder, signature, args, (0, 4, 7))
        fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vec, [vec] * 3),
                                             f"llvm.fma.{suffix}")

        def vector_at(base, offset):
            return builder.bitcast(builder.gep(base, [offset]), vec.as_pointer())

        def step(k, accumulators):
            b_row = builder.add(b_off, builder.mul(k, b_sk))
            b_vectors = [builder.load(vector_at(b_ptr, builder.add(
                b_row, ir.Constant(i64, v * lanes))), align=size) for v in range(nv)]
            a_col = builder.add(a_off, builder.mul(k, a_sk))
            undef = ir.Constant(vec, ir.Undefined)
            splat = ir.Constant(ir.VectorType(i32, lanes), [0] * lanes)
            updated = []
            for r in range(MR):
                at = builder.add(a_col, builder.mul(ir.Constant(i64, r), a_si))
                scalar = builder.load(builder.gep(a_ptr, [at]), align=size)
                broadcast = builder.shuffle_vector(
                    builder.insert_element(undef, scalar, ir.Constant(i32, 0)), undef, splat)
                for v in range(nv):
                    updated.append(builder.call(fma, [broadcast, b_vectors[v],
                                                      accumulators[r * nv + v]]))
            return updated

        accumulators = _k_loop(builder, vec, MR * nv, k_len, 1, "tile_k", step)
        pointers = [vector_at(c_ptr, builder.add(builder.add(c_off, builder.mul(
            ir.Constant(i64, r), c_si)), ir.Constant(i64, v * lanes)))
            for r in range(MR) for v in range(nv)]
        with builder.if_else(builder.icmp_signed("!=", accumulate, ir.Constant(i64, 0))) as (
                adding, storing):
            with adding:
                for acc, pointer in zip(accumulators, pointers):
                    builder.store(builder.fadd(builder.load(pointer, align=size), acc), pointer,
                                  align=size)
            with storing:
                for acc, pointer in zip(accumulators, pointers):
                    builder.store(acc, pointer, align=size)
        return context.get_dummy_value()

    return codegen


def _make_tile(nv: int):
    def tile(typingctx, a, a_off, a_si, a_sk, b, b_off, b_sk, c, c_off, c_si, k_len, accumulate):
        size = np.dtype(str(a.dtype)).itemsize
        signature = types.void(a, a_off, a_si, a_sk, b, b_off, b_sk, c, c_off, c_si, k_len,
                               accumulate)
        return signature, _codegen(size, nv)

    tile.__name__ = f"tile_{nv}"
    return intrinsic(tile)


#: ``tile(a, a_off, a_si, a_sk, b, b_off, b_sk, c, c_off, c_si, k_len, accumulate)``:
#: ``c[c_off + r*c_si + j] (+)= sum_k a[a_off + r*a_si + k*a_sk] * b[b_off + k*b_sk + j]`` for
#: ``r < MR``, ``j < NR`` (offsets and strides in elements; one float dtype), ``+=`` when
#: ``accumulate`` is not 0.
tile = _make_tile(NV)
#: ``tile`` one vector wide (``j < NR / NV``), for the last panel of a narrow product.
tile_narrow = _make_tile(1)


def _compiled(fn):
    # cache=True: a later process loads the machine code from Numba's cache instead of
    # compiling it again (seconds: parallel loops are slow to compile).
    options = {"parallel": True, "nogil": True, "error_model": "numpy"}
    try:
        return numba.njit(cache=True, **options)(fn)
    except RuntimeError:  # no writable cache location: compile in every process instead
        return numba.njit(**options)(fn)


def _codegen_nt(size: int):
    element, lanes, vec, suffix = _vector_types(size)
    i64 = ir.IntType(64)

    def codegen(context, builder, signature, args):
        _, a_off, a_si, _, b_off, b_sj, _, k_main = args
        a_ptr, b_ptr, c_ptr = _data_pointers(context, builder, signature, args, (0, 3, 6))
        fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vec, [vec] * 3),
                                             f"llvm.fma.{suffix}")
        reduce_add = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(element, [element, vec]),
            f"llvm.vector.reduce.fadd.{suffix}")

        def vector_at(base, offset):
            return builder.load(builder.bitcast(builder.gep(base, [offset]), vec.as_pointer()),
                                align=size)

        def step(k, accumulators):
            a_vectors = [vector_at(a_ptr, builder.add(builder.add(a_off, k),
                                                      builder.mul(ir.Constant(i64, r), a_si)))
                         for r in range(MR_NT)]
            updated = [None] * (MR_NT * NR_NT)
            for j in range(NR_NT):
                b_vector = vector_at(b_ptr, builder.add(builder.add(b_off, k),
                                                        builder.mul(ir.Constant(i64, j), b_sj)))
                for r in range(MR_NT):
                    updated[r * NR_NT + j] = builder.call(
                        fma, [a_vectors[r], b_vector, accumulators[r * NR_NT + j]])
            return updated

        accumulators = _k_loop(builder, vec, MR_NT * NR_NT, k_main, lanes, "tile_nt", step)
        for q, acc in enumerate(accumulators):
            total = builder.call(reduce_add, [ir.Constant(element, 0.0), acc],
                                 fastmath=("reassoc",))
            builder.store(total, builder.gep(c_ptr, [ir.Constant(i64, q)]))
        return context.get_dummy_value()

    return codegen


@intrinsic
def tile_nt(typingctx, a, a_off, a_si, b, b_off, b_sj, c, k_main):
    """``c[r*NR_NT + j] = sum_{k < k_main} a[a_off + r*a_si + k] * b[b_off + j*b_sj + k]`` for
    ``r < MR_NT``, ``j < NR_NT`` (both operands unit-stride along ``k``; ``k_main`` a whole
    number of vectors)."""
    size = np.dtype(str(a.dtype)).itemsize
    return types.void(a, a_off, a_si, b, b_off, b_sj, c, k_main), _codegen_nt(size)


@_compiled
def gemm_nt(a, a_si, b, b_sj, c, k_len, rows_outer):
    """``c[i, j] = sum_k a[i*a_si + k] * b[j*b_sj + k]`` for ``c`` C-contiguous with at least
    ``MR_NT`` rows and ``NR_NT`` columns: dot products, both operands unit-stride along ``k``.
    The last tile of a row or column is moved back to end at the edge (it overlaps its
    neighbour, which computes the same values), so every tile is whole. Tiles are visited
    row of tiles by row of tiles when ``rows_outer``, else column by column."""
    m, n = c.shape
    lanes = VECTOR_BYTES // c.itemsize
    k_main = k_len - k_len % lanes
    ni, nj = (m + MR_NT - 1) // MR_NT, (n + NR_NT - 1) // NR_NT
    outer, inner = (ni, nj) if rows_outer else (nj, ni)
    for p_index in numba.prange(outer):
        p = np.int64(p_index)  # (a prange index may be unsigned)
        sums = np.empty(MR_NT * NR_NT, c.dtype)
        for q in range(inner):
            ib, jb = (p, q) if rows_outer else (q, p)
            i0, j0 = min(ib * MR_NT, m - MR_NT), min(jb * NR_NT, n - NR_NT)
            tile_nt(a, i0 * a_si, a_si, b, j0 * b_sj, b_sj, sums, k_main)
            for r in range(MR_NT):
                for j in range(NR_NT):
                    total = sums[r * NR_NT + j]
                    for k in range(k_main, k_len):
                        total += a[(i0 + r) * a_si + k] * b[(j0 + j) * b_sj + k]
                    c[i0 + r, j0 + j] = total


@_compiled
def gemm(a, a_si, a_sk, b, b_sk, b_sp, c, k_len, a_tiles, b_packed):
    """``c[i, j] = sum_k a[i*a_si + k*a_sk] * b[k*b_sk + j]`` for ``c`` C-contiguous and
    ``k_len`` > 0 (``a`` and ``b`` are flat views of the operands' memory, so that one
    specialization per dtype serves every layout). Panel ``p`` (columns ``p*NR`` on) of ``b``
    starts at ``p*b_sp``: ``b_sp`` is ``NR`` for ``b`` as it is stored, ``k_len * NR`` for ``b``
    packed by ``pack_panels`` (``b_packed``, with ``b_sk`` = ``NR``).

    Whole tiles go in blocks of ``mc`` rows by one panel of ``NR`` columns, ``k`` in blocks of
    ``KC``: a panel's ``KC x NR`` block of ``b`` stays in L1 while the tiles of the block of rows
    pass, and the block's ``mc x KC`` rows of ``a`` stay in L2 while the panels pass. Tiles at
    the right and bottom edges then run on zero-padded copies (or the packed last panel, which
    is zero-padded), so that no load or store leaves the arrays.

    With ``a_tiles`` not empty, the whole tiles read their rows of ``a`` from there: ``a``'s
    first ``m - m % MR`` rows packed by ``pack_panels`` (``a.T`` by panels ``MR`` wide: tile by
    tile, ``k``-major). For an ``a`` stored transposed, whose columns are far apart (a page apart
    in W3's backward), the tiles then read it in order."""
    m, n = c.shape
    size = c.itemsize
    nr = NV * VECTOR_BYTES // size
    m_full, n_full = m - m % MR, n - n % nr
    # blocks of rows of at most A_BLOCK_BYTES, all about the same size: the (block, panel)
    # pairs are shared out to the threads in equal counts
    mc_max = max(MR, A_BLOCK_BYTES // (KC * size) // MR * MR)
    n_mb, nj = (m_full + mc_max - 1) // mc_max, n_full // nr
    mc = (m_full // MR + n_mb - 1) // max(n_mb, 1) * MR
    if a_tiles.size:
        a_main, tile_step, main_si, main_sk = a_tiles, MR * k_len, 1, MR
    else:
        a_main, tile_step, main_si, main_sk = a, MR * a_si, a_si, a_sk
    if n_mb * nj > 0:  # (a parallel region costs microseconds even when it is empty)
        for t_index in numba.prange(n_mb * nj):
            t = np.int64(t_index)  # (a prange index may be unsigned)
            mb = t // nj
            panel, j0 = (t - mb * nj) * b_sp, (t - mb * nj) * nr
            i_end = min(m_full, (mb + 1) * mc)
            for k0 in range(0, k_len, KC):
                k_block = min(KC, k_len - k0)
                for i0 in range(mb * mc, i_end, MR):
                    tile(a_main, i0 // MR * tile_step + k0 * main_sk, main_si, main_sk,
                         b, panel + k0 * b_sk, b_sk, c, i0 * n + j0, n, k_block, k0)

    ni, nj_all = (m + MR - 1) // MR, (n + nr - 1) // nr
    right = ni if n_full < n else 0  # the tiles of the last, partial panel
    bottom = nj_all - (1 if right else 0) if m_full < m else 0  # the last row of tiles
    lanes = VECTOR_BYTES // size
    if b_packed:  # (the packed last panel is whole, zero-padded)
        edge_width, edge_off, edge_sk, b_edge = nr, nj * b_sp, b_sk, b
    else:
        edge_width = lanes if n - n_full <= lanes else nr  # (one vector wide: tile_narrow)
        edge_off, edge_sk = 0, edge_width
        b_edge = np.zeros(k_len * edge_width if right else 0, c.dtype)
        for k in range(k_len if right else 0):
            for j in range(n - n_full):
                b_edge[k * edge_width + j] = b[k * b_sk + n_full + j]
    if right + bottom == 0:
        return
    for e_index in numba.prange(right + bottom):
        e = np.int64(e_index)
        ib, jb = (e, nj_all - 1) if e < right else (ni - 1, e - right)
        i0, j0 = ib * MR, jb * nr
        rows, cols = min(MR, m - i0), min(nr, n - j0)
        if rows == MR:
            a_tile, a_off, a_rows, a_ks = a, i0 * a_si, a_si, a_sk
        else:
            a_tile = np.zeros(MR * k_len, c.dtype)
            for r in range(rows):
                for k in range(k_len):
                    a_tile[r * k_len + k] = a[(i0 + r) * a_si + k * a_sk]
            a_off, a_rows, a_ks = 0, k_len, 1
        c_tile = np.empty(MR * nr, c.dtype)
        if cols == nr:
            tile(a_tile, a_off, a_rows, a_ks, b, jb * b_sp, b_sk, c_tile, 0, nr, k_len, 0)
        elif edge_width < nr:
            tile_narrow(a_tile, a_off, a_rows, a_ks, b_edge, edge_off, edge_sk, c_tile, 0, nr,
                        k_len, 0)
        else:
            tile(a_tile, a_off, a_rows, a_ks, b_edge, edge_off, edge_sk, c_tile, 0, nr, k_len,
                 0)
        for r in range(rows):
            for j in range(cols):
                c[i0 + r, j0 + j] = c_tile[r * nr + j]


@_compiled
def pack_panels(b, b_sk, b_sj, k_len, n, panels, nr):
    """Copies the ``k_len x n`` matrix ``b[k*b_sk + j*b_sj]`` into ``panels`` panel by panel:
    panel ``p`` (columns ``p*nr`` to ``p*nr + nr``) is ``k_len`` rows of ``nr`` contiguous
    elements from ``p * k_len * nr`` on, the last one zero-padded. With ``nr`` = ``NR``, a
    panel's ``KC x NR`` block of ``b`` is then contiguous: stored by rows ``n`` elements apart,
    its rows share the same few L1 sets when ``n`` is a multiple of 1024 floats (W3's products:
    5-9% slower unpacked). ``gemm``'s packed ``a`` is ``a.T`` by panels ``MR`` wide. ``b``
    unit-stride along its columns is copied row by row, any other column by column."""
    n_full = n - n % nr
    nj = (n + nr - 1) // nr
    if b_sj == 1:
        for k_index in numba.prange(k_len):
            k = np.int64(k_index)
            for p in range(n_full // nr):
                start = (p * k_len + k) * nr
                panels[start:start + nr] = b[k * b_sk + p * nr:k * b_sk + p * nr + nr]
            if n_full < n:
                start = ((nj - 1) * k_len + k) * nr
                for j in range(nr):
                    panels[start + j] = b[k * b_sk + n_full + j] if n_full + j < n else 0.0
        return
    for p_index in numba.prange(nj):  # (a column of b at a time: reads along k when b_sk is 1)
        p = np.int64(p_index)
        for jj in range(nr):
            j = p * nr + jj
            for k in range(k_len):
                panels[(p * k_len + k) * nr + jj] = b[k * b_sk + j * b_sj] if j < n else 0.0


@_compiled
def copy_blocked(src, s_si, s_sj, dst):
    """``dst[i, j] = src[i*s_si + j*s_sj]`` in 32 x 32 blocks, so that a transposing copy
    reads and writes whole cache lines (NumPy's took 4 ms for 1024 x 1024 float32 here)."""
    m, n = dst.shape
    nbi, nbj = (m + 31) // 32, (n + 31) // 32
    for t_index in numba.prange(nbi * nbj):
        t = np.int64(t_index)
        bi = t // nbj
        i0, j0 = bi * 32, (t - bi * nbj) * 32
        for i in range(i0, min(m, i0 + 32)):
            for j in range(j0, min(n, j0 + 32)):
                dst[i, j] = src[i * s_si + j * s_sj]
