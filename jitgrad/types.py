"""``torch.types``: the type aliases scripts import for annotations (``Number``, ``Device``,
``_dtype``, ``_size`` ...)."""

from __future__ import annotations

import os
from builtins import bool as _bool  # noqa: F401 - torch's names
from builtins import bytes as _bytes  # noqa: F401
from builtins import complex as _complex  # noqa: F401
from builtins import float as _float  # noqa: F401
from builtins import int as _int  # noqa: F401
from builtins import str as _str  # noqa: F401
from collections.abc import Sequence
from typing import IO, TypeAlias

from .device import device as _device
from .dtypes import dtype as _dtype  # noqa: F401 - torch's names
from .ops.storage import UntypedStorage as Storage
from .ops.surface24_info import layout as _layout  # noqa: F401
from .tensor import Size, Tensor

__all__ = ["Number", "Device", "FileLike", "Storage"]

_TensorOrTensors: TypeAlias = Tensor | Sequence[Tensor]
_TensorOrOptionalTensors: TypeAlias = Tensor | Sequence[Tensor | None]
_size: TypeAlias = Size | list[int] | tuple[int, ...]
_symsize: TypeAlias = Size | Sequence[int]
IntLikeType: TypeAlias = int
FloatLikeType: TypeAlias = float
BoolLikeType: TypeAlias = bool
Number: TypeAlias = int | float | bool
_Number = (int, float, bool)
FileLike: TypeAlias = str | os.PathLike | IO[bytes]
Device: TypeAlias = _device | str | int | None
