"""DataLoader with worker processes (num_workers > 0) against torch's: the batches and their
order, the workers' seeds (jitgrad's, Python's and NumPy's random numbers drawn in a worker),
worker_init_fn and get_worker_info, IterableDataset replayed or sharded per worker, in_order,
persistent workers, errors raised in a worker, timeouts, the main generator's stream, and the
workers' exit. Every loader here has a ``timeout`` (or runs in a subprocess with one), so a
lost batch fails a test instead of hanging it."""

import os
import random
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import jitgrad
from jitgrad.utils import data

T = 60  # the loaders' timeout: a batch that never comes fails the test after T seconds


def _plain(x):
    """Batches as plain Python (tensors as dtype name, values, requires_grad) to compare."""
    if hasattr(x, "tolist") and hasattr(x, "dtype") and hasattr(x, "requires_grad"):
        return ("tensor", str(x.dtype).split(".")[-1], x.tolist(), x.requires_grad)
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(v) for v in x)
    if isinstance(x, np.generic):
        return x.item()
    return x


def _both(run):
    """``run(lib)`` for jitgrad and torch, as plain Python."""
    torch = pytest.importorskip("torch")
    return _plain(run(jitgrad)), _plain(run(torch))


def _random_ds(lib):
    class Draws(lib.utils.data.Dataset):
        """Each sample draws from the worker's generators (seeded from the base seed)."""

        def __len__(self):
            return 9

        def __getitem__(self, i):
            info = lib.utils.data.get_worker_info()
            return {"i": i, "x": lib.rand(2), "py": random.random(),
                    "np": float(np.random.rand()), "worker": info.id, "seed": info.seed}
    return Draws()


def _stream_ds(lib, n, shard):
    class Stream(lib.utils.data.IterableDataset):
        def __iter__(self):
            info = lib.utils.data.get_worker_info()
            if not shard or info is None:
                return iter(range(n))
            # uneven shards: worker 0 ends first, the others go on
            return iter(range(info.id, n * (info.id + 1), info.num_workers))

        def __len__(self):
            return n
    return Stream()


# ---------------------------------------------------------------- batches and seeds


@pytest.mark.parametrize("own_generator", [False, True])
def test_shuffled_batches_equal_torch(own_generator):
    def run(lib):
        lib.manual_seed(0)
        ds = lib.utils.data.TensorDataset(lib.arange(11.0).reshape(11, 1), lib.arange(11) % 3)
        gen = lib.Generator().manual_seed(3) if own_generator else None
        loader = lib.utils.data.DataLoader(ds, batch_size=3, shuffle=True, num_workers=2,
                                           generator=gen, timeout=T)
        return [list(loader), list(loader), len(loader)]
    ours, theirs = _both(run)
    assert ours == theirs
    assert ours[0] != ours[1]  # (a new order and new seeds each epoch)


def test_random_numbers_drawn_in_workers_equal_torch():
    def run(lib):
        lib.manual_seed(7)
        random.seed(1)
        np.random.seed(1)
        loader = lib.utils.data.DataLoader(_random_ds(lib), batch_size=2, num_workers=2,
                                           timeout=T, collate_fn=lambda b: b)
        out = list(loader)
        # (the main process's generators are not the workers': they draw what they would)
        return out, lib.rand(1), random.random(), np.random.rand()
    ours, theirs = _both(run)
    assert ours == theirs
    workers = [s["worker"] for batch in ours[0] for s in batch]
    assert workers == [0, 0, 1, 1, 0, 0, 1, 1, 0]
    seeds = {s["worker"]: s["seed"] for batch in ours[0] for s in batch}
    assert seeds[1] == seeds[0] + 1


class _EagerSampler:
    """Draws its order when ``iter`` is called (not at the first ``next``)."""

    def __init__(self, lib):
        self.lib = lib

    def __iter__(self):
        return iter(self.lib.randperm(8).tolist())

    def __len__(self):
        return 8


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("sampler", ["shuffle", "generator", "eager"])
def test_main_generator_after_creating_an_iterator_equals_torch(workers, sampler):
    def run(lib):
        lib.manual_seed(5)
        gen = lib.Generator().manual_seed(9) if sampler == "generator" else None
        kw = {"sampler": _EagerSampler(lib)} if sampler == "eager" else {"shuffle": True}
        loader = lib.utils.data.DataLoader(list(range(8)), batch_size=2, num_workers=workers,
                                           generator=gen, **kw)
        it = iter(loader)
        after_iter = (lib.rand(2), gen and lib.rand(2, generator=gen))
        first = next(it)
        return after_iter, first, list(it), lib.rand(2)
    ours, theirs = _both(run)
    assert ours == theirs


@pytest.mark.filterwarnings("ignore:This DataLoader will create")
def test_worker_init_fn_runs_once_per_worker_with_the_worker_info():
    def run(lib):
        def init(worker_id):
            info = lib.utils.data.get_worker_info()
            _INIT.append((worker_id, info.id, info.num_workers, info.seed,
                          type(info.dataset).__name__, lib.initial_seed()))

        class Recorder(lib.utils.data.Dataset):
            def __len__(self):
                return 6

            def __getitem__(self, i):
                return list(_INIT)  # (this worker's calls so far)
        lib.manual_seed(11)
        loader = lib.utils.data.DataLoader(Recorder(), batch_size=None, num_workers=3,
                                           worker_init_fn=init, timeout=T)
        return list(loader)
    assert data.get_worker_info() is None and _INIT == []
    ours, theirs = _both(run)
    assert ours == theirs
    per_worker = {tuple(c) for sample in ours for c in sample}
    assert all(len(sample) == 1 for sample in ours)  # (one call in each worker)
    assert sorted(c[0] for c in per_worker) == [0, 1, 2]
    for worker_id, info_id, num, seed, name, initial in per_worker:
        assert worker_id == info_id and num == 3 and name == "Recorder" and seed == initial
    assert _INIT == []  # (never called in this process)


_INIT: list = []


def test_worker_info_is_frozen():
    def run(lib):
        def try_set(i):
            info = lib.utils.data.get_worker_info()
            try:
                info.id = 5
            except Exception as e:  # noqa: BLE001 - its class is compared
                return type(e).__name__
            return "set"
        return list(lib.utils.data.DataLoader(range(2), batch_size=None, num_workers=1,
                                              collate_fn=try_set, timeout=T))
    ours, theirs = _both(run)
    assert ours == theirs == ["FrozenInstanceError"] * 2


# ---------------------------------------------------------------- iterable data sets


@pytest.mark.parametrize("shard", [False, True])
@pytest.mark.parametrize("kw", [{"batch_size": 2}, {"batch_size": 2, "drop_last": True},
                                {"batch_size": None}])
def test_iterable_dataset_per_worker_equals_torch(shard, kw):
    def run(lib):
        loader = lib.utils.data.DataLoader(_stream_ds(lib, 5, shard), num_workers=2,
                                           timeout=T, **kw)
        return list(loader)
    ours, theirs = _both(run)
    assert ours == theirs
    if not shard and kw.get("batch_size") == 2 and not kw.get("drop_last"):
        values = [b[2][0] for b in ours]
        assert values == [0, 0, 2, 2, 4, 4]  # (each worker replays the stream)


def test_iterable_dataset_length_warning_equals_torch():
    def run(lib):
        loader = lib.utils.data.DataLoader(_stream_ds(lib, 3, False), num_workers=2, timeout=T)
        assert len(loader) == 3
        with pytest.warns(UserWarning) as record:
            out = list(loader)
        msgs = [str(w.message) for w in record if "Length of IterableDataset" in str(w.message)]
        return out, [m.split(" was reported")[1] for m in msgs]
    ours, theirs = _both(run)
    assert ours == theirs and len(ours[1]) == 3


# ---------------------------------------------------------------- order, persistence, exit


class _Slow(data.Dataset):
    """Sample 0 takes a while: the batches after it come back first."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 0:
            time.sleep(0.5)
        return i


def test_in_order_false_yields_every_batch_once():
    kw = {"batch_size": 2, "num_workers": 2, "timeout": T}
    unordered = [b.tolist() for b in data.DataLoader(_Slow(), in_order=False, **kw)]
    assert sorted(unordered) == [[0, 1], [2, 3], [4, 5], [6, 7]] and unordered[0] != [0, 1]
    ordered = [b.tolist() for b in data.DataLoader(_Slow(), **kw)]
    assert ordered == [[0, 1], [2, 3], [4, 5], [6, 7]]


@pytest.mark.parametrize("persistent", [False, True])
def test_persistent_workers_over_two_epochs_equal_torch(persistent):
    pids = []

    def run(lib):
        def sample(i):
            return {"i": i, "x": lib.rand(1), "pid": os.getpid()}
        lib.manual_seed(2)
        loader = lib.utils.data.DataLoader(range(4), batch_size=None, num_workers=2,
                                           collate_fn=sample, timeout=T,
                                           persistent_workers=persistent)
        epochs = [list(loader), list(loader)]
        for epoch in epochs:
            pids.append({s.pop("pid") for s in epoch})
        return epochs, lib.rand(1)
    ours, theirs = _both(run)
    assert ours == theirs
    assert len(pids[0]) == 2 and os.getpid() not in pids[0]
    assert (pids[0] == pids[1]) is persistent
    if persistent:  # (the workers' generators go on: new numbers in the second epoch)
        assert ours[0][0] != ours[0][1]


def test_persistent_workers_resume_after_a_partial_epoch_and_a_stream_end():
    workers = []

    def run(lib):
        loader = lib.utils.data.DataLoader(_stream_ds(lib, 5, True), batch_size=2,
                                           num_workers=2, persistent_workers=True, timeout=T)
        it = iter(loader)
        first = next(it)
        out = [first, list(loader), list(loader)]
        if lib is jitgrad:
            workers.extend(loader._iterator._workers)
            assert all(w.is_alive() for w in workers)
        return out
    ours, theirs = _both(run)
    assert ours == theirs
    assert [b[2] for b in ours[1]] == [[0, 2], [1, 3], [4], [5, 7], [9]]
    for w in workers:  # (they exit when the loader is collected)
        w.join(10)
    assert [w.exitcode for w in workers] == [0, 0]


def test_workers_exit_after_a_pass_and_when_the_iterator_is_collected():
    loader = data.DataLoader(range(6), batch_size=2, num_workers=2, timeout=T)
    it = iter(loader)
    workers = it._workers
    assert [b.tolist() for b in it] == [[0, 1], [2, 3], [4, 5]]
    assert [w.exitcode for w in workers] == [0, 0]  # (exited and reaped)
    it = iter(loader)
    next(it)
    workers = it._workers
    del it
    for w in workers:
        w.join(10)
    assert [w.exitcode for w in workers] == [0, 0]


def test_batches_survive_pickling_with_their_dtypes():
    def run(lib):
        def sample(i):
            return {"f16": lib.full((2,), i, dtype=lib.float16), "i32": lib.tensor([i]).int(),
                    "b": lib.tensor(i % 2 == 0), "n": np.int64(i), "s": f"s{i}",
                    "t": (lib.tensor(float(i)), [i])}
        ds = [sample(i) for i in range(5)]
        return list(lib.utils.data.DataLoader(ds, batch_size=2, num_workers=2, timeout=T,
                                              drop_last=True))
    ours, theirs = _both(run)
    assert ours == theirs and len(ours) == 2
    assert ours[0]["f16"][1] == "float16" and ours[0]["i32"][3] is False


def test_collate_fn_runs_in_the_worker():
    loader = data.DataLoader(range(4), batch_size=2, num_workers=2, timeout=T,
                             collate_fn=lambda b: (b, os.getpid()))
    out = list(loader)
    assert [b for b, _ in out] == [[0, 1], [2, 3]]
    assert os.getpid() not in {pid for _, pid in out} and len({pid for _, pid in out}) == 2


def test_spawn_context():
    ds = data.TensorDataset(jitgrad.arange(5.0))
    loader = data.DataLoader(ds, batch_size=2, num_workers=1, multiprocessing_context="spawn",
                             timeout=T)
    assert [b[0].tolist() for b in loader] == [[0.0, 1.0], [2.0, 3.0], [4.0]]


# ---------------------------------------------------------------- errors


class _Fails(data.Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 3:
            raise _ERRORS[0]
        return i


_ERRORS: list = []


@pytest.mark.parametrize("error", [ValueError("bad sample 3"), KeyError("missing"),
                                   StopIteration()])
def test_a_worker_exception_is_raised_in_the_main_process_as_torch(error):
    torch = pytest.importorskip("torch")
    _ERRORS[:] = [error]
    raised = []
    for lib, ds_class in ((jitgrad, _Fails), (torch, _TorchFails())):
        loader = lib.utils.data.DataLoader(ds_class(), batch_size=2, num_workers=2, timeout=T)
        it = iter(loader)
        assert next(it).tolist() == [0, 1]
        with pytest.raises(Exception) as info:
            next(it)
        raised.append(info.value)
        assert next(it).tolist() == [4, 5]  # (the iterator goes on)
        # (and ends: torch's iterator, held by the traceback's reference cycle, would stop its
        # workers only when collected, after 5 s per worker)
        assert list(it) == []
    ours, theirs = raised
    assert type(ours) is type(theirs) is type(error)
    head = f"Caught {type(error).__name__} in DataLoader worker process 1.\nOriginal " \
        "Traceback (most recent call last):\n"
    for e in raised:
        assert str(e).startswith(head)
    assert str(ours).splitlines()[-1] == str(theirs).splitlines()[-1]


def _TorchFails():  # noqa: N802 - a class factory
    import torch

    class Fails(torch.utils.data.Dataset):
        __len__ = _Fails.__len__
        __getitem__ = _Fails.__getitem__
    return Fails


def test_worker_init_fn_error_comes_with_the_first_batch():
    def init(worker_id):
        raise RuntimeError(f"init {worker_id}")
    loader = data.DataLoader(range(4), num_workers=1, worker_init_fn=init, timeout=T)
    with pytest.raises(RuntimeError, match="(?s)Caught RuntimeError in DataLoader worker process 0"
                       ".*RuntimeError: init 0"):
        list(loader)


def test_an_unpicklable_batch_is_an_error_not_a_hang():
    loader = data.DataLoader(range(2), batch_size=None, num_workers=1, timeout=T,
                             collate_fn=lambda i: (lambda: i))
    with pytest.raises(Exception, match="in DataLoader worker process 0"):
        list(loader)


def test_timeout_error_equals_torch():
    def run(lib):
        def slow(i):
            time.sleep(1.5)
            return i
        loader = lib.utils.data.DataLoader(range(2), batch_size=None, num_workers=1,
                                           collate_fn=slow, timeout=0.5)
        it = iter(loader)
        with pytest.raises(RuntimeError) as info:
            next(it)
        it._shutdown_workers()  # (not at the collection of the traceback's reference cycle)
        return str(info.value)
    ours, theirs = _both(run)
    assert ours == theirs == "DataLoader timed out after 0.5 seconds"


def test_a_worker_that_dies_is_an_error():
    loader = data.DataLoader(range(2), batch_size=None, num_workers=1, timeout=2,
                             collate_fn=lambda i: os._exit(3))
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited "
                       "unexpectedly"):
        list(loader)


@pytest.mark.parametrize("make", [
    lambda L: L.utils.data.DataLoader(range(3), multiprocessing_context="spawn"),
    lambda L: L.utils.data.DataLoader(range(3), num_workers=1, multiprocessing_context="nope"),
    lambda L: L.utils.data.DataLoader(range(3), num_workers=1, multiprocessing_context=3),
    lambda L: L.utils.data.DataLoader(range(3), num_workers=1, prefetch_factor=-1),
    lambda L: iter(L.utils.data.DataLoader(range(3), timeout=1)),
    lambda L: setattr(L.utils.data.DataLoader(range(3)), "batch_size", 2),
])
def test_errors_equal_torch(make):
    torch = pytest.importorskip("torch")
    raised = []
    for lib in (jitgrad, torch):
        with pytest.raises(Exception) as info:
            make(lib)
        raised.append((type(info.value), str(info.value)))
    assert raised[0] == raised[1]


def test_prefetch_factor_zero_fails_at_iter():
    loader = data.DataLoader(range(3), num_workers=1, prefetch_factor=0)
    # (torch's iterator fails the same way, then once more in its __del__)
    with pytest.raises(AssertionError, match="prefetch_factor must be greater than 0"):
        iter(loader)


def test_too_many_workers_warning_equals_torch():
    torch = pytest.importorskip("torch")
    n = len(os.sched_getaffinity(0)) + 1 if hasattr(os, "sched_getaffinity") else os.cpu_count() + 1
    messages = []
    for lib in (jitgrad, torch):
        with pytest.warns(UserWarning, match="This DataLoader will create") as record:
            lib.utils.data.DataLoader(range(3), num_workers=n)
        messages.append([str(w.message) for w in record])
    assert messages[0] == messages[1]


def test_a_script_exits_cleanly_with_live_workers():
    """Persistent and half-consumed iterators alive at exit: no hang, no error output."""
    script = textwrap.dedent("""
        import jitgrad
        from jitgrad.utils import data
        keep = data.DataLoader(range(8), batch_size=2, num_workers=2, persistent_workers=True)
        print([b.tolist() for b in keep])
        half = iter(data.DataLoader(range(8), batch_size=2, num_workers=2))
        print(next(half).tolist())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["[[0, 1], [2, 3], [4, 5], [6, 7]]", "[0, 1]"]
    assert done.stderr == ""
