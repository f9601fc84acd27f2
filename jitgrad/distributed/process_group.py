"""The default process group over MPI (mpi4py): init, rank and size queries, teardown.

mpi4py is imported by ``init_process_group`` only, so ``import jitgrad`` (and even
``import jitgrad.distributed``) never loads MPI.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from typing import Any

__all__ = ["ProcessGroup", "is_available", "is_mpi_available", "is_initialized",
           "init_process_group", "destroy_process_group", "get_rank", "get_world_size",
           "get_backend", "group", "GroupMember"]

_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                    "init_process_group.")


class ProcessGroup:
    """A group of ranks sharing an MPI communicator (jitgrad has one: the default group).

    Attributes:
        comm: the ``mpi4py.MPI.Comm`` the collectives run on (a duplicate of COMM_WORLD, so
            jitgrad's messages never mix with the user's own MPI traffic).
    """

    def __init__(self, comm: Any) -> None:
        from .progress import make_progress_thread

        self.comm = comm
        self._rank = comm.Get_rank()
        self._size = comm.Get_size()
        self.progress = make_progress_thread(comm)  # drives requests in flight (or None)

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return self._size

    def name(self) -> str:
        return "mpi"

    def __repr__(self) -> str:
        return f"ProcessGroup(backend='mpi', rank={self._rank}, size={self._size})"


class GroupMember:
    """``GroupMember.WORLD`` (also ``group.WORLD``): the default process group, or None."""

    WORLD: ProcessGroup | None = None


group = GroupMember  # torch's alias: ``dist.group.WORLD``


_state: dict[str, Any] = {"group": None, "previous_excepthook": None}


def is_available() -> bool:
    """Whether jitgrad.distributed can run: mpi4py (the ``distributed`` extra) is installed."""
    try:
        return importlib.util.find_spec("mpi4py") is not None
    except (ImportError, ValueError):
        return False


def is_mpi_available() -> bool:
    """Whether the MPI backend is available (the only backend jitgrad has)."""
    return is_available()


def is_initialized() -> bool:
    """Whether the default process group has been initialized."""
    return _state["group"] is not None


def _default_group() -> ProcessGroup:
    pg = _state["group"]
    if pg is None:
        raise ValueError(_NOT_INITIALIZED)
    return pg


def _resolve(group_: ProcessGroup | None) -> ProcessGroup:
    pg = _default_group()
    if group_ is not None and group_ is not pg:
        raise ValueError(f"jitgrad.distributed has only the default process group, got {group_!r}")
    return pg


def _abort_on_uncaught(exc_type: type, exc: BaseException, tb: Any) -> None:
    """sys.excepthook while a group exists: print the traceback, then abort every rank.

    Without it, the failed rank would exit (or hang in MPI_Finalize) while the others wait
    forever inside their next collective.
    """
    previous = _state["previous_excepthook"] or sys.__excepthook__
    previous(exc_type, exc, tb)
    pg = _state["group"]
    if pg is not None and pg.size() > 1:
        from mpi4py import MPI

        sys.stderr.write(f"jitgrad.distributed: uncaught {exc_type.__name__} on rank "
                         f"{pg.rank()}; aborting all {pg.size()} ranks (MPI.COMM_WORLD.Abort)\n")
        sys.stderr.flush()
        sys.stdout.flush()
        MPI.COMM_WORLD.Abort(1)


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: Any = None, world_size: int = -1, rank: int = -1) -> None:
    """Initializes the default process group from MPI (run the script under ``mpiexec``).

    Rank and world size come from ``MPI.COMM_WORLD``. While the group exists an uncaught
    exception on any rank prints its traceback and calls ``MPI.COMM_WORLD.Abort(1)``, so the
    job ends instead of the other ranks waiting forever in a collective.

    Args:
        backend: ``"mpi"`` (the default and the only backend).
        init_method: must be None or ``"env://"``; MPI's launcher wires the ranks together.
        timeout: not used by the MPI backend (as in torch's ``ProcessGroupMPI``); a warning says so.
        world_size: ignored, with a warning, as torch does for the MPI backend.
        rank: ignored, with a warning, as torch does for the MPI backend.

    Raises:
        ValueError: the default group is already initialized (torch's text).
        RuntimeError: another backend was asked for, or mpi4py is not installed.
    """
    if _state["group"] is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = "mpi" if backend is None else str(backend).lower()
    if name != "mpi":
        raise RuntimeError(f"jitgrad.distributed has only the 'mpi' backend (mpi4py), got "
                           f"backend={backend!r}")
    if init_method not in (None, "env://"):
        raise ValueError(f"init_method={init_method!r} is not used by the mpi backend: the "
                         "ranks are wired together by mpiexec")
    if world_size != -1 or rank != -1:
        warnings.warn(f"For MPI backend, world_size ({world_size}) and rank ({rank}) are ignored "
                      "since they are assigned by the MPI runtime.", stacklevel=2)
    if timeout is not None:
        warnings.warn("timeout is ignored by the mpi backend", stacklevel=2)
    if not is_available():
        raise RuntimeError("Distributed package doesn't have MPI built in: install mpi4py and an "
                           "MPI, e.g. pip install 'jitgrad[distributed]'")
    from mpi4py import MPI

    pg = ProcessGroup(MPI.COMM_WORLD.Dup())
    _state["group"] = pg
    GroupMember.WORLD = pg
    if sys.excepthook is not _abort_on_uncaught:
        _state["previous_excepthook"] = sys.excepthook
        sys.excepthook = _abort_on_uncaught


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Frees the default process group; ``init_process_group`` may be called again."""
    pg = _state["group"]
    if pg is None:
        raise AssertionError("Process group cannot be None")
    _resolve(group)
    _state["group"] = None
    GroupMember.WORLD = None
    if sys.excepthook is _abort_on_uncaught:
        sys.excepthook = _state["previous_excepthook"] or sys.__excepthook__
    _state["previous_excepthook"] = None
    if pg.progress is not None:
        pg.progress.clear()
    pg.comm.Free()


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in the group."""
    return _resolve(group).rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    """The number of ranks in the group."""
    return _resolve(group).size()


def get_backend(group: ProcessGroup | None = None) -> str:
    """The backend of the group: ``"mpi"``."""
    return _resolve(group).name()
