"""The helper process of ``compile_pool``: compiles the kernels it is handed into the
persistent kernel cache. Run as ``python -m jitgrad.backends.compile_worker IDLE_S``; it reads
batches of jobs from stdin and answers ``(key, ok)`` on stdout for each kernel it took, and
exits at the end of stdin or after ``IDLE_S`` seconds without a job. A kernel another process
claimed is skipped; one whose compile fails or warns is answered ``False`` (the process that
asked compiles it and reports what Numba says)."""

from __future__ import annotations

import os
import queue
import sys
import threading
import warnings

from .compile_pool import claim, receive, send


def _compile(job) -> bool:
    import numba

    from . import kernel_cache

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            py_func = kernel_cache.load_function(job.text, job.described,
                                                 "entry" if job.cfunc else "kernel")
            if py_func is None:
                return False
            if job.cfunc:  # (as ``numba_chain._cfunc`` makes it)
                from numba.core import sigutils
                from numba.core.ccallback import CFunc

                made = CFunc(py_func, sigutils.normalize_signature(job.signature), locals={},
                             options=job.options)
                made.enable_caching()
                made.compile()
            else:
                numba.njit(cache=True, **job.options)(py_func).compile(job.signature)
        except Exception:  # noqa: BLE001 - the asking process compiles it and reports
            return False
    return not caught


def main(idle_s: float) -> int:
    # replies go to the pipe the asking process reads; anything else printed goes to stderr
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    jobs: queue.Queue = queue.Queue()

    def read() -> None:  # (drained at once: the asking process never blocks on a full pipe)
        while True:
            batch = receive(sys.stdin.buffer)
            jobs.put(batch)
            if batch is None:
                return

    threading.Thread(target=read, daemon=True).start()
    while True:
        try:
            batch = jobs.get(timeout=idle_s)
        except queue.Empty:  # idle: exit (the asking process starts another when it needs one)
            return 0
        if batch is None:
            return 0
        claims, todo = batch
        for job in todo:
            if claim(claims, job.key):
                send(replies, (job.key, _compile(job)))


if __name__ == "__main__":
    code = main(float(sys.argv[1]) if len(sys.argv) > 1 else 60.0)
    # (no interpreter shutdown: the reader thread may be blocked reading stdin, which makes
    # CPython abort at shutdown; every reply is flushed and every cache file closed by now)
    os._exit(code)
