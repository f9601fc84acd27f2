"""jitgrad.distributed, DistributedDataParallel and DistributedSampler.

The collectives and DDP run on real ranks: the scripts in tests/distributed_scripts/ are
launched with ``mpiexec -n 2`` and ``-n 3`` (3 catches power-of-two assumptions). Those tests
skip when mpi4py or mpiexec is missing (install the ``distributed`` extra).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import jitgrad
import jitgrad.distributed as dist
from jitgrad.distributed.optim import ZeroRedundancyOptimizer
from jitgrad.distributed.optim.zero_redundancy_optimizer import _partition
from jitgrad.distributed.reducer import assign_buckets

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "distributed_scripts"
NOT_INIT = ("Default process group has not been initialized, please make sure to call "
            "init_process_group.")


def _mpiexec() -> str | None:
    sibling = Path(sys.executable).parent / "mpiexec"
    return str(sibling) if sibling.exists() else shutil.which("mpiexec")


needs_mpi = pytest.mark.skipif(
    importlib.util.find_spec("mpi4py") is None or _mpiexec() is None,
    reason="needs mpi4py and mpiexec (pip install 'jitgrad[distributed]')")


def mpirun(n: int, script: Path, *args: str, timeout: float = 240,
           env_extra: dict | None = None) -> subprocess.CompletedProcess:
    """Runs ``script`` on ``n`` ranks with this interpreter and this checkout of jitgrad."""
    env = dict(os.environ, **(env_extra or {}))
    # Harmless for MPICH; let Open MPI's mpiexec run as root and put 3 ranks on 2 cores.
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")  # n ranks share the cores
    env.setdefault("OMP_NUM_THREADS", "1")
    return subprocess.run([_mpiexec(), "-n", str(n), sys.executable, str(script), *args],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def _ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


# ---------------------------------------------------------------- without MPI
def test_import_does_not_load_mpi4py():
    code = ("import sys, jitgrad, jitgrad.nn, jitgrad.distributed, jitgrad.nn.parallel, "
            "jitgrad.utils.data\n"
            "assert jitgrad.nn.parallel.DistributedDataParallel is not None\n"
            "print(sorted(m for m in sys.modules if m.startswith('mpi4py')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_without_mpi4py_init_says_what_to_install():
    code = ("import sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] == 'mpi4py':\n"
            "            raise ModuleNotFoundError(name)\n"
            "sys.meta_path.insert(0, Block())\n"
            "import jitgrad.distributed as dist\n"
            "assert not dist.is_available() and not dist.is_mpi_available()\n"
            "try:\n"
            "    dist.init_process_group('mpi')\n"
            "except RuntimeError as e:\n"
            "    print(e)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Distributed package doesn't have MPI built in")
    assert "jitgrad[distributed]" in proc.stdout


@pytest.mark.parametrize("call", [
    lambda: dist.all_reduce(jitgrad.ones(2)),
    lambda: dist.broadcast(jitgrad.ones(2), 0),
    lambda: dist.all_gather([jitgrad.ones(2)], jitgrad.ones(2)),
    lambda: dist.reduce_scatter(jitgrad.ones(2), [jitgrad.ones(2)]),
    lambda: dist.barrier(),
    lambda: dist.all_gather_object([None], 1),
    lambda: dist.broadcast_object_list([1], src=0),
    lambda: dist.get_rank(),
    lambda: dist.get_world_size(),
    lambda: jitgrad.nn.parallel.DistributedDataParallel(jitgrad.nn.Linear(2, 2)),
    lambda: ZeroRedundancyOptimizer([jitgrad.ones(2, requires_grad=True)],
                                    jitgrad.optim.AdamW, lr=0.1),
    lambda: ZeroRedundancyOptimizer([jitgrad.ones(2, requires_grad=True)], jitgrad.optim.SGD,
                                    overlap_with_ddp=True, lr=0.1),  # (the group is checked first)
])
def test_before_init_raises_torchs_error(call):
    assert not dist.is_initialized()
    with pytest.raises(ValueError) as ours:
        call()
    assert str(ours.value) == NOT_INIT


def test_sampler_without_a_group():
    if dist.is_available():
        with pytest.raises(ValueError, match="^Default process group has not been initialized"):
            jitgrad.utils.data.DistributedSampler(range(4))
    else:  # torch's text when its distributed package is missing
        with pytest.raises(RuntimeError, match="^Requires distributed package to be available$"):
            jitgrad.utils.data.DistributedSampler(range(4))
    assert len(jitgrad.utils.data.DistributedSampler(range(4), num_replicas=2, rank=1)) == 2


def test_before_init_matches_torch():
    torch_dist = pytest.importorskip("torch.distributed")
    import torch

    with pytest.raises(ValueError) as theirs:
        torch_dist.all_reduce(torch.ones(2))
    assert str(theirs.value) == NOT_INIT
    with pytest.raises(AssertionError) as theirs:
        torch_dist.destroy_process_group()
    with pytest.raises(AssertionError) as ours:
        dist.destroy_process_group()
    assert str(ours.value) == str(theirs.value)


def test_other_backends_are_refused_clearly():
    with pytest.raises(RuntimeError, match="only the 'mpi' backend"):
        dist.init_process_group("gloo")
    assert not dist.is_initialized()


def test_reduce_op_names_and_values_match_torch():
    torch_dist = pytest.importorskip("torch.distributed")
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"):
        assert int(getattr(dist.ReduceOp, name)) == int(getattr(torch_dist.ReduceOp, name))
        assert repr(getattr(dist.ReduceOp, name)) == repr(getattr(torch_dist.ReduceOp, name))


def _bucket_sizes(shapes, cap, first):
    params = [jitgrad.zeros(*s) for s in shapes]
    return [[tuple(params[i].shape) for i in b] for b in assign_buckets(params, cap, first)]


def test_buckets_reverse_order_first_bucket_small():
    w2 = [(784, 512), (512,), (512, 512), (512,), (512, 10), (10,)]  # W2's float32 parameters
    mb = 1024 * 1024
    assert _bucket_sizes(w2, 25 * mb, mb) == [
        [(10,), (512, 10), (512,), (512, 512)],  # reaches 1 MiB with the 512x512 weight
        [(512,), (784, 512)]]
    assert _bucket_sizes(w2, 25 * mb, 25 * mb) == [list(reversed(w2))]
    assert len(_bucket_sizes(w2, 1, 1)) == 6  # every tensor closes its own bucket
    mixed = [jitgrad.zeros(4), jitgrad.zeros(4, dtype=jitgrad.float64), jitgrad.zeros(4)]
    groups = assign_buckets(mixed, 10 ** 6, 10 ** 6)
    assert sorted(groups) == [[1], [2, 0]]  # one dtype per bucket


# ---------------------------------------------------------------- ZeroRedundancyOptimizer
ZERO_GROUPS = [  # parameter sizes per param group
    [[96, 16, 256, 16, 48, 3]],  # ddp_train's and zero.py's MLP
    [[96, 16, 256, 16], [48, 3]],  # the running sizes carry over from group to group
    [[5, 5, 5, 5, 5]],  # ties go to the lowest rank, equal sizes keep their order
    [[1, 7, 3, 7, 2, 9, 9, 4]],
    [[10, 5]],  # a third rank gets nothing
]


def _our_partition(groups, world):
    params = [jitgrad.zeros(n) for g in groups for n in g]
    it = iter(params)
    param_groups = [{"params": [next(it) for _ in g], "lr": i} for i, g in enumerate(groups)]
    out = _partition(param_groups, world)
    index = {id(p): i for i, p in enumerate(params)}
    assert [[g["lr"] for g in rank] for rank in out] == [list(range(len(groups)))] * world
    return [[[index[id(p)] for p in g["params"]] for g in rank] for rank in out]


@pytest.mark.parametrize("groups", ZERO_GROUPS)
@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_zero_partition_matches_torch(groups, world):
    torch = pytest.importorskip("torch")
    from torch.distributed.optim import ZeroRedundancyOptimizer as TorchZero

    # torch's partition runs without a process group on an object that has only what it reads
    theirs = TorchZero.__new__(TorchZero)
    theirs.world_size, theirs._partition_parameters_cache = world, []
    params = [torch.zeros(n) for g in groups for n in g]
    it = iter(params)
    theirs.param_groups = [{"params": [next(it) for _ in g]} for g in groups]
    index = {id(p): i for i, p in enumerate(params)}
    expect = [[[index[id(p)] for p in g["params"]] for g in rank]
              for rank in theirs._partition_parameters()]
    assert _our_partition(groups, world) == expect


def test_zero_partition_by_hand():
    # (what torch gives, as checked above; stated here for when torch is not installed)
    assert _our_partition(ZERO_GROUPS[0], 2) == [[[2]], [[0, 4, 1, 3, 5]]]
    assert _our_partition(ZERO_GROUPS[1], 3) == [[[2], []], [[0], []], [[1, 3], [4, 5]]]
    assert _our_partition(ZERO_GROUPS[4], 3) == [[[0]], [[1]], [[]]]


@pytest.mark.parametrize("params", [
    [], jitgrad.ones(2), [jitgrad.ones(2), {"params": []}], [{"lr": 1}], 3,
    [jitgrad.ones(2), jitgrad.ones(2, dtype=jitgrad.float64)]])
def test_zero_bad_params_are_torchs_errors(params):
    torch = pytest.importorskip("torch")

    def as_torch(x):
        if isinstance(x, jitgrad.Tensor):
            return torch.tensor(x.tolist(), dtype=getattr(torch, str(x.dtype).split(".")[1]))
        if isinstance(x, list):
            return [as_torch(v) for v in x]
        return x

    from torch.distributed.optim import ZeroRedundancyOptimizer as TorchZero

    with pytest.raises((TypeError, ValueError)) as theirs:
        TorchZero(as_torch(params), torch.optim.AdamW, lr=0.1)
    with pytest.raises((TypeError, ValueError)) as ours:
        ZeroRedundancyOptimizer(params, jitgrad.optim.AdamW, lr=0.1)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value).replace("torch.", "jitgrad.")


# ---------------------------------------------------------------- the sampler
@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True), (9, 3, False),
                                                  (2, 4, False), (11, 2, True)])
def test_distributed_sampler_matches_torch_unshuffled(n, replicas, drop_last):
    torch_data = pytest.importorskip("torch.utils.data")
    for rank in range(replicas):
        ours = jitgrad.utils.data.DistributedSampler(list(range(n)), num_replicas=replicas,
                                                     rank=rank, shuffle=False,
                                                     drop_last=drop_last)
        theirs = torch_data.DistributedSampler(list(range(n)), num_replicas=replicas, rank=rank,
                                               shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs)
        assert len(ours) == len(theirs) and ours.total_size == theirs.total_size


def test_distributed_sampler_shuffle_partitions_and_follows_the_epoch():
    Sampler = jitgrad.utils.data.DistributedSampler
    shards = [list(Sampler(range(12), num_replicas=3, rank=r, seed=7)) for r in range(3)]
    assert sorted(i for s in shards for i in s) == list(range(12))
    assert shards[0] == list(Sampler(range(12), num_replicas=3, rank=0, seed=7))
    s = Sampler(range(12), num_replicas=3, rank=0, seed=7)
    s.set_epoch(1)
    assert list(s) != shards[0] and s.epoch == 1
    assert list(Sampler(range(12), num_replicas=3, rank=0, seed=8)) != shards[0]


@pytest.mark.parametrize("rank", [3, -1])
def test_distributed_sampler_bad_rank_is_torchs_error(rank):
    torch_data = pytest.importorskip("torch.utils.data")
    with pytest.raises(ValueError) as theirs:
        torch_data.DistributedSampler(range(4), num_replicas=3, rank=rank)
    with pytest.raises(ValueError) as ours:
        jitgrad.utils.data.DistributedSampler(range(4), num_replicas=3, rank=rank)
    assert str(ours.value) == str(theirs.value)


# ---------------------------------------------------------------- real ranks
@needs_mpi
@pytest.mark.parametrize("n", [2, 3])
def test_collectives_on_ranks(n):
    out = _ok(mpirun(n, SCRIPTS / "collectives.py"))
    assert out.splitlines() == [f"collectives ok rank={r} size={n}" for r in range(n)]


@needs_mpi
@pytest.mark.parametrize("n,progress_thread", [(2, "1"), (3, "1"), (2, "0")])
def test_ddp_equals_single_process_training(n, progress_thread):
    """Also no_sync, jit, find_unused_parameters; with and without the MPI progress thread."""
    out = _ok(mpirun(n, SCRIPTS / "ddp_train.py",
                     env_extra={"JITGRAD_MPI_PROGRESS_THREAD": progress_thread}))
    assert out.splitlines() == [f"ddp ok rank={r} size={n}" for r in range(n)]


@needs_mpi
@pytest.mark.parametrize("n", [2, 3])
def test_zero_redundancy_optimizer_on_ranks(n):
    """DDP + ZeroRedundancyOptimizer(AdamW) equals one process's AdamW; shard-local state;
    consolidate/state_dict/load_state_dict; add_param_group; LR scheduler."""
    out = _ok(mpirun(n, SCRIPTS / "zero.py"))
    assert out.splitlines() == [f"zero ok rank={r} size={n}" for r in range(n)]


@needs_mpi
def test_ddp_errors_on_every_rank():
    out = _ok(mpirun(2, SCRIPTS / "ddp_errors.py"))
    lines = out.splitlines()
    for r in range(2):
        shape = [ln for ln in lines if ln.startswith(f"shape rank={r}: ")]
        assert len(shape) == 1 and "params[0] (0.weight) has sizes [5, 3]" in shape[0] \
            and "sizes [4, 3]" in shape[0] and "on rank 1" in shape[0], lines
        count = [ln for ln in lines if ln.startswith(f"count rank={r}: ")]
        assert count == [f"count rank={r}: DDP expects same model across all ranks, but Rank 0 "
                         "has 2 params, while rank 1 has inconsistent 4 params. (reported on "
                         f"rank {r})"], lines
        assert f"frozen rank={r}: DistributedDataParallel is not needed when a module doesn't " \
               "have any parameter that requires a gradient." in lines
        unused = [ln for ln in lines if ln.startswith(f"unused rank={r}: ")]
        assert len(unused) == 1 and "Expected to have finished reduction in the prior " \
            "iteration" in unused[0] and "find_unused_parameters=True" in unused[0] \
            and unused[0].endswith(f"did not receive grad for rank {r}: unused.weight, "
                                   "unused.bias")
        assert f"errors ok rank={r}" in lines


@needs_mpi
def test_exception_on_one_rank_aborts_the_job(tmp_path):
    # a hang would raise TimeoutExpired
    proc = mpirun(2, SCRIPTS / "abort.py", str(tmp_path), timeout=120)
    assert proc.returncode != 0
    failed_rank_stderr = (tmp_path / "stderr.1").read_text()
    assert "ValueError: boom on rank 1" in failed_rank_stderr
    assert "aborting all 2 ranks (MPI.COMM_WORLD.Abort)" in failed_rank_stderr
    assert "rank 0 got past the barrier" not in proc.stdout


@needs_mpi
def test_ddp_example_on_two_ranks():
    out = _ok(mpirun(2, ROOT / "examples" / "ddp_digits.py", "--steps", "8"))
    found = re.search(r"parameters match the single-process run: max abs difference (\S+)", out)
    assert found is not None, out
    assert float(found.group(1)) < 1e-10
