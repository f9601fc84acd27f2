"""opdb records of ``jitgrad/ops/unique.py`` (unique, unique with ``dim``, unique_consecutive),
appended to ``opdb.OP_DB``. Their backward raises, as torch's: not differentiable here."""

from __future__ import annotations

import numpy as np


def _with_repeats(rng):
    return rng.choice([-1.5, 0.0, 2.0, 3.25], size=(3, 4))


def _rows(rng):
    return np.array([[1.0, 2.0], [0.5, 1.0], [1.0, 2.0], [0.5, 1.0], [3.0, -1.0]])


def _runs(rng):
    return np.array([1, 1, 2, 2, 3, 1, 1, 2], dtype=np.int64)


def _unique_ref(x, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    flat = x.reshape(-1) if dim is None else x
    values, inverse, counts = np.unique(flat, return_inverse=True, return_counts=True, axis=dim)
    inverse = inverse.reshape(x.shape if dim is None else (-1,))
    extra = ((inverse,) if return_inverse else ()) + ((counts,) if return_counts else ())
    return (values,) + extra if extra else values


def _unique_consecutive_ref(x, return_inverse=False, return_counts=False, dim=None):
    rows = x.reshape(-1, 1) if dim is None else np.moveaxis(x, dim, 0).reshape(x.shape[dim], -1)
    keep = [0] + [i for i in range(1, len(rows)) if (rows[i] != rows[i - 1]).any()]
    counts = np.diff(keep + [len(rows)])
    inverse = np.repeat(np.arange(len(keep)), counts)
    values = x.reshape(-1)[keep] if dim is None else np.take(x, keep, axis=dim)
    extra = ((inverse.reshape(x.shape),) if return_inverse and dim is None else
             (inverse,) if return_inverse else ()) + ((counts,) if return_counts else ())
    return (values,) + extra if extra else values


def unique_records() -> list:
    """The records (``opdb.OpInfo``); opdb's helpers are imported here, when opdb calls this."""
    from opdb import OpInfo, _many, _s

    return [
        OpInfo("unique", "unique",
               _many(_s(_with_repeats, name="values"),
                     _s(_with_repeats, return_inverse=True, return_counts=True, name="all"),
                     _s(_runs, return_counts=True, name="int")),
               _unique_ref, differentiable=False),
        OpInfo("unique_dim", "unique",
               _many(_s(_rows, dim=0, return_inverse=True, return_counts=True, name="rows"),
                     _s(_rows, dim=-1, name="columns")),
               _unique_ref, differentiable=False),
        OpInfo("unique_consecutive", "unique_consecutive",
               _many(_s(_runs, return_inverse=True, return_counts=True, name="runs"),
                     _s(_rows, dim=0, return_counts=True, name="rows")),
               _unique_consecutive_ref, differentiable=False),
    ]
