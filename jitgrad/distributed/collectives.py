"""Collectives on tensors over MPI's non-blocking calls, with torch.distributed's signatures.

Every collective starts one non-blocking MPI operation (``Iallreduce``, ``Ibcast``, ...). With
``async_op=True`` it returns a ``Work`` whose ``wait()`` completes it; otherwise it waits before
returning None. Tensors are changed in place, as in torch. ``all_gather_object`` and
``broadcast_object_list`` move picklable Python objects (blocking, as in torch).
"""

from __future__ import annotations

import datetime
import enum
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..ops import registry
from ..tensor import Tensor
from .process_group import ProcessGroup, _resolve

__all__ = ["ReduceOp", "Work", "barrier", "broadcast", "all_reduce", "all_gather",
           "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor",
           "all_gather_object", "broadcast_object_list"]


class RedOpType(enum.IntEnum):
    """The reduction operations (torch's numbering)."""

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7


class ReduceOp:
    """``ReduceOp.SUM``, ``AVG``, ``PRODUCT``, ``MIN``, ``MAX``, ``BAND``, ``BOR``, ``BXOR``."""

    RedOpType = RedOpType
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR


def _mpi_op(op: Any, arr: np.ndarray) -> Any:
    from mpi4py import MPI

    if not isinstance(op, RedOpType):
        raise TypeError(f"op must be a jitgrad.distributed.ReduceOp, got {op!r}")
    if op is RedOpType.AVG and arr.dtype.kind not in "fc":
        raise RuntimeError(f"ReduceOp.AVG needs a floating point or complex tensor, got "
                           f"{arr.dtype}")
    if op in (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR) and arr.dtype.kind not in "iub":
        raise RuntimeError(f"ReduceOp.{op.name} needs an integer or bool tensor, got {arr.dtype}")
    return {RedOpType.SUM: MPI.SUM, RedOpType.AVG: MPI.SUM, RedOpType.PRODUCT: MPI.PROD,
            RedOpType.MIN: MPI.MIN, RedOpType.MAX: MPI.MAX, RedOpType.BAND: MPI.BAND,
            RedOpType.BOR: MPI.BOR, RedOpType.BXOR: MPI.BXOR}[op]


class Work:
    """A started collective: ``wait()`` blocks until it is done and its outputs are written.

    While it runs, the group's progress thread (if any) drives it, so it advances while the
    caller computes.
    """

    def __init__(self, request: Any, finish: Callable[[], None] | None = None,
                 progress: Any = None) -> None:
        self._request = request
        self._finish = finish
        self._done = False
        self._progress = progress
        if progress is not None:
            progress.watch([request])

    def _release(self) -> None:
        if self._progress is not None:
            self._progress.discard([self._request])
            self._progress = None

    def _complete(self) -> None:
        self._done = True
        if self._finish is not None:
            self._finish()
            self._finish = None

    def wait(self, timeout: datetime.timedelta | None = None) -> bool:
        """Blocks until the collective has finished; returns True.

        Args:
            timeout: raise a RuntimeError if it has not finished after this long (the
                collective is still running then; MPI cannot cancel it).
        """
        if self._done:
            return True
        self._release()
        if timeout is None:
            self._request.Wait()
        else:
            deadline = time.monotonic() + timeout.total_seconds()
            while not self._request.Test():
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Work.wait timed out after {timeout}")
                time.sleep(50e-6)
        self._complete()
        return True

    def is_completed(self) -> bool:
        """Whether the collective has finished (tests without blocking, which drives MPI)."""
        if not self._done:
            if self._progress is not None:
                with self._progress.lock:  # the thread may be testing it right now
                    done = self._request.Test()
            else:
                done = self._request.Test()
            if done:
                self._release()
                self._complete()
        return self._done

    def is_success(self) -> bool:
        """Whether the collective finished without error (MPI errors abort instead)."""
        return self.is_completed()


def _refuse_tracing() -> None:
    if registry.state.traces:
        raise RuntimeError("jitgrad.distributed collectives cannot run inside jitgrad.jit (a "
                           "traced function runs once and is replayed without its Python "
                           "side effects); call them outside the jitted function")


def _check_tensor(t: Any, name: str) -> None:
    _refuse_tracing()
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"jitgrad.Tensor but got {type(t)} instead.")


def _check_tensor_list(ts: Any, name: str) -> None:
    _refuse_tracing()
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        "List[jitgrad.Tensor] but got another type.")


def _writable(t: Tensor) -> tuple[np.ndarray, bool]:
    """A flat contiguous array over ``t``'s data, and whether it must be copied back."""
    arr = t._data
    if arr.flags.c_contiguous and arr.flags.writeable:
        return arr.reshape(-1), False
    return np.ascontiguousarray(arr).reshape(-1), True


def _store(t: Tensor, flat: np.ndarray, copy: bool) -> None:
    if copy:
        t._data[...] = flat.reshape(t._data.shape)
    t._vc[0] += 1


def _run(pg: ProcessGroup, request: Any, finish: Callable[[], None] | None,
         async_op: bool) -> Work | None:
    if async_op:
        return Work(request, finish, pg.progress)
    Work(request, finish).wait()
    return None


def _shape_text(shape: tuple) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ")"


def barrier(group: ProcessGroup | None = None, async_op: bool = False,
            device_ids: Any = None) -> Work | None:
    """Blocks until every rank of the group has entered the barrier (``device_ids``: None)."""
    _refuse_tracing()
    pg = _resolve(group)
    if device_ids is not None:
        raise ValueError("device_ids is for GPU backends; the mpi backend runs on CPU tensors")
    return _run(pg, pg.comm.Ibarrier(), None, async_op)


def broadcast(tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None,
              async_op: bool = False, group_src: int | None = None) -> Work | None:
    """Copies ``tensor`` from rank ``src`` into ``tensor`` on every other rank."""
    _check_tensor(tensor, "tensor")
    pg = _resolve(group)
    root = group_src if src is None else src
    if root is None:
        raise ValueError("Either src or group_src must be specified")
    if not 0 <= int(root) < pg.size():
        raise RuntimeError(f"ProcessGroupMPI::broadcast: invalid root rank: {root}")
    flat, copy = _writable(tensor)
    return _run(pg, pg.comm.Ibcast(flat, root=int(root)), lambda: _store(tensor, flat, copy),
                async_op)


def all_reduce(tensor: Tensor, op: Any = ReduceOp.SUM, group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """Reduces ``tensor`` across all ranks (``op``), leaving the result on every rank."""
    _check_tensor(tensor, "tensor")
    pg = _resolve(group)
    from mpi4py import MPI

    return _reduce_into(pg, tensor, op, async_op,
                        lambda flat, mpi_op: pg.comm.Iallreduce(MPI.IN_PLACE, flat, mpi_op))


def _check_same(outputs: list, like: Tensor, what: str, start: int = 0) -> None:
    for i, out in enumerate(outputs, start):
        if tuple(out.shape) != tuple(like.shape):
            raise RuntimeError(f"ProcessGroupMPI::{what}: invalid tensor size at index {i} "
                               f"(expected {_shape_text(tuple(like.shape))}, got "
                               f"{_shape_text(tuple(out.shape))})")
        if out.dtype != like.dtype:
            raise RuntimeError(f"ProcessGroupMPI::{what}: invalid tensor type at index {i} "
                               f"(expected {like.dtype}, got {out.dtype})")


def all_gather(tensor_list: list, tensor: Tensor, group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """Gathers ``tensor`` from every rank into ``tensor_list`` (one entry per rank)."""
    _check_tensor_list(tensor_list, "tensor_list")
    _check_tensor(tensor, "tensor")
    pg = _resolve(group)
    if len(tensor_list) != pg.size():
        raise RuntimeError(f"ProcessGroupMPI::allgather: invalid output tensor list at index 0 "
                           f"(expected length {pg.size()}, got {len(tensor_list)})")
    _check_same(tensor_list, tensor, "allgather")
    send = np.ascontiguousarray(tensor._data).reshape(-1)
    recv = np.empty((pg.size(), send.size), dtype=send.dtype)

    def finish() -> None:
        for out, row in zip(tensor_list, recv):
            out._data[...] = row.reshape(out._data.shape)
            out._vc[0] += 1

    return _run(pg, pg.comm.Iallgather(send, recv), finish, async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor,
                           group: ProcessGroup | None = None,
                           async_op: bool = False) -> Work | None:
    """Gathers ``input_tensor`` from every rank, concatenated along dim 0 (or stacked)."""
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    pg = _resolve(group)
    if output_tensor.numel() != input_tensor.numel() * pg.size():
        raise ValueError("output tensor size must be equal to world_size times input tensor "
                         "size")
    if output_tensor.dtype != input_tensor.dtype:
        raise TypeError("output tensor must have the same type as input tensor")
    send = np.ascontiguousarray(input_tensor._data).reshape(-1)
    flat, copy = _writable(output_tensor)
    return _run(pg, pg.comm.Iallgather(send, flat), lambda: _store(output_tensor, flat, copy),
                async_op)


def reduce_scatter(output: Tensor, input_list: list, op: Any = ReduceOp.SUM,
                   group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Reduces ``input_list[i]`` across ranks (``op``) and leaves the result on rank ``i``."""
    _check_tensor(output, "output")
    _check_tensor_list(input_list, "input_list")
    pg = _resolve(group)
    if len(input_list) != pg.size():
        raise RuntimeError("invalid input tensor list size, must be world size")
    _check_same(input_list, output, "reduce_scatter")
    send = np.ascontiguousarray(np.stack([t._data for t in input_list])).reshape(-1)
    return _reduce_scatter_block(pg, output, send, op, async_op)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: Any = ReduceOp.SUM,
                          group: ProcessGroup | None = None,
                          async_op: bool = False) -> Work | None:
    """Reduces ``input`` (world_size chunks along dim 0) and leaves chunk ``i`` on rank ``i``."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = _resolve(group)
    if input.numel() != output.numel() * pg.size():
        raise ValueError("input tensor must be the same size as output size times world size")
    if output.dtype != input.dtype:
        raise TypeError("input tensor must be the same type as the output tensor.")
    send = np.ascontiguousarray(input._data).reshape(-1)
    return _reduce_scatter_block(pg, output, send, op, async_op)


def _reduce_scatter_block(pg: ProcessGroup, output: Tensor, send: np.ndarray, op: Any,
                          async_op: bool) -> Work | None:
    return _reduce_into(pg, output, op, async_op,
                        lambda flat, mpi_op: pg.comm.Ireduce_scatter_block(send, flat, mpi_op))


def _reduce_into(pg: ProcessGroup, tensor: Tensor, op: Any, async_op: bool,
                 start: Any) -> Work | None:
    """Starts ``start(flat, mpi_op)``, a reduction into ``tensor``'s data; on completion AVG
    divides by the world size and the result is stored back into ``tensor``."""
    flat, copy = _writable(tensor)
    mpi_op = _mpi_op(op, flat)
    size = pg.size()

    def finish() -> None:
        if op is RedOpType.AVG:
            np.divide(flat, size, out=flat)
        _store(tensor, flat, copy)

    return _run(pg, start(flat, mpi_op), finish, async_op)


def all_gather_object(object_list: list, obj: Any, group: ProcessGroup | None = None) -> None:
    """Gathers a picklable ``obj`` from every rank into ``object_list`` (one entry per rank)."""
    _refuse_tracing()
    pg = _resolve(group)
    if len(object_list) != pg.size():
        raise ValueError(f"object_list must have world size ({pg.size()}) entries, got "
                         f"{len(object_list)}")
    object_list[:] = pg.comm.allgather(obj)


def broadcast_object_list(object_list: list, src: int | None = None,
                          group: ProcessGroup | None = None, device: Any = None,
                          group_src: int | None = None) -> None:
    """Replaces the entries of ``object_list`` with rank ``src``'s (picklable) entries."""
    _refuse_tracing()
    pg = _resolve(group)
    root = group_src if src is None else src
    if root is None:
        raise ValueError("Either src or group_src must be specified")
    if not 0 <= int(root) < pg.size():
        raise RuntimeError(f"ProcessGroupMPI::broadcast: invalid root rank: {root}")
    received = pg.comm.bcast(list(object_list) if pg.rank() == root else None, root=int(root))
    object_list[:] = received
