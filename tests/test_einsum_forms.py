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
