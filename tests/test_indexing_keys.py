"""``x[key]`` and ``x[key] = value`` against torch for keys of every kind: results, dtypes and
errors (class and text).

Before: ``x[[[0, 1]]]`` indexed as NumPy does today (torch treats a short list holding a
sequence as a tuple of indices), a value tensor of another dtype written through index tensors
was converted (torch raises), a value of the wrong shape raised NumPy's ValueError, and a float
key or an integer key on a 0-d tensor named another error.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad

X = np.arange(24.0).reshape(2, 3, 4)
KEYS = [0, -1, 2, -3, 5, slice(None), slice(1, None), slice(None, None, 2), slice(5, 1),
        slice(-10, 10), None, Ellipsis, (0, 0), (0, 0, 0), (0, 0, 0, 0), (Ellipsis, 0),
        (Ellipsis, None), (0, Ellipsis, 0), (Ellipsis, Ellipsis), (None, 0, None), [0, 1],
        [[0, 1]], [1, -1], [True, False], (slice(None), [0, 2]), ([0, 1], [1, 2]),
        ([0, 1], slice(None), [1, 2]), np.array([0, 1]), np.array([True, False]), np.array(1),
        np.array([[0], [1]]), (np.array([0, 1]), np.array([0, 2])), (0, np.array([0, 2])),
        (np.array([0, 1]), 0, np.array([1, 3])), (slice(None), None, np.array([0, 1])),
        np.array([5]), (np.array([0]), np.array([9])), np.zeros((2, 3), bool),
        np.zeros((2, 3, 4), bool), np.ones((2, 3, 4), bool), np.array([], dtype=np.int64),
        (np.array([], dtype=np.int64), 0), 1.5, (0, 1.5), np.array([0.0, 1.0]),
        (slice(None),) * 4, slice(None, None, -1), slice(None, None, 0),
        np.array([0, 1], np.int32), True, False, np.array(True), np.array(False),
        (True, 0), (None, True), (Ellipsis, False), (True, True), (Ellipsis, True, 1),
        ([0, 1], True), (np.array([0, 1]), np.array(False), 2), (0, True, np.array([1, 2])),
        (slice(None), np.array([True, False])), np.array([[True, False, True]]),
        ([[True, False, True]],), (0, slice(0, 1), np.array([True, False])),
        (Ellipsis, np.array([True, True])), (np.array([0, 1]), np.array([0, 1, 2]))]
# (kind, repr(key)) -> why jitgrad differs from torch
KNOWN: dict = {}


def _key(lib, key):
    if isinstance(key, np.ndarray):
        return lib.tensor(key)
    if isinstance(key, tuple):
        return tuple(_key(lib, k) for k in key)
    return key


def _outcome(lib, kind, key):
    x = lib.tensor(X)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if kind == "get":
                out = x[_key(lib, key)]
            elif kind == "get0d":
                out = lib.tensor(5.0)[_key(lib, key)]
            else:
                x[_key(lib, key)] = -1.0 if kind == "set" else lib.tensor(-2.0)
                out = x
    except Exception as e:  # noqa: BLE001  (the class and text are compared)
        return "raised", f"{type(e).__name__}: {e}"
    return "ok", (tuple(out.shape), str(out.dtype).split(".")[-1], out.numpy().tolist())


@pytest.mark.parametrize("kind", ["get", "get0d", "set", "set_tensor"])
def test_keys_match_torch(kind):
    torch = pytest.importorskip("torch")
    bad = []
    for key in KEYS:
        differs = _outcome(torch, kind, key) != _outcome(jitgrad, kind, key)
        known = (kind, repr(key)) in KNOWN
        if differs != known:
            bad.append((repr(key), _outcome(torch, kind, key), _outcome(jitgrad, kind, key)))
    assert bad == []


def test_a_list_holding_a_sequence_is_a_tuple_of_indices():
    x = jitgrad.tensor(X)
    assert tuple(x[[[0, 1]]].shape) == (2, 3, 4)  # (x[[0, 1]], as torch)
    assert tuple(x[[[0, 1], [1, 2]]].shape) == (2, 4)  # (x[[0, 1], [1, 2]])
    assert tuple(x[[0, 1]].shape) == (2, 3, 4)


def test_a_value_of_another_dtype_through_index_tensors_is_refused():
    x = jitgrad.zeros(2, 3, dtype=jitgrad.float64)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes "
                                           "match, got Double for the destination and Float for "
                                           "the source."):
        x[jitgrad.tensor([0])] = jitgrad.tensor([1.0, 2.0, 3.0])
    x[jitgrad.tensor([True, False])] = jitgrad.tensor(5.0)  # (a mask and a 0-d value converts)
    x[0] = jitgrad.tensor([1.0, 2.0, 3.0])  # (basic indexing copies, converting)
    assert x.tolist() == [[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[3\] cannot "
                                           r"be broadcast to indexing result of shape \[2, 1\]"):
        x[:, jitgrad.tensor([0])] = jitgrad.tensor([1.0, 2.0, 3.0], dtype=jitgrad.float64)
