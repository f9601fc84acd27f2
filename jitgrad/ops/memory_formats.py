"""torch's memory-format objects (a leaf module: the factories and ``clone`` both use them)."""

from __future__ import annotations


class memory_format:  # noqa: N801 - named like torch.memory_format
    """A memory layout request (``jitgrad.contiguous_format``, ``jitgrad.preserve_format``,
    ``jitgrad.channels_last``, ``jitgrad.channels_last_3d``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"jitgrad.{self.name}"


preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")


def preserved_order(shape: tuple, strides: tuple) -> list[int]:
    """The dims of a fresh tensor laid out like one of these strides, innermost first, as
    torch's ``empty_like`` (``preserve_format``) and its elementwise outputs order them: by
    stride, the smaller size first among equal strides, and a stride-0 (broadcast) dim kept
    where row-major order puts it (an insertion sort, so the order of ties is row-major's)."""

    def comes_after(d0: int, d1: int) -> int:
        s0, s1 = strides[d0], strides[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return 1 if s0 > s1 else -1
        return 1 if shape[d0] > shape[d1] else 0

    perm = list(range(len(shape) - 1, -1, -1))
    for i in range(1, len(shape)):
        dim1 = i
        for dim0 in range(i - 1, -1, -1):
            order = comes_after(perm[dim0], perm[dim1])
            if order > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif order < 0:
                break
    return perm
