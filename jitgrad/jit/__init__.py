"""``jitgrad.jit``: trace a function into an IR, derive its backward, compile both.

``@jitgrad.jit``, ``@jitgrad.jit(backend="interpreter")``, ``jitgrad.jit(fn)`` and
``from jitgrad.jit import jit`` all work: this module is callable.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

from .. import _config
from ..backends.kernel_cache import cache_dir
from . import custom_function  # noqa: F401 - registers the custom_function ops
from .check import JitCheckError
from ..errors import ConcretizationError, JitTraceError
from .calls import CompiledFunctionBackward
from .function import JitFunction, Lowered
from .._ir import Eqn, Graph, Var

__all__ = ["CompiledFunctionBackward", "ConcretizationError", "Eqn", "Graph", "JitCheckError",
           "JitFunction", "JitTraceError", "Lowered", "Var", "cache_dir", "jit"]


def jit(fn: Callable | None = None, *, backend: str = "auto",
        static_argnums: int | tuple = (), check: bool = False) -> Any:
    """Traces ``fn`` per input signature and compiles its forward and backward.

    Args:
        fn: the function; tensor arguments (also inside tuples, lists and dicts) are traced,
            every other argument is static (hashable, part of the cache key).
        backend: ``"auto"``, ``"interpreter"``, ``"numba"`` or ``"cuda"``. An unavailable
            backend raises RuntimeError at the first call.
        static_argnums: positions of arguments to treat as static even if they are tensors:
            keyed by value (a new value retraces) and concrete while tracing, so Python control
            flow may depend on them.
        check: also run ``fn`` eagerly on every call and compare values and gradients,
            raising ``JitCheckError`` that names the first output (or input gradient) and
            kernel that disagree. Slow; for testing and debugging.

    Returns:
        A ``JitFunction`` (or, used as ``@jit(backend=...)``, a decorator making one). With
        ``JITGRAD_DISABLE_JIT=1`` in the environment, ``fn`` itself.
    """
    if fn is None:
        return lambda f: jit(f, backend=backend, static_argnums=static_argnums, check=check)
    if _config.jit_disabled():
        return fn
    return JitFunction(fn, backend=backend, static_argnums=static_argnums, check=check)


_TORCHSCRIPT_NAMES = ("script", "trace", "ignore", "unused", "export", "annotate",
                      "is_scripting", "is_tracing", "freeze", "enable_onednn_fusion",
                      "onednn_fusion_enabled")


def __getattr__(name: str) -> Any:
    if name in _TORCHSCRIPT_NAMES:  # torch.jit's entry points (jit/torchscript.py)
        from . import torchscript

        return getattr(torchscript, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _CallableModule(types.ModuleType):
    def __call__(self, fn: Callable | None = None, **kwargs: Any) -> Any:
        return jit(fn, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
