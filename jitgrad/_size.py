"""``Size``, the shape of a tensor (``jitgrad.Size``, torch's ``torch.Size``): a tuple whose
joins, repeats and slices are Sizes."""

from __future__ import annotations

from typing import Any


class Size(tuple):
    """The shape of a tensor: a tuple that prints like ``jitgrad.Size([2, 3])``."""

    def __repr__(self) -> str:
        return f"jitgrad.Size({list(self)})"

    # (as torch.Size: joining or repeating sizes gives a Size)
    def __add__(self, other: Any) -> Any:
        out = tuple.__add__(self, other)
        return Size(out) if out is not NotImplemented else out

    def __radd__(self, other: Any) -> Any:
        return Size(tuple(other) + tuple(self)) if isinstance(other, tuple) else NotImplemented

    def __mul__(self, n: Any) -> Any:
        out = tuple.__mul__(self, n)
        return Size(out) if out is not NotImplemented else out

    __rmul__ = __mul__

    def __getitem__(self, key: Any) -> Any:  # (a slice of sizes is a Size)
        out = tuple.__getitem__(self, key)
        return Size(out) if type(key) is slice else out

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n
