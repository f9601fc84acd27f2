"""The implementation flags torch's optimizers take (``foreach``, ``capturable``,
``differentiable``, ``fused``): jitgrad runs one update loop, so ``foreach`` is accepted (the
result is the same) and the others raise where torch would do something jitgrad cannot."""

from __future__ import annotations

__all__ = ["check_flags"]


def check_flags(name: str, capturable: bool = False, differentiable: bool = False,
                fused: bool | None = None) -> None:
    """Raises ``NotImplementedError`` for the flags jitgrad's optimizers do not implement."""
    if capturable:
        raise NotImplementedError(
            f"jitgrad's {name} does not support capturable=True (CUDA graph capture)")
    if differentiable:
        raise NotImplementedError(
            f"jitgrad's {name} does not support differentiable=True (autograd through the "
            "optimizer step)")
    if fused:
        raise NotImplementedError(f"jitgrad's {name} does not support fused=True")
