"""The environment flags jitgrad reads, in one place. Each is read when it is used (so a test
or a user can set it at run time), except where noted.

* ``JITGRAD_DEBUG``: dump the jit graph after each pass (``jit.passes``).
* ``JITGRAD_VERIFY``: run ``Graph.verify()`` after every pass (implied by ``JITGRAD_DEBUG``).
* ``JITGRAD_DISABLE_JIT``: ``jit(fn)`` returns ``fn`` itself.
* ``JITGRAD_LOG``: comma-separated topics to log (``recompiles``, ``cache``; ``jit.cache``).
* ``JITGRAD_CACHE_DIR``: the persistent kernel cache's directory (``backends.kernel_cache``).
* ``JITGRAD_CACHE_SIZE_LIMIT``: specializations one jit function keeps (``jit.cache``).
* ``JITGRAD_PARALLEL_MIN``: the work (elements x ops, a transcendental counting 8) from which
  the Numba backend runs a kernel in parallel (read once, when ``backends.numba_cpu`` is
  imported).
* ``JITGRAD_MAX_KERNEL_OPS``: the most equations one fused kernel holds (read once, when
  ``jit.passes.fuse`` is imported).
* ``JITGRAD_GEMM``: ``numpy`` runs the Numba backend's matrix products on NumPy's BLAS instead
  of the tiled kernels (read when a program is compiled, ``backends.gemm``).
* ``JITGRAD_MALLOC_TUNING``: ``0`` leaves glibc's malloc thresholds as they are (``_malloc``:
  by default jitgrad raises them at import, so freed arrays are reused without page faults).
* ``JITGRAD_MPI_PROGRESS_THREAD``: ``0`` turns the MPI progress thread off
  (``distributed.progress``).
"""

from __future__ import annotations

import os

from .errors import user_stacklevel

PARALLEL_MIN_DEFAULT = 20_000_000
CACHE_SIZE_LIMIT_DEFAULT = 8
MAX_KERNEL_OPS_DEFAULT = 64


def _on(name: str, default: str = "0") -> bool:
    return os.environ.get(name, default) not in ("", "0")


def debug() -> bool:
    """``JITGRAD_DEBUG``: dump the graph after each jit pass."""
    return _on("JITGRAD_DEBUG")


def verify() -> bool:
    """``JITGRAD_VERIFY`` (or ``JITGRAD_DEBUG``): verify the graph after every jit pass."""
    return debug() or _on("JITGRAD_VERIFY")


def cache_dir() -> str | None:
    """``JITGRAD_CACHE_DIR``: where the persistent kernel cache lives, if set."""
    return os.environ.get("JITGRAD_CACHE_DIR") or None


def compile_workers() -> int:
    """``JITGRAD_COMPILE_WORKERS``: helper processes that compile kernels (0 or 1; default 1)."""
    try:
        return int(os.environ.get("JITGRAD_COMPILE_WORKERS", "1"))
    except ValueError:
        return 1


def cache_size_limit() -> int:
    """``JITGRAD_CACHE_SIZE_LIMIT``: specializations one jit function keeps (at least 1)."""
    try:
        return max(1, int(os.environ.get("JITGRAD_CACHE_SIZE_LIMIT",
                                         CACHE_SIZE_LIMIT_DEFAULT)))
    except ValueError:
        return CACHE_SIZE_LIMIT_DEFAULT


GEMM_MODES = ("tiled", "numpy")


def gemm_mode() -> str:
    """``JITGRAD_GEMM``: ``tiled`` (the default) or ``numpy``."""
    value = os.environ.get("JITGRAD_GEMM", "tiled").lower()
    if value not in GEMM_MODES:
        raise ValueError(f"JITGRAD_GEMM={value!r} is not one of {', '.join(GEMM_MODES)}")
    return value


def max_kernel_ops() -> int:
    """``JITGRAD_MAX_KERNEL_OPS``: the most equations one fused kernel holds."""
    return int(os.environ.get("JITGRAD_MAX_KERNEL_OPS", str(MAX_KERNEL_OPS_DEFAULT)))


def jit_disabled() -> bool:
    """``JITGRAD_DISABLE_JIT``: ``jit`` returns the function unchanged."""
    return _on("JITGRAD_DISABLE_JIT")


# Not an environment flag: the topics ``jitgrad._logging.set_logs`` turned on (torch's API).
LOG_TOPICS: set[str] = set()


def log_enabled(what: str) -> bool:
    """``JITGRAD_LOG``: whether ``what`` is one of the comma-separated topics (or was turned on
    by ``jitgrad._logging.set_logs``)."""
    return what in LOG_TOPICS or what in os.environ.get("JITGRAD_LOG", "").split(",")


def parallel_min() -> int:
    """``JITGRAD_PARALLEL_MIN``: work (elements x ops) from which a kernel runs in parallel."""
    return int(os.environ.get("JITGRAD_PARALLEL_MIN", str(PARALLEL_MIN_DEFAULT)))


def mpi_progress_thread() -> bool:
    """``JITGRAD_MPI_PROGRESS_THREAD``: whether a progress thread may run (default on)."""
    return os.environ.get("JITGRAD_MPI_PROGRESS_THREAD", "1") != "0"


# Not an environment flag: ``jitgrad.set_warn_always`` (torch's), read by the warnings jitgrad
# otherwise gives once per process (the legacy linalg functions' deprecations).
WARN_ALWAYS = [False]


WARNED: set = set()  # the keys of the once-per-process warnings given so far


def warn_once(key: str, text: str) -> None:
    """Gives ``text`` as a UserWarning, at the user's line, the first time ``key`` is seen in
    the process (torch's ``TORCH_WARN_ONCE``), or every time under ``set_warn_always(True)``."""
    if key not in WARNED or WARN_ALWAYS[0]:
        WARNED.add(key)
        import warnings

        warnings.warn(text, UserWarning, stacklevel=user_stacklevel(2))


def warn_complex_to_real() -> None:
    """torch's once-per-process UserWarning where a cast or copy drops complex values'
    imaginary parts (NumPy's own is a ComplexWarning at every call: callers silence it)."""
    warn_once("complex_to_real", "Casting complex values to real discards the imaginary part")


def scalar_of_grad(warn: bool) -> None:
    """torch's warning (once per process) when ``float()`` or ``complex()`` converts a tensor
    requiring grad with grad mode on (``warn``); ``int``, ``bool`` and ``item`` do not warn."""
    if warn:
        warn_once("scalar_of_grad", "Converting a tensor with requires_grad=True to a scalar "
                  "may lead to unexpected behavior.\nConsider using tensor.detach() first.")
