"""Hand-written CUDA kernels for the ops no template renders: one thread per *line*.

A line is the run of elements along the op's dim with every other index fixed. The array is
viewed as ``(outer, n, inner)`` (the dim in the middle, a copy first where the layout cannot be
viewed so) and each thread of a grid-stride loop walks one whole line sequentially:

* ``prod`` (no atomic multiplies partial products): the reduced dims moved last, one thread
  per output element multiplies its line in the widened accumulator (float64 / int64);
* ``cumsum`` / ``cumprod``: a sequential scan of the line in the result's dtype (a line
  longer than ``SCAN_CHUNK`` is cut into chunks: their totals, a scan of the totals per line,
  then each chunk rescanned from its start, so a long row uses many threads);
* ``sort`` / ``argsort`` / ``topk``: a stable insertion sort of the line in the output arrays
  (NaN sorts as the largest value, as in torch: last ascending, first descending), O(n^2) per
  line, for lines of at most ``BITONIC_MIN`` elements; longer lines go through a bitonic
  network (every element a thread, one launch per stage) that breaks ties by the original
  index, so both give the same order;
* ``scatter`` (a write) and ``scatter(reduce="multiply")``: the dim moved last in the index,
  the source and the output; each thread applies its line's writes in order, so duplicate
  indices end as on the CPU (the last write wins) and products need no atomic;
* ``tril`` / ``triu``: a pointwise kernel that keeps an element by its row and column.

Kernels are compiled once per source (``numba_cuda.compile_source``); the sources depend only
on dtypes and ranks, sizes are arguments.
"""

from __future__ import annotations

import numpy as np

from .. import _cuda_array as ca
from .. import dtypes
from .._cuda_array import CudaArray
from ..ops.registry import Tensor
from .numba_cuda import compile_source, launch_config


def _np(dt) -> str:
    return f"np.{np.dtype(dt).name}"


def _launch(src: str, name: str, count: int, *args) -> None:
    if count:
        blocks, threads = launch_config(count)
        compile_source(src, name)[blocks, threads](*args)


def contiguous(x: CudaArray) -> CudaArray:
    """``x`` itself when contiguous, else a contiguous device copy."""
    return x if x.is_contiguous() else x.copy()


def moved_last(x: CudaArray, dims: tuple) -> CudaArray:
    """A view of ``x`` with ``dims`` moved to the end (kept order), no copy."""
    keep = [d for d in range(x.ndim) if d not in dims]
    order = keep + list(dims)
    return x.view(tuple(x.shape[d] for d in order), tuple(x.strides[d] for d in order), x.offset)


def three_d(x: CudaArray, dim: int) -> CudaArray:
    """``x`` as ``(outer, n, inner)`` around ``dim`` (a contiguous copy first if needed)."""
    x = contiguous(x)
    outer = int(np.prod(x.shape[:dim], dtype=np.int64))
    inner = int(np.prod(x.shape[dim + 1:], dtype=np.int64))
    return x.view((outer, x.shape[dim], inner))


# ---------------------------------------------------------------- prod
_PROD = """def prod(x, o, rows, n):
    for r in range(cuda.grid(1), rows, cuda.gridsize(1)):
        acc = {A}(1)
        for j in range(n):
            acc *= {A}(x[r, j])
        o[r] = {O}(acc)
"""


def prod(x: CudaArray, dims: tuple, keepdim: bool, out_dt: np.dtype) -> CudaArray:
    """``x.prod(dims)`` in the result dtype ``out_dt`` (accumulated widened)."""
    dims = tuple(sorted(d % max(x.ndim, 1) for d in dims)) if x.ndim else ()
    lined = contiguous(moved_last(x, dims))
    n = int(np.prod([x.shape[d] for d in dims], dtype=np.int64))
    rows = int(np.prod(lined.shape[:lined.ndim - len(dims)], dtype=np.int64))
    out_dt = np.dtype(out_dt)
    acc = "np.float64" if out_dt.kind == "f" else "np.int64" if out_dt.kind in "iu" else \
        _np(out_dt)
    out = ca.empty((rows,), out_dt)
    if n == 0:
        from .numba_cuda import full

        out = full((rows,), 1, out_dt)
    else:
        _launch(_PROD.format(A=acc, O=_np(out_dt)), "prod", rows,
                lined.view((rows, n)).dev(), out.dev(), rows, n)
    shape = tuple(1 if d in dims else s for d, s in enumerate(x.shape)) if keepdim else \
        tuple(s for d, s in enumerate(x.shape) if d not in dims)
    return out.view(shape)


# ---------------------------------------------------------------- scans
_SCAN = """def scan(x, o, outer, n, inner):
    for f in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
        a = f // inner
        b = f % inner
        acc = {O}({I})
        for j in range(n):
            acc = {O}(acc {OP} {O}(x[a, j, b]))
            o[a, j, b] = acc
"""


# Long lines are scanned in chunks: each chunk's total, then per line the chunks' starts (an
# exclusive scan of the totals), then each chunk rescanned from its start: lines x chunks threads.
_CHUNK_BODY = """    for f in range(cuda.grid(1), lines * chunks, cuda.gridsize(1)):
        line = f // chunks
        c = f % chunks
        a = line // inner
        b = line % inner
        end = (c + 1) * size
        if end > n:
            end = n
"""
_PARTS = "def parts(x, p, lines, n, inner, chunks, size):\n" + _CHUNK_BODY + """\
        acc = {O}({I})
        for j in range(c * size, end):
            acc = {O}(acc {OP} {O}(x[a, j, b]))
        p[line, c] = acc
"""
_STARTS = """def starts(p, lines, chunks):
    for line in range(cuda.grid(1), lines, cuda.gridsize(1)):
        run = {O}({I})
        for c in range(chunks):
            t = p[line, c]
            p[line, c] = run
            run = {O}(run {OP} t)
"""
_FINISH = "def finish(x, p, o, lines, n, inner, chunks, size):\n" + _CHUNK_BODY + """\
        acc = p[line, c]
        for j in range(c * size, end):
            acc = {O}(acc {OP} {O}(x[a, j, b]))
            o[a, j, b] = acc
"""
SCAN_CHUNK = 1024
SIM_SCAN_CHUNK = 4


def scan(x: CudaArray, dim: int, out_dt: np.dtype, multiply: bool) -> CudaArray:
    """``cumsum`` (or ``cumprod``) of ``x`` along ``dim`` in ``out_dt``: one thread per line,
    or per chunk of a line for lines longer than ``SCAN_CHUNK``."""
    from .._cuda_array import simulated

    out_dt = np.dtype(out_dt)
    out = ca.empty(x.shape, out_dt)
    if x.ndim == 0:
        out.copy_from(x)
        return out
    src = three_d(x, dim)
    o3 = out.view(src.shape)
    outer, n, inner = src.shape
    fmt = {"O": _np(out_dt), "I": 1 if multiply else 0, "OP": "*" if multiply else "+"}
    size = SIM_SCAN_CHUNK if simulated() else SCAN_CHUNK
    if n <= size:
        _launch(_SCAN.format(**fmt), "scan", outer * inner, src.dev(), o3.dev(), outer, n,
                inner)
        return out
    lines, chunks = outer * inner, -(-n // size)
    p = ca.empty((lines, chunks), out_dt)
    _launch(_PARTS.format(**fmt), "parts", lines * chunks, src.dev(), p.dev(), lines, n, inner,
            chunks, size)
    _launch(_STARTS.format(**fmt), "starts", lines, p.dev(), lines, chunks)
    _launch(_FINISH.format(**fmt), "finish", lines * chunks, src.dev(), p.dev(), o3.dev(),
            lines, n, inner, chunks, size)
    return out


# ---------------------------------------------------------------- sorting
_SORT = """def sort(x, v, ix, outer, n, inner):
    for f in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
        a = f // inner
        b = f % inner
        for j in range(n):
            v[a, j, b] = x[a, j, b]
            ix[a, j, b] = j
        for j in range(1, n):
            c = v[a, j, b]
            ci = ix[a, j, b]
            p = j - 1
            while p >= 0:
                q = v[a, p, b]
                if not ({BEFORE}):
                    break
                v[a, p + 1, b] = q
                ix[a, p + 1, b] = ix[a, p, b]
                p -= 1
            v[a, p + 1, b] = c
            ix[a, p + 1, b] = ci
"""
# ``c`` goes before ``q`` (strictly: ties keep their order). NaN is the largest value.
_ASC = "c < q or (q != q and c == c)"
_DESC = "c > q or (c != c and q == q)"


# Lines longer than BITONIC_MIN: a bitonic sorting network over the line padded to a power of
# two P, in scratch arrays (one kernel launch per stage, log2(P) * (log2(P) + 1) / 2 of them,
# each thread one comparator). The network is not stable by itself: it compares (value, index)
# pairs, ties broken by the original index, so it gives exactly the insertion sort's order; a
# padding element (index >= n) goes after every element of the line.
_BEFORE = "(ci < n and (qi >= n or ({CQ}) or (not ({QC}) and ci < qi)))"
_PAD = """def pad(x, keys, idx, lines, n, inner, size):
    for f in range(cuda.grid(1), lines * size, cuda.gridsize(1)):
        line = f // size
        j = f % size
        a = line // inner
        b = line % inner
        keys[line, j] = x[a, j, b] if j < n else x[a, 0, b]
        idx[line, j] = j
"""
_STAGE = """def stage(keys, idx, lines, n, size, k, j):
    for f in range(cuda.grid(1), lines * size, cuda.gridsize(1)):
        line = f // size
        i = f % size
        m = i ^ j
        if m > i:
            c = keys[line, m]
            ci = idx[line, m]
            q = keys[line, i]
            qi = idx[line, i]
            up = (i & k) == 0
            if not up:
                c, ci, q, qi = q, qi, c, ci
            if {BEFORE}:
                keys[line, i] = keys[line, m]
                keys[line, m] = q if up else c
                t = idx[line, i]
                idx[line, i] = idx[line, m]
                idx[line, m] = t
"""
_UNPAD = """def unpad(keys, idx, v, ix, lines, n, inner):
    for f in range(cuda.grid(1), lines * n, cuda.gridsize(1)):
        line = f // n
        j = f % n
        a = line // inner
        b = line % inner
        v[a, j, b] = keys[line, j]
        ix[a, j, b] = idx[line, j]
"""
BITONIC_MIN = 64
SIM_BITONIC_MIN = 8


def _bitonic(src: CudaArray, values: CudaArray, indices: CudaArray, descending: bool) -> None:
    outer, n, inner = src.shape
    lines, size = outer * inner, 1 << (n - 1).bit_length()
    keys, idx = ca.empty((lines, size), src.dtype), ca.empty((lines, size), np.int64)
    order = _DESC if descending else _ASC
    before = _BEFORE.format(CQ=order, QC=order.replace("c", "Q").replace("q", "c")
                            .replace("Q", "q"))
    _launch(_PAD, "pad", lines * size, src.dev(), keys.dev(), idx.dev(), lines, n, inner, size)
    stage = _STAGE.format(BEFORE=before)
    k = 2
    while k <= size:
        j = k // 2
        while j:
            _launch(stage, "stage", lines * size, keys.dev(), idx.dev(), lines, n, size, k, j)
            j //= 2
        k *= 2
    _launch(_UNPAD, "unpad", lines * n, keys.dev(), idx.dev(), values.dev(), indices.dev(),
            lines, n, inner)


def sort(x: CudaArray, dim: int, descending: bool) -> tuple[CudaArray, CudaArray]:
    """``(values, indices)`` of a stable sort of ``x`` along ``dim``: an insertion sort per
    line (one thread each) up to ``BITONIC_MIN`` elements, a bitonic network above."""
    from .._cuda_array import simulated

    values = ca.empty(x.shape, x.dtype)
    indices = ca.empty(x.shape, np.int64)
    if x.ndim == 0:
        values.copy_from(x)
        from .numba_cuda import full

        return values, full((), 0, np.int64)
    src = three_d(x, dim)
    outer, n, inner = src.shape
    if n > (SIM_BITONIC_MIN if simulated() else BITONIC_MIN):
        _bitonic(src, values.view(src.shape), indices.view(src.shape), descending)
        return values, indices
    code = _SORT.format(BEFORE=_DESC if descending else _ASC)
    _launch(code, "sort", outer * inner, src.dev(), values.view(src.shape).dev(),
            indices.view(src.shape).dev(), outer, n, inner)
    return values, indices


def first_k(a: CudaArray, k: int, dim: int) -> CudaArray:
    """A contiguous copy of the first ``k`` entries of ``a`` along ``dim``."""
    if a.ndim == 0:
        return a
    shape = tuple(k if d == dim else s for d, s in enumerate(a.shape))
    return a.view(shape, a.strides, a.offset).copy()


# ---------------------------------------------------------------- scatter (writes)
def _scatter_source(d: int, multiply: bool, value: bool) -> str:
    """Lines along the last of ``d`` dims of the index: each thread applies its line's writes
    in order (``o`` and ``src`` are viewed with the scattered dim last too)."""
    ix = [f"i{j}" for j in range(d - 1)]
    lead = "".join(f"{i}, " for i in ix)
    rhs = "val" if value else f"src[{lead}j]"
    op = "*=" if multiply else "="
    args = ", ".join([f"n{j}" for j in range(d)] + ["idx", "src", "val", "o"])
    count = " * ".join(["1"] + [f"n{j}" for j in range(d - 1)])
    lines = [f"def scatter({args}):",
             f"    for f in range(cuda.grid(1), {count}, cuda.gridsize(1)):", "        q = f"]
    for j in range(d - 2, -1, -1):
        lines += [f"        i{j} = q % n{j}", f"        q = q // n{j}"]
    lines += [f"        for j in range(n{d - 1}):",
              f"            t = idx[{lead}j]",
              f"            o[{lead}t] {op} {rhs}"]
    return "\n".join(lines) + "\n"


def scatter(x: CudaArray, index: CudaArray, src, dim: int, multiply: bool) -> CudaArray:
    """``x`` with ``src`` (a device array or a number) written (or multiplied) at ``index``
    along ``dim``; the caller checked the indices' range."""
    out = x.copy()
    if index.size == 0:
        return out
    d = x.ndim
    last = (dim,)
    idx_v = moved_last(index, last)
    o_v = moved_last(out, last)
    value = not isinstance(src, CudaArray)
    if value:
        src_dev = idx_v.dev()  # (a placeholder: the kernel writes the ``val`` argument)
        val = x.dtype.type(src)
    else:
        # (src may be larger than the index: its leading part is used)
        part = src.view(index.shape, src.strides, src.offset)
        src_dev = moved_last(part, last).dev()
        val = x.dtype.type(0)
    lines = int(np.prod(idx_v.shape[:-1], dtype=np.int64))
    _launch(_scatter_source(d, multiply, value), "scatter", lines, *idx_v.shape, idx_v.dev(),
            src_dev, val, o_v.dev())
    return out


# ---------------------------------------------------------------- tril / triu
_TRI = """def tri(x, o, b, r, c, k):
    for f in range(cuda.grid(1), b * r * c, cuda.gridsize(1)):
        j = f % c
        i = (f // c) % r
        a = f // (c * r)
        if j - i {CMP} k:
            o[a, i, j] = x[a, i, j]
        else:
            o[a, i, j] = {D}(0)
"""


def tri(x: CudaArray, diagonal: int, lower: bool) -> CudaArray:
    """``tril`` (``lower``) or ``triu`` of the last two dims."""
    out = ca.empty(x.shape, x.dtype)
    r, c = x.shape[-2:]
    b = int(np.prod(x.shape[:-2], dtype=np.int64))
    src = contiguous(x).view((b, r, c))
    code = _TRI.format(CMP="<=" if lower else ">=", D=_np(x.dtype))
    _launch(code, "tri", b * r * c, src.dev(), out.view((b, r, c)).dev(), b, r, c,
            int(diagonal))
    return out


# ---------------------------------------------------------------- eager entry points
def _meta(op, args, params):
    from .cuda_eager import _standin

    return op.meta(*[_standin(a) if isinstance(a, Tensor) else a for a in args], **params)


def _prod_op(op, args, params):
    x = args[0]
    shape, dt = _meta(op, args, params)
    out = prod(x._data, tuple(params["dims"]), params["keepdim"], dt.np)
    return out.reshape(tuple(shape)), dt


def _scan_op(op, args, params):
    x = args[0]
    _, dt = _meta(op, args, params)
    return scan(x._data, params["dim"], dt.np, op.name == "cumprod"), dt


def _sort_op(op, args, params):
    x = args[0]
    _meta(op, args, params)
    dim, large = params["dim"], params.get("descending", params.get("largest"))
    values, indices = sort(x._data, dim, bool(large))
    if op.name in ("topk", "argtopk"):
        values, indices = first_k(values, params["k"], dim), first_k(indices, params["k"], dim)
    if op.name in ("argsort", "argtopk"):
        return indices, dtypes.int64
    return (values, indices), (x._dtype, dtypes.int64)


def _scatter_op(op, args, params):
    from .cuda_eager import _check_bounds, unsupported

    x, index = args[0], args[1]
    value_form = op.name.endswith("_value")
    src = params["value"] if value_form else args[2]
    if isinstance(src, Tensor):
        if src._dtype is not x._dtype:
            raise unsupported(op, "src of another dtype")
        src = src._data
    elif isinstance(src, (list, tuple)) or src is None:
        raise unsupported(op)
    if x._data.ndim == 0:
        raise unsupported(op, "a 0-d input")
    dim = params["dim"] % x._data.ndim
    _check_bounds(index, x._data.shape[dim] if x._data.ndim else 1, dim)
    out = scatter(x._data, index._data, src, dim, op.name.startswith("scatter_multiply"))
    return out, x._dtype


def _tri_op(op, args, params):
    x = args[0]
    _, dt = _meta(op, args, params)
    return tri(x._data, params["diagonal"], op.name == "tril"), dt


BY_NAME = {"prod": _prod_op, "prod_dim": _prod_op, "cumsum": _scan_op, "cumprod": _scan_op,
           "sort": _sort_op, "argsort": _sort_op, "topk": _sort_op, "argtopk": _sort_op,
           "scatter": _scatter_op, "scatter_value": _scatter_op,
           "scatter_multiply": _scatter_op, "scatter_multiply_value": _scatter_op,
           "tril": _tri_op, "triu": _tri_op}
__all__ = ["BY_NAME", "prod", "scan", "sort", "scatter", "tri"]
