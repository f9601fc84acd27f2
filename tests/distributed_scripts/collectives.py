"""Run under mpiexec: every collective of jitgrad.distributed against values computed here.

Each rank checks its own results and prints ``collectives ok rank=R size=S``.
"""

import datetime
import sys
import time
import warnings

import numpy as np
from mpi4py import MPI

import jitgrad
import jitgrad.distributed as dist
from _report import print_from_rank0

dist.init_process_group(backend="mpi")
rank, size = dist.get_rank(), dist.get_world_size()
assert dist.is_initialized() and dist.get_backend() == "mpi"
assert dist.group.WORLD is not None and dist.get_rank(dist.group.WORLD) == rank

try:
    dist.init_process_group("mpi")
except ValueError as e:
    assert str(e) == "trying to initialize the default process group twice!", e
else:
    raise AssertionError("a second init_process_group did not raise")


def base(shape=(2, 3), dtype=jitgrad.float64, r=rank):
    n = int(np.prod(shape))
    return jitgrad.tensor((np.arange(n).reshape(shape) + 10.0 * r + 1.0).tolist(), dtype=dtype)


every = [base(r=r).numpy() for r in range(size)]

# all_reduce with every op, blocking and async
for op, expect in [(dist.ReduceOp.SUM, sum(every)), (dist.ReduceOp.AVG, sum(every) / size),
                   (dist.ReduceOp.MAX, np.max(every, axis=0)),
                   (dist.ReduceOp.MIN, np.min(every, axis=0)),
                   (dist.ReduceOp.PRODUCT, np.prod(every, axis=0))]:
    t = base()
    v0 = t._version
    assert dist.all_reduce(t, op=op) is None
    np.testing.assert_allclose(t.numpy(), expect, rtol=1e-12)
    assert t._version > v0
    t = base()
    work = dist.all_reduce(t, op=op, async_op=True)
    assert isinstance(work, dist.Work)
    assert work.wait() is True and work.is_completed()
    np.testing.assert_allclose(t.numpy(), expect, rtol=1e-12)

# integer bitwise ops, float32, a non-contiguous view written through to its base
ints = jitgrad.tensor([rank + 1, 2 ** rank], dtype=jitgrad.int64)
dist.all_reduce(ints, op=dist.ReduceOp.BOR)
assert ints.tolist() == [int(np.bitwise_or.reduce(np.arange(1, size + 1))), 2 ** size - 1]
f32 = base(dtype=jitgrad.float32)
dist.all_reduce(f32)
assert f32.dtype == jitgrad.float32
np.testing.assert_allclose(f32.numpy(), sum(every), rtol=1e-6)
whole = base((4, 4))
col = whole[:, 1]
dist.all_reduce(col)
expect_whole = base((4, 4)).numpy().copy()
expect_whole[:, 1] = sum(base((4, 4), r=r).numpy()[:, 1] for r in range(size))
np.testing.assert_allclose(whole.numpy(), expect_whole)
try:
    dist.all_reduce(jitgrad.tensor([1, 2]), op=dist.ReduceOp.AVG)
except RuntimeError as e:
    assert "AVG needs a floating point" in str(e)
else:
    raise AssertionError("AVG on integers did not raise")
try:
    dist.all_reduce([base()])
except TypeError as e:
    assert "Expected parameter `tensor`" in str(e)
else:
    raise AssertionError("a list did not raise")

# broadcast from the last rank (not 0), async; a bad root
t = base()
dist.broadcast(t, src=size - 1, async_op=True).wait()
np.testing.assert_array_equal(t.numpy(), every[size - 1])
try:
    dist.broadcast(t, src=size)
except RuntimeError as e:
    assert str(e) == f"ProcessGroupMPI::broadcast: invalid root rank: {size}"
else:
    raise AssertionError("a bad root did not raise")

# all_gather into a list, and into one tensor
outs = [jitgrad.zeros(2, 3, dtype=jitgrad.float64) for _ in range(size)]
work = dist.all_gather(outs, base(), async_op=True)
work.wait()
for r in range(size):
    np.testing.assert_array_equal(outs[r].numpy(), every[r])
big = jitgrad.zeros(size * 2, 3, dtype=jitgrad.float64)
dist.all_gather_into_tensor(big, base())
np.testing.assert_array_equal(big.numpy(), np.concatenate(every))
try:
    dist.all_gather(outs[:-1] if size > 1 else outs * 2, base())
except RuntimeError as e:
    assert "invalid output tensor list" in str(e)
else:
    raise AssertionError("a short list did not raise")

# reduce_scatter: rank r gets the reduction of every rank's input_list[r]
inputs = [base(r=rank) * (j + 1) for j in range(size)]
out = jitgrad.zeros(2, 3, dtype=jitgrad.float64)
dist.reduce_scatter(out, inputs)
np.testing.assert_allclose(out.numpy(), sum(every) * (rank + 1))
out = jitgrad.zeros(2, 3, dtype=jitgrad.float64)
dist.reduce_scatter(out, inputs, op=dist.ReduceOp.AVG, async_op=True).wait()
np.testing.assert_allclose(out.numpy(), sum(every) * (rank + 1) / size)
out = jitgrad.zeros(3, dtype=jitgrad.float64)
stacked = jitgrad.cat([base(r=rank).reshape(-1)[:3] * (j + 1) for j in range(size)])
dist.reduce_scatter_tensor(out, stacked, op=dist.ReduceOp.MAX)
np.testing.assert_allclose(out.numpy(), every[size - 1].reshape(-1)[:3] * (rank + 1))
try:
    dist.reduce_scatter(out, inputs + inputs)
except RuntimeError as e:
    assert str(e) == "invalid input tensor list size, must be world size"
else:
    raise AssertionError("a long list did not raise")

# async_op: the progress thread completes the collective while this rank makes no MPI call
# (plain MPI would leave it untouched until wait()); polls the request handle, not MPI
if dist.group.WORLD.progress is not None:
    t = base()
    work = dist.all_reduce(t, async_op=True)
    deadline = time.monotonic() + 60
    while work._request != MPI.REQUEST_NULL and time.monotonic() < deadline:
        time.sleep(0.005)
    assert work._request == MPI.REQUEST_NULL, "the async all_reduce made no progress"
    work.wait()
    np.testing.assert_allclose(t.numpy(), sum(every))

# Python objects
objs = [None] * size
dist.all_gather_object(objs, {"rank": rank, "loss": 0.5 * rank})
assert objs == [{"rank": r, "loss": 0.5 * r} for r in range(size)]
box = [f"from {rank}", rank] if rank == size - 1 else [None, None]
dist.broadcast_object_list(box, src=size - 1)
assert box == [f"from {size - 1}", size - 1]

# inside jit a collective would run once, at trace time: refused
captured = base()
traced = jitgrad.jit(lambda x: (dist.all_reduce(captured), x * 2)[1])
try:
    traced(base())
except RuntimeError as e:
    assert "cannot run inside jitgrad.jit" in str(e)
else:
    raise AssertionError("a collective inside jit did not raise")
np.testing.assert_array_equal(captured.numpy(), every[rank])

# barrier, blocking and async; a wait with a timeout
assert dist.barrier() is None
dist.barrier(async_op=True).wait()
t = base()
assert dist.all_reduce(t, async_op=True).wait(timeout=datetime.timedelta(seconds=60))
np.testing.assert_allclose(t.numpy(), sum(every))
if rank == 0:  # the other ranks enter this barrier only after rank 0's wait has timed out
    late = dist.barrier(async_op=True)
    try:
        late.wait(timeout=datetime.timedelta(milliseconds=20))
    except RuntimeError as e:
        assert "timed out" in str(e)
    else:
        raise AssertionError("a barrier nobody else entered finished")
    assert not late.is_completed()
    MPI.COMM_WORLD.Barrier()  # another communicator than the group's: releases the others
    late.wait()
else:
    MPI.COMM_WORLD.Barrier()
    dist.barrier()

# the sampler takes rank and size from the group; the shards partition the data set
sampler = jitgrad.utils.data.DistributedSampler(list(range(10)), seed=5)
sampler.set_epoch(2)
mine = list(sampler)
shards = dist.group.WORLD.comm.allgather(mine)
flat = [i for s in shards for i in s]
assert len(mine) == len(sampler) == -(-10 // size)
assert set(flat) == set(range(10)) and len(flat) == len(sampler) * size

dist.destroy_process_group()
assert not dist.is_initialized()
assert sys.excepthook is sys.__excepthook__
with warnings.catch_warnings(record=True) as caught:  # torch's warning; a second init works
    warnings.simplefilter("always")
    dist.init_process_group(backend="mpi", world_size=size, rank=rank)
assert any("are ignored since they are assigned by the MPI runtime" in str(w.message)
           for w in caught), caught
dist.barrier()
print_from_rank0(dist.group.WORLD.comm, f"collectives ok rank={rank} size={size}")
dist.destroy_process_group()
