"""torch's ``sym_*`` utilities (``torch.sym_int``, ``sym_float``, ``sym_max``, ``sym_min``,
``sym_not``, ``sym_ite``, ``sym_sum``, ``sym_sqrt``) on plain numbers, as torch computes them
outside symbolic tracing. jitgrad has no symbolic ints (its ``jit`` specializes on shapes), so
these are torch's plain-number branches: scripts that call them run unchanged."""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

__all__ = ["sym_int", "sym_float", "sym_max", "sym_min", "sym_not", "sym_ite", "sym_sum",
           "sym_sqrt"]

_ALL_TYPES = (np.integer, np.floating, builtins.int, builtins.float)
_FLOAT_TYPES = (np.floating, builtins.float)


def sym_int(a: Any) -> int:
    """SymInt-aware utility for int casting: ``int(a)``.

    Args:
        a: Object to cast.
    """
    return builtins.int(a)


def sym_float(a: Any) -> float:
    """SymInt-aware utility for float casting: ``float(a)``.

    Args:
        a: Object to cast.
    """
    if hasattr(a, "__sym_float__"):
        return a.__sym_float__()
    return builtins.float(a)


def _check_numbers(a: Any, b: Any) -> bool:
    for x in (a, b):
        if not isinstance(x, _ALL_TYPES):
            raise AssertionError(f"expected {_ALL_TYPES}, got {type(x)}")
    return isinstance(a, _FLOAT_TYPES) or isinstance(b, _FLOAT_TYPES)


def sym_max(a: Any, b: Any) -> Any:
    """SymInt-aware utility for max which avoids branching on a < b: only for int/float, and a
    float if either argument is one (unlike ``builtins.max``)."""
    if _check_numbers(a, b):
        return builtins.float(builtins.max(a, b))
    return builtins.max(a, b)


def sym_min(a: Any, b: Any) -> Any:
    """SymInt-aware utility for min(): as ``sym_max``, the smaller."""
    if _check_numbers(a, b):
        return builtins.float(builtins.min(a, b))
    return builtins.min(a, b)


def sym_not(a: Any) -> Any:
    """SymInt-aware utility for logical negation: ``not a``.

    Args:
        a: a bool (or an object with ``__sym_not__``).
    """
    if hasattr(a, "__sym_not__"):
        return a.__sym_not__()
    return not a


def sym_ite(b: Any, t: Any, f: Any) -> Any:
    """SymInt-aware utility for ternary operator (``t if b else f``): ``b`` a bool, ``t`` and
    ``f`` of one type."""
    if not isinstance(b, builtins.bool):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


def sym_sum(*args: Any) -> Any:
    """N-ary add: ``sum(args)``. Accepts both ``sym_sum([a, b, c])`` and ``sym_sum(a, b,
    c)``."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return builtins.sum(args)


def sym_sqrt(a: Any) -> float:
    """``math.sqrt(a)`` (an object with ``__sym_sqrt__`` computes its own)."""
    if hasattr(a, "__sym_sqrt__"):
        return a.__sym_sqrt__()
    return math.sqrt(a)


sym_sqrt.__name__ = sym_sqrt.__qualname__ = "_sym_sqrt"  # (torch's generated function's name)
