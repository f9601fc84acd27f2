"""Backends: each is a module with ``compile(graph) -> run(arrays) -> arrays`` and
``render(graph) -> str``. ``interpreter`` is the reference; compiled backends are looked up by
name and report clearly when they are not available.

The package also plugs the eager CUDA runtime (``cuda_runtime``: ops on cuda tensors) into the
base layer's device: ``import jitgrad`` imports this package, which registers
``load_cuda_runtime`` in ``device.RUNTIME_LOADERS``, and the first cuda device asked for loads
it. Nothing below the backends imports a backend.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from ..device import RUNTIME_LOADERS, cuda_unavailable

NAMES = ("auto", "interpreter", "numba", "cuda")
_MODULES = {"interpreter": "interpreter", "numba": "numba_cpu", "cuda": "cuda_jit"}


def __getattr__(name: str) -> ModuleType:
    # torch.backends.cuda / .cudnn / .mps, as scripts use them (imported on first use)
    if name in ("cuda", "cudnn", "mps"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_name(name: str) -> None:
    """Raises ValueError for a backend name jitgrad does not know."""
    if name not in NAMES:
        raise ValueError(f"unknown jit backend {name!r}; expected one of {', '.join(NAMES)}")


def get_backend(name: str, tensors: list = ()) -> ModuleType:
    """The backend module for ``name``; RuntimeError if it is not available. ``"auto"`` picks
    ``cuda`` when one of ``tensors`` (the jit function's arguments) is a cuda tensor."""
    check_name(name)
    on_cuda = any(t.is_cuda for t in tensors)
    if name == "auto":
        if on_cuda:
            name = "cuda"
        else:
            name = "numba" if _numba_importable() else "interpreter"
    elif on_cuda and name != "cuda":
        raise RuntimeError(f"jit backend {name!r} runs on the CPU: for cuda tensors use "
                           "backend='cuda' or backend='auto'")
    try:
        mod = importlib.import_module(f"{__name__}.{_MODULES[name]}")
    except ImportError as e:
        raise RuntimeError(
            f"jit backend {name!r} is not available yet in this jitgrad build ({e}); use "
            "backend='interpreter' or backend='auto'") from None
    available = getattr(mod, "available", None)
    if available is not None and not available():
        raise RuntimeError(f"jit backend {name!r} is not available on this machine")
    return mod


def _numba_importable() -> bool:
    return importlib.util.find_spec("numba") is not None


def load_cuda_runtime() -> None:
    """Loads the CUDA runtime for ``device.cuda_runtime``: the eager cuda dispatcher
    (``cuda_eager`` with the op tables ``cuda_runtime`` collects), or raises
    ``cuda_unavailable`` when numba-cuda cannot drive a GPU (or its simulator) here."""
    try:
        from numba import cuda

        ok = bool(cuda.is_available())
        reason = "" if ok else "numba.cuda.is_available() is False"
    except Exception as e:  # noqa: BLE001 - no numba-cuda, no driver, a broken toolkit
        ok, reason = False, f"{type(e).__name__}: {e}"
    if not ok:
        raise cuda_unavailable(reason)
    from . import cuda_runtime  # noqa: F401 - installs the dispatcher's CUDA path


RUNTIME_LOADERS["cuda"] = load_cuda_runtime
