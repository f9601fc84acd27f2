"""Elementwise results of operands laid out differently take torch's TensorIterator layout (the
first operand that orders two dims decides, broadcast dims decide nothing), not NumPy's (where
operands disagree, row-major wins): ``channels_last + contiguous`` is channels-last, and
``contiguous + channels_last`` row-major. Checked on the strides torch 2.x gives (which follow
from its rule by hand) and, where torch is installed, on random layouts against torch."""

import numpy as np
import pytest

import jitgrad

CL = jitgrad.channels_last
RNG = np.random.default_rng(0)


def _operands(lib):
    a = lib.tensor(RNG.standard_normal((2, 3, 4, 5)).astype(np.float32))
    b = a.to(memory_format=lib.channels_last) * 1
    c = lib.ones(3, 1, 1)
    d = a.permute(0, 1, 3, 2).contiguous().permute(0, 1, 3, 2)  # (H and W swapped in memory)
    return a, b, c, d


CASES = {
    "a + b": (lambda L, a, b, c, d: a + b, (60, 20, 5, 1)),
    "b + a": (lambda L, a, b, c, d: b + a, (60, 1, 15, 3)),
    "b + c": (lambda L, a, b, c, d: b + c, (60, 1, 15, 3)),
    "c + b": (lambda L, a, b, c, d: c + b, (60, 1, 15, 3)),  # (c decides nothing: broadcast)
    "b + 1": (lambda L, a, b, c, d: b + 1, (60, 1, 15, 3)),
    "d + a": (lambda L, a, b, c, d: d + a, (60, 20, 1, 4)),
    "b + d": (lambda L, a, b, c, d: b + d, (60, 1, 15, 3)),
    "d + b": (lambda L, a, b, c, d: d + b, (60, 20, 1, 4)),
    "b * a": (lambda L, a, b, c, d: L.mul(b, a), (60, 1, 15, 3)),
    "where": (lambda L, a, b, c, d: L.where(b > 0, a, b), (60, 1, 15, 3)),
    "where a": (lambda L, a, b, c, d: L.where(a > 0, b, a), (60, 20, 5, 1)),
    "lerp": (lambda L, a, b, c, d: L.lerp(b, a, 0.5), (60, 1, 15, 3)),
    "addcmul": (lambda L, a, b, c, d: L.addcmul(b, a, a), (60, 1, 15, 3)),
    "clamp": (lambda L, a, b, c, d: L.clamp(b, min=a), (60, 1, 15, 3)),
    "maximum": (lambda L, a, b, c, d: L.maximum(b, a), (60, 1, 15, 3)),
    "sliced": (lambda L, a, b, c, d: b[..., :3] + a[..., :3], (36, 1, 9, 3)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_first_operand_that_orders_the_dims_decides(name):
    fn, strides = CASES[name]
    a, b, c, d = _operands(jitgrad)
    out = fn(jitgrad, a, b, c, d)
    assert out.stride() == strides
    expected = fn(jitgrad, *(t.contiguous() for t in (a, b, c, d)))
    np.testing.assert_array_equal(out.numpy(), expected.numpy())  # (the values unchanged)


def test_the_result_of_a_channels_last_sum_views_as_torchs_does():
    a, b, _, _ = _operands(jitgrad)
    assert (b + a).is_contiguous(memory_format=CL)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        (b + a).view(2, -1)
    assert (a + b).view(2, -1).shape == (2, 60)


def test_gradients_through_mixed_layouts_are_unchanged():
    a, b, _, _ = _operands(jitgrad)
    a.requires_grad_()
    (b * a).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), b.detach().numpy())


def test_random_layouts_match_torch():
    torch = pytest.importorskip("torch")
    for trial in range(300):
        nd = int(RNG.integers(2, 5))
        shape = tuple(int(RNG.integers(2, 4)) for _ in range(nd))  # (no size-1 dims)
        made = []
        for _ in range(3):
            dims = list(shape)
            if RNG.random() < 0.3:
                dims = dims[int(RNG.integers(1, nd)):]  # (broadcast from the left)
            perm = RNG.permutation(len(dims)).tolist()
            data = RNG.standard_normal(dims).astype(np.float32).transpose(perm).copy()
            back = np.argsort(perm).tolist()
            made.append((torch.tensor(data).permute(*back),
                         jitgrad.tensor(data).permute(*back)))
        (t0, j0), (t1, j1), (t2, j2) = made
        for fn in (lambda L, x, y, z: x * y, lambda L, x, y, z: L.where(x > 0, y, z),
                   lambda L, x, y, z: L.addcmul(x, y, z)):
            theirs, ours = fn(torch, t0, t1, t2), fn(jitgrad, j0, j1, j2)
            assert ours.stride() == theirs.stride(), (trial, ours.shape, ours.stride())
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
