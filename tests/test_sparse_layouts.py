"""The compressed sparse layouts beyond CSR: CSC, BSR and BSC (and CSR through the same code):
conversions round-trip against torch, constructors, inspection, printing, matmul with a dense
tensor, transposition, gradients and torch's errors."""

import io
import pickle
import warnings

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import gradcheck

DENSE = [[0.0, 1.0, 0.0, 0.0], [2.0, 0.0, 0.0, 3.0], [0.0, 0.0, 0.0, 0.0], [4.0, 5.0, 0.0, 6.0]]
CONVERSIONS = [("to_sparse_csr", ()), ("to_sparse_csc", ()), ("to_sparse_bsr", ((2, 2),)),
               ("to_sparse_bsc", ((2, 2),)), ("to_sparse_bsr", ((1, 2),)),
               ("to_sparse_bsc", ((4, 1),)), ("to_sparse_bsr", (2,))]


def _torch():
    return pytest.importorskip("torch")


def _parts(s):
    """The indices and values of a compressed tensor, named by its layout."""
    rowwise = str(s.layout).endswith(("csr", "bsr"))
    major = s.crow_indices() if rowwise else s.ccol_indices()
    minor = s.col_indices() if rowwise else s.row_indices()
    return major.tolist(), minor.tolist(), s.values().tolist()


@pytest.mark.parametrize("method,args", CONVERSIONS)
def test_dense_conversion_matches_torch(method, args):
    torch = _torch()
    j = getattr(jitgrad.tensor(DENSE), method)(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = getattr(torch.tensor(DENSE), method)(*args)
    assert str(j.layout).split(".")[-1] == str(t.layout).split(".")[-1]
    assert _parts(j) == _parts(t)
    assert j.shape == tuple(t.shape) and j._nnz() == t._nnz()
    assert j.sparse_dim() == 2 and j.dense_dim() == 0 and not j.is_sparse
    assert j.is_sparse_csr == (method == "to_sparse_csr")
    np.testing.assert_array_equal(j.to_dense().numpy(), DENSE)
    assert repr(j) == repr(t).replace("torch", "jitgrad")
    coo = j.to_sparse()
    assert coo.layout is jitgrad.sparse_coo
    assert coo._indices().tolist() == t.to_sparse()._indices().tolist()
    np.testing.assert_array_equal(coo.to_dense().numpy(), DENSE)


@pytest.mark.parametrize("source", ["coo", "csr", "csc"])
@pytest.mark.parametrize("method,args", CONVERSIONS[1:4])
def test_sparse_to_compressed_matches_torch(source, method, args):
    torch = _torch()
    results = []
    for lib in (jitgrad, torch):
        d = lib.tensor(DENSE)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = d.to_sparse() if source == "coo" else getattr(d, f"to_sparse_{source}")()
            results.append(_parts(getattr(s, method)(*args)))
    assert results[0] == results[1]


def test_layouts_and_to_sparse_layout_argument():
    d = jitgrad.tensor(DENSE)
    assert d.to_sparse_csc().layout is jitgrad.sparse_csc
    assert d.to_sparse_bsr((2, 2)).layout is jitgrad.sparse_bsr
    assert d.to_sparse_bsc((2, 2)).layout is jitgrad.sparse_bsc
    assert repr(jitgrad.sparse_bsc) == "jitgrad.sparse_bsc"
    s = d.to_sparse(layout=jitgrad.sparse_bsr, blocksize=(2, 2))
    assert s.layout is jitgrad.sparse_bsr and s.values().shape == (4, 2, 2)
    assert d.to_sparse(layout=jitgrad.sparse_csc).layout is jitgrad.sparse_csc
    assert d.to_sparse_bsr((2, 2)).to_sparse_bsr((2, 2)).layout is jitgrad.sparse_bsr


def test_constructors_match_torch():
    torch = _torch()
    cases = [
        ("sparse_csc_tensor", ([0, 2, 3, 3, 5], [1, 3, 0, 1, 3], [2.0, 4, 1, 3, 6]), (4, 4)),
        ("sparse_csc_tensor", ([0, 2, 3, 3, 5], [1, 3, 0, 1, 3], [2.0, 4, 1, 3, 6]), None),
        ("sparse_bsr_tensor", ([0, 1, 3], [0, 0, 1], np.arange(12.0).reshape(3, 2, 2)), (4, 4)),
        ("sparse_bsr_tensor", ([0, 1, 3], [0, 0, 1], np.arange(12.0).reshape(3, 2, 2)), None),
        ("sparse_bsc_tensor", ([0, 1, 3], [0, 0, 1], np.arange(12.0).reshape(3, 2, 2)), (4, 4)),
        ("sparse_bsr_tensor", ([0, 1, 2], [1, 0], np.arange(12.0).reshape(2, 2, 3)), (4, 6)),
    ]
    for name, (ci, pi, v), size in cases:
        out = []
        for lib in (jitgrad, torch):
            args = (lib.tensor(ci), lib.tensor(pi), lib.tensor(v))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                s = getattr(lib, name)(*args, size) if size else getattr(lib, name)(*args)
            out.append((tuple(s.shape), s.to_dense().tolist(), str(s.layout).split(".")[-1]))
        assert out[0] == out[1], name
    s = jitgrad.sparse_compressed_tensor(jitgrad.tensor([0, 1, 3]), jitgrad.tensor([0, 0, 1]),
                                         jitgrad.ones(3, 2, 2), (4, 4), layout=jitgrad.sparse_bsc)
    assert s.layout is jitgrad.sparse_bsc and s.to_dense().sum().item() == 12


def test_constructor_errors_match_torch_check_invariants():
    torch = _torch()
    bad = [
        ("sparse_csc_tensor", [1, 2, 3, 3, 5], [1, 3, 0, 1, 3], [2.0, 4, 1, 3, 6], (4, 4)),
        ("sparse_csc_tensor", [0, 2, 3, 3, 4], [1, 3, 0, 1, 3], [2.0, 4, 1, 3, 6], (4, 4)),
        ("sparse_csc_tensor", [0, 2, 3, 3, 5], [1, 3, 0, 1, 9], [2.0, 4, 1, 3, 6], (4, 4)),
        ("sparse_csc_tensor", [0, 2, 3, 5], [1, 3, 0, 1, 3], [2.0, 4, 1, 3, 6], (4, 4)),
        ("sparse_csc_tensor", [0, 2, 1, 3, 5], [1, 3, 0, 1, 3], [2.0, 4, 1, 3, 6], (4, 4)),
        ("sparse_csc_tensor", [0, 2, 3, 3, 5], [1, 3, 0, 1, 3], [2.0, 4, 1, 3], (4, 4)),
        ("sparse_bsr_tensor", [0, 1, 3], [0, 0, 1], np.ones((3, 2, 2)), (4, 5)),
        ("sparse_bsr_tensor", [0, 1, 3], [0, 0, 2], np.ones((3, 2, 2)), (4, 4)),
        ("sparse_bsr_tensor", [0, 1, 3], [0, 0, 1], np.ones(3), (4, 4)),
        ("sparse_bsc_tensor", [0, 1, 4], [0, 0, 1], np.ones((3, 2, 2)), (4, 4)),
    ]
    for name, ci, pi, v, size in bad:
        texts = []
        for lib, kw in ((jitgrad, {}), (torch, {"check_invariants": True})):
            with pytest.raises(RuntimeError) as info, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                getattr(lib, name)(lib.tensor(ci), lib.tensor(pi), lib.tensor(v), size, **kw)
            texts.append(str(info.value))
        assert texts[0] == texts[1], (name, ci, pi)
    for layout in (None, "coo"):
        texts = []
        for lib in (jitgrad, torch):
            lay = None if layout is None else lib.sparse_coo
            with pytest.raises(RuntimeError) as info:
                lib.sparse_compressed_tensor(lib.tensor([0, 1]), lib.tensor([0]), lib.ones(1),
                                             (1, 1), layout=lay)
            texts.append(str(info.value))
        assert texts[0] == texts[1]


def test_conversion_and_accessor_errors_match_torch():
    torch = _torch()
    cases = [
        lambda L: L.tensor(DENSE).to_sparse_bsr((3, 2)),
        lambda L: L.tensor(DENSE).to_sparse_bsc((3, 2)),
        lambda L: L.tensor(DENSE).to_sparse().to_sparse_bsr((3, 2)),
        lambda L: L.tensor(DENSE).to_sparse_csr().to_sparse_bsr((3, 2)),
        lambda L: L.tensor(DENSE).to_sparse_bsr((2, 2)).to_sparse_bsr((1, 1)),
        lambda L: L.tensor(DENSE).to_sparse_bsr((2, 2)).to_sparse_bsc((1, 1)),
        lambda L: L.tensor(DENSE).to_sparse_bsr((2, 2)).to_sparse_csr(),
        lambda L: L.tensor(DENSE).to_sparse_bsc((2, 2)).to_sparse_csc(),
        lambda L: L.tensor(DENSE).to_sparse_csc().crow_indices(),
        lambda L: L.tensor(DENSE).to_sparse_bsr((2, 2)).ccol_indices(),
        lambda L: L.tensor(DENSE).to_sparse_bsc((2, 2)).row_indices() + L.tensor(DENSE)
        .to_sparse_csr().row_indices(),
        lambda L: L.tensor(DENSE).to_sparse_csc().indices(),
        lambda L: L.tensor(DENSE).to_sparse_bsc((2, 2)) @ L.ones(4, 2),
        lambda L: L.tensor(DENSE).to_sparse_bsc((2, 2)) @ L.ones(4),
        lambda L: L.ones(4).to_sparse_bsr((2, 2)),
    ]
    for case in cases:
        errors = []
        for lib in (jitgrad, torch):
            with pytest.raises((RuntimeError, IndexError, TypeError)) as info, \
                    warnings.catch_warnings():
                warnings.simplefilter("ignore")
                case(lib)
            errors.append((type(info.value), str(info.value)))
        assert errors[0] == errors[1]
    with pytest.raises(TypeError, match='missing 1 required positional arguments: "blocksize"'):
        jitgrad.tensor(DENSE).to_sparse_bsr()


def _product(lib, how, s, d):
    if how == "mm":
        return lib.mm(s, d)
    if how == "matmul":
        return lib.matmul(s, d)
    if how == "sparse.mm":
        return lib.sparse.mm(s, d)
    return s @ d if how == "at" else s @ lib.ones(4)


@pytest.mark.parametrize("method,args", [CONVERSIONS[i] for i in (0, 1, 2, 6)])
def test_matmul_with_dense_matches_torch(method, args):
    torch = _torch()
    x = np.arange(8.0).reshape(4, 2).tolist()
    for lib_out in ("mm", "matmul", "at", "sparse.mm", "mv"):
        res = []
        for lib in (jitgrad, torch):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = _product(lib, lib_out, getattr(lib.tensor(DENSE), method)(*args),
                             lib.tensor(x))
            assert r.layout is lib.strided
            res.append(r.tolist())
        assert res[0] == res[1]


def test_transpose_swaps_orientation_as_torch():
    torch = _torch()
    for method, args in CONVERSIONS[:4]:
        out = []
        for lib in (jitgrad, torch):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = getattr(lib.tensor(DENSE), method)(*args).t()
            out.append((str(t.layout).split(".")[-1], _parts(t), t.to_dense().tolist()))
        assert out[0] == out[1]
    assert out[0][2] == np.array(DENSE).T.tolist()


def test_values_ops_keep_the_layout():
    s = jitgrad.tensor(DENSE).to_sparse_bsr((2, 2))
    for r in (s * 2, s.abs(), -s, s.to(jitgrad.float64), s.clone()):
        assert r.layout is jitgrad.sparse_bsr and r.values().shape == (4, 2, 2)
    np.testing.assert_array_equal((s * 2).to_dense().numpy(), np.array(DENSE) * 2)
    assert (s * 2).crow_indices().tolist() == [0, 2, 4]
    c = jitgrad.tensor(DENSE).to_sparse_csc()
    assert (c * 3).layout is jitgrad.sparse_csc and c.sum().item() == 21.0


def test_gradients_through_compressed_layouts():
    torch = _torch()
    x = np.arange(8.0).reshape(4, 2).tolist()
    grads = []
    for lib in (jitgrad, torch):
        v = lib.tensor([2.0, 4, 1, 3, 6], requires_grad=True)
        c = lib.sparse_csc_tensor(lib.tensor([0, 2, 3, 3, 5]), lib.tensor([1, 3, 0, 1, 3]), v,
                                  (4, 4))
        b_vals = lib.ones(3, 2, 2, requires_grad=True)
        b = lib.sparse_bsr_tensor(lib.tensor([0, 1, 3]), lib.tensor([0, 0, 1]), b_vals, (4, 4))
        ((c @ lib.tensor(x)).sum() + (b @ lib.tensor(x)).pow(2).sum()).backward()
        w = lib.tensor(DENSE, requires_grad=True)
        (w.to_sparse_csc().to_dense() * lib.arange(16.0).reshape(4, 4)).sum().backward()
        grads.append((v.grad.tolist(), b_vals.grad.tolist(), w.grad.tolist()))
    assert grads[0] == grads[1]
    vals = jitgrad.tensor(np.random.default_rng(0).standard_normal((3, 2, 2)),
                          requires_grad=True)
    d = jitgrad.tensor(np.random.default_rng(1).standard_normal((4, 3)))

    def f(v):
        s = jitgrad.sparse_bsc_tensor(jitgrad.tensor([0, 1, 3]), jitgrad.tensor([0, 0, 1]), v,
                                      (4, 4))
        return s.t() @ d

    assert gradcheck(f, (vals,))


def test_save_load_and_pickle_keep_the_layout():
    for s in (jitgrad.tensor(DENSE).to_sparse_csc(), jitgrad.tensor(DENSE).to_sparse_bsc(2)):
        buf = io.BytesIO()
        jitgrad.save(s, buf)
        buf.seek(0)
        for back in (jitgrad.load(buf), pickle.loads(pickle.dumps(s))):
            assert back.layout is s.layout and _parts(back) == _parts(s)


def test_grad_fn_names_are_torchs():
    torch = _torch()
    exprs = ["d.to_sparse_csr()", "d.to_sparse_csc()", "d.to_sparse_bsr(2)", "d.to_sparse_bsc(2)",
             "d.to_sparse().to_sparse_csc()", "d.to_sparse_csr().to_sparse()",
             "d.to_sparse().to_sparse_bsr(2)", "d.to_sparse_bsr(2).t()",
             "d.to_sparse_csc().to_dense()"]
    for expr in exprs:
        names = []
        for lib in (jitgrad, torch):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = eval(expr, {"d": lib.tensor(DENSE, requires_grad=True)})
            names.append(out.grad_fn.name())
        assert names[0] == names[1], expr


def test_csr_sum_and_product_stay_csr_as_torch():
    torch = _torch()
    other = [[1.0, 0, 0, 0], [0, 0, 0, 3], [0, 7, 0, 0], [0, 0, 0, 6]]
    out = []
    for lib in (jitgrad, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a, b = lib.tensor(DENSE).to_sparse_csr(), lib.tensor(other).to_sparse_csr()
            out.append([(str(r.layout).split(".")[-1], _parts(r)) for r in (a + b, a * b)])
    assert out[0] == out[1]
    v = jitgrad.tensor([1.0, 2.0], requires_grad=True)
    a = jitgrad.sparse_csr_tensor(jitgrad.tensor([0, 1, 2]), jitgrad.tensor([0, 1]), v, (2, 2))
    ((a + a) * a).to_dense().sum().backward()
    assert v.grad.tolist() == [4.0, 8.0]  # d(2 v^2)/dv


def test_constructors_warn_while_invariant_checks_are_implicit(monkeypatch):
    """torch 2.13's once-per-process warning from sparse_coo_tensor and the compressed
    constructors while check_sparse_tensor_invariants was never set (not from the legacy
    constructors, to_sparse or SparseAdam's grad.new); none once it was set, whichever way."""
    torch = pytest.importorskip("torch")
    from jitgrad.sparse import _invariants

    monkeypatch.setattr(_invariants, "_STATE", [None])
    prior_torch = torch._C._check_sparse_tensor_invariants()

    def messages(lib):
        out = []
        idx, val = lib.tensor([[0, 1]]), lib.ones(2)
        makers = [lambda: lib.sparse_coo_tensor(idx, val, (3,)),
                  lambda: lib.sparse_coo_tensor(idx, val, (3,), check_invariants=False),
                  lambda: lib.sparse_csr_tensor(lib.tensor([0, 1, 2]), lib.tensor([0, 1]),
                                                lib.ones(2), (2, 2)),
                  lambda: lib.ones(3).to_sparse(),
                  lambda: lib.sparse.check_sparse_tensor_invariants.is_enabled()]
        for make in makers:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                make()
            out.append([(w.filename, str(w.message).split(" (Triggered")[0].strip())
                        for w in caught if "invariant" in str(w.message)])
        return out

    # torch's flag cannot be unset once set: its implicit state is compared only if this
    # process has not set it (the test first asks jitgrad, then torch, for that reason)
    jitgrad.set_warn_always(True)
    try:
        ours = messages(jitgrad)
    finally:
        jitgrad.set_warn_always(False)
    assert ours[0] and ours[0][0][0] == __file__ and ours[2] == ours[0]
    assert ours[1] == ours[3] == ours[4] == []
    assert ours[0][0][1].startswith("Sparse invariant checks are implicitly disabled.")
    with jitgrad.sparse.check_sparse_tensor_invariants(enable=False):
        assert not jitgrad.sparse.check_sparse_tensor_invariants.is_enabled()
    assert _invariants._STATE[0] is False  # (torch restores is_enabled(): now set)
    jitgrad.sparse.check_sparse_tensor_invariants.enable()
    assert jitgrad.sparse.check_sparse_tensor_invariants.is_enabled()
    jitgrad.set_warn_always(True)
    try:
        assert messages(jitgrad) == [[]] * 5  # (explicitly set: no warning)
    finally:
        jitgrad.set_warn_always(False)
    if not prior_torch:
        torch.set_warn_always(True)
        try:
            theirs = messages(torch)
        finally:
            torch.set_warn_always(False)
        if theirs[0]:  # (unset in this process: compare the texts)
            assert [[m for _, m in w] for w in theirs] == [[m for _, m in w] for w in ours]


def test_compressed_tensors_warn_beta_once_as_torch():
    """torch's once-per-process warning where a compressed sparse tensor is made (any layout,
    by a constructor, a conversion or an op; every time under set_warn_always)."""
    torch = _torch()

    def run(lib):
        lib.set_warn_always(True)
        out = []
        try:
            x = lib.eye(2).to_sparse_csr()
            for make in (lambda: lib.eye(2).to_sparse_csc(),
                         lambda: lib.eye(2).to_sparse_bsr((1, 1)),
                         lambda: x + x, lambda: x.t(), lambda: x.to_dense(),
                         lambda: lib.eye(2).to_sparse(), lambda: x.to_sparse()):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    make()
                out.append([(w.category, str(w.message).split(" (Triggered")[0], w.filename)
                            for w in caught if "beta state" in str(w.message)])
        finally:
            lib.set_warn_always(False)
        return out

    ours = run(jitgrad)
    assert ours == run(torch)
    assert ours[0][0][1].startswith("Sparse CSC tensor support is in beta state.")
    assert ours[0][0][2] == __file__ and ours[4:] == [[], [], []]
