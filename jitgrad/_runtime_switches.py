"""torch's small runtime switches and build queries, answered for this NumPy/Numba build:
``set_flush_denormal``, ``get_num_interop_threads``/``set_num_interop_threads``,
``init_num_threads``, ``has_lapack``/``has_mkl``/``has_openmp``/``has_spectral``,
``is_vulkan_available``, ``compiled_with_cxx11_abi`` and the deprecated
``set_default_tensor_type``."""

from __future__ import annotations

import builtins
import glob
import importlib.util
import os
import warnings
from typing import Any

import numpy as np

from . import dtypes

__all__ = ["set_flush_denormal", "get_num_interop_threads", "set_num_interop_threads",
           "init_num_threads", "has_lapack", "has_mkl", "has_openmp", "has_spectral",
           "is_vulkan_available", "compiled_with_cxx11_abi", "set_default_tensor_type"]


def _numpy_blas_name() -> str:
    try:
        return str(np.__config__.CONFIG["Build Dependencies"]["blas"]["name"]).lower()
    except (AttributeError, KeyError, TypeError):
        return ""


def _numba_has_openmp() -> bool:
    spec = importlib.util.find_spec("numba")  # (finds numba without importing it)
    if spec is None or spec.origin is None:
        return False
    return bool(glob.glob(os.path.join(os.path.dirname(spec.origin), "np", "ufunc",
                                       "omppool*")))


# jitgrad's linear algebra is NumPy's (LAPACK, through the BLAS NumPy was built with), its
# FFTs NumPy's pocketfft; MKL only where NumPy was built on it; OpenMP where Numba has its
# OpenMP threading layer (the parallel kernels' pool)
has_lapack: bool = True
has_mkl: bool = "mkl" in _numpy_blas_name()
has_openmp: bool = _numba_has_openmp()
has_spectral: bool = True


def set_flush_denormal(mode: bool) -> bool:
    """Asks for denormal floats to be flushed to zero; returns whether it was done.

    jitgrad computes with NumPy and Numba, which leave the CPU's denormal mode (MXCSR's
    FTZ/DAZ bits) as it is and give no way to set it, so this returns False, as torch does on
    a CPU without that support, and denormals keep their values.

    Args:
        mode: True to flush denormals, False for the default.
    """
    if not isinstance(mode, builtins.bool):
        raise RuntimeError(f"flush_denormal expects a bool, but got {type(mode).__name__}")
    return False


_interop_threads: int | None = None


def get_num_interop_threads() -> int:
    """The number of threads for inter-op parallelism (the value ``set_num_interop_threads``
    set, else the number of CPUs, as torch's default). jitgrad runs independent ops one after
    another on the calling thread: the number is a setting only."""
    return _interop_threads if _interop_threads is not None else (os.cpu_count() or 1)


def set_num_interop_threads(int: Any) -> None:  # noqa: A002 - torch's argument name
    """Sets the number of threads for inter-op parallelism, once per process (a second call
    raises, as torch's). jitgrad has no inter-op pool: ``get_num_interop_threads`` reports it.

    Args:
        int: a positive number of threads.
    """
    global _interop_threads
    if isinstance(int, builtins.bool) or not isinstance(int, builtins.int):
        raise RuntimeError(f"set_num_interop_threads expects an int, but got "
                           f"{type(int).__name__}")
    if int <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    if _interop_threads is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work "
                           "has started or set_num_interop_threads called")
    _interop_threads = int


def init_num_threads() -> None:
    """Initializes the number of parallel threads used on the current thread: gives it the
    count ``set_num_threads`` last set (Numba's thread count belongs to each thread, and a new
    thread starts at Numba's default)."""
    from ._threads import configured_num_threads

    count = configured_num_threads()
    if count is not None:
        import numba

        numba.set_num_threads(count)


def is_vulkan_available() -> bool:
    """Whether a Vulkan backend is available: never, in jitgrad."""
    return False


def compiled_with_cxx11_abi() -> bool:
    """Returns whether PyTorch was built with _GLIBCXX_USE_CXX11_ABI=1: jitgrad builds no C++
    library (its kernels are Numba's), so there is no such ABI to link against: False."""
    return False


def set_default_tensor_type(t: Any, /) -> None:
    """Sets the default floating point tensor type (deprecated in torch 2.1, as here: use
    ``set_default_dtype`` and ``set_default_device``).

    Args:
        t: a floating point legacy tensor type (``jitgrad.DoubleTensor``) or its name
            (``"torch.DoubleTensor"``).
    """
    from ._legacy import as_dtype

    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    if isinstance(t, str):
        if ".cuda." in t:
            raise TypeError(f"type {t} not available. Torch not compiled with CUDA enabled.")
        dt = as_dtype(t)
        if dt is None:
            raise AttributeError(f"module 'jitgrad' has no attribute {t.split('.')[-1]!r}")
    else:
        dt = as_dtype(t)
        if dt is None:
            raise TypeError("invalid type object: only floating-point types are supported as "
                            "the default type")
    dtypes.set_default_dtype(dt)  # (torch's TypeError for a non-floating type)
