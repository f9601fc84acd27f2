"""Run under mpiexec -n 2 or more: rank 1 raises while rank 0 waits in a barrier.

init_process_group's excepthook must abort the whole job instead of leaving rank 0 waiting.
With a directory argument each rank writes its stderr to ``DIR/stderr.<rank>``: MPI_Abort kills
the job while mpiexec still forwards output, so mpiexec's own stderr may be cut short.
"""

import sys

import jitgrad
import jitgrad.distributed as dist

dist.init_process_group(backend="mpi")
if len(sys.argv) > 1:
    sys.stderr = open(f"{sys.argv[1]}/stderr.{dist.get_rank()}", "w", buffering=1)  # noqa: SIM115
if dist.get_rank() == 1:
    raise ValueError("boom on rank 1")
dist.barrier()  # rank 0 waits here for a rank that will never come
dist.all_reduce(jitgrad.ones(3))
print("rank 0 got past the barrier", flush=True)
