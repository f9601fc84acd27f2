"""What the rendered CPU kernels compile to: W1's fused forward+backward loop vectorizes with
no call left in it, and fresh outputs of 4 MiB or more are advised huge pages (as NumPy does
for its own allocations) before the kernel writes them."""

from __future__ import annotations

import builtins
import sys

import numpy as np
import pytest

import jitgrad
from jitgrad import func

numba = pytest.importorskip("numba")

from jitgrad.backends import asm_stats, kernel_lib, numba_cpu  # noqa: E402
from jitgrad.backends.render import render_kernel  # noqa: E402
from jitgrad.jit.passes.fuse import KERNEL_OP  # noqa: E402


def w1(x, y):
    return (x.tanh() * y.sigmoid() + x * y ** 2 - (-x * x).exp()).sum()


def _w1_kernel_body(n=1 << 20):
    # at 4 MiB per input the forward recomputes everything: one kernel, value and gradients
    x = jitgrad.randn(n)
    y = jitgrad.randn(n)
    low = jitgrad.jit(func.value_and_grad(w1, argnums=(0, 1)), backend="numba").lower(x, y)
    fused, _ = numba_cpu.lower(low.forward_graph)
    (kernel,) = [e for e in fused.eqns if e.op is KERNEL_OP]
    return kernel.params["body"]


def _compile(source: str):
    namespace: dict = {}
    exec(builtins.compile(numba_cpu._HEADER + source, "<test kernel>", "exec"), namespace)  # noqa: S102
    return numba.njit(cache=False, **numba_cpu._options(False))(namespace["kernel"])


def _has_avx2() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            return " avx2" in f.read()
    except OSError:
        return False


@pytest.mark.skipif(not _has_avx2(), reason="x86-64 with AVX2 only")
def test_w1_fused_kernel_loop_vectorizes_with_no_call_left():
    ks = render_kernel(_w1_kernel_body(), "kernel")
    assert "prange" not in ks.source and "_jg_tanh(" in ks.source and "_jg_exp(" in ks.source
    fn = _compile(ks.source)
    n = 3000  # (not a multiple of the block or the vector width)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    args = [x, y, np.ones(1, np.float32)][:len(ks.inputs)]
    outs = [np.empty(n, np.float32) for _ in ks.outputs]
    (value,) = fn(n, *args, *outs)
    expected = np.sum(np.tanh(x) / (1 + np.exp(-y)) + x * y * y - np.exp(-x * x), dtype=np.float64)
    np.testing.assert_allclose(value, expected, rtol=1e-5)
    stats = asm_stats.loop_asm_stats(fn)
    assert stats.packed > 50 and stats.widest >= 256, stats
    # only the huge-page advice for the outputs is called, before the loop
    assert set(stats.calls) <= {"madvise", "madvise@PLT"}, stats.calls


def test_hugepage_range_is_the_page_aligned_part_of_large_arrays():
    mib = 1 << 20
    assert kernel_lib.hugepage_range(4096 * 3, 4 * mib) == (4096 * 3, 4 * mib)
    assert kernel_lib.hugepage_range(4096 * 3 + 64, 4 * mib) == (4096 * 4, 4 * mib - 4032)
    assert kernel_lib.hugepage_range(4096 * 3 + 64, 4 * mib - 1)[1] == 0  # below NumPy's 4 MiB


def test_rendered_kernels_advise_each_full_size_output():
    ks = render_kernel(_w1_kernel_body(1 << 18), "kernel")  # 1 MiB float32 outputs
    assert len(ks.outputs) == 2
    head = ks.source.split("    for ", 1)[0].splitlines()
    assert [h for h in head if "_jg_hugepages" in h] == \
        ["    _jg_hugepages(o0)", "    _jg_hugepages(o1)"]
    small = render_kernel(_w1_kernel_body(1 << 12), "kernel")  # 16 KiB: no calls to compile
    assert "_jg_hugepages" not in small.source


def _vm_flags(address: int) -> list[str]:
    """The VmFlags of this process's mapping that holds ``address``."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(p, 16) for p in head.split("-"))
                inside = lo <= address < hi
            elif inside and head == "VmFlags:":
                return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


def _thp_available() -> bool:
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            return "[never]" not in f.read()
    except OSError:
        return False


@numba.njit(cache=False)
def _allocate_and_advise(n, advise):
    a = np.empty(n, np.float32)  # Numba's own allocator: NumPy's madvise does not run
    r = kernel_lib._jg_hugepages(a) if advise else np.int32(0)
    a[:] = 1.0
    return a, r


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _thp_available(),
                    reason="Linux with transparent huge pages")
def test_hugepage_advice_marks_a_numba_allocated_output():
    # 80 MiB: above the mmap threshold (64 MiB once jitgrad tuned malloc), so each array is a
    # fresh mapping: at the heap's top, an unadvised array could extend (and take the flags
    # of) an advised area before it
    n = 20 << 20
    a, r = _allocate_and_advise(n, True)
    assert r == 0 and a.sum() == n
    start, _ = kernel_lib.hugepage_range(a.ctypes.data, a.nbytes)
    assert "hg" in _vm_flags(start + (4 << 20))
    b, r = _allocate_and_advise(n, False)
    assert r == 0 and "hg" not in _vm_flags(b.ctypes.data + (4 << 20))
    small, r = _allocate_and_advise(1000, True)  # below the threshold: no system call
    assert r == 0 and small.sum() == 1000


# ---------------------------------------------------------------- issue 14's pointwise extras
_FLOATS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -1.5, 2.0, 1e30, -3.0, 1.0, 7.25, 0.75,
           -0.75, 5.0, -5.0]
_INTS = [0, 1, -1, 2, -7, 3, 100, -100, 5, 2, 4, 9, -3, 6, 0, -2]
EXTRAS = {  # the ops of torch_extras with a kernel template, each call on two operands
    "atan2": lambda a, b: jitgrad.atan2(a, b),
    "hypot": lambda a, b: jitgrad.hypot(a, b),
    "logaddexp": lambda a, b: jitgrad.logaddexp(a, b),
    "lerp_scalar_low": lambda a, b: jitgrad.lerp(a, b, 0.3),
    "lerp_scalar_high": lambda a, b: jitgrad.lerp(a, b, 1.7),
    "lerp_tensor": lambda a, b: jitgrad.lerp(a, b, b),
    "nan_to_num": lambda a, b: jitgrad.nan_to_num(a),
    "nan_to_num_given": lambda a, b: jitgrad.nan_to_num(a, 1.5, 2.0, -3.0),
    "remainder": lambda a, b: a % b,
    "remainder_scalar": lambda a, b: a % -3,
    "remainder_float_scalar": lambda a, b: a % 0.75,
    "rmod": lambda a, b: 7 % a,
    "fmod": lambda a, b: jitgrad.fmod(a, b),
    "fmod_scalar": lambda a, b: jitgrad.fmod(a, -2),
    "floor_divide": lambda a, b: a // b,
    "floor_divide_scalar": lambda a, b: a // 0.75,
    "rfloordiv": lambda a, b: -7 // a,
}
# where eager mode's values are not a kernel's, the op stays out of kernels (torch has no lerp
# of integers; a lerp of bools and atan2 ... of bools are errors or floats, kept as they are)
_UNFUSED = {("lerp_scalar_low", "int"), ("lerp_scalar_high", "int")}


def extras_operands(kind: str, device: str = "cpu"):
    """Two (4, 4) operands of ``kind`` (float32, float64, int32, int64, bool) that meet every
    pair of signs, zeros, NaN and inf between them."""
    dt = getattr(jitgrad, kind)
    if kind == "bool":
        vals = np.array(_INTS) % 3 == 1
    else:
        vals = np.array(_FLOATS if kind.startswith("float") else _INTS)
    return (jitgrad.tensor(vals.reshape(4, 4), dtype=dt, device=device),
            jitgrad.tensor(np.roll(vals, 5).reshape(4, 4), dtype=dt, device=device))


@pytest.mark.parametrize("kind", ["float32", "float64", "int32", "int64", "bool"])
@pytest.mark.parametrize("name", sorted(EXTRAS))
def test_torch_extras_templates_fuse_and_match_eager(name, kind):
    """The division family, atan2, hypot, logaddexp, lerp and nan_to_num inside a kernel give
    eager mode's values (NumPy's loops) on every dtype: NaN, inf, signed zeros, negative
    operands, integer division by zero (0, as eager) included."""
    a, b = extras_operands(kind)
    fn = EXTRAS[name]
    with np.errstate(all="ignore"):
        try:
            expected = fn(a, b) * 1
        except (TypeError, RuntimeError):
            pytest.skip(f"eager {name} does not take {kind}")
        f = jitgrad.jit(lambda a, b: fn(a, b) * 1, backend="numba")
        got = f(a, b)
    ir = f.lower(a, b).forward_ir
    fused = (name, "int" if kind.startswith("int") else kind) not in _UNFUSED
    assert ("= kernel[" in ir) == fused, ir
    assert got.dtype is expected.dtype
    e, g = expected.numpy(), got.numpy()
    if e.dtype.kind == "f":
        np.testing.assert_allclose(g, e, rtol=2e-6 if e.dtype == np.float32 else 1e-14,
                                   equal_nan=True)
        zeros = e == 0
        np.testing.assert_array_equal(np.signbit(g[zeros]), np.signbit(e[zeros]))
    else:
        np.testing.assert_array_equal(g, e)
