"""The shape helpers of ``jitgrad/ops/shape_helpers.py`` (compositions of existing ops): values
and gradients against torch, ``gradcheck`` in float64, and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import gradcheck

R = np.random.default_rng(18)


def _a(*shape):
    return R.uniform(-2.0, 2.0, shape)


def _conv(obj, lib, grad):
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind == "f":
            return lib.tensor(obj, dtype=lib.float64, requires_grad=grad)
        return lib.tensor(obj)
    if isinstance(obj, (list, tuple)) and any(isinstance(o, np.ndarray) for o in obj):
        return type(obj)(_conv(o, lib, grad) for o in obj)
    return obj


def _leaves(obj) -> list:
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _leaves(o)]
    return [obj] if getattr(obj, "requires_grad", False) else []


def _outs(out) -> list:
    return list(out) if isinstance(out, (list, tuple)) else [out]


# (call, args): call(lib, *args) runs the helper; float arrays are differentiable inputs
CASES = {
    "hstack_1d": (lambda L, a, b: L.hstack([a, b]), (_a(3), _a(2))),
    "hstack_2d": (lambda L, a, b: L.hstack((a, b)), (_a(2, 3), _a(2, 1))),
    "vstack_1d": (lambda L, a, b: L.vstack([a, b]), (_a(3), _a(3))),
    "vstack_2d": (lambda L, a, b: L.vstack([a, b]), (_a(2, 3), _a(1, 3))),
    "row_stack": (lambda L, a, b: L.row_stack([a, b]), (_a(3), _a(2, 3))),
    "dstack": (lambda L, a, b: L.dstack([a, b]), (_a(2, 3), _a(2, 3, 2))),
    "dstack_1d": (lambda L, a, b: L.dstack([a, b]), (_a(3), _a(3))),
    "column_stack": (lambda L, a, b, c: L.column_stack([a, b, c]), (_a(3), _a(3, 2), _a(3))),
    "atleast_1d": (lambda L, a, b: L.atleast_1d(a, b), (_a(), _a(2, 3))),
    "atleast_1d_one": (lambda L, a: L.atleast_1d(a), (_a(),)),
    "atleast_2d": (lambda L, a, b, c: L.atleast_2d([a, b, c]), (_a(), _a(3), _a(2, 2))),
    "atleast_3d": (lambda L, a, b, c, d: L.atleast_3d(a, b, c, d),
                   (_a(), _a(3), _a(2, 3), _a(2, 3, 4))),
    "ravel": (lambda L, a: L.ravel(a.transpose(0, 1)), (_a(3, 4),)),
    "Tensor.ravel": (lambda L, a: a.ravel(), (_a(2, 3, 2),)),
    "swapdims": (lambda L, a: L.swapdims(a, 0, -1), (_a(2, 3, 4),)),
    "swapaxes": (lambda L, a: L.swapaxes(a, 1, 2), (_a(2, 3, 4),)),
    "Tensor.swapdims": (lambda L, a: a.swapdims(1, 0), (_a(2, 3),)),
    "unflatten": (lambda L, a: L.unflatten(a, 1, (2, -1)), (_a(3, 6),)),
    "Tensor.unflatten": (lambda L, a: a.unflatten(-1, (2, 1, 3)), (_a(2, 6),)),
    "tensor_split_sections": (lambda L, a: L.tensor_split(a, 3, 1), (_a(2, 7),)),
    "tensor_split_indices": (lambda L, a: L.tensor_split(a, [1, 4, -1], dim=0), (_a(6, 2),)),
    "tensor_split_over": (lambda L, a: L.tensor_split(a, [2, 9, 1]), (_a(5),)),
    "tensor_split_tensor": (lambda L, a, i: a.tensor_split(i, 1), (_a(3, 5), np.array([1, 3]))),
    "tensor_split_0d": (lambda L, a, i: L.tensor_split(a, i), (_a(5), np.array(2))),
    "hsplit": (lambda L, a: L.hsplit(a, 2), (_a(3, 4),)),
    "hsplit_1d": (lambda L, a: a.hsplit([1, 3]), (_a(5),)),
    "vsplit": (lambda L, a: L.vsplit(a, [1]), (_a(3, 4),)),
    "dsplit": (lambda L, a: L.dsplit(a, 3), (_a(2, 2, 6),)),
    "broadcast_to": (lambda L, a: L.broadcast_to(a, (2, 3, 4)), (_a(3, 1),)),
    "Tensor.broadcast_to": (lambda L, a: a.broadcast_to([4, 2]), (_a(2),)),
    "take_along_dim": (lambda L, a, i: L.take_along_dim(a, i, 1),
                       (_a(3, 4), np.array([[0, 3], [1, 1], [2, 0]]))),
    "take_along_dim_bcast": (lambda L, a, i: a.take_along_dim(i, dim=0),
                             (_a(3, 4), np.array([[2], [0]]))),
    "take_along_dim_none": (lambda L, a, i: L.take_along_dim(a, i),
                            (_a(3, 4), np.array([11, 0, 5]))),
    "take_along_dim_argsort": (lambda L, a: L.take_along_dim(a, a.detach().argsort(1), 1),
                               (_a(3, 4),)),
    "rot90": (lambda L, a: L.rot90(a), (_a(3, 4),)),
    "rot90_k2": (lambda L, a: L.rot90(a, 2, [1, 2]), (_a(2, 3, 4),)),
    "rot90_k3": (lambda L, a: a.rot90(-1, (0, 1)), (_a(3, 4),)),
    "rot90_k0": (lambda L, a: L.rot90(a, 4), (_a(3, 4),)),
    "rot90_rev": (lambda L, a: L.rot90(a, 1, (2, 0)), (_a(2, 3, 4),)),
    "block_diag": (lambda L, a, b, c: L.block_diag(a, b, c), (_a(2, 3), _a(), _a(3))),
    "block_diag_int": (lambda L, a, b: L.block_diag(a, b), (_a(2, 2), np.array([[1, 2]]))),
    "kron": (lambda L, a, b: L.kron(a, b), (_a(2, 3), _a(3, 2))),
    "kron_ranks": (lambda L, a, b: a.kron(b), (_a(2, 1, 2), _a(3))),
    "cartesian_prod": (lambda L, a, b, c: L.cartesian_prod(a, b, c), (_a(2), _a(3), _a(2))),
    "cartesian_prod_one": (lambda L, a: L.cartesian_prod(a), (_a(3),)),
    "inner": (lambda L, a, b: L.inner(a, b), (_a(2, 3), _a(4, 3))),
    "inner_1d": (lambda L, a, b: a.inner(b), (_a(3), _a(3))),
    "inner_0d": (lambda L, a, b: L.inner(a, b), (_a(), _a(2, 3))),
    "vander": (lambda L, a: L.vander(a), (_a(4),)),
    "vander_n": (lambda L, a: L.vander(a, N=2, increasing=True), (_a(3),)),
    "vander_int": (lambda L, a: L.vander(a, 3), (np.array([1, 2, 3]),)),
    "baddbmm": (lambda L, c, a, b: L.baddbmm(c, a, b), (_a(2, 3, 4), _a(2, 3, 5), _a(2, 5, 4))),
    "baddbmm_scaled": (lambda L, c, a, b: c.baddbmm(a, b, beta=0.5, alpha=2.0),
                       (_a(3, 1), _a(2, 3, 5), _a(2, 5, 4))),
    "baddbmm_beta0": (lambda L, c, a, b: L.baddbmm(c * float("nan"), a, b, beta=0),
                      (_a(2, 3, 4), _a(2, 3, 5), _a(2, 5, 4))),
}


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_grads_vs_torch(name):
    torch = pytest.importorskip("torch")
    call, args = CASES[name]
    jargs, targs = _conv(args, jitgrad, True), _conv(args, torch, True)
    jout, tout = _outs(call(jitgrad, *jargs)), _outs(call(torch, *targs))
    assert len(jout) == len(tout)
    for j, t in zip(jout, tout):
        assert tuple(j.shape) == tuple(t.shape)
        assert str(j.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(j.detach().numpy(), t.detach().numpy(), rtol=1e-12,
                                   atol=1e-12)
    jl, tl = _leaves(jargs), _leaves(targs)
    jdiff = [j for j in jout if j.requires_grad]
    tdiff = [t for t in tout if t.requires_grad]
    assert len(jdiff) == len(tdiff)
    if not jl or not jdiff or name.startswith("vander"):  # (torch's vander backward fails:
        return  # its cumprod is modified in place; gradcheck below checks ours)
    gos = [R.standard_normal(tuple(t.shape)) for t in tdiff]
    jg = jitgrad.autograd.grad(jdiff, jl, [jitgrad.tensor(g) for g in gos], allow_unused=True)
    tg = torch.autograd.grad(tdiff, tl, [torch.tensor(g) for g in gos], allow_unused=True)
    for a, b in zip(jg, tg):
        assert (a is None) == (b is None)
        if b is not None:
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", [n for n in CASES if "beta0" not in n])
def test_gradcheck(name):
    call, args = CASES[name]
    jargs = _conv(args, jitgrad, True)
    leaves = _leaves(jargs)
    if not leaves:
        pytest.skip("no floating input")

    def f(*ts):
        it = iter(ts)

        def put(o):
            if isinstance(o, (list, tuple)):
                return type(o)(put(v) for v in o)
            return next(it) if getattr(o, "requires_grad", False) else o
        return tuple(o for o in _outs(call(jitgrad, *put(jargs))) if o.requires_grad)
    assert gradcheck(f, tuple(leaves))


def test_broadcast_shapes_and_indices():
    torch = pytest.importorskip("torch")
    assert jitgrad.broadcast_shapes((3, 1), (1, 4), 4) == torch.broadcast_shapes((3, 1), (1, 4), 4)
    assert isinstance(jitgrad.broadcast_shapes((2,)), jitgrad.Size)
    with pytest.raises(RuntimeError, match="must match"):
        jitgrad.broadcast_shapes((3,), (4,))
    for fn in ("tril_indices", "triu_indices"):
        for args in ((4, 3), (3, 5, 1), (4, 4, -2), (0, 3)):
            j, t = getattr(jitgrad, fn)(*args), getattr(torch, fn)(*args)
            assert j.dtype == jitgrad.int64
            np.testing.assert_array_equal(j.numpy(), t.numpy())
    assert jitgrad.tril_indices(3, 3, dtype=jitgrad.int32).dtype == jitgrad.int32


def test_views_share_storage():
    x = jitgrad.arange(12.0).reshape(3, 4)
    parts = jitgrad.tensor_split(x, 2, dim=1)
    parts[0][0, 0] = 100.0
    assert x[0, 0].item() == 100.0
    y = x.unflatten(1, (2, 2))
    y[2, 1, 1] = -1.0
    assert x[2, 3].item() == -1.0


@pytest.mark.parametrize("call,match", [
    (lambda L: L.hsplit(L.ones(3, 4), 3), "not divisible by the split_size 3"),
    (lambda L: L.vsplit(L.ones(4), 2), "at least 2 dimension"),
    (lambda L: L.dsplit(L.ones(2, 2), 2), "at least 3 dimension"),
    (lambda L: L.tensor_split(L.ones(4), 0), "number of sections must be larger than 0"),
    (lambda L: L.tensor_split(L.ones(()), 2), "at least a 1-dimensional tensor"),
    (lambda L: L.tensor_split(L.ones(4), L.ones(2)), "to have dtype of long, but got Float"),
    (lambda L: L.unflatten(L.ones(2, 6), 1, (4, -1)), "multiply up to the size of dim 1"),
    (lambda L: L.unflatten(L.ones(2, 6), 1, (4, 2)), "don't multiply up to the size"),
    (lambda L: L.rot90(L.ones(3), 1), "expected total dims >= 2"),
    (lambda L: L.rot90(L.ones(3, 3), 1, [0, 0]), "expected rotation dims to be different"),
    (lambda L: L.rot90(L.ones(3, 3), 1, [0]), "expected total rotation dims == 2"),
    (lambda L: L.take_along_dim(L.ones(3, 3), L.zeros(3, 1), 1), "should be Long but got Float"),
    (lambda L: L.take_along_dim(L.ones(3, 3), L.zeros(3, dtype=L.long), 1),
     "should have the same number of dimensions"),
    (lambda L: L.block_diag(L.ones(1, 1, 1)), "Input 0 has 3 dimensions"),
    (lambda L: L.cartesian_prod(L.ones(2, 2)), "Expect a 1D vector"),
    (lambda L: L.inner(L.ones(2, 3), L.ones(3, 2)), "the last dimension must match"),
    (lambda L: L.vander(L.ones(2, 2)), "x must be a one-dimensional tensor"),
    (lambda L: L.baddbmm(L.ones(1), L.ones(3, 5), L.ones(2, 5, 4)), "batch1 must be a 3D"),
    (lambda L: L.baddbmm(L.ones(1), L.ones(2, 3, 5), L.ones(2, 6, 4)), "first two dimensions"),
    (lambda L: L.hstack([]), "expects a non-empty TensorList"),
])
def test_errors_as_torch(call, match):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match=match):
        call(torch)
    with pytest.raises(RuntimeError, match=match):
        call(jitgrad)


def test_baddbmm_inplace_and_under_jit():
    torch = pytest.importorskip("torch")
    c, a, b = _a(2, 3, 4), _a(2, 3, 5), _a(2, 5, 4)
    j = jitgrad.tensor(c)
    j.baddbmm_(jitgrad.tensor(a), jitgrad.tensor(b), alpha=0.5)
    t = torch.tensor(c).baddbmm_(torch.tensor(a), torch.tensor(b), alpha=0.5)
    np.testing.assert_allclose(j.numpy(), t.numpy(), rtol=1e-12)
    f = jitgrad.jit(lambda x, y: jitgrad.kron(x, y).sum() + jitgrad.rot90(x).sum() +
                    jitgrad.vstack([x, y]).sum())
    x, y = jitgrad.tensor(_a(2, 3)), jitgrad.tensor(_a(2, 3))
    expected = (jitgrad.kron(x, y).sum() + jitgrad.rot90(x).sum() + jitgrad.vstack([x, y]).sum())
    np.testing.assert_allclose(f(x, y).item(), expected.item(), rtol=1e-12)
