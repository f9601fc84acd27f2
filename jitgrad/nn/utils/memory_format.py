"""``torch.nn.utils.memory_format``: ``convert_conv2d_weight_memory_format`` and
``convert_conv3d_weight_memory_format``.

jitgrad tensors are always strided row-major (``channels_last`` is a layout it does not
have, and ``clone(memory_format=channels_last)`` raises), and a weight's layout never changes
a result. So these check their arguments as torch does and return the module unchanged: a
model converted for torch runs the same in jitgrad.
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


def convert_conv2d_weight_memory_format(module: _M, memory_format: Any) -> _M:
    """Returns ``module``; its Conv2d / ConvTranspose2d weights keep jitgrad's one layout.

    Args:
        module: the module (searched recursively in torch).
        memory_format: a ``jitgrad.memory_format`` (``channels_last`` ...).

    Returns:
        ``module`` itself.
    """
    _check(memory_format)
    return module


def convert_conv3d_weight_memory_format(module: _M, memory_format: Any) -> _M:
    """Returns ``module``; its Conv3d / ConvTranspose3d weights keep jitgrad's one layout.

    Args:
        module: the module.
        memory_format: a ``jitgrad.memory_format`` (``channels_last_3d`` ...).

    Returns:
        ``module`` itself.
    """
    _check(memory_format)
    return module
