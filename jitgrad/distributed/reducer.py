"""The gradient reducer behind DistributedDataParallel: buckets, hooks, overlapped all-reduce.

Parameters are assigned to buckets in reverse registration order (gradients of the last layers
are ready first in the backward), one dtype per bucket, the first bucket capped at 1 MiB and
the others at ``bucket_cap_mb`` (torch's policy). A post-accumulate-grad hook copies each
gradient into its bucket; when a bucket is full it starts a non-blocking ``Iallreduce`` on it,
in bucket order so every rank issues the same sequence of collectives, while the backward goes
on computing the gradients of earlier layers. MPI advances a non-blocking collective only
inside MPI calls, so the group's progress thread (``progress.py``) tests the running requests
while the backward computes; without it (one rank, no ``MPI_THREAD_MULTIPLE``, or
``JITGRAD_MPI_PROGRESS_THREAD=0``) each later hook tests them. When the last bucket has started,
the hook waits for all of them and writes the averaged gradients back into ``.grad``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..tensor import _new
from .process_group import ProcessGroup

__all__ = ["Reducer", "assign_buckets"]

_FIRST_BUCKET_BYTES = 1024 * 1024  # torch's dist._DEFAULT_FIRST_BUCKET_BYTES


def assign_buckets(params: list, bucket_bytes: int, first_bucket_bytes: int) -> list[list[int]]:
    """Parameter indices per bucket: reverse order, one dtype per bucket, torch's size policy.

    A bucket is closed once its size reaches its limit (so it may exceed it by one tensor).
    """
    buckets: list[list[int]] = []
    open_: dict[Any, list] = {}  # dtype -> [indices, bytes, limit]
    seen: set = set()  # each dtype's first bucket gets the smaller limit
    for i in reversed(range(len(params))):
        p = params[i]
        key = p.dtype
        cur = open_.get(key)
        if cur is None:
            limit = bucket_bytes if key in seen else first_bucket_bytes
            seen.add(key)
            cur = open_[key] = [[], 0, limit]
        cur[0].append(i)
        cur[1] += p.numel() * p.element_size()
        if cur[1] >= cur[2]:
            buckets.append(cur[0])
            del open_[key]
    buckets.extend(cur[0] for cur in open_.values())
    return buckets


class _Bucket:
    __slots__ = ("params", "offsets", "buffer", "pending", "request")

    def __init__(self, params: list, dtype: np.dtype) -> None:
        self.params = params
        self.offsets = []
        n = 0
        for p in params:
            self.offsets.append(n)
            n += p.numel()
        self.buffer = np.zeros(n, dtype=dtype)
        self.pending = len(params)
        self.request = None


class Reducer:
    """Averages gradients over the ranks of ``pg`` during the backward, bucket by bucket.

    Args:
        params: the parameters that require grad, in registration order.
        names: their qualified names (for error messages).
        pg: the process group.
        bucket_bytes: the cap of every bucket but the first.
        first_bucket_bytes: the cap of the first bucket.

    Attributes:
        sync_enabled: whether backwards all-reduce (``DistributedDataParallel.no_sync`` clears
            it).
        forward_sync: ``sync_enabled`` as the last eager forward saw it, taken (and cleared) by
            the next backward; a forward replayed by ``jit`` does not run Python, so then the
            flag at backward time decides.

    The state lives in slots: ``jit`` guards the plain attributes of objects a traced function
    reaches, and this per-step state must not cause a retrace.
    """

    __slots__ = ("params", "names", "pg", "buckets", "_where", "_marked", "_syncing",
                 "_next_launch", "_in_flight", "sync_enabled", "forward_sync", "_driver",
                 "find_unused", "unused",
                 "last_wait_seconds", "last_overlapped_bytes")

    def __init__(self, params: list, names: list[str], pg: ProcessGroup, bucket_bytes: int,
                 first_bucket_bytes: int) -> None:
        self.params = params
        self.names = names
        self.pg = pg
        self.sync_enabled = True
        self.forward_sync: bool | None = None
        self._driver = pg.progress
        self.find_unused = False  # DDP's find_unused_parameters: then `unused` is kept current
        self.unused: frozenset[int] = frozenset()  # ids of parameters the last forward skipped
        self.buckets = [_Bucket([params[i] for i in idx], params[idx[0]]._data.dtype)
                        for idx in assign_buckets(params, bucket_bytes, first_bucket_bytes)]
        self._where: dict[int, tuple[_Bucket, int]] = {}
        for b in self.buckets:
            for slot, p in enumerate(b.params):
                self._where[id(p)] = (b, slot)
        self._marked: set[int] = set()
        self._syncing = False
        self._next_launch = 0
        self._in_flight: list = []
        # Figures of the last synchronized backward (benchmarks/ddp_step.py reads them): the
        # time the last hook blocked waiting, and the bytes whose all-reduce had already
        # finished when the last gradient arrived (overlapped with the backward).
        self.last_wait_seconds = 0.0
        self.last_overlapped_bytes = 0

    # ------------------------------------------------------------------ per backward
    def in_progress(self) -> bool:
        """Whether a synchronized backward started reducing and has not finished."""
        return self._syncing and bool(self._marked)

    def unready_names(self) -> list[str]:
        return [n for p, n in zip(self.params, self.names) if id(p) not in self._marked]

    def reset(self) -> None:
        """Forgets a partial, unsynchronized backward (no communication is pending then)."""
        self._marked.clear()
        self._syncing = False

    def mark_ready(self, param: Any) -> None:
        """The post-accumulate-grad hook: ``param.grad`` is final for this backward."""
        key = id(param)
        if not self._marked:
            decision = self.forward_sync
            self.forward_sync = None
            self._syncing = self.sync_enabled if decision is None else decision
            self._next_launch = 0
            if self.unused:
                self._mark_unused()
        elif key in self._marked:
            raise RuntimeError(
                "Expected to mark a variable ready only once. This error is caused by one of "
                "the following reasons: 1) Use of a module parameter outside the `forward` "
                "function. 2) Reused parameters in multiple reentrant backward passes. "
                f"Parameter {self.names[self.params.index(param)]} got its gradient twice in "
                "one synchronized backward.")
        self._ready(param)

    def _ready(self, param: Any) -> None:
        self._marked.add(id(param))
        if not self._syncing:
            if len(self._marked) == len(self.params):
                self.reset()
            return
        bucket, slot = self._where[id(param)]
        off = bucket.offsets[slot]
        view = bucket.buffer[off:off + param.numel()]
        if param.grad is None:  # a parameter the forward did not use (find_unused_parameters)
            view[...] = 0
        else:
            view[...] = param.grad._data.reshape(-1)
        bucket.pending -= 1
        if bucket.pending == 0:
            self._launch_ready()
        elif self._in_flight:
            self._progress()
        if self._next_launch == len(self.buckets):
            self._finish()

    def _mark_unused(self) -> None:
        """find_unused_parameters: what the forward did not use is ready at once (as zeros,
        or its accumulated gradient)."""
        for p in self.params:
            if id(p) in self.unused and id(p) not in self._marked:
                self._ready(p)

    def _launch_ready(self) -> None:
        from mpi4py import MPI

        started = []
        while self._next_launch < len(self.buckets):
            bucket = self.buckets[self._next_launch]
            if bucket.pending:
                break
            bucket.request = self.pg.comm.Iallreduce(MPI.IN_PLACE, bucket.buffer, MPI.SUM)
            started.append(bucket.request)
            self._next_launch += 1
        self._in_flight.extend(started)
        if self._driver is not None:
            self._driver.watch(started)
        self._progress()

    def _progress(self) -> None:
        from mpi4py import MPI

        if self._driver is None and MPI.Request.Testall(self._in_flight):
            self._in_flight.clear()

    def _finish(self) -> None:
        from mpi4py import MPI

        start = time.perf_counter()
        if self._driver is not None:
            self._driver.discard(self._in_flight)
        self.last_overlapped_bytes = sum(b.buffer.nbytes for b in self.buckets[:-1]
                                         if b.request.Test())
        MPI.Request.Waitall([b.request for b in self.buckets])
        self.last_wait_seconds = time.perf_counter() - start
        size = self.pg.size()
        used_anywhere = None
        if self.find_unused:  # a parameter no rank used keeps its .grad (None) as in torch
            used = np.array([id(p) not in self.unused for p in self.params], dtype=np.int32)
            self.pg.comm.Allreduce(MPI.IN_PLACE, used, MPI.SUM)
            used_anywhere = {id(p) for p, u in zip(self.params, used) if u}
        for bucket in self.buckets:
            buf = bucket.buffer
            np.divide(buf, size, out=buf)
            for p, off in zip(bucket.params, bucket.offsets):
                if used_anywhere is not None and id(p) not in used_anywhere:
                    continue
                value = buf[off:off + p.numel()].reshape(tuple(p.shape))
                if p.grad is None:
                    p.grad = _new(value.copy(), p.dtype)
                else:
                    p.grad._data[...] = value
            bucket.pending = len(bucket.params)
            bucket.request = None
        self._in_flight.clear()
        self.reset()
