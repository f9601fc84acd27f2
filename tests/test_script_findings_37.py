"""What the user-script sets Q35-T35 (N-BEATS/TFT, EGNN/SchNet, distributions, differentiable
physics with LBFGS) found: each case as torch behaves."""

import warnings

import numpy as np
import pytest

import jitgrad as jg
from jitgrad import nn

D = jg.distributions

# ------------------------------------------------------------------ cdist's matrix-product form


@pytest.mark.parametrize("dtype", [jg.float32, jg.float64])
def test_cdist_product_form_gives_zero_to_a_row_and_itself(dtype):
    # (a clamp at 1e-30 gave 1e-15, and `dist > 0` masks of self-pairs kept every pair)
    rows = jg.tensor([[float(i % 3), float(i % 5), 1.0] for i in range(30)], dtype=dtype)
    assert (jg.cdist(rows, rows).diagonal() == 0).all()
    x = jg.tensor([[0.0, 0, 0], [1, 2, 2]], dtype=dtype)
    d = jg.cdist(x, x, compute_mode="use_mm_for_euclid_dist")
    assert d.tolist() == [[0.0, 3.0], [3.0, 0.0]]


def test_cdist_product_form_node_and_zero_distance_subgradient():
    x = jg.tensor([[0.0, 0, 0], [1, 2, 2]], requires_grad=True)
    d = jg.cdist(x, x, compute_mode="use_mm_for_euclid_dist")
    assert d.grad_fn.name() == "ViewBackward0"
    assert d.grad_fn.next_functions[0][0].name() == "EuclideanDistBackward0"
    g, = jg.autograd.grad(d.sum(), x, create_graph=True)
    # d|x_i - x_j| / dx_i over j != i only: the zero distances add the subgradient 0
    np.testing.assert_allclose(g.detach().numpy(), [[-2 / 3, -4 / 3, -4 / 3],
                                                    [2 / 3, 4 / 3, 4 / 3]], rtol=1e-6)
    gg, = jg.autograd.grad(g.pow(2).sum(), x)
    assert np.isfinite(gg.numpy()).all()
    # under jit (the op's primitives): the same finite gradient
    y = jg.tensor([[0.0, 0, 0], [1, 2, 2]] * 14, requires_grad=True)
    eager, = jg.autograd.grad(jg.cdist(y, y).sum(), y)
    jitted, = jg.autograd.grad(jg.jit(lambda t: jg.cdist(t, t).sum())(y), y)
    np.testing.assert_allclose(jitted.numpy(), eager.numpy(), rtol=1e-5, atol=1e-6)


def test_cdist_product_form_gradients_pass_gradcheck_over_batches():
    rng = np.random.default_rng(0)
    a = jg.tensor(rng.standard_normal((3, 4, 3)), requires_grad=True)
    b = jg.tensor(rng.standard_normal((1, 5, 3)), requires_grad=True)

    def f(u, v):
        return jg.cdist(u, v, compute_mode="use_mm_for_euclid_dist")
    assert jg.autograd.gradcheck(f, (a, b))
    assert jg.autograd.gradgradcheck(f, (a, b))


def test_cdist_matches_torch_on_both_forms():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 40, 7)), rng.standard_normal((2, 33, 7))
    ct = rng.standard_normal((2, 40, 33))
    out = {}
    for lib in (jg, torch):
        x = lib.tensor(a, requires_grad=True)
        y = lib.tensor(b, requires_grad=True)
        d = lib.cdist(x, y)
        d.backward(lib.tensor(ct))
        out[lib] = [t.detach().numpy() for t in (d, x.grad, y.grad)]
    for ours, theirs in zip(out[jg], out[torch]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_cdist_refuses_mixed_dtypes_as_torch():
    small, large = (3, 3), (30, 3)
    with pytest.raises(RuntimeError, match="^expected scalar type Double but found Float$"):
        jg.cdist(jg.randn(*small, dtype=jg.float64), jg.randn(*small))
    with pytest.raises(RuntimeError, match="^expected m1 and m2 to have the same dtype, but got: "
                                           "double != float$"):
        jg.cdist(jg.randn(*large, dtype=jg.float64), jg.randn(*large))
    with pytest.raises(RuntimeError, match="^\"cdist\" not implemented for 'BFloat16'$"):
        jg.cdist(jg.randn(*small, dtype=jg.bfloat16), jg.randn(*small))


# ------------------------------------------------------------------ argument errors


def test_linalg_norm_with_a_matrix_order_refuses_a_vector():
    for order in ("fro", "nuc"):
        with pytest.raises(RuntimeError, match="linalg.matrix_norm: The input tensor A must "
                                               "have at least 2 dimensions."):
            jg.linalg.norm(jg.tensor([1.0, -3.0]), ord=order)


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin"])
def test_binary_ops_of_two_tensors_refuse_a_number(name):
    x = jg.tensor([-1.0, 2.0])
    with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'other' \(position 2\) must be "
                                        r"Tensor, not float$"):
        getattr(jg, name)(x, 0.5)
    with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'other' \(position 1\) must be "
                                        r"Tensor, not float$"):
        getattr(x, name)(0.5)
    with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'input' \(position 1\) must be "
                                        r"Tensor, not float$"):
        getattr(jg, name)(0.5, x)
    out = jg.empty(2)
    getattr(jg, name)(x, jg.tensor([0.5, 0.5]), out=out)
    assert out.tolist() == ([0.5, 2.0] if name in ("maximum", "fmax") else [-1.0, 0.5])


def test_max_and_min_of_a_tensor_and_a_number_is_a_parser_error():
    for name in ("max", "min"):
        with pytest.raises(TypeError, match=rf"^{name}\(\) received an invalid combination of "
                                            r"arguments - got \(Tensor, float\), but expected"):
            getattr(jg, name)(jg.tensor([-1.0, 2.0]), 0.5)


def test_lstm_state_errors():
    lstm = nn.LSTM(4, 5, batch_first=True)
    with pytest.raises(IndexError, match="index 1 is out of bounds for dimension 0 with size 1"):
        lstm(jg.zeros(3, 7, 4), jg.zeros(1, 3, 5))  # (one tensor where (h0, c0) goes)
    with pytest.raises(TypeError, match=r"lstm_cell\(\): argument 'hx' \(position 2\) must be "
                                        "tuple of Tensors, not Tensor"):
        nn.LSTMCell(4, 5)(jg.zeros(3, 4), jg.zeros(3, 5))


def test_mask_dtype_errors_name_the_dtype_as_torch():
    x = jg.zeros(2)
    for dtype, word in ((jg.int64, "long int"), (jg.uint8, "unsigned char"),
                        (jg.int16, "short int"), (jg.float16, "c10::Half")):
        with pytest.raises(RuntimeError, match=f"boolean masks, but got mask with dtype {word}$"):
            x.masked_fill(jg.ones(2, dtype=dtype), 1.0)
    with pytest.raises(RuntimeError, match="boolean masks, but got mask with dtype Long$"):
        x.masked_scatter(jg.ones(2, dtype=jg.int64), jg.ones(2))
    with pytest.raises(RuntimeError, match="same dtypes but gotFloat and Double$"):
        x.masked_scatter(jg.ones(2, dtype=jg.bool), jg.ones(2, dtype=jg.float64))


def test_segment_reduce_axis_must_be_the_lengths_last_dim():
    data = jg.randn(2, 5)
    with pytest.raises(RuntimeError, match="Expected axis to be the last dimension of lengths "
                                           "but got 1."):
        jg.segment_reduce(data, "sum", lengths=jg.tensor([2, 3]), axis=1)
    with pytest.raises(RuntimeError, match="Expected axis to be the last dimension of offsets "
                                           "but got 1."):
        jg.segment_reduce(data, "sum", offsets=jg.tensor([0, 2, 5]), axis=1)
    out = jg.segment_reduce(data, "sum", lengths=jg.tensor([[2, 3], [1, 4]]), axis=1)
    np.testing.assert_allclose(out[1].numpy(), [data[1, :1].sum().item(),
                                                data[1, 1:].sum().item()], rtol=1e-6)


def test_index_reduce_warns_it_is_beta_once(monkeypatch):
    from jitgrad import _config

    monkeypatch.setattr(_config, "WARNED", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            jg.zeros(3).index_reduce(0, jg.tensor([0, 1]), jg.ones(2), "amax")
    assert [str(w.message) for w in caught] == [
        "index_reduce() is in beta and the API may change at any time."]


def test_lbfgs_keeps_an_int_learning_rate_in_its_step():
    p = jg.tensor([1.5, -0.5], requires_grad=True)
    opt = jg.optim.LBFGS([p], max_iter=3)

    def closure():
        opt.zero_grad()
        loss = (p ** 2).sum() + p[0] * p[1]
        loss.backward()
        return loss
    opt.step(closure)
    opt.step(closure)
    t = opt.state[p]["t"]
    assert t == 1 and type(t) is int


# ------------------------------------------------------------------ distributions


def test_distributions_of_python_numbers_sample_0d_tensors():
    for dist in (D.Normal(0.0, 1.0), D.LogNormal(0.0, 1.0), D.Uniform(0.0, 1.0)):
        assert dist.sample().shape == () and dist.rsample((2,)).shape == (2,)


def test_bernoulli_log_prob_refuses_an_integer_value():
    b = D.Bernoulli(logits=jg.zeros(2))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        b.log_prob(jg.tensor([0, 1]))
    assert b.log_prob(jg.tensor([0.0, 1.0], dtype=jg.float64)).dtype is jg.float64


def test_distribution_messages_and_warnings_as_torch():
    squashed = D.TransformedDistribution(D.Normal(0.0, 1.0), D.transforms.TanhTransform())
    with pytest.raises(NotImplementedError) as info:
        squashed.mean  # noqa: B018
    assert str(info.value) == ""
    with pytest.raises(ValueError) as info:
        D.kl_divergence(D.MultivariateNormal(jg.zeros(3), jg.eye(3)),
                        D.MultivariateNormal(jg.zeros(2), jg.eye(2)))
    assert str(info.value) == ("KL-divergence between two Multivariate Normals with" + " " * 26
                               + "different event shapes cannot be computed")
    with pytest.warns(FutureWarning, match=r"^`sample_n\(n\)` will be deprecated. Use "
                                           r"`sample\(\(n,\)\)` instead.$"):
        assert D.Normal(jg.zeros(2), 1.0).sample_n(3).shape == (3, 2)


# ------------------------------------------------------------------ sets U35-X35


def test_func_transform_errors_name_the_transform_as_torch():
    from jitgrad.func import grad, vjp

    cases = [
        (lambda: grad(lambda w: w * 2)(jg.ones(3)), RuntimeError,
         "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
         "with 1 dims."),
        (lambda: grad(lambda w: w.sum(), has_aux=True)(jg.ones(3)), RuntimeError,
         "grad_and_value(f)(*args): output of function f should be a tuple: (output, aux) if "
         "has_aux is True"),
        (lambda: grad(lambda w: 3.0)(jg.ones(3)), RuntimeError,
         "grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got <class 'float'>"),
        (lambda: grad(lambda d: d["a"].sum())({"a": jg.ones(2), "b": 3}), ValueError,
         "Thing passed to transform API must be Tensor, got <class 'int'>"),
        (lambda: grad(lambda w: (w.sum(), {"n": 1}), has_aux=True)(jg.ones(2)), RuntimeError,
         "Expected tensors, got unsupported type <class 'int'>"),
        (lambda: vjp(lambda w: 3.0, jg.ones(3)), RuntimeError,
         "vjp(f, *primals): expected f(*primals) to return only tensors, got unsupported type "
         "<class 'float'>"),
    ]
    for fn, kind, text in cases:
        with pytest.raises(kind) as info:
            fn()
        assert str(info.value).startswith(text), str(info.value)


def test_functional_call_refuses_two_values_for_tied_weights():
    from jitgrad.func import functional_call

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2, bias=False)
            self.b = nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))
    m, x = Tied(), jg.ones(1, 2)
    with pytest.raises(ValueError, match=r"functional_call got multiple values for keys "
                                         r"\['a.weight', 'b.weight'\], which are tied"):
        functional_call(m, {"a.weight": jg.eye(2) * 2, "b.weight": jg.eye(2) * 3}, (x,))
    assert functional_call(m, {"a.weight": jg.eye(2) * 2}, (x,)).tolist() == [[4.0, 4.0]]
    assert functional_call(m, {"a.weight": jg.eye(2) * 2, "b.weight": jg.eye(2) * 3}, (x,),
                           tie_weights=False).tolist() == [[6.0, 6.0]]


def test_vmap_batches_cdist_and_batch_norm_without_the_loop():
    from jitgrad.func import vmap

    x, y = jg.randn(3, 5, 4), jg.randn(3, 6, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (the per-sample loop warns)
        out = vmap(jg.cdist)(x, y)
        assert jg.allclose(out, jg.cdist(x, y))
        big = vmap(jg.cdist)(jg.randn(2, 30, 4), jg.randn(2, 27, 4))
        assert big.shape == (2, 30, 27)
        norm = nn.BatchNorm1d(4, track_running_stats=False)
        for b in range(3):
            assert jg.allclose(vmap(norm)(x)[b], norm(x[b]), atol=1e-6)
        norm = nn.BatchNorm1d(4).eval()
        norm.running_mean.fill_(0.3)
        assert jg.allclose(vmap(norm)(x)[1], norm(x[1]), atol=1e-6)
    with pytest.raises(RuntimeError, match="Batch norm got a batched tensor as input while the "
                                           "running_mean or running_var"):
        vmap(nn.BatchNorm1d(4))(x)


def test_fake_quantize_backward_keeps_only_the_mask():
    # (QAT observers copy_ new qparams between two uses of one fake-quant module)
    x = jg.tensor([0.05, 0.3, -2.0, 0.71], requires_grad=True)
    scale, zero = jg.tensor([0.1]), jg.tensor([0], dtype=jg.int32)
    y = jg.fake_quantize_per_tensor_affine(x, scale, zero, -8, 7)
    scale.copy_(jg.tensor([0.2]))
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 0.0, 1.0]
    w = jg.tensor([[0.05, 0.9], [-0.3, 2.0]], requires_grad=True)
    scales = jg.tensor([0.1, 0.2])
    y = jg.fake_quantize_per_channel_affine(w, scales, jg.zeros(2, dtype=jg.int32), 0, -8, 7)
    scales.mul_(2)
    y.sum().backward()
    assert w.grad.tolist() == [[1.0, 0.0], [1.0, 0.0]]
    assert y.grad_fn.name() == "FakeQuantizePerChannelAffineCachemaskBackward0"


def test_autograd_function_odds_and_ends():
    class Keeps(jg.autograd.Function):
        @staticmethod
        def forward(ctx, a, n):
            ctx.save_for_backward(a, n)
            return a * n

        @staticmethod
        def backward(ctx, g):
            return g, None
    with pytest.raises(TypeError, match="save_for_backward can only save variables, but "
                                        "argument 1 is of type int"):
        Keeps.apply(jg.ones(2, requires_grad=True), 3)

    class Legacy(jg.autograd.Function):
        def forward(self, x):
            return x * 2
    with pytest.warns(DeprecationWarning), pytest.raises(
            RuntimeError, match="Legacy autograd function with non-static forward method"):
        Legacy()(jg.ones(2))
    from jitgrad.autograd.function import InplaceFunction

    assert issubclass(InplaceFunction, jg.autograd.Function)
    with pytest.warns(DeprecationWarning):
        assert InplaceFunction(inplace=True).inplace


def test_packed_sequence_of_the_wrong_size_names_input_size():
    from jitgrad.nn.utils.rnn import pack_padded_sequence

    packed = pack_padded_sequence(jg.zeros(2, 2, 4), jg.tensor([2, 1]))
    for layer in (nn.GRU(3, 5), nn.RNN(3, 5)):
        with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. "
                                               "Expected 3, got 4"):
            layer(packed)


def test_max_pool1d_checks_and_an_empty_batch():
    F = jg.nn.functional
    x = jg.randn(2, 3, 3)
    cases = [({"kernel_size": 5}, "max_pool1d() Invalid computed output size: 0"),
             ({"kernel_size": 2, "padding": 2}, "max_pool1d() padding should be at most half of "
                                                "kernel size, but got padding=2 and kernel_size=2"),
             ({"kernel_size": 2, "stride": 0}, "max_pool1d() stride must be greater than zero, "
                                               "but got 0"),
             ({"kernel_size": 2, "dilation": 0}, "max_pool1d() dilation must be greater than "
                                                 "zero, but got 0")]
    for kwargs, text in cases:
        with pytest.raises(RuntimeError) as info:
            F.max_pool1d(x, **kwargs)
        assert str(info.value) == text
    with pytest.raises(RuntimeError, match=r"optional 0 dim batch size for input, but "
                                           r"got:\[2, 3, 0\]"):
        F.max_pool1d(jg.randn(2, 3, 0), 1)
    empty = jg.randn(0, 3, 4, 4, requires_grad=True)
    F.max_pool2d(empty, 2).sum().backward()
    assert F.max_pool2d(empty, 2).shape == (0, 3, 2, 2) and empty.grad.shape == (0, 3, 4, 4)


# ------------------------------------------------------------------ sets Z35-C36


@pytest.mark.parametrize("conv", ["conv1d", "conv2d", "conv_transpose1d"])
def test_complex_convolution_gradients_conjugate_the_other_operand(conv):
    F = jg.nn.functional
    rng = np.random.default_rng(0)

    def c(*shape):
        return jg.tensor(rng.standard_normal(shape) + 1j * rng.standard_normal(shape),
                         requires_grad=True)
    if conv == "conv1d":
        x, w = c(2, 4, 5), c(6, 2, 3)
        f = lambda a, b: F.conv1d(a, b, padding=1, groups=2)  # noqa: E731
    elif conv == "conv2d":
        x, w = c(1, 2, 4, 4), c(3, 2, 2, 2)
        f = lambda a, b: F.conv2d(a, b, stride=2)  # noqa: E731
    else:
        x, w = c(1, 2, 4), c(2, 3, 3)
        f = lambda a, b: F.conv_transpose1d(a, b, stride=2)  # noqa: E731
    assert jg.autograd.gradcheck(f, (x, w))
    assert jg.autograd.gradgradcheck(f, (x, w))


def test_grid_sample_edges_pull_nothing_with_border_and_reflection():
    F = jg.nn.functional
    img = jg.tensor([[[[10.0, 11.0, 13.0, 16.0]]]])
    grid = jg.tensor([[[[-1.0, 0.0], [1.0, 0.0]]]], requires_grad=True)
    for mode in ("border", "reflection"):
        y = F.grid_sample(img, grid, padding_mode=mode, align_corners=True)
        assert jg.autograd.grad(y.sum(), grid)[0].abs().sum().item() == 0.0
    theta = jg.eye(2, 3)[None].requires_grad_()
    image = jg.arange(12.0).view(1, 1, 3, 4)
    grid = F.affine_grid(theta, (1, 1, 3, 4), align_corners=False)
    y = F.grid_sample(image, grid, padding_mode="border", align_corners=False)
    assert jg.autograd.grad(y.sum(), theta)[0].tolist() == [[[0.0, 0.0, 12.0],
                                                             [0.0, 0.0, 24.0]]]


def test_affine_grid_keeps_no_tensor_and_checks_the_batch():
    F = jg.nn.functional
    theta = jg.tensor([[[0.9, -0.3, 0.1], [0.35, 1.1, -0.2]]], requires_grad=True)
    grid = F.affine_grid(theta, (1, 1, 2, 3), align_corners=False)
    assert grid.grad_fn.name() == "AffineGridGeneratorBackward0"
    for _ in range(2):  # (no saved tensor to free: a second backward works, as torch's)
        assert jg.autograd.grad(grid.sum(), theta)[0].tolist() == [[[0.0, 0.0, 6.0],
                                                                    [0.0, 0.0, 6.0]]]
    with pytest.raises(RuntimeError, match=r"Expected size for first two dimensions of batch2 "
                                           r"tensor to be: \[1, 3\] but got: \[2, 3\]"):
        F.affine_grid(jg.zeros(2, 2, 3), (1, 3, 4, 5), align_corners=False)
    with pytest.raises(ValueError, match="Expected theta to have floating point type"):
        F.affine_grid(jg.zeros(1, 2, 3, dtype=jg.complex64), (1, 1, 2, 2), align_corners=False)


def test_value_only_linalg_losses_at_repeated_values_and_singular_det():
    eye = jg.eye(3, dtype=jg.float64, requires_grad=True)
    for loss in (lambda a: jg.linalg.eigvalsh(a).sum(),
                 lambda a: jg.linalg.eigh(a).eigenvalues.sum(),
                 lambda a: jg.linalg.svd(a).S.sum()):
        (g,) = jg.autograd.grad(loss(eye), eye)
        assert g.tolist() == jg.eye(3, dtype=jg.float64).tolist()
    rng = np.random.default_rng(0)
    a = jg.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    assert jg.autograd.gradgradcheck(lambda m: jg.linalg.svdvals(m).pow(2).sum()
                                     + jg.linalg.matrix_norm(m, "nuc"), (a,))
    # det's gradient at a singular matrix: the cofactor matrix (finite differences agree)
    singular = jg.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 5.0]],
                         dtype=jg.float64, requires_grad=True)
    (g,) = jg.autograd.grad(jg.linalg.det(singular), singular)
    np.testing.assert_allclose(g.numpy(), [[14, -10, 2], [-7, 5, -1], [0, 0, 0]], atol=1e-9)
    assert jg.autograd.gradcheck(jg.linalg.det, (singular,))


def test_float16_reductions_and_fused_ops_compute_in_float():
    m = jg.tensor([[2048.0, 0.0], [1.0, 0.0], [1.0, 0.0]], dtype=jg.float16)
    assert m.sum(0).tolist() == [2050.0, 0.0] and m.mean(0).tolist() == [683.5, 0.0]
    h = lambda v: jg.tensor([v], dtype=jg.float16)  # noqa: E731
    assert jg.lerp(h(-0.433837890625), h(0.5517578125), 0.1).item() == -0.335205078125
    assert jg.addcdiv(h(0.56689453125), h(-1.3876953125), h(0.892578125),
                      value=-0.1).item() == 0.72216796875
    rng = np.random.default_rng(1)
    x = rng.uniform(0.1, 4.0, 4000).astype(np.float16)
    exact = (1 / np.sqrt(x.astype(np.float64))).astype(np.float16)
    assert (jg.rsqrt(jg.tensor(x)).numpy() == exact).all()


def test_amp_private_kernels_and_deprecated_getters():
    grads = [jg.tensor([2.0, float("inf")]), jg.tensor([4.0])]
    found = jg.zeros(1)
    jg._amp_foreach_non_finite_check_and_unscale_(grads, found, jg.full((1,), 0.5))
    assert [g.tolist() for g in grads] == [[1.0, float("inf")], [2.0]] and found.item() == 1.0
    scale, tracker = jg.full((1,), 8.0), jg.zeros(1, dtype=jg.int32)
    assert jg._amp_update_scale_(scale, tracker, jg.ones(1), 2.0, 0.5, 3) is scale
    assert scale.item() == 4.0
    for _ in range(3):
        jg._amp_update_scale_(scale, tracker, jg.zeros(1), 2.0, 0.5, 3)
    assert scale.item() == 8.0 and tracker.item() == 0
    with pytest.warns(DeprecationWarning, match=r"torch.is_autocast_cpu_enabled\(\) is "
                                                "deprecated"):
        jg.is_autocast_cpu_enabled()
    assert jg._foreach_maximum([jg.tensor([-1.0, 2.0])], 0.5)[0].tolist() == [0.5, 2.0]


def test_pinv_rcond_tensordot_dims_and_complex_scalars():
    a = jg.diag(jg.tensor([1.0, 1e-3], dtype=jg.float64))
    cut = [[1.0, 0.0], [0.0, 0.0]]
    assert jg.linalg.pinv(a, 1e-2).tolist() == cut == jg.linalg.pinv(a, rcond=1e-2).tolist()
    assert jg.linalg.pinv(a, jg.tensor(1e-2, dtype=jg.float64)).tolist() == cut
    with pytest.raises(TypeError, match="linalg_pinv\\(\\) received an invalid combination"):
        jg.linalg.pinv(a, rcond=1e-2, rtol=1e-2)
    x, y = jg.ones(2, 3), jg.ones(3, 4)
    assert jg.tensordot(x, y, dims=jg.tensor(1)).shape == (2, 4)
    assert jg.tensordot(x, y, dims=jg.tensor([[1], [0]])).shape == (2, 4)
    for kwargs, text in (({"dims": 3}, "tensordot expects dims < ndim_a or ndim_b, but got "
                                       "dims=3"),
                         ({"dims": ([1, 0], [0])}, "both dimension lists should have same "
                                                   "length")):
        with pytest.raises(RuntimeError) as info:
            jg.tensordot(x, y, **kwargs)
        assert str(info.value) == text
    with pytest.raises(RuntimeError, match="first has size 3 in dim -1 and second has size 4 "
                                           "in dim 0"):
        jg.tensordot(x, jg.ones(4, 4), dims=1)
    with pytest.raises(RuntimeError, match="both inputs should have same dtype"):
        jg.tensordot(x, y.double(), dims=1)
    with pytest.raises(RuntimeError, match="value cannot be converted to type double"):
        float(jg.tensor(1 + 2j))
    assert float(jg.tensor(1 + 0j)) == 1.0 and int(jg.tensor(2.7 + 0j)) == 2


def test_complex_eigenvector_and_singular_vector_phases_are_refused_as_torch():
    rng = np.random.default_rng(0)
    y = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    hermitian = jg.tensor(y + y.conj().T, requires_grad=True)
    _, vectors = jg.linalg.eigh(hermitian)
    with pytest.raises(RuntimeError, match="linalg_eigh_backward: The eigenvectors in the "
                                           "complex case are specified up to multiplication"):
        vectors.real.sum().backward()
    _, vectors = jg.linalg.eigh(hermitian)
    (vectors.abs() ** 2 * jg.arange(3.0)).sum().backward()  # (phase-free: a gradient)
    assert hermitian.grad.abs().sum().item() > 0
    z = jg.tensor(rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3)),
                  requires_grad=True)
    u, _, _ = jg.linalg.svd(z)
    with pytest.raises(RuntimeError, match="svd_backward: The singular vectors in the complex "
                                           "case"):
        u.real.sum().backward()
    u, _, vh = jg.linalg.svd(z)
    (u.abs().sum() + (u @ vh).real.sum()).backward()

    def gauge_free(m):  # (one SVD: U and V^H turn by the same phases)
        left, _, right = jg.linalg.svd(m)
        return left.abs().sum() + (left @ right).real.sum()
    assert jg.autograd.gradcheck(gauge_free, (z.detach().requires_grad_(),))


def test_module_to_complex_dtypes_and_real_imag_setters():
    with pytest.warns(UserWarning, match="Complex modules are a new feature"):
        layer = nn.Linear(2, 2, dtype=jg.cfloat).to(jg.cdouble)
    assert layer.weight.dtype is jg.complex128
    from jitgrad import _config

    _config.WARNED.discard("complex_to_real")  # (torch's warning is once per process)
    with pytest.warns(UserWarning, match="Casting complex values to real"):
        assert nn.Linear(2, 2, dtype=jg.cdouble).to(jg.float32).weight.dtype is jg.float32
    assert nn.Linear(2, 2, dtype=jg.cfloat).double().weight.dtype is jg.complex64
    t = jg.tensor([1 + 2j, 3 + 4j])
    t.imag = jg.zeros(2)
    t.real = jg.tensor([5.0, 6.0])
    assert t.tolist() == [5 + 0j, 6 + 0j]
    x = jg.ones(2)
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with "
                                           "non-complex dtypes"):
        x.imag = jg.zeros(2)
