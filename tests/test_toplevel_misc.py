"""finfo/iinfo, can_cast, is_floating_point/is_complex, asarray, logspace, linspace,
randint_like and the thread count, against torch where it is installed."""

import warnings

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch")

FLOATS = ["float16", "float32", "float64", "complex64", "complex128"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]


@pytest.mark.parametrize("name", FLOATS)
def test_finfo_matches_torch(name):
    mine, theirs = jg.finfo(getattr(jg, name)), torch.finfo(getattr(torch, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(mine, attr) == getattr(theirs, attr), attr
    assert repr(mine) == repr(theirs)


def test_finfo_default_is_the_default_dtype():
    assert jg.finfo() == jg.finfo(jg.float32)
    jg.set_default_dtype(jg.float64)
    try:
        assert jg.finfo().dtype == "float64"
    finally:
        jg.set_default_dtype(jg.float32)


@pytest.mark.parametrize("name", INTS)
def test_iinfo_matches_torch(name):
    mine, theirs = jg.iinfo(getattr(jg, name)), torch.iinfo(getattr(torch, name))
    for attr in ("bits", "max", "min", "dtype"):
        assert getattr(mine, attr) == getattr(theirs, attr), attr
    assert repr(mine) == repr(theirs)


@pytest.mark.parametrize("call", [lambda m: m.finfo(m.int64), lambda m: m.iinfo(m.float32),
                                  lambda m: m.iinfo(m.bool), lambda m: m.finfo(3)])
def test_info_errors_match_torch(call):
    with pytest.raises(TypeError) as theirs:
        call(torch)
    with pytest.raises(TypeError) as mine:
        call(jg)
    assert str(mine.value) == str(theirs.value)


def test_can_cast_matches_torch_for_every_pair():
    names = ["bool"] + INTS + FLOATS
    for a in names:
        for b in names:
            want = torch.can_cast(getattr(torch, a), getattr(torch, b))
            assert jg.can_cast(getattr(jg, a), getattr(jg, b)) == want, (a, b)


def test_is_floating_point_and_is_complex():
    assert jg.is_floating_point(jg.ones(2)) and not jg.is_floating_point(jg.ones(2).long())
    assert jg.is_complex(jg.ones(2, dtype=jg.complex64)) and not jg.is_complex(jg.ones(2))
    with pytest.raises(TypeError, match=r"argument 'input' \(position 1\) must be Tensor, not "
                                        r"list"):
        jg.is_floating_point([1.0])


def test_asarray_shares_numpy_memory_unless_asked_to_copy():
    a = np.ones(3, dtype=np.float32)
    t = jg.asarray(a)
    t[0] = 5
    assert a[0] == 5
    c = jg.asarray(a, copy=True)
    c[1] = 7
    assert a[1] == 1
    assert jg.asarray(a, dtype=jg.float64).dtype is jg.float64
    with pytest.raises(ValueError, match="can't alias tensor with dtype 'Float' into dtype "
                                         "'Double'."):
        jg.asarray(a, copy=False, dtype=jg.float64)
    with pytest.raises(ValueError, match="can't alias arbitrary sequence into a tensor."):
        jg.asarray([1.0], copy=False)


@pytest.mark.parametrize("value", [3.0, 3, [True], [1, 2.5], np.float64(2),
                                   np.array([1, 2], dtype=np.int32)])
def test_asarray_dtypes_match_torch(value):
    assert jg.asarray(value).dtype.name == str(torch.asarray(value).dtype).split(".")[1]
    np.testing.assert_array_equal(jg.asarray(value).numpy(), torch.asarray(value).numpy())


def test_asarray_of_a_tensor():
    x = jg.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="unspecified requires_grad now defaults"):
        assert jg.asarray(x) is x
    y = jg.ones(2)
    assert jg.asarray(y) is y
    d = jg.asarray(x, dtype=jg.float64)
    assert d.dtype is jg.float64 and not d.requires_grad and d.grad_fn is None
    with pytest.raises(ValueError, match="can't alias tensor with dtype 'Float' into dtype "
                                         "'Long'."):
        jg.asarray(y, dtype=jg.int64, copy=False)
    c = jg.asarray(y, copy=True)
    c[0] = 3
    assert y[0].item() == 1


@pytest.mark.parametrize("args,kwargs", [((0, 2, 3), {}), ((0, 2, 3), {"base": 2}),
                                         ((-1, 1, 5), {}), ((0, 1, 1), {}), ((0, 1, 0), {}),
                                         ((0, 3, 4), {"dtype": "int32"}),
                                         ((0, 1, 7), {"dtype": "float64", "base": 3.5})])
def test_logspace_matches_torch(args, kwargs):
    mine_kw = {k: getattr(jg, v) if k == "dtype" else v for k, v in kwargs.items()}
    theirs_kw = {k: getattr(torch, v) if k == "dtype" else v for k, v in kwargs.items()}
    mine, theirs = jg.logspace(*args, **mine_kw), torch.logspace(*args, **theirs_kw)
    assert mine.dtype.name == str(theirs.dtype).split(".")[1]
    np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        jg.logspace(0, 1, -1)


@pytest.mark.parametrize("name", ["float32", "float64", "int64", "int32", "uint8"])
def test_linspace_equals_torch_bit_for_bit(name):
    # torch's CPU kernel: the step in the dtype, the first half start + step * i and the rest
    # end - step * (steps - 1 - i), each a fused multiply-add (tiny-diffusion's quadratic beta
    # schedule, linspace(...) ** 2 then cumprod, differed from torch's by an ulp here and there)
    rng = np.random.default_rng(5)
    for steps in [*rng.integers(2, 80, 40).tolist(), 1000, 4097]:
        a, b = rng.uniform(0 if name == "uint8" else -10, 10, 2) * (20 if "int" in name else 1)
        mine = jg.linspace(a, b, steps, dtype=getattr(jg, name)).numpy()
        theirs = torch.linspace(a, b, steps, dtype=getattr(torch, name)).numpy()
        np.testing.assert_array_equal(mine, theirs)
    assert jg.linspace(0.5, 9.7, 5, dtype=jg.int64).tolist() == [0, 2, 4, 6, 9]  # (truncated)
    assert jg.linspace(2.5, 7, 1).tolist() == [2.5] and jg.linspace(0, 1, 0).shape == (0,)
    with pytest.raises(RuntimeError, match="^number of steps must be non-negative$"):
        jg.linspace(0, 1, -1)


def test_randint_like():
    x = jg.ones(200, 3)
    r = jg.randint_like(x, 10)
    assert r.shape == x.shape and r.dtype is jg.float32
    assert r.min().item() >= 0 and r.max().item() <= 9 and len(np.unique(r.numpy())) == 10
    s = jg.randint_like(x, 3, 5, dtype=jg.int64)
    assert s.dtype is jg.int64 and set(np.unique(s.numpy())) == {3, 4}


def test_thread_count():
    import numba

    from jitgrad._blas_threads import blas_threads, set_blas_threads

    n, blas = jg.get_num_threads(), blas_threads()
    assert n == numba.get_num_threads() and n >= 1
    # found wherever NumPy runs on OpenBLAS (its wheels do)
    assert (blas is not None) == ("openblas" in str(np.__config__.CONFIG).lower())
    try:
        jg.set_num_threads(1)
        assert jg.get_num_threads() == 1
        assert blas_threads() in (1, None)  # NumPy's OpenBLAS too, as torch sets its BLAS's
        jg.set_num_threads(10_000)  # capped at the threads Numba started
        assert jg.get_num_threads() == numba.config.NUMBA_NUM_THREADS
        assert blas_threads() in (numba.config.NUMBA_NUM_THREADS, None)
    finally:
        jg.set_num_threads(n)
        if blas is not None:
            set_blas_threads(blas)
    for bad, text in ((0, "set_num_threads expects a positive integer"),
                      (2.5, "set_num_threads expects an int, but got float")):
        with pytest.raises(RuntimeError, match=text):
            jg.set_num_threads(bad)
        with pytest.raises(RuntimeError, match=text), warnings.catch_warnings():
            torch.set_num_threads(bad)
