"""``F.interpolate``'s bicubic, area, anti-aliased and Lanczos modes, ``grid_sample``'s
bicubic mode, 3-d ``affine_grid`` and unit-size grids: values and gradients against torch,
gradcheck in float64, torch's refusals, and the NaN/infinite locations that must not crash."""

import warnings

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import gradcheck, gradgradcheck
from torch_compare import jitgrad_sizes, raises_as_torch

torch = pytest.importorskip("torch")

JF, TF = jitgrad.nn.functional, torch.nn.functional
RNG = np.random.default_rng(0)
X4 = RNG.standard_normal((2, 3, 5, 7))


def _both(fn, x, dtype="float32", seed=1):
    """fn(lib, tensor) on both libraries, with the gradient of a fixed weighting of it."""
    results = []
    for lib in (torch, jitgrad):
        t = lib.tensor(x, dtype=getattr(lib, dtype), requires_grad=True)
        out = fn(lib, t)
        w = np.random.default_rng(seed).standard_normal(tuple(out.shape))
        (out * lib.tensor(w, dtype=out.dtype)).sum().backward()
        results.append((out.detach().numpy(), t.grad.numpy()))
    return results


SIZES = [dict(size=(8, 3)), dict(size=(3, 4)), dict(size=(2, 13)), dict(scale_factor=1.7),
         dict(scale_factor=(0.6, 2.3)), dict(scale_factor=0.5, recompute_scale_factor=True),
         dict(scale_factor=(1.1, 1.0))]


# (lanczos is anti-aliased only, without align_corners: its refusals are tested below)
MODES = [(mode, align_corners, antialias) for mode in ("bicubic", "bilinear")
         for align_corners in (False, True) for antialias in (False, True)] + \
    [("lanczos", False, True)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode,align_corners,antialias", MODES,
                         ids=lambda v: {False: "", True: "on"}.get(v, v))
@pytest.mark.parametrize("sizes", SIZES, ids=lambda kw: ",".join(f"{k}={v}" for k, v in
                                                                 kw.items()))
def test_bicubic_antialiased_and_lanczos_interpolation_match_torch(sizes, mode, align_corners,
                                                                   antialias, dtype):

    def fn(lib, t):
        return lib.nn.functional.interpolate(t, mode=mode, align_corners=align_corners,
                                             antialias=antialias, **sizes)

    (t_out, t_grad), (j_out, j_grad) = _both(fn, X4, dtype)
    assert j_out.shape == t_out.shape and j_out.dtype == t_out.dtype
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(j_out, t_out, **tol)
    if sizes == dict(scale_factor=(1.1, 1.0)) and (mode != "bilinear" or antialias):
        # one dim keeps its size under a scale that is not 1: torch's backward then is not
        # its forward's (torch's own gradcheck fails there); jitgrad's passes
        x = jitgrad.tensor(X4[:1, :1], requires_grad=True)
        assert gradcheck(lambda t: fn(jitgrad, t), (x,))
        return
    np.testing.assert_allclose(j_grad, t_grad, **tol)


@pytest.mark.parametrize("shape,size", [((2, 3, 9), 4), ((2, 3, 9), 13), ((2, 3, 5, 7), (3, 4)),
                                        ((2, 3, 5, 7), (8, 9)), ((1, 2, 3, 4, 5), (2, 5, 3))])
def test_area_mode_is_the_adaptive_average_pool_as_torch(shape, size):
    x = RNG.standard_normal(shape)
    (t_out, t_grad), (j_out, j_grad) = _both(
        lambda lib, t: lib.nn.functional.interpolate(t, size=size, mode="area"), x)
    np.testing.assert_allclose(j_out, t_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(j_grad, t_grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kw", [dict(mode="bicubic", scale_factor=1.7),
                                dict(mode="bicubic", size=(3, 4), antialias=True),
                                dict(mode="bilinear", size=(2, 9), antialias=True),
                                dict(mode="area", size=(3, 4))], ids=str)
def test_new_modes_gradcheck_to_second_order(kw):
    x = jitgrad.tensor(RNG.standard_normal((1, 2, 5, 6)), requires_grad=True)

    def f(t):
        return JF.interpolate(t, **kw)

    assert gradcheck(f, (x,)) and gradgradcheck(f, (x,))


@pytest.mark.parametrize("kw", [dict(mode="bicubic"), dict(mode="bicubic", antialias=True),
                                dict(mode="bilinear", antialias=True),
                                dict(mode="bicubic", align_corners=True),
                                dict(mode="lanczos", antialias=True), dict(mode="bilinear"),
                                dict(mode="bilinear", align_corners=True)], ids=str)
@pytest.mark.parametrize("size", [(5, 6), (20, 25), (11, 7)])
def test_uint8_resizes_equal_torchs_fixed_point_kernels(kw, size):
    x = RNG.integers(0, 256, (2, 3, 11, 13)).astype(np.uint8)
    t = TF.interpolate(torch.from_numpy(x), size=size, **kw).numpy()
    j = JF.interpolate(jitgrad.from_numpy(x), size=size, **kw)
    assert j.dtype == jitgrad.uint8
    np.testing.assert_array_equal(j.numpy(), t)


@pytest.mark.parametrize("call", [
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 5, 7, dtype=lib.int64), size=3,
                                              mode="bicubic"),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 5, 7, dtype=lib.int64), size=3,
                                              mode="bilinear", antialias=True),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 5, 7, dtype=lib.float16), size=3,
                                              mode="bicubic", antialias=True),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 5, 7, dtype=lib.int64), size=3,
                                              mode="area"),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 9), size=3, mode="bicubic"),
    lambda lib: lib.nn.functional.interpolate(lib.ones(1, 2, 3, 4, 5), size=3, mode="bicubic"),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 9), size=3, mode="linear",
                                              antialias=True),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 5, 7), size=3, mode="nearest",
                                              antialias=True),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 5, 7), size=3, mode="area",
                                              align_corners=True),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 5, 7), size=3, mode="lanczos"),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 5, 7), size=3, mode="lanczos",
                                              antialias=True, align_corners=True),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 9), size=3, mode="lanczos"),
    lambda lib: lib.nn.functional.interpolate(lib.ones(1, 2, 3, 4, 5), size=3, mode="lanczos",
                                              antialias=True),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 5, 7, dtype=lib.float16), size=3,
                                              mode="lanczos", antialias=True),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 5, 7), size=3, mode="cubic"),
], ids=lambda f: "")
def test_interpolate_refusals_match_torch(call):
    raises_as_torch(lambda: call(torch), lambda: call(jitgrad))


@pytest.mark.parametrize("shape,kw", [
    ((1, 1, 4, 4), dict(size=0)), ((1, 1, 4), dict(size=0, mode="linear")),
    ((1, 1, 2, 3, 4), dict(size=0)), ((1, 1, 4, 4), dict(scale_factor=0.1, mode="bicubic")),
    ((1, 1, 0, 4), dict(size=2)), ((1, 1, 4, 4), dict(scale_factor=[2, 3, 4])),
    ((1, 1, 4, 4), dict(scale_factor=(2,))), ((1, 1, 4, 4), dict(size=(3,))),
    ((1, 1, 4, 4), dict(size=3, recompute_scale_factor=True)), ((1, 1, 4, 4), dict(size=(3, 2.0))),
    ((1, 1, 4, 4), dict()), ((1, 1, 4, 4), dict(size=3, scale_factor=2)),
], ids=str)
def test_interpolate_size_and_scale_refusals_match_torch(shape, kw):
    raises_as_torch(lambda: TF.interpolate(torch.ones(shape), **kw),
                    lambda: JF.interpolate(jitgrad.ones(*shape), **kw))


def test_area_mode_takes_an_empty_size_and_a_scale_as_torch():
    assert tuple(JF.interpolate(jitgrad.ones(1, 1, 4, 4), size=0, mode="area").shape) == \
        tuple(TF.interpolate(torch.ones(1, 1, 4, 4), size=0, mode="area").shape) == (1, 1, 0, 0)
    x = RNG.standard_normal((1, 2, 6, 5))
    np.testing.assert_allclose(
        JF.interpolate(jitgrad.tensor(x), scale_factor=0.5, mode="area").numpy(),
        TF.interpolate(torch.tensor(x), scale_factor=0.5, mode="area").numpy(), rtol=1e-12)


def test_half_and_bfloat16_bicubic_and_area_keep_their_dtype():
    for dt in ("float16", "bfloat16"):
        for mode in ("bicubic", "area"):
            x = jitgrad.ones(2, 3, 5, 7, dtype=getattr(jitgrad, dt))
            out = JF.interpolate(x, size=(3, 4), mode=mode)
            assert out.dtype == x.dtype and float(out.float().mean()) == pytest.approx(1.0)


def test_bicubic_interpolation_traces_under_jit():
    def resize(x):
        return (JF.interpolate(x, scale_factor=1.5, mode="bicubic", antialias=False) ** 2).sum()

    x = jitgrad.tensor(RNG.standard_normal((1, 2, 4, 6)), requires_grad=True)
    loss = jitgrad.jit(resize)(x)
    loss.backward()
    g = x.grad.clone()
    x.grad = None
    eager = resize(x)
    eager.backward()
    np.testing.assert_allclose(loss.item(), eager.item(), rtol=1e-12)
    np.testing.assert_allclose(g.numpy(), x.grad.numpy(), rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------------------ grid_sample


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_bicubic_grid_sample_matches_torch(padding_mode, align_corners):
    grid = RNG.uniform(-1.3, 1.3, (2, 4, 6, 2))
    results = []
    for lib in (torch, jitgrad):
        x = lib.tensor(X4, requires_grad=True)
        g = lib.tensor(grid, requires_grad=True)
        out = lib.nn.functional.grid_sample(x, g, mode="bicubic", padding_mode=padding_mode,
                                            align_corners=align_corners)
        (out * out.detach().cos()).sum().backward()
        results.append([out.detach().numpy(), x.grad.numpy(), g.grad.numpy()])
    for ours, theirs in zip(results[1], results[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)
    x = jitgrad.tensor(X4[:1, :1, :4, :4], requires_grad=True)
    g = jitgrad.tensor(grid[:1, :2, :2], requires_grad=True)
    assert gradcheck(lambda x, g: JF.grid_sample(x, g, mode="bicubic", padding_mode=padding_mode,
                                                 align_corners=align_corners), (x, g))


@pytest.mark.parametrize("five", [False, True], ids=["2d", "3d"])
def test_nearest_grid_sample_gives_the_grid_a_zero_gradient_as_torch(five):
    shape, grid_shape = ((1, 2, 3, 4, 5), (1, 2, 3, 2, 3)) if five else ((1, 2, 4, 5),
                                                                         (1, 3, 2, 2))
    x = jitgrad.randn(*shape, requires_grad=True)
    g = jitgrad.tensor(RNG.uniform(-1, 1, grid_shape), dtype=jitgrad.float32,
                       requires_grad=True)
    JF.grid_sample(x, g, mode="nearest", align_corners=False).sum().backward()
    assert g.grad is not None and g.grad.abs().max().item() == 0
    assert x.grad.sum().item() == pytest.approx(2 * (12 if five else 6))


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
def test_non_finite_grid_locations_read_zero_and_do_not_crash(mode):
    """(torch's own results for them differ between its 2-d and 3-d kernels, and its border
    backward crashes; jitgrad reads nothing there, in every mode, and computes the rest)."""
    grid = jitgrad.tensor([[[[float("inf"), 0.2], [0.1, float("nan")]],
                            [[-float("inf"), 3.0], [0.5, -0.5]]]], requires_grad=True)
    x = jitgrad.randn(1, 2, 3, 3)
    out = JF.grid_sample(x, grid, mode=mode, padding_mode="zeros", align_corners=False)
    finite = JF.grid_sample(x, grid[:, 1:, 1:], mode=mode, align_corners=False)
    assert out[..., :1, :].abs().max().item() == 0 and out[..., 1, 0].abs().max().item() == 0
    np.testing.assert_allclose(out[..., 1:, 1:].detach().numpy(), finite.detach().numpy())
    out.sum().backward()  # (no out-of-range gather)


# ------------------------------------------------------------------------------ affine_grid


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [[2, 1, 1, 5], [2, 1, 4, 1], [2, 1, 1, 1], [2, 3, 4, 5],
                                  [2, 1, 2, 3, 4], [2, 1, 1, 1, 3], [2, 1, 1, 1, 1]], ids=str)
def test_affine_grid_2d_3d_and_unit_sizes_match_torch(size, align_corners):
    theta = RNG.standard_normal((2, 2, 3) if len(size) == 4 else (2, 3, 4))
    results = []
    for lib in (torch, jitgrad):
        th = lib.tensor(theta, requires_grad=True)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            out = lib.nn.functional.affine_grid(th, size, align_corners=align_corners)
        out.pow(2).sum().backward()
        results.append((out.detach().numpy(), th.grad.numpy(), [str(w.message) for w in seen]))
    (t_out, t_grad, t_warn), (j_out, j_grad, j_warn) = results
    assert j_out.shape == t_out.shape and j_warn == t_warn
    np.testing.assert_allclose(j_out, t_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(j_grad, t_grad, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("call", [
    lambda lib: lib.nn.functional.affine_grid(lib.ones(2, 2, 3), [2, 1, 3, 4, 5],
                                              align_corners=False),
    lambda lib: lib.nn.functional.affine_grid(lib.ones(2, 3, 4), [2, 1, 3, 4],
                                              align_corners=False),
    lambda lib: lib.nn.functional.affine_grid(lib.ones(2, 3, 4), [2, 1, 4], align_corners=False),
    lambda lib: lib.nn.functional.affine_grid(lib.ones(2, 3, 4), [2, 1, 0, 2, 3],
                                              align_corners=False),
], ids=lambda f: "")
def test_affine_grid_refusals_match_torch(call):
    raises_as_torch(lambda: call(torch), lambda: call(jitgrad), translate=jitgrad_sizes)
