"""nn.Sequential's list operations as torch's: insert, extend, pop, ``+``, ``+=``, ``*``,
``*=``, ``2 * seq`` (names renumbered, modules shared, not copied) and their refusals."""

import pytest

import jitgrad

torch = pytest.importorskip("torch")


def _names(seq):
    return [(name, type(m).__name__) for name, m in seq.named_children()]


CASES = {
    "insert": lambda lib, s: s.insert(1, lib.nn.Sigmoid()),
    "insert-negative": lambda lib, s: s.insert(-1, lib.nn.Sigmoid()),
    "insert-end": lambda lib, s: s.insert(2, lib.nn.Sigmoid()),
    "extend": lambda lib, s: s.extend([lib.nn.Sigmoid(), lib.nn.Identity()]),
    "add": lambda lib, s: s + lib.nn.Sequential(lib.nn.Sigmoid()),
    "iadd": lambda lib, s: s.__iadd__(lib.nn.Sequential(lib.nn.Sigmoid())),
    "mul": lambda lib, s: s * 3,
    "rmul": lambda lib, s: 2 * s,
    "imul": lambda lib, s: s.__imul__(2),
}


@pytest.mark.parametrize("op", list(CASES))
def test_sequential_list_operations_match_torch(op):
    results = []
    for lib in (torch, jitgrad):
        seq = lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Tanh())
        out = CASES[op](lib, seq)
        results.append((_names(out), _names(seq), out is seq))
    assert results[0] == results[1]


def test_pop_and_repeats_share_the_modules():
    seq = jitgrad.nn.Sequential(jitgrad.nn.Linear(1, 1), jitgrad.nn.ReLU(), jitgrad.nn.Tanh())
    twice = seq * 2
    assert twice[0] is twice[3] is seq[0] and len(list(twice.parameters())) == 2
    popped = seq.pop(1)
    assert isinstance(popped, jitgrad.nn.ReLU) and _names(seq) == [("0", "Linear"),
                                                                  ("1", "Tanh")]
    assert _names(seq.pop(slice(0, 2))) == [("0", "Linear"), ("1", "Tanh")] and len(seq) == 0


@pytest.mark.parametrize("call", [
    lambda lib: lib.nn.Sequential(lib.nn.ReLU()).insert(3, lib.nn.Tanh()),
    lambda lib: lib.nn.Sequential(lib.nn.ReLU()) + [lib.nn.ReLU()],
    lambda lib: lib.nn.Sequential(lib.nn.ReLU()).__iadd__(lib.nn.ReLU()),
    lambda lib: lib.nn.Sequential(lib.nn.ReLU()) * 0,
    lambda lib: lib.nn.Sequential(lib.nn.ReLU()) * 1.5,
    lambda lib: lib.nn.Sequential(lib.nn.ReLU()).insert(0, 3),
], ids=["insert-range", "add-list", "iadd-module", "mul-0", "mul-float", "insert-int"])
def test_sequential_refusals_match_torch(call):
    """(torch's texts name its own class paths, ``<class 'torch.nn.modules...'>``; the text
    before them is the same)"""
    with pytest.raises(Exception) as t_err:
        call(torch)
    with pytest.raises(type(t_err.value)) as j_err:
        call(jitgrad)
    assert str(j_err.value).split("<class")[0] == str(t_err.value).split("<class")[0]
