"""opdb records of ``jitgrad/ops/torch_extras.py`` (flip, roll, repeat, tile, trace,
linalg.cross, lerp, addcmul, addcdiv, logaddexp, hypot, nan_to_num) and of the composites in
``jitgrad/ops/arranging.py`` (repeat_interleave, meshgrid, broadcast_tensors, tensordot, diff,
square, isclose, count_nonzero), appended to ``opdb.OP_DB``."""

from __future__ import annotations

import warnings

import numpy as np


def _off_unit(rng, *shape):
    # multiples of 0.75 plus a fraction in [0.1, 0.4] of it: away from the jumps of % and //
    k = rng.integers(-4, 4, shape)
    return np.asarray((k + rng.uniform(0.1, 0.4, shape)) * 0.75)


def _roll_ref(x, shifts, dims=None):
    return np.roll(x, shifts, dims)


def _repeat_ref(x, *sizes):
    return np.tile(x.reshape((1,) * (len(sizes) - x.ndim) + x.shape), sizes)


def _meshgrid_call(f, *xs, indexing):
    return f(*xs, indexing=indexing)


def _diff_ref(x, n=1, dim=-1, prepend=None, append=None):
    return np.diff(x, n, dim, **({} if prepend is None else {"prepend": prepend}),
                   **({} if append is None else {"append": append}))


def _lerp_ref(a, b, w):
    return a + w * (b - a)


def _logaddexp_ref(a, b):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.logaddexp(a, b)




def arranging_records() -> list:
    """The records (``opdb.OpInfo``); opdb's helpers are imported here, when opdb calls this."""
    from opdb import OpInfo, Sample, _arr, _away, _binary, _many, _pos, _s

    m34 = _arr(3, 4)
    return [
        OpInfo("flip", "flip", _many(_s(m34, (0, 1), name="both"), _s(_arr(2, 3, 4), (-1,)),
                                     _s(_arr(), (0,), name="0d")),
               lambda x, dims: np.flip(x, dims) if x.ndim else x.copy()),
        OpInfo("roll", "roll", _many(_s(m34, (1, -2), (0, 1), name="dims"),
                                     _s(m34, 5, name="flat"), _s(_arr(5), -7, 0, name="wrap")),
               _roll_ref),
        OpInfo("repeat", "Tensor.repeat", _many(_s(m34, 2, 1, 3, name="new_dim"),
                                                _s(_arr(3), 2, name="1d"),
                                                _s(_arr(), 2, 3, name="0d")), _repeat_ref),
        OpInfo("tile", "tile", _many(_s(m34, (2,), name="short"), _s(m34, (2, 1, 2))), np.tile),
        OpInfo("repeat_interleave", "repeat_interleave",
               _many(_s(m34, 2, 1, name="dim1"), _s(m34, 3, name="flat")),
               lambda x, r, dim=None: np.repeat(x, r, dim)),

        OpInfo("meshgrid", "meshgrid",
               lambda rng: [Sample((_arr(4)(rng), _arr(3)(rng)), {"indexing": "ij"}, "ij"),
                            Sample((_arr(4)(rng), _arr(3)(rng), _arr(2)(rng)),
                                   {"indexing": "xy"}, "xy")],
               lambda *xs, indexing: tuple(np.meshgrid(*xs, indexing=indexing)),
               call=_meshgrid_call),
        OpInfo("broadcast_tensors", "broadcast_tensors", _s(m34, _arr(4), _arr(2, 1, 1)),
               lambda *xs: tuple(np.broadcast_arrays(*xs))),

        OpInfo("trace", "trace", _s(m34), np.trace),
        OpInfo("tensordot", "tensordot",
               _many(_s(m34, _arr(4, 5, 2), 1, name="int"),
                     _s(_arr(4, 3), _arr(4, 5, 2), ([0], [0]), name="pairs"),
                     _s(_arr(2, 3, 4), _arr(3, 4, 5), name="two")),
               lambda a, b, dims=2: np.tensordot(a, b, dims)),
        OpInfo("diff", "diff", _many(_s(m34, name="last"), _s(m34, 2, 0, name="n2_dim0"),
                                     _s(m34, 1, 1, _arr(3, 1), _arr(3, 2), name="pre_append")),
               _diff_ref),
        OpInfo("linalg_cross", "linalg.cross", _many(_s(_arr(4, 3), _arr(4, 3), name="last"),
                                              _s(_arr(3, 2), _arr(3, 2), dim=0, name="dim0")),
               lambda a, b, dim=-1: np.cross(a, b, axis=dim)),
        OpInfo("lerp_tensor", "lerp", _s(m34, m34, _arr(3, 4, gen=lambda rng, *s: rng.uniform(
            -1, 2, s))), _lerp_ref),
        OpInfo("lerp_scalar", "lerp", _many(_s(m34, _arr(4), 0.3, name="low"),
                                            _s(m34, m34, 0.8, name="high")), _lerp_ref),
        OpInfo("addcmul", "addcmul", _s(m34, m34, _arr(4), value=0.5), lambda a, b, c,
               value=1: a + value * b * c),
        OpInfo("addcdiv", "addcdiv", _s(m34, m34, _arr(4, gen=_pos), value=-2),
               lambda a, b, c, value=1: a + value * b / c),
        OpInfo("square", "square", _many(_s(m34), _s(_arr(), name="0d")), np.square),
        OpInfo("logaddexp", "logaddexp", _binary(scalar=False), _logaddexp_ref),
        OpInfo("hypot", "hypot", _binary(_away, _away, scalar=False), np.hypot),
        OpInfo("isclose", "isclose",
               _s(lambda rng: np.array([1.0, np.nan, np.inf, 1e-9, -np.inf, 1.0]),
                  lambda rng: np.array([1.0 + 1e-6, np.nan, np.inf, 0.0, np.inf, 2.0])),
               np.isclose, differentiable=False),
        OpInfo("nan_to_num", "nan_to_num",
               _s(lambda rng: np.array([1.5, np.nan, np.inf, -np.inf]), 2.0, 5.0, -5.0),
               lambda x, nan=0.0, posinf=None, neginf=None: np.nan_to_num(
                   x, nan=nan, posinf=posinf, neginf=neginf), gradgrad=False),
        OpInfo("atan2", "atan2", _binary(_away, _away, scalar=False), np.arctan2),
        OpInfo("remainder", "remainder", _s(_arr(3, 4, gen=_off_unit), _arr(4, gen=_away)),
               np.remainder, gradgrad=False),
        OpInfo("remainder_scalar", "remainder", _s(_arr(3, 4, gen=_off_unit), 0.75),
               np.remainder, gradgrad=False),
        OpInfo("fmod", "fmod", _s(_arr(3, 4, gen=_off_unit), _arr(4, gen=_away)), np.fmod,
               gradgrad=False),
        OpInfo("fmod_scalar", "fmod", _s(_arr(3, 4, gen=_off_unit), -0.75), np.fmod,
               gradgrad=False),
        OpInfo("floor_divide", "floor_divide", _s(_arr(3, 4, gen=_off_unit), 0.75),
               np.floor_divide, differentiable=False),
        OpInfo("div_floor", "div",
               _s(_arr(3, 4, gen=_off_unit), _arr(4, gen=_away), rounding_mode="floor"),
               lambda a, b, rounding_mode: np.floor_divide(a, b), gradgrad=False),
        OpInfo("div_trunc", "div", _s(_arr(3, 4, gen=_off_unit), -0.75, rounding_mode="trunc"),
               lambda a, b, rounding_mode: np.trunc(a / b), gradgrad=False),
        OpInfo("count_nonzero", "count_nonzero",
               _many(_s(lambda rng: np.array([[0.0, 1.0, 2.0], [3.0, 0.0, 0.0]]), name="all"),
                     _s(lambda rng: np.array([[0.0, 1.0, 2.0], [3.0, 0.0, 0.0]]), 1,
                        name="dim")),
               lambda x, dim=None: np.count_nonzero(x, axis=dim), differentiable=False),


    ]
