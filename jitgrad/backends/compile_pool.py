"""Kernels compiled in a helper process while this one compiles others (a cold first call).

Numba compiles one function at a time in a process (its compiler lock), about 0.1-0.4 s per
kernel: a graph of ten kernels (W2) spends 2 s of its first call compiling them, one after
another. When a graph has several kernels that are neither compiled in this process nor in the
persistent cache, this process hands them to a helper process (``compile_worker``), in reverse
order, and goes on compiling from the first: the helper writes each kernel's machine code into
the persistent cache, where this process loads it when it gets there. Like torch inductor's
compile workers, the helper is started once, when first needed, and serves the process's later
graphs too; it exits with this process, or after ``IDLE_S`` without work. The C callbacks of a
chain (``numba_chain``) are handed over the same way.

Who compiles a kernel is decided by a claim file (``O_CREAT | O_EXCL`` in a directory of this
process), taken by whichever process gets to the kernel first: no kernel is compiled twice,
and this process waits for a kernel only when the helper has started it. The helper compiles
for the argument types this process predicts (``predicted_types``); a kernel whose
arguments turn out otherwise is compiled here as it always was. Anything that goes wrong in the
helper (it cannot start, dies, a kernel fails or warns) leaves the kernel to this process, which
compiles it and reports errors and warnings as without a helper.

``JITGRAD_COMPILE_WORKERS=0`` turns the helper off; it is off where fewer than two CPUs are
usable, and needs a writable kernel cache directory.
"""

from __future__ import annotations

import atexit
import os
import pickle
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import _config
from . import kernel_cache

# A graph hands kernels to the helper only when it has at least this many to compile: the
# helper needs about 0.6 s to start (Python, NumPy, Numba, Numba's first-compile set-up), in
# which this process compiles two or three kernels itself.
MIN_COLD_KERNELS = 4

# The longest this process waits for a kernel the helper took (a kernel compiles in seconds).
WAIT_S = 300.0
# A helper with nothing to compile for this long exits (it holds ~150 MB); the next cold graph
# starts another.
IDLE_S = 60.0

_HEADER = struct.Struct("<Q")


def send(stream, message: object) -> None:
    """Writes one length-prefixed pickled message."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def receive(stream) -> object | None:
    """Reads one message written by ``send``; None at the end of the stream."""
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    size = _HEADER.unpack(head)[0]
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)  # noqa: S301 - from our own helper process, over its pipe


def claim(directory: str, key: str) -> bool:
    """Takes the kernel ``key``: True for the first process to ask, False for every later one
    (True also when the claims are gone, with a helper that retired: the caller compiles it)."""
    try:
        os.close(os.open(os.path.join(directory, key), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    except OSError:
        return True
    return True


@dataclass
class Job:
    """One kernel for the helper: its module text and options as ``numba_cpu`` makes them."""

    key: str
    text: str
    described: str
    options: dict
    signature: object  # the arguments' Numba types; a chain's C callback: its Signature
    cfunc: bool = False  # a chain's C callback (``numba_chain``): the module's ``entry``


@dataclass
class _Helper:
    process: subprocess.Popen
    claims: str  # the claim files' directory
    pid: int  # the process that started the helper (a forked child must not use it)
    done: dict = field(default_factory=dict)  # key -> threading.Event
    ok: dict = field(default_factory=dict)  # key -> bool, once done
    alive: bool = True
    lock: threading.Lock = field(default_factory=threading.Lock)
    compiled: int = 0  # kernels the helper compiled (for tests and benchmarks)


_helper: _Helper | None = None
_failed = False  # the helper could not be started, or died: not tried again in this process


def enabled() -> bool:
    """Whether this process may hand kernels to a helper process."""
    if _failed or _config.compile_workers() < 1 or getattr(sys, "frozen", False):
        return False
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return cpus >= 2 and kernel_cache.kernels_dir() is not None


_starting = threading.Lock()


def _start() -> _Helper | None:
    with _starting:  # (two threads compiling their first graphs start one helper)
        return _start_locked()


def _start_locked() -> _Helper | None:
    global _helper, _failed
    if _helper is not None and _helper.pid == os.getpid():
        return _helper if _helper.alive else None
    env = dict(os.environ)
    env["JITGRAD_CACHE_DIR"] = str(kernel_cache.cache_dir())
    root = str(Path(__file__).resolve().parents[2])  # (where this jitgrad is imported from)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "jitgrad.backends.compile_worker", str(IDLE_S)], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except OSError:
        _failed = True
        return None
    helper = _Helper(process, tempfile.mkdtemp(prefix="jitgrad-claims-"), os.getpid())
    threading.Thread(target=_read_replies, args=(helper,), daemon=True,
                     name="jitgrad-compile-helper").start()
    atexit.register(_stop, helper)
    _helper = helper
    return helper


def _read_replies(helper: _Helper) -> None:
    while True:
        try:
            reply = receive(helper.process.stdout)
        except Exception:  # noqa: BLE001 - a broken pipe ends the helper like an exit
            reply = None
        if reply is None:
            break
        key, ok = reply
        with helper.lock:
            helper.ok[key] = ok
            helper.compiled += ok
            event = helper.done.get(key)
        if event is not None:
            event.set()
    try:
        retired = helper.process.wait(timeout=5) == 0  # (idle: it exits with 0)
    except subprocess.TimeoutExpired:
        retired = False
    _died(helper, retired)


def _died(helper: _Helper, retired: bool = False) -> None:
    """The helper exited: kernels it had not answered are left to this process. One that
    crashed or was killed is not replaced; one that retired idle is, by the next ``submit``."""
    global _failed, _helper
    with helper.lock:
        helper.alive = False
        events = list(helper.done.values())
    if retired:
        with _starting:
            if _helper is helper:
                _helper = None
        shutil.rmtree(helper.claims, ignore_errors=True)
    else:
        _failed = True
    for event in events:
        event.set()


def _stop(helper: _Helper) -> None:
    """At exit: the helper is stopped at once (a kernel it was compiling is left uncached:
    Numba writes a cache file under a temporary name first)."""
    if helper.pid != os.getpid():  # (a forked child's exit leaves its parent's helper alone)
        return
    try:
        helper.process.stdin.close()
    except OSError:
        pass
    if helper.process.poll() is None:
        helper.process.kill()
    try:
        helper.process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    shutil.rmtree(helper.claims, ignore_errors=True)


def submit(jobs: list[Job]) -> None:
    """Hands ``jobs`` to the helper (started now if it is not running), to compile in order."""
    helper = _start()
    if helper is None:
        return
    fresh = []
    with helper.lock:
        for job in jobs:
            if job.key not in helper.done:
                helper.done[job.key] = threading.Event()
                fresh.append(job)
    if not fresh:
        return
    try:
        send(helper.process.stdin, (helper.claims, fresh))
    except (OSError, ValueError):  # (it exited: idle, or crashed)
        _died(helper, helper.process.poll() == 0)


def handed(key: str) -> bool:
    """Whether the kernel ``key`` was handed to the helper and the helper took it: the caller
    then waits (``wait``) and loads it from the cache. False: the caller compiles it (or loads
    it: a retired helper's kernels are in the cache)."""
    helper = _helper
    if helper is None or helper.pid != os.getpid() or key not in helper.done:
        return False
    if claim(helper.claims, key):
        with helper.lock:  # this process compiles it (another launcher of it then just runs)
            del helper.done[key]
        return False
    return True


def wait(key: str) -> bool:
    """Waits until the helper has compiled ``key``; whether it did (False: it failed, died, or
    took longer than ``WAIT_S``, when this process compiles the kernel itself)."""
    helper = _helper
    event = helper.done.get(key) if helper is not None else None
    if event is None:  # (it retired after ``handed``)
        return False
    event.wait(WAIT_S)
    with helper.lock:
        return helper.ok.get(key, False)


def compiled_by_helper() -> int:
    """How many kernels the helper has compiled for this process."""
    return _helper.compiled if _helper is not None else 0


def predicted_types(fused, kernels: list) -> list[tuple | None]:
    """Each kernel's argument types as its launcher will pass them, predicted from the fused
    graph ``fused`` (``kernels``: its kernel equations' ``CompiledKernel``s, in order): the
    graph's inputs, the kernels' outputs and the results of the ops between them (matrix
    products, losses, gathers: NumPy makes new C-contiguous arrays) are C-contiguous, except
    views: a reshape (``reshape_program``) keeps the layout, a 2-D transpose makes it
    Fortran-ordered. A kernel reading a value of another layout is not predicted (None)."""
    import numba
    from numba.core import types
    from numba.np.numpy_support import from_dtype

    from ..jit.passes.fuse import KERNEL_OP
    from ..ops.movement import reshape_program

    def array(dtype, ndim: int):
        return types.Array(from_dtype(np.dtype(dtype)), ndim, "C")

    known = {v: array(v.dtype.np, len(v.shape)) for v in fused.invars}
    known.update((v, numba.typeof(t._data)) for v, t in fused.consts.items())
    found: list[tuple | None] = []
    it = iter(kernels)
    for e in fused.eqns:
        if e.op is not KERNEL_OP:
            layouts = [getattr(known.get(v), "layout", None) for v in e.in_vars()]
            if not e.op.view or e.op.name == "unsafe_view" or (
                    e.op.program is reshape_program and layouts == ["C"]):
                # (an opaque op's NumPy result is a new C-contiguous array, elementwise ops
                # being in kernels; a reshape of contiguous data is contiguous, an unsafe_view
                # copies other data)
                known.update((v, array(v.dtype.np, len(v.shape))) for v in e.outputs)
            elif e.op.name in ("t", "transpose") and layouts == ["C"] and \
                    len(e.inputs[0].shape) == 2:
                v = e.outputs[0]
                known[v] = types.Array(from_dtype(v.dtype.np), 2, "F")
            continue
        ks = next(it).ks
        d = len(ks.domain)
        args = [types.int64] * d
        for v in e.inputs:
            t = known.get(v)
            if t is not None and t.ndim != d:  # (the launcher pads it with leading 1s: a view
                t = t.copy(ndim=d)                 # that keeps the layout)
            args.append(t)
        args += [array(v.dtype.np, d) for v in ks.outputs]
        args += [array(r.acc_dtype, d) for r in ks.reductions]
        args += [array(p.dtype, d) for p in ks.partials]
        found.append(None if None in args else tuple(args))
        known.update((v, array(v.dtype.np, len(v.shape))) for v in e.outputs
                     if v not in ks.into)
    return found


def hand_over(kernels: list, signatures: list, module, options) -> None:
    """Hands the helper those of ``kernels`` (``CompiledKernel``s) with a predicted signature
    that are neither compiled in this process nor in the cache, when there are at least
    ``MIN_COLD_KERNELS``, last first. ``module(ks) -> (text, described)`` and
    ``options(ks) -> dict``: how ``numba_cpu`` compiles a kernel."""
    jobs = []
    for k, sig in zip(kernels, signatures):
        if sig is None or k.dispatcher.overloads:
            continue
        text, described = module(k.ks)
        jobs.append(Job(kernel_cache.module_name(text, described), text, described,
                        options(k.ks), sig))
    hand_over_jobs(jobs)


def hand_over_jobs(jobs: list[Job]) -> None:
    """Hands the helper those of ``jobs`` the cache does not have, when there are at least
    ``MIN_COLD_KERNELS``, last first."""
    if not enabled():
        return
    try:  # the kernels Numba has an index file of (loaded in a few milliseconds each)
        cached = {name.partition(".")[0] for name in
                  os.listdir(kernel_cache.kernels_dir() / "__pycache__") if name.endswith(".nbi")}
    except OSError:
        cached = set()
    jobs = [job for job in jobs if job.key not in cached]
    if len(jobs) >= MIN_COLD_KERNELS:
        submit(jobs[::-1])
