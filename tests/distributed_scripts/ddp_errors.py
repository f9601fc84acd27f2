"""Run under mpiexec -n 2 or more: DDP's errors are raised on every rank, none hangs.

Each rank catches each expected error as ``<case> rank=R: <message>``; rank 0 gathers and prints
every rank's lines (one writer, so lines never interleave), then ``errors ok rank=R`` per rank.
"""

import jitgrad
import jitgrad.distributed as dist
from jitgrad import nn
from jitgrad.nn import functional as F
from jitgrad.nn.parallel import DistributedDataParallel

DDP = DistributedDataParallel

dist.init_process_group(backend="mpi")
rank = dist.get_rank()
lines = []


def report(case: str, fn) -> None:
    try:
        fn()
    except RuntimeError as e:
        lines.append(f"{case} rank={rank}: {e}")
    else:
        lines.append(f"{case} rank={rank}: NO ERROR")


# the last rank builds a wider hidden layer: same parameter count, different shapes
width = 5 if rank == dist.get_world_size() - 1 else 4
report("shape", lambda: DDP(nn.Sequential(nn.Linear(3, width), nn.Linear(width, 2))))
# the last rank has one layer more
n_layers = 2 if rank == dist.get_world_size() - 1 else 1
report("count", lambda: DDP(nn.Sequential(*[nn.Linear(3, 3) for _ in range(n_layers)])))
frozen = nn.Linear(3, 3)
frozen.requires_grad_(False)
report("frozen", lambda: DDP(frozen))


class TwoHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.used = nn.Linear(3, 2)
        self.unused = nn.Linear(3, 2)

    def forward(self, x):
        return self.used(x)


model = DDP(TwoHeads())  # one bucket: the partial backward starts no communication
x = jitgrad.randn(4, 3)
F.cross_entropy(model(x), jitgrad.tensor([0, 1, 0, 1])).backward()
report("unused", lambda: model(x))

lines.append(f"errors ok rank={rank}")
everyone = dist.group.WORLD.comm.gather(lines, root=0)
if rank == 0:
    print("\n".join(line for rank_lines in everyone for line in rank_lines), flush=True)
