"""Every opdb record on the cuda device (numba's simulator), in every dtype it supports.

``benchmarks/cuda_opdb.py`` runs each record's smallest sample on cuda tensors and on the CPU,
forward and (float dtypes) backward, in float32, float64, complex64, int64 and bool; a dtype
the CPU itself rejects is not one the record supports. Every (op, dtype) either equals the CPU
(values, dtypes and gradients) or is listed in ``NOT_ON_CUDA`` with the reason. The test fails
when an unlisted pair fails (a kernel lost, a wrong value) and when a listed pair starts to
work (remove it from the list). docs/cuda.md lists the same pairs.

One test per dtype (about 5-35 s each on the simulator, under 90 s for the five on one core):
marked slow.
"""

from __future__ import annotations

import io

import pytest
from test_cuda import CUDA

pytestmark = [pytest.mark.skipif(CUDA is None, reason="numba.cuda is not usable here"),
              pytest.mark.slow]

_ORDER = "no order of complex values (NumPy orders them lexicographically, torch raises)"
_ORDER_COMPOSITE = "built on amax, which has no order of complex values on the device"
_INT_POW = "integer powers keep NumPy's overflow rules on the CPU: no integer pow template"
_FRACTION = ("value=0.5 on an integer tensor: the CPU truncates it first, as torch; the "
             "device has no integer addcmul template and raises instead")
_LINALG = ("no CUDA kernel: numba-cuda reaches no cuSOLVER (svdvals has a Jacobi kernel; inv, "
           "det, slogdet, solve, solve_triangular, cholesky one-thread-per-matrix kernels)")
_NO_COMPLEX = "no complex template (as on the CPU's fused kernels)"
_ALL = ("float32", "float64", "complex64", "int64", "bool")
_FFT = "no cuda kernel (fft)"
_SPECIAL24 = ("no cuda kernel: a CPU-only NumPy implementation (ops/special24*.py: Cephes "
              "approximations, incomplete gamma and zeta scalar loops; ops/linalg_ldl.py)")
_SPECIAL24_RECORDS = (
    "i0", "special.i0e", "special.i1", "special.i1e", "special.erfcx", "special.log_ndtr",
    "special.ndtri", "special.zeta", "mvlgamma", "special.bessel_j0", "special.bessel_j1",
    "special.bessel_y0", "special.bessel_y1", "special.modified_bessel_i0",
    "special.modified_bessel_i1", "special.modified_bessel_k0", "special.modified_bessel_k1",
    "special.scaled_modified_bessel_k0", "special.scaled_modified_bessel_k1", "special.airy_ai",
    "special.spherical_bessel_j0", "special.chebyshev_polynomial_t",
    "special.chebyshev_polynomial_u", "special.chebyshev_polynomial_v",
    "special.chebyshev_polynomial_w", "special.shifted_chebyshev_polynomial_t",
    "special.shifted_chebyshev_polynomial_u", "special.shifted_chebyshev_polynomial_v",
    "special.shifted_chebyshev_polynomial_w", "special.hermite_polynomial_h",
    "special.hermite_polynomial_he", "special.laguerre_polynomial_l",
    "special.legendre_polynomial_p")
# (complex input is rejected on the CPU as in torch: "unsupported", unlisted; igamma/igammac
# and the LDL^T ops take floating input only)
_SPECIAL24_FLOAT_ONLY = ("igamma", "igammac", "linalg.ldl_factor_ex", "linalg.ldl_solve")
_FFT_RECORDS = ("fft.fft", "fft.fft_complex", "fft.ifft", "fft.ifft_complex", "fft.rfft",
                "fft.irfft", "fft.hfft", "fft.ihfft", "fft.fftn", "fft.fftn_real", "fft.ifftn",
                "fft.rfftn", "fft.irfftn", "fft.fft2", "fft.ifft2", "fft.rfft2", "fft.irfft2",
                "fft.hfftn", "fft.ihfftn", "fft.hfft2", "fft.ihfft2")
# (the real-input transforms reject complex64 input on the CPU too: "unsupported", unlisted)
_FFT_REAL_ONLY = ("fft.rfft", "fft.ihfft", "fft.rfftn", "fft.rfft2", "fft.ihfftn",
                  "fft.ihfft2")

NOT_ON_CUDA: dict[tuple[str, str], str] = {
    ("logsumexp", "complex64"): _ORDER_COMPOSITE,
    **{(op, dt): _INT_POW for op, dt in (("pow_tensor", "int64"), ("square", "int64"),
                                         ("square", "bool"))},
    ("addcmul", "int64"): _FRACTION,
    ("linalg.svdvals", "complex64"): "the Jacobi SVD kernel is real (float64) only",
    ("linalg.matrix_norm_svd", "complex64"): "the Jacobi SVD kernel is real (float64) only",
    **{(op, "complex64"): _ORDER for op in ("cummax", "cummin")},
    ("logcumsumexp", "complex64"): "no complex logaddexp kernel (the float scan is real only)",
    **{(op, dt): _LINALG for op in ("linalg.eigh", "linalg.pinv", "linalg.qr", "linalg.svd")
       for dt in ("float32", "float64", "complex64")
       if (op, dt) not in (("linalg.eigh", "complex64"), ("linalg.svd", "complex64"))},
    **{(op, dt): _LINALG for op in ("linalg.lu_factor_ex", "linalg.lu", "lu_unpack",
                                    "linalg.lu_solve", "linalg.matrix_exp", "linalg.eig",
                                    "cholesky_solve", "geqrf")
       for dt in ("float32", "float64", "complex64")},
    **{(op, "complex64"): _NO_COMPLEX for op in ("sinc", "sinc_at_zero")},
    ("nextafter", "float32"): "nextafter's template fuses float64 only (as on the CPU)",
    **{(op, dt): _FFT for op in _FFT_RECORDS for dt in _ALL
       if not (dt == "complex64" and op in _FFT_REAL_ONLY)},
    **{(op, dt): _SPECIAL24 for op in _SPECIAL24_RECORDS for dt in _ALL
       if dt != "complex64" and (op, dt) != ("mvlgamma", "bool")},
    **{(op, dt): _SPECIAL24 for op in _SPECIAL24_FLOAT_ONLY for dt in ("float32", "float64")},
    ("linalg.ldl_factor_ex", "complex64"): _SPECIAL24,
    ("linalg.ldl_solve", "complex64"): _SPECIAL24,
    ("logaddexp", "complex64"): "complex logaddexp (torch's formula) runs on the CPU only",
    **{(op, dt): "no cuda kernel: fake quantization runs on the CPU only"
       for op in ("fake_quantize_per_tensor_affine",
                  "fake_quantize_per_tensor_affine(tensor qparams)",
                  "fake_quantize_per_channel_affine")
       for dt in ("float32", "float64")},
    ("kthvalue", "int64"): ("the index among tied values: the CPU names the one torch's CPU "
                            "quickselect picks, the device the first in stable order"),
}

DTYPES = ("float32", "float64", "complex64", "int64", "bool")


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_record_runs_on_cuda_or_is_listed(dtype):
    from benchmarks import cuda_opdb

    results = cuda_opdb.run(out=io.StringIO(), dtypes=(dtype,), smallest=True)
    failing = {k: r for k, r in results.items() if r not in ("ok", "unsupported")}
    unlisted = {k: cuda_opdb.MESSAGES.get(k, r) for k, r in failing.items()
                if k not in NOT_ON_CUDA}
    assert not unlisted, unlisted
    listed = {k for k in NOT_ON_CUDA if k[1] == dtype}
    now_working = sorted(k for k in listed if k not in failing)
    assert not now_working, f"these work now (or the record is gone): remove them from " \
                            f"NOT_ON_CUDA: {now_working}"
    assert sum(r == "ok" for r in results.values()) > 100  # (the sweep did run)


def test_listed_entries_are_real_records_and_dtypes():
    from benchmarks import cuda_opdb

    cuda_opdb._tests_path()
    from opdb import BY_NAME

    assert all(op in BY_NAME and dt in DTYPES for op, dt in NOT_ON_CUDA), \
        [k for k in NOT_ON_CUDA if k[0] not in BY_NAME]
