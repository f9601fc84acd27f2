"""The dtypes the reductions, sorting ops, linalg and FFT functions take are torch's CPU
kernels' dtypes: refused ones raise torch's exception class and text (Tensor methods, in-place
forms and ``jitgrad.jit`` too), accepted mixes compute torch's values (kthvalue's index among
ties, integer matrix powers)."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad
from torch_compare import raises_as_torch

torch = pytest.importorskip("torch")

REFUSED_KINDS = ("complex64", "complex128", "int64", "int32", "int16", "int8", "uint8", "bool",
                 "float16", "bfloat16")


def _data(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-2.0, 3.0, shape)


def _tensor(lib, a, dtype: str):
    if dtype.startswith("complex"):
        return lib.tensor(a + 0.5j * a[::-1], dtype=getattr(lib, dtype))
    if dtype.startswith(("int", "uint")) or dtype == "bool":
        return lib.tensor(np.abs(a * 2).astype(np.int64)).to(getattr(lib, dtype))
    return lib.tensor(a).to(getattr(lib, dtype))


def _square(lib, dtype: str, n=3):
    a = np.eye(n) * 3 + _data((n, n), 1) * 0.3
    return _tensor(lib, a, dtype)


def _outcome(fn, lib, dtype):
    try:
        out = fn(lib, dtype)
    except Exception as e:  # noqa: BLE001  (the class and text are compared)
        return "raised", type(e).__name__, " ".join(str(e).split())
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return "ok", tuple(str(o.dtype).split(".")[-1] for o in outs), tuple(
        o.detach().float().numpy() if str(o.dtype).endswith("bfloat16") else
        o.detach().numpy() for o in outs)


def _x(lib, dtype, shape=(3, 4)):
    return _tensor(lib, _data(shape), dtype)


CASES = {
    "amax": lambda L, d: L.amax(_x(L, d), 0),
    "amin_method": lambda L, d: _x(L, d).amin(),
    "max": lambda L, d: _x(L, d).max(),
    "min": lambda L, d: L.min(_x(L, d)),
    "aminmax": lambda L, d: L.aminmax(_x(L, d)),
    "max_dim": lambda L, d: _x(L, d).max(1),
    "min_dim": lambda L, d: L.min(_x(L, d), 0, keepdim=True),
    "argmax": lambda L, d: L.argmax(_x(L, d)),
    "argmin_dim": lambda L, d: _x(L, d).argmin(1),
    "sort": lambda L, d: _x(L, d).sort(),
    "argsort": lambda L, d: L.argsort(_x(L, d), 0),
    "topk": lambda L, d: _x(L, d).topk(2),
    "median": lambda L, d: _x(L, d).median(),
    "median_dim": lambda L, d: L.median(_x(L, d), 1),
    "nanmedian": lambda L, d: L.nanmedian(_x(L, d)),
    "nanmedian_dim": lambda L, d: _x(L, d).nanmedian(0),
    "kthvalue": lambda L, d: _x(L, d).kthvalue(2),
    "mode": lambda L, d: L.mode(_x(L, d)),
    "searchsorted": lambda L, d: L.searchsorted(_x(L, d, (5,)).sort().values if not
                                                d.startswith("complex") else _x(L, d, (5,)),
                                                _x(L, d, (3,))),
    "bucketize": lambda L, d: L.bucketize(_x(L, d, (3,)), _x(L, d, (5,))),
    "histc": lambda L, d: L.histc(_x(L, d, (6,))),
    "histc_range": lambda L, d: _x(L, d, (6,)).histc(bins=4, min=0, max=2),
    "nansum": lambda L, d: L.nansum(_x(L, d)),
    "nansum_dtype": lambda L, d: _x(L, d).nansum(dtype=L.float64),
    "nanmean": lambda L, d: _x(L, d).nanmean(),
    "cdist": lambda L, d: L.cdist(_x(L, d), _x(L, d, (2, 4))),
    "cdist_mm": lambda L, d: L.cdist(_x(L, d, (30, 2)), _x(L, d, (30, 2))),
    "cosine_similarity": lambda L, d: L.cosine_similarity(_x(L, d), _x(L, d)),
    "F.cosine_similarity": lambda L, d: L.nn.functional.cosine_similarity(_x(L, d), _x(L, d)),
    "rms_norm": lambda L, d: L.rms_norm(_x(L, d), (4,)),
    "unique_dim": lambda L, d: L.unique(_x(L, d), dim=0),
    "clamp_min": lambda L, d: L.clamp_min(_x(L, d), 1),
    "clamp_max_method": lambda L, d: _x(L, d).clamp_max(1),
    "clamp_min_": lambda L, d: _x(L, d).clamp_min_(1),
    "clamp_min_tensor": lambda L, d: L.clamp_min(_x(L, d), _x(L, d)),
    "clamp_max_tensor": lambda L, d: L.clamp_max(_x(L, d), _x(L, d)),
    "linalg.inv": lambda L, d: L.linalg.inv(_square(L, d)),
    "linalg.det": lambda L, d: L.linalg.det(_square(L, d)),
    "linalg.slogdet": lambda L, d: L.linalg.slogdet(_square(L, d)),
    "linalg.solve": lambda L, d: L.linalg.solve(_square(L, d), _x(L, d, (3, 2))),
    "linalg.cholesky": lambda L, d: L.linalg.cholesky(_square(L, d)),
    "linalg.matrix_power": lambda L, d: L.linalg.matrix_power(_square(L, d), 3),
    "matrix_power_batch": lambda L, d: _tensor(L, _data((2, 3, 3)), d).matrix_power(2),
    "matrix_power_neg": lambda L, d: L.linalg.matrix_power(_square(L, d), -2),
    "linalg.eigh": lambda L, d: L.linalg.eigh(_square(L, d))[0],
    "linalg.eigvalsh": lambda L, d: L.linalg.eigvalsh(_square(L, d)),
    "linalg.pinv": lambda L, d: L.linalg.pinv(_x(L, d, (4, 3))),
    "linalg.qr": lambda L, d: L.linalg.qr(_x(L, d, (4, 3)))[1].abs(),
    "linalg.solve_triangular": lambda L, d: L.linalg.solve_triangular(
        _square(L, d), _x(L, d, (3, 2)), upper=True),
    "linalg.svd": lambda L, d: L.linalg.svd(_x(L, d, (4, 3)))[1],
    "linalg.svdvals": lambda L, d: L.linalg.svdvals(_x(L, d, (4, 3))),
    "linalg.matrix_norm": lambda L, d: L.linalg.matrix_norm(_x(L, d)),
    "linalg.matrix_norm_1": lambda L, d: L.linalg.matrix_norm(_x(L, d), 1),
    "linalg.matrix_norm_2": lambda L, d: L.linalg.matrix_norm(_x(L, d), 2),
    "linalg.matrix_norm_nuc": lambda L, d: L.linalg.matrix_norm(_x(L, d), "nuc"),
    "linalg.lu": lambda L, d: L.linalg.lu(_square(L, d))[2],
    "linalg.lu_factor_ex": lambda L, d: L.linalg.lu_factor_ex(_square(L, d))[0],
    "linalg.lu_solve": lambda L, d: L.linalg.lu_solve(
        L.linalg.lu_factor(_square(L, "float32"))[0].to(getattr(L, d)),
        L.linalg.lu_factor(_square(L, "float32"))[1], _x(L, d, (3, 2))),
    "lu_unpack": lambda L, d: L.lu_unpack(
        L.linalg.lu_factor(_square(L, "float32"))[0].to(getattr(L, d)),
        L.linalg.lu_factor(_square(L, "float32"))[1])[2],
    "linalg.matrix_exp": lambda L, d: L.linalg.matrix_exp(_square(L, d)) if not d.endswith(
        ("float16",)) else L.linalg.matrix_exp(_square(L, d).to(L.float32)),
    "cholesky_solve": lambda L, d: L.cholesky_solve(_x(L, d, (3, 2)), _square(L, d)),
    "linalg.eig": lambda L, d: L.linalg.eigvals(_square(L, d)).abs(),
    "linalg.ldl_factor_ex": lambda L, d: L.linalg.ldl_factor_ex(_square(L, d))[0],
    "linalg.ldl_solve": lambda L, d: L.linalg.ldl_solve(
        L.linalg.ldl_factor(_square(L, "float32"))[0].to(getattr(L, d)),
        L.linalg.ldl_factor(_square(L, "float32"))[1], _x(L, d, (3, 2))),
    "fft.rfft2": lambda L, d: L.fft.rfft2(_x(L, d)).abs(),
    "fft.ihfft2": lambda L, d: L.fft.ihfft2(_x(L, d)).abs(),
}


@pytest.mark.parametrize("dtype", REFUSED_KINDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_dtypes_as_torch(name, dtype):
    """Both raise the same class and text, or both compute equal dtypes and values."""
    if name == "clamp_min_" and dtype == "bool":
        pytest.skip("the in-place cast's text: torch's clamp family says 'bool' (lowercase) "
                    "where other in-place ops say 'Bool'; the in-place machinery's (reported)")
    fn = CASES[name]
    t, j = _outcome(fn, torch, dtype), _outcome(fn, jitgrad, dtype)
    assert t[:2] == j[:2]
    if t[0] == "raised":
        assert t[2] == j[2]
        return
    loose = dtype in ("float16", "bfloat16")
    for a, b in zip(t[2], j[2]):
        np.testing.assert_allclose(b.astype(np.complex128), a.astype(np.complex128),
                                   rtol=3e-2 if loose else 1e-5, atol=3e-2 if loose else 1e-6)



def test_refusals_under_jit():
    """The op's check runs when jit traces it, with the same text as eager."""
    z = jitgrad.tensor([[1 + 1j, 2.0], [3.0, 4j]])
    raises_as_torch(lambda: torch.tensor([[1 + 1j, 2.0], [3.0, 4j]]).amax(0),
                     lambda: jitgrad.jit(lambda x: x.amax(0) * 2)(z))
    b = jitgrad.tensor([[True, False, True]])
    raises_as_torch(lambda: torch.tensor([[True, False, True]]).kthvalue(1),
                     lambda: jitgrad.jit(lambda x: x.kthvalue(1).values)(b))
    h = jitgrad.eye(3, dtype=jitgrad.float16)
    raises_as_torch(lambda: torch.linalg.det(torch.eye(3, dtype=torch.float16)),
                     lambda: jitgrad.jit(lambda a: jitgrad.linalg.det(a) + 1)(h))
    # what they accept still computes there
    x = np.arange(12.0).reshape(3, 4)
    got = jitgrad.jit(lambda a: a.amax(0) + a.kthvalue(2).values.sum())(jitgrad.tensor(x))
    want = torch.tensor(x).amax(0) + torch.tensor(x).kthvalue(2).values.sum()
    np.testing.assert_allclose(got.numpy(), want.numpy())


def test_kthvalue_ties_pick_torchs_index():
    """Among tied values kthvalue's index is the one torch's quickselect picks (not the first
    of a stable sort); median keeps torch's own choice."""
    rng = np.random.default_rng(3)
    for n in (2, 3, 4, 7, 12, 33):
        a = rng.integers(-2, 3, (5, n))
        b = a.astype(np.float64)
        b[rng.random(b.shape) < 0.2] = np.nan
        for k in range(1, n + 1):
            for arr in (a, b):
                t = torch.tensor(arr).kthvalue(k, 1)
                j = jitgrad.tensor(arr).kthvalue(k, 1)
                assert j.indices.tolist() == t.indices.tolist()
                np.testing.assert_array_equal(j.values.numpy(), t.values.numpy())
        for f in ("median", "nanmedian"):
            t, j = getattr(torch.tensor(b), f)(1), getattr(jitgrad.tensor(b), f)(1)
            assert j.indices.tolist() == t.indices.tolist()


def test_kthvalue_tie_gradient_goes_to_that_index():
    a = np.array([[1.0, 0.0, 1.0, 1.0, 2.0]])
    t, j = torch.tensor(a, requires_grad=True), jitgrad.tensor(a, requires_grad=True)
    t.kthvalue(3).values.sum().backward()
    j.kthvalue(3).values.sum().backward()
    np.testing.assert_array_equal(j.grad.numpy(), t.grad.numpy())


def test_integer_matrix_power_as_torch():
    a = np.array([[1, 2, 0], [-1, 3, 1], [2, 0, -2]])
    for n in (0, 1, 2, 3, 6, 11):
        for dt in ("int64", "int32", "int8", "uint8"):
            t = torch.linalg.matrix_power(torch.tensor(a).to(getattr(torch, dt)), n)
            j = jitgrad.linalg.matrix_power(jitgrad.tensor(a).to(getattr(jitgrad, dt)), n)
            assert str(j.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
            assert j.tolist() == t.tolist()


def test_accepted_mixes_still_compute():
    """Mixed dtypes torch takes: an integer and a float operand promote as torch's."""
    x = np.arange(12.0).reshape(3, 4) / 5
    i = np.arange(12).reshape(3, 4) % 4
    pairs = [
        (lambda L: L.cosine_similarity(L.tensor(i), L.tensor(x, dtype=L.float32))),
        (lambda L: L.searchsorted(L.tensor([0, 1, 2, 5]), L.tensor([0.5, 2.0, 9.0]))),
        (lambda L: L.searchsorted(L.tensor([0.0, 1.5, 2.0]), L.tensor([1, 2, 3]))),
        (lambda L: L.clamp_min(L.tensor(i), L.tensor(x))),
        (lambda L: L.clamp_max(L.tensor(x, dtype=L.float16), 0.5)),
        (lambda L: L.tensor(i).topk(2, largest=False).values),
        (lambda L: L.tensor(i).median(1).indices),
        (lambda L: L.tensor(i).amax(1)),
        (lambda L: L.tensor(i).to(L.bool).max()),
        (lambda L: L.nansum(L.tensor(i).to(L.bool))),
        (lambda L: L.tensor(x).to(L.bfloat16).histc(bins=3)),
        (lambda L: L.linalg.matrix_norm(L.tensor(x, dtype=L.float16), 1)),
        (lambda L: L.linalg.matrix_norm(L.tensor(x, dtype=L.bfloat16))),
        (lambda L: L.rms_norm(L.tensor(x, dtype=L.complex64), (4,))),
        (lambda L: L.linalg.matrix_power(L.tensor(i[:, :3] % 2).to(L.bool), 1)),
        (lambda L: L.linalg.matrix_power(L.tensor(i[:, :3] % 2).to(L.bool), 0)),
    ]
    for f in pairs:
        t, j = f(torch), f(jitgrad)
        assert str(j.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        got = j.numpy() if j.dtype.is_complex else j.float().numpy()
        want = t.numpy() if t.is_complex() else t.float().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-3)


def test_matrix_exp_half_is_right_where_torch_is_not():
    """torch's CPU matrix_exp in float16/bfloat16 returns garbage (KNOWN); jitgrad's agrees
    with torch's own float32 result of the same input."""
    a = np.eye(3) * 0.2 + _data((3, 3), 5) * 0.2
    for dt in ("float16", "bfloat16"):
        j = jitgrad.linalg.matrix_exp(jitgrad.tensor(a).to(getattr(jitgrad, dt)))
        ref = torch.linalg.matrix_exp(torch.tensor(a).to(getattr(torch, dt)).float())
        np.testing.assert_allclose(j.float().numpy(), ref.numpy(), rtol=2e-2, atol=2e-2)
