"""vmap of convolutions and max pooling: batching rules, no per-sample Python loop."""

import warnings

import pytest

import jitgrad as jg
import jitgrad.nn.functional as F
from jitgrad.func import grad, vmap

B = 3


def _loop(f, args, dims):
    return jg.stack([f(*[a[i] if d == 0 else a for a, d in zip(args, dims)]) for i in range(B)])


def _no_fallback(f, *args, **kw):
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="There is a performance drop")
        return vmap(f, **kw)(*args)


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("groups", [1, 2])
@pytest.mark.parametrize("dims", [(0, None), (None, 0), (0, 0)])
def test_conv_forward_and_grads_match_the_loop(n, groups, dims):
    jg.manual_seed(n * 10 + groups)
    conv = (F.conv1d, F.conv2d, F.conv3d)[n - 1]
    sp = (5,) * n
    x = jg.randn((B, 2, 4) + sp, dtype=jg.float64) if dims[0] == 0 else \
        jg.randn((2, 4) + sp, dtype=jg.float64)
    w = jg.randn((B, 6, 4 // groups) + (3,) * n, dtype=jg.float64) if dims[1] == 0 else \
        jg.randn((6, 4 // groups) + (3,) * n, dtype=jg.float64)
    b = jg.randn(6, dtype=jg.float64)

    def f(x, w):
        return conv(x, w, b, stride=2, padding=1, groups=groups)

    got = _no_fallback(f, x, w, in_dims=dims)
    assert got.shape == (B, 2, 6) + (3,) * n
    assert jg.allclose(got, _loop(f, (x, w), dims), atol=1e-12)

    def loss(x, w):
        return f(x, w).tanh().sum()

    for arg in (0, 1):
        got = _no_fallback(grad(loss, argnums=arg), x, w, in_dims=dims)
        assert jg.allclose(got, _loop(grad(loss, argnums=arg), (x, w), dims), atol=1e-12)


def test_conv_batched_bias_and_unbatched_input():
    jg.manual_seed(0)
    x, w = jg.randn(2, 3, 6, 6, dtype=jg.float64), jg.randn(4, 3, 3, 3, dtype=jg.float64)
    bs = jg.randn(B, 4, dtype=jg.float64)
    got = _no_fallback(lambda b: F.conv2d(x, w, b), bs)
    assert jg.allclose(got, jg.stack([F.conv2d(x, w, b) for b in bs]), atol=1e-12)


def test_conv_transpose_batches():
    jg.manual_seed(1)
    x, w = jg.randn(B, 2, 4, 5, 5, dtype=jg.float64), jg.randn(4, 3, 3, 3, dtype=jg.float64)
    got = _no_fallback(lambda x: F.conv_transpose2d(x, w, stride=2), x)
    assert jg.allclose(got, jg.stack([F.conv_transpose2d(s, w, stride=2) for s in x]),
                       atol=1e-12)


def test_max_pool_and_its_gradient_batch():
    jg.manual_seed(2)
    x = jg.randn(B, 2, 3, 8, 8, dtype=jg.float64)

    def loss(x):
        return F.max_pool2d(x, 3, stride=2, padding=1).pow(2).sum()

    assert jg.allclose(_no_fallback(lambda x: F.max_pool2d(x, 2), x),
                       jg.stack([F.max_pool2d(s, 2) for s in x]))
    assert jg.allclose(_no_fallback(grad(loss), x), jg.stack([grad(loss)(s) for s in x]))


def test_vmapped_conv_is_differentiable_gradcheck():
    jg.manual_seed(3)
    x = jg.randn(B, 1, 2, 5, 5, dtype=jg.float64, requires_grad=True)
    w = jg.randn(B, 3, 2, 3, 3, dtype=jg.float64, requires_grad=True)
    assert jg.autograd.gradcheck(vmap(lambda x, w: F.conv2d(x, w, padding=1)), (x, w))


def test_per_sample_conv_grads_match_torch_func():
    torch = pytest.importorskip("torch")
    jg.manual_seed(4)
    x = jg.randn(4, 1, 2, 7, 7, dtype=jg.float64)
    w = jg.randn(3, 2, 3, 3, dtype=jg.float64)

    def loss(w, x, F=F):
        return F.max_pool2d(F.conv2d(x, w, padding=1).relu(), 2).square().sum()

    got = _no_fallback(grad(loss), w, x, in_dims=(None, 0))
    want = torch.func.vmap(torch.func.grad(
        lambda w, x: loss(w, x, F=torch.nn.functional)), in_dims=(None, 0))(
        torch.from_numpy(w.numpy()), torch.from_numpy(x.numpy()))
    assert jg.allclose(got, jg.tensor(want.numpy()), atol=1e-10)


def test_max_pool_then_in_place_relu_backward_matches_torch():
    """The pooling node keeps only its indices: ReLU(inplace=True) on its values (the Spatial
    Transformer tutorial's localization net) does not invalidate its backward."""
    torch = pytest.importorskip("torch")
    grads = []
    for lib in (jg, torch):
        x = lib.sin(lib.arange(2 * 3 * 6 * 6, dtype=lib.float64)).reshape(2, 3, 6, 6)
        x.requires_grad_()
        net = lib.nn.Sequential(lib.nn.MaxPool2d(2, stride=2), lib.nn.ReLU(True))
        (net(x) * lib.arange(27, dtype=lib.float64).reshape(3, 3, 3)).sum().backward()
        grads.append(x.grad.numpy().tolist())
    assert grads[0] == grads[1]
    node = F.max_pool2d(jg.ones(1, 1, 2, 2, requires_grad=True), 2).grad_fn
    assert node.name() == "MaxPool2DWithIndicesBackward0"
