"""Probes of torch.utils.data (data sets, random_split, samplers, DataLoader with
num_workers=0, default_collate / default_convert): each runs the same code on torch and jitgrad
and compares the results, the warnings and the error type/text. Seeded randomness (a
``Generator`` or ``manual_seed``) must give torch's order."""

import collections
import types
import warnings
from typing import NamedTuple

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")


class Pt(NamedTuple):
    x: object
    y: object


def N(x):
    """Results in a comparable form: tensors as (dtype, shape, values, requires_grad)."""
    if isinstance(x, np.ndarray):
        return ("ndarray", str(x.dtype), x.tolist())
    if type(x).__name__ == "Tensor":
        return ("T", str(x.dtype), tuple(x.shape), x.tolist(), x.requires_grad)
    if isinstance(x, dict):
        return (type(x).__name__, [(k, N(v)) for k, v in x.items()])
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__, [N(v) for v in x])
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [N(v) for v in x])
    return x


def _run(fn, T):
    log = []
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = N(fn(T, log))
        return ("ok", r, N(log), [(x.category.__name__, str(x.message)) for x in w])
    except Exception as e:  # noqa: BLE001
        return ("err", type(e).__name__, str(e), N(log))


def D(T):
    return T.utils.data


def gen(T, seed):
    return T.Generator().manual_seed(seed)


class _Stream:
    """An IterableDataset factory (the base class differs per library)."""

    @staticmethod
    def make(T, n, with_len=False):
        class S(T.utils.data.IterableDataset):
            def __iter__(self):
                return iter(range(n))

        if with_len:
            S.__len__ = lambda self: n
        return S()


# ---- data sets ----
def tds_basic(T, log):
    ds = D(T).TensorDataset(T.arange(6).reshape(3, 2), T.tensor([1.0, 2.0, 3.0]))
    return len(ds), ds[0], ds[-1], ds[0:2], type(ds[1]).__name__


def tds_single(T, log):
    ds = D(T).TensorDataset(T.zeros(4, 2, dtype=T.float64))
    return len(ds), ds[3], len(ds.tensors)


def tds_mismatch(T, log):
    return D(T).TensorDataset(T.zeros(3), T.zeros(4))


def tds_none(T, log):
    return len(D(T).TensorDataset())


def tds_tensor_index(T, log):
    ds = D(T).TensorDataset(T.arange(5) * 10)
    return ds[T.tensor([4, 0])], ds[T.tensor(2)]


def subset_basic(T, log):
    s = D(T).Subset(list(range(10, 20)), [2, 5, 7])
    return len(s), s[0], s[-1], [s[i] for i in range(3)], s.indices


def subset_list_index(T, log):
    ds = D(T).TensorDataset(T.arange(10))
    s = D(T).Subset(ds, [9, 8, 7])
    return s[[0, 2]]


def subset_getitems(T, log):
    s = D(T).Subset(list("abcdef"), [5, 3, 1])
    return s.__getitems__([0, 2]), s.__getitems__([])


def subset_nested_getitems(T, log):
    class G(D(T).Dataset):
        def __getitem__(self, i):
            return i

        def __getitems__(self, idx):
            log.append(list(idx))
            return [i * 100 for i in idx]

    s = D(T).Subset(G(), [4, 5, 6])
    return s.__getitems__([2, 0]), s[1]


def subset_out_of_range(T, log):
    return D(T).Subset(list(range(5)), [0, 1])[2]


def subset_of_subset(T, log):
    s = D(T).Subset(D(T).Subset(list(range(10)), [9, 7, 5, 3]), [3, 0])
    return [s[0], s[1]], len(s)


def concat_basic(T, log):
    c = D(T).ConcatDataset([range(3), range(10, 15)])
    return len(c), c.cumulative_sizes, c[0], c[2], c[3], c[7], c[-1], c[-8]


def concat_neg_oob(T, log):
    c = D(T).ConcatDataset([range(3), range(5)])
    return c[-9]


def concat_pos_oob(T, log):
    c = D(T).ConcatDataset([range(3), range(5)])
    return c[8]


def concat_empty(T, log):
    return D(T).ConcatDataset([])


def concat_iterable(T, log):
    return D(T).ConcatDataset([range(3), _Stream.make(T, 3)])


def concat_generator_arg(T, log):
    c = D(T).ConcatDataset(x for x in [[1, 2], [], [3]])
    return len(c), [c[i] for i in range(len(c))], c.cumulative_sizes


def dataset_add(T, log):
    a = D(T).TensorDataset(T.arange(2))
    b = D(T).TensorDataset(T.arange(3) + 10)
    c = a + b
    return type(c).__name__, len(c), c[3]


def dataset_base_getitem(T, log):
    return D(T).Dataset()[0]


def dataset_base_len(T, log):
    return len(D(T).Dataset())


def dataset_subscript(T, log):
    return D(T).Dataset[int].__origin__.__name__, D(T).Sampler[int].__origin__.__name__


def iterable_add(T, log):
    c = _Stream.make(T, 2) + _Stream.make(T, 3)
    return type(c).__name__, list(c)


def chain_basic(T, log):
    c = D(T).ChainDataset([_Stream.make(T, 2, True), _Stream.make(T, 3, True)])
    return list(c), len(c), list(c)


def chain_not_iterable(T, log):
    c = D(T).ChainDataset([_Stream.make(T, 2), [7, 8]])
    out = []
    try:
        for x in c:
            out.append(x)
    except AssertionError as e:
        out.append(str(e))
    return out


def chain_len_no_len(T, log):
    return len(D(T).ChainDataset([_Stream.make(T, 2)]))


def chain_len_not_iterable(T, log):
    return len(D(T).ChainDataset([[1, 2]]))


def stack_tuple(T, log):
    s = D(T).StackDataset(list("abc"), T.arange(3))
    return len(s), s[1], s.__getitems__([2, 0])


def stack_dict(T, log):
    s = D(T).StackDataset(x=list("abc"), y=[1.5, 2.5, 3.5])
    return len(s), s[2], s.__getitems__([0, 1])


def stack_both(T, log):
    return D(T).StackDataset([1], y=[2])


def stack_none(T, log):
    return D(T).StackDataset()


def stack_mismatch(T, log):
    return D(T).StackDataset([1, 2], [3])


def stack_mismatch_kw(T, log):
    return D(T).StackDataset(a=[1, 2], b=[3])


def stack_nested_getitems_bad(T, log):
    class G(D(T).Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return i

        def __getitems__(self, idx):
            return [0]

    return D(T).StackDataset(G(), [1, 2, 3]).__getitems__([0, 1])


def stack_nested_getitems(T, log):
    class G(D(T).Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return i

        def __getitems__(self, idx):
            return [-i for i in idx]

    return D(T).StackDataset(a=G(), b=[1, 2, 3]).__getitems__([2, 1])


# ---- random_split ----
def rsplit_lengths(T, log):
    parts = D(T).random_split(range(10), [3, 7], generator=gen(T, 42))
    return [list(p) for p in parts], [type(p).__name__ for p in parts], [p.indices for p in parts]


def rsplit_fractions(T, log):
    parts = D(T).random_split(range(30), [0.3, 0.3, 0.4], generator=gen(T, 42))
    return [list(p) for p in parts]


def rsplit_remainder(T, log):
    parts = D(T).random_split(range(7), [0.33, 0.33, 0.34], generator=gen(T, 1))
    return [len(p) for p in parts], [list(p) for p in parts]


def rsplit_remainder2(T, log):
    parts = D(T).random_split(range(5), (0.5, 0.5), generator=gen(T, 2))
    return [list(p) for p in parts]


def rsplit_zero_warn(T, log):
    parts = D(T).random_split(range(4), [0.0, 1.0], generator=gen(T, 3))
    return [list(p) for p in parts]


def rsplit_sum_mismatch(T, log):
    return D(T).random_split(range(10), [3, 6])


def rsplit_bad_fraction(T, log):
    return D(T).random_split(range(10), [1.5, -0.5])


def rsplit_default_gen(T, log):
    T.manual_seed(123)
    a = [list(p) for p in D(T).random_split(range(8), [2, 6])]
    b = [list(p) for p in D(T).random_split(range(8), [2, 6])]
    return a, b


def rsplit_tensor_dataset(T, log):
    ds = D(T).TensorDataset(T.arange(6) * 2, T.arange(6) * 3)
    a, b = D(T).random_split(ds, [4, 2], generator=gen(T, 9))
    return a[0], b[1], len(a), len(b)


def rsplit_empty(T, log):
    return [list(p) for p in D(T).random_split([], [0, 0], generator=gen(T, 0))]


def rsplit_gen_continues(T, log):
    g = gen(T, 5)
    a = [p.indices for p in D(T).random_split(range(6), [3, 3], generator=g)]
    b = [p.indices for p in D(T).random_split(range(6), [3, 3], generator=g)]
    return a, b, g.initial_seed()


# ---- samplers ----
def seq_sampler(T, log):
    s = D(T).SequentialSampler(range(5))
    return list(s), len(s), list(D(T).SequentialSampler([]))


def rand_sampler_gen(T, log):
    s = D(T).RandomSampler(range(10), generator=gen(T, 0))
    return list(s), list(s), len(s)


def rand_sampler_manual_seed(T, log):
    T.manual_seed(7)
    s = D(T).RandomSampler(range(12))
    return list(s), list(s)


def rand_sampler_replacement(T, log):
    s = D(T).RandomSampler(range(5), replacement=True, num_samples=40, generator=gen(T, 1))
    return list(s), len(s)


def rand_sampler_replacement_default_n(T, log):
    s = D(T).RandomSampler(range(6), replacement=True, generator=gen(T, 11))
    return list(s), len(s)


def rand_sampler_num_samples_more(T, log):
    s = D(T).RandomSampler(range(4), num_samples=10, generator=gen(T, 2))
    return list(s), len(s)


def rand_sampler_num_samples_less(T, log):
    s = D(T).RandomSampler(range(8), num_samples=3, generator=gen(T, 2))
    return list(s), s.num_samples


def rand_sampler_bad_replacement(T, log):
    return D(T).RandomSampler(range(3), replacement=1)


def rand_sampler_zero(T, log):
    return D(T).RandomSampler(range(3), num_samples=0)


def rand_sampler_float_n(T, log):
    return D(T).RandomSampler(range(3), num_samples=2.0)


def rand_sampler_empty(T, log):
    return D(T).RandomSampler([])


def rand_sampler_attrs(T, log):
    s = D(T).RandomSampler(range(3))
    return s.replacement, s.num_samples, s.generator, s._num_samples


def subset_rand_sampler(T, log):
    s = D(T).SubsetRandomSampler([10, 20, 30, 40, 50], generator=gen(T, 4))
    return list(s), list(s), len(s)


def subset_rand_sampler_seed(T, log):
    T.manual_seed(99)
    return list(D(T).SubsetRandomSampler(range(7)))


def weighted_sampler_repl(T, log):
    s = D(T).WeightedRandomSampler([0.1, 0.9, 0.4, 0.7, 3.0, 0.6], 12, generator=gen(T, 0))
    return list(s), len(s), s.weights


def weighted_sampler_norepl(T, log):
    s = D(T).WeightedRandomSampler([0.9, 0.4, 0.05, 0.2, 0.3, 0.1], 5, replacement=False,
                                   generator=gen(T, 3))
    return list(s)


def weighted_sampler_seed(T, log):
    T.manual_seed(5)
    return list(D(T).WeightedRandomSampler(T.tensor([1.0, 2.0, 3.0]), 6))


def weighted_sampler_bool_n(T, log):
    return D(T).WeightedRandomSampler([1.0], True)


def weighted_sampler_zero_n(T, log):
    return D(T).WeightedRandomSampler([1.0], 0)


def weighted_sampler_bad_repl(T, log):
    return D(T).WeightedRandomSampler([1.0], 1, replacement="no")


def weighted_sampler_2d(T, log):
    return D(T).WeightedRandomSampler([[1.0, 2.0]], 1)


def weighted_sampler_too_many(T, log):
    return list(D(T).WeightedRandomSampler([1.0, 2.0], 3, replacement=False))


def weighted_sampler_negative(T, log):
    return list(D(T).WeightedRandomSampler([1.0, -2.0], 3))


def weighted_sampler_zero_weights(T, log):
    return list(D(T).WeightedRandomSampler([0.0, 0.0], 3))


def batch_sampler_basic(T, log):
    s = D(T).BatchSampler(D(T).SequentialSampler(range(10)), batch_size=3, drop_last=False)
    return list(s), len(s)


def batch_sampler_drop(T, log):
    s = D(T).BatchSampler(range(10), 3, True)
    return list(s), len(s), list(D(T).BatchSampler(range(9), 3, True))


def batch_sampler_bigger(T, log):
    s = D(T).BatchSampler([4, 2], 5, False)
    return list(s), len(s), list(D(T).BatchSampler([4, 2], 5, True))


def batch_sampler_bad_size(T, log):
    return D(T).BatchSampler(range(3), 0, False)


def batch_sampler_bool_size(T, log):
    return D(T).BatchSampler(range(3), True, False)


def batch_sampler_float_size(T, log):
    return D(T).BatchSampler(range(3), 2.0, False)


def batch_sampler_bad_drop(T, log):
    return D(T).BatchSampler(range(3), 2, 1)


def batch_sampler_random(T, log):
    s = D(T).BatchSampler(D(T).RandomSampler(range(7), generator=gen(T, 8)), 3, False)
    return list(s)


def sampler_base(T, log):
    return list(D(T).Sampler())


def dist_sampler_noshuffle(T, log):
    out = []
    for r in range(3):
        s = D(T).DistributedSampler(range(10), num_replicas=3, rank=r, shuffle=False)
        out.append((list(s), len(s), s.num_samples, s.total_size))
    return out


def dist_sampler_shuffle(T, log):
    return [list(D(T).DistributedSampler(range(11), num_replicas=4, rank=r)) for r in range(4)]


def dist_sampler_seed_epoch(T, log):
    s = D(T).DistributedSampler(range(9), num_replicas=2, rank=1, seed=5)
    a = list(s)
    s.set_epoch(3)
    b = list(s)
    return a, b, s.epoch, s.seed


def dist_sampler_drop_last(T, log):
    out = []
    for r in range(3):
        s = D(T).DistributedSampler(range(10), num_replicas=3, rank=r, drop_last=True,
                                    shuffle=False)
        out.append((list(s), len(s), s.total_size))
    return out


def dist_sampler_drop_last_shuffle(T, log):
    s = D(T).DistributedSampler(range(10), num_replicas=4, rank=2, drop_last=True, seed=1)
    return list(s), len(s)


def dist_sampler_padding_wrap(T, log):
    return [list(D(T).DistributedSampler(range(2), num_replicas=5, rank=r, shuffle=False))
            for r in range(5)]


def dist_sampler_bad_rank(T, log):
    return D(T).DistributedSampler(range(4), num_replicas=2, rank=2)


def dist_sampler_neg_rank(T, log):
    return D(T).DistributedSampler(range(4), num_replicas=2, rank=-1)


def dist_sampler_in_loader(T, log):
    s = D(T).DistributedSampler(range(8), num_replicas=2, rank=0, seed=3)
    dl = D(T).DataLoader(range(8), batch_size=3, sampler=s)
    a = list(dl)
    s.set_epoch(1)
    return a, list(dl), len(dl)


# ---- DataLoader ----
def dl_basic(T, log):
    ds = D(T).TensorDataset(T.arange(10, dtype=T.float32).reshape(5, 2), T.arange(5))
    dl = D(T).DataLoader(ds, batch_size=2)
    return list(dl), len(dl)


def dl_default_batch(T, log):
    dl = D(T).DataLoader(range(3))
    return list(dl), len(dl), dl.batch_size, dl.drop_last


def dl_drop_last(T, log):
    dl = D(T).DataLoader(range(7), batch_size=3, drop_last=True)
    return list(dl), len(dl)


def dl_no_batch(T, log):
    dl = D(T).DataLoader([1, 2.5, "a", np.array([1, 2])], batch_size=None)
    return list(dl), len(dl), dl.collate_fn.__name__, dl.batch_sampler


def dl_no_batch_tuple(T, log):
    dl = D(T).DataLoader([(np.float32(1.5), 2), (np.int64(3), 4)], batch_size=None)
    return list(dl)


def dl_shuffle_gen(T, log):
    dl = D(T).DataLoader(range(10), batch_size=4, shuffle=True, generator=gen(T, 0))
    return list(dl), list(dl)


def dl_shuffle_manual_seed(T, log):
    T.manual_seed(1)
    dl = D(T).DataLoader(range(9), batch_size=2, shuffle=True)
    return list(dl), list(dl)


def dl_shuffle_drop_last_gen(T, log):
    dl = D(T).DataLoader(list(range(20, 30)), batch_size=3, shuffle=True, drop_last=True,
                         generator=gen(T, 17))
    return list(dl), len(dl)


def dl_noshuffle_consumes_gen(T, log):
    g = gen(T, 6)
    dl = D(T).DataLoader(range(3), generator=g)
    list(dl)
    return T.randperm(5, generator=g).tolist()


def dl_manual_seed_after_iter(T, log):
    T.manual_seed(2)
    list(D(T).DataLoader(range(3)))
    return T.randint(0, 100, (3,)).tolist()


def dl_sampler_list(T, log):
    dl = D(T).DataLoader(list("abcdef"), batch_size=2, sampler=[5, 0, 3])
    return list(dl), len(dl), dl.sampler


def dl_sampler_obj(T, log):
    dl = D(T).DataLoader(range(5), batch_size=2, sampler=D(T).SequentialSampler(range(3)))
    return list(dl), type(dl.sampler).__name__, type(dl.batch_sampler).__name__


def dl_batch_sampler(T, log):
    dl = D(T).DataLoader(range(10, 20), batch_sampler=[[0, 1], [9, 2, 3]])
    return list(dl), len(dl), dl.batch_size, dl.drop_last, type(dl.sampler).__name__


def dl_batch_sampler_obj(T, log):
    bs = D(T).BatchSampler(D(T).RandomSampler(range(6), generator=gen(T, 3)), 4, False)
    dl = D(T).DataLoader(range(6), batch_sampler=bs)
    return list(dl), len(dl)


def dl_collate_fn(T, log):
    dl = D(T).DataLoader(range(5), batch_size=2, collate_fn=lambda b: (len(b), sum(b)))
    return list(dl)


def dl_collate_identity_nobatch(T, log):
    dl = D(T).DataLoader(range(3), batch_size=None, collate_fn=lambda x: x * 10)
    return list(dl)


def dl_dicts(T, log):
    data = [{"a": i, "b": float(i) / 2, "s": str(i), "t": T.ones(2) * i} for i in range(3)]
    return list(D(T).DataLoader(data, batch_size=2))


def dl_namedtuples(T, log):
    data = [Pt(i, [i, -i]) for i in range(4)]
    return list(D(T).DataLoader(data, batch_size=3))


def dl_numpy(T, log):
    data = [np.arange(3, dtype=np.float32) + i for i in range(4)]
    return list(D(T).DataLoader(data, batch_size=2))


def dl_strings(T, log):
    return list(D(T).DataLoader(["x", "yy", "zzz"], batch_size=2))


def dl_iter_twice_len(T, log):
    dl = D(T).DataLoader(range(5), batch_size=2)
    it = iter(dl)
    return len(it), next(it), list(it), list(dl)


def dl_stop_iteration(T, log):
    it = iter(D(T).DataLoader(range(1)))
    next(it)
    return next(it)


def dl_iter_is_self(T, log):
    it = iter(D(T).DataLoader(range(2)))
    return iter(it) is it


def dl_iterable(T, log):
    dl = D(T).DataLoader(_Stream.make(T, 5), batch_size=2)
    return list(dl), list(dl)


def dl_iterable_drop_last(T, log):
    return list(D(T).DataLoader(_Stream.make(T, 5), batch_size=2, drop_last=True))


def dl_iterable_no_batch(T, log):
    return list(D(T).DataLoader(_Stream.make(T, 3), batch_size=None))


def dl_iterable_len(T, log):
    dl = D(T).DataLoader(_Stream.make(T, 5, True), batch_size=2)
    dl2 = D(T).DataLoader(_Stream.make(T, 5, True), batch_size=2, drop_last=True)
    dl3 = D(T).DataLoader(_Stream.make(T, 5, True), batch_size=None)
    return len(dl), len(dl2), len(dl3)


def dl_iterable_len_no_len(T, log):
    return len(D(T).DataLoader(_Stream.make(T, 5), batch_size=2))


def dl_iterable_len_warn(T, log):
    class S(D(T).IterableDataset):
        def __iter__(self):
            return iter(range(4))

        def __len__(self):
            return 2

        def __repr__(self):
            return "S"

    dl = D(T).DataLoader(S(), batch_size=None)
    n = len(dl)
    return n, list(dl)


def dl_worker_info_in_dataset(T, log):
    class S(D(T).IterableDataset):
        def __iter__(self):
            log.append(T.utils.data.get_worker_info())
            return iter([1, 2])

    class M(D(T).Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            log.append(T.utils.data.get_worker_info())
            return i

    return list(D(T).DataLoader(S())), list(D(T).DataLoader(M()))


def dl_worker_info_main(T, log):
    return D(T).get_worker_info(), T.utils.data.dataloader.get_worker_info()


def dl_getitems(T, log):
    class G(D(T).Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return i

        def __getitems__(self, idx):
            log.append(list(idx))
            return [i * 2 for i in idx]

    return list(D(T).DataLoader(G(), batch_size=2))


def dl_setattr_frozen(T, log):
    dl = D(T).DataLoader(range(3))
    dl.num_workers = 0
    dl.collate_fn = None
    dl.batch_size = 4
    return dl.batch_size


def dl_setattr_sampler(T, log):
    D(T).DataLoader(range(3)).sampler = [0]


def dl_attrs(T, log):
    dl = D(T).DataLoader(range(3))
    return (dl.num_workers, dl.pin_memory, dl.timeout, dl.worker_init_fn, dl.prefetch_factor,
            dl.persistent_workers, dl.in_order, dl.generator, dl.multiprocessing_context,
            dl.collate_fn.__name__, dl.pin_memory_device)


def dl_tensor_grad(T, log):
    w = T.tensor([1.0, 2.0], requires_grad=True)
    data = [w * i for i in range(3)]
    (batch,) = list(D(T).DataLoader(data, batch_size=3))
    (batch * T.tensor([[1.0], [2.0], [3.0]])).sum().backward()
    return batch, w.grad


def dl_empty(T, log):
    dl = D(T).DataLoader([], batch_size=2)
    return list(dl), len(dl)


def dl_generator_shared(T, log):
    g = gen(T, 3)
    dl = D(T).DataLoader(range(6), batch_size=6, shuffle=True, generator=g)
    a = list(dl)
    s = D(T).RandomSampler(range(6), generator=g)
    return a, list(s)


# ---- DataLoader option errors ----
def err_shuffle_sampler(T, log):
    return D(T).DataLoader(range(3), shuffle=True, sampler=[0, 1])


def err_batch_sampler_bs(T, log):
    return D(T).DataLoader(range(3), batch_size=2, batch_sampler=[[0]])


def err_batch_sampler_shuffle(T, log):
    return D(T).DataLoader(range(3), shuffle=True, batch_sampler=[[0]])


def err_batch_sampler_sampler(T, log):
    return D(T).DataLoader(range(3), sampler=[0], batch_sampler=[[0]])


def err_batch_sampler_drop(T, log):
    return D(T).DataLoader(range(3), drop_last=True, batch_sampler=[[0]])


def err_bs_none_drop(T, log):
    return D(T).DataLoader(range(3), batch_size=None, drop_last=True)


def err_num_workers(T, log):
    return D(T).DataLoader(range(3), num_workers=-1)


def err_timeout(T, log):
    return D(T).DataLoader(range(3), timeout=-1)


def err_timeout_iter(T, log):
    return iter(D(T).DataLoader(range(3), timeout=1))


def err_prefetch(T, log):
    return D(T).DataLoader(range(3), prefetch_factor=2)


def err_persistent(T, log):
    return D(T).DataLoader(range(3), persistent_workers=True)


def err_mp_context(T, log):
    return D(T).DataLoader(range(3), multiprocessing_context="fork")


def err_iterable_shuffle(T, log):
    return D(T).DataLoader(_Stream.make(T, 3), shuffle=True)


def err_iterable_sampler(T, log):
    return D(T).DataLoader(_Stream.make(T, 3), sampler=[0])


def err_iterable_batch_sampler(T, log):
    return D(T).DataLoader(_Stream.make(T, 3), batch_sampler=[[0]])


def ok_iterable_shuffle_false(T, log):
    return list(D(T).DataLoader(_Stream.make(T, 3), shuffle=False))


def err_bad_batch_size(T, log):
    return D(T).DataLoader(range(3), batch_size=0)


def err_collate_mismatch(T, log):
    return list(D(T).DataLoader([[1, 2], [3]], batch_size=2))


def err_no_len_sequential(T, log):
    class M(D(T).Dataset):
        def __getitem__(self, i):
            return i

    return list(D(T).DataLoader(M()))


def err_len_dl_no_len(T, log):
    class M(D(T).Dataset):
        def __getitem__(self, i):
            return i

    return len(D(T).DataLoader(M(), sampler=[0, 1]))


# ---- default_collate / default_convert ----
def dc(T):
    return D(T).default_collate


def collate_ints(T, log):
    return dc(T)([0, 1, 2, 3]), dc(T)([True, False])


def collate_floats(T, log):
    return dc(T)([0.5, 1.0])


def collate_strings(T, log):
    return dc(T)(["a", "b", "c"]), dc(T)([b"x", b"y"])


def collate_dicts(T, log):
    return dc(T)([{"A": 0, "B": 1}, {"A": 100, "B": 100}])


def collate_namedtuple(T, log):
    return dc(T)([Pt(0, 0.5), Pt(1, 1.5)])


def collate_tuples(T, log):
    return dc(T)([(0, 1), (2, 3)]), dc(T)([("a", 1), ("b", 2)])


def collate_lists(T, log):
    return dc(T)([[0, 1], [2, 3]])


def collate_nested(T, log):
    batch = [{"x": (T.tensor([i]), [i, "s"]), "y": {"z": np.float64(i)}} for i in range(2)]
    return dc(T)(batch)


def collate_numpy_arrays(T, log):
    return (dc(T)([np.zeros((2, 2), dtype=np.float32), np.ones((2, 2), dtype=np.float32)]),
            dc(T)([np.array([1, 2]), np.array([3, 4])]),
            dc(T)([np.array(1.5), np.array(2.5)]))


def collate_numpy_bool(T, log):
    return dc(T)([np.array([True]), np.array([False])]), dc(T)([np.bool_(True), np.bool_(0)])


def collate_numpy_scalars(T, log):
    return (dc(T)([np.float32(1.5), np.float32(2.5)]), dc(T)([np.int32(1), np.int32(2)]),
            dc(T)([np.float64(1), np.float64(2)]), dc(T)([np.uint8(3), np.uint8(4)]))


def collate_numpy_str(T, log):
    return dc(T)([np.array(["a"]), np.array(["b"])])


def collate_numpy_object(T, log):
    return dc(T)([np.array([None]), np.array([1])])


def collate_tensors(T, log):
    return (dc(T)([T.tensor(1.0), T.tensor(2.0)]),
            dc(T)([T.zeros(2, 3, dtype=T.int32), T.ones(2, 3, dtype=T.int32)]),
            dc(T)([T.zeros(0), T.zeros(0)]))


def collate_tensor_shape_err(T, log):
    return dc(T)([T.zeros(2), T.zeros(3)])


def collate_unequal_lists(T, log):
    return dc(T)([[1, 2], [3]])


def collate_object(T, log):
    return dc(T)([object(), object()])


def collate_none(T, log):
    return dc(T)([None, None])


def collate_empty(T, log):
    return dc(T)([])


def collate_defaultdict(T, log):
    d1 = collections.defaultdict(int, {"a": 1})
    d2 = collections.defaultdict(int, {"a": 2})
    out = dc(T)([d1, d2])
    return type(out).__name__, out["a"], out["missing"]


def collate_ordered_dict(T, log):
    return dc(T)([collections.OrderedDict(b=1, a=2), collections.OrderedDict(b=3, a=4)])


def collate_mappingproxy(T, log):
    out = dc(T)([types.MappingProxyType({"k": 1}), types.MappingProxyType({"k": 2})])
    return type(out).__name__, out["k"]


def collate_list_subclass(T, log):
    class L(list):
        pass

    out = dc(T)([L([1, 2]), L([3, 4])])
    return type(out).__name__, out


def collate_range_elems(T, log):
    return dc(T)([range(2), range(2, 4)])


def collate_mixed_int_float(T, log):
    return dc(T)([1, 2.5])


def collate_mixed_float_int(T, log):
    return dc(T)([2.5, 1])


def collate_grad(T, log):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = T.tensor([3.0, 4.0], requires_grad=True)
    out = dc(T)([a, b])
    g = T.autograd.grad((out ** 2).sum(), [a, b])
    return out, g


def collate_custom_map(T, log):
    cm = D(T)._utils.collate

    def int_fn(batch, *, collate_fn_map=None):
        return ("ints", list(batch))

    fmap = dict(cm.default_collate_fn_map)
    fmap[int] = int_fn
    return cm.collate([(1, 2.0), (3, 4.0)], collate_fn_map=fmap)


def collate_no_map(T, log):
    return D(T)._utils.collate.collate([1, 2])


def collate_fn_map_keys(T, log):
    return [k.__name__ if isinstance(k, type) else [c.__name__ for c in k]
            for k in D(T)._utils.collate.default_collate_fn_map]


def collate_helpers(T, log):
    cm = D(T)._utils.collate
    return (cm.collate_float_fn([1.0, 2.0]), cm.collate_int_fn([1, 2]),
            cm.collate_str_fn(["a"]), cm.collate_tensor_fn([T.ones(1), T.zeros(1)]),
            cm.collate_numpy_scalar_fn([np.float32(1.0)]))


def convert_basic(T, log):
    cv = D(T).default_convert
    return (cv(0), cv(1.5), cv("s"), cv(np.array([0, 1])), cv(np.float64(2.5)),
            cv(np.int32(3)), cv(T.tensor([1])))


def convert_containers(T, log):
    cv = D(T).default_convert
    return (cv([np.array([1]), 2]), cv((np.array([1.0]), "a")), cv({"k": np.zeros(2)}),
            cv(Pt(np.array(0), 1)))


def convert_strings(T, log):
    cv = D(T).default_convert
    return cv(np.array(["a", "b"])), cv(np.str_("x")), cv(b"b"), cv(np.array([b"q"]))


def convert_object_array(T, log):
    return D(T).default_convert(np.array([None, 1], dtype=object))


def convert_bool_scalar(T, log):
    return D(T).default_convert(np.bool_(True)), D(T).default_convert(np.array([True, False]))


# ---- import paths ----
def import_paths(T, log):
    d = T.utils.data
    return (d.dataloader.default_collate is d.default_collate,
            d._utils.collate.default_collate is d.default_collate,
            d.dataloader.default_convert is d.default_convert,
            d._utils.collate.default_convert is d.default_convert,
            d.dataset.Subset is d.Subset, d.sampler.RandomSampler is d.RandomSampler,
            d.distributed.DistributedSampler is d.DistributedSampler,
            d.dataloader.DataLoader is d.DataLoader,
            d.dataset.random_split is d.random_split,
            d.dataloader.get_worker_info is d.get_worker_info)


def import_from(T, log):
    import importlib

    m = importlib.import_module(f"{T.__name__}.utils.data.dataloader")
    c = importlib.import_module(f"{T.__name__}.utils.data._utils.collate")
    return m.default_collate is c.default_collate, m.default_collate([1, 2])


def sampler_subclasses(T, log):
    d = T.utils.data
    return [issubclass(c, d.Sampler) for c in (d.SequentialSampler, d.RandomSampler,
                                               d.SubsetRandomSampler, d.WeightedRandomSampler,
                                               d.BatchSampler, d.DistributedSampler)]


def dataset_subclasses(T, log):
    d = T.utils.data
    return ([issubclass(c, d.Dataset) for c in (d.TensorDataset, d.Subset, d.ConcatDataset,
                                                d.ChainDataset, d.StackDataset,
                                                d.IterableDataset)],
            issubclass(d.ChainDataset, d.IterableDataset))


# ---- more ----
def subset_override_both(T, log):
    class S(D(T).Subset):
        def __getitem__(self, i):
            return -1

        def __getitems__(self, idx):
            return [-2 for _ in idx]

    return list(D(T).DataLoader(S([1, 2, 3], [0, 1]), batch_size=2))


def dl_many_workers_warn(T, log):
    return D(T).DataLoader(range(3), num_workers=100000).num_workers


def dl_bad_mp_context_str(T, log):
    return D(T).DataLoader(range(3), num_workers=1, multiprocessing_context="nope")


def dl_bad_mp_context_type(T, log):
    return D(T).DataLoader(range(3), num_workers=1, multiprocessing_context=5)


def dl_neg_prefetch(T, log):
    return D(T).DataLoader(range(3), num_workers=1, prefetch_factor=-1)


def dl_prefetch_default(T, log):
    return D(T).DataLoader(range(3), num_workers=1).prefetch_factor


def dl_shuffle_truthy(T, log):
    dl = D(T).DataLoader(range(5), shuffle=1, generator=gen(T, 4))
    return type(dl.sampler).__name__, list(dl)


def dl_iterable_shuffle_zero(T, log):
    return list(D(T).DataLoader(_Stream.make(T, 2), shuffle=0))


def dl_iterable_dicts(T, log):
    class S(D(T).IterableDataset):
        def __iter__(self):
            for i in range(3):
                yield {"i": i, "v": np.array([i, i], dtype=np.int16)}

    return list(D(T).DataLoader(S(), batch_size=2))


def dl_stack_dataset(T, log):
    s = D(T).StackDataset(a=T.arange(4), b=list("wxyz"))
    return list(D(T).DataLoader(s, batch_size=3))


def dl_concat_shuffle(T, log):
    c = D(T).ConcatDataset([range(3), range(100, 104)])
    return list(D(T).DataLoader(c, batch_size=3, shuffle=True, generator=gen(T, 21)))


def dl_random_sampler_replacement(T, log):
    s = D(T).RandomSampler(range(4), replacement=True, num_samples=7, generator=gen(T, 12))
    return list(D(T).DataLoader(range(4), sampler=s, batch_size=3))


def dl_tensor_dataset_grad(T, log):
    x = T.arange(6, dtype=T.float64).reshape(3, 2).requires_grad_()
    ds = D(T).TensorDataset(x)
    total = sum((b[0] ** 2).sum() for b in D(T).DataLoader(ds, batch_size=2))
    total.backward()
    return x.grad


def collate_complex(T, log):
    return dc(T)([1j, 2j])


def collate_numpy_complex(T, log):
    return dc(T)([np.complex64(1 + 2j), np.complex64(3)]).dtype


def collate_numpy_f16(T, log):
    return dc(T)([np.ones(2, dtype=np.float16), np.zeros(2, dtype=np.float16)])


def collate_mixed_dtype_tensors(T, log):
    return dc(T)([T.tensor([1], dtype=T.int32), T.tensor([2], dtype=T.int64)])


def collate_sets(T, log):
    return dc(T)([{1}, {2}])


def collate_tuple_of_tensors(T, log):
    return dc(T)([(T.ones(2), 1), (T.zeros(2), 2)])


def collate_strings_in_tuple(T, log):
    out = dc(T)([("a", "b"), ("c", "d")])
    return [type(x).__name__ for x in out], out


def rsplit_almost_one(T, log):
    parts = D(T).random_split(range(10), [0.3, 0.3, 0.39999999999], generator=gen(T, 4))
    return [len(p) for p in parts]


def rsplit_numpy_lengths(T, log):
    parts = D(T).random_split(range(5), [np.int64(2), np.int64(3)], generator=gen(T, 4))
    return [list(p) for p in parts]


def rsplit_positional_gen(T, log):
    return [p.indices for p in D(T).random_split(range(6), [0.5, 0.5], gen(T, 8))]


def rsplit_over_one(T, log):
    return D(T).random_split(range(10), [0.6, 0.6])


def sampler_with_arg(T, log):
    return D(T).Sampler(range(3))


def weighted_sampler_tensor_f32(T, log):
    s = D(T).WeightedRandomSampler(T.tensor([1.0, 3.0], dtype=T.float32), 4, generator=gen(T, 1))
    return s.weights, list(s)


def weighted_sampler_big(T, log):
    w = [float(i % 7 + 1) for i in range(50)]
    s = D(T).WeightedRandomSampler(w, 30, replacement=False, generator=gen(T, 77))
    return list(s), list(s)


def rand_sampler_large(T, log):
    return list(D(T).RandomSampler(range(100), generator=gen(T, 1234)))[:20]


def dist_sampler_rank_none(T, log):
    return D(T).DistributedSampler(range(4), num_replicas=2)


def dist_sampler_empty(T, log):
    s = D(T).DistributedSampler([], num_replicas=1, rank=0)
    return list(s), len(s)


def dist_sampler_drop_small(T, log):
    s = D(T).DistributedSampler(range(2), num_replicas=3, rank=1, drop_last=True)
    return list(s), len(s), s.total_size


def batch_sampler_no_len(T, log):
    s = D(T).BatchSampler((i for i in range(5)), 2, False)
    return list(s), list(s)


def batch_sampler_no_len_len(T, log):
    return len(D(T).BatchSampler((i for i in range(5)), 2, False))


def concat_map_iterable_add(T, log):
    return D(T).TensorDataset(T.zeros(1)) + _Stream.make(T, 2)


_PROBES = [
    tds_basic,
    tds_single,
    tds_mismatch,
    tds_none,
    tds_tensor_index,
    subset_basic,
    subset_list_index,
    subset_getitems,
    subset_nested_getitems,
    subset_out_of_range,
    subset_of_subset,
    concat_basic,
    concat_neg_oob,
    concat_pos_oob,
    concat_empty,
    concat_iterable,
    concat_generator_arg,
    dataset_add,
    dataset_base_getitem,
    dataset_base_len,
    dataset_subscript,
    iterable_add,
    chain_basic,
    chain_not_iterable,
    chain_len_no_len,
    chain_len_not_iterable,
    stack_tuple,
    stack_dict,
    stack_both,
    stack_none,
    stack_mismatch,
    stack_mismatch_kw,
    stack_nested_getitems_bad,
    stack_nested_getitems,
    rsplit_lengths,
    rsplit_fractions,
    rsplit_remainder,
    rsplit_remainder2,
    rsplit_zero_warn,
    rsplit_sum_mismatch,
    rsplit_bad_fraction,
    rsplit_default_gen,
    rsplit_tensor_dataset,
    rsplit_empty,
    rsplit_gen_continues,
    seq_sampler,
    rand_sampler_gen,
    rand_sampler_manual_seed,
    rand_sampler_replacement,
    rand_sampler_replacement_default_n,
    rand_sampler_num_samples_more,
    rand_sampler_num_samples_less,
    rand_sampler_bad_replacement,
    rand_sampler_zero,
    rand_sampler_float_n,
    rand_sampler_empty,
    rand_sampler_attrs,
    subset_rand_sampler,
    subset_rand_sampler_seed,
    weighted_sampler_repl,
    weighted_sampler_norepl,
    weighted_sampler_seed,
    weighted_sampler_bool_n,
    weighted_sampler_zero_n,
    weighted_sampler_bad_repl,
    weighted_sampler_2d,
    weighted_sampler_too_many,
    weighted_sampler_negative,
    weighted_sampler_zero_weights,
    batch_sampler_basic,
    batch_sampler_drop,
    batch_sampler_bigger,
    batch_sampler_bad_size,
    batch_sampler_bool_size,
    batch_sampler_float_size,
    batch_sampler_bad_drop,
    batch_sampler_random,
    sampler_base,
    dist_sampler_noshuffle,
    dist_sampler_shuffle,
    dist_sampler_seed_epoch,
    dist_sampler_drop_last,
    dist_sampler_drop_last_shuffle,
    dist_sampler_padding_wrap,
    dist_sampler_bad_rank,
    dist_sampler_neg_rank,
    dist_sampler_in_loader,
    dl_basic,
    dl_default_batch,
    dl_drop_last,
    dl_no_batch,
    dl_no_batch_tuple,
    dl_shuffle_gen,
    dl_shuffle_manual_seed,
    dl_shuffle_drop_last_gen,
    dl_noshuffle_consumes_gen,
    dl_manual_seed_after_iter,
    dl_sampler_list,
    dl_sampler_obj,
    dl_batch_sampler,
    dl_batch_sampler_obj,
    dl_collate_fn,
    dl_collate_identity_nobatch,
    dl_dicts,
    dl_namedtuples,
    dl_numpy,
    dl_strings,
    dl_iter_twice_len,
    dl_stop_iteration,
    dl_iter_is_self,
    dl_iterable,
    dl_iterable_drop_last,
    dl_iterable_no_batch,
    dl_iterable_len,
    dl_iterable_len_no_len,
    dl_iterable_len_warn,
    dl_worker_info_in_dataset,
    dl_worker_info_main,
    dl_getitems,
    dl_setattr_frozen,
    dl_setattr_sampler,
    dl_attrs,
    dl_tensor_grad,
    dl_empty,
    dl_generator_shared,
    err_shuffle_sampler,
    err_batch_sampler_bs,
    err_batch_sampler_shuffle,
    err_batch_sampler_sampler,
    err_batch_sampler_drop,
    err_bs_none_drop,
    err_num_workers,
    err_timeout,
    err_timeout_iter,
    err_prefetch,
    err_persistent,
    err_mp_context,
    err_iterable_shuffle,
    err_iterable_sampler,
    err_iterable_batch_sampler,
    ok_iterable_shuffle_false,
    err_bad_batch_size,
    err_collate_mismatch,
    err_no_len_sequential,
    err_len_dl_no_len,
    collate_ints,
    collate_floats,
    collate_strings,
    collate_dicts,
    collate_namedtuple,
    collate_tuples,
    collate_lists,
    collate_nested,
    collate_numpy_arrays,
    collate_numpy_bool,
    collate_numpy_scalars,
    collate_numpy_str,
    collate_numpy_object,
    collate_tensors,
    collate_tensor_shape_err,
    collate_unequal_lists,
    collate_object,
    collate_none,
    collate_empty,
    collate_defaultdict,
    collate_ordered_dict,
    collate_mappingproxy,
    collate_list_subclass,
    collate_range_elems,
    collate_mixed_int_float,
    collate_mixed_float_int,
    collate_grad,
    collate_custom_map,
    collate_no_map,
    collate_fn_map_keys,
    collate_helpers,
    convert_basic,
    convert_containers,
    convert_strings,
    convert_object_array,
    convert_bool_scalar,
    import_paths,
    import_from,
    sampler_subclasses,
    dataset_subclasses,
    subset_override_both,
    dl_many_workers_warn,
    dl_bad_mp_context_str,
    dl_bad_mp_context_type,
    dl_neg_prefetch,
    dl_prefetch_default,
    dl_shuffle_truthy,
    dl_iterable_shuffle_zero,
    dl_iterable_dicts,
    dl_stack_dataset,
    dl_concat_shuffle,
    dl_random_sampler_replacement,
    dl_tensor_dataset_grad,
    collate_complex,
    collate_numpy_complex,
    collate_numpy_f16,
    collate_mixed_dtype_tensors,
    collate_sets,
    collate_tuple_of_tensors,
    collate_strings_in_tuple,
    rsplit_almost_one,
    rsplit_numpy_lengths,
    rsplit_positional_gen,
    rsplit_over_one,
    sampler_with_arg,
    weighted_sampler_tensor_f32,
    weighted_sampler_big,
    rand_sampler_large,
    dist_sampler_rank_none,
    dist_sampler_empty,
    dist_sampler_drop_small,
    batch_sampler_no_len,
    batch_sampler_no_len_len,
    concat_map_iterable_add,
]


@pytest.mark.parametrize("fn", _PROBES, ids=[f.__name__ for f in _PROBES])
def test_utils_data_matches_torch(fn):
    expected = repr(_run(fn, torch))
    got = repr(_run(fn, jitgrad)).replace("jitgrad", "torch")
    assert got == expected
