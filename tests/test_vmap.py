"""``jitgrad.func.vmap``: every opdb record under vmap equals the loop over the batch (eagerly,
with mapped and unmapped inputs), nesting, in_dims/out_dims/pytrees, chunking, randomness, the
fallback warning, the errors (torch's texts) and composition with ``jit``."""

from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest
from opdb import OP_DB

import jitgrad
from jitgrad.func import batching, grad, vmap
from jitgrad.jit import jit
from test_jit import _prepare

F64 = jitgrad.float64
B = 3
DATA_DEPENDENT_SHAPES = {"masked_select", "nonzero", "unique", "unique_dim",
                         "unique_consecutive"}


def _cases():
    out = []
    for rec in OP_DB:
        if rec.name in DATA_DEPENDENT_SHAPES:
            continue
        samples = rec.samples(np.random.default_rng(zlib.crc32(rec.name.encode())))
        for i, s in enumerate(samples):
            out.append(pytest.param(rec, s, id=f"{rec.name}-{s.name or i}"))
    return out


# records whose inputs must stay in [0, 1] (torch checks binary_cross_entropy's): scaled down
UNIT_INTERVAL = {"binary_cross_entropy"}


def _batch_of(x: jitgrad.Tensor, dim: int = 0, rec=None) -> jitgrad.Tensor:
    """B copies of ``x`` scaled by 1, 1.05, 1.1 (signs, order and domains are kept; 1, 0.95,
    0.9 for the records of ``UNIT_INTERVAL``), stacked along ``dim``."""
    step = -0.05 if rec is not None and rec.name in UNIT_INTERVAL else 0.05
    return jitgrad.stack([x.detach() * (1 + step * b) for b in range(B)], dim=dim)


def _loop(fn, batched: list, in_dims: tuple) -> list:
    outs = [fn(*[x.select(d, b) if d is not None else x for x, d in zip(batched, in_dims)])
            for b in range(B)]
    return [jitgrad.stack([o[i] for o in outs]) for i in range(len(outs[0]))]


def _check_close(got, want, rec):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.dtype is b.dtype, (a.dtype, b.dtype)
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(),
                                   rtol=rec.rtol["float64"], atol=rec.atol["float64"])


@pytest.mark.parametrize("rec,sample", _cases())
def test_opdb_under_vmap_equals_the_loop(rec, sample):
    fn, inputs = _prepare(rec, sample)
    if not inputs:
        pytest.skip("no floating input to map over")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the fallback's performance warning
        # every input mapped along dim 0
        batched = [_batch_of(x, rec=rec) for x in inputs]
        dims = (0,) * len(inputs)
        _check_close(vmap(fn, in_dims=dims)(*batched), _loop(fn, batched, dims), rec)
        # only the first input mapped, along its last dim; the others broadcast (in_dims None)
        first = _batch_of(inputs[0], dim=-1, rec=rec)
        rest = [x.detach() for x in inputs[1:]]
        dims = (first.ndim - 1,) + (None,) * len(rest)
        _check_close(vmap(fn, in_dims=dims)(first, *rest), _loop(fn, [first, *rest], dims),
                     rec)


@pytest.mark.parametrize("rec,sample", _cases())
def test_opdb_under_jit_of_vmap_equals_the_loop(rec, sample):
    fn, inputs = _prepare(rec, sample)
    if not inputs:
        pytest.skip("no floating input to map over")
    batched = [_batch_of(x, rec=rec) for x in inputs]
    dims = (0,) * len(inputs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        got = jit(vmap(fn, in_dims=dims), backend="interpreter")(*batched)
    _check_close(got, _loop(fn, batched, dims), rec)


def _scalar_loss(fn):
    """sum(out * w) over the floating outputs, w fixed: a scalar whose gradient is the VJP."""
    def loss(*ts):
        total = 0
        for i, o in enumerate(fn(*ts)):
            if o.dtype.is_floating_point:
                w = jitgrad.linspace(0.5, 1.5, max(o.numel(), 1), dtype=o.dtype)
                total = total + (o * w[:o.numel()].reshape(tuple(o.shape))).sum() * (i + 1)
        return total
    return loss


@pytest.mark.parametrize("rec,sample", [c for c in _cases() if c.values[0].differentiable])
def test_opdb_vmap_of_grad_equals_the_loop(rec, sample):
    """Per-sample gradients of every op: its VJP rule's ops batched."""
    fn, inputs = _prepare(rec, sample)
    if not inputs:
        pytest.skip("no floating input to map over")
    loss = _scalar_loss(fn)
    g = grad(loss, argnums=tuple(range(len(inputs))))
    batched = [_batch_of(x, rec=rec) for x in inputs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        got = vmap(g)(*batched)
    want = _loop(g, batched, (0,) * len(inputs))
    _check_close(got, want, rec)


def test_in_dims_none_tuples_and_pytrees():
    x = jitgrad.randn(4, 3, dtype=F64)
    y = jitgrad.randn(3, dtype=F64)

    def f(pair, d):
        a, b = pair
        return {"s": a * b + d["c"], "t": (a.sum(),)}

    out = vmap(f, in_dims=((0, None), {"c": None}))((x, y), {"c": y})
    np.testing.assert_allclose(out["s"].numpy(), x.numpy() * y.numpy() + y.numpy())
    np.testing.assert_allclose(out["t"][0].numpy(), x.numpy().sum(1))
    out = vmap(lambda a: a * 2, in_dims=1, out_dims=1)(x)
    np.testing.assert_allclose(out.numpy(), x.numpy() * 2)
    a, b = vmap(lambda a: (a, a.sum()), in_dims=1, out_dims=(1, 0))(x)
    np.testing.assert_allclose(a.numpy(), x.numpy())
    np.testing.assert_allclose(b.numpy(), x.numpy().sum(0))


def test_out_dims_none_and_unbatched_outputs():
    x = jitgrad.randn(4, 3, dtype=F64)
    c = jitgrad.ones(2, dtype=F64)
    a, b = vmap(lambda t: (t * 2, c), out_dims=(0, None))(x)
    assert b is c
    out = vmap(lambda t: c)(x)  # an unbatched output is expanded over the batch
    assert tuple(out.shape) == (4, 2)
    with pytest.raises(ValueError, match="Can not return a BatchedTensor when out_dim is None"):
        vmap(lambda t: t, out_dims=None)(x)


def test_nested_vmap():
    x = jitgrad.randn(2, 3, 4, dtype=F64)
    w = jitgrad.randn(4, 5, dtype=F64)
    out = vmap(vmap(lambda a: (a @ w).tanh()))(x)
    np.testing.assert_allclose(out.numpy(), np.tanh(x.numpy() @ w.numpy()), rtol=1e-12)
    y = jitgrad.randn(3, dtype=F64)
    # outer maps x's rows, inner maps y: an outer-batched value meets an inner-batched one
    out = vmap(lambda r: vmap(lambda s: r * s)(y))(x[0])
    np.testing.assert_allclose(out.numpy(), x[0].numpy()[:, None, :] * y.numpy()[None, :, None])
    out = vmap(vmap(lambda a, b: a @ b, in_dims=(0, None)), in_dims=(0, None))(x, w)
    np.testing.assert_allclose(out.numpy(), x.numpy() @ w.numpy(), rtol=1e-12)


def test_chunk_size_gives_the_same_result():
    x = jitgrad.randn(7, 3, dtype=F64)
    f = vmap(lambda a: (a.exp() / a.exp().sum(), a.max()), chunk_size=3)
    a, b = f(x)
    e = np.exp(x.numpy())
    np.testing.assert_allclose(a.numpy(), e / e.sum(1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(b.numpy(), x.numpy().max(1))
    with pytest.raises(ValueError, match="chunk_size should be None or greater than 0"):
        vmap(lambda a: a, chunk_size=0)


def test_fallback_warns_once_and_is_right():
    batching._warned.discard("histc")  # (torch has no batching rule for histc either)
    x = jitgrad.randn(4, 3, 2, dtype=F64)
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        out = vmap(lambda t: jitgrad.histc(t, 4, -1, 1))(x)
        vmap(lambda t: jitgrad.histc(t, 4, -1, 1))(x)
    msgs = [str(w.message) for w in ws if "performance drop" in str(w.message)]
    assert msgs == ["There is a performance drop because we have not yet implemented the "
                    "batching rule for aten::histc. Please file us an issue on GitHub so "
                    "that we can prioritize its implementation."]
    want = [np.histogram(s, 4, (-1, 1))[0] for s in x.numpy()]
    np.testing.assert_allclose(out.numpy(), want)


def test_randomness_modes():
    x = jitgrad.zeros(4, 3)
    with pytest.raises(RuntimeError, match="vmap: called random operation while in randomness "
                                           "error mode"):
        vmap(lambda t: t + jitgrad.rand(3))(x)
    same = vmap(lambda t: t + jitgrad.rand(3), randomness="same")(x).numpy()
    assert np.all(same == same[0]) and np.all((same >= 0) & (same < 1))
    diff = vmap(lambda t: t + jitgrad.randn(3), randomness="different")(x).numpy()
    assert not np.allclose(diff[0], diff[1])
    jitgrad.manual_seed(3)
    a = vmap(lambda t: t + jitgrad.rand(3), randomness="different")(x).numpy()
    jitgrad.manual_seed(3)
    b = jitgrad.rand(4, 3).numpy()
    np.testing.assert_array_equal(a, b)  # one draw of the whole batch from the generator
    mean = jitgrad.arange(4.0).reshape(4, 1).expand(4, 3)
    for mode in ("same", "different"):
        z = vmap(lambda m: jitgrad.normal(m, 1.0) - m, randomness=mode)(mean).numpy()
        assert np.allclose(z, z[0]) == (mode == "same")
    with pytest.raises(RuntimeError, match="vmap: called random operation"):
        vmap(lambda m: jitgrad.normal(m, 1.0))(mean)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness are 'error', "
                                           "'different', or 'same'. Got x"):
        vmap(lambda t: t, randomness="x")


def test_errors_have_torchs_texts():
    x = jitgrad.randn(3, 4)

    def f(a, b):
        return a + b

    with pytest.raises(ValueError, match="vmap: Expected all tensors to have the same size in "
                                         r"the mapped dimension, got sizes \[3, 4\] for the "
                                         "mapped dimension"):
        vmap(f)(x, jitgrad.randn(4, 4))
    with pytest.raises(ValueError, match="in_dims is not compatible with the structure of "
                                         "`inputs`"):
        vmap(f, in_dims=(0,))(x, x)
    with pytest.raises(ValueError, match=r"Got in_dim=2 for some input, but that input is a "
                                         "Tensor of dimensionality 2 so expected in_dim to "
                                         "satisfy -2 <= in_dim < 2."):
        vmap(lambda a: a, in_dims=2)(x)
    with pytest.raises(ValueError, match="must only return Tensors, got type <class 'int'>"):
        vmap(lambda a: 3)(x)
    with pytest.raises(ValueError, match="We cannot vmap over non-Tensor arguments"):
        vmap(lambda a: a)(3)
    with pytest.raises(ValueError, match="expected `in_dims` to be int or a"):
        vmap(lambda a: a, in_dims=None)(x)
    with pytest.raises(RuntimeError, match=r"vmap: It looks like you're calling .item\(\)"):
        vmap(lambda a: a.sum().item())(x)


def test_inplace_inside_vmap():
    x = jitgrad.randn(3, 4, dtype=F64)
    y = x.clone()
    vmap(lambda a: a.mul_(2))(y)
    np.testing.assert_allclose(y.numpy(), x.numpy() * 2)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        vmap(lambda a, b: a.add_(b), in_dims=(None, 0))(jitgrad.ones(4, dtype=F64), x)


def test_jit_of_vmap_is_one_graph_of_batched_equations():
    w = jitgrad.randn(3, 4, dtype=F64)

    def loss(w, a):
        return ((a @ w).tanh() ** 2).sum()

    f = jit(vmap(grad(loss), in_dims=(None, 0)))
    counts = []
    for n in (2, 5, 16):
        x = jitgrad.randn(n, 3, dtype=F64)
        got = f(w, x)
        want = np.stack([grad(loss)(w, x[i]).numpy() for i in range(n)])
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)
        counts.append(len(f.lower(w, x).forward_graph.eqns))
    assert counts[0] == counts[1] == counts[2]  # no per-sample loop: independent of the batch


def test_vmap_of_jit_compiles_the_batched_function():
    f = jit(lambda a: (a.sin() * a).sum())
    x = jitgrad.randn(5, 3, dtype=F64, requires_grad=True)
    vf = vmap(f)
    out = vf(x)
    np.testing.assert_allclose(out.detach().numpy(), (np.sin(x.detach().numpy())
                                                      * x.detach().numpy()).sum(1))
    assert out.grad_fn.name() == "CompiledFunctionBackward"  # one compiled program
    out.sum().backward()
    xn = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(xn) * xn + np.sin(xn), rtol=1e-12)
    # inside another transform the jit function is inlined (it traces into the outer level)
    g = vmap(vmap(f))(x.detach().reshape(5, 3, 1))
    np.testing.assert_allclose(g.numpy(), np.sin(xn) * xn, rtol=1e-12)


def test_type_promotion_follows_the_samples_shapes():
    x = jitgrad.randn(3, dtype=jitgrad.float32)
    y = jitgrad.tensor(2.0, dtype=F64)
    assert vmap(lambda a: a + y)(x).dtype is F64  # two 0-d samples: float64, as the loop
    z = jitgrad.ones(2, dtype=jitgrad.float32)
    assert vmap(lambda a: a * z)(x.to(F64)).dtype is jitgrad.float32  # 0-d vs dimensioned


def test_vmap_of_grad_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.func import grad as tgrad
    from torch.func import vmap as tvmap

    w = np.random.default_rng(0).standard_normal((3, 4))
    x = np.random.default_rng(1).standard_normal((6, 3))

    def jl(w, a):
        return ((a @ w).relu() ** 2).mean()

    def tl(w, a):
        return ((a @ w).relu() ** 2).mean()

    got = vmap(grad(jl), in_dims=(None, 0))(jitgrad.tensor(w), jitgrad.tensor(x))
    want = tvmap(tgrad(tl), in_dims=(None, 0))(torch.tensor(w), torch.tensor(x))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_data_dependent_python_raises_torchs_texts():
    x = jitgrad.randn(3, 4)
    with pytest.raises(RuntimeError, match="vmap: It looks like you're attempting to use a "
                                           "Tensor in some data-dependent control flow"):
        vmap(lambda a: a if a.sum() > 0 else -a)(x)
    with pytest.raises(RuntimeError, match="Cannot access data pointer of Tensor that doesn't "
                                           "have storage"):
        vmap(lambda a: a.tolist())(x)


@pytest.mark.parametrize("rec,sample", [c for c in _cases() if c.values[0].differentiable])
def test_opdb_jacrev_equals_autograd_jacobian(rec, sample):
    """jacrev is vmap over vjp_fn: every op's VJP rule runs on batched cotangents."""
    from jitgrad.autograd.functional import jacobian
    from jitgrad.func import jacrev

    fn, inputs = _prepare(rec, sample)
    if not inputs:
        pytest.skip("no floating input to differentiate")

    def first(*ts):
        return next(o for o in fn(*ts) if o.dtype.is_floating_point)

    inputs = [x.detach() for x in inputs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        got = jacrev(first, argnums=tuple(range(len(inputs))))(*inputs)
    out = first(*inputs)
    if out.numel() == 0:  # (autograd.functional.jacobian raises here, as torch's does)
        want = [jitgrad.zeros(tuple(out.shape) + tuple(x.shape), dtype=x.dtype) for x in inputs]
    else:
        want = jacobian(first, tuple(inputs))
    _check_close(got, want, rec)


def test_indexing_and_index_assignment_batch_without_the_loop():
    x = jitgrad.randn(B, 5, 6, dtype=F64)
    v = jitgrad.randn(B, 2, 6, dtype=F64)
    i = jitgrad.tensor([0, 3])

    def put(a, b):
        a = a.clone()
        a[i] = b
        a[:, i] += b[:, 0].sum()
        return a[i, 1:], a[2, i]

    batching._warned.clear()
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        got = vmap(put)(x, v)
    assert not [w for w in ws if "performance drop" in str(w.message)]
    want = _loop(put, [x, v], (0, 0))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy())


def test_grad_jvp_vjp_inside_vmap_with_aux_and_argnums():
    from jitgrad.func import grad_and_value, jvp, vjp

    x = jitgrad.randn(4, 3, dtype=F64)
    w = jitgrad.randn(3, dtype=F64)
    xn, wn = x.numpy(), w.numpy()
    (gx, gw), aux = vmap(grad(lambda a, w: ((a * w).sum() ** 2, a.mean()), argnums=(0, 1),
                              has_aux=True), in_dims=(0, None))(x, w)
    s = (xn * wn).sum(1, keepdims=True)
    np.testing.assert_allclose(gx.numpy(), 2 * s * wn, rtol=1e-12)
    np.testing.assert_allclose(gw.numpy(), 2 * s * xn, rtol=1e-12)  # per sample
    np.testing.assert_allclose(aux.numpy(), xn.mean(1))
    one = jitgrad.ones(3, dtype=F64)
    _, t = vmap(lambda a: jvp(jitgrad.sin, (a,), (one,)))(x)
    np.testing.assert_allclose(t.numpy(), np.cos(xn), rtol=1e-12)
    g, v = vmap(grad_and_value(lambda a: (a ** 2).sum()))(x)
    np.testing.assert_allclose(g.numpy(), 2 * xn)
    np.testing.assert_allclose(v.numpy(), (xn ** 2).sum(1))

    def twice(a):  # vjp_fn called twice, with an unbatched and a batched cotangent
        _, fn = vjp(jitgrad.exp, a)
        return fn(one)[0] + fn(a)[0]

    np.testing.assert_allclose(vmap(twice)(x).numpy(), np.exp(xn) * (1 + xn), rtol=1e-12)


@pytest.mark.parametrize("in_dims", [(None, 0), (0, None), (0, 0)])
def test_embedding_batches_without_a_loop(in_dims):
    # a batched table becomes one table of every sample's rows; gradients reach each sample's
    # own table (checked against the per-sample loop)
    rng = np.random.default_rng(0)
    w = jitgrad.tensor(rng.standard_normal((B, 7, 4) if in_dims[0] == 0 else (7, 4)))
    idx = jitgrad.tensor(rng.integers(0, 7, (B, 2, 5) if in_dims[1] == 0 else (2, 5)))

    def f(weight, indices):
        return (jitgrad.nn.functional.embedding(indices, weight) ** 2).sum()

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback loop
        values = vmap(f, in_dims=in_dims)(w, idx)
        grads = vmap(grad(f), in_dims=in_dims)(w, idx)
    want = _loop(lambda a, b: (f(a, b), grad(f)(a, b)), [w, idx], in_dims)
    np.testing.assert_allclose(values.numpy(), want[0].numpy(), rtol=1e-12)
    np.testing.assert_allclose(grads.numpy(), want[1].numpy(), rtol=1e-12)


def test_embedding_with_padding_idx_and_a_batched_table_loops():
    w = jitgrad.randn(B, 6, 3, dtype=jitgrad.float64)
    idx = jitgrad.tensor([[0, 1, 2, 0]])

    def f(weight):
        return (jitgrad.nn.functional.embedding(idx, weight, padding_idx=0) ** 2).sum()

    batching._warned.discard("embedding")
    with pytest.warns(UserWarning, match="batching rule for aten::embedding"):
        grads = vmap(grad(f))(w)
    want = jitgrad.stack([grad(f)(w[b]) for b in range(B)])
    np.testing.assert_allclose(grads.numpy(), want.numpy(), rtol=1e-12)
    assert (grads[:, 0] == 0).all()  # the padding row gets no gradient


def test_debug_unwrap_matches_torch_func():
    """``func.debug_unwrap``: the batch a vmapped tensor stands for (every level, or only the
    innermost with ``recurse=False``); other tensors pass unchanged."""
    torch = pytest.importorskip("torch")
    shapes = {}
    for lib in (jitgrad, torch):
        seen = shapes[lib.__name__] = []

        def f(x, lib=lib, seen=seen):
            whole = lib.func.debug_unwrap(x)
            seen.append((tuple(whole.shape), tuple(lib.func.debug_unwrap(x, recurse=False).shape),
                         whole.sum().item()))
            return x * 2

        lib.func.vmap(lib.func.vmap(f))(lib.arange(24.0).reshape(3, 2, 4))
        plain = lib.ones(2)
        assert lib.func.debug_unwrap(plain) is plain
    assert shapes["jitgrad"] == shapes["torch"] == [((3, 2, 4), (2, 4), 276.0)]


def _spd(a):
    return a @ a.mT + jitgrad.eye(3, dtype=a.dtype)


LINALG_SINGLES = {
    "inv": jitgrad.linalg.inv, "inverse": jitgrad.inverse,
    "cholesky": lambda a: jitgrad.linalg.cholesky(_spd(a)), "pinv": jitgrad.linalg.pinv,
    "det": jitgrad.linalg.det, "slogdet": lambda a: jitgrad.linalg.slogdet(a)[1],
    "eigh": lambda a: jitgrad.linalg.eigh(_spd(a))[0], "svdvals": jitgrad.linalg.svdvals,
    "qr": lambda a: jitgrad.linalg.qr(a)[1].abs(), "matrix_exp": jitgrad.linalg.matrix_exp,
    "lu_factor": lambda a: jitgrad.linalg.lu_factor(a)[0],
    "eigvals": lambda a: jitgrad.linalg.eigvals(a).abs(),
    "svd": lambda a: jitgrad.linalg.svd(a)[1], "logdet": lambda a: jitgrad.logdet(_spd(a)),
}
LINALG_PAIRS = {
    "solve_vector": lambda a, v: jitgrad.linalg.solve(a, v[..., 0]),
    "solve": jitgrad.linalg.solve,
    "solve_right": lambda a, m: jitgrad.linalg.solve(a, m.mT, left=False),
    "solve_triangular": lambda a, m: jitgrad.linalg.solve_triangular(a.triu(), m, upper=True),
    "cholesky_solve": lambda a, m: jitgrad.cholesky_solve(m, jitgrad.linalg.cholesky(_spd(a))),
    "lu_solve": lambda a, m: jitgrad.linalg.lu_solve(*jitgrad.linalg.lu_factor(a), m),
    "lstsq": lambda a, m: jitgrad.linalg.lstsq(a, m).solution,
}


def _matrices():
    jitgrad.manual_seed(0)
    a = jitgrad.randn(5, 3, 3, dtype=jitgrad.float64) + 3 * jitgrad.eye(3, dtype=jitgrad.float64)
    return a, jitgrad.randn(5, 3, 2, dtype=jitgrad.float64)


@pytest.mark.parametrize("name", sorted(LINALG_SINGLES))
def test_vmap_of_linalg_batches_without_a_loop(name):
    """torch.linalg's ops take the batch dim as one more leading dim: no loop, no
    performance warning (an error here), the per-sample results."""
    f = LINALG_SINGLES[name]
    a, _ = _matrices()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = jitgrad.func.vmap(f)(a)
    np.testing.assert_allclose(out.numpy(), jitgrad.stack([f(m) for m in a]).numpy(),
                               atol=1e-10)


@pytest.mark.parametrize("in_dims", [(0, 0), (0, None), (None, 0)])
@pytest.mark.parametrize("name", sorted(LINALG_PAIRS))
def test_vmap_of_linalg_solvers_over_either_operand(name, in_dims):
    f = LINALG_PAIRS[name]
    a, rhs = _matrices()
    args = [a if in_dims[0] == 0 else a[0], rhs if in_dims[1] == 0 else rhs[0]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = jitgrad.func.vmap(f, in_dims=in_dims)(*args)
    expected = jitgrad.stack([f(args[0][i] if in_dims[0] == 0 else args[0],
                                args[1][i] if in_dims[1] == 0 else args[1]) for i in range(5)])
    np.testing.assert_allclose(out.numpy(), expected.numpy(), atol=1e-10)


def test_vmap_of_a_solve_whose_samples_are_batches_loops_correctly():
    a = jitgrad.randn(5, 2, 3, 3, dtype=jitgrad.float64) + 3 * jitgrad.eye(3,
                                                                        dtype=jitgrad.float64)
    v = jitgrad.randn(5, 3, dtype=jitgrad.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the loop's performance warning)
        out = jitgrad.func.vmap(jitgrad.linalg.solve)(a, v)
    expected = jitgrad.stack([jitgrad.linalg.solve(a[i], v[i]) for i in range(5)])
    np.testing.assert_allclose(out.numpy(), expected.numpy(), atol=1e-10)
