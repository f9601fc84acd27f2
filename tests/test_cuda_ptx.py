"""The simulator runs kernels as Python, so it never applies numba-cuda's typing or lowering.
This test records the kernels (source and argument types) that a few eager calls launch under
the simulator (in two parts, one per xdist worker), then compiles each to PTX for sm_90 with
numba-cuda in a fresh interpreter (no GPU needed, only NVVM; skipped where NVVM is missing): a
kernel that would not compile on a real GPU fails here.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.slow

PRELUDE = r'''
import pickle, sys
import numba
numba.config.ENABLE_CUDASIM = True
import numpy as np
sys.path.insert(0, "tests")
import cudasim_polite  # (the simulator's threads waited on politely: see its docstring)
cudasim_polite.install(cudasim_polite.KNOWN_RUN_SHA256)
import jitgrad
from jitgrad.backends import (cuda_compact, cuda_eager, cuda_index, cuda_linalg, cuda_lines,
                              cuda_linalg2, cuda_lines2, cuda_nn, cuda_random, cuda_special,
                              numba_cuda)

seen = set()
orig = numba_cuda.compile_source


def kind(a):
    if hasattr(a, "_ary"):
        arr = np.asarray(a._ary)
        if arr.dtype.fields:  # the random generators' states
            return ("states",)
        return ("a", arr.dtype.str, arr.ndim, "C" if arr.flags.c_contiguous else "A")
    if isinstance(a, np.generic):
        return ("s", a.dtype.str)
    return ("s", "<f8" if isinstance(a, float) else "<i8")


class Recorded:
    def __init__(self, src, name):
        self.kernel, self.src, self.name = orig(src, name), src, name

    def __getitem__(self, config):
        def launch(*args):
            seen.add((self.src, self.name, tuple(kind(a) for a in args)))
            return self.kernel[config](*args)
        return launch


for m in (numba_cuda, cuda_eager, cuda_lines, cuda_lines2, cuda_compact, cuda_nn, cuda_linalg,
          cuda_random, cuda_special, cuda_linalg2):
    m.compile_source = Recorded
F = jitgrad.nn.functional
rng = np.random.default_rng(0)
'''

# The launches to record, in two parts that xdist's two workers record and compile at once.
PARTS = {"autograd_pointwise_complex": r'''
for dt in (jitgrad.float32, jitgrad.float64):
    x = jitgrad.tensor(rng.standard_normal((2, 3, 6)), device="cuda", dtype=dt,
                       requires_grad=True)
    w = jitgrad.tensor(rng.standard_normal((2, 3, 2)), device="cuda", dtype=dt,
                       requires_grad=True)
    idx = jitgrad.tensor(np.array([[0, 2, 1]]), device="cuda")
    out = (x.sort(-1)[0].cumsum(-1).prod(1).sum() + x.cumprod(2).sum()
           + x.topk(2, 1)[0].sum() + x.tril().sum() + x.scatter(1, idx[:, :, None].expand(
               1, 3, 6), 1.5).sum() + x.masked_select(x > 0).sum() + x[x > 1].sum()
           + F.conv1d(x, w, padding=1).sum() + F.max_pool2d(x[None], 2).sum()
           + F.avg_pool2d(x[None], 2, ceil_mode=True).sum()
           + jitgrad.linalg.svdvals(x).sum() + x.nonzero().float().sum().to(dt)
           + F.pad(x, (1, 1), mode="reflect").sum() + x[:, idx[0]].sum())
    out.backward()
    x.detach().cumsum(2 if dt is jitgrad.float32 else 0)
for dt in (jitgrad.float32, jitgrad.float64, jitgrad.int32, jitgrad.bool):  # pointwise extras
    a = jitgrad.tensor(rng.standard_normal((2, 3)) * 3, device="cuda").to(dt)
    if dt.is_floating_point:
        (jitgrad.atan2(a, a), jitgrad.hypot(a, a), jitgrad.logaddexp(a, a), a.lerp(a, 0.3),
         a.lerp(a, 0.8), a.lerp(a, a), a.nan_to_num(), a.nan_to_num(1.0, 2.0, -3.0), a.floor())
    if dt is not jitgrad.bool:  # (the division family refuses bool, as torch)
        a % a, a % 3, a.fmod(a), a.fmod(-2), a // a, -7 // a
h = jitgrad.tensor(rng.standard_normal((2, 3)), device="cuda").half().requires_grad_()
((h @ h.t()).tanh().sum() + h.exp().mean() + h.amax() + h.softmax(1).sum()).backward()
for dt in (jitgrad.complex64, jitgrad.complex128):  # complex arithmetic
    z = jitgrad.tensor(rng.standard_normal((2, 3)) + 1j, device="cuda", dtype=dt)
    (z * z.conj() / z - 1j * z + z.real + z.imag + z.abs(), z == z,
     jitgrad.where(z.real > 0, z, -z), z.sum(), z.mean(1), jitgrad.jit(lambda z: z.sum(0))(z))
for dt in (jitgrad.complex64, jitgrad.complex128):  # complex math functions and matmul
    z = jitgrad.tensor(rng.standard_normal((2, 3)) + 0.5j, device="cuda", dtype=dt)
    [getattr(jitgrad, f)(z) for f in (
        "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "sigmoid",
        "sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "log2", "log10",
        "exp2", "sgn", "isfinite", "isinf", "isnan", "reciprocal")]  # (deg2rad: refused)
    (z ** z, z ** 2.5, 2.0 ** z, z @ z.t(), jitgrad.addcmul(z, z, z, value=0.5),
     jitgrad.lerp(z, z * 2, z), jitgrad.jit(lambda z: (z.exp() * z.sin()).sum())(z))
''', "reductions_random_indexing_linalg": r'''
rng = np.random.default_rng(1)
b = jitgrad.tensor(rng.standard_normal((2, 3)) > 0, device="cuda")
b.amax(1), b.amin()  # (no bool product: torch refuses one)
for dt in (jitgrad.float32, jitgrad.float64):  # NaN-propagating max/min, arg reductions
    a = jitgrad.tensor(rng.standard_normal((2, 3)), device="cuda", dtype=dt)
    a.amax(1), a.amin(), a.argmax(), a.max(1), a.min(0)
g = jitgrad.Generator(device="cuda").manual_seed(1)  # a cuda generator's own states
jitgrad.rand(5, generator=g, device="cuda"), jitgrad.randn(5, generator=g, device="cuda")
for dt in (jitgrad.float16, jitgrad.float32, jitgrad.float64, jitgrad.complex64):  # draws
    jitgrad.rand(5, dtype=dt, device="cuda"), jitgrad.randn(5, dtype=dt, device="cuda")
for dt in (jitgrad.int64, jitgrad.int32, jitgrad.bool, jitgrad.float32):
    jitgrad.randint(0, 2, (5,), dtype=dt, device="cuda")
jitgrad.zeros(5, device="cuda").uniform_(-1, 2).normal_(1, 3)
for dt in (jitgrad.float32, jitgrad.float64, jitgrad.int64):  # bitonic sorts of long rows
    r = jitgrad.tensor(rng.standard_normal((2, 20)) * 5, device="cuda").to(dt)
    r.sort(1, descending=True), r.argsort(0)
(jitgrad.tensor(rng.standard_normal(300), device="cuda") > 0).nonzero()  # scans of two levels
for dt in (jitgrad.complex64, jitgrad.complex128, jitgrad.bool):  # adds without an atomic
    v, i = jitgrad.ones(3, 2, device="cuda", dtype=dt), jitgrad.tensor([0, 2], device="cuda")
    v.index_add(0, i, v[:2]), v.scatter_add(1, i[None] // 2, v[:1]), v[:, 0].index_add(0, i, v[1])
for dt in (jitgrad.float32, jitgrad.float64, jitgrad.int64, jitgrad.bool):  # cuda_lines2
    r = jitgrad.tensor(rng.standard_normal((3, 4)) * 3, device="cuda").to(dt)
    i = jitgrad.tensor([2, 0], device="cuda")
    r.cummax(1), r.cummin(0), r.mode(1)
    r.aminmax(dim=0), r.index_copy(1, i, r[:, :2]), r.index_fill(0, i, 1)
    r.index_fill(1, i, r[0, 0])
    if dt is not jitgrad.bool:  # (median, kthvalue, searchsorted and isin refuse bool, as torch)
        jitgrad.isin(r, r[0]), jitgrad.isin(r, r[0].float())
        r.median(1), r.median(), r.nanmedian(0), r.nanmedian(), r.kthvalue(2, 1)
        s = r.sort(1)[0]
        jitgrad.searchsorted(s, r), jitgrad.searchsorted(s[0], r, right=True, out_int32=True)
    if dt.is_floating_point:
        r.logcumsumexp(1), r.histc(4), r.histc(3, -1.0, 1.0)
    for red in ("sum", "prod", "mean", "amax", "amin"):
        r.scatter_reduce(1, i[None].expand(3, 2), r, red, include_self=red != "prod")
z = jitgrad.tensor(rng.standard_normal((2, 3)) + 1j, device="cuda")
z.scatter_reduce(0, jitgrad.tensor([[1, 0, 1]], device="cuda"), z, "mean")
for dt in (jitgrad.float32, jitgrad.float64, jitgrad.int64):  # cuda_special
    u = jitgrad.tensor(rng.standard_normal(4) * 0.5, device="cuda").to(dt)
    u.lgamma(), u.digamma(), jitgrad.polygamma(1, u), u.erfinv(), jitgrad.special.entr(u)
for dt in (jitgrad.complex64, jitgrad.complex128):  # complex nan_to_num, per part (round: refused)
    u = jitgrad.tensor(rng.standard_normal(4) + 0.5j, device="cuda", dtype=dt)
    u.nan_to_num(), u.nan_to_num(1.0, 2.0, -3.0)
for dt in (jitgrad.float32, jitgrad.int64, jitgrad.bool):  # cuda_unique's compositions
    w = jitgrad.tensor(rng.integers(0, 3, (4, 3)), device="cuda").to(dt)
    w.unique(return_inverse=True, return_counts=True), w.unique(dim=1), w.unique_consecutive()
for dt in (jitgrad.float32, jitgrad.float64, jitgrad.complex64):  # cuda_linalg2
    m = jitgrad.tensor(rng.standard_normal((2, 3, 3)) + 3 * np.eye(3), device="cuda").to(dt)
    L = jitgrad.linalg
    L.inv(m), L.det(m), L.slogdet(m), L.solve(m, m[0]), L.cholesky(m @ m.mH)
    L.solve_triangular(m, m[0], upper=True), L.solve_triangular(m, m, upper=False, left=False)
'''}

DUMP = r'''
pickle.dump(sorted(seen), open(sys.argv[1], "wb"))
'''

COMPILE = r'''
import math, pickle, sys
import numpy as np
import numba.cuda.dispatcher as dispatcher
from numba import cuda, from_dtype, types
from numba.cuda.random import xoroshiro128p_type
from jitgrad.backends.cuda_lib import device_functions


class Device:  # (device overloads ask the current device: there is none)
    compute_capability = (9, 0)


dispatcher.get_current_device = lambda: Device()
failed = []
records = pickle.load(open(sys.argv[1], "rb"))
for src, name, sig in records:
    tys = tuple(types.Array(xoroshiro128p_type, 1, "C") if t[0] == "states" else
                types.Array(from_dtype(np.dtype(t[1])), t[2], t[3]) if t[0] == "a"
                else from_dtype(np.dtype(t[1])) for t in sig)
    ns = {"np": np, "cuda": cuda, "math": math, **device_functions()}
    exec(compile(src, "<kernel>", "exec"), ns)
    try:
        cuda.compile_ptx(ns[name], tys, device=False, cc=(9, 0))
    except Exception as e:
        failed.append(f"{name}{tys}: {str(e).splitlines()[0]}\n{src}")
print(len(records), "kernels")
print("\n".join(failed))
sys.exit(1 if failed else 0)
'''


def _nvvm_usable() -> bool:
    code = ("from numba import cuda, float32\n"
            "def k(x):\n    x[0] = 1\n"
            "cuda.compile_ptx(k, (float32[:],), device=False, cc=(9, 0))\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=300)
    return r.returncode == 0


@pytest.mark.parametrize("part", sorted(PARTS))
def test_every_kernel_compiles_to_ptx(part, tmp_path):
    if not _nvvm_usable():
        pytest.skip("numba-cuda cannot reach NVVM here")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    rec = tmp_path / "kernels.pkl"
    record = PRELUDE + PARTS[part] + DUMP
    r = subprocess.run([sys.executable, "-c", record, str(rec)], capture_output=True,
                       text=True, cwd=ROOT, env=env, timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    r = subprocess.run([sys.executable, "-c", COMPILE, str(rec)], capture_output=True,
                       text=True, cwd=ROOT, env=env, timeout=1200)
    assert r.returncode == 0, r.stdout[-5000:] + r.stderr[-3000:]
    assert int(r.stdout.split()[0]) > 15  # (each part's calls launch that many kernels)
