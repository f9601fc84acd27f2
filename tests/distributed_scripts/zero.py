"""Run under mpiexec: ZeroRedundancyOptimizer(AdamW) with DDP against single-process AdamW.

Every rank also trains a plain copy of the model with AdamW on the whole global batch (what one
process would do), with the same StepLR schedule; the DDP + ZeRO replica, fed only its shard,
must hold the same parameters, while each rank keeps AdamW state for its own shard only. Then
the state is consolidated, saved and loaded into a fresh ZeRO optimizer that trains on in
step with the reference; add_param_group and a rank that owns no parameter are covered too.
Prints ``zero ok rank=R size=S``.
"""

import numpy as np

import jitgrad
import jitgrad.distributed as dist
from _report import print_from_rank0
from jitgrad import nn, optim
from jitgrad.distributed.optim import ZeroRedundancyOptimizer
from jitgrad.distributed.optim.zero_redundancy_optimizer import _partition
from jitgrad.nn import functional as F
from jitgrad.nn.parallel import DistributedDataParallel

DDP = DistributedDataParallel

dist.init_process_group(backend="mpi")
rank, size = dist.get_rank(), dist.get_world_size()
comm = dist.group.WORLD.comm
STEPS, PER_RANK, FEATURES, CLASSES = 4, 4, 6, 3
GLOBAL = PER_RANK * size
HYPER = {"lr": 0.05, "betas": (0.8, 0.95), "weight_decay": 0.1}


def make_mlp(seed: int) -> nn.Module:
    jitgrad.manual_seed(seed)
    return nn.Sequential(nn.Linear(FEATURES, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(),
                         nn.Linear(16, CLASSES)).double()


def batches(seed: int, steps: int = STEPS):
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        x = rng.standard_normal((GLOBAL, FEATURES))
        y = rng.integers(0, CLASSES, GLOBAL)
        yield jitgrad.tensor(x.tolist(), dtype=jitgrad.float64), jitgrad.tensor(y.tolist())


def shard(t):
    return t[rank * PER_RANK:(rank + 1) * PER_RANK]


def check_equal(got_params, expect, what: str) -> None:
    got = [p.detach().numpy() for p in got_params]
    for g, e in zip(got, expect, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12, err_msg=what)
    for other in comm.allgather(got):  # and the replicas agree with each other exactly
        for a, b in zip(other, got):
            np.testing.assert_array_equal(a, b, err_msg=what)


# ------------------------------------------------ one process, the whole batch
ref_model = make_mlp(100)  # rank 0's initial weights, which DDP broadcasts
ref_opt = optim.AdamW(ref_model.parameters(), **HYPER)
ref_sched = optim.lr_scheduler.StepLR(ref_opt, step_size=2, gamma=0.5)
for x, y in batches(1):
    ref_opt.zero_grad()
    F.cross_entropy(ref_model(x), y).backward()
    ref_opt.step()
    ref_sched.step()
expect4 = [p.detach().numpy().copy() for p in ref_model.parameters()]

# ------------------------------------------------ DDP + ZeRO
model = DDP(make_mlp(100 + rank), bucket_cap_mb=0.0005)
params = list(model.parameters())
zero = ZeroRedundancyOptimizer(params, optim.AdamW, **HYPER)
sched = optim.lr_scheduler.StepLR(zero, step_size=2, gamma=0.5)
assert zero.defaults == HYPER, zero.defaults
assert isinstance(zero.optim, optim.AdamW) and zero.world_size == size and zero.rank == rank
# the param groups show the local optimizer's settings; the partition is torch's (see
# test_partition_matches_torch): sorted by size, each to the rank with fewest elements so far
assert zero.param_groups[0]["eps"] == 1e-8 and zero.param_groups[0]["betas"] == (0.8, 0.95)
sizes = [p.numel() for p in params]  # [96, 16, 256, 16, 48, 3]
expect_owner = {2: [1, 1, 0, 1, 1, 1], 3: [1, 2, 0, 2, 2, 2]}.get(size)
owner = [zero._param_to_rank[p] for p in params]
if expect_owner is not None:
    assert owner == expect_owner, (owner, sizes)
mine = [p for p, r in zip(params, owner) if r == rank]
assert [id(p) for p in zero.optim.param_groups[0]["params"]] == \
    [id(p) for p in _partition(zero.param_groups, size)[rank][0]["params"]]
assert {id(p) for p in zero.optim.param_groups[0]["params"]} == {id(p) for p in mine}

for step, (x, y) in enumerate(batches(1)):
    zero.zero_grad()
    F.cross_entropy(model(shard(x)), shard(y)).backward()
    zero.step()
    sched.step()
    # the local optimizer holds AdamW state for this rank's shard only
    assert {id(p) for p in zero.optim.state} == {id(p) for p in mine}, step
    assert all(set(s) == {"step", "exp_avg", "exp_avg_sq"} for s in zero.optim.state.values())
check_equal(params, expect4, "ZeRO AdamW")
# the scheduler sets param_groups; the local optimizer takes it at its next step (as in torch)
assert zero.param_groups[0]["lr"] == 0.0125 and zero.optim.param_groups[0]["lr"] == 0.025
assert not zero.state  # (ZeRO's own state stays empty; the local optimizer's is the state)

# ------------------------------------------------ parameters_as_bucket_view
model_b = DDP(make_mlp(100 + rank), bucket_cap_mb=0.0005)
params_b = list(model_b.parameters())
zero_b = ZeroRedundancyOptimizer(params_b, optim.AdamW, parameters_as_bucket_view=True, **HYPER)
sched_b = optim.lr_scheduler.StepLR(zero_b, step_size=2, gamma=0.5)


def check_buckets(what: str) -> None:
    assert len(zero_b._buckets) == 1 and len(zero_b._buckets[0]) == size, what  # one device
    for r, bucket in enumerate(zero_b._buckets[0]):  # rank r's trainable parameters, in the
        # partition's order (largest first)
        owned = [p for g in zero_b._partition_parameters()[r] for p in g["params"]
                 if p.requires_grad]
        assert {id(p) for p in owned} == {id(p) for p, o in zip(params_b, owner)
                                          if o == r and p.requires_grad}, what
        assert bucket.numel() == max(1, sum(p.numel() for p in owned)), what
        offset = 0
        for p in owned:
            assert np.shares_memory(p._data, bucket._data), what
            np.testing.assert_array_equal(bucket[offset:offset + p.numel()].numpy(),
                                          p.detach().numpy().ravel(), err_msg=what)
            offset += p.numel()


check_buckets("built")
for x, y in batches(1):
    zero_b.zero_grad()
    F.cross_entropy(model_b(shard(x)), shard(y)).backward()
    zero_b.step()
    sched_b.step()
check_buckets("trained")
check_equal(params_b, expect4, "ZeRO AdamW with parameters_as_bucket_view")
# a parameter frozen between steps leaves its bucket (with its own copy of its values)
frozen = params_b[2]
before = frozen.detach().numpy().copy()
frozen.requires_grad_(False)
zero_b.zero_grad()
zero_b.step()
check_buckets("after freezing")
assert not any(np.shares_memory(frozen._data, b._data) for b in zero_b._buckets[0])
np.testing.assert_array_equal(frozen.detach().numpy(), before)

# ------------------------------------------------ consolidate, save, load
try:
    zero.state_dict()
    raise AssertionError("state_dict() before consolidate_state_dict() did not raise")
except RuntimeError as e:
    assert str(e) == ("Optimizer state has not been consolidated on this rank. Please call "
                      f"`consolidate_state_dict(to={rank})` on all ranks beforehand if you "
                      "meant to save the global state."), e
target = size - 1
zero.consolidate_state_dict(to=target)
if rank == target:
    sd = zero.state_dict()
    ref_sd = ref_opt.state_dict()
    assert sd["param_groups"] == ref_sd["param_groups"], (sd["param_groups"],
                                                          ref_sd["param_groups"])
    assert list(sd["state"]) == list(ref_sd["state"]) == list(range(len(params)))
    for i, s in sd["state"].items():
        assert set(s) == set(ref_sd["state"][i])
        for k in s:
            np.testing.assert_allclose(s[k].numpy(), ref_sd["state"][i][k].numpy(), rtol=1e-12,
                                       atol=1e-14, err_msg=f"state {i} {k}")
else:
    sd = None
    try:
        zero.state_dict()
        raise AssertionError("state_dict() on a rank that was not the target did not raise")
    except RuntimeError as e:
        assert f"consolidate_state_dict(to={rank})" in str(e)
sd = comm.bcast(sd, root=target)  # (as if saved on the target rank and loaded everywhere)

model2 = DDP(make_mlp(100), bucket_cap_mb=0.0005)
params2 = list(model2.parameters())
with jitgrad.no_grad():
    for p, q in zip(params2, params):
        p.copy_(q)
zero2 = ZeroRedundancyOptimizer(params2, optim.AdamW, lr=1.0)
zero2.load_state_dict(sd)
assert zero2.param_groups[0]["lr"] == zero2.optim.param_groups[0]["lr"] == 0.0125
assert {id(p) for p in zero2.optim.state} == {id(p) for p, r in zip(params2, owner) if r == rank}
assert all(v is None for i, v in sd["state"].items() if owner[i] != rank)  # (torch does this)
for x, y in batches(2, steps=2):
    ref_opt.zero_grad()
    F.cross_entropy(ref_model(x), y).backward()
    ref_opt.step()
    zero2.zero_grad()
    F.cross_entropy(model2(shard(x)), shard(y)).backward()
    zero2.step()
check_equal(params2, [p.detach().numpy() for p in ref_model.parameters()], "after loading")

# ------------------------------------------------ add_param_group
extra = jitgrad.zeros(500, dtype=jitgrad.float64, requires_grad=True)
plain_extra = extra.detach().clone().requires_grad_(True)
zero2.add_param_group({"params": [extra], "lr": 0.01})
extra_owner = zero2._param_to_rank[extra]
assert extra_owner == (rank if size == 1 else min(range(size), key=lambda r: (
    sum(s for s, o in zip(sizes, owner) if o == r), r)))
assert [zero2._param_to_rank[p] for p in params2] == owner  # old parameters keep their owners
assert len(zero2.optim.param_groups) == 2 and zero2.optim.param_groups[1]["lr"] == 0.01
assert [id(p) for p in zero2.optim.param_groups[1]["params"]] == \
    ([id(extra)] if extra_owner == rank else [])
plain = optim.AdamW([plain_extra], lr=0.01)
for _ in range(2):
    extra.grad = jitgrad.full((500,), 0.5, dtype=jitgrad.float64)
    plain_extra.grad = extra.grad.clone()
    for p in params2:
        p.grad = None
    zero2.step()
    plain.step()
check_equal([extra], [plain_extra.detach().numpy()], "added group")
assert zero2.param_groups[1]["betas"] == (0.9, 0.999)  # (AdamW's default, as in torch)

# ------------------------------------------------ a rank with no parameter (size 3)
a = jitgrad.ones(10, dtype=jitgrad.float64, requires_grad=True)
b = jitgrad.ones(5, dtype=jitgrad.float64, requires_grad=True)
small = ZeroRedundancyOptimizer([a, b], optim.SGD, lr=0.5)
a.grad, b.grad = jitgrad.ones_like(a), jitgrad.ones_like(b)
small.step()
check_equal([a, b], [np.full(10, 0.5), np.full(5, 0.5)], "small")
small.consolidate_state_dict()
if rank == 0:
    assert small.state_dict()["param_groups"][0]["params"] == [0, 1]

# llm.c's train_gpt2.py: params by keyword, a second group added, the lr set by hand per step
m1, m2 = make_mlp(5), make_mlp(5)
decay = [p for p in m1.parameters() if p.dim() >= 2]
nodecay = [p for p in m1.parameters() if p.dim() < 2]
llmc = ZeroRedundancyOptimizer(params=decay, weight_decay=0.1, optimizer_class=optim.AdamW,
                               lr=1e-3, betas=(0.9, 0.95), fused=False)
llmc.add_param_group({"params": nodecay, "weight_decay": 0.0})
plain = optim.AdamW([{"params": [p for p in m2.parameters() if p.dim() >= 2],
                      "weight_decay": 0.1},
                     {"params": [p for p in m2.parameters() if p.dim() < 2],
                      "weight_decay": 0.0}], lr=1e-3, betas=(0.9, 0.95), fused=False)
for step, (x, y) in enumerate(batches(4, steps=3)):
    for o in (llmc, plain):
        for group in o.param_groups:
            group["lr"] = 1e-3 * (step + 1)
    for m, o in ((m1, llmc), (m2, plain)):
        o.zero_grad(set_to_none=True)
        F.cross_entropy(m(x), y).backward()
        o.step()
check_equal(list(m1.parameters()), [p.detach().numpy() for p in m2.parameters()], "llm.c")

# the option jitgrad does not implement says so
try:
    ZeroRedundancyOptimizer([a], optim.SGD, lr=0.5, overlap_with_ddp=True)
    raise AssertionError("overlap_with_ddp=True did not raise")
except NotImplementedError as e:
    assert "(overlap_with_ddp=True) is not supported by jitgrad" in str(e), e

print_from_rank0(comm, f"zero ok rank={rank} size={size}")
dist.destroy_process_group()
