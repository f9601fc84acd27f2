"""``lgamma`` and ``digamma`` composed from jitgrad ops (jitgrad has no such primitives yet).

Both are differentiable through their composition: the gradient of :func:`lgamma` is the
derivative of its Lanczos approximation, which matches digamma to about 1e-13 in float64.
"""

from __future__ import annotations

import math
from typing import Any

import jitgrad

__all__ = ["digamma", "lgamma", "xlogy"]

_LANCZOS_G = 7.0
_LANCZOS = (
    0.99999999999980993,
    676.5203681218851,
    -1259.1392167224028,
    771.32342877765313,
    -176.61502916214059,
    12.507343278686905,
    -0.13857109526572012,
    9.9843695780195716e-6,
    1.5056327351493116e-7,
)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _lanczos_lgamma(y: Any) -> Any:
    """``log(Gamma(y))`` for ``y >= 0.5`` by the Lanczos approximation (g=7, n=9)."""
    z = y - 1
    a = _LANCZOS[0]
    for i in range(1, len(_LANCZOS)):
        a = a + _LANCZOS[i] / (z + i)
    t = z + (_LANCZOS_G + 0.5)
    return _HALF_LOG_2PI + (z + 0.5) * jitgrad.log(t) - t + jitgrad.log(a)


def lgamma(x: Any) -> Any:
    """``log(|Gamma(x)|)`` elementwise, as ``torch.lgamma`` (``inf`` at non-positive integers).

    Args:
        x: Floating tensor.

    Returns:
        A tensor of ``x``'s shape and dtype.
    """
    reflect = x < 0.5
    y = jitgrad.where(reflect, 1 - x, x)
    big = _lanczos_lgamma(y)
    xs = jitgrad.where(reflect, x, jitgrad.full_like(x, 0.25))
    small = math.log(math.pi) - jitgrad.log(jitgrad.sin(math.pi * xs).abs()) - big
    return jitgrad.where(reflect, small, big)


def digamma(x: Any) -> Any:
    """The logarithmic derivative of the gamma function, as ``torch.digamma``.

    Args:
        x: Floating tensor.

    Returns:
        A tensor of ``x``'s shape and dtype.
    """
    reflect = x < 0.5
    y = jitgrad.where(reflect, 1 - x, x)
    shift = 0
    for k in range(6):
        shift = shift + 1 / (y + k)
    w = y + 6
    w2 = 1 / (w * w)
    series = w2 * (1 / 12 - w2 * (1 / 120 - w2 * (1 / 252 - w2 * (1 / 240 - w2 * (1 / 132)))))
    big = jitgrad.log(w) - 0.5 / w - series - shift
    xs = jitgrad.where(reflect, x, jitgrad.full_like(x, 0.25))
    small = big - math.pi / jitgrad.tan(math.pi * xs)
    return jitgrad.where(reflect, small, big)


def xlogy(x: Any, y: Any) -> Any:
    """``x * log(y)``, with ``0`` where ``x == 0`` (as ``torch.xlogy``)."""
    if not jitgrad.is_tensor(x):
        x = jitgrad.tensor(x, dtype=y.dtype)
    x, y = jitgrad.broadcast_tensors(x, y)
    zero = x == 0
    safe_y = jitgrad.where(zero, jitgrad.ones_like(y), y)
    return jitgrad.where(zero, jitgrad.zeros_like(x), x * jitgrad.log(safe_y))
