"""Output layouts against torch for transposed and channels-last inputs: reductions, scans,
``layer_norm``, ``masked_fill``, ``masked_scatter``, ``tril`` and ``repeat`` give row-major
results, and so do ``cat``/``stack`` but of channels-last inputs (so a ``view`` of them works
as in torch), while ``flip``, ``sort`` and channels-last ``group_norm`` keep the input's
layout, and ``roll`` keeps channels-last only. Strides of size-1 dims are not compared (they
never matter)."""

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")

CALLS = {
    "sum": lambda L, x: x.sum(1), "sum_keepdim": lambda L, x: x.sum(1, keepdim=True),
    "mean": lambda L, x: x.mean(0), "amax": lambda L, x: x.amax(2), "var": lambda L, x: x.var(1),
    "std": lambda L, x: x.std(0), "max_dim": lambda L, x: x.max(1).values,
    "argmax": lambda L, x: x.argmax(1), "norm": lambda L, x: x.norm(dim=1),
    "logsumexp": lambda L, x: x.logsumexp(1), "prod": lambda L, x: x.prod(1),
    "any": lambda L, x: (x > 0).any(1), "median": lambda L, x: x.median(1).values,
    "var_mean": lambda L, x: L.var_mean(x, 1)[0], "aminmax": lambda L, x: L.aminmax(x, dim=1)[0],
    "cumsum": lambda L, x: x.cumsum(0), "cumprod": lambda L, x: x.cumprod(1),
    "cummax": lambda L, x: x.cummax(1).values, "logcumsumexp": lambda L, x: x.logcumsumexp(0),
    "layer_norm": lambda L, x: L.nn.functional.layer_norm(x, (x.shape[-1],)),
    "masked_fill": lambda L, x: x.masked_fill(x > 0, 0.0), "tril": lambda L, x: x.tril(),
    "triu": lambda L, x: x.triu(), "roll": lambda L, x: x.roll(1, 0),
    "repeat": lambda L, x: x.repeat(*[1] * x.ndim), "flip": lambda L, x: x.flip(0),
    "sort": lambda L, x: x.sort(1).values, "sort_indices": lambda L, x: x.sort(1).indices,
    "relu": lambda L, x: x.relu(), "softmax": lambda L, x: x.softmax(0),
    "cat": lambda L, x: L.cat([x, x], 0), "cat_dim1": lambda L, x: L.cat([x, x], 1),
    "stack": lambda L, x: L.stack([x, x]), "masked_scatter": lambda L, x: x.masked_scatter(
        x > 0, L.zeros(x.shape, dtype=x.dtype)),
}
INPUTS = {
    "transposed": lambda L: L.tensor(np.arange(60.0).reshape(3, 4, 5) % 7 - 3).transpose(0, 2),
    "channels_last": lambda L: L.tensor(np.arange(120.0).reshape(2, 3, 4, 5) % 7 - 3)
    .contiguous(memory_format=L.channels_last),
}


def _layout(lib, call, make):
    out = call(lib, make(lib))
    return tuple(out.shape), tuple(s for s, n in zip(out.stride(), out.shape) if n != 1)


@pytest.mark.parametrize("layout", list(INPUTS))
@pytest.mark.parametrize("name", list(CALLS))
def test_strides_match_torch(name, layout):
    ours = _layout(jitgrad, CALLS[name], INPUTS[layout])
    assert ours == _layout(torch, CALLS[name], INPUTS[layout])


def test_group_norm_keeps_channels_last_and_view_works_after_reductions():
    x = jitgrad.randn(2, 4, 3, 3).contiguous(memory_format=jitgrad.channels_last)
    out = jitgrad.nn.functional.group_norm(x, 2)
    assert out.is_contiguous(memory_format=jitgrad.channels_last) and not out.is_contiguous()
    ref = jitgrad.nn.functional.group_norm(x.contiguous(), 2)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-6)
    t = jitgrad.randn(3, 4, 5).transpose(0, 2)
    for y in (t.sum(1), t.masked_fill(t > 0, 0.0), t.cumsum(0), t.tril(),
              jitgrad.nn.functional.layer_norm(t, (3,))):
        assert y.view(-1).shape == (y.numel(),)  # (torch's outputs are row-major: this works)


# channels-last through a CNN's other layers, as torch's suggest_memory_format: pooling, batch
# norm, padding, resizing, transposed convolution, their gradients, and a leaf's .grad
CNN_CALLS = {
    "batch_norm": lambda L, x: L.nn.functional.batch_norm(x, None, None, training=True),
    "batch_norm_eval": lambda L, x: L.nn.functional.batch_norm(
        x, L.zeros(x.shape[1], dtype=x.dtype), L.ones(x.shape[1], dtype=x.dtype)),
    "max_pool": lambda L, x: L.nn.functional.max_pool2d(x, 2),
    "max_pool_indices": lambda L, x: L.nn.functional.max_pool2d(x, 2, return_indices=True)[1],
    "adaptive_avg": lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, 3),
    "adaptive_max": lambda L, x: L.nn.functional.adaptive_max_pool2d(x, 3),
    "pad": lambda L, x: L.nn.functional.pad(x, (1, 1, 2, 0)),
    "pad_reflect": lambda L, x: L.nn.functional.pad(x, (1, 1, 1, 1), mode="reflect"),
    "pad_replicate": lambda L, x: L.nn.functional.pad(x, (1, 2, 1, 1), mode="replicate"),
    "nearest": lambda L, x: L.nn.functional.interpolate(x, scale_factor=2),
    "bilinear": lambda L, x: L.nn.functional.interpolate(x, size=(5, 7), mode="bilinear"),
    "area": lambda L, x: L.nn.functional.interpolate(x, size=3, mode="area"),
    "conv_transpose": lambda L, x: L.nn.functional.conv_transpose2d(
        x, L.ones(x.shape[1], 2, 2, 2, dtype=x.dtype), stride=2),
    "max_pool_grad": lambda L, x: _leaf_grad(L, x, lambda t: L.nn.functional.max_pool2d(t, 2)),
    "avg_pool_grad": lambda L, x: _leaf_grad(L, x, lambda t: L.nn.functional.avg_pool2d(t, 2)),
    "leaf_grad": lambda L, x: _leaf_grad(L, x, lambda t: t * 2),
}


def _leaf_grad(lib, x, f):
    leaf = x.clone().requires_grad_()
    f(leaf).pow(2).sum().backward()
    return leaf.grad


@pytest.mark.parametrize("name", list(CNN_CALLS))
def test_channels_last_propagates_as_torch(name):
    ours = _layout(jitgrad, CNN_CALLS[name], INPUTS["channels_last"])
    assert ours == _layout(torch, CNN_CALLS[name], INPUTS["channels_last"])
    x = INPUTS["channels_last"](jitgrad)
    out = CNN_CALLS[name](jitgrad, x)
    assert out.is_contiguous(memory_format=jitgrad.channels_last) and not out.is_contiguous()
    expected = CNN_CALLS[name](jitgrad, x.contiguous())  # (the values do not change)
    np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())


def test_a_transposed_leaf_gets_a_transposed_grad():
    for lib in (jitgrad, torch):
        w = lib.randn(3, 4).t().requires_grad_()
        (w * 2).sum().backward()
        assert w.grad.stride() == w.stride() == (1, 4)


@pytest.mark.parametrize("kw", [dict(mode="bicubic"), dict(mode="bicubic", antialias=True),
                                dict(mode="bilinear", antialias=True)],
                         ids=["bicubic", "bicubic-aa", "bilinear-aa"])
def test_separable_interpolate_gives_a_fresh_tensor_in_the_inputs_format(kw):
    F = jitgrad.nn.functional
    x = jitgrad.randn(2, 3, 8, 8, requires_grad=True)
    y = F.interpolate(x, size=(5, 6), **kw)
    assert y.stride() == (90, 30, 6, 1) and y._base is None  # (row-major, not a movedim view)
    assert y.view(2, -1).shape == (2, 90)
    cl = F.interpolate(x.detach().to(memory_format=jitgrad.channels_last), size=(16, 16), **kw)
    assert cl.stride() == (768, 1, 48, 3)
    np.testing.assert_allclose(cl.numpy(), F.interpolate(x.detach(), size=(16, 16), **kw).numpy(),
                               rtol=1e-6, atol=1e-6)
    same = F.interpolate(x.detach(), size=(8, 8), **kw)  # (no size changes: still a new tensor)
    assert same is not x and same.data_ptr() != x.data_ptr()
    np.testing.assert_array_equal(same.numpy(), x.detach().numpy())
    y.sum().backward()
    assert x.grad.shape == x.shape
