"""``jitgrad.utils``: data loading (``jitgrad.utils.data``), activation checkpointing
(``jitgrad.utils.checkpoint``), hooks' handles (``hooks``), pytrees (``_pytree``), timing
(``benchmark``), FLOP counting (``flop_counter``, ``module_tracker``), ``weak``, ``dlpack`` and
``model_zoo``. Each submodule loads on first use (``jitgrad.func`` needs ``_pytree`` only)."""

import importlib
from typing import Any

_SUBMODULES = ("_pytree", "benchmark", "checkpoint", "data", "dlpack", "flop_counter", "hooks",
               "model_zoo", "module_tracker", "weak")


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(_SUBMODULES))
