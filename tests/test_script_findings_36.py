"""What the user-script sets L35-N35 found, each checked against torch where installed: shape
arguments by keyword (MAE's ``imgs.reshape(shape=...)``), SDPA with a mask and
``is_causal=True`` on the flash path, warnings that name the user's line, ``from_numpy`` of
negative strides, and the transformer module's private helpers."""

import warnings

import numpy as np
import pytest

import jitgrad
import jitgrad.nn.functional as F


def _torch():
    return pytest.importorskip("torch")


def _shapes(lib):
    x = lib.arange(24.0).view(2, 3, 4)
    return [tuple(t.shape) for t in (
        x.reshape(shape=(4, 6)), lib.reshape(x, shape=(4, 6)), x.view(size=(4, 6)),
        x.permute(dims=(2, 0, 1)), lib.permute(x, dims=(2, 0, 1)), x.repeat(repeats=(1, 2, 1)),
        x[:, :1].expand(size=(2, 5, 4)))] + [str(x.view(dtype=lib.int32).dtype).split(".")[1]]


def test_shape_arguments_by_keyword():
    ours = _shapes(jitgrad)
    assert ours[0] == (4, 6) and ours[3] == (4, 2, 3) and ours[-1] == "int32"
    x = jitgrad.zeros(2, 3)
    with pytest.raises(TypeError, match="reshape\\(\\) received an invalid combination"):
        x.reshape((3, 2), shape=(3, 2))
    with pytest.raises(TypeError, match="permute\\(\\) received an invalid combination"):
        x.permute(1, 0, dims=(1, 0))
    assert ours == _shapes(_torch())


def _sdpa(lib, float_mask: bool, shape=(2, 2, 3, 4), dropout_p=0.0):
    rng = np.random.default_rng(0)
    q, k, v = (lib.tensor(rng.standard_normal(shape), dtype=lib.float64, requires_grad=True)
               for _ in range(3))
    mask = lib.tensor(np.array([[True, False, True], [True, True, True], [False, True, True]]))
    if float_mask:
        mask = lib.tensor(rng.standard_normal((3, 3)), dtype=lib.float64)
    try:
        out = lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                             is_causal=True, dropout_p=dropout_p)
    except RuntimeError as e:
        return str(e)
    out.square().sum().backward()
    return [t.detach().numpy() for t in (out, q.grad, k.grad, v.grad)]


@pytest.mark.parametrize("float_mask", [False, True])
def test_sdpa_mask_and_is_causal_on_the_flash_path(float_mask):
    ours = _sdpa(jitgrad, float_mask)
    # both masks: the causal one alone would let the first row attend to key 0 only, as here
    causal_only = F.scaled_dot_product_attention(
        *(jitgrad.tensor(np.random.default_rng(0).standard_normal((2, 2, 3, 4)))
          for _ in range(3)), is_causal=True)
    assert not np.allclose(ours[0], causal_only.numpy())
    # 3-D inputs (the math path) refuse the pair, as torch's
    refused = _sdpa(jitgrad, float_mask, shape=(2, 3, 4))
    assert refused == ("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                       "when is_causal=True")
    torch = _torch()
    theirs = _sdpa(torch, float_mask)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert refused == _sdpa(torch, float_mask, shape=(2, 3, 4))


def _warning_lines(lib):
    fn = lib.nn.functional
    x, t = lib.zeros(2, 3), lib.zeros(1, 3)
    calls = [lambda: fn.mse_loss(x, t), lambda: fn.l1_loss(x, t),
             lambda: fn.smooth_l1_loss(x, t), lambda: fn.huber_loss(x, t),
             lambda: fn.kl_div(x, x),
             lambda: fn.grid_sample(lib.zeros(1, 1, 2, 2), lib.zeros(1, 2, 2, 2)),
             lambda: fn.nll_loss(x, lib.zeros(2).long(), reduce=False)]
    where = []
    for call in calls:
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            call()
        where.append([w.filename for w in ws])
    return where


def test_functional_warnings_name_the_users_line():
    for files in _warning_lines(jitgrad):
        assert files == [__file__], files


def test_from_numpy_refuses_negative_strides():
    with pytest.raises(ValueError, match="At least one stride in the given numpy array is "
                                         "negative, and tensors with negative strides are not "
                                         "currently supported"):
        jitgrad.from_numpy(np.arange(3)[::-1])
    torch = _torch()
    with pytest.raises(ValueError) as theirs:
        torch.from_numpy(np.arange(3)[::-1])
    with pytest.raises(ValueError) as ours:
        jitgrad.from_numpy(np.arange(3)[::-1])
    assert str(ours.value) == str(theirs.value)


def test_transformer_private_helpers():
    from jitgrad.nn.modules import transformer

    x = jitgrad.zeros(2, 5, 4)
    assert transformer._get_seq_len(x, True) == 5
    assert transformer._get_seq_len(x, False) == 2
    assert transformer._get_seq_len(jitgrad.zeros(5, 4), True) == 5  # (unbatched)
    causal = jitgrad.nn.Transformer.generate_square_subsequent_mask(4)
    assert transformer._detect_is_causal_mask(causal) is True
    assert transformer._detect_is_causal_mask(jitgrad.zeros(4, 4)) is False
    assert transformer._detect_is_causal_mask(None, is_causal=True) is True
    assert transformer._detect_is_causal_mask(None) is False
    torch = _torch()
    from torch.nn.modules import transformer as theirs

    t_causal = torch.nn.Transformer.generate_square_subsequent_mask(4)
    assert theirs._detect_is_causal_mask(t_causal) is True
    assert theirs._detect_is_causal_mask(torch.zeros(4, 4)) is False
    assert theirs._get_seq_len(torch.zeros(2, 5, 4), True) == 5


def _inf_and_nan(lib):
    x = lib.tensor([0.0, -1.0, 2.0, 1e30], requires_grad=True)
    y = (x / x).nansum() + x.log().sum() + x.sqrt().nansum() + (x * 1e10).exp().sum() \
        + (x ** -1).sum() + x.reciprocal().sum() + (1 / x).sum() + x.log1p().sum()
    y.backward()
    z = lib.zeros(3)
    return [y.item(), x.grad.tolist(), (z / z).tolist(), z.log().tolist(),
            lib.tensor([1e30]).float().pow(3).tolist()]


def test_ops_give_inf_and_nan_silently_under_an_error_filter():
    # (NumPy's floating-point warnings, even where the user's filters turn warnings into
    # errors: pytest -W error, warnings.simplefilter("error"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = _inf_and_nan(jitgrad)
        f = jitgrad.jit(lambda t: (t.log() + 1 / t).sum(), backend="interpreter")
        jitted = f(jitgrad.zeros(2)).item()
    assert jitted == float("inf") or np.isnan(jitted)
    torch = _torch()
    theirs = _inf_and_nan(torch)
    np.testing.assert_equal(np.array(ours[0]), np.array(theirs[0]))
    for a, b in zip(ours[1:], theirs[1:]):
        np.testing.assert_equal(np.array(a), np.array(b))


def _ufuncs(lib):
    t = lib.tensor([0.5, 2.0])
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # (torch's __array_wrap__ signature)
        for r in (np.exp(t), np.clip(t, 0, 1), np.isnan(t), np.add(t, 1), np.maximum(t, 1.0),
                  np.exp(lib.tensor(1.0)), np.sqrt(t.double())):
            out.append((type(r).__name__, str(r.dtype).split(".")[1], r.tolist()))
    return out


def test_numpy_ufuncs_on_a_tensor_give_a_tensor():
    ours = _ufuncs(jitgrad)
    assert ours[0][0] == "Tensor" and ours[2][1] == "uint8"  # (bool results as uint8)
    theirs = _ufuncs(_torch())
    assert [o[:2] for o in ours] == [t[:2] for t in theirs]
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o[2], t[2], rtol=1e-6)


def _optimizer_helpers(lib):
    from importlib import import_module

    o = import_module(f"{lib.__name__}.optim.optimizer")
    p = lib.nn.Parameter(lib.ones(2))
    opt = lib.optim.SGD([p], lr=0.1)
    opt.defaults["differentiable"] = True
    seen = []

    @o._use_grad_for_differentiable
    def step(self):
        seen.append(lib.is_grad_enabled())

    with lib.no_grad():
        step(opt)
    opt.defaults["differentiable"] = False
    step(opt)
    return (o._get_value(lib.tensor(3.0)), o._get_value(2), str(o._get_scalar_dtype()),
            str(o._get_scalar_dtype(True)), o._default_to_fused_or_foreach([p], False),
            o._default_to_fused_or_foreach([p], False, True),
            o._default_to_fused_or_foreach([p], True, True), seen, lib.is_grad_enabled(),
            isinstance(o._foreach_doc, str) and "foreach" in o._foreach_doc,
            step.__name__)


def test_optimizer_module_helpers():
    from jitgrad.optim.optimizer import ParamsT

    assert "Iterable" in str(ParamsT)
    ours = _optimizer_helpers(jitgrad)
    assert ours[0] == 3.0 and ours[4] == (False, False) and ours[5] == (True, False)
    assert ours[7] == [True, False] and ours[8] is True  # (grad mode restored)
    theirs = _optimizer_helpers(_torch())
    assert [str(o).replace("jitgrad", "torch") for o in ours] == [str(t) for t in theirs]


def test_foreach_maximum_and_minimum_in_place():
    def run(lib):
        a = [lib.zeros(2), lib.full((3,), 2.0)]
        r = lib._foreach_maximum_(a, [lib.ones(2), lib.ones(3)])
        lib._foreach_minimum_(a, 0.5)
        lib._foreach_maximum_(a, [0.7, 0.1])
        return r is a, [t.tolist() for t in a]

    ours = run(jitgrad)
    assert ours[0] and np.allclose(ours[1][0], 0.7) and ours[1][1] == [0.5] * 3
    assert ours == run(_torch())


def _conv_forward(lib):
    lib.manual_seed(0)
    out = []
    for conv, shape in ((lib.nn.Conv1d(2, 3, 3, padding=1), (1, 2, 5)),
                        (lib.nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), (1, 2, 4, 4)),
                        (lib.nn.Conv3d(2, 3, 1), (1, 2, 2, 2, 2))):
        x = lib.randn(*shape)
        direct = conv._conv_forward(x, conv.weight * 0.5, conv.bias)
        out.append(direct.detach().numpy())

    class Masked(lib.nn.Conv2d):  # PixelCNN's pattern: forward goes through _conv_forward
        def _conv_forward(self, input, weight, bias):  # noqa: A002
            return super()._conv_forward(input, weight * self.mask, bias)

    m = Masked(1, 1, 3, padding=1)
    m.mask = lib.zeros(1, 1, 3, 3)
    out.append(m(lib.randn(1, 1, 3, 3)).detach().numpy())
    return out


def test_conv_forward_is_the_layers_computation():
    ours = _conv_forward(jitgrad)
    np.testing.assert_array_equal(ours[-1], np.broadcast_to(ours[-1][0, 0, 0, 0], (1, 1, 3, 3)))
    for a, b in zip(ours, _conv_forward(_torch())):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _module_private_api(lib):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.BatchNorm1d(2))
    model(lib.randn(3, 2)).sum().backward()
    model._apply(lambda t: t.double())
    kinds = [str(t.dtype) for t in list(model.parameters()) + list(model.buffers())]
    grads = [str(p.grad.dtype) for p in model.parameters()]
    log = []
    model[0]._register_state_dict_hook(lambda m, sd, prefix, meta: log.append(prefix))
    model._register_state_dict_hook(lambda m, sd, prefix, meta: {"replaced": 1})
    replaced = model.state_dict()
    model[1]._register_load_state_dict_pre_hook(
        lambda sd, prefix, *rest: log.append(("pre", prefix, len(rest))))
    model[1]._register_load_state_dict_pre_hook(
        lambda m, sd, prefix, *rest: log.append(("with module", type(m).__name__)),
        with_module=True)
    state = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.BatchNorm1d(2)).double().state_dict()
    model.load_state_dict(state)

    def public(m, sd, prefix, meta):
        return None

    model.register_state_dict_post_hook(public)
    try:
        model._register_state_dict_hook(public)
    except RuntimeError as e:
        log.append(str(e))
    tables = [type(getattr(lib.nn.Linear(1, 1), name)).__name__ for name in (
        "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
        "_load_state_dict_post_hooks")]
    return kinds, grads, replaced, log, tables


def test_module_apply_and_private_state_dict_hooks():
    ours = _module_private_api(jitgrad)
    assert set(ours[0]) == {"jitgrad.float64"} and ours[2] == {"replaced": 1}
    theirs = _module_private_api(_torch())
    assert repr(ours).replace("jitgrad", "torch") == repr(theirs)


def _bag_errors(lib):
    bag = lib.nn.EmbeddingBag(10, 3, mode="sum")
    x = lib.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    last = lib.nn.EmbeddingBag(10, 3, mode="sum", include_last_offset=True)
    calls = [lambda: bag(x, lib.tensor([1, 4])), lambda: bag(x, lib.tensor([0, 9])),
             lambda: bag(lib.tensor([10]), lib.tensor([0])),
             lambda: bag(lib.tensor([-1]), lib.tensor([0])),
             lambda: bag(x.float(), lib.tensor([0, 4])),
             lambda: bag(x, lib.tensor([0, 4]).float()),
             lambda: bag(x, lib.tensor([0, 4]), per_sample_weights=lib.ones(7)),
             lambda: lib.nn.EmbeddingBag(10, 3, mode="mean")(
                 x, lib.tensor([0, 4]), per_sample_weights=lib.ones(7)),
             lambda: last(x, lib.tensor([0, 4, 9])), lambda: last(x, lib.tensor([1, 4, 8])),
             lambda: lib.zeros(3).index_add_(0, lib.tensor([0, 3]), lib.tensor([1.0, 2.0])),
             lambda: lib.zeros(3, 2).index_add_(0, lib.tensor([0, 5]), lib.ones(2, 2))]
    out = []
    for call in calls:
        try:
            call()
            out.append("ok")
        except Exception as e:  # noqa: BLE001 - compared with torch's
            out.append((type(e).__name__, str(e).replace("jitgrad", "torch")))
    out.append(tuple(last(x, lib.tensor([0, 4, 8])).shape))
    return out


def test_embedding_bag_and_index_add_check_their_indices():
    ours = _bag_errors(jitgrad)
    assert ours[0][0] == "RuntimeError" and "offsets[0] has to be 0" in ours[0][1]
    assert ours[-1] == (2, 3)
    assert ours == _bag_errors(_torch())


def _sparse_gradients(lib):
    weight = lib.tensor(np.arange(12.0).reshape(6, 2) / 7, requires_grad=True)
    ids, offsets = lib.tensor([1, 2, 2, 5]), lib.tensor([0, 2])
    out = []
    for through in (lambda w: w ** 2, lambda w: w * w, lambda w: w.exp(), lambda w: w.clone(),
                    lambda w: w.view(6, 2)):
        weight.grad = None
        try:
            lib.nn.functional.embedding_bag(ids, through(weight), offsets, mode="sum",
                                            sparse=True).sum().backward()
            out.append(weight.grad.to_dense().tolist())
        except RuntimeError as e:
            out.append(str(e))
    s = lib.sparse_coo_tensor(lib.tensor([[0, 1, 1]]), lib.tensor([[3.0, 4.0], [1.0, 1.0],
                                                                  [0.0, 1.0]]), (3, 2))
    norms = [s.norm().item(), lib.norm(s).item(), s.norm(1).item(), s.norm(float("inf")).item(),
             s.norm(0).item(), s.norm(dim=(0, 1)).item()]
    try:
        s.norm(dim=0)
    except RuntimeError as e:
        norms.append(str(e))
    return out, norms


def test_sparse_gradients_through_dense_ops_and_sparse_norms():
    # (the gradient through w ** 2 crashed in the array lane: a sparse storage has no layout)
    ours = _sparse_gradients(jitgrad)
    assert ours[0][4] == "reshape is not implemented for sparse tensors"
    theirs = _sparse_gradients(_torch())
    assert ours[0][4] == theirs[0][4]
    for a, b in zip(ours[0][:4], theirs[0][:4]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    np.testing.assert_allclose(ours[1][:6], theirs[1][:6], rtol=1e-6)
    assert ours[1][6:] == theirs[1][6:]


def _padded(lib):
    rng = np.random.default_rng(3)
    out = []
    for dtype, trailing in (("float32", ()), ("int64", ()), ("float64", (2,)), ("bool", ())):
        seqs = [lib.tensor(rng.standard_normal((n, *trailing)) * 5).to(getattr(lib, dtype))
                for n in (3, 1, 4)]
        for batch_first in (False, True):
            for side in ("right", "left"):
                r = lib.nn.utils.rnn.pad_sequence(seqs, batch_first=batch_first,
                                                  padding_value=-100, padding_side=side)
                out.append((str(r.dtype).split(".")[1], tuple(r.shape), r.double().tolist()))
    w = lib.ones(2, 3, requires_grad=True)
    r = lib.nn.utils.rnn.pad_sequence([w * 2, lib.zeros(4, 3)], batch_first=True)
    r.sum().backward()
    out.append((type(r.grad_fn).__name__, w.grad.tolist()))
    mixed = lib.nn.utils.rnn.pad_sequence([lib.ones(2, 3), lib.ones(1, 1, dtype=lib.int64)])
    out.append(mixed.tolist())
    return out


def test_pad_sequence_of_a_data_batch():
    ours = _padded(jitgrad)
    assert ours[0][1] == (4, 3)
    assert ours == _padded(_torch())


def _training_plumbing(lib):
    out = []
    a = lib.nn.Parameter(lib.ones(1, dtype=lib.float16))
    a.grad = lib.ones(1, dtype=lib.float16)
    b = lib.nn.Parameter(lib.ones(1))
    b.grad = lib.tensor([1e5])
    total = lib.nn.utils.clip_grad_norm_([a, b], 1.0, error_if_nonfinite=True)
    out.append((str(total.dtype).split(".")[1], total.item()))
    c, d = lib.tensor([3.0]), lib.tensor([4.0], dtype=lib.float64)
    out.append(str(lib.nn.utils.get_total_norm([c, d]).dtype).split(".")[1])
    for dt in ("bfloat16", "float16"):
        p = lib.nn.Parameter(lib.zeros(2, dtype=getattr(lib, dt)))
        p.grad = lib.tensor([0.0073, 0.000235], dtype=getattr(lib, dt))
        lib.nn.utils.clip_grads_with_norm_([p], 1.0, lib.tensor(7.0))
        out.append(p.grad.tolist())
    h = lib.tensor([0.0073, 0.000235, 1.1, 3.3], dtype=lib.float16)
    out.append([(h * 0.1).tolist(), (h * lib.tensor(1 / 7)).tolist(), (h + 0.001).tolist(),
                (0.3 - h).tolist(), (h * lib.tensor(0.1, dtype=lib.float64)).tolist()])
    with lib.inference_mode():
        w = lib.ones(2)
        inside = lib.nn.Parameter(w)
    out.append((inside.requires_grad, inside.is_inference()))
    for call in (lambda: lib.nn.Parameter(w), lambda: lib.Generator().graphsafe_get_state()):
        try:
            call()
        except (RuntimeError, NotImplementedError) as e:
            out.append((type(e).__name__, str(e)))
    import io

    buf = io.BytesIO()
    lib.save({"a": lib.ones(1)}, buf)
    buf.seek(0)
    try:
        lib.load(buf, mmap=True)
    except ValueError as e:
        out.append(str(e))
    return out


def test_clipping_float16_scalars_and_checkpoint_plumbing():
    ours = _training_plumbing(jitgrad)
    assert ours[0] == ("float32", 100000.0) and ours[1] == "float64"
    assert ours == _training_plumbing(_torch())


def _half_with_numbers(lib):
    h = lib.tensor([0.0073, -0.000235, 1.1, 3.3, -7.7, 1000.0], dtype=lib.float16)
    third = lib.tensor(0.3)
    results = [h + 0.3, 0.3 + h, h - 0.3, 0.3 - h, h * 0.3, h / 0.3, 0.3 / h, h ** 2,
               h.abs() ** 0.3, 1.1 ** h, h % 0.3, h // 0.3, h * 3, lib.add(h, 0.3, alpha=2),
               h * third, h + lib.tensor(0.3, dtype=lib.float64), h.clone().mul_(0.3),
               h.clone().add_(0.3), lib.fmod(h, 0.3), lib.atan2(h, third),
               lib.lerp(h, h * 2, 0.3)]
    return [r.tolist() for r in results]


def test_float16_with_a_number_rounds_as_torchs_kernels():
    # (mul/div/add/sub/pow read the number in float; remainder, fmod, atan2 and add with alpha
    # take it as float16, as torch's kernels)
    ours, theirs = _half_with_numbers(jitgrad), _half_with_numbers(_torch())
    for k, (a, b) in enumerate(zip(ours, theirs)):
        np.testing.assert_array_equal(np.array(a), np.array(b), err_msg=str(k))
