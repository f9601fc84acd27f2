"""torch's top-level ATen entry points (``torch.kl_div``, ``torch.native_layer_norm``,
``torch.lstm_cell``, ``torch.segment_reduce`` ...): values, gradients and errors against
torch's, and gradcheck in float64."""

import warnings

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.autograd import gradcheck

torch = pytest.importorskip("torch")


def _j(t, grad=False):
    out = jg.tensor(t.detach().numpy())
    return out.requires_grad_() if grad else out


def _close(a, b, tol=1e-6):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True)


def _grads(fn, *tensors):
    """(value, gradients) of ``fn`` in jitgrad and torch on the same float64 data."""
    jt = [_j(t, True) for t in tensors]
    tt = [t.detach().clone().requires_grad_() for t in tensors]
    jo, to = fn(jg, *jt), fn(torch, *tt)
    jo.sum().backward()
    to.sum().backward()
    return (jo, [t.grad for t in jt]), (to, [t.grad for t in tt])


def _check_grads(fn, *tensors, tol=1e-6):
    (jo, jgr), (to, tgr) = _grads(fn, *tensors)
    _close(jo, to, tol)
    for a, b in zip(jgr, tgr):  # (no gradient where torch's is all zeros: nearest sampling)
        if a is None:
            assert b is None or not b.any()
        else:
            _close(a, b, tol)


torch.manual_seed(0)
X = torch.randn(3, 4, dtype=torch.float64)
T = torch.rand(3, 4, dtype=torch.float64)
SIGN = torch.tensor([1.0, -1.0, 1.0], dtype=torch.float64)

LOSSES = {
    "bce_logits": lambda m, x, t, r: m.binary_cross_entropy_with_logits(x, t, None, None, r),
    "kl_div": lambda m, x, t, r: m.kl_div(x, t, r),
    "kl_div_log": lambda m, x, t, r: m.kl_div(x, t, r, log_target=True),
    "poisson": lambda m, x, t, r: m.poisson_nll_loss(x, t, True, True, 1e-8, r),
    "poisson_rate": lambda m, x, t, r: m.poisson_nll_loss(x.exp(), t, False, False, 1e-8, r),
    "hinge": lambda m, x, t, r: m.hinge_embedding_loss(x, (t > 0.5).to(x.dtype) * 2 - 1, 0.5, r),
    "margin_ranking": lambda m, x, t, r: m.margin_ranking_loss(x, t, (t > 0.5).to(x.dtype) * 2
                                                               - 1, 0.2, r),
    "triplet": lambda m, x, t, r: m.triplet_margin_loss(x, t, x * 2, 1.0, 2.0, 1e-6, True, r),
    "cosine": lambda m, x, t, r: m.cosine_embedding_loss(
        x, t, m.tensor([1.0, -1.0, 1.0], dtype=x.dtype), 0.1, r),
}


@pytest.mark.parametrize("reduction", [0, 1, 2, 7])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_losses_with_int_reductions_match_torch(name, reduction):
    fn = LOSSES[name]
    _check_grads(lambda m, x, t: fn(m, x, t, reduction), X, T)


DEFAULT_REDUCTION = {
    "bce_logits": lambda m, x, t: m.binary_cross_entropy_with_logits(x, t),
    "kl_div": lambda m, x, t: m.kl_div(x, t),
    "hinge": lambda m, x, t: m.hinge_embedding_loss(x, (t > 0.5).to(x.dtype) * 2 - 1),
    "margin_ranking": lambda m, x, t: m.margin_ranking_loss(x[:, 0], t[:, 0], m.tensor(
        [1.0, -1.0, 1.0], dtype=x.dtype)),
    "triplet": lambda m, x, t: m.triplet_margin_loss(x, t, x * 2),
    "cosine": lambda m, x, t: m.cosine_embedding_loss(x, t, m.tensor([1.0, -1.0, 1.0],
                                                                       dtype=x.dtype)),
    "ctc": lambda m, x, t: m.ctc_loss(x.reshape(4, 3, 1).expand(4, 3, 3).log_softmax(2),
                                      m.tensor([[1, 2], [2, 2], [1, 1]]), [4, 4, 3], [2, 2, 1]),
}


@pytest.mark.parametrize("name", sorted(DEFAULT_REDUCTION))
def test_omitted_reduction_is_none_as_torchs_binding_reads_it(name):
    """The ATen schemas say Mean, but torch's Python binding reads an omitted int reduction as
    0: the result is elementwise, not a mean."""
    fn = DEFAULT_REDUCTION[name]
    (jo, _), (to, _) = _grads(fn, X, T)
    assert to.ndim > 0  # (torch: unreduced)
    _close(jo, to)
    _check_grads(fn, X, T)


@pytest.mark.parametrize("name", ["bce_logits", "kl_div", "poisson", "cosine"])
def test_losses_gradcheck(name):
    t = _j(T)
    assert gradcheck(lambda x: LOSSES[name](jg, x, t, 1), (_j(X, True),))


def test_loss_reduction_must_be_an_int_and_kl_div_log_target_is_keyword_only():
    for bad in ("mean", True):
        with pytest.raises(TypeError) as te:
            torch.kl_div(X, T, bad)
        with pytest.raises(TypeError) as je:
            jg.kl_div(_j(X), _j(T), bad)
        assert str(je.value) == str(te.value)
    for m in (jg, torch):
        with pytest.raises(TypeError):
            m.kl_div(_j(X) if m is jg else X, _j(T) if m is jg else T, 1, True)


def test_bce_with_logits_broadcasts_the_input_to_the_target_as_aten():
    """``torch.binary_cross_entropy_with_logits`` broadcasts the input (F's refuses any
    mismatch); a target that would itself need broadcasting is refused with ATen's text. The
    gradient is the broadcast's (torch's backward refuses every broadcast case)."""
    x = torch.randn(3, 1, dtype=torch.float64)
    for target_shape in [(3, 4), (2, 3, 4)]:
        t = torch.rand(*target_shape, dtype=torch.float64)
        for r in (0, 1, 2):
            _close(jg.binary_cross_entropy_with_logits(_j(x), _j(t), None, None, r),
                   torch.binary_cross_entropy_with_logits(x, t, None, None, r))
        xj = _j(x, True)
        jg.binary_cross_entropy_with_logits(xj, _j(t), None, None, 2).backward()
        expected = (torch.sigmoid(x) - t).reshape(-1, 3, 4).sum(dim=(0, 2)).reshape(3, 1)
        _close(xj.grad, expected, 1e-12)
        assert gradcheck(lambda a, t=_j(t): jg.binary_cross_entropy_with_logits(a, t, None, None,
                                                                                 1), (_j(x, True),))
    for xs, ts in [((3, 4), (4,)), ((3, 4), (3, 1)), ((3, 4), (5,))]:
        x, t = torch.randn(*xs), torch.rand(*ts)
        with pytest.raises(RuntimeError) as te:
            torch.binary_cross_entropy_with_logits(x, t)
        with pytest.raises(RuntimeError) as je:
            jg.binary_cross_entropy_with_logits(_j(x), _j(t))
        assert str(je.value) == str(te.value)


def test_native_dropout_probability_error_matches_torch():
    for p in (1.5, -0.1):
        with pytest.raises(RuntimeError) as te:
            torch.native_dropout(torch.ones(3), p, True)
        with pytest.raises(RuntimeError) as je:
            jg.native_dropout(jg.ones(3), p, True)
        assert str(je.value) == str(te.value)


def test_ctc_loss_matches_torch():
    torch.manual_seed(1)
    lp = torch.randn(6, 2, 4, dtype=torch.float64).log_softmax(2)
    targets = torch.randint(1, 4, (2, 3))
    for reduction in (0, 1, 2):
        _check_grads(lambda m, x, r=reduction: m.ctc_loss(
            x, _j(targets) if m is jg else targets, [6, 5], [3, 2], 0, r, False), lp, tol=1e-5)


@pytest.mark.parametrize("pad", [0, 1, 2, -1])
def test_conv_tbc_matches_torch(pad):
    torch.manual_seed(2)
    x = torch.randn(5, 2, 3, dtype=torch.float64)
    w = torch.randn(3, 3, 4, dtype=torch.float64)
    b = torch.randn(4, dtype=torch.float64)
    _check_grads(lambda m, x, w, b: m.conv_tbc(x, w, b, pad), x, w, b)
    _close(jg.nn.functional.conv_tbc(_j(x), _j(w), _j(b), pad),
           torch.nn.functional.conv_tbc(x, w, b, pad))


def test_conv_tbc_errors_match_torch():
    x, w, b = torch.randn(5, 2, 3), torch.randn(3, 3, 4), torch.randn(4)
    for args in [(x[0], w, b), (x, w[0], b), (x, w, b[:2]), (x, w[:, :2], b)]:
        with pytest.raises(RuntimeError) as te:
            torch.conv_tbc(*args)
        with pytest.raises(RuntimeError) as je:
            jg.conv_tbc(*[_j(a) for a in args])
        assert str(je.value) == str(te.value)


@pytest.mark.parametrize("interp", [0, 1])
@pytest.mark.parametrize("padding", [0, 1, 2])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sampler_matches_torch(interp, padding, align):
    torch.manual_seed(3)
    inp = torch.randn(2, 3, 5, 5, dtype=torch.float64)
    grid = torch.rand(2, 4, 4, 2, dtype=torch.float64) * 2.4 - 1.2
    for name in ("grid_sampler", "grid_sampler_2d"):
        _check_grads(lambda m, i, g, f=name: getattr(m, f)(i, g, interp, padding, align), inp,
                     grid)


@pytest.mark.parametrize("interp", [0, 1])
@pytest.mark.parametrize("padding", [0, 1, 2])
def test_grid_sampler_3d_matches_torch(interp, padding):
    torch.manual_seed(10)
    inp = torch.randn(2, 3, 3, 4, 5, dtype=torch.float64)
    grid = torch.rand(2, 2, 3, 4, 3, dtype=torch.float64) * 2.4 - 1.2
    for align in (False, True):
        _check_grads(lambda m, i, g, a=align: m.grid_sampler_3d(i, g, interp, padding, a), inp,
                     grid)
    _check_grads(lambda m, i, g: m.grid_sampler(i, g, interp, padding, False), inp, grid)


def test_grid_sampler_3d_gradcheck_and_errors():
    torch.manual_seed(11)
    inp = _j(torch.randn(1, 2, 3, 3, 3, dtype=torch.float64), True)
    grid = _j(torch.rand(1, 2, 2, 2, 3, dtype=torch.float64) * 1.6 - 0.8, True)
    assert gradcheck(lambda i, g: jg.grid_sampler_3d(i, g, 0, 0, False), (inp, grid))
    x, g = torch.randn(1, 2, 3, 4, 5), torch.rand(1, 2, 3, 4, 3)
    for args in [(x, g[..., :2], 0, 0, False), (x, g, 2, 0, False)]:
        with pytest.raises(RuntimeError) as te:
            torch.nn.functional.grid_sample(args[0], args[1], ("bilinear", "nearest",
                                                               "bicubic")[args[2]],
                                            align_corners=False)
        with pytest.raises(RuntimeError) as je:
            jg.nn.functional.grid_sample(_j(args[0]), _j(args[1]), ("bilinear", "nearest",
                                                                   "bicubic")[args[2]],
                                         align_corners=False)
        assert str(je.value) == str(te.value)


def test_affine_grid_generator_matches_torch():
    theta = torch.randn(2, 2, 3, dtype=torch.float64)
    for align in (False, True):
        _check_grads(lambda m, th, a=align: m.affine_grid_generator(th, [2, 3, 4, 5], a), theta)


def test_native_layer_norm_returns_torch_statistics():
    torch.manual_seed(4)
    x, w, b = (torch.randn(2, 3, 4, dtype=torch.float64), torch.randn(4, dtype=torch.float64),
               torch.randn(4, dtype=torch.float64))
    got = jg.native_layer_norm(_j(x, True), [4], _j(w), _j(b), 1e-5)
    ref = torch.native_layer_norm(x.requires_grad_(), [4], w, b, 1e-5)
    for a, r in zip(got, ref):
        _close(a, r)
        assert a.requires_grad == r.requires_grad
    assert got[0].grad_fn.name() == "NativeLayerNormBackward0"
    assert gradcheck(lambda x: jg.native_layer_norm(x, (3, 4), None, None, 1e-5)[0],
                     (_j(x, True),))


def test_native_batch_norm_train_updates_running_stats_and_eval_returns_empty():
    torch.manual_seed(5)
    x, w = torch.randn(4, 3, 2, dtype=torch.float64), torch.randn(3, dtype=torch.float64)
    rm, rv = torch.randn(3, dtype=torch.float64), torch.rand(3, dtype=torch.float64) + 0.5
    jrm, jrv = _j(rm), _j(rv)
    for training in (True, False):
        got = jg.native_batch_norm(_j(x), _j(w), None, jrm, jrv, training, 0.1, 1e-5)
        ref = torch.native_batch_norm(x, w, None, rm, rv, training, 0.1, 1e-5)
        for a, r in zip(got, ref):
            _close(a, r)
        _close(jrm, rm)
        _close(jrv, rv)


def test_native_group_norm_statistics_and_gradients_match_torch():
    torch.manual_seed(6)
    x, w = torch.randn(2, 6, 5, dtype=torch.float64), torch.randn(6, dtype=torch.float64)
    got = jg.native_group_norm(_j(x), _j(w), None, 2, 6, 5, 3, 1e-5)
    ref = torch.native_group_norm(x, w, None, 2, 6, 5, 3, 1e-5)
    for a, r in zip(got, ref):
        _close(a, r)
    _check_grads(lambda m, x: sum(o.sum() for o in m.native_group_norm(x, None, None, 2, 6, 5,
                                                                         3, 1e-5)), x)


def test_native_dropout_mask_and_eval():
    x = jg.randn(200, dtype=jg.float64)
    out, mask = jg.native_dropout(x, 0.25, True)
    assert mask.dtype == jg.bool and 0 < int(mask.sum()) < 200
    _close(out, jg.where(mask, x / 0.75, 0.0))
    out, mask = jg.native_dropout(x, 0.25, False)
    _close(out, x)
    assert bool(mask.all()) and out is not x
    out, mask = jg.native_dropout(x, 1.0, True)
    assert not bool(mask.any()) and float(out.abs().sum()) == 0.0


def test_native_norm_of_sparse_values_and_its_refusals_match_torch():
    idx, vals = torch.tensor([[0, 0, 1], [1, 1, 0]]), torch.tensor([3.0, 4.0, -2.0])
    ts = torch.sparse_coo_tensor(idx, vals, (2, 2))  # (a duplicate entry: summed first)
    js = jg.sparse_coo_tensor(_j(idx), _j(vals), (2, 2))
    for args in [(), (1,), (3.0,), (2, [0, 1], False, None), (None, [], False, None)]:
        _close(jg.native_norm(js, *args), torch.native_norm(ts, *args))
    for call in (lambda m, s, d: m.native_norm(s, 2, [1], False, None),
                 lambda m, s, d: m.native_norm(s, 2, [], True, None),
                 lambda m, s, d: m.native_norm(s, 2, [], False, m.float64),
                 lambda m, s, d: m.native_norm(d)):
        with pytest.raises((RuntimeError, NotImplementedError)) as te:
            call(torch, ts, torch.ones(2))
        with pytest.raises(type(te.value)) as je:
            call(jg, js, jg.ones(2))
        assert str(je.value) in str(te.value)


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -2])
@pytest.mark.parametrize("p", [2, 3])
def test_norm_except_dim_matches_torch(dim, p):
    x = torch.randn(2, 3, 4, dtype=torch.float64)
    _check_grads(lambda m, x: m.norm_except_dim(x, p, dim), x)


def test_frobenius_and_nuclear_norm_match_torch_and_warn():
    x = torch.randn(2, 3, 4, dtype=torch.float64)
    for dims, keep in (([1, 2], False), ([1], True), ([], False), ((0, 1), True)):
        with pytest.warns(UserWarning, match="frobenius_norm is deprecated"):
            got = jg.frobenius_norm(_j(x), dims, keep)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _close(got, torch.frobenius_norm(x, dims, keep))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="Expected at most 2 dimensions, but got 3"):
            jg.frobenius_norm(_j(x), [0, 1, 2])
        _check_grads(lambda m, x: m.nuclear_norm(x), x)
        _check_grads(lambda m, x: m.nuclear_norm(x, [0, 2], True), x)
        _close(jg.nuclear_norm(_j(x[0]), True), torch.nuclear_norm(x[0], True))


def test_embedding_renorm_rescales_named_rows_in_place():
    w = torch.randn(5, 3)
    idx = torch.tensor([0, 2, 2])
    jw = _j(w)
    assert jg.embedding_renorm_(jw, _j(idx), 1.0, 2.0) is jw
    torch.embedding_renorm_(w, idx, 1.0, 2.0)
    _close(jw, w)
    with pytest.raises(RuntimeError) as e:
        jg.embedding_renorm_(jw, jg.tensor([1.0]), 1.0, 2.0)
    assert "Long, Int; but got torch.FloatTensor instead" in str(e.value)


def test_rnn_cells_match_torch():
    torch.manual_seed(7)
    x, h = torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 5, dtype=torch.float64)
    wi, wh = torch.randn(5, 4, dtype=torch.float64), torch.randn(5, 5, dtype=torch.float64)
    bi, bh = torch.randn(5, dtype=torch.float64), torch.randn(5, dtype=torch.float64)
    for name in ("rnn_tanh_cell", "rnn_relu_cell"):
        _check_grads(lambda m, *a, f=name: getattr(m, f)(*a), x, h, wi, wh, bi, bh)
    _check_grads(lambda m, x, h, w1, w2: m.gru_cell(x, h, w1, w2), x, h,
                 torch.randn(15, 4, dtype=torch.float64), torch.randn(15, 5, dtype=torch.float64))
    _check_grads(lambda m, x, h, c, w1, w2: sum(o.sum() for o in m.lstm_cell(x, (h, c), w1, w2)),
                 x, h, h * 2, torch.randn(20, 4, dtype=torch.float64),
                 torch.randn(20, 5, dtype=torch.float64))


def test_rnn_cell_errors_match_torch():
    x, h, wi, wh = torch.randn(3, 4), torch.randn(3, 5), torch.randn(5, 4), torch.randn(5, 5)
    for args in [(x, h, wi[:, :3], wh), (x, h[:2], wi, wh)]:
        with pytest.raises(RuntimeError) as te:
            torch.rnn_tanh_cell(*args)
        with pytest.raises(RuntimeError) as je:
            jg.rnn_tanh_cell(*[_j(a) for a in args])
        assert str(je.value) == str(te.value)
    with pytest.raises(RuntimeError, match="lstm_cell expects two hidden states"):
        jg.lstm_cell(_j(x), [_j(h)], _j(torch.randn(20, 4)), _j(torch.randn(20, 5)))


MODULES = [("lstm", lambda: torch.nn.LSTM(4, 5, 2, bidirectional=True)),
           ("gru", lambda: torch.nn.GRU(4, 5, 2, bias=False, batch_first=True)),
           ("rnn_tanh", lambda: torch.nn.RNN(4, 5, 1)),
           ("rnn_relu", lambda: torch.nn.RNN(4, 5, 2, nonlinearity="relu", bidirectional=True)),
           ("lstm", lambda: torch.nn.LSTM(4, 5, 1, proj_size=2))]


@pytest.mark.parametrize("name,make", MODULES)
def test_full_recurrent_functions_match_torch(name, make):
    torch.manual_seed(8)
    mod = make().double()
    xs = torch.randn(6, 3, 4, dtype=torch.float64)
    layers = mod.num_layers * (2 if mod.bidirectional else 1)
    h0 = torch.randn(layers, 6 if mod.batch_first else 3, mod.proj_size or mod.hidden_size,
                     dtype=torch.float64)
    c0 = torch.randn(layers, h0.shape[1], mod.hidden_size, dtype=torch.float64)
    flat = list(mod._flat_weights)

    def hx(m, h, c):
        return (h, c) if name == "lstm" else h

    ref = getattr(torch, name)(xs, hx(torch, h0, c0), flat, mod.bias, mod.num_layers, 0.0,
                               False, mod.bidirectional, mod.batch_first)
    got = getattr(jg, name)(_j(xs), hx(jg, _j(h0), _j(c0)), [_j(w) for w in flat], mod.bias,
                            mod.num_layers, 0.0, False, mod.bidirectional, mod.batch_first)
    for a, r in zip(got, ref):
        _close(a, r, 1e-6)
    packed = torch.nn.utils.rnn.pack_padded_sequence(xs, [6, 4, 3])
    h0, c0 = h0[:, :3], c0[:, :3]
    ref = getattr(torch, name)(packed.data, packed.batch_sizes, hx(torch, h0, c0), flat,
                               mod.bias, mod.num_layers, 0.0, False, mod.bidirectional)
    got = getattr(jg, name)(_j(packed.data), jg.tensor(packed.batch_sizes.numpy()),
                            hx(jg, _j(h0), _j(c0)), [_j(w) for w in flat], mod.bias,
                            mod.num_layers, 0.0, False, mod.bidirectional)
    for a, r in zip(got, ref):
        _close(a, r, 1e-6)


def test_lstm_function_gradcheck():
    torch.manual_seed(9)
    w = [_j(torch.randn(*s, dtype=torch.float64) * 0.5) for s in ((8, 3), (8, 2), (8,), (8,))]
    h0, c0 = jg.zeros(1, 2, 2, dtype=jg.float64), jg.zeros(1, 2, 2, dtype=jg.float64)
    x = _j(torch.randn(4, 2, 3, dtype=torch.float64), True)
    assert gradcheck(lambda x: jg.lstm(x, (h0, c0), w, True, 1, 0.0, False, False, False)[0],
                     (x,))


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod", "amax", "amin"])
@pytest.mark.parametrize("initial", [None, 2.5])
def test_segment_reduce_matches_torch(reduce, initial):
    data = torch.tensor([1.0, 2.0, 2.0, 4.0, 0.5, 3.0], dtype=torch.float64)
    lengths = torch.tensor([3, 0, 1, 2])
    _check_grads(lambda m, d: m.segment_reduce(d, reduce, lengths=_j(lengths) if m is jg
                                                else lengths, initial=initial), data)
    offsets = torch.tensor([0, 3, 3, 4, 6])
    _close(jg.segment_reduce(_j(data), reduce, offsets=_j(offsets), initial=initial),
           torch.segment_reduce(data, reduce, offsets=offsets, initial=initial))
    rows = torch.randn(2, 6, 3, dtype=torch.float64)
    lengths2 = torch.tensor([[2, 4], [3, 3]])
    _close(jg.segment_reduce(_j(rows), reduce, lengths=_j(lengths2), axis=1, initial=initial),
           torch.segment_reduce(rows, reduce, lengths=lengths2, axis=1, initial=initial))


def test_segment_reduce_errors_match_torch():
    d, lengths = torch.arange(6.0), torch.tensor([2, 4])
    cases = [lambda m, d, l: m.segment_reduce(d, "foo", lengths=l),
             lambda m, d, l: m.segment_reduce(d, "sum"),
             lambda m, d, l: m.segment_reduce(d, "sum", lengths=l[:1]),
             lambda m, d, l: m.segment_reduce(d, "sum", indices=l),
             lambda m, d, l: m.segment_reduce(d, "sum", lengths=l.float())]
    for case in cases:
        with pytest.raises((RuntimeError, NotImplementedError)) as te:
            case(torch, d, lengths)
        with pytest.raises(type(te.value)) as je:
            case(jg, _j(d), _j(lengths))
        assert str(je.value) == str(te.value)


def test_empty_permuted_strides_match_torch():
    for size, layout in (((2, 3, 4), (2, 0, 1)), ((2, 3), (1, 0)), ((5,), (0,))):
        got, ref = jg.empty_permuted(size, layout), torch.empty_permuted(size, layout)
        assert tuple(got.shape) == tuple(ref.shape) and got.stride() == ref.stride()
    t = jg.empty_permuted((2, 3), (1, 0), dtype=jg.float64, requires_grad=True)
    assert t.requires_grad and t.is_leaf and t.dtype == jg.float64
    for bad in [((2, 3), (0, 0)), ((2, 3), (0,))]:
        with pytest.raises(RuntimeError) as te:
            torch.empty_permuted(*bad)
        with pytest.raises(RuntimeError) as je:
            jg.empty_permuted(*bad)
        assert str(je.value) == str(te.value)


def test_slice_inverse_and_as_strided_in_place():
    b = torch.arange(12.0).reshape(3, 4)
    jb = _j(b)
    _close(jg.slice_inverse(jb[:, 1:3], jb, 1, 1, 3, 1), torch.slice_inverse(b[:, 1:3], b, 1, 1,
                                                                             3, 1))
    _close(jb[:, 1:3].slice_inverse(jb, 1, 1, 3), b[:, 1:3].slice_inverse(b, 1, 1, 3))
    base, tx = jg.arange(6.0), torch.arange(6.0)
    x = base[:]
    assert x.as_strided_((2, 2), (1, 2), 1) is x
    tx.as_strided_((2, 2), (1, 2), 1)
    _close(x, tx)
    assert x.stride() == tx.stride() and x.storage_offset() == tx.storage_offset()
    x[0, 0] = 100.0  # a view of its storage: the write reaches the memory it shares
    assert float(base[1]) == 100.0
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        jg.zeros(4, requires_grad=True).as_strided_((2,), (1,))


def test_svd_and_pca_lowrank_recover_a_low_rank_matrix():
    jg.manual_seed(0)
    a = jg.randn(20, 5, dtype=jg.float64) @ jg.randn(5, 12, dtype=jg.float64)
    for A in (a, a.mT):
        u, s, v = jg.svd_lowrank(A, q=7)
        assert tuple(u.shape) == (A.shape[0], 7) and tuple(v.shape) == (A.shape[1], 7)
        _close(u @ jg.diag_embed(s) @ v.mT, A, 1e-8)
        _close(s[:5], np.linalg.svd(A.numpy())[1][:5], 1e-8)
    centered = a - a.mean(-2, keepdim=True)
    u, s, v = jg.pca_lowrank(a, q=6)
    _close(s[:5], np.linalg.svd(centered.numpy())[1][:5], 1e-8)
    u, s, v = jg.svd_lowrank(a, q=6, M=a.mean(-2, keepdim=True))
    _close(s[:5], np.linalg.svd(centered.numpy())[1][:5], 1e-8)
    with pytest.raises(ValueError, match=r"q\(=13\) must be non-negative integer"):
        jg.pca_lowrank(a, q=13)
    x = jg.randn(6, 4, dtype=jg.float64, requires_grad=True)
    jg.manual_seed(1)
    jg.svd_lowrank(x, q=4)[1].sum().backward()  # differentiable (the sum of singular values)
    _close(x.grad, np.linalg.svd(x.detach().numpy(), full_matrices=False)[0]
           @ np.linalg.svd(x.detach().numpy(), full_matrices=False)[2], 1e-6)


def test_version_module_as_torch_version():
    # (llm.c's train_gpt2.py prints torch.version.__version__)
    import jitgrad as jg

    assert jg.version.__version__ == jg.__version__
    assert jg.version.cuda is None and jg.version.hip is None and jg.version.debug is False
    torch = pytest.importorskip("torch")
    assert set(jg.version.__all__) <= set(dir(torch.version))
