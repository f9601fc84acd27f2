"""torch.jit's entry points (``script``, ``trace``, ``ignore``, ``is_tracing``, ...) on
jitgrad's tracing JIT.

jitgrad has no TorchScript: ``script`` and ``trace`` compile with ``jitgrad.compile`` (a
function) or ``Module.compile`` (a module, compiled in place and returned, so parameters and
state dict keys stay the module's own). The result computes what the original computes; where
the JIT cannot trace (Python control flow on tensor values) it warns once and runs eagerly,
as ``torch.compile`` without ``fullgraph``. A ``ScriptModule``'s ``.code``, ``.graph`` and
``save`` do not exist. ``freeze`` checks what torch checks and returns the compiled module itself
(its parameters stay parameters); ``enable_onednn_fusion`` records a flag (jitgrad's jit fuses
with its own kernels, not oneDNN's).
"""

from __future__ import annotations

from typing import Any, TypeVar

from ..nn.module import Module
from ..ops.registry import state
from ..tensor import Tensor
from .torch_compile import compile as _compile

T = TypeVar("T")


def _compiled(obj: Any) -> Any:
    if isinstance(obj, Module):
        obj.compile()
        return obj
    if not callable(obj):
        raise RuntimeError(f"jitgrad.jit: cannot compile an object of type "
                           f"{type(obj).__name__}; pass a function or an nn.Module")
    return _compile(obj)


def script(obj: Any, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None,
           example_inputs: Any = None) -> Any:
    """Compiles a function or module (``torch.jit.script``'s entry point; see the module
    docstring for what differs from TorchScript)."""
    return _compiled(obj)


def trace(func: Any, example_inputs: Any = None, optimize: Any = None, check_trace: bool = True,
          check_inputs: Any = None, check_tolerance: float = 1e-5, strict: bool = True,
          _force_outplace: bool = False, _module_class: Any = None,
          _compilation_unit: Any = None, example_kwarg_inputs: dict | None = None,
          _store_inputs: bool = True) -> Any:
    """Compiles ``func`` and runs it once on ``example_inputs`` (a tensor, or a tuple or list
    of the arguments), which traces it, as ``torch.jit.trace`` runs it."""
    compiled = _compiled(func)
    if example_inputs is not None or example_kwarg_inputs is not None:
        if example_inputs is None:
            args: tuple = ()
        elif isinstance(example_inputs, (Tensor, dict)):  # one argument
            args = (example_inputs,)
        else:  # a tuple, or a list or other iterable of the arguments (as torch's)
            args = tuple(example_inputs)
        compiled(*args, **(example_kwarg_inputs or {}))
    return compiled


def freeze(mod: Any, preserved_attrs: list[str] | None = None,
           optimize_numerics: bool = True) -> Any:
    """``torch.jit.freeze``: a module compiled by ``script``/``trace``, in eval mode, for
    inference: the module itself (see the module docstring).

    Args:
        mod: the module ``script`` or ``trace`` returned.
        preserved_attrs: accepted for torch's signature (nothing is inlined away).
        optimize_numerics: accepted for torch's signature.
    """
    if not isinstance(mod, Module) or "_compiled_call_impl" not in mod.__dict__:
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use "
                           "torch.jit.script or torch.jit.trace to script your 'nn.Module'.")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. "
                           "Please call .eval() on your module before freezing.")
    return mod


_onednn_fusion = [False]


def enable_onednn_fusion(enabled: bool) -> None:
    """Turns torch's oneDNN Graph fuser flag on or off (recorded; see the module docstring)."""
    _onednn_fusion[0] = bool(enabled)


def onednn_fusion_enabled() -> bool:
    """Whether ``enable_onednn_fusion(True)`` was called (False by default, as torch)."""
    return _onednn_fusion[0]


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """Leaves a function to run as Python (``@torch.jit.ignore``): the function itself."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn: T) -> T:
    """Marks a method TorchScript would not compile (``@torch.jit.unused``): the method."""
    return fn


def export(fn: T) -> T:
    """Marks a method as a TorchScript entry point (``@torch.jit.export``): the method."""
    return fn


def annotate(the_type: Any, the_value: T) -> T:
    """A type hint for TorchScript: returns ``the_value``."""
    return the_value


def is_scripting() -> bool:
    """False: jitgrad never runs code as TorchScript."""
    return False


def is_tracing() -> bool:
    """True while ``jitgrad.jit`` traces the calling code (not under ``vmap`` alone)."""
    return any(not getattr(t, "batching", False) for t in state.traces)
