"""The Numba backend's tiled matrix product (backends/gemm.py) against float64 NumPy."""

import numpy as np
import pytest

pytest.importorskip("numba")

import jitgrad  # noqa: E402
from jitgrad.backends import gemm  # noqa: E402
from jitgrad.backends import gemm_kernel  # noqa: E402

# the tiles run on every thread, as outside the test suite (several threads write C)
pytestmark = pytest.mark.usefixtures("all_threads")

FLOATS = (np.float32, np.float64)
TOL = {np.float32: 2e-5, np.float64: 1e-13}


def _operand(rng, shape, dtype, layout):
    """A 2-D operand of ``shape`` in one of several memory layouts."""
    rows, cols = shape
    if layout == "c":
        return rng.standard_normal(shape).astype(dtype)
    if layout == "f":
        return rng.standard_normal((cols, rows)).astype(dtype).T
    if layout == "step":  # every other column of a wider array
        return rng.standard_normal((rows, 2 * cols)).astype(dtype)[:, ::2]
    if layout == "neg":  # rows reversed: a negative stride
        return rng.standard_normal(shape).astype(dtype)[::-1]
    if layout == "bcast":  # one row broadcast: a zero stride
        return np.broadcast_to(rng.standard_normal((1, cols)).astype(dtype), shape)
    raise AssertionError(layout)


def _check(a, b):
    got = gemm.tiled(a, b)
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert got.dtype == a.dtype and got.shape == want.shape
    assert got.flags.c_contiguous  # as NumPy's: the kernels after a product read it by rows
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64) + 1.0
    np.testing.assert_array_less(np.abs(got - want) / scale, TOL[a.dtype.type])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (9, 3, 33), (37, 129, 100), (16, 64, 1),
                                   (1, 64, 64), (8, 17, 32), (64, 128, 96), (5, 300, 7)])
@pytest.mark.parametrize("layout_a", ["c", "f", "step", "neg"])
@pytest.mark.parametrize("layout_b", ["c", "f", "step", "bcast"])
def test_tiled_matches_float64(dtype, m, k, n, layout_a, layout_b):
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    _check(_operand(rng, (m, k), dtype, layout_a), _operand(rng, (k, n), dtype, layout_b))


@pytest.mark.parametrize("dtype", FLOATS)
def test_every_edge_of_the_tiles(dtype):
    # sizes around the tile sizes of both kernels, so that whole, shifted and padded tiles run
    mr, nr = gemm_kernel.MR, gemm_kernel.tile_columns(dtype)
    lanes = gemm_kernel.VECTOR_BYTES // np.dtype(dtype).itemsize
    rng = np.random.default_rng(0)
    for m in (mr - 1, mr, mr + 1, 2 * mr + 3):
        for n in (nr - 1, nr, nr + 1, 2 * nr + 5):
            for k in (4 * lanes - 1, 4 * lanes, 4 * lanes + 3):
                a = rng.standard_normal((m, k)).astype(dtype)
                b = rng.standard_normal((k, n)).astype(dtype)
                _check(a, b)
                _check(a, np.asfortranarray(b))  # the dot-product kernel (b unit along k)


@pytest.mark.parametrize("dtype", FLOATS)
def test_empty_and_zero_inner_size(dtype):
    a = np.ones((4, 0), dtype)
    b = np.ones((0, 5), dtype)
    got = gemm.tiled(a, b)
    assert got.shape == (4, 5) and got.dtype == dtype and not got.any()
    assert gemm.tiled(np.ones((0, 3), dtype), np.ones((3, 2), dtype)).shape == (0, 2)


@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_and_inf_propagate_as_in_blas(dtype):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((20, 70)).astype(dtype)
    b = rng.standard_normal((70, 40)).astype(dtype)
    a[3, 5] = np.nan
    a[7, 9] = np.inf
    b[9, 2] = 0.0  # inf * 0 is NaN
    b[11, 30] = -np.inf
    for bb in (b, np.asfortranarray(b)):
        got = gemm.tiled(a, bb)
        with np.errstate(invalid="ignore"):
            want = a.astype(np.float64) @ bb.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
        finite = np.isfinite(want)
        np.testing.assert_allclose(got[finite], want[finite], rtol=1e-4, atol=1e-4)


def test_dispatch_rules(monkeypatch):
    big = np.ones((64, 64), np.float32)
    assert gemm.applies(big, big)
    assert not gemm.applies(big[:8, :8], big[:8, :8])  # below MIN_FLOPS: NumPy's
    assert not gemm.applies(big, big.astype(np.float64))  # mixed dtypes
    assert not gemm.applies(big.astype(np.complex64), big.astype(np.complex64))
    assert not gemm.applies(big.astype(np.int64), big.astype(np.int64))
    assert not gemm.applies(np.ones((2, 64, 64), np.float32), big)
    assert gemm.implementations() == {"mm": gemm.matmul, "addmm": gemm.addmm}
    monkeypatch.setenv("JITGRAD_GEMM", "NumPy")
    numpy_impls = gemm.implementations()
    assert numpy_impls["mm"] is np.matmul
    np.testing.assert_array_equal(numpy_impls["addmm"](big[0], big, big), big[0] + big @ big)
    monkeypatch.setenv("JITGRAD_GEMM", "blas")
    with pytest.raises(ValueError, match="JITGRAD_GEMM='blas' is not one of tiled, numpy"):
        gemm.implementations()


def _mlp_step(backend):
    def loss(x, w1, b1, w2, b2):
        h = (x @ w1 + b1).relu()
        return jitgrad.nn.functional.linear(h, w2, b2).tanh().pow(2).mean()

    return jitgrad.jit(jitgrad.func.grad_and_value(loss, argnums=(1, 2, 3, 4)),
                       backend=backend)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_jit_gradients_equal_the_interpreter(dtype, monkeypatch):
    # mm (x @ w1, and its transposed products in the backward) and addmm (linear) run on the
    # tiled kernels in the numba backend
    products = []

    def counted(a, b):
        products.append((a.shape, b.shape))
        return tiled(a, b)

    tiled = gemm.tiled
    monkeypatch.setattr(gemm, "tiled", counted)
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s).astype(dtype) * 0.3
              for s in [(70, 90), (90, 100), (100,), (40, 100), (40,)]]
    got = _mlp_step("numba")(*[jitgrad.tensor(a) for a in arrays])
    assert len(products) >= 4, products  # x @ w1, linear, and the backward's products
    want = _mlp_step("interpreter")(*[jitgrad.tensor(a) for a in arrays])
    tol = 1e-5 if dtype == "float32" else 1e-12
    for g, w in zip([*got[0], got[1]], [*want[0], want[1]]):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=tol, atol=tol)


def test_roofline_reports_each_product():
    x = jitgrad.randn(64, 96)
    w = jitgrad.randn(96, 128, requires_grad=True)
    small = jitgrad.randn(8, 8, requires_grad=True)
    low = jitgrad.jit(lambda x, w, s: (x @ w).tanh().sum() + (s @ s).sum(),
                      backend="numba").lower(x, w, small)
    text = low.roofline()
    assert "mm [64, 96] x [96, 128] (tiled): " in text and " GFLOPS" in text
    assert "mm [8, 8] x [8, 8] (numpy): " in text  # below MIN_FLOPS
    assert "mm [96, 64] x [64, 128] (tiled): " in text  # x.T @ grad, in the backward


@pytest.mark.parametrize("dtype", FLOATS)
def test_a_large_transposed_b_is_copied_in_blocks(dtype, monkeypatch):
    monkeypatch.setattr(gemm, "DOT_MAX_BYTES", 0)  # (as for W3's 4 MiB weight)
    rng = np.random.default_rng(3)
    for m, k, n in [(37, 129, 100), (64, 70, 33), (9, 5, 40)]:
        a = rng.standard_normal((m, k)).astype(dtype)
        _check(a, rng.standard_normal((n, k)).astype(dtype).T)
        _check(a, rng.standard_normal((k, 3 * n)).astype(dtype)[:, ::3])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout_a", ["c", "f", "step", "neg"])
@pytest.mark.parametrize("layout_b", ["c", "f", "step", "bcast"])
def test_packed_panels_match_float64(dtype, layout_a, layout_b, monkeypatch):
    # b copied into panels first (as for products of PACK_MIN_ROWS rows or more), with every
    # edge: partial last panel (zero-padded), partial last row of tiles, a transposed a packed
    monkeypatch.setattr(gemm, "PACK_MIN_ROWS", 1)
    monkeypatch.setattr(gemm, "DOT_MAX_BYTES", 0)  # (a transposed b is packed, not dotted)
    mr, nr = gemm_kernel.MR, gemm_kernel.tile_columns(dtype)
    rng = np.random.default_rng(7)
    for m, k, n in [(3 * mr + 1, 300, 2 * nr + 5), (mr, 17, nr), (2 * mr, 40, nr + 1)]:
        a = _operand(rng, (m, k), dtype, layout_a)
        _check(a, _operand(rng, (k, n), dtype, layout_b))
    # a far-strided a.T (columns a page apart) is packed tile by tile too
    wide = rng.standard_normal((300, 4096 // np.dtype(dtype).itemsize)).astype(dtype)
    _check(wide.T[: 2 * mr + 3], _operand(rng, (300, nr + 3), dtype, layout_b))


def test_panels_layout():
    # pack_panels: panel p holds columns p*nr.. of every row, k-major, the last zero-padded
    nr = gemm_kernel.tile_columns(np.float32)
    b = np.arange(5 * (nr + 3), dtype=np.float32).reshape(5, nr + 3)
    for source in (b, np.asfortranarray(b)):
        flat, b_sk, b_sj = gemm._flat(source)
        panels = np.full(2 * 5 * nr, -1.0, np.float32)
        gemm_kernel.pack_panels(flat, b_sk, b_sj, 5, nr + 3, panels, nr)
        padded = np.zeros((5, 2 * nr), np.float32)
        padded[:, : nr + 3] = b
        np.testing.assert_array_equal(panels.reshape(2, 5, nr), padded.reshape(5, 2, nr)
                                      .transpose(1, 0, 2))


def test_packed_product_reuses_its_scratch_without_mixing_products(monkeypatch):
    # the panels' scratch array is kept per thread: a smaller product after a larger one, and a
    # product whose b is then changed, still give their own results
    monkeypatch.setattr(gemm, "PACK_MIN_ROWS", 1)
    rng = np.random.default_rng(8)
    a = rng.standard_normal((64, 200)).astype(np.float32)
    b = rng.standard_normal((200, 150)).astype(np.float32)
    _check(a, b)
    _check(a[:40, :90], b[:90, :70])
    b *= -2.0
    _check(a, b)
