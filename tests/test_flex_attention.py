"""jitgrad.nn.attention.flex_attention against torch's flex_attention (torch runs it eagerly on
the CPU, forward only) and, for gradients, against torch autograd through the explicit math;
gradcheck in float64. The mods are the flex attention blog's examples (causal, sliding window,
ALiBi, document masking, prefix LM, soft-capping, relative position bias)."""

import inspect
import warnings

import numpy as np
import pytest

import jitgrad
import jitgrad.nn.attention.flex_attention as JF
from jitgrad.autograd import gradcheck
from jitgrad.nn.attention.flex_attention import (
    AuxRequest,
    BlockMask,
    and_masks,
    create_block_mask,
    create_mask,
    flex_attention,
    noop_mask,
    or_masks,
)

torch = pytest.importorskip("torch")
TF = pytest.importorskip("torch.nn.attention.flex_attention")

B, H, L, S, E = 2, 4, 40, 40, 8


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():  # (torch: "called without torch.compile()", return_lse)
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", FutureWarning)
        yield


def _pair(a: np.ndarray, requires_grad: bool = False):
    return (torch.tensor(a, requires_grad=requires_grad),
            jitgrad.tensor(a.copy(), requires_grad=requires_grad))


def _qkv(seed=0, b=B, h=H, hkv=None, l=L, s=S, e=E, dtype=np.float64):
    rng = np.random.default_rng(seed)
    hkv = h if hkv is None else hkv
    return [_pair(rng.standard_normal(shape).astype(dtype))
            for shape in ((b, h, l, e), (b, hkv, s, e), (b, hkv, s, e))]


def _close(j, t, tol=1e-12):
    np.testing.assert_allclose(j.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


# ------------------------------------------------------------------------- the blog's mods

def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def sliding_window(b, h, q_idx, kv_idx):
    return q_idx - kv_idx <= 8


def prefix_mask(b, h, q_idx, kv_idx):
    return kv_idx <= 10


def relative_positional(score, b, h, q_idx, kv_idx):
    return score + (q_idx - kv_idx)


def causal_score(score, b, h, q_idx, kv_idx):
    return (torch if isinstance(score, torch.Tensor) else jitgrad).where(
        q_idx >= kv_idx, score, float("-inf"))


def _softcap(lib):
    def soft_cap(score, b, h, q_idx, kv_idx):
        return 20 * lib.tanh(score / 20)
    return soft_cap


def _alibi(lib):
    slopes = lib.exp2(-((lib.arange(H, dtype=lib.float64) + 1) * 8.0 / H))

    def alibi(score, b, h, q_idx, kv_idx):
        return score + slopes[h] * (kv_idx - q_idx)
    return alibi


def _document(lib):
    document_id = lib.zeros(L, dtype=lib.int64)
    document_id[13:27] = 1
    document_id[27:] = 2

    def document_causal(b, h, q_idx, kv_idx):
        return (document_id[q_idx] == document_id[kv_idx]) & (q_idx >= kv_idx)
    return document_causal


SCORE_MODS = {"none": (None, None), "relative": (relative_positional,) * 2,
              "causal_score": (causal_score,) * 2,
              "softcap": (_softcap(torch), _softcap(jitgrad)),
              "alibi": (_alibi(torch), _alibi(jitgrad))}
MASK_MODS = {"none": (None, None), "causal": (causal,) * 2,
             "sliding_window": (TF.and_masks(causal, sliding_window),
                                and_masks(causal, sliding_window)),
             "prefix_lm": (TF.or_masks(prefix_mask, causal), or_masks(prefix_mask, causal)),
             "document": (_document(torch), _document(jitgrad))}


@pytest.mark.parametrize("mask", list(MASK_MODS))
@pytest.mark.parametrize("score", list(SCORE_MODS))
def test_forward_matches_torch(score, mask):
    (qt, qj), (kt, kj), (vt, vj) = _qkv()
    st, sj = SCORE_MODS[score]
    mt, mj = MASK_MODS[mask]
    bt = TF.create_block_mask(mt, None, None, L, S, device="cpu", BLOCK_SIZE=16) if mt else None
    bj = create_block_mask(mj, None, None, L, S, device="cpu", BLOCK_SIZE=16) if mj else None
    ot, at = TF.flex_attention(qt, kt, vt, score_mod=st, block_mask=bt,
                               return_aux=TF.AuxRequest(lse=True))
    oj, aj = flex_attention(qj, kj, vj, score_mod=sj, block_mask=bj,
                            return_aux=AuxRequest(lse=True))
    _close(oj, ot)
    _close(aj.lse, at.lse)
    assert aj.max_scores is None


def test_float32_and_scale_and_return_lse():
    (qt, qj), (kt, kj), (vt, vj) = _qkv(1, dtype=np.float32)
    ot, lt = TF.flex_attention(qt, kt, vt, score_mod=_softcap(torch), scale=0.3,
                               return_lse=True)
    oj, lj = flex_attention(qj, kj, vj, score_mod=_softcap(jitgrad), scale=0.3,
                            return_lse=True)
    assert oj.dtype is jitgrad.float32 and lj.dtype is jitgrad.float32
    _close(oj, ot, 1e-5)
    _close(lj, lt, 1e-5)


def test_gqa_and_broadcast_kv_batch():
    (qt, qj), (kt, kj), (vt, vj) = _qkv(2, hkv=2)
    _close(flex_attention(qj, kj, vj, enable_gqa=True),
           TF.flex_attention(qt, kt, vt, enable_gqa=True))
    (qt, qj), (kt, kj), (vt, vj) = _qkv(3)
    bt = TF.create_block_mask(causal, B, None, L, S, device="cpu", BLOCK_SIZE=16)
    bj = create_block_mask(causal, B, None, L, S, device="cpu", BLOCK_SIZE=16)
    _close(flex_attention(qj, kj[:1], vj[:1], block_mask=bj),
           TF.flex_attention(qt, kt[:1], vt[:1], block_mask=bt))


def test_fully_masked_rows_give_zero_and_minus_inf():
    def upper_half(b, h, q_idx, kv_idx):
        return (q_idx < 20) & (kv_idx <= q_idx)

    (qt, qj), (kt, kj), (vt, vj) = _qkv(4)
    bt = TF.create_block_mask(upper_half, None, None, L, S, device="cpu", BLOCK_SIZE=8)
    bj = create_block_mask(upper_half, None, None, L, S, device="cpu", BLOCK_SIZE=8)
    ot, lt = TF.flex_attention(qt, kt, vt, block_mask=bt, return_lse=True)
    oj, lj = flex_attention(qj, kj, vj, block_mask=bj, return_lse=True)
    _close(oj, ot)
    assert (oj[:, :, 20:] == 0).all() and jitgrad.isneginf(lj[:, :, 20:]).all()
    _close(lj, lt)


def test_max_scores():
    (qt, qj), (kt, kj), (vt, vj) = _qkv(5)
    bj = create_block_mask(causal, None, None, L, S, device="cpu", BLOCK_SIZE=16)
    _, aux = flex_attention(qj, kj, vj, block_mask=bj,
                            return_aux=AuxRequest(lse=True, max_scores=True))
    scores = (qt @ kt.transpose(-2, -1)) / E ** 0.5
    scores = scores.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
    _close(aux.max_scores, scores.amax(-1))
    _close(aux.lse, scores.logsumexp(-1))


# ------------------------------------------------------------- mods that need vmap (torch's)

def test_mods_that_do_not_broadcast_fall_back_to_vmap():
    rng = np.random.default_rng(6)
    table_t, table_j = _pair(rng.standard_normal((H, L, S)))
    w_t, w_j = _pair(rng.standard_normal(3))

    def chained(tab):  # tab[h] of a (H, L, S) tensor, then [q][kv]: broadcasting cannot
        return lambda score, b, h, q_idx, kv_idx: score + tab[h][q_idx][kv_idx]

    def reduced(w):  # a reduction: broadcast gives a scalar, vmap one per score
        return lambda score, b, h, q_idx, kv_idx: score + (w * score).sum()

    (qt, qj), (kt, kj), (vt, vj) = _qkv(7)
    for mt, mj in ((chained(table_t), chained(table_j)), (reduced(w_t), reduced(w_j))):
        _close(flex_attention(qj, kj, vj, score_mod=mj), TF.flex_attention(qt, kt, vt,
                                                                           score_mod=mt))


# --------------------------------------------------------------------------------- gradients

def _torch_reference(q, k, v, bias, mask, scale):
    scores = q @ k.transpose(-2, -1) * scale + bias
    scores = scores.masked_fill(~mask, float("-inf"))
    probs = torch.softmax(scores, -1).nan_to_num(0.0)
    return probs @ v, scores.logsumexp(-1)


def test_gradients_of_qkv_and_a_captured_bias_match_torch():
    rng = np.random.default_rng(8)
    (qt, qj), (kt, kj), (vt, vj) = [_pair(rng.standard_normal(sh), True) for sh in
                                    ((B, H, L, E), (B, H, S, E), (B, H, S, E))]
    bias_t, bias_j = _pair(rng.standard_normal((H, L, S)), True)
    doc_j = _document(jitgrad)

    def score_mod(score, b, h, q_idx, kv_idx):
        return score + bias_j[h, q_idx, kv_idx]

    mask = create_block_mask(doc_j, None, None, L, S, device="cpu", BLOCK_SIZE=16)
    out, lse = flex_attention(qj, kj, vj, score_mod=score_mod, block_mask=mask,
                              return_lse=True)
    rng_g = np.random.default_rng(9)
    g_out, g_lse = rng_g.standard_normal(out.shape), rng_g.standard_normal(lse.shape)
    (out * jitgrad.tensor(g_out)).sum().add((lse * jitgrad.tensor(g_lse)).sum()).backward()

    dense = torch.from_numpy(create_mask(doc_j, 1, 1, L, S, device="cpu").numpy())
    ot, lt = _torch_reference(qt, kt, vt, bias_t, dense, E ** -0.5)
    ((ot * torch.tensor(g_out)).sum() + (lt * torch.tensor(g_lse)).sum()).backward()
    _close(out, ot)
    _close(lse, lt)
    for j, t in ((qj, qt), (kj, kt), (vj, vt), (bias_j, bias_t)):
        _close(j.grad, t.grad, 1e-10)


def test_gradcheck_float64():
    rng = np.random.default_rng(10)
    q, k, v = [jitgrad.tensor(rng.standard_normal(sh), requires_grad=True)
               for sh in ((1, 2, 6, 3), (1, 2, 5, 3), (1, 2, 5, 4))]
    bias = jitgrad.tensor(rng.standard_normal((2, 6, 5)), requires_grad=True)
    mask = create_block_mask(lambda b, h, qi, ki: (qi < 4) & (ki <= qi), None, None, 6, 5,
                             device="cpu", BLOCK_SIZE=2)

    def fn(q, k, v, bias):
        out, aux = flex_attention(
            q, k, v, score_mod=lambda s, b, h, qi, ki: 5 * jitgrad.tanh((s + bias[h, qi, ki]) / 5),
            block_mask=mask, return_aux=AuxRequest(lse=True))
        return out, jitgrad.where(jitgrad.isneginf(aux.lse), 0.0, aux.lse)

    assert gradcheck(fn, (q, k, v, bias))
    out, lse = fn(q, k, v, bias)
    (out.sum() + lse.sum()).backward()  # the fully masked rows: zero gradients, not NaN
    assert jitgrad.isfinite(q.grad).all() and (q.grad[:, :, 4:] == 0).all()


# ------------------------------------------------------------------------- masks, BlockMask

def test_block_mask_layout_str_and_repr_match_torch():
    doc_t, doc_j = _document(torch), _document(jitgrad)
    for args in ((causal, causal, 2, None, 300, 200, 128), (doc_t, doc_j, 1, 3, L, S, 8),
                 (causal, causal, None, 2, 64, 64, (16, 32))):
        mt, mj, b, h, ql, kvl, bs = args
        bt = TF.create_block_mask(mt, b, h, ql, kvl, device="cpu", BLOCK_SIZE=bs)
        bj = create_block_mask(mj, b, h, ql, kvl, device="cpu", BLOCK_SIZE=bs)
        for name in ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
                     "q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices"):
            tj, tt = getattr(bj, name), getattr(bt, name)
            assert tj.dtype is jitgrad.int32
            np.testing.assert_array_equal(tj.numpy(), tt.numpy(), err_msg=name)
        assert bj.shape == bt.shape and bj.seq_lengths == bt.seq_lengths
        assert bj.BLOCK_SIZE == bt.BLOCK_SIZE and bj.sparsity() == bt.sparsity()
        assert bj.numel() == bt.numel()
        np.testing.assert_array_equal(bj.to_dense().numpy(), bt.to_dense().numpy())
        assert str(bj) == str(bt)
        assert repr(bj) == repr(bt).replace("torch.Size", "jitgrad.Size")
        assert bj.to_string(grid_size=-1, limit=1) == bt.to_string(grid_size=-1, limit=1)
        assert bj.to_string(grid_size=3) == bt.to_string(grid_size=3)
        tj, tt = bj.as_tuple(), bt.as_tuple()
        assert len(tj) == len(tt) and tj[:2] == tt[:2] and tj[-3:-1] == tt[-3:-1]
        assert tj[-1] is mj and bj.as_tuple(flatten=False)[0] == (ql, kvl)


def test_slicing_and_adjust_match_torch():
    bt = TF.create_block_mask(causal, 2, 3, 64, 64, device="cpu", BLOCK_SIZE=16)
    bj = create_block_mask(causal, 2, 3, 64, 64, device="cpu", BLOCK_SIZE=16)
    for idx in (0, (1, -1), (slice(0, 2), slice(1, 2)), (0, 1, jitgrad.tensor([1, 3]))):
        tidx = tuple(torch.tensor(i.numpy()) if isinstance(i, jitgrad.Tensor) else i
                     for i in (idx if isinstance(idx, tuple) else (idx,)))
        sj, st = bj[idx], bt[tidx]
        assert sj.shape == st.shape
        np.testing.assert_array_equal(sj.to_dense().numpy(), st.to_dense().numpy())
    with pytest.raises(RuntimeError, match="Cannot use mask_mod from a sliced BlockMask"):
        bj[0].mask_mod(*[jitgrad.tensor(0)] * 4)
    (_, qj), (_, kj), (_, vj) = _qkv(l=64, s=64)
    with pytest.raises(RuntimeError, match="^Cannot use mask_mod from a sliced BlockMask$"):
        flex_attention(qj[:1], kj[:1], vj[:1], block_mask=bj[:1])
    aj, at = bj._adjust(40, 24), bt._adjust(40, 24)
    assert aj.shape == at.shape
    np.testing.assert_array_equal(aj.to_dense().numpy(), at.to_dense().numpy())
    np.testing.assert_array_equal(aj.kv_num_blocks.numpy(), at.kv_num_blocks.numpy())


def test_from_kv_blocks_masks_the_blocks_it_leaves_out():
    """A hand-built layout masks as torch's kernels do (torch's eager CPU reference would run
    the noop mask_mod everywhere)."""
    nb = jitgrad.tensor([[[1, 1]]], dtype=jitgrad.int32)
    idx = jitgrad.tensor([[[[0, 1], [1, 0]]]], dtype=jitgrad.int32)
    bm = BlockMask.from_kv_blocks(nb, idx, BLOCK_SIZE=4)
    assert bm.shape == (1, 1, 8, 8) and bm.mask_mod is noop_mask
    np.testing.assert_array_equal(bm.q_indices.numpy(), [[[[0, 1], [1, 0]]]])
    (qt, qj), (kt, kj), (vt, vj) = _qkv(11, b=1, h=1, l=8, s=8)
    block_diag = torch.block_diag(torch.ones(4, 4), torch.ones(4, 4)).bool()
    ot, _ = _torch_reference(qt, kt, vt, 0.0, block_diag, E ** -0.5)
    _close(flex_attention(qj, kj, vj, block_mask=bm), ot)


def test_create_mask_and_mask_combinators_match_torch():
    doc_t, doc_j = _document(torch), _document(jitgrad)
    for mt, mj in ((causal, causal), (doc_t, doc_j), (TF.noop_mask, noop_mask),
                   (TF.and_masks(), and_masks()), (TF.or_masks(), or_masks()),
                   (_softcap(torch), _softcap(jitgrad)), (causal_score, causal_score)):
        t = TF.create_mask(mt, 2, 3, L, S, device="cpu")
        j = create_mask(mj, 2, 3, L, S, device="cpu")
        assert j.dtype is jitgrad.bool and j.shape == t.shape
        np.testing.assert_array_equal(j.numpy(), t.numpy())


def test_signatures_match_torch():
    for name in ("flex_attention", "create_mask"):
        pj = inspect.signature(getattr(JF, name)).parameters
        pt = inspect.signature(getattr(TF, name)).parameters
        assert [(p.name, p.kind, p.default) for p in pj.values()] == \
            [(p.name, p.kind, p.default) for p in pt.values()]
    pj = inspect.signature(create_block_mask).parameters
    pt = inspect.signature(TF.create_block_mask).parameters
    assert [(p.name, p.default) for p in pj.values()] == [(p.name, p.default)
                                                          for p in pt.values()]
    assert set(TF.__all__) == set(JF.__all__)


def _raises_like_torch(fn_t, fn_j):
    with pytest.raises(Exception) as info_t:
        fn_t()
    with pytest.raises(type(info_t.value)) as info_j:
        fn_j()
    assert str(info_j.value) == str(info_t.value)


def test_errors_match_torch():
    (qt, qj), (kt, kj), (vt, vj) = _qkv(12)
    bt = TF.create_block_mask(causal, None, None, 32, 32, device="cpu", BLOCK_SIZE=16)
    bj = create_block_mask(causal, None, None, 32, 32, device="cpu", BLOCK_SIZE=16)
    bt2 = TF.create_block_mask(causal, None, None, 64, 64, device="cpu", BLOCK_SIZE=16)
    bj2 = create_block_mask(causal, None, None, 64, 64, device="cpu", BLOCK_SIZE=16)
    cases = [
        (lambda m, q, k, v: m.flex_attention(q[:, :3], k, v)),
        (lambda m, q, k, v: m.flex_attention(q, k[..., :5], v)),
        (lambda m, q, k, v: m.flex_attention(q[0], k[0], v[0])),
        (lambda m, q, k, v: m.flex_attention(q, k[:, :3], v[:, :3], enable_gqa=True)),
        (lambda m, q, k, v: m.flex_attention(q, k[:1], v[:1])),
        (lambda m, q, k, v: m.flex_attention(q, k, v, return_lse=True,
                                             return_aux=m.AuxRequest(lse=True))),
        (lambda m, q, k, v: m.flex_attention(q, k, v, kernel_options={"BACKEND": "CUDNN"}),
),
        (lambda m, q, k, v: m.create_block_mask(relative_positional, 1, 1, 8, 8, device="cpu"),
),
        (lambda m, q, k, v: m.and_masks(causal, 3)),
        (lambda m, q, k, v: m.create_mask(lambda a, b: a, 1, 1, 8, 8, device="cpu")),
    ]
    for case in cases:
        _raises_like_torch(lambda c=case: c(TF, qt, kt, vt), lambda c=case: c(JF, qj, kj, vj))
    _raises_like_torch(lambda: TF.flex_attention(qt, kt, vt, block_mask=bt),
                       lambda: flex_attention(qj, kj, vj, block_mask=bj))
    _raises_like_torch(lambda: TF.flex_attention(qt, kt, vt, block_mask=bt2),
                       lambda: flex_attention(qj, kj, vj, block_mask=bj2))


def test_cpu_backward_is_supported_where_torch_refuses():
    (qt, qj), (kt, kj), (vt, vj) = _qkv(13)
    with pytest.raises(NotImplementedError, match="does not support backward on CPU"):
        TF.flex_attention(qt.requires_grad_(), kt, vt)
    qj.requires_grad_()
    flex_attention(qj, kj, vj, score_mod=_alibi(jitgrad)).sum().backward()
    assert qj.grad.shape == qj.shape and jitgrad.isfinite(qj.grad).all()


def test_new_factories_take_size_as_keyword():
    """(noop_mask calls ``batch.new_ones(size=(), ...)``, as torch's does.)"""
    for name in ("new_ones", "new_zeros", "new_empty"):
        j = getattr(jitgrad.arange(3), name)(size=(2, 1), dtype=jitgrad.float64)
        t = getattr(torch.arange(3), name)(size=(2, 1), dtype=torch.float64)
        assert j.shape == t.shape and j.dtype is jitgrad.float64
    assert jitgrad.arange(3).new_ones(size=()).shape == ()
    with pytest.raises(TypeError):
        torch.arange(3).new_ones(2, size=(3,))
    with pytest.raises(TypeError, match="new_ones"):
        jitgrad.arange(3).new_ones(2, size=(3,))


def test_return_lse_warns_once_and_kernel_options_are_checked():
    (qt, qj), (kt, kj), (vt, vj) = _qkv(14, l=8, s=8)
    JF._WARNINGS_SHOWN.discard("deprecated_return_lse")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        flex_attention(qj, kj, vj, return_lse=True)
        flex_attention(qj, kj, vj, return_lse=True)
    future = [w for w in seen if issubclass(w.category, FutureWarning)]
    assert len(future) == 1 and "return_aux=AuxRequest(lse=True)" in str(future[0].message)
    assert future[0].filename == __file__
    out = flex_attention(qj, kj, vj, kernel_options={"BACKEND": "AUTO", "BLOCK_M": 64})
    _close(out, TF.flex_attention(qt, kt, vt, kernel_options={"BACKEND": "AUTO"}))
    for opts in ({"OUTPUT_MAX": True}, {"BACKEND": "FLASH", "FORCE_USE_FLEX_ATTENTION": True}):
        _raises_like_torch(lambda o=opts: TF.flex_attention(qt, kt, vt, kernel_options=o),
                           lambda o=opts: flex_attention(qj, kj, vj, kernel_options=o))
    with pytest.warns(DeprecationWarning, match="_compile flag"):
        create_block_mask(causal, 1, 1, 8, 8, device="cpu", _compile=True)


def test_gradcheck_gqa_and_gradients_through_the_vmap_fallback():
    rng = np.random.default_rng(15)
    q, k, v = [jitgrad.tensor(rng.standard_normal(sh), requires_grad=True)
               for sh in ((1, 4, 5, 3), (1, 2, 4, 3), (1, 2, 4, 2))]
    assert gradcheck(lambda q, k, v: flex_attention(q, k, v, enable_gqa=True,
                                                    score_mod=relative_positional), (q, k, v))
    table = jitgrad.tensor(rng.standard_normal((4, 5, 4)), requires_grad=True)
    grads = []
    for mod in (lambda s, b, h, qi, ki: s * table[h, qi, ki],  # broadcast
                lambda s, b, h, qi, ki: s * table[h][qi][ki]):  # vmap (chained indexing)
        table.grad = None
        flex_attention(q, k, v, score_mod=mod, enable_gqa=True).pow(2).sum().backward()
        grads.append(table.grad.clone())
    np.testing.assert_allclose(grads[0].numpy(), grads[1].numpy(), rtol=1e-12, atol=1e-12)
    assert grads[0].abs().sum() > 0


def test_without_separate_full_blocks():
    bt = TF.create_block_mask(causal, 1, 2, 48, 40, device="cpu", BLOCK_SIZE=16,
                              separate_full_blocks=False)
    bj = create_block_mask(causal, 1, 2, 48, 40, device="cpu", BLOCK_SIZE=16,
                           separate_full_blocks=False)
    assert bj.full_kv_num_blocks is None and bj.full_q_indices is None
    np.testing.assert_array_equal(bj.kv_indices.numpy(), bt.kv_indices.numpy())
    np.testing.assert_array_equal(bj.q_num_blocks.numpy(), bt.q_num_blocks.numpy())
    assert str(bj) == str(bt)
    (qt, qj), (kt, kj), (vt, vj) = _qkv(16, b=1, h=2, l=48, s=40)
    _close(flex_attention(qj, kj, vj, block_mask=bj),
           TF.flex_attention(qt, kt, vt, block_mask=bt))
