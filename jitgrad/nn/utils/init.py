"""``torch.nn.utils.init``: ``skip_init``."""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["skip_init"]


def skip_init(module_cls: type, *args: Any, **kwargs: Any) -> Any:
    """Instantiates ``module_cls(*args, **kwargs)`` whose parameters and buffers are left for
    the caller to initialize (torch.nn.utils.skip_init).

    As torch does, the module is built on the ``meta`` device (no memory, no initialization)
    and then given uninitialized memory on its device (``kwargs["device"]``, default
    ``"cpu"``) with ``Module.to_empty``. ``module_cls`` must be a ``Module`` accepting a
    ``device`` argument.

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
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
