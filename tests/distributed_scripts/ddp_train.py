"""Run under mpiexec: DistributedDataParallel against single-process training on every rank.

Every rank also trains a plain copy of the model on the whole global batch (what one process
would do); after a few SGD steps the DDP replica, fed only its shard, must hold the same
parameters. Covers several buckets, the default buckets, jit-compiled losses, no_sync, buffers
and find_unused_parameters.
Prints ``ddp ok rank=R size=S``.
"""

import copy

import numpy as np

import jitgrad
import jitgrad.distributed as dist
from _report import print_from_rank0
from jitgrad import nn, optim
from jitgrad.nn import functional as F
from jitgrad.nn.parallel import DistributedDataParallel

DDP = DistributedDataParallel

dist.init_process_group(backend="mpi")
rank, size = dist.get_rank(), dist.get_world_size()
comm = dist.group.WORLD.comm
STEPS, PER_RANK, FEATURES, CLASSES = 4, 4, 6, 3
GLOBAL = PER_RANK * size


def make_mlp(seed: int) -> nn.Module:
    jitgrad.manual_seed(seed)
    return nn.Sequential(nn.Linear(FEATURES, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(),
                         nn.Linear(16, CLASSES)).double()


def batches(seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(STEPS):
        x = rng.standard_normal((GLOBAL, FEATURES))
        y = rng.integers(0, CLASSES, GLOBAL)
        yield jitgrad.tensor(x.tolist(), dtype=jitgrad.float64), jitgrad.tensor(y.tolist())


def shard(t):
    return t[rank * PER_RANK:(rank + 1) * PER_RANK]


def reference_params(micro: int = 1) -> list[np.ndarray]:
    """One process, the whole global batch (split into ``micro`` accumulated micro-batches)."""
    model = make_mlp(100)  # rank 0's initial weights, which DDP broadcasts
    opt = optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    for x, y in batches(1):
        opt.zero_grad()
        for k in range(micro):  # global micro-batch k = every rank's k-th local micro-batch
            rows = [r * PER_RANK + i for r in range(size)
                    for i in range(k * PER_RANK // micro, (k + 1) * PER_RANK // micro)]
            idx = jitgrad.tensor(rows)
            F.cross_entropy(model(x[idx]), y[idx]).backward()
        opt.step()
    return [p.detach().numpy().copy() for p in model.parameters()]


def check_equal(ddp_model: DDP, expect: list[np.ndarray], what: str, rtol: float) -> None:
    got = [p.detach().numpy() for p in ddp_model.module.parameters()]
    for g, e in zip(got, expect):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol, err_msg=what)
    # and the replicas agree with each other exactly
    gathered = comm.allgather(got)
    for other in gathered:
        for a, b in zip(other, got):
            np.testing.assert_array_equal(a, b, err_msg=what)


def train_ddp(bucket_cap_mb, loss_of) -> DDP:
    model = DDP(make_mlp(100 + rank), bucket_cap_mb=bucket_cap_mb)  # rank 0's weights win
    opt = optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    for x, y in batches(1):
        opt.zero_grad()
        loss_of(model, shard(x), shard(y)).backward()
        opt.step()
    return model


expect = reference_params()


def eager_loss(model, x, y):
    return F.cross_entropy(model(x), y)


# many small buckets (each ~1 layer), then torch's default sizes (a single bucket here)
small = train_ddp(0.0005, eager_loss)
assert len(small.reducer.buckets) > 2, len(small.reducer.buckets)
check_equal(small, expect, "small buckets", 1e-12)
default = train_ddp(None, eager_loss)
assert len(default.reducer.buckets) == 1
check_equal(default, expect, "default buckets", 1e-12)
assert [n for n, _ in default.named_parameters()][0] == "module.0.weight"
assert list(default.state_dict())[0] == "module.0.weight"

# a jit-compiled loss applied to the DDP output, and jit around the DDP forward and the loss
jit_ce = jitgrad.jit(lambda logits, y: F.cross_entropy(logits, y))
check_equal(train_ddp(0.0005, lambda m, x, y: jit_ce(m(x), y)), expect, "jit loss", 1e-9)
whole = {}


def jit_whole(model, x, y):
    if "f" not in whole:
        whole["f"] = jitgrad.jit(lambda x, y: F.cross_entropy(model(x), y))
    return whole["f"](x, y)


jitted = train_ddp(0.0005, jit_whole)
assert whole["f"].cache_info().misses == 1, whole["f"].cache_info()  # later steps replay
check_equal(jitted, expect, "jit forward+loss", 1e-9)

# no_sync: two local micro-batches accumulate, the third backward all-reduces the sum
micro = 2
expect_acc = reference_params(micro=micro)
model = DDP(make_mlp(100 + rank), bucket_cap_mb=0.0005)
opt = optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
for x, y in batches(1):
    opt.zero_grad()
    xs, ys = shard(x), shard(y)
    step = PER_RANK // micro
    with model.no_sync():
        F.cross_entropy(model(xs[:step]), ys[:step]).backward()
    local = [p.grad.numpy().copy() for p in model.parameters()]
    others = comm.allgather(local)
    assert size == 1 or any(not np.array_equal(a, b) for a, b in zip(others[0], others[-1])), \
        "no_sync gradients were synchronized"
    F.cross_entropy(model(xs[step:]), ys[step:]).backward()
    opt.step()
check_equal(model, expect_acc, "no_sync accumulation", 1e-12)



# buffers: rank 0's at construction and, with broadcast_buffers, again at every forward
class Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.register_buffer("scale", jitgrad.full((2,), float(rank + 1)))

    def forward(self, x):
        return self.lin(x) * self.scale


model = DDP(Scaled())
assert model.module.scale.tolist() == [1.0, 1.0]
model.module.scale.fill_(rank + 5.0)
model(jitgrad.ones(1, 2))
assert model.module.scale.tolist() == [5.0, 5.0]
model = DDP(Scaled(), broadcast_buffers=False, init_sync=False)
model(jitgrad.ones(1, 2))
assert model.module.scale.tolist() == [rank + 1.0] * 2


# find_unused_parameters: `never` is used on no rank, `rank0` only on rank 0
class Heads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(FEATURES, 8)
        self.head = nn.Linear(8, CLASSES)
        self.rank0 = nn.Linear(8, CLASSES)
        self.never = nn.Linear(8, CLASSES)

    def forward(self, x, use_rank0):
        h = self.body(x).tanh()
        return self.head(h) + self.rank0(h) if use_rank0 else self.head(h)


jitgrad.manual_seed(7)
plain = Heads().double()
model = DDP(copy.deepcopy(plain), find_unused_parameters=True, bucket_cap_mb=0.0005)
x, y = next(iter(batches(3)))
for _ in range(2):  # the second backward accumulates onto the first
    F.cross_entropy(model(shard(x), rank == 0), shard(y)).backward()
assert model.module.never.weight.grad is None and model.module.never.bias.grad is None
# what one process gets for the used parameters, each rank's shard weighted 1/size
expect_grads = {}
for r in range(size):
    part = slice(r * PER_RANK, (r + 1) * PER_RANK)
    plain.zero_grad()
    F.cross_entropy(plain(x[part], r == 0), y[part]).backward()
    for name, p in plain.named_parameters():
        if p.grad is not None:
            expect_grads[name] = expect_grads.get(name, 0) + 2 * p.grad.numpy() / size
for name, p in model.module.named_parameters():
    if name.startswith("never"):
        continue
    np.testing.assert_allclose(p.grad.numpy(), expect_grads[name], rtol=1e-12, atol=1e-15,
                               err_msg=name)

print_from_rank0(comm, f"ddp ok rank={rank} size={size}")
dist.destroy_process_group()
