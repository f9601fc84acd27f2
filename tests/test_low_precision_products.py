"""Half and bfloat16 matrix products that add a scaled input (addmm, Linear, baddbmm, addmv,
addbmm, addr) round as torch's CPU kernels do: a product and its input summed in float32 and
rounded once (addbmm: once per batch, as torch adds one batch at a time; addr: each op of
``beta * input + alpha * vec1 * vec2``). Compared bit for bit with torch."""

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


def _arrays(*shapes):
    return [RNG.standard_normal(s).astype(np.float32) * (10 if i == 0 else 1)
            for i, s in enumerate(shapes)]


CASES = [
    ("addmm", lambda L, i, a, b: L.addmm(i, a, b), _arrays((64, 33), (64, 300), (300, 33))),
    ("addmm_beta_alpha", lambda L, i, a, b: L.addmm(i, a, b, beta=0.5, alpha=2),
     _arrays((8, 5), (8, 16), (16, 5))),
    ("linear", lambda L, i, a, b: L.nn.functional.linear(a, b, i),
     _arrays((33,), (64, 300), (33, 300))),
    ("linear_3d", lambda L, i, a, b: L.nn.functional.linear(a, b, i),
     _arrays((5,), (2, 8, 16), (5, 16))),
    ("baddbmm", lambda L, i, a, b: L.baddbmm(i, a, b), _arrays((2, 8, 5), (2, 8, 16), (2, 16, 5))),
    ("baddbmm_beta_alpha", lambda L, i, a, b: L.baddbmm(i, a, b, beta=0.5, alpha=2),
     _arrays((2, 8, 5), (2, 8, 16), (2, 16, 5))),
    ("addmv", lambda L, i, a, b: L.addmv(i, a, b), _arrays((8,), (8, 16), (16,))),
    ("addbmm", lambda L, i, a, b: L.addbmm(i, a, b), _arrays((8, 5), (3, 8, 16), (3, 16, 5))),
    ("addbmm_beta_alpha", lambda L, i, a, b: L.addbmm(i, a, b, beta=0.5, alpha=3),
     _arrays((8, 5), (3, 8, 16), (3, 16, 5))),
    ("addr", lambda L, i, a, b: L.addr(i, a, b), _arrays((8, 5), (8,), (5,))),
    ("addr_beta_alpha", lambda L, i, a, b: L.addr(i, a, b, beta=0.5, alpha=3),
     _arrays((8, 5), (8,), (5,))),
]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_rounding_matches_torch(case, dtype):
    _, call, arrays = case
    outs = []
    for lib in (jitgrad, torch):
        out = call(lib, *[lib.tensor(a).to(getattr(lib, dtype)) for a in arrays])
        assert out.dtype is getattr(lib, dtype)
        outs.append(out.float().numpy())
    # (the products of 300 terms: float32 sums in another order than torch's, one element in
    # a thousand a rounding boundary away; the short ones equal bit for bit)
    mismatched = np.mean(outs[0] != outs[1])
    assert mismatched <= (0.005 if arrays[1].shape[-1] == 300 else 0.0), mismatched
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-2 if dtype == "bfloat16" else 1e-3)


def test_low_precision_gradients_flow():
    a = jitgrad.randn(4, 6, dtype=jitgrad.float16, requires_grad=True)
    w = jitgrad.randn(3, 6, dtype=jitgrad.float16, requires_grad=True)
    b = jitgrad.randn(3, dtype=jitgrad.float16, requires_grad=True)
    jitgrad.nn.functional.linear(a, w, b).float().sum().backward()
    assert a.grad.dtype is w.grad.dtype is b.grad.dtype is jitgrad.float16
    np.testing.assert_allclose(b.grad.float().numpy(), np.full(3, 4.0))
    np.testing.assert_allclose(a.grad.float().numpy(),
                               np.tile(w.detach().float().numpy().sum(0), (4, 1)), rtol=1e-3)
