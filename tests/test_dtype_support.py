"""Which dtypes each op takes: every opdb record against torch in complex64, int64, bool,
float16 and bfloat16.

Each record's smallest sample runs on jitgrad and on torch with its floating arrays in the
dtype under test (int64 and bool from the values times 3). Both must refuse it with the same
exception class and text, or both compute it, with equal dtypes and values: an op that computes
where torch's kernel is not built for the dtype (relu on complex numbers, lt on complex, gelu
on integers) gives a wrong answer instead of torch's error. ``KNOWN`` lists the pairs that
differ on purpose, with the reason; a listed pair that starts to match fails (remove it).
"""

from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest
from opdb import OP_DB, convert

import jitgrad

torch = pytest.importorskip("torch")

DTYPES = ("complex64", "int64", "bool", "float16", "bfloat16")

# (record, dtype) -> why jitgrad differs from torch there
_COMPLEX32 = ("the sample's complex input built from float16 is complex32 in torch, which its FFT "
              "(and angle) refuses; jitgrad has no complex32 (it makes complex64) and computes it")
KNOWN: dict[tuple[str, str], str] = {
    **{(name, "float16"): _COMPLEX32 for name in (
        "fft.fft_complex", "fft.ifft_complex", "fft.irfft", "fft.hfft", "fft.fftn", "fft.ifftn",
        "fft.irfftn", "fft.fft2", "fft.ifft2", "fft.irfft2", "fft.hfftn", "fft.hfft2",
        "angle_complex")},
    **{(name, "float16"): "torch's complex view of float16 pairs is complex32 (its parts float16); "
       "jitgrad has no complex32: complex64, so float32 parts" for name in (
        "view_as_real", "view_as_complex")},
    **{("linalg.matrix_exp", dt): "torch's CPU matrix_exp in half gives wrong values (-2.1e4 "
       "where its own float32 result, SciPy's float64 and jitgrad's give 0.61; "
       "tests/test_dtype_reductions.py compares with torch's float32)"
       for dt in ("float16", "bfloat16")},
}


def _smallest(rec):
    samples = rec.samples(np.random.default_rng(zlib.crc32(rec.name.encode())))

    def size(obj):
        if isinstance(obj, np.ndarray):
            return obj.size
        if isinstance(obj, (tuple, list)):
            return sum(size(o) for o in obj)
        if isinstance(obj, dict):
            return sum(size(o) for o in obj.values())
        value = getattr(obj, "value", None)
        return value.size if isinstance(value, np.ndarray) else 0
    return min(samples, key=lambda s: size((s.args, s.kwargs)))


def _convert(obj, lib, dtype: str):
    if dtype not in ("int64", "bool"):
        return convert(obj, lib, getattr(lib, dtype))
    if isinstance(obj, np.ndarray) and obj.dtype.kind == "f":
        with np.errstate(invalid="ignore"):  # (inf and nan samples)
            return lib.tensor((obj * 3).astype(np.int64).astype(dtype))
    if isinstance(obj, tuple):
        return tuple(_convert(o, lib, dtype) for o in obj)
    if isinstance(obj, list) and any(isinstance(o, np.ndarray) for o in obj):
        return [_convert(o, lib, dtype) for o in obj]
    return convert(obj, lib, getattr(lib, dtype))


def _run(rec, sample, lib, dtype: str):
    """("ok", outputs) or ("raised", "<class>: <text>")."""
    args = _convert(sample.args, lib, dtype)
    kwargs = {k: _convert(v, lib, dtype) for k, v in sample.kwargs.items()}
    torch.manual_seed(0)
    jitgrad.manual_seed(0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = rec.run(lib, args, kwargs)
    except Exception as e:  # noqa: BLE001  (the class is what is compared)
        text = " ".join(str(e).split())
        if lib is jitgrad:  # (a dtype's repr names its library: jitgrad.complex64)
            text = text.replace("jitgrad.", "torch.")
        return "raised", f"{type(e).__name__}: {text}"
    return "ok", out if isinstance(out, (tuple, list)) else [out]


def _numpy(t) -> np.ndarray:
    t = t.detach()
    if str(t.dtype).endswith("bfloat16"):
        t = t.float()
    return t.numpy()


def _difference(rec, sample, dtype: str) -> str | None:
    """How jitgrad's outcome differs from torch's, or None."""
    t_kind, t_out = _run(rec, sample, torch, dtype)
    j_kind, j_out = _run(rec, sample, jitgrad, dtype)
    if t_kind == "raised" or j_kind == "raised":
        if t_kind == j_kind and t_out == j_out:
            return None
        return (f"torch {t_out if t_kind == 'raised' else 'computes it'}; "
                f"jitgrad {j_out if j_kind == 'raised' else 'computes it'}")
    for t, j in zip(t_out, j_out):
        if not isinstance(t, torch.Tensor):
            continue
        t_dtype, j_dtype = str(t.dtype).split(".")[-1], str(j.dtype).split(".")[-1]
        if t_dtype != j_dtype:
            return f"result dtype: torch {t_dtype}, jitgrad {j_dtype}"
        a, b = _numpy(t), _numpy(j)
        loose = dtype in ("float16", "bfloat16")
        if a.shape != b.shape or not np.allclose(
                a.astype(np.complex128), b.astype(np.complex128), equal_nan=True,
                rtol=2e-2 if loose else 1e-5, atol=1e-2 if loose else 1e-6):
            return f"values: torch {a.ravel()[:6]}, jitgrad {b.ravel()[:6]}"
    return None


def _params():
    return [pytest.param(rec, id=rec.name) for rec in OP_DB]


@pytest.mark.parametrize("rec", _params())
def test_dtype_support_matches_torch(rec):
    sample = _smallest(rec)
    bad = []
    for dtype in DTYPES:
        diff = _difference(rec, sample, dtype)
        known = KNOWN.get((rec.name, dtype))
        if diff is not None and known is None:
            bad.append(f"{dtype}: {diff}")
        elif diff is None and known is not None:
            bad.append(f"{dtype}: matches torch now; remove it from KNOWN ({known})")
    assert bad == []


def test_known_names_records():
    names = {rec.name for rec in OP_DB}
    assert [k for k in KNOWN if k[0] not in names or k[1] not in DTYPES] == []

