"""``torch.nn.utils.init``: ``skip_init``."""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["skip_init"]


def skip_init(module_cls: type, *args: Any, **kwargs: Any) -> Any:
    """Instantiates ``module_cls(*args, **kwargs)`` whose parameters and buffers are left for
    the caller to initialize (torch.nn.utils.skip_init).

    torch builds the module on the ``meta`` device and then allocates it uninitialized;
    jitgrad has no ``meta`` device, so the module is built on its device with its usual
    initialization (valid "uninitialized" contents: callers must overwrite them either way).
    The checks are torch's: ``module_cls`` must be a ``Module`` accepting a ``device`` argument.

    Args:
        module_cls: the ``nn.Module`` subclass.
        *args: its positional arguments.
        **kwargs: its keyword arguments (``device`` included).

    Returns:
        The module.
    """
    from ..module import Module

    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    kwargs.setdefault("device", "cpu")
    return module_cls(*args, **kwargs)
