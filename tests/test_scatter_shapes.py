"""gather, the scatter family and the index_* family on every pairing of small shapes (0-d,
empty, mismatched), and chunk on an empty dim: torch's results and torch's errors, never
NumPy's.

torch checks an index against ``self`` in every dim but ``dim`` and against ``src`` in every
dim (scatter_shape_check); an index with no elements skips the checks; a 0-d tensor counts as
one element along dim 0. Before these checks, an index larger than ``src`` wrote past it
silently, and 0-d operands raised NumPy's IndexError. index_add and index_copy broadcast a
source of another slice shape (a wrong result where torch refuses it).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import gradcheck

SHAPES = [(), (1,), (3,), (2, 3), (3, 2), (1, 3), (2, 1), (0, 3), (2, 0), (2, 3, 1), (2, 2, 2)]
OPS = {
    "scatter": lambda L, x, dim, idx, src: x.scatter(dim, idx, src),
    "scatter_value": lambda L, x, dim, idx, src: x.scatter(dim, idx, 2.0),
    "scatter_add": lambda L, x, dim, idx, src: x.scatter_add(dim, idx, src),
    "scatter_reduce_amax": lambda L, x, dim, idx, src: x.scatter_reduce(dim, idx, src, "amax"),
    "scatter_reduce_mean": lambda L, x, dim, idx, src: x.scatter_reduce(
        dim, idx, src, "mean", include_self=False),
    "gather": lambda L, x, dim, idx, src: x.gather(dim, idx),
}


def _outcome(lib, op, x, dim, idx, src):
    try:
        out = OPS[op](lib, lib.tensor(x), dim, lib.tensor(idx), lib.tensor(src))
    except Exception as e:  # noqa: BLE001  (the class and text are compared)
        return "raised", f"{type(e).__name__}: {e}"
    return "ok", out.numpy()


@pytest.mark.parametrize("op", sorted(OPS))
def test_shapes_and_errors_match_torch(op):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    bad = []
    for xs, index_shape, src_shape in itertools.product(SHAPES, SHAPES, SHAPES):
        x, src = rng.standard_normal(xs), rng.standard_normal(src_shape)
        for dim in (0, -1):
            # (unique positions along dim, so that scatter's result is defined)
            size = max(1, xs[dim] if xs else 1)
            idx = rng.integers(0, size, index_shape)
            t = _outcome(torch, op, x, dim, idx, src)
            j = _outcome(jitgrad, op, x, dim, idx, src)
            if t[0] != j[0] or (t[0] == "raised" and t[1] != j[1]):
                bad.append((xs, index_shape, src_shape, dim, t, j))
            elif t[0] == "ok" and (t[1].shape != j[1].shape or (
                    op != "scatter" and not np.allclose(t[1], j[1]))):
                bad.append((xs, index_shape, src_shape, dim, t, j))
    assert bad == []


def test_index_larger_than_src_is_refused():
    # (it read src past its end: a silently wrong result)
    x, idx, src = jitgrad.zeros(2, 4), jitgrad.zeros(2, 1, dtype=jitgrad.int64), jitgrad.ones(1, 1)
    with pytest.raises(RuntimeError, match=r"Expected index \[2, 1\] to be no larger than self "
                                           r"\[2, 4\] apart from dimension 1 and to be no larger "
                                           r"size than src \[1, 1\]"):
        x.scatter(1, idx, src)
    with pytest.raises(RuntimeError, match=r"Size does not match at dimension 0 expected index "
                                           r"\[3, 2\] to be no larger than self \[2, 4\]"):
        x.gather(1, jitgrad.zeros(3, 2, dtype=jitgrad.int64))


def test_empty_index_leaves_input_and_skips_the_checks():
    x = jitgrad.arange(3.0)
    out = x.scatter_add(0, jitgrad.zeros(0, 3, dtype=jitgrad.int64), jitgrad.ones(5, 5))
    assert out.tolist() == [0.0, 1.0, 2.0]
    assert tuple(x.gather(0, jitgrad.zeros(0, 3, dtype=jitgrad.int64)).shape) == (0, 3)


@pytest.mark.parametrize("case", ["scatter", "scatter_add", "gather", "scatter_reduce"])
def test_zero_dim_operands_have_gradients(case):
    idx0 = jitgrad.tensor(0)
    idx1 = jitgrad.tensor([0])

    def f(x, s):
        if case == "scatter":
            return x.scatter(0, idx1, s)
        if case == "scatter_add":
            return x.scatter_add(0, idx1, s)
        if case == "gather":
            return x.gather(0, idx0) * s.sum()
        return x.scatter_reduce(0, idx1, s, "sum")
    x = jitgrad.tensor(1.5, dtype=jitgrad.float64, requires_grad=True)
    s = jitgrad.tensor(0.7 if case != "scatter" else [0.7], dtype=jitgrad.float64,
                       requires_grad=True)
    assert gradcheck(f, (x, s))


def test_zero_dim_scatter_under_jit():
    @jitgrad.jit
    def f(x, s):
        return x.scatter_add(0, jitgrad.tensor([0]), s) * 2

    x = jitgrad.tensor(1.0, requires_grad=True)
    s = jitgrad.tensor(3.0, requires_grad=True)
    out = f(x, s)
    out.backward()
    assert out.item() == 8.0 and x.grad.item() == 2.0 and s.grad.item() == 2.0


@pytest.mark.parametrize("name", ["chunk", "unsafe_chunk"])
def test_chunk_of_an_empty_dim_gives_chunks_pieces(name):
    x = jitgrad.zeros(0, 4, requires_grad=True)
    pieces = getattr(x, name)(3)
    assert [tuple(p.shape) for p in pieces] == [(0, 4)] * 3
    expected = "SplitWithSizesBackward0" if name == "chunk" else "UnsafeSplitWithSizesBackward0"
    assert pieces[0].grad_fn.name() == expected  # (torch's node for the empty case)
    (pieces[0].sum() + pieces[2].sum()).backward()
    assert tuple(x.grad.shape) == (0, 4)
    assert [tuple(p.shape) for p in getattr(x, name)(2, 1)] == [(0, 2), (0, 2)]


def test_masked_select_broadcast_error_names_mask_first():
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(5\) must match the size of "
                                           r"tensor b \(4\) at non-singleton dimension 1"):
        jitgrad.zeros(3, 4).masked_select(jitgrad.zeros(3, 5, dtype=jitgrad.bool))


INDEX_SHAPES = [(), (1,), (3,), (2, 3), (0, 3), (2, 0), (2, 2, 2)]
INDEX_INDEX_SHAPES = [(), (1,), (2,), (0,), (2, 1)]
INDEX_OPS = {
    "index_select": lambda L, x, dim, idx, src, mask: x.index_select(dim, idx),
    "index_add": lambda L, x, dim, idx, src, mask: x.index_add(dim, idx, src, alpha=2),
    "index_copy": lambda L, x, dim, idx, src, mask: x.index_copy(dim, idx, src),
    "index_fill": lambda L, x, dim, idx, src, mask: x.index_fill(dim, idx, 2.0),
    "take": lambda L, x, dim, idx, src, mask: x.take(idx),
    "put": lambda L, x, dim, idx, src, mask: x.put(idx, src),
    "take_along_dim": lambda L, x, dim, idx, src, mask: L.take_along_dim(
        x, idx.reshape(tuple(idx.shape) + (1,) * max(0, x.ndim - idx.ndim)), dim),
    "masked_fill": lambda L, x, dim, idx, src, mask: x.masked_fill(mask, 2.0),
    "masked_scatter": lambda L, x, dim, idx, src, mask: x.masked_scatter(
        mask, L.arange(float(max(1, mask.numel())), dtype=L.float64)),
}
# torch's own internal errors where jitgrad names the bad index instead (an empty self)
_TORCH_INTERNAL = ("setStorage", "ZeroDivisionError")


def _index_outcome(lib, op, x, dim, idx, src, mask):
    try:
        out = INDEX_OPS[op](lib, lib.tensor(x), dim, lib.tensor(idx), lib.tensor(src),
                            lib.tensor(mask))
    except Exception as e:  # noqa: BLE001  (the class and text are compared)
        return "raised", f"{type(e).__name__}: {e}"
    return "ok", out.numpy()


@pytest.mark.parametrize("op", sorted(INDEX_OPS))
def test_index_family_matches_torch(op):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    bad = []
    for xs, index_shape, src_shape in itertools.product(INDEX_SHAPES, INDEX_INDEX_SHAPES,
                                                        INDEX_SHAPES):
        x, src = rng.standard_normal(xs), rng.standard_normal(src_shape)
        mask = rng.random(src_shape) > 0.5
        for dim in (0, -1):
            size = xs[dim] if xs else 1
            idx = rng.integers(0, max(size, 1), index_shape)
            t = _index_outcome(torch, op, x, dim, idx, src, mask)
            j = _index_outcome(jitgrad, op, x, dim, idx, src, mask)
            if t[0] == "raised" and j[0] == "raised" and \
                    t[1].split(": ", 1)[1].startswith(_TORCH_INTERNAL):
                continue
            if t[0] != j[0] or (t[0] == "raised" and t[1] != j[1]):
                bad.append((xs, index_shape, src_shape, dim, t, j))
            elif t[0] == "ok" and (t[1].shape != j[1].shape or (
                    op not in ("index_copy", "put") and not np.allclose(t[1], j[1]))):
                bad.append((xs, index_shape, src_shape, dim, t, j))
    assert bad == []


def test_index_add_and_copy_refuse_another_slice_shape():
    # (NumPy broadcast the (2, 1) source over the (2, 3) rows: a wrong result)
    x, idx = jitgrad.zeros(2, 3), jitgrad.tensor([0])
    with pytest.raises(RuntimeError, match=r"source tensor shape must match self tensor shape, "
                                           r"excluding the specified dimension"):
        x.index_add(0, idx, jitgrad.ones(1, 1))
    with pytest.raises(RuntimeError, match=r"Source/destination tensor must have same slice "
                                           r"shapes. Destination slice shape: 3 at dimension 0 "
                                           r"and source slice shape: 1 at dimension 0."):
        x.index_copy(0, idx, jitgrad.ones(1, 1))


@pytest.mark.parametrize("case", ["index_select", "index_add", "index_copy"])
def test_zero_dim_index_ops_have_gradients(case):
    def f(x, s):
        if case == "index_select":
            return x.index_select(0, jitgrad.tensor([0])) * s
        if case == "index_add":
            return x.index_add(0, jitgrad.tensor([0]), s)
        return x.index_copy(0, jitgrad.tensor([0]), s)
    x = jitgrad.tensor(1.5, dtype=jitgrad.float64, requires_grad=True)
    s = jitgrad.tensor(0.7, dtype=jitgrad.float64, requires_grad=True)
    assert gradcheck(f, (x, s))


_INDEX_DTYPE_OPS = {
    "gather": lambda L, i: L.arange(9.0).view(3, 3).gather(1, i),
    "scatter": lambda L, i: L.zeros(3, 3).scatter(1, i, 1.0),
    "scatter_add": lambda L, i: L.zeros(3, 3).scatter_add(1, i, L.ones(1, 1)),
    "scatter_reduce": lambda L, i: L.zeros(3, 3).scatter_reduce(1, i, L.ones(1, 1), "amax"),
    "take_along_dim": lambda L, i: L.take_along_dim(L.arange(9.0).view(3, 3), i, 1),
    "gather_grad": lambda L, i: (lambda x: (x.gather(1, i).sum().backward(), x.grad)[1])(
        L.zeros(3, 3, requires_grad=True)),
}


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "bool",
                                   "float32"])
@pytest.mark.parametrize("op", sorted(_INDEX_DTYPE_OPS))
def test_index_dtypes_as_torch(op, dtype):
    """gather and the scatters take int32 indices as well as int64, as torch; other dtypes are
    refused with torch's texts (scatter_reduce's is scatter's; take_along_dim names the dtype
    as torch's C++ does: Int, Char, Byte...)."""
    torch = pytest.importorskip("torch")

    def outcome(lib):
        try:
            return _INDEX_DTYPE_OPS[op](lib, lib.tensor([[2]]).to(getattr(lib, dtype))).tolist()
        except RuntimeError as e:
            return str(e)
    assert outcome(jitgrad) == outcome(torch)


def test_scatter_reduce_argument_with_a_tensor_src_warns_once_as_torch():
    import warnings

    from jitgrad.ops import selection

    selection._WARNED_REDUCE.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        index, src = jitgrad.tensor([0, 0]), jitgrad.tensor([1.0, 2.0])
        jitgrad.zeros(3).scatter(0, index, 2.0, reduce="add")  # (a number: no warning)
        out = jitgrad.zeros(3).scatter_(0, index, src, reduce="add")
        jitgrad.zeros(3).scatter(0, index, src, reduce="multiply")
    assert out.tolist() == [3.0, 0.0, 0.0]
    assert [str(w.message) for w in caught] == [
        "The reduce argument of torch.scatter with Tensor src is deprecated and will be removed "
        "in a future PyTorch release. Use torch.scatter_reduce instead for more reduction "
        "options."]
    assert caught[0].filename == __file__


@pytest.mark.parametrize("alias,name", [("max", "amax"), ("min", "amin")])
def test_scatter_reduce_takes_max_and_min_as_torch_does(alias, name):
    """torch 2.13 accepts the undocumented "max"/"min" and reduces as amax/amin."""
    base = jitgrad.tensor([10.0, -1, 2, 3, 0], requires_grad=True)
    index = jitgrad.tensor([0, 0, 2, 2, 2])
    src = jitgrad.tensor([1.0, 2, 3, 4, 5], requires_grad=True)
    for include_self in (True, False):
        ours = base.scatter_reduce(0, index, src, alias, include_self=include_self)
        same = base.scatter_reduce(0, index, src, name, include_self=include_self)
        assert jitgrad.equal(ours, same)
        g_ours = jitgrad.autograd.grad(ours.sum(), (base, src))
        g_same = jitgrad.autograd.grad(same.sum(), (base, src))
        assert all(jitgrad.equal(a, b) for a, b in zip(g_ours, g_same))
    expected = [10.0, -1, 5, 3, 0] if alias == "max" else [1.0, -1, 2, 3, 0]
    assert base.detach().clone().scatter_reduce_(0, index, src.detach(), alias).tolist() \
        == expected
    with pytest.raises(RuntimeError, match="must be either sum, prod, mean, amax or amin, got "
                                           "maximum"):
        base.scatter_reduce(0, index, src, "maximum")


@pytest.mark.parametrize("dtype", ["float32", "bool", "uint8", "int16", "int32", "int64"])
def test_index_select_takes_int32_and_int64_indices_only(dtype):
    x = jitgrad.eye(3)
    index = jitgrad.tensor([1]).to(getattr(jitgrad, dtype))
    if dtype in ("int32", "int64"):
        assert x.index_select(0, index).tolist() == [[0.0, 1.0, 0.0]]
    else:  # torch's RuntimeError (an IndexError only for an index that is no vector)
        with pytest.raises(RuntimeError, match=r"index_select\(\): Expected dtype int32 or "
                                               "int64 for index"):
            x.index_select(0, index)
