"""Loading a Numba dispatcher's machine code from its cache file without the refresh of Numba's
target context (which imports every typing and lowering registry, SciPy's BLAS check included:
about 0.2 s per process, needed only to compile new code). Used by the kernel cache
(``backends/kernel_cache``) and by the eager ops' loop kernels (``ops/nn_kernels``); it imports
nothing of Numba until called.
"""

from __future__ import annotations


def load_overload(fn, args: tuple) -> bool:
    """Loads the Numba dispatcher ``fn``'s machine code for ``args`` from its cache file, without
    the target context's ``refresh()`` that Numba's own load does first (it imports every typing
    and lowering registry, SciPy's BLAS check included: about 0.2 s per process, needed only to
    compile new code). Whether it did: False when ``fn`` has no cache file for these argument
    types, or its entry cannot be loaded or does not match them (the caller then calls ``fn``,
    which compiles it or loads it the usual way, warning about a file it cannot load)."""
    cache = getattr(fn, "_cache", None)
    if getattr(cache, "_cache_path", None) is None:  # compiled in memory
        return False
    try:
        from numba.core.compiler_lock import global_compiler_lock

        sig = tuple(fn.typeof_pyval(a) for a in args)
        with global_compiler_lock:
            if sig in fn.overloads:
                return False
            runtime(fn.targetctx)
            cres = cache._load_overload(sig, fn.targetctx)
            if cres is None or tuple(cres.signature.args) != sig or cres.objectmode:
                return False
            fn._cache_hits[sig] += 1
            fn.targetctx.insert_user_function(cres.entry_point, cres.fndesc, [cres.library])
            fn.add_overload(cres)
    except Exception:  # noqa: BLE001 - the caller's usual path loads it or warns and compiles
        return False
    return True


def runtime(context) -> None:
    """The symbols loaded machine code may call that ``refresh()`` would define: Numba's runtime
    (NRT: the allocator) and the hash secret ``numba.cpython.hashing`` defines when imported.
    Of the modules ``refresh()`` imports, no other one adds a symbol (the C helpers and math
    functions are defined when Numba is imported and its context made; the thread pool of a
    parallel kernel by the entry itself, Numba's ``reload_init``)."""
    import numba.cpython.hashing  # noqa: F401 - defines _numba_hashsecret_*
    from numba.core.runtime import rtsys

    rtsys.initialize(context)
