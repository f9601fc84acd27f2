"""opdb records of ``jitgrad/ops/elementwise3.py`` (logit, xlogy, sinc, signbit, fmax, fmin,
heaviside, logical_xor, bitwise_not, positive, logaddexp2, copysign, nextafter), appended to
``opdb.OP_DB``: swept against NumPy, torch, gradcheck and the jit by ``tests/test_ops.py``."""

from __future__ import annotations

import numpy as np

_LOOSE = {"rtol": {"float32": 1e-4, "float64": 1e-9}, "atol": {"float32": 1e-5,
                                                               "float64": 1e-10}}


def _logit_ref(x, eps=None):
    z = x if eps is None else np.clip(x, eps, 1 - eps)
    return np.log(z / (1 - z))


def _xlogy_ref(x, y):
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(x == 0, 0.0, x * np.log(y))
    return np.where(np.isnan(y), y, out)


def _steps(rng, *shape):
    return rng.choice([-1.0, 0.0, 0.5, 2.0], shape)


def _zero_some(rng, *shape):
    x = rng.uniform(0.2, 2.0, shape)
    x.reshape(-1)[::3] = 0.0
    return x


def elementwise3_records() -> list:
    """The records (``opdb.OpInfo``); opdb's helpers are imported here, when opdb calls this."""
    from opdb import OpInfo, _arr, _away, _binary, _many, _pos, _s, _u, _unary

    def inside(lo, hi):
        return lambda rng, *s: _u(rng, *s, lo=lo, hi=hi)

    unit = inside(0.05, 0.95)
    m34 = _arr(3, 4)
    return [
        OpInfo("logit", "logit", _many(_unary(unit),
                                       _s(_arr(3, 4, gen=inside(0.01, 0.99)), eps=0.2,
                                          name="eps"),
                                       _s(_arr(3, 4, gen=inside(0.01, 0.99)), 0.3,
                                          name="eps_pos")),
               _logit_ref, **_LOOSE),
        OpInfo("xlogy", "xlogy", _many(_binary(_u, _pos, scalar=False),
                                       _s(_arr(3, 4, gen=_zero_some), _arr(3, 4, gen=_pos),
                                          name="zeros")), _xlogy_ref, **_LOOSE),
        OpInfo("xlogy_scalar_other", "xlogy", _many(_s(m34, 2.5, name="number"),
                                                    _s(_arr(2, 3, gen=_zero_some), 0.5,
                                                       name="zeros")), _xlogy_ref, **_LOOSE),
        OpInfo("xlogy_scalar_self", "xlogy", _many(_s(1.5, _arr(3, 4, gen=_pos), name="number"),
                                                   _s(0.0, _arr(3, gen=_pos), name="zero")),
               _xlogy_ref, **_LOOSE),
        OpInfo("sinc", "sinc", _unary(), np.sinc, **_LOOSE),
        OpInfo("sinc_at_zero", "sinc", _s(lambda rng: np.array([0.0, 0.25, -1.5]), name="zero"),
               np.sinc, gradgrad=False, **_LOOSE),  # (the gradient is 0 at 0, as torch's)
        OpInfo("signbit", "signbit", _many(_unary(), _s(lambda rng: np.array([-0.0, 0.0, -1.0]),
                                                        name="signed_zero")),
               np.signbit, differentiable=False),
        OpInfo("fmax", "fmax", _binary(scalar=False), np.fmax, gradgrad=False),
        OpInfo("fmin", "fmin", _binary(scalar=False), np.fmin, gradgrad=False),
        OpInfo("heaviside", "heaviside",
               _many(_s(_arr(3, 4, gen=_steps), _arr(3, 4), name="same"),
                     _s(_arr(2, 3, gen=_steps), _arr(3), name="bcast")),
               np.heaviside, differentiable=False),
        OpInfo("logical_xor", "logical_xor",
               _many(_s(_arr(3, 4, gen=_steps), _arr(3, 4, gen=_steps), name="float"),
                     _s(lambda rng: np.array([0, 2, -1, 0]), lambda rng: np.array([1, 0, 3, 0]),
                        name="int")),
               np.logical_xor, differentiable=False),
        OpInfo("bitwise_not", "bitwise_not",
               _many(_s(lambda rng: np.array([[1, -3], [0, 7]]), name="int"),
                     _s(lambda rng: np.array([True, False, True]), name="bool")),
               np.invert, differentiable=False),
        OpInfo("positive", "positive", _unary(), lambda x: x),
        OpInfo("logaddexp2", "logaddexp2", _binary(scalar=False), np.logaddexp2, **_LOOSE),
        OpInfo("copysign", "copysign", _binary(_away, _u, scalar=False), np.copysign),
        OpInfo("copysign_scalar", "copysign", _many(_s(_arr(3, 4, gen=_away), -2.0, name="neg"),
                                                    _s(_arr(3, gen=_away), 0.0, name="zero")),
               np.copysign),
        OpInfo("nextafter", "nextafter", _binary(scalar=False), np.nextafter,
               differentiable=False),
    ]
