"""Which arrays share memory: the jit call path's alias checks and in-place writes."""

from __future__ import annotations

from typing import Any

import numpy as np


def root_of(a: Any) -> Any:
    """The array that owns ``a``'s memory (or the foreign buffer it views)."""
    b = a.base
    while b is not None:
        if not isinstance(b, np.ndarray):
            return b
        a, b = b, b.base
    return a


def shares_any(a: np.ndarray, arrays: list) -> bool:
    if type(a) is not np.ndarray:  # a cuda array: views share their allocation
        return any(b is not None and a.shares_memory(b) for b in arrays)
    return any(b is not None and type(b) is np.ndarray and np.may_share_memory(a, b)
               for b in arrays)


def writable_in_place(donated: list, const_roots: frozenset, arrays: list) -> set:
    """The output slots of ``donated`` ((input index, output slot) pairs whose kernels write
    into the input's array) that may do so this call: the input is C-contiguous, writable and
    shares memory with no other input or constant. For the others ``arrays`` gets a copy,
    which the program overwrites and the call copies back."""
    roots = [id(a) if a.base is None else id(root_of(a)) for a in arrays]
    sharing: dict = {}
    for r in roots:
        sharing[r] = sharing.get(r, 0) + 1
    written = set()
    for idx, slot in donated:
        a = arrays[idx]
        if a.flags.c_contiguous and a.flags.writeable and sharing[roots[idx]] == 1 \
                and roots[idx] not in const_roots:
            written.add(slot)
        else:
            arrays[idx] = np.array(a, order="C")
    return written
