"""``Tensor.to``'s three overloads against torch: ``(device, dtype, non_blocking, copy)``,
``(dtype, non_blocking, copy)`` and ``(tensor, non_blocking, copy)``, each with
``memory_format=``; what none of them takes raises torch's TypeError."""

import pytest

import jitgrad

torch = pytest.importorskip("torch")

CALLS = [
    ("y.to(lib.float64)", lambda lib, y: y.to(lib.float64)),
    ("y.to(float)", lambda lib, y: y.to(float)),
    ("y.to('cpu', lib.float64)", lambda lib, y: y.to("cpu", lib.float64)),
    ("y.to('cpu', lib.float64, True, True)", lambda lib, y: y.to("cpu", lib.float64, True, True)),
    ("y.to(None)", lambda lib, y: y.to(None)),
    ("y.to()", lambda lib, y: y.to()),
    ("y.to(y.double())", lambda lib, y: y.to(y.double())),
    ("y.to(y.double(), True, True)", lambda lib, y: y.to(y.double(), True, True)),
    ("y.to(tensor=y.double())", lambda lib, y: y.to(tensor=y.double())),
    ("y.to(dtype=lib.int64, copy=True)", lambda lib, y: y.to(dtype=lib.int64, copy=True)),
    ("y.to(lib.int64, copy=True)", lambda lib, y: y.to(lib.int64, copy=True)),
    ("y.to(device='cpu')", lambda lib, y: y.to(device="cpu")),
    ("y.to(memory_format=lib.contiguous_format)",
     lambda lib, y: y.to(memory_format=lib.contiguous_format)),
    # refused: no overload takes these
    ("y.to(y, float)", lambda lib, y: y.to(y, float)),
    ("y.to(lib.float64, y)", lambda lib, y: y.to(lib.float64, y)),
    ("y.to(other=y)", lambda lib, y: y.to(other=y)),
    ("y.to(y, foo=1)", lambda lib, y: y.to(y, foo=1)),
    ("y.to(lib.float32, 'x', a=1)", lambda lib, y: y.to(lib.float32, "x", a=1)),
    ("y.to(lib.float64, lib.device('cpu'))", lambda lib, y: y.to(lib.float64, lib.device("cpu"))),
    ("y.to(memory_format=lib.float32)", lambda lib, y: y.to(memory_format=lib.float32)),
    ("y.to(lib.float64, 1)", lambda lib, y: y.to(lib.float64, 1)),
    ("y.to('cpu', 'cpu')", lambda lib, y: y.to("cpu", "cpu")),
]


def _outcome(lib, call):
    y = lib.ones(2, 3)
    try:
        out = call(lib, y)
    except TypeError as e:  # (torch's Python type names are torch.X, jitgrad's jitgrad.X)
        return "TypeError: " + str(e).split(", but expected")[0].replace("torch.", "jitgrad.")
    return str(out.dtype).split(".")[-1], tuple(out.shape), out is y


@pytest.mark.parametrize("i", range(len(CALLS)), ids=[c[0] for c in CALLS])
def test_overloads_match_torch(i):
    _, call = CALLS[i]
    assert _outcome(jitgrad, call) == _outcome(torch, call)


def test_refusal_lists_the_overloads():
    with pytest.raises(TypeError) as info:
        jitgrad.ones(2).to(jitgrad.ones(2), float)
    text = str(info.value)
    assert text.startswith("to() received an invalid combination of arguments - got (Tensor, "
                           "type), but expected one of:\n * (jitgrad.device device = None, ")
    assert " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, " in text
