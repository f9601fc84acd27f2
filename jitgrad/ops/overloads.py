"""torch's deprecated scalar-first overloads, still accepted with a warning, as old tutorials
call them: ``p.data.add_(-lr, p.grad.data)`` is ``add_(Number alpha, Tensor other)``,
``addcmul_(value, tensor1, tensor2)`` likewise."""

from __future__ import annotations

import warnings
from numbers import Number
from typing import Any

from ..errors import user_stacklevel
from . import registry

# the overloads (each as torch's Tensor method prints it) that warned in this process: torch
# warns once per process
_WARNED: set[str] = set()


def scalar_first(name: str, scalar: str, tensors: tuple[str, ...], first: Any,
                 rest: tuple) -> tuple[Any, tuple]:
    """``(scalar, tensors)`` from ``first, *rest``, the deprecated call ``name(Number scalar,
    Tensor *tensors)`` (warning once); a TypeError when it is not that call.

    Args:
        name: the function's name (``"add"``).
        scalar: the scalar's keyword in the current signature (``"alpha"``).
        tensors: the names of the tensors that follow it (``("other",)``).
        first: the argument in the scalar's place.
        rest: the positional arguments after it.
    """
    if len(rest) != len(tensors) or not isinstance(first, Number) or isinstance(first, bool) \
            or not all(isinstance(t, registry.Tensor) for t in rest):
        raise TypeError(f"{name}() takes {1 + len(tensors)} positional arguments but "
                        f"{2 + len(rest)} were given")
    if name not in _WARNED:
        _WARNED.add(name)
        named = ", ".join(f"Tensor {t}" for t in tensors)
        warnings.warn(
            f"This overload of {name} is deprecated:\n\t{name}(Number {scalar}, {named})\n"
            f"Consider using one of the following signatures instead:\n\t{name}({named}, *, "
            f"Number {scalar} = 1)", UserWarning, stacklevel=user_stacklevel())
    return first, rest
