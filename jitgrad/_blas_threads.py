"""The thread count of the OpenBLAS that NumPy loaded, for ``set_num_threads``.

Eager matrix products run on NumPy's BLAS, which keeps its own thread pool. ``torch``'s
``set_num_threads`` also sets its BLAS's threads, so jitgrad's sets OpenBLAS's through its C
API (``openblas_set_num_threads``, as ``threadpoolctl`` does). A NumPy built on another BLAS
(MKL, Accelerate) is left alone: ``blas_threads()`` then returns None.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import sys

_PREFIXES = ("scipy_openblas_", "openblas_")
_SUFFIXES = ("64_", "")


def _candidate_paths() -> list[str]:
    import numpy

    package = os.path.dirname(numpy.__file__)
    paths = glob.glob(os.path.join(package, os.pardir, "numpy.libs", "*openblas*"))
    paths += glob.glob(os.path.join(package, ".dylibs", "*openblas*"))
    if sys.platform.startswith("linux"):
        try:
            with open("/proc/self/maps") as maps:
                paths += sorted({line.split()[-1] for line in maps if "openblas" in line
                                 and line.split()[-1].startswith("/")})
        except OSError:
            pass
    return paths


def _function(library: ctypes.CDLL, name: str):
    for prefix in _PREFIXES:
        for suffix in _SUFFIXES:
            function = getattr(library, f"{prefix}{name}{suffix}", None)
            if function is not None:
                return function
    return None


@functools.cache
def _openblas():
    for path in _candidate_paths():
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        setter = _function(library, "set_num_threads")
        getter = _function(library, "get_num_threads")
        if setter is not None and getter is not None:
            setter.argtypes, setter.restype = [ctypes.c_int], None
            getter.argtypes, getter.restype = [], ctypes.c_int
            return setter, getter
    return None


def blas_threads() -> int | None:
    """OpenBLAS's thread count, or None where NumPy runs on another BLAS."""
    functions = _openblas()
    return None if functions is None else int(functions[1]())


def set_blas_threads(count: int) -> None:
    """Sets OpenBLAS's thread count for the whole process (no effect on another BLAS)."""
    functions = _openblas()
    if functions is not None:
        functions[0](count)
