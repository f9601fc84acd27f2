"""The dtype of an ``out=`` tensor, function by function, against torch.

Pointwise functions cast their result into ``out`` when the cast is safe; many other torch
kernels want exactly the result's dtype (each in its own words), reductions such as ``sum`` and
``cumsum`` compute in ``out``'s dtype, and some functions take no ``out=`` at all. Every opdb
record of a ``jitgrad.*`` function runs with ``out=`` of six dtypes, from float32 and int64
input, on both libraries: both refuse with the same exception class and text, or both compute
equal dtypes and values.
"""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest
from opdb import OP_DB, resolve
from test_dtype_support import _convert, _smallest

import jitgrad
from torch_compare import jitgrad_type_names


OUT_DTYPES = ("float32", "float64", "int64", "complex64", "bool", "float16")

# (record, "in->out") -> why jitgrad differs from torch there
KNOWN: dict[tuple[str, str], str] = {
    **{("linalg.matrix_power", f"{i}->{o}"): "torch wants exactly the result's dtype for n >= 2 "
       "but casts for n in (0, 1); jitgrad casts (the values are the same)"
       for i, outs in (("float32", ("float64", "complex64", "float16")),
                       ("int64", ("float64", "complex64", "float16", "float32")))
       for o in outs},
    **{("lerp_tensor", f"float32->{o}"): "torch's lerp wants the input's dtype with a tensor "
       "weight and casts with a number weight; jitgrad casts both (the values are the same)"
       for o in ("float64", "complex64", "float16", "int64", "bool")},
    **{("mean", f"float32->{o}"): "torch's text for mean over all dims is \"mean.dtype_out(): "
       "input types can't be cast ...\"; jitgrad says \"result type Float can't be cast ...\" "
       "(the same RuntimeError)" for o in ("int64", "bool")},
    **{("mvlgamma", f"int64->{o}"): "torch names the integer input's dtype in its cast error "
       "(\"result type Long\"), jitgrad the result's (\"result type Float\")"
       for o in ("int64", "bool")},
}


def _records():
    for rec in OP_DB:
        if rec.call is not None or rec.path.startswith(("Tensor.", "nn.")):
            continue
        yield pytest.param(rec, id=rec.name)


def _run(lib, rec, sample, in_dtype: str, out_dtype: str):
    f = rec.jitgrad_fn() if lib is jitgrad else resolve(lib, rec.path)
    lib.manual_seed(0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            args = _convert(sample.args, lib, in_dtype)
            kwargs = {k: _convert(v, lib, in_dtype) for k, v in sample.kwargs.items()}
            plain = f(*args, **kwargs)
            dt = getattr(lib, out_dtype)
            out = (tuple(lib.empty(0, dtype=dt) for _ in plain)
                   if isinstance(plain, (tuple, list)) else lib.empty(0, dtype=dt))
            args = _convert(sample.args, lib, in_dtype)
            lib.manual_seed(0)
            result = f(*args, out=out, **kwargs)
    except Exception as e:  # noqa: BLE001  (the class and text are what is compared)
        return "raised", type(e).__name__, " ".join(str(e).split())
    results = result if isinstance(result, (tuple, list)) else [result]
    return "ok", [(str(r.dtype).split(".")[-1], np.asarray(
        (r.float() if str(r.dtype).endswith("bfloat16") else r).detach().numpy()))
        for r in results if hasattr(r, "dtype")]


def _difference(t, j) -> str | None:
    if t[0] == "raised" or j[0] == "raised":
        if t[0] != j[0]:
            return f"torch {t[1:] if t[0] == 'raised' else 'computes'}; jitgrad " \
                   f"{j[1:] if j[0] == 'raised' else 'computes'}"
        if t[1] != j[1]:
            return f"torch {t[1:]}; jitgrad {j[1:]}"
        # torch's argument parser lists its overloads ("invalid combination of arguments");
        # jitgrad's Python functions say "got an unexpected keyword argument 'out'"
        if t[1] == "TypeError" or jitgrad_type_names(t[2]) == j[2]:
            return None
        return f"torch {t[2]!r}; jitgrad {j[2]!r}"
    for (td, tv), (jd, jv) in zip(t[1], j[1]):
        if td != jd:
            return f"dtype: torch {td}, jitgrad {jd}"
        if tv.shape != jv.shape or not np.allclose(
                tv.astype(np.complex128), jv.astype(np.complex128), rtol=1e-3, atol=1e-4,
                equal_nan=True):
            return f"values: torch {tv.ravel()[:4]}, jitgrad {jv.ravel()[:4]}"
    return None


@pytest.mark.parametrize("rec", _records())
def test_out_dtype_matches_torch(rec):
    torch = pytest.importorskip("torch")
    try:
        resolve(torch, rec.path)
    except AttributeError:
        pytest.skip(f"torch has no {rec.path}")
    sample = _smallest(rec)
    bad = []
    for in_dtype in ("float32", "int64"):
        for out_dtype in OUT_DTYPES:
            key = (rec.name, f"{in_dtype}->{out_dtype}")
            diff = _difference(_run(torch, rec, sample, in_dtype, out_dtype),
                               _run(jitgrad, rec, sample, in_dtype, out_dtype))
            if diff is not None and key not in KNOWN:
                bad.append(f"{key[1]}: {diff}")
            elif diff is None and key in KNOWN:
                bad.append(f"{key[1]}: matches torch now; remove it from KNOWN")
    assert bad == []


def test_known_names_records():
    names = {rec.name for rec in OP_DB}
    assert [k for k in KNOWN if k[0] not in names] == []


# ---------------------------------------------------------------- without torch


def _raises(fn, exc, text):
    with pytest.raises(exc) as info:
        fn()
    assert str(info.value) == text


def test_exact_dtype_texts():
    x = jitgrad.tensor([[1.5, -2.25], [3.5, 4.0]])
    empty = jitgrad.empty(0, dtype=jitgrad.float64)
    _raises(lambda: jitgrad.mm(x, x, out=empty), RuntimeError,
            "Expected out tensor to have dtype float, but got double instead")
    _raises(lambda: jitgrad.abs(x, out=empty), RuntimeError,
            "Found dtype Double but expected Float")
    _raises(lambda: jitgrad.sort(x, out=(jitgrad.empty(0), jitgrad.empty(0, dtype=jitgrad.int32))),
            RuntimeError, "Expected out tensor to have dtype long int, but got int instead")
    _raises(lambda: jitgrad.median(x, 1, out=(empty, jitgrad.empty(0, dtype=jitgrad.int32))),
            RuntimeError, "Expected tensor for argument #1 'indices' to have scalar type Long; "
            "but got jitgrad.IntTensor instead (while checking arguments for median)")
    _raises(lambda: jitgrad.matmul(x[0], x[0], out=empty), RuntimeError,
            "result dtype Double does not match input dtype Float")
    _raises(lambda: jitgrad.any(x, 1, out=jitgrad.empty(0)), RuntimeError,
            "any only supports bool tensor for result, got: Float")
    # pointwise functions still cast where the cast is safe
    assert jitgrad.sin(x, out=empty).dtype is jitgrad.float64
    assert jitgrad.max(x, out=empty).item() == 4.0


def test_reductions_compute_in_out_dtype():
    x = jitgrad.tensor([[1.5, -2.25], [3.5, 4.0]])
    out = jitgrad.sum(x, 1, out=jitgrad.empty(0, dtype=jitgrad.int64))
    assert out.dtype is jitgrad.int64 and out.tolist() == [-1, 7]  # (1 - 2, 3 + 4: truncated)
    assert jitgrad.cumsum(x, 1, out=jitgrad.empty(0, dtype=jitgrad.int64)).tolist() == [
        [1, -1], [3, 7]]


def test_functions_without_out():
    x = jitgrad.ones(2, 2)
    for name in ("relu", "isnan", "isinf", "flip", "roll", "trace", "unique", "clone", "det",
                 "positive", "count_nonzero", "masked_fill", "rot90"):
        fn = getattr(jitgrad, name)
        assert "out" not in inspect.signature(fn).parameters, name
    _raises(lambda: jitgrad.relu(x, out=x), TypeError,
            "relu() got an unexpected keyword argument 'out'")
    _raises(lambda: jitgrad.var_mean(x, out=(x, x)), TypeError,
            "var_mean() got an unexpected keyword argument 'out'")
    _raises(lambda: jitgrad.median(x, out=x), TypeError,
            'median() missing 1 required positional arguments: "dim"')
    with pytest.raises(TypeError, match=r"^sum\(\) received an invalid combination of arguments "
                       r"- got \(Tensor, out=Tensor\)"):
        jitgrad.sum(x, out=x)


def test_public_functions_have_their_names():
    """Python's TypeErrors name the function by its ``__qualname__``: no factory's closure."""
    bad = []
    for prefix, module in (("", jitgrad), ("linalg.", jitgrad.linalg),
                           ("special.", jitgrad.special), ("fft.", jitgrad.fft)):
        for name in dir(module):
            fn = getattr(module, name)
            while inspect.isfunction(fn):
                if "<locals>" in fn.__qualname__ and not name.startswith("_"):
                    bad.append(f"{prefix}{name}: {fn.__qualname__}")
                fn = getattr(fn, "__wrapped__", None)
    assert bad == []


def test_nansum_dtype_counts_nan_as_zero_before_the_cast():
    x = jitgrad.tensor([[1.5, math.nan], [3.5, 4.0]])
    assert jitgrad.nansum(x, dtype=jitgrad.int64).item() == 8  # 1 + 0 + 3 + 4
    assert jitgrad.nansum(x, 1, dtype=jitgrad.int64).tolist() == [1, 7]
    _raises(lambda: jitgrad.nansum(x, dtype=jitgrad.complex64), NotImplementedError,
            "\"nansum_cpu\" not implemented for 'ComplexFloat'")
    _raises(lambda: jitgrad.nanmean(x, 1, dtype=jitgrad.int64), RuntimeError,
            "nanmean(): could not infer output dtype. Optional dtype must be either a floating "
            "point or complex dtype. Got: Long")
    _raises(lambda: jitgrad.mean(x, 1, dtype=jitgrad.int64), RuntimeError,
            "mean(): could not infer output dtype. Optional dtype must be either a floating "
            "point or complex dtype. Got: Long")


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int64", "bool"])
def test_logsumexp_of_integers_is_float32(dtype):
    values = np.array([1, 2, 3]) if dtype != "bool" else np.array([1, 0, 1])
    x = jitgrad.tensor(values.astype(dtype))
    expected = np.float32(np.log(np.exp(values.astype(np.float64)).sum()))
    for result in (jitgrad.logsumexp(x, 0), jitgrad.jit(lambda t: jitgrad.logsumexp(t, 0))(x)):
        assert result.dtype is jitgrad.float32
        assert result.item() == pytest.approx(float(expected), rel=1e-6)


def test_xlogy_of_two_numbers_is_refused():
    for fn, name in ((jitgrad.xlogy, "xlogy"), (jitgrad.special.xlogy, "special_xlogy"),
                     (jitgrad.special.xlog1py, "special_xlog1py")):
        with pytest.raises(TypeError, match=rf"^{name}\(\) received an invalid combination of "
                           r"arguments - got \(float, float\)"):
            fn(2.0, 3.0)
    assert jitgrad.special.xlogy(2.0, jitgrad.tensor([3.0])).item() == pytest.approx(
        2 * math.log(3))
