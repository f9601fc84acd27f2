"""Complex numbers seen as real ones: ``view_as_real`` / ``view_as_complex`` (views, as
torch's: writes reach the input, the version counter is shared; ``x.real``/``x.imag`` of a
complex ``x`` select from ``view_as_real``; traced and on the cuda device they compute the
copies they decompose into) and ``angle`` of complex values, with torch's gradient 0 at 0. The
public functions, with their checks, are in ``surface24_info.py`` and ``surface24_math.py``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from . import registry
from .elementwise import IMAG, REAL
from .registry import LINEAR, OPAQUE, apply, defop
from .surface24 import fn


def _view_as_real_impl(x: np.ndarray) -> np.ndarray:
    real = x.real  # (NumPy's view of the real parts, strided over the complex items)
    return np.lib.stride_tricks.as_strided(real, x.shape + (2,), x.strides + (real.itemsize,))


def _view_as_complex_impl(x: np.ndarray) -> np.ndarray:
    return x.view(np.complex64 if x.dtype == np.float32 else np.complex128)[..., 0]


def _view_as_complex_meta(x: Any) -> tuple:
    return tuple(x.shape[:-1]), (dtypes.complex64 if x.dtype is dtypes.float32
                                 else dtypes.complex128)


VIEW_AS_REAL = defop(
    "view_as_real", _view_as_real_impl, kind=OPAQUE, view=True,
    meta=lambda x: (tuple(x.shape) + (2,), x.dtype.to_real()),
    vjp=(lambda g, ans, x: apply(VIEW_AS_COMPLEX, g.contiguous()),), jvp=LINEAR,
    decompose=lambda x: apply(registry.OPS["stack"], apply(REAL, x), apply(IMAG, x), dim=x.ndim))
VIEW_AS_COMPLEX = defop(
    "view_as_complex", _view_as_complex_impl, kind=OPAQUE, view=True,
    meta=_view_as_complex_meta, vjp=(lambda g, ans, x: apply(VIEW_AS_REAL, g),), jvp=LINEAR,
    decompose=lambda x: x[..., 0] + x[..., 1] * 1j)


def _angle_parts(x: Any) -> tuple:
    """Where ``x`` is 0, and ``x`` with 1 there (so no rule divides by zero)."""
    mask = x == 0
    return mask, fn("where")(mask, 1, x)


def _angle_vjp(g: Any, ans: Any, x: Any) -> Any:
    mask, safe = _angle_parts(x)  # (torch's angle_backward: 0 at 0, not NaN)
    return fn("where")(mask, 0, g * safe / safe.abs().square() * 1j)


def _angle_jvp(tangents: tuple, ans: Any, x: Any) -> Any:
    mask, safe = _angle_parts(x)
    return fn("where")(mask, 0, (tangents[0] * safe.conj() / safe.abs().square() * -1j).real)


def _angle_decompose(x: Any) -> Any:
    mask, safe = _angle_parts(x)
    at_zero = fn("atan2")(x.imag.detach(), x.real.detach())  # (0 or +-pi, by the zeros' signs)
    return fn("where")(mask, at_zero, fn("atan2")(safe.imag, safe.real))


# the argument of complex values (``atan2(imag, real)``), with torch's gradient 0 at 0
ANGLE = defop("angle", np.angle, kind=OPAQUE, meta=lambda x: (tuple(x.shape), x.dtype.to_real()),
              save=(0,), vjp=(_angle_vjp,), jvp=_angle_jvp, decompose=_angle_decompose)
