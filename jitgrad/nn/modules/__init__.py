"""``torch.nn.modules``: the module classes (the same objects as ``jitgrad.nn``'s), and its
submodules ``module`` (``Module``, the global forward hooks) and ``utils`` (``_pair`` ...)."""

from __future__ import annotations

import importlib
from typing import Any

_SUBMODULES = ("module", "utils")


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    from ... import nn

    if name.startswith("_") or not hasattr(nn, name):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(nn, name)
