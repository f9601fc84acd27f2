"""More hand-written CUDA kernels for ops no template renders (``cuda_lines``' second part).

One thread per *line* (the array viewed as ``(outer, n, inner)`` around the op's dim, as in
``cuda_lines``) unless said otherwise:

* ``cummax`` / ``cummin``: a sequential running extreme with its index (torch's rule: a NaN
  is always taken, else a value ``>=`` (``<=``) the best so far, so ties take the later index);
* ``logcumsumexp``: a sequential running ``logaddexp`` in the tensor's dtype (NumPy's
  formula: ``a + log(2)`` for equal terms, else the larger plus ``log1p(exp(-|a - b|))``);
* ``kthvalue``, ``median`` / ``nanmedian`` (of all elements or along a dim) and ``mode``:
  ``cuda_lines.sort`` (stable, NaN last) then one thread per line picks from the sorted line:
  the ``k``-th element, the lower median of the non-NaN values (``median``: the first NaN of a
  line with one, so its index is the first NaN's; ``nanmedian`` of an all-NaN line: index 0),
  or the longest run of equal values (the first, so the smallest, of equally long runs; NaNs
  form one run) and the last original index in it;
* ``aminmax``: ``amin`` and ``amax`` (their kernels);
* ``searchsorted`` / ``bucketize``: one thread per value, a binary search of its row of the
  sorted sequence (NaN sorts last, as NumPy's);
* ``isin``: one thread per element, a linear scan of the test elements (``==``: NaN is in
  nothing);
* ``histc``: one thread per element, NumPy's uniform-bins rule (the bin from the scaled
  offset, then moved by one where the host-made ``linspace`` edges disagree, the last bin
  closed) and an atomic add of 1 to the count (NaN and values outside ``[min, max]`` skip);
* ``index_copy`` / ``index_fill``: ``cuda_lines.scatter`` with the index spread along the dim
  (duplicate indices: the last write wins, as on the CPU);
* ``scatter_reduce`` (``sum``, ``prod``, ``mean``, ``amax``, ``amin``, ``include_self``): as
  ``cuda_lines.scatter``, the scattered dim last and one thread per line folding its elements
  in order into the output elements only its line writes (no atomics), then ``mean`` divides
  by the counts (floor division for integers, as the CPU's).

Complex values have no order here (they raise, naming the op): the CPU orders them as NumPy
does, torch raises.
"""

from __future__ import annotations

import numpy as np

from .. import _cuda_array as ca
from .. import dtypes
from .._cuda_array import CudaArray
from ..ops.registry import Tensor
from .cuda_lines import _meta, _np, scatter, sort, three_d
from .numba_cuda import compile_source, full, launch_config


def _launch(src: str, name: str, count: int, *args) -> None:
    if count:
        blocks, threads = launch_config(count)
        compile_source(src, name)[blocks, threads](*args)


def _no_order(op, *xs) -> None:
    from .cuda_eager import unsupported

    if any(isinstance(x, Tensor) and x._dtype.is_complex for x in xs):
        raise unsupported(op, "no order of complex values")


def _flat(x: CudaArray) -> CudaArray:
    """``x`` as a contiguous 1-d array (a copy only where ``x`` is not contiguous)."""
    return (x if x.is_contiguous() else x.copy()).view((x.size,))


def _lines(x: CudaArray, dim: int | None) -> CudaArray:
    """``x`` as ``(outer, n, inner)`` around ``dim`` (a 0-d ``x`` as one line of one)."""
    return x.view((1, 1, 1)) if x.ndim == 0 else three_d(x, dim)


# ---------------------------------------------------------------- cummax / cummin
_CUMEXT = """def cumext(x, v, ix, outer, n, inner):
    for f in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
        a = f // inner
        b = f % inner
        best = x[a, 0, b]
        bi = 0
        for j in range(n):
            c = x[a, j, b]
            if c != c or (best == best and c {CMP} best):
                best = c
                bi = j
            v[a, j, b] = best
            ix[a, j, b] = bi
"""


def _cum_extreme_op(op, args, params):
    x = args[0]
    _no_order(op, x)
    src = _lines(x._data, params["dim"])
    values, indices = ca.empty(x._data.shape, x._data.dtype), ca.empty(x._data.shape, np.int64)
    outer, n, inner = src.shape
    if n:
        _launch(_CUMEXT.format(CMP=">=" if op.name == "cummax" else "<="), "cumext",
                outer * inner, src.dev(), values.view(src.shape).dev(),
                indices.view(src.shape).dev(), outer, n, inner)
    return (values, indices), (x._dtype, dtypes.int64)


# ---------------------------------------------------------------- logcumsumexp
_LCSE = """def lcse(x, o, outer, n, inner):
    for f in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
        a = f // inner
        b = f % inner
        acc = x[a, 0, b]
        for j in range(n):
            c = x[a, j, b]
            if j == 0:
                acc = c
            elif acc == c:
                acc = {D}(acc + {D}(0.6931471805599453))
            else:
                t = acc - c
                if t > 0:
                    acc = {D}(acc + _jg_log1p(_jg_exp(-t)))
                elif t <= 0:
                    acc = {D}(c + _jg_log1p(_jg_exp(t)))
                else:
                    acc = t
            o[a, j, b] = acc
"""


def _logcumsumexp_op(op, args, params):
    from .cuda_eager import unsupported

    x = args[0]
    _, dt = _meta(op, args, params)
    if x._dtype.is_complex:
        raise unsupported(op, "no complex logaddexp kernel")
    src = _lines(x._data, params["dim"])
    out = ca.empty(x._data.shape, dt.np)
    outer, n, inner = src.shape
    if n:
        _launch(_LCSE.format(D=_np(dt.np)), "lcse", outer * inner, src.dev(),
                out.view(src.shape).dev(), outer, n, inner)
    return out, dt


# ---------------------------------------------------------------- picks from sorted lines
_PICK = """def pick(v, ix, o, oi, outer, n, inner, k):
    for f in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
        a = f // inner
        b = f % inner
        m = n
        while m > 0 and v[a, m - 1, b] != v[a, m - 1, b]:
            m -= 1
{BODY}
        o[a, b] = v[a, p, b]
        oi[a, b] = ix[a, p, b]
"""
_PICKS = {
    "kth": "        p = k",
    # the lower median; a line with a NaN: its first NaN (sorted right after the numbers)
    "median": "        p = m if m < n else (n - 1) // 2",
    "nanmedian": "        p = (m - 1) // 2 if m > 0 else 0",
    # the longest run of equal values (NaNs one run), the first of equally long ones; the
    # last original index in it (the sort is stable: the run's last entry)
    "mode": """        p = 0
        best = 0
        j = 0
        while j < n:
            c = v[a, j, b]
            e = j
            while e + 1 < n and (v[a, e + 1, b] == c or (c != c and
                                                         v[a, e + 1, b] != v[a, e + 1, b])):
                e += 1
            if e - j + 1 > best:
                best = e - j + 1
                p = e
            j = e + 1""",
}


def pick(x: CudaArray, dim: int, how: str, k: int = 0) -> tuple[CudaArray, CudaArray]:
    """``(values, indices)`` of shape ``(outer, inner)``: one element of each line of ``x``
    along ``dim`` chosen from its stable ascending sort (see ``_PICKS``)."""
    src = _lines(x, dim)
    outer, n, inner = src.shape
    values, indices = sort(src, 1, False)
    o, oi = ca.empty((outer, inner), x.dtype), ca.empty((outer, inner), np.int64)
    _launch(_PICK.format(BODY=_PICKS[how]), "pick", outer * inner, values.dev(), indices.dev(),
            o.dev(), oi.dev(), outer, n, inner, int(k))
    return o, oi


def _pick_op(op, args, params):
    x = args[0]
    _no_order(op, x)
    shape, dt = _meta(op, args, params)
    name = op.name
    if name in ("median", "nanmedian"):  # (of all elements: one line)
        flat = _flat(x._data)
        value, _ = pick(flat, 0, name)
        return value.view(()), dt
    how = {"kthvalue": "kth", "median_dim": "median", "nanmedian_dim": "nanmedian",
           "mode": "mode"}[name]
    values, indices = pick(x._data, params["dim"], how, params.get("k", 1) - 1)
    return (values.view(tuple(shape[0])), indices.view(tuple(shape[1]))), dt


def _aminmax_op(op, args, params):
    from .cuda_eager import _no_grad

    x = args[0]
    _no_order(op, x)
    (shape, _), (dt, _) = _meta(op, args, params)
    dim, keepdim = params["dim"], params["keepdim"]

    def forward():
        if dim is None or x.ndim == 0:
            return x.amin(), x.amax()
        return x.amin(dim, keepdim=keepdim), x.amax(dim, keepdim=keepdim)

    lo, hi = _no_grad(forward)
    return (lo._data.reshape(tuple(shape)), hi._data.reshape(tuple(shape))), (dt, dt)


# ---------------------------------------------------------------- searches
_SEARCH = """def search(seq, vals, o, rows, m, nv, shared):
    for f in range(cuda.grid(1), rows * nv, cuda.gridsize(1)):
        r = f // nv
        c = f % nv
        s = 0 if shared else r
        x = vals[r, c]
        lo = 0
        hi = m
        while lo < hi:
            mid = (lo + hi) // 2
            q = seq[s, mid]
            if {RIGHT}:
                lo = mid + 1
            else:
                hi = mid
        o[r, c] = lo
"""
_LEFT = "q < x or (x != x and q == q)"  # (q before x: NaN is the largest value)
_RIGHT_SIDE = "not (x < q or (q != q and x == x))"


def _searchsorted_op(op, args, params):
    seq, values = args
    _no_order(op, seq, values)
    shape, dt = _meta(op, args, params)
    m = seq._data.shape[-1] if seq._data.ndim else 1
    vals = values._data
    if seq._data.ndim <= 1:
        rows, nv, shared = 1, vals.size, True
    else:
        nv = vals.shape[-1]
        rows, shared = vals.size // max(nv, 1), False
    s = _flat(seq._data)
    v = _flat(vals)
    out = ca.empty(tuple(shape), dt.np)
    code = _SEARCH.format(RIGHT=_RIGHT_SIDE if params["right"] else _LEFT)
    _launch(code, "search", rows * nv, s.view((max(s.size // max(m, 1), 1), m)).dev(),
            v.view((rows, nv)).dev(), out.view((rows, nv)).dev(), rows, m, nv, shared)
    return out, dt


_ISIN = """def isin(e, t, o, n, m):
    for f in range(cuda.grid(1), n, cuda.gridsize(1)):
        x = e[f]
        hit = False
        for j in range(m):
            if t[j] == x:
                hit = True
                break
        o[f] = {RESULT}
"""


def _isin_op(op, args, params):
    e, t = args
    shape, dt = _meta(op, args, params)
    flat_e = _flat(e._data)
    flat_t = _flat(t._data)
    out = ca.empty(tuple(shape), np.bool_)
    code = _ISIN.format(RESULT="not hit" if params["invert"] else "hit")
    _launch(code, "isin", flat_e.size, flat_e.dev(), flat_t.dev(), _flat(out).dev(),
            flat_e.size, flat_t.size)
    return out, dt


# ---------------------------------------------------------------- histc
_HISTC = """def histc(x, edges, counts, n, bins):
    lo = edges[0]
    hi = edges[bins]
    for f in range(cuda.grid(1), n, cuda.gridsize(1)):
        v = x[f]
        if v >= lo and v <= hi:
            i = int((v - lo) / (hi - lo) * {D}(bins))
            if i >= bins:
                i = bins - 1
            if i > 0 and v < edges[i]:
                i -= 1
            elif i < bins - 1 and v >= edges[i + 1]:
                i += 1
            cuda.atomic.add(counts, i, {D}(1))
"""


def _histc_op(op, args, params):
    from .cuda_eager import _no_grad

    x = args[0]
    shape, dt = _meta(op, args, params)
    bins = params["bins"]
    lo, hi = float(params["min"]), float(params["max"])
    if lo == hi and x._data.size:  # (the data's range: two values read back)
        lo, hi = _no_grad(lambda: (x.amin().item(), x.amax().item()))
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise RuntimeError(f"torch.histc: range of [{lo}, {hi}] is not finite")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    edges = ca.to_device(np.linspace(lo, hi, bins + 1, endpoint=True, dtype=dt.np))
    counts = full((bins,), 0, dt.np)
    flat = _flat(x._data)
    _launch(_HISTC.format(D=_np(dt.np)), "histc", flat.size, flat.dev(), edges.dev(),
            counts.dev(), flat.size, bins)
    return counts, dt


# ---------------------------------------------------------------- index_copy / index_fill
def _index_write_op(op, args, params):
    from .cuda_eager import _check_bounds, unsupported

    x, index = args[0], args[1]
    if x._data.ndim == 0:
        raise unsupported(op, "a 0-d input")
    _meta(op, args, params)
    dim = params["dim"]
    k = index._data.shape[0] if index._data.ndim else 1
    spread = tuple(k if d == dim else s for d, s in enumerate(x._data.shape))
    _check_bounds(index, x._data.shape[dim], dim)
    i = index._data.reshape((1,) * dim + (k,) + (1,) * (x._data.ndim - dim - 1))
    i = i.view(spread, tuple(0 if d != dim else i.strides[d] for d in range(len(spread))),
               i.offset)
    if op.name == "index_copy":
        src = args[2]._data
        if src.shape != spread:
            raise unsupported(op, "a source of another shape")
    elif op.name == "index_fill_tensor":
        v = args[2]._data
        src = v.view(spread, (0,) * len(spread), v.offset)
    else:
        src = params["value"]
    if k == 0:
        return x._data.copy(), x._dtype
    return scatter(x._data, i, src, dim, False), x._dtype


# ---------------------------------------------------------------- scatter_reduce
def _reduce_source(d: int, reduce: str, kind: str, include_self: bool) -> str:
    """Lines along the last of ``d`` dims (the scattered dim moved last in the index, the
    source, the output and the counts): each thread folds its line's elements into their
    output elements in order (no other line writes them: no atomics), then ``mean`` divides
    each written element once by its count (its mark cleared)."""
    ix = [f"i{j}" for j in range(d - 1)]
    lead = "".join(f"{i}, " for i in ix)
    a, b = f"o[{lead}t]", f"src[{lead}j]"
    combine = {
        "sum": f"{a} | {b}" if kind == "b" else f"{a} + {b}",
        "mean": f"{a} | {b}" if kind == "b" else f"{a} + {b}",
        "prod": f"{a} & {b}" if kind == "b" else f"{a} * {b}",
        "amax": f"{b} if ({b} != {b} or {b} > {a}) else {a}",  # (NaN propagates: np.maximum)
        "amin": f"{b} if ({b} != {b} or {b} < {a}) else {a}",
    }[reduce]
    args = ", ".join([f"n{j}" for j in range(d)] + ["idx", "src", "o", "cnt", "ident"])
    count = " * ".join(["1"] + [f"n{j}" for j in range(d - 1)])
    lines = [f"def sred({args}):",
             f"    for f in range(cuda.grid(1), {count}, cuda.gridsize(1)):", "        q = f"]
    for j in range(d - 2, -1, -1):
        lines += [f"        i{j} = q % n{j}", f"        q = q // n{j}"]
    loop = f"        for j in range(n{d - 1}):"
    take = f"            t = idx[{lead}j]"
    if not include_self:
        lines += [loop, take, f"            {a} = ident"]
    lines += [loop, take, f"            {a} = {combine}"]
    if reduce == "mean":
        div = {"b": f"((1 if {a} else 0) // c) != 0", "f": f"{a} / c", "c": f"{a} / c"}.get(
            kind, f"{a} // c")
        lines += [loop, take, f"            cnt[{lead}t] += 1",
                  loop, take, f"            c = cnt[{lead}t]", "            if c > 0:",
                  f"                {a} = {div}", f"                cnt[{lead}t] = 0"]
    return "\n".join(lines) + "\n"


def _identity(reduce: str, dt: np.dtype):
    if reduce in ("sum", "mean"):
        return dt.type(0)
    if reduce == "prod":
        return dt.type(1)
    if dt.kind == "f":
        return dt.type(-np.inf if reduce == "amax" else np.inf)
    if dt.kind == "b":
        return dt.type(reduce == "amin")
    info = np.iinfo(dt)
    return dt.type(info.min if reduce == "amax" else info.max)


def _scatter_reduce_op(op, args, params):
    from .cuda_eager import _check_bounds, unsupported
    from .cuda_lines import moved_last

    x, index, src = args
    reduce, include_self = params["reduce"], params["include_self"]
    if reduce in ("amax", "amin"):
        _no_order(op, x)
    if x._data.ndim == 0:
        raise unsupported(op, "a 0-d input")
    _, dt = _meta(op, args, params)
    dim = params["dim"]
    _check_bounds(index, x._data.shape[dim], dim)
    out = x._data.copy()
    if index._data.size == 0:
        return out, dt
    d = x._data.ndim
    # (the include_self mean counts self once: every count starts at 1, else at 0)
    cnt = full(out.shape, 1 if include_self else 0, np.int64) if reduce == "mean" else out
    idx_v = moved_last(index._data, (dim,))
    part = src._data.view(index._data.shape, src._data.strides, src._data.offset)
    lines = int(np.prod(idx_v.shape[:-1], dtype=np.int64))
    code = _reduce_source(d, reduce, out.dtype.kind, include_self)
    _launch(code, "sred", lines, *idx_v.shape, idx_v.dev(), moved_last(part, (dim,)).dev(),
            moved_last(out, (dim,)).dev(), moved_last(cnt, (dim,)).dev(),
            _identity(reduce, out.dtype))
    return out, dt


BY_NAME = {"cummax": _cum_extreme_op, "cummin": _cum_extreme_op,
           "logcumsumexp": _logcumsumexp_op, "kthvalue": _pick_op, "median": _pick_op,
           "median_dim": _pick_op, "nanmedian": _pick_op, "nanmedian_dim": _pick_op,
           "mode": _pick_op, "aminmax": _aminmax_op, "searchsorted": _searchsorted_op,
           "isin": _isin_op, "histc": _histc_op, "index_copy": _index_write_op,
           "index_fill": _index_write_op, "index_fill_tensor": _index_write_op,
           "scatter_reduce": _scatter_reduce_op}
__all__ = ["BY_NAME", "pick"]
