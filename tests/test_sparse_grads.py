"""Sparse gradients: ``Embedding(sparse=True)`` / ``EmbeddingBag(sparse=True)`` give the weight a
sparse COO ``.grad`` in torch's layout, the engine sums sparse gradients as torch's does, and
the optimizers that take them (SGD, Adagrad, SparseAdam) match torch's trajectories while the
others raise torch's errors."""

import warnings

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import gradcheck, gradgradcheck

F = jitgrad.nn.functional


def _torch():
    return pytest.importorskip("torch")


def _libs():
    return jitgrad, _torch()


def _layout(g):
    return (g._indices().tolist(), np.asarray(g._values().tolist()), g.is_coalesced(),
            tuple(g.shape))


def _same_grad(jg, tg):
    ji, jv, jc, js = _layout(jg)
    ti, tv, tc, ts = _layout(tg)
    assert (ji, jc, js) == (ti, tc, ts)
    np.testing.assert_allclose(jv, tv, rtol=1e-6)


# ---------------------------------------------------------------- the weight's gradient


def test_embedding_sparse_grad_is_torchs_layout():
    for lib in _libs():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            e = lib.nn.Embedding(5, 3, sparse=True, padding_idx=1)
            out = e(lib.tensor([[0, 2, 1], [2, 4, 0]]))
            (out * lib.arange(18.0).reshape(2, 3, 3)).sum().backward()
        if lib is jitgrad:
            jg = e.weight.grad
        else:
            tg = e.weight.grad
    assert isinstance(jg, jitgrad.Tensor) and jg.layout is jitgrad.sparse_coo and jg.is_sparse
    assert jg.grad_fn is None and not jg.requires_grad
    assert _layout(jg)[0] == [[0, 2, 2, 4, 0]]  # one entry per lookup, the padding one left out
    _same_grad(jg, tg)
    assert repr(jg) == repr(tg).replace("torch", "jitgrad")


def test_embedding_bag_sparse_grads_match_torch():
    cases = [dict(mode="mean", args=([0, 1, 1, 3], [0, 3])),
             dict(mode="sum", padding_idx=1, args=([[0, 1], [1, 3]],)),
             dict(mode="sum", args=([[0, 1], [1, 3]],), psw=[[1.0, 2.0], [3.0, 4.0]])]
    for case in cases:
        grads = []
        for lib in _libs():
            lib.manual_seed(0)
            bag = lib.nn.EmbeddingBag(5, 2, sparse=True, mode=case["mode"],
                                      padding_idx=case.get("padding_idx"))
            with lib.no_grad():
                bag.weight.copy_(lib.arange(10.0).reshape(5, 2))
            args = [lib.tensor(a) for a in case["args"]]
            kw = {"per_sample_weights": lib.tensor(case["psw"])} if "psw" in case else {}
            bag(*args, **kw).pow(2).sum().backward()
            grads.append(bag.weight.grad)
        _same_grad(*grads)


def test_accumulation_follows_torch():
    """Sparse gradients are summed as torch's sparse add (in one backward: the later-arriving
    first; entries concatenated where values are an expanded gradient's, else merged), a
    second backward merges into .grad; with a dense one, dense."""
    results = {}
    for lib in _libs():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            w = lib.tensor(np.ones((5, 2)), requires_grad=True)
            emb = lib.nn.functional.embedding
            x = emb(lib.tensor([0, 2, 2, 4, 0]), w, sparse=True).sum()
            y = emb(lib.tensor([2, 0]), w, sparse=True).mul(10).sum()
            (y + x).backward()
            one = _layout(w.grad)
            emb(lib.tensor([3, 2]), w, sparse=True).mul(100).sum().backward()
            merged = w.grad
            w.grad = None
            (emb(lib.tensor([1]), w, sparse=True).sum() + w.sum()).backward()
            mixed = w.grad
            emb(lib.tensor([1]), w, sparse=True).sum().backward()  # dense .grad += sparse
            dense_acc = w.grad
        results[lib] = (one, _layout(merged), mixed.layout, mixed.tolist(),
                        dense_acc.tolist())
    j, t = results[jitgrad], results[_torch()]
    for a, b in zip(j[:2], t[:2]):
        assert a[0] == b[0] and a[2] == b[2]
        np.testing.assert_allclose(a[1], b[1])
    assert j[0][0] == [[0, 2, 2, 4, 0, 2, 0]] and not j[0][2]
    assert j[2] is jitgrad.strided and j[3:] == t[3:]


def test_sparse_grad_then_dense_stays_dense_and_sparse_into_dense_in_place():
    w = jitgrad.ones(4, 2, requires_grad=True)
    (w * 2).sum().backward()
    g = w.grad
    F.embedding(jitgrad.tensor([1, 1]), w, sparse=True).sum().backward()
    assert w.grad is g and g.layout is jitgrad.strided  # (added in place)
    assert g.tolist() == [[2, 2], [4, 4], [2, 2], [2, 2]]
    w.grad = None
    F.embedding(jitgrad.tensor([3]), w, sparse=True).sum().backward()
    (w * 2).sum().backward()  # sparse .grad + dense: a new dense .grad
    assert w.grad.layout is jitgrad.strided and type(w.grad) is jitgrad.Tensor
    assert w.grad.tolist() == [[2, 2], [2, 2], [2, 2], [3, 3]]


def test_hooks_and_autograd_grad_see_sparse():
    w = jitgrad.randn(5, 2, requires_grad=True)
    seen = []
    h = w.register_hook(lambda g: seen.append(g.layout))
    F.embedding(jitgrad.tensor([1, 3]), w, sparse=True).sum().backward()
    h.remove()
    assert seen == [jitgrad.sparse_coo] and w.grad.is_sparse
    post = []
    w.register_post_accumulate_grad_hook(lambda p: post.append(p.grad.layout))
    F.embedding(jitgrad.tensor([0]), w, sparse=True).sum().backward()
    assert post == [jitgrad.sparse_coo]
    (g,) = jitgrad.autograd.grad(F.embedding(jitgrad.tensor([1]), w, sparse=True).sum(), w)
    assert g.layout is jitgrad.sparse_coo and g._indices().tolist() == [[1]]


def test_sparse_grad_zero_and_zero_grad():
    w = jitgrad.nn.Parameter(jitgrad.randn(5, 2))
    opt = jitgrad.optim.SGD([w], lr=0.1)
    F.embedding(jitgrad.tensor([0, 2]), w, sparse=True).sum().backward()
    g = w.grad
    opt.zero_grad(set_to_none=False)
    assert w.grad is g and g.is_sparse and g._nnz() == 0 and g.shape == (5, 2)
    F.embedding(jitgrad.tensor([4]), w, sparse=True).sum().backward()
    assert w.grad._indices().tolist() == [[4]]
    opt.zero_grad()
    assert w.grad is None


def test_sparse_embedding_gradcheck_float64():
    w = jitgrad.randn(5, 3, dtype=jitgrad.float64, requires_grad=True)
    idx = jitgrad.tensor([[0, 4], [4, 1]])
    assert gradcheck(lambda w: F.embedding(idx, w, sparse=True), (w,))
    assert gradgradcheck(lambda w: F.embedding(idx, w, sparse=True, padding_idx=4) ** 2, (w,))


def test_scale_grad_by_freq_with_sparse_is_refused_in_backward():
    e = jitgrad.nn.Embedding(5, 3, sparse=True, scale_grad_by_freq=True)
    out = e(jitgrad.tensor([1, 1, 2]))
    with pytest.raises(RuntimeError, match="embedding_backward: scale_grad_by_freq not "
                                           "supported with sparse gradients"):
        out.sum().backward()


# ---------------------------------------------------------------- optimizers


def _train(lib, opt_name, kw, steps=5, dtype="float64"):
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((8, 3))
    emb = lib.nn.Embedding(8, 3, sparse=True,
                           _weight=lib.tensor(w0.copy(), dtype=getattr(lib, dtype)))
    head = lib.nn.Linear(3, 1, dtype=getattr(lib, dtype))
    with lib.no_grad():
        head.weight.copy_(lib.tensor(rng.standard_normal((1, 3))))
        head.bias.zero_()
    opt = getattr(lib.optim, opt_name)(emb.parameters(), **kw)
    for _ in range(steps):
        idx = lib.tensor(rng.integers(0, 8, size=(2, 4)))
        target = lib.tensor(rng.standard_normal((2, 4, 1)), dtype=getattr(lib, dtype))
        opt.zero_grad()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loss = ((head(emb(idx)) - target) ** 2).mean()
            loss.backward()
            opt.step()
    return emb.weight.detach().numpy().copy()


@pytest.mark.parametrize("opt_name,kw", [
    ("SparseAdam", dict(lr=0.05)),
    ("SparseAdam", dict(lr=0.05, betas=(0.8, 0.99), maximize=True)),
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.1, momentum=0.5, dampening=0.3, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, initial_accumulator_value=0.1)),
])
def test_training_loop_matches_torch(opt_name, kw):
    torch = _torch()
    np.testing.assert_allclose(_train(jitgrad, opt_name, kw), _train(torch, opt_name, kw),
                               rtol=1e-10, atol=1e-12)


def test_sparse_adam_leaves_other_rows_and_refuses_dense():
    w0 = np.arange(12.0).reshape(4, 3)
    w = jitgrad.nn.Parameter(jitgrad.tensor(w0))
    opt = jitgrad.optim.SparseAdam([w], lr=0.1)
    F.embedding(jitgrad.tensor([2, 2]), w, sparse=True).sum().backward()
    opt.step()
    after = w.detach().numpy()
    np.testing.assert_array_equal(after[[0, 1, 3]], w0[[0, 1, 3]])
    np.testing.assert_allclose(after[2], w0[2] - 0.1)  # (Adam's first step: lr * sign)
    assert opt.state[w]["step"] == 1
    w.grad = jitgrad.ones(4, 3, dtype=jitgrad.float64)
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients, "
                                           "please consider Adam instead"):
        opt.step()


@pytest.mark.parametrize("name,kw", [
    ("Adam", {}), ("AdamW", {}), ("RMSprop", {}), ("Adadelta", {}), ("Adamax", {}),
    ("NAdam", {}), ("RAdam", {}), ("ASGD", {}), ("Rprop", {}), ("Adafactor", {}),
    ("SGD", dict(weight_decay=0.1)), ("Adagrad", dict(weight_decay=0.1)),
])
def test_optimizer_errors_match_torch(name, kw):
    texts = []
    for lib in _libs():
        w = lib.nn.Parameter(lib.randn(5, 2))
        lib.nn.functional.embedding(lib.tensor([0, 2]), w, sparse=True).sum().backward()
        with pytest.raises(RuntimeError) as info, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            getattr(lib.optim, name)([w], lr=0.1, **kw).step()
        texts.append(str(info.value))
    assert texts[0] == texts[1]


def test_clip_grad_norm_with_sparse_grad_raises_as_torch():
    texts = []
    for lib in _libs():
        w = lib.nn.Parameter(lib.randn(5, 2))
        lib.nn.functional.embedding(lib.tensor([0, 2]), w, sparse=True).sum().backward()
        for foreach in (None, False):
            with pytest.raises(NotImplementedError) as info:
                lib.nn.utils.clip_grad_norm_([w], 0.5, foreach=foreach)
            texts.append(str(info.value).split(". This")[0])
    assert texts[:2] == texts[2:]
    assert texts[0] == ("Could not run 'aten::linalg_vector_norm' with arguments from the "
                        "'SparseCPU' backend")


def test_engine_sum_merges_contiguous_gradients_as_torch():
    """Two sparse gradients of a custom Function, coalesced or not, summed in one backward."""
    results = {}
    for lib in _libs():
        def fn(idx, val, coal, lib=lib):
            class Fn(lib.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return x.sum()

                @staticmethod
                def backward(ctx, g):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        s = lib.sparse_coo_tensor(lib.tensor([idx]), lib.tensor(val), (5,))
                    return s.coalesce() if coal else s

            return Fn.apply

        out = []
        for c1 in (True, False):
            for c2 in (True, False):
                w = lib.zeros(5, requires_grad=True)
                (fn([3, 1], [1.0, 2.0], c1)(w) + fn([1, 0], [10.0, 20.0], c2)(w)).backward()
                out.append((w.grad._indices().tolist(), w.grad._values().tolist()))
        results[lib] = out
    assert results[jitgrad] == results[_torch()]
    assert results[jitgrad][0] == ([[0, 1, 3]], [20.0, 12.0, 1.0])


@pytest.mark.parametrize("n", [50, 3000])  # (3000 + 3000 entries: the compiled pass)
def test_sparse_add_of_uncoalesced_is_torchs_merge(n):
    _torch()
    rng = np.random.default_rng(n)
    ia, ib = rng.integers(0, 40, (1, n)), rng.integers(0, 40, (1, n))
    va, vb = rng.standard_normal((n, 2)), rng.standard_normal((n, 2))
    out = []
    for lib in _libs():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = lib.sparse_coo_tensor(lib.tensor(ia), lib.tensor(va), (40, 2))
            b = lib.sparse_coo_tensor(lib.tensor(ib), lib.tensor(vb), (40, 2))
            c = a + b
        out.append((c._indices().tolist(), np.asarray(c._values().tolist())))
    assert out[0][0] == out[1][0]
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-12)


def test_jit_refuses_sparse_embedding_with_a_clear_error():
    emb = jitgrad.nn.Embedding(5, 2, sparse=True)
    f = jitgrad.jit.jit(lambda w, idx: jitgrad.nn.functional.embedding(idx, w, sparse=True).sum(),
                        backend="interpreter")
    with pytest.raises(NotImplementedError, match=r"embedding\(\.\.\., sparse=True\)"):
        f(emb.weight, jitgrad.tensor([1, 2]))


def test_sparse_embedding_forward_ad():
    fw = jitgrad.autograd.forward_ad
    w = jitgrad.randn(5, 2)
    with fw.dual_level():
        d = fw.make_dual(w, jitgrad.arange(10.0).reshape(5, 2))
        out = F.embedding(jitgrad.tensor([1, 2]), d, sparse=True)
        assert fw.unpack_dual(out).tangent.tolist() == [[2.0, 3.0], [4.0, 5.0]]


@pytest.mark.parametrize("case", range(6))
def test_sparse_index_select_as_torch(case):
    """index_select of a COO tensor (NotImplementedError before): per index position the
    entries at that index in stored order, renumbered, not coalesced; dense dims slice the
    values. Compared with torch's indices, values and flags."""
    torch = pytest.importorskip("torch")

    def run(lib):
        s = lib.sparse_coo_tensor(lib.tensor([[3, 1, 1, 0], [0, 2, 1, 1]]),
                                  lib.tensor([1.0, 2.0, 3.0, 4.0]), (4, 3), check_invariants=False)
        h = lib.sparse_coo_tensor(lib.tensor([[2, 0]]), lib.tensor([[1.0, 2.0], [3.0, 4.0]]),
                                  (3, 2), check_invariants=False)
        x, dim, idx = [(s, 0, [1, 3, 1]), (s, 1, [2, 0]), (s, 0, []), (s.coalesce(), 0, [3, 1]),
                       (h, 1, [1, 1, 0]), (h, 0, [0, 2])][case]
        r = x.index_select(dim, lib.tensor(idx, dtype=lib.long))
        return (r._indices().tolist(), r._values().tolist(), r.is_coalesced(), tuple(r.shape))

    assert run(jitgrad) == run(torch)


def test_sparse_index_select_of_a_coalesced_tensor_is_differentiable():
    values = jitgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    s = jitgrad.sparse_coo_tensor(jitgrad.tensor([[0, 1, 3]]), values, (4,)).coalesce()
    r = s.index_select(0, jitgrad.tensor([3, 3, 0]))
    (r.to_dense() * jitgrad.tensor([1.0, 10.0, 100.0])).sum().backward()
    assert values.grad.tolist() == [100.0, 0.0, 11.0]


def test_sparse_coo_tensor_of_a_size_and_hybrid_mm_errors_as_torch():
    """torch's second signature, sparse_coo_tensor(size) (a TypeError before), calls fitting
    no signature (torch's argument-parser text, jitgrad for torch), and mm of a hybrid tensor
    (torch's addmm error; jitgrad's own text before)."""
    torch = pytest.importorskip("torch")

    def run(lib):
        out = []
        for make in (lambda: lib.sparse_coo_tensor((3, 3)),
                     lambda: lib.sparse_coo_tensor(size=(2, 2), dtype=lib.float64),
                     lambda: lib.sparse_coo_tensor([2], requires_grad=True),
                     lambda: lib.sparse_coo_tensor(),
                     lambda: lib.sparse_coo_tensor(lib.tensor([[0]]), size=(2,)),
                     lambda: lib.sparse.mm(lib.sparse_coo_tensor(
                         lib.tensor([[0, 2]]), lib.ones(2, 3), (4, 3)), lib.ones(3, 2))):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    r = make()
                except Exception as e:  # noqa: BLE001 - compared with torch's below
                    out.append((type(e).__name__, str(e).replace("jitgrad", "torch")))
                    continue
            out.append((tuple(r.shape), r._nnz(), r.sparse_dim(), str(r.dtype).split(".")[1],
                        r.requires_grad, r.is_sparse))
        return out

    assert run(jitgrad) == run(torch)
