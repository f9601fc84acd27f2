"""What the data-pipeline script (set J35) found: a CPU generator's state is torch's 5056-byte
``CPUGeneratorImplState`` (so states move between torch and jitgrad), ``clone_state``,
``set_state``'s type errors; ``Sampler``/``Dataset`` generic and argument-free as torch 2.13's;
``torch.utils.data._utils.collate`` (``collate`` with a ``collate_fn_map``) keeping a mapping's
or list's type; ``multinomial``'s with-replacement errors."""

import collections
import struct

import numpy as np
import pytest

import jitgrad
from jitgrad.utils.data import DataLoader, Dataset, IterableDataset, Sampler, TensorDataset
from jitgrad.utils.data._utils.collate import collate, default_collate_fn_map


def _fields(state):
    raw = state.numpy().tobytes()
    seed, left, seeded, nxt = struct.unpack("<QiiQ", raw[:24])
    normal_y, valid = struct.unpack("<8xd8xI", raw[5016:5044])
    return seed, left, seeded, nxt, normal_y, valid


def test_cpu_state_is_torchs_layout():
    jitgrad.manual_seed(11)
    state = jitgrad.get_rng_state()
    assert state.dtype is jitgrad.uint8 and state.shape == (5056,)
    assert _fields(state) == (11, 1, 1, 0, 0.0, 0)  # (fresh: the next draw twists)
    jitgrad.rand(3)
    assert _fields(jitgrad.get_rng_state())[1:4] == (622, 1, 3)  # (624 left after a twist)
    jitgrad.randn(1, dtype=jitgrad.float64)  # (a pair: the second normal is cached)
    seed, left, _, nxt, normal_y, valid = _fields(jitgrad.get_rng_state())
    assert (left, nxt, valid) == (618, 7, 1) and normal_y != 0.0
    jitgrad.manual_seed(5)
    jitgrad.rand(624)
    assert _fields(jitgrad.get_rng_state())[1:4] == (1, 1, 624)


def test_a_state_restores_the_stream_and_clones():
    jitgrad.manual_seed(3)
    jitgrad.rand(17)
    jitgrad.randn(1, dtype=jitgrad.float64)
    state = jitgrad.get_rng_state()
    first = jitgrad.randn(5, dtype=jitgrad.float64).tolist() + jitgrad.rand(700).tolist()
    jitgrad.set_rng_state(state)
    assert jitgrad.randn(5, dtype=jitgrad.float64).tolist() + jitgrad.rand(700).tolist() == first
    g = jitgrad.Generator().manual_seed(4)
    jitgrad.rand(3, generator=g)
    twin = g.clone_state()
    assert twin.initial_seed() == 4 and twin is not g
    assert jitgrad.rand(5, generator=twin).tolist() == jitgrad.rand(5, generator=g).tolist()


def test_set_state_refuses_as_torch():
    g = jitgrad.Generator()
    with pytest.raises(TypeError, match="^RNG state must be a torch.ByteTensor$"):
        g.set_state(jitgrad.zeros(10))
    with pytest.raises(TypeError, match="^expected a torch.ByteTensor, but got list$"):
        g.set_state([1, 2])
    with pytest.raises(RuntimeError, match="of size 5056 but found the input RNG state size "
                                           "to be 10"):
        g.set_state(jitgrad.zeros(10, dtype=jitgrad.uint8))


def test_states_move_between_torch_and_jitgrad():
    torch = pytest.importorskip("torch")
    for lib in (torch, jitgrad):
        lib.manual_seed(0)
        lib.rand(3)
    np.testing.assert_array_equal(torch.get_rng_state().numpy(),
                                  jitgrad.get_rng_state().numpy())
    torch.manual_seed(7)
    torch.rand(11)
    torch.randn(1, dtype=torch.float64)
    jitgrad.set_rng_state(jitgrad.tensor(torch.get_rng_state().numpy()))
    np.testing.assert_array_equal(torch.randn(5, dtype=torch.float64).numpy(),
                                  jitgrad.randn(5, dtype=jitgrad.float64).numpy())
    np.testing.assert_array_equal(torch.rand(1000).numpy(), jitgrad.rand(1000).numpy())


def test_samplers_and_datasets_are_generic_and_take_no_arguments():
    assert Sampler[int].__origin__ is Sampler and Dataset[int].__origin__ is Dataset
    with pytest.raises(TypeError, match="takes no arguments"):
        Sampler(range(3))

    class Singles(Sampler[list]):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter([[i] for i in range(self.n)])

        def __len__(self):
            return self.n

    class Stream(IterableDataset[int]):
        def __iter__(self):
            return iter(range(3))

    batches = list(DataLoader(TensorDataset(jitgrad.arange(4)), batch_sampler=Singles(3)))
    assert [b[0].tolist() for b in batches] == [[0], [1], [2]]
    assert [b.tolist() for b in DataLoader(Stream(), batch_size=2)] == [[0, 1], [2]]


def test_collate_keeps_mapping_and_list_types_and_takes_a_map():
    batch = collate([collections.defaultdict(int, a=1), collections.defaultdict(int, a=2)],
                    collate_fn_map=default_collate_fn_map)
    assert type(batch) is collections.defaultdict and batch["a"].tolist() == [1, 2]

    class Tagged(list):
        pass

    rows = collate([Tagged([1, 2.0]), Tagged([3, 4.0])], collate_fn_map=default_collate_fn_map)
    assert type(rows) is Tagged and rows[1].dtype is jitgrad.float64

    def as_list(batch, *, collate_fn_map=None):
        return [t.tolist() for t in batch]

    custom = {**default_collate_fn_map, jitgrad.Tensor: as_list}
    assert collate([{"x": jitgrad.ones(2)}] * 2, collate_fn_map=custom) == {"x": [[1.0, 1.0]] * 2}
    assert jitgrad.utils.data.default_collate([np.float64(1.5)] * 2).dtype is jitgrad.float64


@pytest.mark.parametrize("weights,text", [
    ([1.0, -1.0, 2.0], "invalid multinomial distribution (encountering probability entry < 0)"),
    ([1.0, float("nan")], "invalid multinomial distribution (encountering probability entry < 0)"),
    ([1.0, float("inf")], "(encountering probability entry = infinity or NaN)"),
    ([0.0, 0.0], "invalid multinomial distribution (sum of probabilities <= 0)"),
])
def test_multinomial_with_replacement_refuses_as_torch(weights, text):
    with pytest.raises(RuntimeError) as info:
        jitgrad.multinomial(jitgrad.tensor(weights), 2, replacement=True)
    assert text in str(info.value)
    if "sum" not in text:
        with pytest.raises(RuntimeError, match="probability tensor contains either"):
            jitgrad.multinomial(jitgrad.tensor(weights), 2)
