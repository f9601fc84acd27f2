"""The persistent kernel cache: rendered kernel modules on disk, compiled code kept by Numba.

Each kernel's rendered module (``numba_cpu``'s header + the kernel source) is written to
``<cache_dir>/kernels/k<hash>.py``, the hash covering the source, the versions of jitgrad,
Numba, llvmlite and Python, the compile options and the kernel library's own source (its
templates and math helpers). The file is imported as a module and its ``kernel`` function
compiled with ``numba.njit(cache=True)``, so Numba keeps the machine code in
``kernels/__pycache__`` and a later process loads it instead of compiling: through
``load_overload`` (``load_cfunc`` for C callbacks), which rebuilds it from Numba's cache file
without the refresh of Numba's target context that Numba's own load does first, falling back to
Numba's load when it cannot.

- Files are written atomically (a temporary file, then a hard link or ``os.replace``); an
  existing file is never rewritten when its content is right, so Numba's index, which is
  stamped with the source file's modification time, stays valid. Two processes writing the
  same kernel at once both succeed.
- A file whose content is not what its name says (truncated, edited) is rewritten with a
  warning; a Numba cache file that cannot be loaded is dropped with a warning and the kernel
  compiled again. Neither ever crashes a call.
- A cache directory that cannot be created or written makes this process compile in memory,
  with one warning.

``JITGRAD_CACHE_DIR`` sets the directory (default: ``$XDG_CACHE_HOME/jitgrad``, else
``~/.cache/jitgrad``; ``%LOCALAPPDATA%\\jitgrad`` on Windows). ``python -m jitgrad.cache info``
and ``clear`` inspect and empty it.
"""

from __future__ import annotations

import atexit
import builtins
import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

from .. import _numba_load
from .. import _config

KERNELS = "kernels"
STATS = "stats.log"


def cache_dir() -> Path:
    """The directory of jitgrad's persistent kernel cache (``JITGRAD_CACHE_DIR``, else the
    user's cache directory)."""
    explicit = _config.cache_dir()
    if explicit:
        return Path(explicit).expanduser()
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "jitgrad"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jitgrad"


class _State:
    """This process's view of the cache: where it is, whether it works, what it did."""

    def __init__(self) -> None:
        self.dir: Path | None = None  # the kernels directory, once checked
        self.usable: bool | None = None
        self.warned = False
        self.digest: str | None = None
        self.loaded = 0  # kernels Numba loaded from the cache
        self.fast = 0  # of those, loaded without refreshing Numba's target context
        self.compiled = 0  # kernels Numba compiled (cache misses, or in memory)
        self.recorded = False


STATE = _State()


def reset() -> None:
    """Forgets the directory checked so far (for tests that change ``JITGRAD_CACHE_DIR``)."""
    STATE.dir, STATE.usable, STATE.warned = None, None, False


def _warn_once(message: str) -> None:
    if not STATE.warned:
        STATE.warned = True
        warnings.warn(message, RuntimeWarning, stacklevel=4)


def kernels_dir() -> Path | None:
    """The kernels directory if it can be written, else None (after one warning)."""
    root = cache_dir()
    if STATE.usable is not None and STATE.dir is not None and STATE.dir.parent == root:
        return STATE.dir if STATE.usable else None
    path = root / KERNELS
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".probe-")
        os.close(fd)
        os.unlink(probe)
        usable = True
    except OSError as err:
        usable = False
        _warn_once(f"jitgrad.jit: the kernel cache directory {str(path)!r} cannot be written "
                   f"({err.strerror or err}); compiling kernels in memory for this process "
                   "(set JITGRAD_CACHE_DIR to a writable directory to keep them)")
    STATE.dir, STATE.usable = path, usable
    return path if usable else None


def _library_digest() -> str:
    """What a kernel's behaviour depends on besides its source: versions and kernel library."""
    if STATE.digest is None:
        import llvmlite
        import numba

        from .._version import __version__
        h = hashlib.sha256()
        for part in (__version__, numba.__version__, llvmlite.__version__, sys.version,
                     sys.platform):
            h.update(part.encode() + b"\0")
        here = Path(__file__).resolve().parent
        for name in ("kernel_lib.py", "numba_math.py", "_numba_bits.py",
                     "_numba_math_coefficients.py"):
            try:
                h.update((here / name).read_bytes())
            except OSError:
                h.update(name.encode())
        STATE.digest = h.hexdigest()
    return STATE.digest


def module_name(text: str, options: str) -> str:
    """The content-addressed name of a kernel module: ``k`` + 32 hex digits."""
    h = hashlib.sha256()
    h.update(_library_digest().encode() + b"\0" + options.encode() + b"\0" + text.encode())
    return "k" + h.hexdigest()[:32]


def _write_atomically(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        try:
            os.link(tmp, path)  # create-if-absent: a file another process wrote is kept
        except FileExistsError:
            if path.read_text(encoding="utf-8") != text:
                os.replace(tmp, path)
                tmp = None
        except OSError:  # no hard links on this file system
            os.replace(tmp, path)
            tmp = None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def load_function(text: str, options: str, name: str = "kernel", namespace: dict | None = None):
    """``name`` from the module ``text``, imported from its file in the cache; None when the
    cache directory is not usable (the caller compiles in memory). ``namespace``: globals the
    module gets before it runs (objects its text names but cannot import)."""
    directory = kernels_dir()
    if directory is None:
        return None
    stem = module_name(text, options)
    path = directory / f"{stem}.py"
    try:
        try:
            current = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            current = None
        if current != text:
            if current is not None:
                warnings.warn(f"jitgrad.jit: the cached kernel module {str(path)!r} is corrupt "
                              "(its content does not match its hash); rewriting it and "
                              "compiling the kernel again", RuntimeWarning, stacklevel=3)
                drop_numba_files(stem)
            _write_atomically(path, text)
    except OSError as err:
        STATE.usable = False
        _warn_once(f"jitgrad.jit: cannot write the kernel cache {str(path)!r} "
                   f"({err.strerror or err}); compiling kernels in memory for this process")
        return None
    spec = importlib.util.spec_from_file_location(f"_jitgrad_kernel_{stem}", path)
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(namespace or {})
    sys.modules[spec.name] = module  # Numba looks a cached function's module up by name
    code = builtins.compile(text, str(path), "exec")  # from the text we verified, not a re-read
    exec(code, module.__dict__)  # noqa: S102
    return module.__dict__[name]


def load_overload(fn, args: tuple) -> bool:
    """``_numba_load.load_overload``, counted in ``STATE.fast`` when it loads."""
    if not _numba_load.load_overload(fn, args):
        return False
    STATE.fast += 1
    return True


def load_cfunc(cf) -> bool:
    """Loads the C callback ``cf`` (a ``numba.core.ccallback.CFunc`` with caching enabled, not
    yet compiled) from its cache file, without refreshing the target context (see
    ``load_overload``); False when it cannot (the caller then calls ``cf.compile()``)."""
    try:
        from numba.core.compiler_lock import global_compiler_lock

        with global_compiler_lock:
            _numba_load.runtime(cf._targetdescr.target_context)
            cres = cf._cache._load_overload(cf._sig, cf._targetdescr.target_context)
            if cres is None or cres.signature != cf._sig:
                return False
            name = cres.fndesc.llvm_cfunc_wrapper_name
            address = cres.library.get_pointer_to_function(name)
            if not address:
                return False
            cf._cache_hits += 1
            cf._library, cf._wrapper_name, cf._wrapper_address = cres.library, name, address
    except Exception:  # noqa: BLE001 - the caller's usual path loads it or warns and compiles
        return False
    STATE.fast += 1
    return True


def unloadable(module_file: str, where: str, err: Exception, stacklevel: int) -> None:
    """A cached kernel's Numba files (of the kernel module ``module_file``) could not be
    loaded: drop them and warn that the kernel is compiled again."""
    drop_numba_files(os.path.splitext(os.path.basename(module_file))[0])
    warnings.warn(f"jitgrad.jit: a cached kernel in {where!r} could not be loaded "
                  f"({type(err).__name__}: {err}); compiling it again", RuntimeWarning,
                  stacklevel=stacklevel + 1)


def drop_numba_files(stem: str) -> None:
    """Removes Numba's cache files (index and data) of one kernel module."""
    directory = STATE.dir
    if directory is None:
        return
    for f in (directory / "__pycache__").glob(f"{stem}.*"):
        try:
            f.unlink()
        except OSError:
            pass


def count(loaded: bool) -> None:
    """Records one kernel loaded from the cache (``loaded``) or compiled."""
    if loaded:
        STATE.loaded += 1
    else:
        STATE.compiled += 1
    if not STATE.recorded:
        STATE.recorded = True
        atexit.register(_append_stats)


def _append_stats() -> None:
    """Adds this process's loads and compiles to the directory's ``stats.log`` (one short line,
    appended: concurrent processes do not lose each other's lines)."""
    if not STATE.usable or STATE.dir is None:
        return
    try:
        with open(STATE.dir.parent / STATS, "a", encoding="utf-8") as f:
            f.write(f"{STATE.loaded} {STATE.compiled} {STATE.fast}\n")
    except OSError:
        pass


def info(root: Path | None = None) -> dict:
    """Entries, bytes on disk and the hit rate recorded by the processes that used the cache
    (``fast``: the loads that skipped Numba's context refresh, see ``load_overload``)."""
    root = cache_dir() if root is None else root
    kernels = root / KERNELS
    entries = len(list(kernels.glob("k*.py"))) if kernels.is_dir() else 0
    size = sum(f.stat().st_size for f in root.rglob("*") if f.is_file()) if root.is_dir() else 0
    loaded = compiled = fast = 0
    try:
        for line in (root / STATS).read_text(encoding="utf-8").splitlines():
            parts = line.split()  # loaded, compiled[, loaded fast: older lines lack it]
            if len(parts) in (2, 3) and all(p.isdigit() for p in parts):
                loaded += int(parts[0])
                compiled += int(parts[1])
                fast += int(parts[2]) if len(parts) == 3 else 0
    except OSError:
        pass
    total = loaded + compiled
    return {"directory": str(root), "entries": entries, "bytes": size, "loaded": loaded,
            "compiled": compiled, "fast": fast, "hit_rate": loaded / total if total else None}


def clear(root: Path | None = None) -> int:
    """Deletes the cache's files; returns how many bytes were freed."""
    root = cache_dir() if root is None else root
    freed = info(root)["bytes"]
    for name in (KERNELS, STATS):
        target = root / name
        if target.is_dir():
            shutil.rmtree(target, ignore_errors=True)
        elif target.exists():
            target.unlink()
    reset()
    return freed
