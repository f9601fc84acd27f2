"""Movement ops on 0-d and empty tensors and out-of-range arguments: torch's results and
torch's errors (its classes and texts), never NumPy's, and never a result where torch refuses.

Before: ``transpose``/``swapdims``/``flatten`` of a 0-d tensor took any dim (-3 included),
``narrow`` took a start outside ``[-n, n]``, ``split`` a negative size, ``movedim`` of a 0-d
tensor raised a Python IndexError, and ``reshape`` named no bad dimension.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import jitgrad

SHAPES = [(), (1,), (3,), (2, 3), (0, 3), (2, 1, 2)]
INTS = [-3, -1, 0, 1, 2, 3]
OPS = {
    "narrow": lambda x, a, b: x.narrow(a, b, 1),
    "transpose": lambda x, a, b: x.transpose(a, b),
    "swapdims": lambda x, a, b: x.swapdims(a, b),
    "flatten": lambda x, a, b: x.flatten(a, b),
    "movedim": lambda x, a, b: x.movedim(a, b),
    "split": lambda x, a, b: x.split(b, a),
    "chunk": lambda x, a, b: x.chunk(b, a),
    "reshape": lambda x, a, b: x.reshape(a, b),
    "view": lambda x, a, b: x.view(a, b),
    "rot90": lambda x, a, b: x.rot90(b, (a, -1)),
    # reductions along a dim: 0-d tensors, empty dims (torch's IndexError naming the dim)
    "argmax": lambda x, a, b: x.argmax(a),
    "max_dim": lambda x, a, b: x.max(a),
    "aminmax": lambda x, a, b: x.aminmax(dim=a),
    "softmax": lambda x, a, b: x.softmax(a),
    "kthvalue": lambda x, a, b: x.kthvalue(b, a),
    "norm_dim": lambda x, a, b: x.norm(dim=a),
    "logsumexp": lambda x, a, b: x.logsumexp(a),
    "var_dim": lambda x, a, b: x.var(a),
    "sort": lambda x, a, b: x.sort(a),
    "topk": lambda x, a, b: x.topk(b, a),
    "median_dim": lambda x, a, b: x.median(a),
    "diff": lambda x, a, b: x.diff(b, a),
    "unfold": lambda x, a, b: x.unfold(a, b, 1),
    "unfold_step": lambda x, a, b: x.unfold(a, 1, b),
}


def _outcome(lib, op, x, a, b):
    try:
        out = OPS[op](lib.tensor(x), a, b)
    except Exception as e:  # noqa: BLE001  (the class and text are compared)
        return "raised", f"{type(e).__name__}: {e}"
    return "ok", [t.numpy() for t in (out if isinstance(out, tuple) else (out,))]


def _same(p, q) -> bool:
    if p.shape != q.shape or p.dtype != q.dtype:
        return False
    if p.dtype.kind == "f":  # (softmax, norms, var: equal up to rounding)
        return np.allclose(p, q, rtol=1e-12, atol=1e-14, equal_nan=True)
    return np.array_equal(p, q)


@pytest.mark.parametrize("op", sorted(OPS))
def test_edges_match_torch(op):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    bad = []
    for shape in SHAPES:
        x = rng.standard_normal(shape)
        for a, b in itertools.product(INTS, INTS):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # (var over one element: torch's warning)
                t, j = _outcome(torch, op, x, a, b), _outcome(jitgrad, op, x, a, b)
            if t[0] != j[0] or (t[0] == "raised" and t[1] != j[1]) or (t[0] == "ok" and (
                    len(t[1]) != len(j[1]) or not all(
                        _same(p, q) for p, q in zip(t[1], j[1])))):
                bad.append((shape, a, b, t if t[0] == "raised" else "ok",
                            j if j[0] == "raised" else "ok"))
    assert bad == []


def test_zero_dim_refuses_a_dim_outside_its_range():
    x = jitgrad.tensor(1.0)
    for f in (lambda: x.transpose(-3, 0), lambda: x.flatten(2, 0)):
        with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range "
                                             r"of \[-1, 0\], but got"):
            f()
    with pytest.raises(RuntimeError, match="narrow\\(\\) cannot be applied to a 0-dim tensor"):
        x.narrow(0, 0, 1)
    moved = jitgrad.tensor(1.0, requires_grad=True).movedim(0, -1)
    assert moved.grad_fn.name() == "AliasBackward0"  # (torch's node for a 0-d movedim)


def test_reshape_names_the_bad_dimension():
    x = jitgrad.zeros(6)
    with pytest.raises(RuntimeError, match=r"invalid shape dimension -2 at index 1 of shape "
                                           r"\[2, -2\]"):
        x.reshape(2, -2)
    with pytest.raises(RuntimeError, match="the unspecified dimension size -1 can be any value "
                                           "and is ambiguous"):
        jitgrad.zeros(0).reshape(-1, 0)


CAT_SHAPES = [(), (0,), (2,), (2, 3), (3, 2), (0, 3), (2, 0), (1, 3), (2, 3, 1)]


@pytest.mark.parametrize("name", ["cat", "stack", "hstack", "vstack", "dstack", "column_stack"])
def test_joins_match_torch(name):
    torch = pytest.importorskip("torch")

    def outcome(lib, a, b, dtypes, dim):
        parts = [lib.tensor(a, dtype=getattr(lib, dtypes[0])),
                 lib.tensor(b, dtype=getattr(lib, dtypes[1]))]
        try:
            out = getattr(lib, name)(parts, dim) if name in ("cat", "stack") else \
                getattr(lib, name)(parts)
        except Exception as e:  # noqa: BLE001  (the class and text are compared)
            return f"{type(e).__name__}: {e}"
        return tuple(out.shape), str(out.dtype).split(".")[-1], out.numpy().tolist()

    bad = []
    for sa, sb in itertools.product(CAT_SHAPES, CAT_SHAPES):
        a = np.arange(int(np.prod(sa))).reshape(sa)
        b = np.arange(int(np.prod(sb))).reshape(sb) + 10
        for dtypes in (("float32", "float32"), ("float32", "int64"), ("bool", "float64")):
            for dim in (0, 1, -1, 2) if name in ("cat", "stack") else (0,):
                t, j = outcome(torch, a, b, dtypes, dim), outcome(jitgrad, a, b, dtypes, dim)
                if t != j:
                    bad.append((sa, sb, dtypes, dim, t, j))
    assert bad == []


def test_cat_refuses_what_torch_refuses():
    with pytest.raises(TypeError, match=r"must be tuple of Tensors, not Tensor"):
        jitgrad.cat(jitgrad.ones(2, 2))
    with pytest.raises(TypeError, match="expected Tensor as element 1 in argument 0, but got int"):
        jitgrad.cat((jitgrad.ones(2), 3))
    with pytest.raises(RuntimeError, match=r"zero-dimensional tensor \(at position 0\) cannot be "
                                           r"concatenated"):
        jitgrad.cat([jitgrad.tensor(1.0), jitgrad.ones(2)])
    # (1-D empty tensors are skipped by torch's legacy rule, whatever the dim)
    assert tuple(jitgrad.cat([jitgrad.zeros(0), jitgrad.zeros(0)], 1).shape) == (0,)


def test_tensor_flip_takes_dims_as_a_keyword_as_torch():
    x = jitgrad.arange(6.0).view(2, 3)
    assert x.flip(dims=(1,)).tolist() == [[2.0, 1.0, 0.0], [5.0, 4.0, 3.0]]
    assert x.flip(dims=[0, 1]).tolist() == x.flip(0, 1).tolist() == [[5.0, 4.0, 3.0],
                                                                     [2.0, 1.0, 0.0]]
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        x.flip(foo=1)
