"""``torch.nn.modules.module``: ``Module`` and the hooks of every module's forward."""

from __future__ import annotations

from .._module_hooks import register_module_forward_hook, register_module_forward_pre_hook
from ..module import Module

__all__ = ["Module", "register_module_forward_pre_hook", "register_module_forward_hook"]
