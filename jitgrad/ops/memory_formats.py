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
