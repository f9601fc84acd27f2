"""The named tuples that ops return (``jitgrad.return_types.*``) print as torch's: the type's
full name, then one ``field=value`` per line."""

import pickle

import pytest

import jitgrad as jg
from jitgrad.ops.return_types import return_type

CALLS = {
    "max": lambda m, x: m.max(x, 0),
    "min": lambda m, x: m.min(x, 1, keepdim=True),
    "sort": lambda m, x: m.sort(x),
    "topk": lambda m, x: m.topk(x, 1),
    "aminmax": lambda m, x: m.aminmax(x),
    "svd": lambda m, x: m.svd(x),
    "linalg_svd": lambda m, x: m.linalg.svd(x),
    "linalg_slogdet": lambda m, x: m.linalg.slogdet(x),
    "linalg_eigh": lambda m, x: m.linalg.eigh(x + x.T),
    "frexp": lambda m, x: m.frexp(x),
    "histogram": lambda m, x: m.histogram(x, 2),
    "linalg_lu_factor": lambda m, x: m.linalg.lu_factor(x),
}


def test_a_return_type_is_a_named_tuple_printed_field_per_line():
    pair = return_type("max", ["values", "indices"])(jg.tensor([2.0]), jg.tensor([1]))
    assert pair.values is pair[0] and type(pair).__module__ == "jitgrad.return_types"
    assert repr(pair) == ("jitgrad.return_types.max(\nvalues=tensor([2.]),\n"
                          "indices=tensor([1]))")
    assert pickle.loads(pickle.dumps(tuple(pair)))[1].tolist() == [1]


@pytest.mark.parametrize("name", sorted(CALLS))
def test_repr_as_torch(name):
    torch = pytest.importorskip("torch")
    data = [[1.0, 3.0], [2.0, 0.5]]
    ours = CALLS[name](jg, jg.tensor(data, dtype=jg.float64))
    theirs = CALLS[name](torch, torch.tensor(data, dtype=torch.float64))
    assert type(ours).__name__ == type(theirs).__name__ == name
    assert repr(ours) == repr(theirs).replace("torch.", "jitgrad.")
