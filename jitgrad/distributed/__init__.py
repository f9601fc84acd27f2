"""``jitgrad.distributed``: torch.distributed's process group and collectives, over MPI.

Run a script on several ranks with ``mpiexec -n 2 python script.py``; the script calls
``init_process_group(backend="mpi")``. mpi4py (the ``distributed`` extra) is imported by
``init_process_group`` only. See docs/distributed.md. ``jitgrad.distributed.optim``
(``ZeroRedundancyOptimizer``) is loaded on first use of the name, as torch exposes it.
"""

from typing import Any

from .collectives import (ReduceOp, Work, all_gather, all_gather_into_tensor,
                          all_gather_object, all_reduce, barrier, broadcast,
                          broadcast_object_list, reduce_scatter, reduce_scatter_tensor)
from .process_group import (GroupMember, ProcessGroup, destroy_process_group, get_backend,
                            get_rank, get_world_size, group, init_process_group, is_available,
                            is_initialized, is_mpi_available)

__all__ = ["ReduceOp", "Work", "all_gather", "all_gather_into_tensor", "all_gather_object",
           "broadcast_object_list", "all_reduce", "barrier",
           "broadcast", "reduce_scatter", "reduce_scatter_tensor", "GroupMember", "ProcessGroup",
           "destroy_process_group", "get_backend", "get_rank", "get_world_size", "group",
           "init_process_group", "is_available", "is_initialized", "is_mpi_available"]


def __getattr__(name: str) -> Any:
    if name == "optim":  # (imports jitgrad.optim: loaded on first use)
        from .optim import ZeroRedundancyOptimizer  # noqa: F401 (sets this package's .optim)

        return globals()["optim"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
