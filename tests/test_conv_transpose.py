"""ConvTranspose1d/2d and F.conv_transpose1d/2d against torch (values, input/weight/bias
gradients, reprs, output_size), finite differences (first and second order), jit, and torch's
errors."""

import numpy as np
import pytest

import jitgrad
import jitgrad.nn.functional as F

CASES = [
    dict(n=2, cin=3, cout=4, k=3, stride=2, padding=1, output_padding=1, groups=1, dilation=1),
    dict(n=2, cin=4, cout=6, k=3, stride=2, padding=0, output_padding=1, groups=2, dilation=2),
    dict(n=1, cin=3, cout=2, k=4, stride=3, padding=2, output_padding=0, groups=1, dilation=1),
    dict(n=2, cin=2, cout=2, k=(2, 3), stride=(1, 2), padding=(0, 1), output_padding=(0, 1),
         groups=1, dilation=1),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['n']}d-s{c['stride']}-g{c['groups']}")
def test_layers_match_torch(case):
    torch = pytest.importorskip("torch")
    c = dict(case)
    n, cin, cout, k = c.pop("n"), c.pop("cin"), c.pop("cout"), c.pop("k")
    theirs = getattr(torch.nn, f"ConvTranspose{n}d")(cin, cout, k, dtype=torch.float64, **c)
    ours = getattr(jitgrad.nn, f"ConvTranspose{n}d")(cin, cout, k, dtype=jitgrad.float64, **c)
    assert repr(ours) == repr(theirs)
    assert ours.weight.shape == tuple(theirs.weight.shape)
    ours.load_state_dict({a: jitgrad.tensor(b.detach().numpy()) for a, b in
                          theirs.state_dict().items()})
    x = np.random.default_rng(n + cin).standard_normal((2, cin) + (5,) * n)
    tx, jx = torch.tensor(x, requires_grad=True), jitgrad.tensor(x, requires_grad=True)
    ty, jy = theirs(tx), ours(jx)
    np.testing.assert_allclose(jy.detach().numpy(), ty.detach().numpy(), atol=1e-12)
    w = np.random.default_rng(1).standard_normal(tuple(ty.shape))
    (ty * torch.tensor(w)).sum().backward()
    (jy * jitgrad.tensor(w)).sum().backward()
    np.testing.assert_allclose(jx.grad.numpy(), tx.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(ours.bias.grad.numpy(), theirs.bias.grad.numpy(), atol=1e-12)


def test_gradcheck_and_gradgradcheck():
    x = jitgrad.randn(1, 2, 3, 3, dtype=jitgrad.float64, requires_grad=True)
    w = jitgrad.randn(2, 3, 2, 2, dtype=jitgrad.float64, requires_grad=True)
    b = jitgrad.randn(3, dtype=jitgrad.float64, requires_grad=True)

    def f(x, w, b):
        return F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1)

    assert jitgrad.autograd.gradcheck(f, (x, w, b))
    assert jitgrad.autograd.gradgradcheck(f, (x, w, b))


def test_unbatched_input_output_size_and_jit():
    layer = jitgrad.nn.ConvTranspose2d(3, 4, 3, stride=2)
    x = jitgrad.randn(3, 5, 5)
    assert layer(x).shape == (4, 11, 11)
    assert layer(x.unsqueeze(0), output_size=[12, 12]).shape == (1, 4, 12, 12)
    with pytest.raises(ValueError, match=r"requested an output size of \[14, 14\], but valid "
                                         r"sizes range from \[11, 11\] to \[12, 12\]"):
        layer(x.unsqueeze(0), output_size=[14, 14])
    xb = jitgrad.randn(2, 3, 5, 5, requires_grad=True)
    fn = jitgrad.jit(lambda x: layer(x).tanh().sum())
    eager = layer(xb).tanh().sum()
    (g_eager,) = jitgrad.autograd.grad(eager, xb)
    jitted = fn(xb)
    (g_jit,) = jitgrad.autograd.grad(jitted, xb)
    np.testing.assert_allclose(jitted.item(), eager.item(), rtol=1e-5)
    np.testing.assert_allclose(g_jit.numpy(), g_eager.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("call,text", [
    (lambda: F.conv_transpose2d(jitgrad.randn(1, 3, 5, 5), jitgrad.randn(4, 2, 3, 3)),
     "Given transposed=1, weight of size [4, 2, 3, 3], expected input[1, 3, 5, 5] to have 4 "
     "channels, but got 3 channels instead"),
    (lambda: F.conv_transpose2d(jitgrad.randn(1, 3, 5, 5), jitgrad.randn(3, 2, 3, 3), stride=2,
                                output_padding=2),
     "output padding must be smaller than either stride or dilation, but got "
     "output_padding_height: 2 output_padding_width: 2 stride_height: 2 stride_width: 2 "
     "dilation_height: 1 dilation_width: 1"),
    (lambda: F.conv_transpose2d(jitgrad.randn(5, 5), jitgrad.randn(3, 2, 3, 3)),
     "Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input of "
     "size: [5, 5]"),
])
def test_torchs_errors(call, text):
    with pytest.raises(RuntimeError) as info:
        call()
    assert text in str(info.value)
