"""``jitgrad.compile``: ``torch.compile``'s entry point, on ``jitgrad.jit``.

A compiled function or module traces with ``jit`` on each new input signature. Where
``torch.compile`` would break the graph (Python control flow on a tensor's value, an in-place
op jit cannot replay), the trace raises; with ``fullgraph=False`` (torch's default) the
compiled object then warns once and runs eagerly from then on, as the user's code would
without compiling. ``fullgraph=True`` lets the error through, as torch raises on a graph break.
"""

from __future__ import annotations

import functools
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from ..errors import ConcretizationError, DisabledCallError, JitTraceError
from ..nn.module import Module
from . import jit

MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
BACKENDS = ("inductor", "eager", "aot_eager")


class InvalidBackend(RuntimeError):  # noqa: N818 - torch's name
    """``compile(backend=...)`` names a backend jitgrad does not have."""


_LIVE: weakref.WeakSet = weakref.WeakSet()  # every compiled function (``reset`` clears them)
STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile",
           "eager_then_compile", "aot_eager_then_compile")
stance = ["default"]  # the current one (``jitgrad.compiler.set_stance``)


class _RunEager(Exception):  # noqa: N818 - internal signal, never seen by users
    """The ``eager_on_recompile`` stance refused a compile: run the function eagerly."""


class _Compiled:
    """A function traced with ``jit``, run eagerly once a trace fails (``fullgraph=False``)."""

    _not_guarded = True  # (see ``JitFunction._not_guarded``)

    def __init__(self, fn: Callable, fullgraph: bool, backend: str) -> None:
        functools.update_wrapper(self, fn, updated=())
        self._fn = fn
        self._jitted = jit(fn, backend="interpreter" if backend == "aot_eager" else "auto")
        self._fullgraph = fullgraph
        self._eager_reason: str | None = None
        self._ran_eager_first = False  # (the eager_then_compile stances)
        self._jitted._on_miss = self._on_miss
        _LIVE.add(self)

    def _reset(self) -> None:
        self._jitted.clear_cache()
        self._eager_reason = None
        self._ran_eager_first = False

    def _on_miss(self, reason: str | None) -> None:
        """Before a compile: the ``eager_on_recompile`` and ``fail_on_recompile`` stances."""
        if stance[0] == "eager_on_recompile":
            raise _RunEager
        if stance[0] == "fail_on_recompile":
            code = getattr(self._fn, "__code__", None) or getattr(
                getattr(self._fn, "forward", None), "__code__", None)
            where = "" if code is None else (
                f" filename: '{code.co_filename}', function name: '{code.co_name}', "
                f"line number: {code.co_firstlineno}")
            why = f"\n    triggered by: {reason}" if reason else ""
            raise RuntimeError("Detected recompile when torch.compile stance is "
                               f"'fail_on_recompile'.{where}{why}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        now = stance[0]
        if now == "force_eager":
            return self._fn(*args, **kwargs)
        if now.endswith("eager_then_compile") and not self._ran_eager_first:
            self._ran_eager_first = True
            return self._fn(*args, **kwargs)
        if now not in STANCES:  # (torch: when a compiled function is called)
            raise RuntimeError(f"invalid torch.compile stance '{now}'")
        if self._eager_reason is None:
            try:
                return self._jitted(*args, **kwargs)
            except _RunEager:
                return self._fn(*args, **kwargs)
            except DisabledCallError as error:  # (silently eager from now on, as torch runs it)
                self._eager_reason = str(error)
            except (JitTraceError, ConcretizationError) as error:
                if self._fullgraph:
                    raise
                self._eager_reason = str(error).splitlines()[0]
                warnings.warn(f"jitgrad.compile: {getattr(self._fn, '__qualname__', self._fn)} "
                              f"cannot be traced ({self._eager_reason}); it runs eagerly from "
                              f"now on (fullgraph=True raises instead)", UserWarning,
                              stacklevel=2)
        return self._fn(*args, **kwargs)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:  # a compiled method binds
        return self if obj is None else functools.partial(self, obj)


class OptimizedModule(Module):
    """A module whose calls run compiled, as torch's: the original module is the child
    ``_orig_mod`` (so state dict keys start with ``_orig_mod.``), and its other attributes are
    reachable through the wrapper."""

    def __init__(self, mod: Module, fullgraph: bool = False, backend: str = "inductor") -> None:
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled_call", _Compiled(mod, fullgraph, backend))

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._compiled_call(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)


def compile(model: Callable | None = None, *, fullgraph: bool = False,  # noqa: A001
            dynamic: bool | None = None, backend: str | Callable = "inductor",
            mode: str | None = None, options: dict | None = None,
            disable: bool = False) -> Any:
    """Compiles a function or module with ``jitgrad.jit``, as ``torch.compile``.

    Args:
        model: a function or ``nn.Module``; omitted, ``compile`` returns a decorator.
        fullgraph: raise where the function cannot be traced (torch: on a graph break);
            otherwise warn once and run it eagerly.
        dynamic: accepted for torch compatibility (jit kernels take sizes as arguments, so a
            new shape retraces but reuses compiled kernels).
        backend: ``"inductor"`` (jit), ``"aot_eager"`` (jit on the interpreter backend) or
            ``"eager"`` (no compilation).
        mode: one of torch's modes; all compile the same way here.
        options: accepted for torch compatibility.
        disable: return ``model`` unchanged.

    Returns:
        An ``OptimizedModule`` for a module, else a compiled function.
    """
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                 mode=mode, options=options, disable=disable)
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    if mode is not None and mode not in MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(MODES)}")
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise InvalidBackend(f"Invalid backend: {backend!r}; jitgrad.compile has "
                             f"{', '.join(BACKENDS)}")
    if disable or backend == "eager" or getattr(model, "_torchdynamo_disable", False):
        return model
    if isinstance(model, Module):
        return OptimizedModule(model, fullgraph, backend)
    return _Compiled(model, fullgraph, backend)


def reset() -> None:
    """Forgets what every compiled function compiled, and which ones fell back to eager: the
    next call traces again (``torch._dynamo.reset``)."""
    for compiled in list(_LIVE):
        compiled._reset()
