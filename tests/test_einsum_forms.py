"""einsum's equation forms against torch (implicit output, ellipses, repeated subscripts,
0-d operands, bad equations with torch's texts) and torch's sublist form."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import gradcheck

RNG = np.random.default_rng(0)
A, B = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 4))
C, V, S = RNG.standard_normal((2, 3, 4)), RNG.standard_normal(3), RNG.standard_normal(())
SQUARE, CUBE = RNG.standard_normal((3, 3)), RNG.standard_normal((2, 2, 2))
CASES = [
    ("ij,jk->ik", A, B), ("ij,jk", A, B), ("ij->ji", A), ("ii->i", SQUARE), ("ii", SQUARE),
    ("i,i->", V, V), ("i,j->ij", V, V), ("...j,jk->...k", C, B), ("b...,b...->b", C, C),
    ("ij,jk->", A, B), ("ij,kj->ik", A, A), ("ij->", A), ("->", S), (",->", S, S),
    ("i,->i", V, S), ("ij,jk->ik", A, A), ("ij,jk->ikk", A, B), ("ij,jk->iz", A, B),
    ("ij->i", C), ("ijk->", A), ("ij,jk,kl->il", A, B, B.T), ("Ab,bc->Ac", A, B),
    ("i j , j k -> i k", A, B), ("ij,jk->ik->", A, B), ("ij,jk->ik", A),
    ("...ij,...jk->...ik", RNG.standard_normal((5, 2, 3)), RNG.standard_normal((1, 3, 4))),
    ("i...->...", C), ("iii->i", CUBE), ("ij.,jk", A, B), ("ij,jk->ik", A, SQUARE @ B[:, :3]),
    ("ij,jk->ik", A[:, :1], B[:1]), ("ij,jk->ik", A[:, :1], B), ("bij,bjk->bik", C[:1], C[:, 0]),
]


def _outcome(lib, equation, operands):
    try:
        out = lib.einsum(equation, *[lib.tensor(o) for o in operands])
    except Exception as e:  # noqa: BLE001  (the class and text are compared)
        return f"{type(e).__name__}: {e}"
    return tuple(out.shape), np.round(out.numpy(), 10).tolist()


@pytest.mark.parametrize("i", range(len(CASES)), ids=[c[0] for c in CASES])
def test_equations_match_torch(i):
    torch = pytest.importorskip("torch")
    equation, *operands = CASES[i]
    assert _outcome(jitgrad, equation, operands) == _outcome(torch, equation, operands)


def test_sublist_form():
    a, b = jitgrad.tensor(A), jitgrad.tensor(B)
    expected = (a @ b).numpy()
    np.testing.assert_allclose(jitgrad.einsum(a, [0, 1], b, [1, 2], [0, 2]).numpy(), expected)
    # (implicit output: labels in torch's order, A-Z (0-25) before a-z (26-51))
    np.testing.assert_allclose(jitgrad.einsum(a, [27, 1], b, [1, 2]).numpy(), expected.T)
    assert tuple(jitgrad.einsum(jitgrad.tensor(C), [0, Ellipsis], [Ellipsis]).shape) == (3, 4)
    with pytest.raises(ValueError, match=r"not within the valid range \[0, 52\)"):
        jitgrad.einsum(a, [0, 52])
    x = jitgrad.tensor(A, requires_grad=True)
    y = jitgrad.tensor(B, requires_grad=True)
    assert gradcheck(lambda p, q: jitgrad.einsum(p, [0, 1], q, [1, 2], [2]), (x, y))


DTYPE_CASES = [  # (equation, shapes, dtypes): torch contracts with bmm and multiplies otherwise
    ("ij,jk->ik", [(3, 4), (4, 5)], ["float32", "bfloat16"]),
    ("i,j->ij", [(3,), (5,)], ["float32", "float64"]),
    ("i,i->i", [(3,), (3,)], ["float32", "float64"]),
    ("i,i->", [(3,), (3,)], ["float32", "float64"]),
    ("ij,jk->ik", [(3, 1), (1, 5)], ["float32", "float64"]),
    ("i,ij,j->", [(3,), (3, 4), (4,)], ["float32", "float32", "float32"]),
    ("ij,jk->ik", [(3, 4), (4, 5)], ["float64", "float32"]),
    ("ij,jk->ik", [(3, 4), (4, 5)], ["float64", "float64"]),
    ("ij->j", [(3, 4)], ["float32"]),
    ("ii->", [(3, 3)], ["float32"]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], ["float32", "bfloat16"]),
]


def _dtype_outcome(lib, equation, shapes, dtypes, autocast):
    ops = [lib.ones(s, dtype=getattr(lib, d)) for s, d in zip(shapes, dtypes)]
    try:
        if autocast:
            with lib.autocast("cpu", dtype=lib.bfloat16):
                out = lib.einsum(equation, *ops)
        else:
            out = lib.einsum(equation, *ops)
    except RuntimeError as e:
        return f"RuntimeError: {e}"
    return str(out.dtype).split(".")[-1], tuple(out.shape)


@pytest.mark.parametrize("autocast", [False, True], ids=["plain", "autocast"])
@pytest.mark.parametrize("i", range(len(DTYPE_CASES)), ids=[c[0] for c in DTYPE_CASES])
def test_mixed_dtypes_and_autocast_match_torch(i, autocast):
    torch = pytest.importorskip("torch")
    case = DTYPE_CASES[i]
    assert _dtype_outcome(jitgrad, *case, autocast) == _dtype_outcome(torch, *case, autocast)


def test_unit_contraction_gradients():
    a = jitgrad.tensor(RNG.standard_normal((3, 1)), requires_grad=True)
    b = jitgrad.tensor(RNG.standard_normal((4, 5)), requires_grad=True)
    assert gradcheck(lambda p, q: jitgrad.einsum("ij,jk->ik", p, q), (a, b))
    assert gradcheck(lambda p, q: jitgrad.einsum("ij,jk->ik", p, q[:1]), (a, b))
