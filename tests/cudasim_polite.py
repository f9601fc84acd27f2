"""A politer wait for numba's CUDA simulator (test infrastructure, not jitgrad).

The simulator runs each thread of a block as a Python thread, and its ``BlockManager.run``
polls them in a busy loop (``is_alive`` on every thread, over and over) until all finish or all
wait at ``syncthreads``. The polling thread holds the GIL the simulated threads need: in a
profile of a convolution test, 18 million ``is_alive`` calls took most of its 30 s. This
``run`` does the same bookkeeping but, while some thread is still running, waits on it with a
short ``join`` (which releases the GIL) before polling again. Installed only over the exact
``run`` it was written against (its source hash): another numba version keeps its own.
"""

from __future__ import annotations

import hashlib
import inspect

import numpy as np

# numba 0.68.1's BlockManager.run
KNOWN_RUN_SHA256 = "82782a4eb5ab0b0a57baf3066d96ea3a1c9d7424aaf5161a7e1d58304d4a2a66"
_WAIT_S = 0.0002


def _run(self, grid_point, *args):
    from numba.cuda.simulator.kernel import BlockThread

    threads, livethreads, blockedthreads = set(), set(), set()
    for block_point in np.ndindex(*self._block_dim):
        def target():
            self._f(*args)
        t = BlockThread(target, self, grid_point, block_point, self._debug)
        t.start()
        threads.add(t)
        livethreads.add(t)
    while livethreads:
        for t in livethreads:
            if t.syncthreads_blocked:
                blockedthreads.add(t)
            elif t.exception:
                for t_other in threads:  # abort the others, as numba's loop does
                    t_other.abort = True
                    t_other.syncthreads_blocked = False
                    t_other.syncthreads_event.set()
                raise t.exception[0].with_traceback(t.exception[1])
        if livethreads == blockedthreads:
            for t in blockedthreads:
                t.syncthreads_blocked = False
                t.syncthreads_event.set()
            blockedthreads = set()
        else:
            next(t for t in livethreads if t not in blockedthreads).join(_WAIT_S)
        livethreads = {t for t in livethreads if t.is_alive()}
    for t in threads:
        if t.exception:
            raise t.exception[0].with_traceback(t.exception[1])


def install(expected_sha256: str | None) -> bool:
    """Puts ``_run`` in place of ``BlockManager.run`` if that is the known source."""
    from numba.cuda.simulator import kernel

    source = inspect.getsource(kernel.BlockManager.run)
    digest = hashlib.sha256(source.encode()).hexdigest()
    if expected_sha256 is not None and digest != expected_sha256:
        return False
    kernel.BlockManager.run = _run
    return True
