# ruff: noqa: N999 - (torch's module name)
"""``jitgrad._C``: the few names of torch's ``torch._C`` that Python code uses to take part in
the ``__torch_function__`` protocol (``jitgrad.overrides``)."""

from __future__ import annotations

from ._torch_function import (DisableTorchFunction, DisableTorchFunctionSubclass,
                              _disabled_torch_function_impl)
from ._torch_function import is_torch_function_enabled as _is_torch_function_enabled
from ._torch_function import is_torch_function_mode_enabled as _is_torch_function_mode_enabled

__all__ = ["DisableTorchFunction", "DisableTorchFunctionSubclass",
           "_disabled_torch_function_impl", "_is_torch_function_enabled",
           "_is_torch_function_mode_enabled"]


def __getattr__(name: str):
    """``_LinAlgError``: torch's class behind ``linalg.LinAlgError`` (imported on first use:
    the linear-algebra ops load after this module)."""
    if name == "_LinAlgError":
        from .ops.linalg2 import LinAlgError

        return LinAlgError
    raise AttributeError(f"module 'jitgrad._C' has no attribute '{name}'")
