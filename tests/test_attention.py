"""F.scaled_dot_product_attention, nn.MultiheadAttention and nn.TransformerEncoder(Layer)
against torch (same weights: the state_dict copied across), gradcheck in float64, and jit."""

import math
import warnings

import numpy as np
import pytest

import jitgrad
import jitgrad.nn.functional as F
from jitgrad.autograd import gradcheck
from torch_compare import arr

RNG = np.random.default_rng(0)


def _pair(*shape):
    import torch

    x = RNG.standard_normal(shape)
    return (jitgrad.tensor(x, requires_grad=True),
            torch.tensor(x, requires_grad=True))


def _copy(src, dst):
    dst.load_state_dict({k: jitgrad.tensor(v.detach().numpy().copy())
                         for k, v in src.state_dict().items()})


def _grads_close(j_inputs, t_inputs, rtol=1e-9, atol=1e-10):
    for a, b in zip(j_inputs, t_inputs):
        np.testing.assert_allclose(arr(a.grad), arr(b.grad), rtol=rtol, atol=atol)


@pytest.mark.parametrize("case", ["plain", "bool_mask", "float_mask", "causal", "causal_rect",
                                  "scale", "gqa"])
def test_sdpa_matches_torch(case):
    torch = pytest.importorskip("torch")
    heads_k = 1 if case == "gqa" else 2
    L, S = (3, 5) if case == "causal_rect" else (4, 4 if case == "causal" else 5)
    (jq, tq), (jk, tk), (jv, tv) = _pair(2, 2, L, 3), _pair(2, heads_k, S, 3), \
        _pair(2, heads_k, S, 6)
    kw = {}
    if case == "bool_mask":
        m = RNG.random((L, S)) > 0.3
        m[:, 0] = True  # (no fully masked row)
        kw = {"attn_mask": m}
    elif case == "float_mask":
        kw = {"attn_mask": RNG.standard_normal((2, 1, L, S))}
    elif case in ("causal", "causal_rect"):
        kw = {"is_causal": True}
    elif case == "scale":
        kw = {"scale": 0.3}
    elif case == "gqa":
        kw = {"enable_gqa": True}
    out = {}
    for lib, (q, k, v) in ((jitgrad, (jq, jk, jv)), (torch, (tq, tk, tv))):
        args = {n: (lib.tensor(a) if isinstance(a, np.ndarray) else a) for n, a in kw.items()}
        o = lib.nn.functional.scaled_dot_product_attention(q, k, v, **args)
        (o * lib.tensor(np.arange(o.numel()).reshape(o.shape) / 7.0)).sum().backward()
        out[lib] = o
    np.testing.assert_allclose(arr(out[jitgrad]), arr(out[torch]), rtol=1e-9, atol=1e-10)
    _grads_close((jq, jk, jv), (tq, tk, tv))


def test_sdpa_gradcheck_and_jit():
    q, k, v = (jitgrad.tensor(RNG.standard_normal((2, 3, 4)), requires_grad=True)
               for _ in range(3))
    mask = jitgrad.tensor(RNG.random((3, 3)) > 0.4) | jitgrad.eye(3, dtype=jitgrad.bool)
    assert gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=mask),
                     (q, k, v))
    assert gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True),
                     (q, k, v))

    @jitgrad.jit
    def f(a, b, c, m):
        return F.scaled_dot_product_attention(a, b, c, attn_mask=m).sum()

    got = f(q, k, v, mask)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask).sum()
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)
    g_jit = jitgrad.autograd.grad(got, (q, k, v))
    g_eager = jitgrad.autograd.grad(want, (q, k, v))
    for a, b in zip(g_jit, g_eager):
        np.testing.assert_allclose(arr(a), arr(b), rtol=1e-10, atol=1e-12)


def test_sdpa_dropout_and_errors():
    q = jitgrad.ones(2, 4, 3)
    jitgrad.manual_seed(0)
    out = F.scaled_dot_product_attention(q, q, q + jitgrad.arange(4.0).reshape(4, 1),
                                         dropout_p=0.5)
    # uniform weights 1/4, each kept with scale 2 or dropped: rows are multiples of 0.5 * v
    assert out.shape == (2, 4, 3)
    assert not np.allclose(arr(out), arr(out)[0, 0])
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=jitgrad.ones(4, 4, dtype=jitgrad.bool),
                                       is_causal=True)


def _mha_pair(torch, **kw):
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(dtype=torch.float64, **kw)
    jm = jitgrad.nn.MultiheadAttention(dtype=jitgrad.float64, **kw)
    _copy(tm, jm)
    return jm, tm


MHA_CASES = {
    "self": ({"embed_dim": 8, "num_heads": 2}, {}),
    "batch_first": ({"embed_dim": 8, "num_heads": 4, "batch_first": True}, {}),
    "per_head": ({"embed_dim": 8, "num_heads": 2}, {"average_attn_weights": False}),
    "kdim_vdim": ({"embed_dim": 8, "num_heads": 2, "kdim": 5, "vdim": 3}, {}),
    "no_bias": ({"embed_dim": 8, "num_heads": 2, "bias": False}, {}),
    "bias_kv_zero_attn": ({"embed_dim": 8, "num_heads": 2, "add_bias_kv": True,
                           "add_zero_attn": True}, {"mask": True, "kpm": True}),
    "masks": ({"embed_dim": 8, "num_heads": 2}, {"mask": True, "kpm": True}),
    "masks_no_weights": ({"embed_dim": 8, "num_heads": 2},
                         {"mask": True, "kpm": True, "need_weights": False}),
    "float_mask_3d": ({"embed_dim": 8, "num_heads": 2}, {"mask": "float3d"}),
    "causal_no_weights": ({"embed_dim": 8, "num_heads": 2},
                          {"mask": "causal", "need_weights": False, "is_causal": True}),
}


@pytest.mark.parametrize("case", list(MHA_CASES))
def test_multihead_attention_matches_torch(case):
    torch = pytest.importorskip("torch")
    kw, opts = MHA_CASES[case]
    jm, tm = _mha_pair(torch, **kw)
    L, S, N, E = 4, 5, 3, kw["embed_dim"]
    self_attn = "kdim" not in kw and opts.get("mask") != "causal"
    if opts.get("mask") == "causal":
        S = L
    qshape = (N, L, E) if kw.get("batch_first") else (L, N, E)
    (jq, tq) = _pair(*qshape)
    if self_attn and case == "self":
        jk, tk, jv, tv = jq, tq, jq, tq
    else:
        kshape = (N, S, kw.get("kdim", E)) if kw.get("batch_first") else (S, N, kw.get("kdim", E))
        vshape = kshape[:-1] + (kw.get("vdim", E),)
        (jk, tk), (jv, tv) = _pair(*kshape), _pair(*vshape)
    margs = {}
    if opts.get("mask") is True:
        m = RNG.random((L, S)) > 0.7
        m[:, 0] = False
        margs["attn_mask"] = m
    elif opts.get("mask") == "float3d":
        margs["attn_mask"] = RNG.standard_normal((N * kw["num_heads"], L, S))
    elif opts.get("mask") == "causal":
        margs["attn_mask"] = np.triu(np.ones((L, S), dtype=bool), 1)
    if opts.get("kpm"):
        p = np.zeros((N, S), dtype=bool)
        p[0, -2:] = True
        margs["key_padding_mask"] = p
    extra = {k: opts[k] for k in ("need_weights", "average_attn_weights", "is_causal")
             if k in opts}
    res = {}
    for lib, m, (q, k, v) in ((jitgrad, jm, (jq, jk, jv)), (torch, tm, (tq, tk, tv))):
        args = {n: lib.tensor(a) for n, a in margs.items()}
        out, w = m(q, k, v, **args, **extra)
        loss = (out * lib.tensor(np.cos(np.arange(out.numel())).reshape(out.shape))).sum()
        if w is not None:
            loss = loss + (w * w).sum()
        loss.backward()
        res[lib] = (out, w)
    np.testing.assert_allclose(arr(res[jitgrad][0]), arr(res[torch][0]), rtol=1e-9, atol=1e-10)
    if res[torch][1] is None:
        assert res[jitgrad][1] is None
    else:
        np.testing.assert_allclose(arr(res[jitgrad][1]), arr(res[torch][1]), rtol=1e-9,
                                   atol=1e-10)
    uniq = [(a, b) for a, b in ((jq, tq), (jk, tk), (jv, tv))]
    _grads_close([a for a, _ in uniq], [b for _, b in uniq])
    tp = dict(tm.named_parameters())
    for name, p in jm.named_parameters():
        np.testing.assert_allclose(arr(p.grad), arr(tp[name].grad), rtol=1e-9, atol=1e-10,
                                   err_msg=name)


def test_multihead_attention_parameters_and_errors():
    torch = pytest.importorskip("torch")
    for kw in ({"embed_dim": 6, "num_heads": 3}, {"embed_dim": 4, "num_heads": 2, "kdim": 3,
                                                   "vdim": 5, "add_bias_kv": True,
                                                   "bias": False}):
        tm, jm = torch.nn.MultiheadAttention(**kw), jitgrad.nn.MultiheadAttention(**kw)
        assert repr(jm) == repr(tm)
        assert [(k, tuple(v.shape)) for k, v in jm.state_dict().items()] == \
            [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    jm = jitgrad.nn.MultiheadAttention(16, 4)
    w = arr(jm.in_proj_weight)
    bound = np.sqrt(6 / (16 + 48))  # xavier_uniform_ over (3E, E)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert not arr(jm.in_proj_bias).any() and not arr(jm.out_proj.bias).any()
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        jitgrad.nn.MultiheadAttention(5, 2)


def test_multihead_attention_gradcheck_unbatched_and_jit():
    jitgrad.manual_seed(0)
    m = jitgrad.nn.MultiheadAttention(4, 2, dtype=jitgrad.float64)
    x = jitgrad.tensor(RNG.standard_normal((3, 4)), requires_grad=True)  # unbatched (L, E)
    out, w = m(x, x, x)
    assert out.shape == (3, 4) and w.shape == (3, 3)
    assert gradcheck(lambda a: m(a, a, a)[0], (x,))
    xb = jitgrad.tensor(RNG.standard_normal((3, 2, 4)))
    mask = jitgrad.tensor(np.triu(np.ones((3, 3), dtype=bool), 1))

    @jitgrad.jit
    def f(a, msk):
        return m(a, a, a, attn_mask=msk)[0]

    np.testing.assert_allclose(arr(f(xb, mask)), arr(m(xb, xb, xb, attn_mask=mask)[0]),
                               rtol=1e-12)


@pytest.mark.parametrize("norm_first,activation,batch_first",
                         [(False, "relu", False), (True, "gelu", True)])
def test_transformer_encoder_matches_torch(norm_first, activation, batch_first):
    torch = pytest.importorskip("torch")
    kw = {"d_model": 8, "nhead": 2, "dim_feedforward": 16, "dropout": 0.0,
          "activation": activation, "batch_first": batch_first, "norm_first": norm_first}
    torch.manual_seed(0)
    tl = torch.nn.TransformerEncoderLayer(dtype=torch.float64, **kw)
    te = torch.nn.TransformerEncoder(tl, 2, norm=torch.nn.LayerNorm(8, dtype=torch.float64),
                                     enable_nested_tensor=False)
    jl = jitgrad.nn.TransformerEncoderLayer(dtype=jitgrad.float64, **kw)
    je = jitgrad.nn.TransformerEncoder(jl, 2, norm=jitgrad.nn.LayerNorm(
        8, dtype=jitgrad.float64), enable_nested_tensor=False)
    assert repr(je) == repr(te)
    assert list(je.state_dict()) == list(te.state_dict())
    _copy(te, je)
    shape = (3, 5, 8) if batch_first else (5, 3, 8)
    jx, tx = _pair(*shape)
    mask = np.triu(np.ones((5, 5), dtype=bool), 1)
    pad = np.zeros((3, 5), dtype=bool)
    pad[1, -1] = True
    res = {}
    for lib, e, x in ((jitgrad, je, jx), (torch, te, tx)):
        out = e(x, mask=lib.tensor(mask), src_key_padding_mask=lib.tensor(pad))
        (out * lib.tensor(np.sin(np.arange(out.numel())).reshape(out.shape))).sum().backward()
        res[lib] = out
    np.testing.assert_allclose(arr(res[jitgrad]), arr(res[torch]), rtol=1e-9, atol=1e-10)
    _grads_close([jx], [tx])
    tp = dict(te.named_parameters())
    for name, p in je.named_parameters():
        np.testing.assert_allclose(arr(p.grad), arr(tp[name].grad), rtol=1e-8, atol=1e-10,
                                   err_msg=name)


@pytest.mark.parametrize("norm_first,batch_first", [(False, False), (True, True)])
def test_transformer_matches_torch(norm_first, batch_first):
    torch = pytest.importorskip("torch")
    kw = {"d_model": 8, "nhead": 2, "num_encoder_layers": 2, "num_decoder_layers": 2,
          "dim_feedforward": 16, "dropout": 0.0, "batch_first": batch_first,
          "norm_first": norm_first, "activation": "gelu"}
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (the nested-tensor notice, both)
        tm = torch.nn.Transformer(dtype=torch.float64, **kw)
        jm = jitgrad.nn.Transformer(dtype=jitgrad.float64, **kw)
    assert repr(jm) == repr(tm)
    assert [(k, tuple(v.shape)) for k, v in jm.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    _copy(tm, jm)
    S, T, N = 5, 4, 3
    (js, ts), (jt, tt) = _pair(*((N, S, 8) if batch_first else (S, N, 8))), \
        _pair(*((N, T, 8) if batch_first else (T, N, 8)))
    src_pad = np.zeros((N, S), dtype=bool)
    src_pad[2, -2:] = True
    res = {}
    for lib, m, s, t in ((jitgrad, jm, js, jt), (torch, tm, ts, tt)):
        causal = lib.nn.Transformer.generate_square_subsequent_mask(T, dtype=lib.float64)
        out = m(s, t, tgt_mask=causal, src_key_padding_mask=lib.tensor(src_pad),
                memory_key_padding_mask=lib.tensor(src_pad))
        (out * lib.tensor(np.sin(np.arange(out.numel())).reshape(out.shape))).sum().backward()
        res[lib] = out
    np.testing.assert_allclose(arr(res[jitgrad]), arr(res[torch]), rtol=1e-9, atol=1e-10)
    _grads_close([js, jt], [ts, tt], rtol=1e-8)
    tp = dict(tm.named_parameters())
    for name, p in jm.named_parameters():
        np.testing.assert_allclose(arr(p.grad), arr(tp[name].grad), rtol=1e-8, atol=1e-10,
                                   err_msg=name)


def test_transformer_mask_and_errors():
    torch = pytest.importorskip("torch")
    np.testing.assert_array_equal(
        arr(jitgrad.nn.Transformer.generate_square_subsequent_mask(4)),
        arr(torch.nn.Transformer.generate_square_subsequent_mask(4)))
    with pytest.warns(UserWarning, match="enable_nested_tensor is True, but "
                                         "self.use_nested_tensor is False because encoder_layer"
                                         ".self_attn.batch_first was not True"):
        m = jitgrad.nn.Transformer(8, 2, 1, 1, 16)
    w = [arr(p) for n, p in m.named_parameters() if p.dim() > 1]
    assert all(np.abs(x).max() <= np.sqrt(6 / sum(x.shape)) for x in w)  # xavier_uniform_
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        m(jitgrad.zeros(3, 2, 8), jitgrad.zeros(3, 4, 8))
    with pytest.raises(RuntimeError, match="must be equal to d_model"):
        m(jitgrad.zeros(3, 2, 6), jitgrad.zeros(3, 2, 6))


def test_fully_masked_rows_match_torch():
    torch = pytest.importorskip("torch")
    m = np.array([[False, False, False], [True, False, True], [True, True, True]])
    (jq, tq), (jk, tk) = _pair(2, 3, 4), _pair(2, 3, 4)
    res = {}
    for lib, q, k in ((jitgrad, jq, jk), (torch, tq, tk)):
        out = lib.nn.functional.scaled_dot_product_attention(q, k, k, attn_mask=lib.tensor(m))
        (out * out).sum().backward()
        res[lib] = out
    np.testing.assert_allclose(arr(res[jitgrad]), arr(res[torch]), rtol=1e-10, atol=1e-12)
    assert not arr(res[jitgrad])[:, 0].any()  # (the row with no key: zeros, as torch)
    _grads_close((jq, jk), (tq, tk))


@pytest.mark.parametrize("batch_first,norm_first,mask_kind", [
    (True, False, "right"), (True, False, "left"), (False, False, "right"),
    (True, True, "right")])
def test_encoder_inference_fast_path_values_match_torch(batch_first, norm_first, mask_kind):
    """torch packs a right-padded batch into a nested tensor in eval mode without grad: the
    padded positions come out as zeros (then ``norm``); jitgrad gives the same values."""
    torch = pytest.importorskip("torch")
    kw = {"d_model": 8, "nhead": 2, "dim_feedforward": 16, "batch_first": batch_first,
          "norm_first": norm_first}
    messages = []
    for lib in (torch, jitgrad):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            layer = lib.nn.TransformerEncoderLayer(**kw)
            enc = lib.nn.TransformerEncoder(layer, 2, norm=lib.nn.LayerNorm(8))
        messages.append([str(w.message) for w in caught if "nested" in str(w.message)])
        if lib is torch:
            te = enc.eval()
        else:
            je = enc.eval()
    assert messages[0] == messages[1]
    _copy(te, je)
    x = RNG.standard_normal((3, 5, 8) if batch_first else (5, 3, 8)).astype(np.float32)
    pad = np.zeros((3, 5), dtype=bool)
    if mask_kind == "right":
        pad[0, -2:] = True
        pad[2, -1:] = True
    else:
        pad[1, :2] = True  # (not left-aligned: torch's mask check keeps the padded path)
    with torch.no_grad():
        want = te(torch.tensor(x), src_key_padding_mask=torch.tensor(pad)).numpy()
    with jitgrad.no_grad():
        got = arr(je(jitgrad.tensor(x), src_key_padding_mask=jitgrad.tensor(pad)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _mask_modules(lib):
    """An MHA, an encoder layer, an encoder and a Transformer (d_model 4, 2 heads, no
    dropout), built under ``lib``."""
    layer = lib.nn.TransformerEncoderLayer(4, 2, 8, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (enable_nested_tensor's, tested above)
        return {"mha": lib.nn.MultiheadAttention(4, 2), "layer": layer,
                "encoder": lib.nn.TransformerEncoder(layer, 1),
                "transformer": lib.nn.Transformer(4, 2, 1, 1, 8, 0.0)}


_KPM = np.array([[False, False, True], [False, False, False]])
_FLOAT = np.where(_KPM, -np.inf, 0.0).astype(np.float32)
_MASK_CALLS = {  # (module, masks (each a (values, dtype name) or None), query/src shape)
    "mha_bool_kpm_float_mask": ("mha", {"key_padding_mask": (_KPM, "bool"),
                                        "attn_mask": (np.zeros((3, 3)), "float32")}, (3, 2, 4)),
    "mha_float_kpm_double_mask": ("mha", {"key_padding_mask": (_FLOAT, "float32"),
                                          "attn_mask": (np.zeros((3, 3)), "float64")}, (3, 2, 4)),
    "mha_double_mask_sdpa": ("mha", {"attn_mask": (np.zeros((3, 3)), "float64"),
                                     "need_weights": False}, (3, 2, 4)),
    "mha_half_kpm_sdpa": ("mha", {"key_padding_mask": (_FLOAT, "float16"),
                                  "need_weights": False}, (3, 2, 4)),
    "mha_int_mask": ("mha", {"attn_mask": (np.zeros((3, 3)), "int64")}, (3, 2, 4)),
    "mha_int_kpm": ("mha", {"key_padding_mask": (_KPM, "int32")}, (3, 2, 4)),
    "mha_2d_mask_shape": ("mha", {"attn_mask": (np.zeros((2, 3)), "bool")}, (3, 2, 4)),
    "mha_3d_mask_shape": ("mha", {"attn_mask": (np.zeros((2, 3, 3)), "bool")}, (3, 2, 4)),
    "mha_4d_mask": ("mha", {"attn_mask": (np.zeros((1, 4, 3, 3)), "bool")}, (3, 2, 4)),
    "mha_3d_kpm": ("mha", {"key_padding_mask": (np.zeros((1, 2, 3)), "bool")}, (3, 2, 4)),
    "mha_unbatched_kpm_2d": ("mha", {"key_padding_mask": (_KPM, "bool")}, (3, 4)),
    "mha_unbatched_3d_mask": ("mha", {"attn_mask": (np.zeros((3, 3, 3)), "bool")}, (3, 4)),
    "mha_4d_query": ("mha", {}, (1, 3, 2, 4)),
    "layer_bool_kpm_float_mask": ("layer", {"src_key_padding_mask": (_KPM, "bool"),
                                            "src_mask": (np.zeros((3, 3)), "float32")},
                                  (3, 2, 4)),
    "layer_int_mask": ("layer", {"src_mask": (np.zeros((3, 3)), "int64")}, (3, 2, 4)),
    "encoder_bool_kpm_float_mask": ("encoder", {"src_key_padding_mask": (_KPM, "bool"),
                                                "mask": (np.zeros((3, 3)), "float32")},
                                    (3, 2, 4)),
    "encoder_float_kpm": ("encoder", {"src_key_padding_mask": (_FLOAT, "float32")}, (3, 2, 4)),
    "encoder_int_kpm": ("encoder", {"src_key_padding_mask": (_KPM, "uint8")}, (3, 2, 4)),
    "transformer_int_src_mask": ("transformer", {"src_mask": (np.zeros((3, 3)), "int64")},
                                 (3, 2, 4)),
    "transformer_float_tgt_mask_bool_kpm": ("transformer", {
        "tgt_mask": (np.triu(np.full((3, 3), -np.inf), 1), "float32"),
        "tgt_key_padding_mask": (_KPM, "bool"), "src_key_padding_mask": (_KPM, "bool"),
        "memory_key_padding_mask": (_KPM, "bool")}, (3, 2, 4)),
}


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("name", sorted(_MASK_CALLS))
def test_masks_are_canonicalised_as_torch(name, train):
    """torch's ``F._canonical_mask`` where torch calls it (MultiheadAttention, the encoder
    layer and the encoder, F.multi_head_attention_forward): bool masks become -inf float
    masks, other dtypes are refused with the mask's name, masks of two dtypes warn; and
    torch's checks of the masks' and inputs' shapes, with the same texts."""
    torch = pytest.importorskip("torch")
    kind, masks, shape = _MASK_CALLS[name]
    torch.manual_seed(0)
    t_module = _mask_modules(torch)[kind]
    j_module = _mask_modules(jitgrad)[kind]
    _copy(t_module, j_module)
    x = RNG.standard_normal(shape).astype(np.float32)
    outcomes = []
    for lib, module in ((torch, t_module), (jitgrad, j_module)):
        module.train(train)
        kw = {k: lib.tensor(v[0]).to(getattr(lib, v[1])) if isinstance(v, tuple) else v
              for k, v in masks.items()}
        src = lib.tensor(x)
        with warnings.catch_warnings(record=True) as caught, lib.no_grad():
            warnings.simplefilter("always")
            try:
                out = module(src, src, src, **kw)[0] if kind == "mha" else \
                    module(src, src, **kw) if kind == "transformer" else module(src, **kw)
                result = arr(out)
            except (AssertionError, RuntimeError) as e:
                result = (type(e).__name__, str(e).replace("torch", "jitgrad"))
        outcomes.append((result, [str(w.message) for w in caught]))
    (t_result, t_warned), (j_result, j_warned) = outcomes
    assert j_warned == t_warned
    if isinstance(t_result, tuple):
        assert j_result == t_result
    else:
        np.testing.assert_allclose(j_result, t_result, rtol=1e-5, atol=1e-6)


def test_canonical_mask_functions_match_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, jitgrad):
        F_ = lib.nn.functional
        with pytest.warns(UserWarning, match="^Support for mismatched a and b is deprecated"):
            m = F_._canonical_mask(lib.tensor([True, False]), "a", lib.float32, "b",
                                   lib.float64)
        assert m.dtype == lib.float64 and m.tolist() == [-math.inf, 0.0]
        assert F_._canonical_mask(None, "a", None, "", lib.float32) is None
        assert F_._none_or_dtype(lib.zeros(1, dtype=lib.int8)) == lib.int8
        with pytest.raises(RuntimeError, match="must be None or .*Tensor"):
            F_._none_or_dtype(3)


@pytest.mark.parametrize("dtype", ["float64", "float16", "int64", "uint8", "float32", "bool"])
@pytest.mark.parametrize("query_dtype", ["float32", "float64"])
def test_sdpa_mask_dtypes_as_torch(dtype, query_dtype):
    """SDPA takes a bool mask, a float32 one, or one of the query's dtype; others are refused
    with torch's text (its C++ type names)."""
    torch = pytest.importorskip("torch")
    x, m = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((3, 3)) > -0.5
    outcomes = []
    for lib in (torch, jitgrad):
        q = lib.tensor(x, dtype=getattr(lib, query_dtype))
        mask = lib.tensor(m).to(getattr(lib, dtype))
        try:
            outcomes.append(arr(lib.nn.functional.scaled_dot_product_attention(q, q, q, mask)))
        except RuntimeError as e:
            outcomes.append(str(e))
    if isinstance(outcomes[0], str):
        assert outcomes[1] == outcomes[0]
    else:
        np.testing.assert_allclose(outcomes[1], outcomes[0], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_sdpa_of_16_bit_inputs_computes_in_float32_and_rounds_once(dtype):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((4, 9, 8)).astype(np.float32) for _ in range(3)]
    mask = jitgrad.tensor(rng.random((9, 9)) > 0.3)
    low = [jitgrad.tensor(a).to(getattr(jitgrad, dtype)).requires_grad_() for a in arrays]
    out = F.scaled_dot_product_attention(*low, attn_mask=mask)
    assert out.dtype is getattr(jitgrad, dtype) and out.grad_fn.name() == "ToCopyBackward0"
    wide = [t.detach().float().requires_grad_() for t in low]
    ref = F.scaled_dot_product_attention(*wide, attn_mask=mask)
    np.testing.assert_array_equal(out.float().detach().numpy(),
                                  ref.to(out.dtype).float().detach().numpy())
    grad = jitgrad.tensor(rng.standard_normal(out.shape).astype(np.float32))
    out.backward(grad.to(out.dtype))
    ref.backward(grad.to(out.dtype).float())
    for a, b in zip(low, wide):  # (float32 gradients, each rounded once)
        np.testing.assert_array_equal(a.grad.float().numpy(), b.grad.to(a.dtype).float().numpy())


def test_sdpa_of_bfloat16_on_torchs_math_path_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal((4, 33, 16)).astype(np.float32) for _ in range(3)]
    ours = [jitgrad.tensor(a).to(jitgrad.bfloat16).requires_grad_() for a in arrays]
    theirs = [torch.tensor(a).to(torch.bfloat16).requires_grad_() for a in arrays]
    out = F.scaled_dot_product_attention(*ours)  # (3-D inputs: torch's math path)
    ref = torch.nn.functional.scaled_dot_product_attention(*theirs)
    np.testing.assert_array_equal(out.float().detach().numpy(), ref.float().detach().numpy())
    grad = rng.standard_normal(ref.shape).astype(np.float32)
    out.backward(jitgrad.tensor(grad).to(jitgrad.bfloat16))
    ref.backward(torch.tensor(grad).to(torch.bfloat16))
    for a, b in zip(ours, theirs):  # (float32 exp and sums may round a value across a
        mine, other = a.grad.float().numpy(), b.grad.float().numpy()  # bfloat16 boundary)
        assert np.mean(mine == other) > 0.99
        np.testing.assert_allclose(mine, other, rtol=2.0 ** -7, atol=0)  # (one ulp)
