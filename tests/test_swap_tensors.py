"""``jitgrad.utils.swap_tensors`` against ``torch.utils.swap_tensors``: contents swap, identity
stays; a pre-swap graph's gradient accumulator is poisoned; weakrefs raise."""

from __future__ import annotations

import weakref

import pytest

import jitgrad


def _state(t):
    return (type(t).__name__, t.tolist(), str(t.dtype).split(".")[1], t.requires_grad,
            None if t.grad is None else t.grad.tolist(), getattr(t, "tag", None))


@pytest.mark.parametrize("lib_name", ["jitgrad", "torch"])
def test_swap_contents_keep_identity(lib_name):
    lib = jitgrad if lib_name == "jitgrad" else pytest.importorskip("torch")
    t1, t2 = lib.arange(2), lib.ones(3, dtype=lib.float64, requires_grad=True)
    (t2 * 2).sum().backward()  # (a grad, and an accumulator, which the swap poisons)
    t1.tag = "one"
    ids = id(t1), id(t2)
    lib.utils.swap_tensors(t1, t2)
    assert (id(t1), id(t2)) == ids
    assert _state(t1) == ("Tensor", [1.0, 1.0, 1.0], "float64", True, [2.0, 2.0, 2.0], None)
    assert _state(t2) == ("Tensor", [0, 1], "int64", False, None, "one")
    p = lib.nn.Parameter(lib.zeros(2))
    q = lib.ones(4)
    lib.utils.swap_tensors(p, q)  # (the class swaps too)
    assert type(q) is lib.nn.Parameter and q.tolist() == [0.0, 0.0]
    assert type(p) is lib.Tensor and p.tolist() == [1.0] * 4


def test_swap_matches_torch_on_errors_and_poisoning():
    torch = pytest.importorskip("torch")
    for lib in (jitgrad, torch):
        w = lib.ones(2, requires_grad=True)
        loss = (w * 3).sum()
        lib.utils.swap_tensors(w, lib.zeros(2, requires_grad=True))
        with pytest.raises(RuntimeError, match="^Trying to execute AccumulateGrad node that "
                                               "was poisoned by swap_tensors"):
            loss.backward()
        (w * 2).sum().backward()  # a graph after the swap accumulates into the new content
        assert w.grad.tolist() == [2.0, 2.0]
        a = lib.ones(1)
        ref = weakref.ref(a)
        with pytest.raises(RuntimeError, match="^Cannot swap t1 because it has weakref "
                                               "associated with it$"):
            lib.utils.swap_tensors(a, lib.ones(1))
        with pytest.raises(RuntimeError, match="^Cannot swap t2 because it has weakref "):
            lib.utils.swap_tensors(lib.ones(1), a)
        del ref

