"""W1 on the cuda device: the fused forward + backward against the device's copy bandwidth.

``python -m benchmarks.cuda_w1 [--n 1e8] [--repeat 10]`` on a GPU machine (with the ``cuda``
extra) builds W1's float32 inputs on the device, runs ``jitgrad.jit`` of W1's loss with
``backward()`` (the CUDA backend: one fused kernel forward, one backward), and reports the
median time per call, the bytes a perfectly fused forward + backward moves (``16 * n``: read
x and y, write their gradients) over that time, and the device's copy bandwidth (a
device-to-device copy kernel of the same size, bytes read + written over the best time). The
issue's target is >= 80% of the copy bandwidth. Under ``NUMBA_ENABLE_CUDASIM=1`` it runs, tiny
and meaningless as a timing, as a smoke test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time


def _timed(fn, sync) -> float:
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - t0


def run(n: int = 10**8, repeat: int = 10, out=sys.stdout) -> dict:
    """Measures W1 at ``n`` elements on the cuda device; returns the figures."""
    import jitgrad

    from .workloads import w1_case, w1_loss

    case = w1_case(n)
    xs, ys = case.build()
    x = jitgrad.tensor(xs, device="cuda", requires_grad=True)
    y = jitgrad.tensor(ys, device="cuda", requires_grad=True)
    f = jitgrad.jit(lambda a, b: w1_loss(jitgrad, a, b))
    sync = jitgrad.cuda.synchronize

    def step():
        x.grad = y.grad = None
        f(x, y).backward()

    step()  # compiles
    times = [_timed(step, sync) for _ in range(repeat)]
    t = statistics.median(times)
    src = x.detach()
    src.clone()  # compiles the copy kernel
    copy = min(_timed(src.clone, sync) for _ in range(max(3, repeat)))
    bandwidth = 2 * src.numel() * src.element_size() / copy
    achieved = case.roofline_bytes / t
    row = {"n": n, "seconds": t, "bytes": case.roofline_bytes, "achieved_Bps": achieved,
           "copy_Bps": bandwidth, "fraction": achieved / bandwidth}
    print(f"W1 N={n:.0e} float32 on cuda: {t * 1e3:.3f} ms per forward+backward, "
          f"{achieved / 1e9:.1f} GB/s of {bandwidth / 1e9:.1f} GB/s copy bandwidth "
          f"= {100 * row['fraction']:.0f}% (target >= 80%)", file=out)
    return row


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=float, default=1e8)
    p.add_argument("--repeat", type=int, default=10)
    args = p.parse_args(argv)
    run(int(args.n), args.repeat)


if __name__ == "__main__":
    main()
