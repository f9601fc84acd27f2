"""jitgrad.utils.data against torch.utils.data: data sets, samplers, default_collate and
DataLoader batches (equal to torch's for the same order), shuffling (a reproducible
permutation), random_split, and torch's error texts."""

import collections
import warnings

import numpy as np
import pytest

import jitgrad
from jitgrad.utils import data

from torch_compare import same_error


def _torch():
    return pytest.importorskip("torch")


def _lib_data(lib):
    return lib.utils.data


def _same(a, b):
    """Nested batches of both libraries are equal (types, dtypes, values)."""
    torch = _torch()
    if isinstance(b, torch.Tensor):
        assert isinstance(a, jitgrad.Tensor)
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    elif isinstance(b, dict):
        assert type(a) is type(b) and list(a) == list(b)
        for k in b:
            _same(a[k], b[k])
    elif isinstance(b, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a == b


def _loaders(make_dataset, **kw):
    torch = _torch()
    out = []
    for lib in (jitgrad, torch):
        ds = make_dataset(lib)
        out.append(list(lib.utils.data.DataLoader(ds, **kw)))
    return out


ARRAYS = np.random.default_rng(0).standard_normal((10, 3))
LABELS = np.arange(10) % 3


def _tensor_ds(lib):
    return lib.utils.data.TensorDataset(lib.tensor(ARRAYS), lib.tensor(LABELS))


class _Samples:
    """A map-style data set of mixed samples (the same class for both libraries)."""

    Point = collections.namedtuple("Point", ["x", "y"])

    def __init__(self, lib, kind):
        self.lib, self.kind = lib, kind

    def __len__(self):
        return 7

    def __getitem__(self, i):
        if self.kind == "dict":
            return {"x": self.lib.tensor(ARRAYS[i]), "label": int(LABELS[i]), "w": 0.5 * i,
                    "name": f"s{i}"}
        if self.kind == "numpy":
            return ARRAYS[i], np.float32(i), np.int64(i)
        if self.kind == "namedtuple":
            return self.Point(self.lib.tensor(ARRAYS[i]), [i, i + 1])
        if self.kind == "bool":
            return i % 2 == 0
        raise AssertionError(self.kind)


@pytest.mark.parametrize("kw", [{}, {"batch_size": 4}, {"batch_size": 4, "drop_last": True},
                                {"batch_size": 3, "sampler": [9, 0, 4, 4, 2]},
                                {"batch_sampler": [[1, 2], [0], [9, 8, 7]]},
                                {"batch_size": None}, {"batch_size": 10}],
                         ids=["default", "b4", "b4_drop", "sampler", "batch_sampler", "none",
                              "b10"])
def test_tensor_dataset_batches_equal_torch(kw):
    ours, theirs = _loaders(_tensor_ds, **kw)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        _same(a, b)


@pytest.mark.parametrize("kind", ["dict", "numpy", "namedtuple", "bool"])
def test_default_collate_of_structures_equals_torch(kind):
    ours, theirs = _loaders(lambda lib: _Samples(lib, kind), batch_size=3)
    assert len(ours) == len(theirs) == 3
    for a, b in zip(ours, theirs):
        if kind == "namedtuple":
            assert type(a).__name__ == "Point" and type(b).__name__ == "Point"
            for x, y in zip(a, b):
                _same(x, y)
        else:
            _same(a, b)


def test_default_collate_keeps_strings_inside_a_sequence_a_tuple():
    torch = pytest.importorskip("torch")
    point = collections.namedtuple("Point", "name x")
    for batch in ([("a", 1), ("b", 2)], [["a", 1.5], ["b", 2.5]], [point("p", 1), point("q", 2)]):
        ours, theirs = data.default_collate(batch), torch.utils.data.default_collate(batch)
        assert ours[0] == theirs[0] == (("a", "b") if batch[0][0] == "a" else ("p", "q"))
        assert ours[1].tolist() == theirs[1].tolist()
    assert data.default_collate(["a", "b"]) == ["a", "b"]


def test_default_collate_errors_match_torch():
    _torch()
    same_error(lambda L: L.utils.data.default_collate([(1, 2), (1, 2, 3)]))
    same_error(lambda L: L.utils.data.default_collate([object(), object()]).__class__)
    same_error(lambda L: L.utils.data.default_collate([np.array(["a"]), np.array(["b"])]))


def test_default_convert_equals_torch():
    torch = _torch()
    sample = {"a": np.ones(2), "b": (np.int64(3), "s"), "c": 1.5}
    _same(data.default_convert(sample), torch.utils.data.default_convert(sample))


def test_len_of_loader_and_its_iterator():
    ds = _tensor_ds(jitgrad)
    for bs, drop, n in ((4, False, 3), (4, True, 2), (1, False, 10), (10, True, 1)):
        loader = data.DataLoader(ds, batch_size=bs, drop_last=drop)
        assert len(loader) == n == len(iter(loader)) == len(list(loader))


# ---------------------------------------------------------------- shuffling


def _order(loader):
    return [int(i) for _, y in loader for i in y.tolist()]


def test_shuffle_is_a_reproducible_permutation():
    ds = data.TensorDataset(jitgrad.arange(50), jitgrad.arange(50))
    loader = data.DataLoader(ds, batch_size=8, shuffle=True,
                             generator=jitgrad.Generator().manual_seed(3))
    first, second = _order(loader), _order(loader)
    assert sorted(first) == sorted(second) == list(range(50))
    assert first != second  # a new order each epoch
    again = data.DataLoader(ds, batch_size=8, shuffle=True,
                            generator=jitgrad.Generator().manual_seed(3))
    assert _order(again) == first
    jitgrad.manual_seed(11)
    a = _order(data.DataLoader(ds, batch_size=8, shuffle=True))
    jitgrad.manual_seed(11)
    b = _order(data.DataLoader(ds, batch_size=8, shuffle=True))
    assert a == b and a != list(range(50)) and sorted(a) == list(range(50))


def test_shuffled_batches_equal_torch_given_the_same_order():
    torch = _torch()
    loader = data.DataLoader(_tensor_ds(jitgrad), batch_size=4, shuffle=True,
                             generator=jitgrad.Generator().manual_seed(0))
    batches = list(loader)
    order = [int(i) for i in np.concatenate([np.flatnonzero(
        (ARRAYS == b[0].numpy()[k]).all(1)) for b in batches for k in range(len(b[0]))])]
    theirs = list(torch.utils.data.DataLoader(_tensor_ds(torch), batch_size=4, sampler=order))
    for a, b in zip(batches, theirs):
        _same(a, b)


def test_random_sampler_with_replacement_and_num_samples():
    g = jitgrad.Generator().manual_seed(0)
    s = data.RandomSampler(range(5), replacement=True, num_samples=70, generator=g)
    drawn = list(s)
    assert len(drawn) == len(s) == 70 and set(drawn) <= set(range(5))
    s2 = data.RandomSampler(range(5), num_samples=12, generator=g)
    drawn = list(s2)
    assert len(drawn) == 12 and sorted(drawn[:5]) == list(range(5))
    assert sorted(drawn[5:10]) == list(range(5))


def test_subset_random_sampler_and_sequential_sampler():
    g = jitgrad.Generator().manual_seed(1)
    picked = list(data.SubsetRandomSampler([10, 20, 30], generator=g))
    assert sorted(picked) == [10, 20, 30]
    assert list(data.SequentialSampler(range(4))) == [0, 1, 2, 3]


@pytest.mark.parametrize("bs,drop", [(3, False), (3, True), (5, True), (1, False)])
def test_batch_sampler_equals_torch(bs, drop):
    torch = _torch()
    ours = data.BatchSampler(data.SequentialSampler(range(10)), bs, drop)
    theirs = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(range(10)), bs,
                                           drop)
    assert list(ours) == list(theirs) and len(ours) == len(theirs)


@pytest.mark.parametrize("fn", [
    lambda L: L.utils.data.BatchSampler(range(3), 0, False),
    lambda L: L.utils.data.BatchSampler(range(3), True, False),
    lambda L: L.utils.data.BatchSampler(range(3), 2, 1),
    lambda L: L.utils.data.RandomSampler(range(3), replacement=1),
    lambda L: L.utils.data.RandomSampler(range(3), num_samples=0),
    lambda L: L.utils.data.DataLoader(range(3), shuffle=True, sampler=[0, 1, 2]),
    lambda L: L.utils.data.DataLoader(range(3), batch_size=2, batch_sampler=[[0]]),
    lambda L: L.utils.data.DataLoader(range(3), batch_size=None, drop_last=True),
    lambda L: L.utils.data.DataLoader(range(3), num_workers=-1),
    lambda L: L.utils.data.DataLoader(range(3), prefetch_factor=2),
    lambda L: L.utils.data.DataLoader(range(3), persistent_workers=True),
    lambda L: L.utils.data.DataLoader(range(3), timeout=-1),
    lambda L: L.utils.data.TensorDataset(L.ones(3), L.ones(2)),
    lambda L: L.utils.data.random_split(range(10), [3, 3]),
    lambda L: L.utils.data.random_split(range(10), [1.5, -0.5]),
    lambda L: L.utils.data.Dataset()[0],
])
def test_errors_match_torch(fn):
    _torch()
    same_error(fn)


def test_iterable_dataset_errors_match_torch():
    torch = _torch()
    streams = {}
    for lib in (jitgrad, torch):
        class Stream(lib.utils.data.IterableDataset):
            def __iter__(self):
                return iter(range(5))
        streams[lib.__name__] = Stream
    same_error(lambda L: L.utils.data.DataLoader(streams[L.__name__](), shuffle=True))
    same_error(lambda L: L.utils.data.DataLoader(streams[L.__name__](), sampler=[0]))


# ---------------------------------------------------------------- data sets


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [0.25, 0.25, 0.5], [0.34, 0.33, 0.33]])
def test_random_split_sizes_equal_torch_and_partition(lengths):
    torch = _torch()
    ours = data.random_split(range(10), lengths, generator=jitgrad.Generator().manual_seed(0))
    theirs = torch.utils.data.random_split(range(10), lengths,
                                           generator=torch.Generator().manual_seed(0))
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    assert sorted(i for s in ours for i in s) == list(range(10))
    again = data.random_split(range(10), lengths, generator=jitgrad.Generator().manual_seed(0))
    assert [list(s) for s in again] == [list(s) for s in ours]


def test_random_split_warns_on_an_empty_split():
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        data.random_split(range(2), [1.0, 0.0])


def test_subset_concat_and_add_equal_torch():
    torch = _torch()
    results = []
    for lib in (jitgrad, torch):
        ds = _tensor_ds(lib)
        sub = lib.utils.data.Subset(ds, [4, 1, 7])
        cat = ds + sub
        results.append((len(sub), sub[1], None, len(cat), cat[11], cat[-1]))
    ours, theirs = results
    assert ours[0] == theirs[0] == 3 and ours[3] == theirs[3] == 13
    for i in (1, 4, 5):
        _same(ours[i], theirs[i])


def test_tensor_dataset_indexing():
    x, y = jitgrad.arange(6).reshape(3, 2), jitgrad.tensor([1, 0, 1])
    ds = data.TensorDataset(x, y)
    assert len(ds) == 3
    a, b = ds[1]
    assert a.tolist() == [2, 3] and b.item() == 0
    assert [t.tolist() for t in ds[1:]] == [[[2, 3], [4, 5]], [0, 1]]


def test_iterable_dataset_batches_equal_torch():
    torch = _torch()
    results = []
    for lib in (jitgrad, torch):
        class Stream(lib.utils.data.IterableDataset):
            def __iter__(self):
                return iter(range(7))

            def __len__(self):
                return 7
        res = []
        for kw in ({"batch_size": 3}, {"batch_size": 3, "drop_last": True},
                   {"batch_size": None}):
            loader = lib.utils.data.DataLoader(Stream(), **kw)
            res.append((len(loader), list(loader)))
        results.append(res)
    for (n, a), (m, b) in zip(*results):
        assert n == m
        _same(a, b)


def test_chain_dataset():
    class Stream(data.IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))
    assert list(Stream(2) + Stream(3)) == [0, 1, 0, 1, 2]


def test_worker_processes_give_the_same_batches():
    # (worker_init_fn, get_worker_info and IterableDataset with workers:
    # tests/test_dataloader_workers.py)
    ds = _tensor_ds(jitgrad)
    serial = list(data.DataLoader(ds, batch_size=3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        workers = list(data.DataLoader(ds, batch_size=3, num_workers=2, prefetch_factor=2,
                                       persistent_workers=True, timeout=60))
    assert len(serial) == len(workers)
    for a, b in zip(serial, workers):
        assert all(np.array_equal(x.numpy(), y.numpy()) for x, y in zip(a, b))


def test_custom_collate_fn_and_sampler_classes():
    loader = data.DataLoader(range(6), batch_size=4, collate_fn=lambda b: sum(b))
    assert list(loader) == [6, 9]
    assert issubclass(data.DistributedSampler, data.Sampler)
    assert isinstance(data.DistributedSampler(range(4), num_replicas=2, rank=0), data.Sampler)
    assert data.get_worker_info() is None


def test_training_example_runs_and_learns():
    import os
    import re
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root))
    proc = subprocess.run([sys.executable, str(root / "examples" / "train_classifier_data.py")],
                          capture_output=True, text=True, cwd=root, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr
    assert re.search(r"fitted: c0=-?0\.0\d\d c1=0\.9\d\d ", proc.stdout), proc.stdout
    accuracy = float(re.search(r"test accuracy: ([0-9.]+)", proc.stdout).group(1))
    assert accuracy >= 0.9
