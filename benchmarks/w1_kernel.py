"""Where W1's time goes at N=1e7: the fused kernel alone vs the whole ``jit`` call.

``python -m benchmarks.w1_kernel [--n 1e7] [--repeat 15]`` prints the median time of

- ``hand``: a hand-fused Numba loop (value and both gradients in one pass, the ``numba_math``
  helpers; DESIGN.md section 5), serial, into preallocated outputs;
- ``kernel``: the kernel jitgrad renders for ``jit(value_and_grad(w1))`` (its source depends on
  ranks and dtypes only), serial and parallel, into preallocated outputs: the loop's own cost;
- ``fresh outputs``: the serial kernel into outputs allocated each call, by NumPy (which asks
  for huge pages), and by a Numba program (NRT's ``malloc``) with and without the kernel's
  ``_jg_hugepages`` advice: what first-touch page faults cost;
- ``jit``: ``jit(value_and_grad(w1))`` as a user calls it (serial and parallel kernels).

with the fraction of the memory roofline each reaches (16 bytes per element over a NumPy
copy's bandwidth, as ``python -m benchmarks`` counts it) and the page faults per call (minor
faults, where the ``resource`` module exists: a count that other processes do not disturb).
Times are measurements, never asserted; run on a quiet machine (other processes on a 2-core
machine stall parallel loops).
"""

from __future__ import annotations

import argparse
import builtins
import statistics
import time

import numpy as np


def _faults() -> int:
    try:
        import resource
    except ImportError:  # (not on Windows)
        return 0
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _median(fn, repeat: int) -> tuple[float, float]:
    """Median seconds per call and minor page faults per call."""
    fn()
    fn()
    times = []
    faults = _faults()
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), (_faults() - faults) / repeat


def _hand():
    import numba

    from jitgrad.backends import numba_math as nm

    @numba.njit(fastmath=set(nm.KERNEL_FASTMATH), error_model="numpy")
    def hand(x, y, gx, gy):
        total = 0.0
        one = np.float32(1.0)
        n = x.shape[0]
        for b in range((n + 1023) // 1024):
            part = np.float32(0.0)
            for j in range(min(1024, n - b * 1024)):
                i = np.uint64(b * 1024 + j)  # (with a signed index: 3x slower here)
                xi, yi = x[i], y[i]
                t, s, e = nm.tanh(xi), nm.sigmoid(yi), nm.exp(-xi * xi)
                part += t * s + xi * yi * yi - e
                gx[i] = (one - t * t) * s + yi * yi + np.float32(2.0) * xi * e
                gy[i] = t * s * (one - s) + np.float32(2.0) * xi * yi
            total += np.float64(part)
        return total

    return hand


def _w1(x, y):
    return (x.tanh() * y.sigmoid() + x * y ** 2 - (-x * x).exp()).sum()


def _kernel_source(n: int) -> str:
    import jitgrad
    from jitgrad import func
    from jitgrad.backends import numba_cpu
    from jitgrad.backends.render import render_kernel
    from jitgrad.jit.passes.fuse import KERNEL_OP

    x, y = jitgrad.randn(min(n, 1 << 20)), jitgrad.randn(min(n, 1 << 20))
    low = jitgrad.jit(func.value_and_grad(_w1, argnums=(0, 1)), backend="numba").lower(x, y)
    fused, _ = numba_cpu.lower(low.forward_graph)
    (e,) = [e for e in fused.eqns if e.op is KERNEL_OP]
    return render_kernel(e.params["body"], "kernel").source


def _compile(source: str, parallel: bool):
    import numba

    from jitgrad.backends import numba_cpu

    ns: dict = {}
    exec(builtins.compile(numba_cpu._HEADER + source, "<w1 kernel>", "exec"), ns)  # noqa: S102
    return numba.njit(**numba_cpu._options(parallel))(ns["kernel"])


def _in_program(kernel, advise: bool):
    import numba

    from jitgrad.backends.kernel_lib import _jg_hugepages

    @numba.njit
    def program(n, x, y, one):
        gx = np.empty(n, np.float32)
        gy = np.empty(n, np.float32)
        if advise:
            _jg_hugepages(gx)
            _jg_hugepages(gy)
        return kernel(n, x, y, one, gx, gy), gx, gy

    return program


def _reference(x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    t, s, e = np.tanh(xd), 1 / (1 + np.exp(-yd)), np.exp(-xd * xd)
    value = float(np.sum(t * s + xd * yd * yd - e))
    return value, (1 - t * t) * s + yd * yd + 2 * xd * e, t * s * (1 - s) + 2 * xd * yd


def _check(label: str, got: tuple, want: tuple) -> None:
    """Raises unless ``got`` (value, grad x, grad y) agrees with the float64 reference."""
    value, gx, gy = got
    if not np.isclose(float(value), want[0], rtol=1e-4, atol=1e-3 * np.sqrt(want[1].size)):
        raise AssertionError(f"{label}: value {float(value)} differs from {want[0]}")
    for name, g, w in (("x", gx, want[1]), ("y", gy, want[2])):
        if not np.allclose(np.asarray(g), w, rtol=1e-4, atol=1e-5):
            raise AssertionError(f"{label}: the gradient of {name} differs from the reference")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=float, default=1e7)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args(argv)
    n, repeat = int(args.n), args.repeat

    import jitgrad
    from jitgrad import func
    from jitgrad.backends import numba_cpu

    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    one = np.ones(1, np.float32)
    gx, gy = np.empty_like(x), np.empty_like(x)
    copy, _ = _median(lambda: np.copyto(gx, x), repeat)
    bandwidth = 2 * x.nbytes / copy
    source = _kernel_source(n)
    serial = _compile(source, False)
    parallel = _compile(source.replace("range((n0", "prange((n0", 1), True)
    hand = _hand()
    # the kernel's own advice is a no-op on these preallocated (already touched) outputs
    rows = [
        ("hand-fused loop, serial, preallocated", lambda: hand(x, y, gx, gy)),
        ("kernel, serial, preallocated", lambda: serial(n, x, y, one, gx, gy)),
        ("kernel, parallel, preallocated", lambda: parallel(n, x, y, one, gx, gy)),
        ("kernel, serial, NumPy-allocated outputs",
         lambda: serial(n, x, y, one, np.empty(n, np.float32), np.empty(n, np.float32))),
        ("kernel in a Numba program, advised outputs", lambda p=_in_program(serial, True):
         p(n, x, y, one)),
    ]
    # the same program without the advice: the kernel's own call must not advise either
    plain = _compile(source.replace("    _jg_hugepages(o0)\n", "").replace(
        "    _jg_hugepages(o1)\n", ""), False)
    rows.append(("kernel in a Numba program, unadvised outputs",
                 lambda p=_in_program(plain, False): p(n, x, y, one)))
    tx, ty = jitgrad.tensor(x), jitgrad.tensor(y)
    for label, minimum in (("jit(value_and_grad), default threads", numba_cpu.PARALLEL_MIN),
                           ("jit(value_and_grad), serial kernels", 0)):
        saved = numba_cpu.PARALLEL_MIN
        numba_cpu.PARALLEL_MIN = minimum
        try:
            f = jitgrad.jit(func.value_and_grad(_w1, argnums=(0, 1)), backend="numba")
            for _ in range(5):  # (past the launcher tier, into the whole program)
                f(tx, ty)
        finally:
            numba_cpu.PARALLEL_MIN = saved
        rows.append((label, lambda f=f: f(tx, ty)))
    want = _reference(x, y)  # every variant computes the same value and gradients
    _check("hand-fused loop", (hand(x, y, gx, gy), gx, gy), want)
    for label, kernel in (("serial kernel", serial), ("parallel kernel", parallel)):
        gx[:], gy[:] = np.nan, np.nan
        (value,) = kernel(n, x, y, one, gx, gy)
        _check(label, (value, gy, gx), want)  # (the kernel writes y's gradient first)
    for label, program in rows[4:6]:
        value, o0, o1 = program()
        _check(label, (value[0], o1, o0), want)
    for label, f in rows[6:]:
        value, (grad_x, grad_y) = f()
        _check(label, (value.item(), grad_x.numpy(), grad_y.numpy()), want)
    print(f"W1 N={n:.0e}, float32; copy bandwidth {bandwidth / 1e9:.1f} GB/s; "
          f"median of {repeat}")
    for label, fn in rows:
        t, faults = _median(fn, repeat)
        print(f"{label:46s} {t * 1e3:9.3f} ms {100 * 16 * n / t / bandwidth:5.1f}% roofline "
              f"{faults:8.0f} faults")


if __name__ == "__main__":
    main()
