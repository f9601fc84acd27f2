"""The implementation flags torch's optimizers take (``foreach``, ``capturable``,
``differentiable``, ``fused``): jitgrad runs one update loop, so ``foreach`` and ``fused`` are
accepted and the others raise where torch would do something jitgrad cannot.

``fused=True`` (Adam, AdamW, SGD, Adagrad) runs that same update: its results are torch's
non-fused ones. torch's fused CPU kernels round a few elements differently in the last place
(Adam after 20 steps: 19 of 1000 elements by one float32 ulp), as they do in torch itself."""

from __future__ import annotations

__all__ = ["check_flags"]


def check_flags(name: str, capturable: bool = False, differentiable: bool = False,
                fused: bool | None = None, foreach: bool | None = None) -> None:
    """Raises torch's errors for flags that do not go together, and ``NotImplementedError``
    for the flags jitgrad's optimizers do not implement."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    if capturable:
        raise NotImplementedError(
            f"jitgrad's {name} does not support capturable=True (CUDA graph capture)")
    if differentiable:
        raise NotImplementedError(
            f"jitgrad's {name} does not support differentiable=True (autograd through the "
            "optimizer step)")
