"""nn.Sequential's list operations as torch's: insert, extend, pop, ``+``, ``+=``, ``*``,
``*=``, ``2 * seq`` (names renumbered, modules shared, not copied) and their refusals;
nn.ParameterDict's dict methods (popitem, setdefault, copy, fromkeys, ``|``, ``|=``)."""

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


# ------------------------------------------------------------------------- ParameterDict


def _dict_state(d):
    return [(k, type(v).__name__, tuple(v.shape) if hasattr(v, "shape") else v)
            for k, v in d.items()]


DICT_CASES = {
    "setdefault": lambda lib, d: (d.setdefault("c", lib.ones(3)), d)[1],
    "setdefault-present": lambda lib, d: (d.setdefault("a", lib.ones(3)), d)[1],
    "popitem": lambda lib, d: (d.popitem(), d)[1],
    "fromkeys": lambda lib, d: d.fromkeys(["x", "y"], lib.zeros(1)),
    "copy": lambda lib, d: d.copy(),
    "or": lambda lib, d: d | lib.nn.ParameterDict({"z": lib.ones(4)}),
    "ior": lambda lib, d: d.__ior__(lib.nn.ParameterDict({"a": lib.ones(4)})),
    "reversed": lambda lib, d: list(reversed(d)),
}


@pytest.mark.parametrize("op", list(DICT_CASES))
def test_parameter_dict_dict_methods_match_torch(op):
    results = []
    for lib in (torch, jitgrad):
        d = lib.nn.ParameterDict({"a": lib.ones(1), "b": lib.zeros(2)})
        out = DICT_CASES[op](lib, d)
        results.append((out if isinstance(out, list) else _dict_state(out), _dict_state(d)))
    assert results[0] == results[1]
    d = jitgrad.nn.ParameterDict({"a": jitgrad.ones(1)})
    assert d.copy()["a"] is d["a"] and d.popitem()[0] == "a" and len(d) == 0
