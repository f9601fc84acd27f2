"""The choices among tied values that torch's CPU ``sort`` (``stable=False``), ``topk`` and
``mode`` make, which come from libstdc++'s unstable sort and selection algorithms.

torch's ``topk_impl_loop`` puts each row's (value, index) pairs in a vector and runs
``std::partial_sort`` over the first ``k`` when ``k * 64 <= n``, else ``std::nth_element`` at
``k - 1`` followed (when ``sorted``) by ``std::sort`` of the first ``k - 1``; the comparator
puts NaN first for ``largest`` (last otherwise) and looks at values only. Its ``mode`` kernel
``std::sort``s the pairs by ``<`` and takes the last pair of the first longest run of equal
values (each NaN a run of its own). Its ``sort`` kernel ``std::sort``s the (value, index)
pairs with topk's comparators (NaN last ascending, first descending); only a 1-D integer
ascending sort of at least 32768 elements takes a stable radix sort. None of these algorithms is
stable, so among tied values the indices torch returns, and the order of an unsorted top-k, are
what they do step by step.
The functions below are those steps (heap select and heap sort; introselect and introsort with
the median of three moved to the front and the unguarded partition; insertion sort, with the
16-element threshold), written from the algorithms' definitions over two parallel arrays
(values, indices), and compiled with Numba on first use.
"""

from __future__ import annotations

import numpy as np

from .nn_kernels import compiled

__all__ = ["torch_mode", "torch_sort_indices", "torch_topk_indices"]

_COMPILED: dict[str, object] = {}
SORT_THRESHOLD = 16  # libstdc++'s _S_threshold
_PYTHON_SORT_SIZE = 2048
# the comparators: topk's smallest (NaN last) and largest (NaN first), mode's plain ``<``
_SMALLEST, _LARGEST, _LESS = 0, 1, 2


def _before(a, b, order):
    if order == _LARGEST:
        return (a != a and b == b) or a > b
    if order == _SMALLEST:
        return (a == a and b != b) or a < b
    return a < b


def _swap(vals, idx, i, j):
    vals[i], vals[j] = vals[j], vals[i]
    idx[i], idx[j] = idx[j], idx[i]


def _log2(n):
    depth = 0
    while n > 1:
        n >>= 1
        depth += 1
    return depth


def _median_to_first(vals, idx, result, a, b, c, order):
    if _before(vals[a], vals[b], order):
        if _before(vals[b], vals[c], order):
            _swap(vals, idx, result, b)
        elif _before(vals[a], vals[c], order):
            _swap(vals, idx, result, c)
        else:
            _swap(vals, idx, result, a)
    elif _before(vals[a], vals[c], order):
        _swap(vals, idx, result, a)
    elif _before(vals[b], vals[c], order):
        _swap(vals, idx, result, c)
    else:
        _swap(vals, idx, result, b)


def _partition_at_pivot(vals, idx, first, last, order):
    """Moves the median of three to ``first`` and partitions the rest around it (unguarded):
    the start of the right part."""
    _median_to_first(vals, idx, first, first + 1, first + (last - first) // 2, last - 1,
                     order)
    pivot = vals[first]
    lo, hi = first + 1, last
    while True:
        while lo < last - 1 and _before(vals[lo], pivot, order):  # (see ``_linear_insert``)
            lo += 1
        hi -= 1
        while hi > first and _before(pivot, vals[hi], order):
            hi -= 1
        if not lo < hi:
            return lo
        _swap(vals, idx, lo, hi)
        lo += 1


def _linear_insert(vals, idx, last, order):
    """Moves ``last`` left past the larger entries before it (unguarded: one is not larger)."""
    v, i = vals[last], idx[last]
    while last > 0 and _before(v, vals[last - 1], order):  # (a bound only ``<`` with NaN needs)
        vals[last], idx[last] = vals[last - 1], idx[last - 1]
        last -= 1
    vals[last], idx[last] = v, i


def _insertion_sort(vals, idx, first, last, order):
    for i in range(first + 1, last):
        if _before(vals[i], vals[first], order):
            v, j = vals[i], idx[i]
            for m in range(i, first, -1):
                vals[m], idx[m] = vals[m - 1], idx[m - 1]
            vals[first], idx[first] = v, j
        else:
            _linear_insert(vals, idx, i, order)


def _sift(vals, idx, first, hole, length, v, i, order):
    """libstdc++'s ``__adjust_heap``: the hole goes down to a leaf along the larger children,
    then the value (v, i) goes up from there (``__push_heap``)."""
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if _before(vals[first + child], vals[first + child - 1], order):
            child -= 1
        vals[first + hole], idx[first + hole] = vals[first + child], idx[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        vals[first + hole], idx[first + hole] = vals[first + child - 1], idx[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and _before(vals[first + parent], v, order):
        vals[first + hole], idx[first + hole] = vals[first + parent], idx[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    vals[first + hole], idx[first + hole] = v, i


def _pop_to(vals, idx, first, last, result, order):
    v, i = vals[result], idx[result]
    vals[result], idx[result] = vals[first], idx[first]
    _sift(vals, idx, first, 0, last - first, v, i, order)


def _heap_select(vals, idx, first, middle, last, order):
    length = middle - first
    if length >= 2:
        parent = (length - 2) // 2
        while True:
            _sift(vals, idx, first, parent, length, vals[first + parent], idx[first + parent],
                  order)
            if parent == 0:
                break
            parent -= 1
    for i in range(middle, last):
        if _before(vals[i], vals[first], order):
            _pop_to(vals, idx, first, middle, i, order)


def _sort_heap(vals, idx, first, last, order):
    while last - first > 1:
        last -= 1
        _pop_to(vals, idx, first, last, last, order)


def _nth_element(vals, idx, first, nth, last, order):
    depth = _log2(last - first) * 2
    while last - first > 3:
        if depth == 0:
            _heap_select(vals, idx, first, nth + 1, last, order)
            _swap(vals, idx, first, nth)
            return
        depth -= 1
        cut = _partition_at_pivot(vals, idx, first, last, order)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(vals, idx, first, last, order)


def _std_sort(vals, idx, first, last, order, stack):
    """Introsort down to runs of 16 (the right part of each cut first, as libstdc++ recurses
    into it), then one insertion sort over the whole range."""
    if last - first < 2:
        return
    stack[0, 0], stack[0, 1], stack[0, 2] = first, last, _log2(last - first) * 2
    top = 1
    while top:
        top -= 1
        lo, hi, depth = stack[top, 0], stack[top, 1], stack[top, 2]
        while hi - lo > SORT_THRESHOLD:
            if depth == 0:
                _heap_select(vals, idx, lo, hi, hi, order)
                _sort_heap(vals, idx, lo, hi, order)
                break
            depth -= 1
            cut = _partition_at_pivot(vals, idx, lo, hi, order)
            stack[top, 0], stack[top, 1], stack[top, 2] = cut, hi, depth
            top += 1
            hi = cut
    if last - first > SORT_THRESHOLD:
        _insertion_sort(vals, idx, first, first + SORT_THRESHOLD, order)
        for i in range(first + SORT_THRESHOLD, last):
            _linear_insert(vals, idx, i, order)
    else:
        _insertion_sort(vals, idx, first, last, order)


def _load_row(rows, r, vals, idx):
    """Row ``r`` of ``rows`` as (value, index) pairs in the scratch arrays."""
    for c in range(rows.shape[1]):
        vals[c] = rows[r, c]
        idx[c] = c


def _scratch(rows):
    """A row's (value, index) arrays and the introsort's stack of ranges."""
    n = rows.shape[1]
    return (np.empty(n, rows.dtype), np.empty(n, np.int64),
            np.empty((2 * _log2(max(n, 2)) + 2, 3), np.int64))


def topk_rows(rows, k, order, sort_head, out):
    """For each row ``rows[r]``: torch's ``k`` indices into ``out[r]``."""
    n = rows.shape[1]
    vals, idx, stack = _scratch(rows)
    for r in range(rows.shape[0]):
        _load_row(rows, r, vals, idx)
        if k * 64 <= n:
            _heap_select(vals, idx, 0, k, n, order)
            _sort_heap(vals, idx, 0, k, order)
        else:
            _nth_element(vals, idx, 0, k - 1, n, order)
            if sort_head:
                _std_sort(vals, idx, 0, k - 1, order, stack)
        for c in range(k):
            out[r, c] = idx[c]


def mode_rows(rows, values, indices):
    """For each row ``rows[r]``: torch's mode, the last pair of the first longest run of equal
    values in ``std::sort``'s order, into ``values[r]``, ``indices[r]``."""
    n = rows.shape[1]
    vals, idx, stack = _scratch(rows)
    for r in range(rows.shape[0]):
        _load_row(rows, r, vals, idx)
        _std_sort(vals, idx, 0, n, _LESS, stack)
        longest = 0
        run = 0
        for i in range(n):
            run += 1
            if i == n - 1 or vals[i] != vals[i + 1]:
                if run > longest:
                    values[r], indices[r], longest = vals[i], idx[i], run
                run = 0


def sort_rows(rows, order, out):
    """For each row ``rows[r]``: the indices of ``std::sort``'s order into ``out[r]``."""
    n = rows.shape[1]
    vals, idx, stack = _scratch(rows)
    for r in range(rows.shape[0]):
        _load_row(rows, r, vals, idx)
        _std_sort(vals, idx, 0, n, order, stack)
        for c in range(n):
            out[r, c] = idx[c]


_HELPERS = ("_scratch", "_load_row", "_before", "_swap", "_log2", "_median_to_first",
            "_partition_at_pivot", "_linear_insert", "_insertion_sort", "_sift", "_pop_to",
            "_heap_select", "_sort_heap", "_nth_element", "_std_sort")


def _tied_rows(ordered: np.ndarray) -> np.ndarray:
    """The rows of ``ordered`` (each row's first ``k + 1`` values, best first) where a tie
    touches the first ``k``: there torch's unstable algorithms choose among equals."""
    same = ordered[:, 1:] == ordered[:, :-1]
    if ordered.dtype.kind == "f":
        nan = np.isnan(ordered)
        same |= nan[:, 1:] & nan[:, :-1]
    return np.flatnonzero(same.any(axis=1))


def _exact_work_dtype(dtype: np.dtype) -> type:
    """float64 or int64: every dtype these ops take, exactly, in one compilation each."""
    return np.float64 if dtype.kind == "f" else np.int64


def torch_mode(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """torch's ``mode`` (values in ``rows``' dtype, int64 indices) of each row of ``rows`` (2-D,
    the dim last, at least one column)."""
    work = np.ascontiguousarray(rows, _exact_work_dtype(rows.dtype))
    values = np.empty(rows.shape[0], work.dtype)
    indices = np.empty(rows.shape[0], np.int64)
    if rows.shape[0]:
        compiled(globals(), "mode_rows", _COMPILED, helpers=_HELPERS, inline="never")(
            work, values, indices)
    return values.astype(rows.dtype), indices


def torch_sort_indices(rows: np.ndarray, stable: np.ndarray, descending: bool) -> np.ndarray:
    """torch's unstable ``sort`` indices of each row of ``rows`` (2-D, the dim last), given
    ``stable``, each row's stable order: ``std::sort`` sorts runs of at most 16 by insertion,
    stably, and orders no ties differently (callers pass rows longer than 16); the other rows
    go through it step by step."""
    todo = _tied_rows(np.take_along_axis(rows, stable, axis=1))
    if not todo.size:
        return stable
    out = np.array(stable, dtype=np.int64)
    work = np.ascontiguousarray(rows[todo], _exact_work_dtype(rows.dtype))
    chosen = np.empty(work.shape, np.int64)
    # (a few rows of ties, as a script's labels have, run as Python, a few ms: loading Numba
    # and the compiled sort would take a fresh process 0.5 s)
    fn = sort_rows if work.size <= _PYTHON_SORT_SIZE and "sort_rows" not in _COMPILED else \
        compiled(globals(), "sort_rows", _COMPILED, helpers=_HELPERS, inline="never")
    fn(work, _LARGEST if descending else _SMALLEST, chosen)
    out[todo] = chosen
    return out


def torch_topk_indices(rows: np.ndarray, head: np.ndarray, k: int, largest: bool,
                       sorted_: bool) -> np.ndarray:
    """torch's topk indices of each row of ``rows`` (2-D, the dim last), given ``head``: each
    row's first ``min(k + 1, n)`` indices in the stable order. Where that order is torch's too
    (no ties among them, a sorted result or a partial sort), ``head[:, :k]`` is the answer; the
    other rows go through libstdc++'s algorithms as torch's loop runs them."""
    n = rows.shape[1]
    out = np.ascontiguousarray(head[:, :k], dtype=np.int64)
    if k == 0 or rows.shape[0] == 0:
        return out
    if not sorted_ and k > 1 and k * 64 > n:  # nth_element's own order
        todo = np.arange(rows.shape[0], dtype=np.int64)
    else:
        todo = _tied_rows(np.take_along_axis(rows, head, axis=1))
    if todo.size:
        work = np.ascontiguousarray(rows[todo], _exact_work_dtype(rows.dtype))
        chosen = np.empty((todo.size, k), np.int64)
        fn = compiled(globals(), "topk_rows", _COMPILED, helpers=_HELPERS, inline="never")
        fn(work, int(k), _LARGEST if largest else _SMALLEST, bool(sorted_), chosen)
        out[todo] = chosen
    return out
