"""``torch.nn.utils.memory_format``: ``convert_conv2d_weight_memory_format`` and
``convert_conv3d_weight_memory_format``: the weights of the (transposed) convolutions of a
module, recursively, copied into a memory format (``jitgrad.channels_last`` /
``channels_last_3d``); the values, and so the results, stay the same.
"""

from __future__ import annotations

from typing import Any, TypeVar

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]

_M = TypeVar("_M")


def _check(memory_format: Any) -> None:
    from ...ops.extras import memory_format as _memory_format

    if not isinstance(memory_format, _memory_format):
        raise TypeError(f"clone(): argument 'memory_format' must be torch.memory_format, not "
                        f"{type(memory_format).__name__}")


def _convert(module: Any, memory_format: Any, classes: tuple) -> None:
    if isinstance(module, classes):
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, classes)


def convert_conv2d_weight_memory_format(module: _M, memory_format: Any) -> _M:
    """Lays out the weights of ``module``'s Conv2d / ConvTranspose2d (recursively) in
    ``memory_format``, in place.

    Args:
        module: the module.
        memory_format: a ``jitgrad.memory_format`` (``channels_last`` ...).

    Returns:
        ``module`` itself.
    """
    from ..conv import Conv2d, ConvTranspose2d

    _check(memory_format)
    _convert(module, memory_format, (Conv2d, ConvTranspose2d))
    return module


def convert_conv3d_weight_memory_format(module: _M, memory_format: Any) -> _M:
    """Lays out the weights of ``module``'s Conv3d / ConvTranspose3d (recursively) in
    ``memory_format``, in place.

    Args:
        module: the module.
        memory_format: a ``jitgrad.memory_format`` (``channels_last_3d`` ...).

    Returns:
        ``module`` itself.
    """
    from ..conv import Conv3d
    from ..conv3t import ConvTranspose3d

    _check(memory_format)
    _convert(module, memory_format, (Conv3d, ConvTranspose3d))
    return module
