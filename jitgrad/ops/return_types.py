"""``jitgrad.return_types``: the named tuples that ops return (``max(x, 0)``, ``svd``,
``linalg.slogdet``, ...), printed as torch prints its return types, one field per line::

    jitgrad.return_types.max(
    values=tensor([2.]),
    indices=tensor([1]))
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any


# name -> the class made for it first (``jitgrad.return_types.<name>``)
REGISTERED: dict[str, type] = {}


def _repr(self: Any) -> str:
    fields = ",\n".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
    return f"jitgrad.return_types.{type(self).__name__}(\n{fields})"


def return_type(name: str, fields: list[str] | tuple[str, ...]) -> type:
    """A named tuple class ``jitgrad.return_types.<name>`` with ``fields``, printed as torch's.

    Args:
        name: the op's name (``"max"``, ``"linalg_svd"``).
        fields: the field names, in order.
    """
    cls = namedtuple(name, list(fields))
    cls.__module__ = "jitgrad.return_types"
    cls.__repr__ = _repr
    return REGISTERED.setdefault(name, cls)
