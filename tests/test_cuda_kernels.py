"""The hand-written CUDA kernels (issue 14's second part), on numba's simulator: line kernels
(prod, scans, sorting, scatter, triangles), data-dependent sizes (nonzero, masked ops),
compositions (losses, norms, pads) and the network ops (convolution, pooling, batch norm).

Each case runs the same call on the CPU and on cuda tensors and compares values and gradients
(the CPU ops are tested against torch elsewhere); torch itself is the oracle where the point is
torch's semantics (sort's NaN order and ties, nonzero's order). Sizes are tiny: the simulator
runs each GPU thread as a Python thread.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_cuda import CUDA

pytestmark = pytest.mark.skipif(CUDA is None, reason="numba.cuda is not usable here")

import jitgrad  # noqa: E402

F = jitgrad.nn.functional
RNG = np.random.default_rng(14)


def _rand(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def _outs(r):
    r = r if isinstance(r, (tuple, list)) else (r,)
    return [o for o in r if isinstance(o, jitgrad.Tensor)]


def same_on_both(fn, *arrays, grad=True, rtol=1e-10, atol=1e-12):
    """``fn`` on CPU tensors and on cuda tensors: equal values and, for float inputs, equal
    gradients of a weighted sum of the float outputs. Returns the cuda outputs."""
    results = []
    for device in ("cpu", "cuda"):
        ts = [jitgrad.tensor(a, device=device,
                             requires_grad=grad and a.dtype.kind == "f") for a in arrays]
        outs = _outs(fn(*ts))
        leaves = [t for t in ts if t.requires_grad]
        grads = []
        floats = [o for o in outs if o.requires_grad]
        if leaves and floats:
            total = sum((o * (k + 1.5)).sum() for k, o in enumerate(floats))
            grads = jitgrad.autograd.grad(total, leaves, allow_unused=True)
        if device == "cuda":
            assert all(o.is_cuda for o in outs)
            assert all(g is None or g.is_cuda for g in grads)
        results.append(([o.detach().cpu().numpy() for o in outs],
                        [None if g is None else g.cpu().numpy() for g in grads]))
    (cpu, cpu_g), (gpu, gpu_g) = results
    for a, b in zip(cpu + cpu_g, gpu + gpu_g):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.shape == b.shape and a.dtype == b.dtype
            np.testing.assert_allclose(b, a, rtol=rtol, atol=atol, equal_nan=True)
    return gpu


# ---------------------------------------------------------------- line kernels
def test_sort_ties_and_nan_order_match_torch():
    torch = pytest.importorskip("torch")
    a = np.array([[3.0, np.nan, 1.0, 3.0, -np.inf, 1.0, np.nan, 0.0],
                  [2.0, 2.0, 2.0, np.inf, -1.0, np.nan, 5.0, 2.0]])
    x = jitgrad.tensor(a, device="cuda")
    for descending in (False, True):
        v, i = x.sort(dim=1, descending=descending)
        tv, ti = torch.tensor(a).sort(dim=1, descending=descending, stable=True)
        np.testing.assert_array_equal(v.cpu().numpy(), tv.numpy())  # NaN last ascending
        np.testing.assert_array_equal(i.cpu().numpy(), ti.numpy())  # ties keep their order
        np.testing.assert_array_equal(x.argsort(dim=1, descending=descending).cpu().numpy(),
                                      ti.numpy())
    for largest in (True, False):
        v, i = x.topk(3, dim=1, largest=largest)
        tv, _ = torch.tensor(a).topk(3, dim=1, largest=largest)
        np.testing.assert_array_equal(v.cpu().numpy(), tv.numpy())
    ints = jitgrad.tensor(np.array([[5, 1, 5, -2]]), device="cuda")
    assert ints.sort(descending=True)[0].cpu().tolist() == [[5, 5, 1, -2]]


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_sort_topk_along_each_dim_with_gradients(dim):
    a = _rand(3, 4, 5)
    same_on_both(lambda x: x.sort(dim=dim), a)
    same_on_both(lambda x: x.sort(dim=dim, descending=True)[0].exp(), a)
    same_on_both(lambda x: x.topk(2, dim=dim), a)
    same_on_both(lambda x: x.transpose(0, 2).argsort(dim=dim), a)


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_cumsum_cumprod_along_each_dim(dim):
    a = _rand(2, 3, 4)
    a[1, 1, 1] = 0.0  # (cumprod's gradient is exact at a zero)
    same_on_both(lambda x: x.cumsum(dim), a)
    same_on_both(lambda x: x.cumprod(dim), a)
    same_on_both(lambda x: x.transpose(0, 1).cumsum(dim), a)
    ints = np.arange(24).reshape(2, 3, 4) % 5
    out = same_on_both(lambda x: x.cumsum(dim), ints)[0]
    assert out.dtype == np.int64
    same_on_both(lambda x: (x > 2).cumsum(dim), ints)


def test_prod_over_dims_with_zeros_and_gradients():
    a = _rand(3, 4)
    b = a.copy()
    b[1, 2] = 0.0
    c = b.copy()
    c[1, 0] = 0.0
    for arr in (a, b, c):
        same_on_both(lambda x: x.prod(), arr)
        same_on_both(lambda x: x.prod(1, keepdim=True), arr)
        same_on_both(lambda x: x.t().prod(0), arr)
    same_on_both(lambda x: x.prod(0), np.arange(1, 7).reshape(2, 3))
    same_on_both(lambda x: x.prod(1), np.zeros((2, 0)))


def test_scatter_write_value_and_multiply():
    x, src = _rand(3, 4), _rand(3, 4)
    idx = np.array([[0, 1, 0, 2], [2, 2, 2, 1], [1, 0, 1, 0]])  # duplicates: the last wins
    same_on_both(lambda x, s, i: x.scatter(0, i, s), x, src, idx)
    same_on_both(lambda x, s, i: x.scatter(1, i[:, :2] + 1, s), x, src, idx)
    same_on_both(lambda x, i: x.scatter(1, i, 2.5), x, idx)
    same_on_both(lambda x, s, i: x.scatter(0, i, s, reduce="multiply"), x, src, idx, grad=False)
    with pytest.raises(IndexError, match="index out of range"):
        jitgrad.tensor(x, device="cuda").scatter(0, jitgrad.tensor(idx + 1, device="cuda"), 1.0)


def test_tril_triu():
    a = _rand(2, 3, 4)
    for k in (-1, 0, 2):
        same_on_both(lambda x, k=k: x.tril(k), a)
        same_on_both(lambda x, k=k: x.triu(k), a)
    same_on_both(lambda x: x.transpose(1, 2).triu(), a)


# ---------------------------------------------------------------- data-dependent sizes
def test_nonzero_empty_all_true_and_order_match_torch():
    torch = pytest.importorskip("torch")
    cases = [np.zeros((0, 3)), np.ones((2, 3)), np.zeros((2, 2)), np.array(5.0), np.array(0.0),
             (RNG.standard_normal((3, 4, 5)) > 0.3).astype(np.float64),
             np.array([0.0, np.nan, -1.0, 0.0])]
    for a in cases:
        got = jitgrad.tensor(a, device="cuda").nonzero()
        assert got.is_cuda and got.dtype is jitgrad.int64
        np.testing.assert_array_equal(got.cpu().numpy(), torch.tensor(a).nonzero().numpy())
    t = jitgrad.tensor(cases[5], device="cuda").nonzero(as_tuple=True)
    assert len(t) == 3 and all(d.is_cuda for d in t)


def test_masked_select_and_masked_scatter_with_gradients():
    x, src = _rand(3, 4), _rand(12)
    mask = RNG.standard_normal((3, 4)) > 0
    row = np.array([True, False, True, True])
    same_on_both(lambda x, m: x.masked_select(m), x, mask)
    same_on_both(lambda x, m: x.masked_select(m), x, row)  # the mask broadcasts
    same_on_both(lambda x, m: x[:1].masked_select(m), x, mask)  # so does the input
    same_on_both(lambda x, m, s: x.masked_scatter(m, s), x, mask, src)
    same_on_both(lambda x, m: x.masked_select(m), x, np.zeros((3, 4), bool))
    with pytest.raises(RuntimeError, match="Number of elements of source"):
        jitgrad.tensor(x, device="cuda").masked_scatter(jitgrad.tensor(mask, device="cuda"),
                                                        jitgrad.zeros(1, device="cuda",
                                                                      dtype=jitgrad.float64))


# ---------------------------------------------------------------- compositions
def test_losses():
    x, t, w = RNG.uniform(0.05, 0.95, (3, 4)), RNG.uniform(0, 1, (3, 4)), RNG.uniform(0, 2, 4)
    for red in ("mean", "sum", "none"):
        same_on_both(lambda x, t, red=red: F.binary_cross_entropy(x, t, reduction=red), x, t)
        same_on_both(lambda x, t, w, red=red: F.binary_cross_entropy(x, t, w, reduction=red),
                     x, t, w)
        same_on_both(lambda x, t, w, red=red: F.binary_cross_entropy_with_logits(
            x, t, w, reduction=red, pos_weight=w), x * 4 - 2, t, w)
        same_on_both(lambda x, y, red=red: F.smooth_l1_loss(x, y, reduction=red, beta=0.5), x, t)
        same_on_both(lambda x, y, red=red: F.smooth_l1_loss(x, y, reduction=red, beta=0.0), x, t)
        same_on_both(lambda x, y, red=red: F.huber_loss(x, y, reduction=red, delta=0.3), x, t)
    bad = jitgrad.tensor(np.array([0.5, 1.5]), device="cuda")
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(bad, bad * 0)


@pytest.mark.parametrize("ord", [2, 1, 0, 3, 0.5, float("inf"), float("-inf")])
def test_vector_norms(ord):  # noqa: A002
    a = _rand(3, 4)
    a[0, 1] = 0.0
    same_on_both(lambda x: jitgrad.linalg.vector_norm(x, ord), a)
    same_on_both(lambda x: jitgrad.linalg.vector_norm(x, ord, dim=1, keepdim=True), a)
    same_on_both(lambda x: jitgrad.linalg.vector_norm(x.float(), ord, dim=0), a, rtol=1e-5)
    same_on_both(lambda x: jitgrad.linalg.vector_norm(x, ord, dtype=jitgrad.float64),
                 a.astype(np.float32), rtol=1e-6)


def test_round_decimals_pads_and_copy_slices():
    a = _rand(2, 3, 5) * 10
    for d in (0, 2, -1):
        same_on_both(lambda x, d=d: x.round(decimals=d), a)
    same_on_both(lambda x: F.pad(x, (1, 2, 0, 1), value=1.5), a)
    same_on_both(lambda x: F.pad(x, (-1, 2, 1, -1)), a)  # negative pads crop
    same_on_both(lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"), a)
    same_on_both(lambda x: F.pad(x, (3, 1, 2, 0), mode="replicate"), a)
    same_on_both(lambda x: F.pad(x[None], (1, 1, 1, 1, 1, 0), mode="replicate"), a)

    def setitem(x, v):
        y = x * 1
        y[:, 1:3, ::2] = v
        y[0, 0] = 2.0
        return y

    same_on_both(setitem, a, _rand(2, 2, 3))


# ---------------------------------------------------------------- network ops
@pytest.mark.parametrize("stride,padding,dilation,groups", [
    (1, 0, 1, 1), (2, 1, 1, 2), (1, 2, 2, 1), (2, "same", 1, 1)])
def test_convolutions(stride, padding, dilation, groups):
    if padding == "same":
        stride = 1
    x, w, b = _rand(2, 4, 6, 5), _rand(6, 4 // groups, 3, 3), _rand(6)
    same_on_both(lambda x, w, b: F.conv2d(x, w, b, stride, padding, dilation, groups), x, w, b)
    x1, w1 = _rand(2, 4, 7), _rand(4, 4 // groups, 3)
    same_on_both(lambda x, w: F.conv1d(x, w, None, stride, padding, dilation, groups), x1, w1)


def test_convolution_double_backward():
    x, w = _rand(1, 2, 4, 4), _rand(3, 2, 2, 2)

    def f(x, w):
        y = F.conv2d(x, w, padding=1)
        (gx,) = jitgrad.autograd.grad((y * y).sum(), x, create_graph=True)
        return gx

    same_on_both(f, x, w)


def test_pooling():
    a = _rand(2, 3, 7, 6)
    a[0, 0, 1, 1] = np.nan  # the last NaN of a window is its index
    a[1, 1, 2, :] = 5.0  # ties: the first one
    same_on_both(lambda x: F.max_pool2d(x, 2), a)
    same_on_both(lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), a)
    same_on_both(lambda x: F.max_pool2d(x, (2, 3), (2, 1), (1, 1), dilation=(2, 1),
                                        ceil_mode=True, return_indices=True), a)
    same_on_both(lambda x: F.max_pool2d(x[0], 2, ceil_mode=True), a)  # unbatched
    b = _rand(2, 3, 7, 6)
    same_on_both(lambda x: F.avg_pool2d(x, 2), b)
    same_on_both(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), b)
    same_on_both(lambda x: F.avg_pool2d(x, 3, 2, 1, divisor_override=4), b)
    same_on_both(lambda x: F.adaptive_avg_pool2d(x, (3, 4)), b)
    same_on_both(lambda x: F.adaptive_avg_pool2d(x, 1), b)
    ints = jitgrad.tensor(np.arange(16).reshape(1, 1, 4, 4), device="cuda")
    assert F.max_pool2d(ints, 2).cpu().tolist() == [[[[5, 7], [13, 15]]]]


def test_batch_norm_training_eval_and_running_stats():
    a, w, b = _rand(4, 3, 2, 2), _rand(3), _rand(3)
    rm, rv = _rand(3), RNG.uniform(0.5, 2, 3)
    for training in (True, False):
        same_on_both(lambda x, w, b, m, v, tr=training: F.batch_norm(x, m, v, w, b, training=tr),
                     a, w, b, rm, rv)
    same_on_both(lambda x: F.batch_norm(x, None, None, training=True), a[:, :, 0])
    layers = []
    for device in ("cpu", "cuda"):
        jitgrad.manual_seed(0)
        bn = jitgrad.nn.BatchNorm2d(3).to(device)
        bn(jitgrad.tensor(a, device=device, dtype=jitgrad.float32))
        layers.append(bn)
    np.testing.assert_allclose(layers[1].running_mean.cpu().numpy(),
                               layers[0].running_mean.numpy(), rtol=1e-6)
    np.testing.assert_allclose(layers[1].running_var.cpu().numpy(),
                               layers[0].running_var.numpy(), rtol=1e-6)


def test_gradcheck_through_the_new_kernels():
    x = jitgrad.tensor(_rand(2, 3), requires_grad=True)
    w = jitgrad.tensor(_rand(2, 3), requires_grad=True)

    def f(x, w):  # (gradcheck perturbs host arrays: the function copies to the device)
        x, w = x.cuda(), w.cuda()
        out = (x.sort(1)[0] * w).cumsum(1).prod(0) + F.pad(x.tril(), (1, 1),
                                                            mode="reflect")[:, :3].sum(0)
        return out.cpu()

    assert jitgrad.autograd.gradcheck(f, (x, w))


def test_svdvals_one_sided_jacobi():
    for shape in ((4, 3), (3, 5), (2, 3, 3), (1, 1), (2, 1, 4)):
        a = _rand(*shape)
        got = jitgrad.linalg.svdvals(jitgrad.tensor(a, device="cuda"))
        assert got.is_cuda
        np.testing.assert_allclose(got.cpu().numpy(), np.linalg.svd(a, compute_uv=False),
                                   rtol=1e-12, atol=1e-13)
        same_on_both(jitgrad.linalg.svdvals, a, rtol=1e-8, atol=1e-10)
    low = np.outer(_rand(4), _rand(3))  # rank one: two zero singular values
    got = jitgrad.linalg.svdvals(jitgrad.tensor(low, device="cuda")).cpu().numpy()
    np.testing.assert_allclose(got, np.linalg.svd(low, compute_uv=False), atol=1e-12)
    same_on_both(lambda x: jitgrad.linalg.matrix_norm(x, ord=2), _rand(3, 3), rtol=1e-8)
    f32 = _rand(3, 2).astype(np.float32)
    np.testing.assert_allclose(
        jitgrad.linalg.svdvals(jitgrad.tensor(f32, device="cuda")).cpu().numpy(),
        np.linalg.svd(f32, compute_uv=False), rtol=1e-5)
    from jitgrad.ops.norms import SVDVALS_JVP
    from jitgrad.ops.registry import apply

    a, t = _rand(3, 4), _rand(3, 4)  # the forward-mode op
    outs = [apply(SVDVALS_JVP, jitgrad.tensor(t, device=d), jitgrad.tensor(a, device=d))
            for d in ("cpu", "cuda")]
    np.testing.assert_allclose(outs[1].cpu().numpy(), outs[0].numpy(), rtol=1e-8, atol=1e-10)


def test_the_new_kernels_under_jit():
    def f(x, w):
        y = F.max_pool2d(F.conv2d(x, w, padding=1), 2)
        return y.cumsum(1).sort(-1)[0].prod(-1).sum() + \
            F.pad(x, (1, 1, 1, 1), mode="reflect").tril().sum()

    a, b = _rand(1, 2, 4, 4), _rand(2, 2, 3, 3)
    same_on_both(jitgrad.jit(f), a, b)


def test_advanced_indexing_reads_and_writes_on_the_device():
    a = _rand(3, 4, 5)
    i, j = np.array([[0, 2], [1, -1]]), np.array([3, 0])
    mask = RNG.standard_normal((3, 4)) > 0

    def on(v, x):
        return jitgrad.tensor(v, device=x.device)

    for key in (lambda x: (on(i, x),), lambda x: (slice(None), on(j, x)),
                lambda x: (on(i, x), slice(None), on(j, x)),  # apart: B first
                lambda x: (slice(None), on(i, x), on(j, x)),  # adjacent: B in place
                lambda x: (0, slice(None), on(j, x)), lambda x: (None, slice(1, None),
                                                                 on(j, x), slice(None, None, 2)),
                lambda x: (on(mask, x),), lambda x: (on(mask, x), slice(1, 3)),
                lambda x: (Ellipsis, on(j, x)), lambda x: ([0, 2],),
                lambda x: (slice(None), jitgrad.tensor(j))):  # (host indices are moved)
        same_on_both(lambda x, key=key: x[key(x)], a)

    def put(x, v):
        y = x * 1
        y[on(i, x)] = v[:1, :1]
        y[:, on(j, x), 1] += v[0, 0, :2, 0]
        y[on(mask, x)] = 0.5
        y[:, on(np.array([1, 1]), x)] = v[0, 0, :2]  # duplicates: the last write wins
        return y

    same_on_both(put, a, _rand(2, 2, 4, 5))
    x = jitgrad.tensor(a, device="cuda")
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x[jitgrad.tensor([0, 3], device="cuda")]


def test_scans_of_long_lines_run_in_chunks():
    from jitgrad.backends import cuda_lines

    n = 4 * cuda_lines.SIM_SCAN_CHUNK + 3  # (the simulator's chunk: several chunks a line)
    a = RNG.uniform(0.5, 1.5, (2, n))
    a[1, 6] = 0.0
    for dim in (0, 1):
        same_on_both(lambda x, d=dim: x.cumsum(d), a)
        same_on_both(lambda x, d=dim: x.cumprod(d), a)
        same_on_both(lambda x, d=dim: x.t().cumsum(1 - d), a)
    same_on_both(lambda x: x.cumsum(0), np.arange(n) % 3)


# ---------------------------------------------------------------- pointwise extras
@pytest.mark.parametrize("kind", ["float32", "float64", "int32", "int64", "bool"])
def test_torch_extras_pointwise_kernels_on_every_dtype(kind):
    """atan2, hypot, logaddexp, lerp, nan_to_num and the division family on cuda tensors, eager
    and fused under jit: the CPU's values on NaN, inf, signed zeros, negative operands and
    integer division by zero (the cases of ``test_render_kernels``)."""
    from test_render_kernels import EXTRAS, extras_operands

    cpu = extras_operands(kind)
    dev = extras_operands(kind, "cuda")
    for name, fn in sorted(EXTRAS.items()):
        with np.errstate(all="ignore"):
            try:
                expected = fn(*cpu)
            except (TypeError, RuntimeError):
                continue
            if name.startswith("lerp_scalar") and not kind.startswith("float"):
                with pytest.raises(NotImplementedError, match="no CUDA kernel"):
                    fn(*dev)
                continue
            pairs = [(expected, fn(*dev)),
                     (expected * 2, jitgrad.jit(lambda a, b, fn=fn: fn(a, b) * 2)(*dev))]
        for want, got in pairs:
            assert got.is_cuda and got.dtype is want.dtype, name
            e, g = want.numpy(), got.cpu().numpy()
            if e.dtype.kind == "f":
                np.testing.assert_allclose(g, e, rtol=2e-6 if e.dtype == np.float32 else 1e-14,
                                           equal_nan=True, err_msg=name)
                np.testing.assert_array_equal(np.signbit(g[e == 0]), np.signbit(e[e == 0]),
                                              err_msg=name)
            else:
                np.testing.assert_array_equal(g, e, err_msg=name)


# ---------------------------------------------------------------- long rows, long masks
@pytest.mark.parametrize("dim", [0, 1])
def test_long_rows_sort_through_the_bitonic_network_in_the_insertion_sorts_order(dim):
    from jitgrad.backends import cuda_lines

    n = 3 * cuda_lines.SIM_BITONIC_MIN + 5  # (a padded power of two, several stages)
    a = RNG.integers(-3, 4, (n, 3) if dim == 0 else (2, n)).astype(np.float64)
    a[a == 3], a[a == -3] = np.nan, -np.inf  # ties, NaN (the largest value), -inf
    for descending in (False, True):  # (the device's sort is stable, stable=False too)
        want = jitgrad.tensor(a).sort(dim, descending=descending, stable=True)
        for stable in (False, True):
            got = jitgrad.tensor(a, device="cuda").sort(dim, descending=descending,
                                                        stable=stable)
            np.testing.assert_array_equal(got[0].cpu().numpy(), want[0].numpy())
            np.testing.assert_array_equal(got[1].cpu().numpy(), want[1].numpy())
    same_on_both(lambda x: x.sort(dim, descending=True)[0].exp(), RNG.standard_normal(a.shape))
    same_on_both(lambda x: x.topk(4, dim)[0], RNG.standard_normal(a.shape))
    ints = RNG.integers(-4, 4, a.shape)
    same_on_both(lambda x: x.argsort(dim, stable=True), ints)


def test_nonzero_counts_are_scanned_block_by_block():
    from jitgrad import _cuda_array as ca
    from jitgrad.backends import cuda_compact, numba_cuda

    b = numba_cuda.block_size()
    for n in (1, b, b + 1, b * b + 3):  # one block, two, three levels of block totals
        v = RNG.integers(0, 9, n)
        a = ca.to_device(v)
        cuda_compact.exclusive_scan(a)
        np.testing.assert_array_equal(a.copy_to_host(), np.cumsum(v) - v)
    m = RNG.random((5, 2 * b * cuda_compact.SIM_CHUNK + 1)) > 0.5  # (several chunk blocks)
    same_on_both(lambda x: x.nonzero(), m)
    same_on_both(lambda x, y: x[y], RNG.standard_normal(m.shape), m)


@pytest.mark.parametrize("dt", [jitgrad.float32, jitgrad.float64, jitgrad.int64, jitgrad.bool])
def test_argmax_max_dim_and_nan_reductions_equal_the_cpu(dt):
    """argmax/argmin/max(dim)/min(dim) (the first extreme, the first NaN where there is one),
    and amax/amin that propagate NaN (CUDA's atomic max/min keep the stored value when either
    is NaN: a NaN is stored plainly), eager and fused."""
    a = np.array([[0., 1, 2, 5], [1, np.nan, 0, 7], [3, 3, 3, 3]])
    if not dt.is_floating_point:
        a = np.nan_to_num(a, nan=-4.0)
    calls = [lambda t: t.max(1), lambda t: t.min(0, keepdim=True), lambda t: t.amax(1),
             lambda t: t.amin(), lambda t: t.max(), jitgrad.jit(lambda t: t.amax(0) + t.amin())]
    if dt is not jitgrad.bool:  # (argmax/argmin refuse bool, as torch)
        calls += [lambda t: t.argmax(), lambda t: t.argmin(1),
                  lambda t: t.argmax(0, keepdim=True)]
    for fn in calls:
        want, got = fn(jitgrad.tensor(a).to(dt)), fn(jitgrad.tensor(a, device="cuda").to(dt))
        for w, g in zip(want if isinstance(want, tuple) else (want,),
                        got if isinstance(got, tuple) else (got,)):
            assert g.is_cuda and g.dtype is w.dtype
            np.testing.assert_array_equal(g.cpu().numpy(), w.numpy())
