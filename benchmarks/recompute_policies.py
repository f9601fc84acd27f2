"""The two recompute policies of ``jit/passes/recompute.py`` side by side.

``python -m benchmarks.recompute_policies [--repeat R] [--quick]`` jits each workload's
forward+backward once per policy (``mincut``, ``greedy``) on the Numba backend and prints, per
workload and policy: the values the forward saves for the backward (count and bytes), the
equations the backward recomputes, and the median time of one forward+backward call. The
policies are compared in one process, alternating, so that machine noise hits both alike.
Numbers are measurements, never asserted.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from benchmarks import workloads
from benchmarks.peers import JitgradOps


def _chain_loss(ops, x):
    """W6's chain: alternating ``h*h*0.5`` and ``tanh(h)*1.01+0.1`` steps, then a sum."""
    h = x
    for i in range(100):
        h = h * h * 0.5 if i % 2 == 0 else ops.tanh(h) * 1.01 + 0.1
    return ops.sum(h)


def _three_sums_loss(ops, x, y):
    """Three saved sums of the same two inputs: the case where the policies differ."""
    return ops.sum((x + y).sin() + (x - y).sin() + (x * 2 + y).sin())


def _cases(quick: bool) -> list[tuple[str, object, list[np.ndarray], tuple[int, ...]]]:
    out = []
    sizes = (10**5,) if quick else (10**5, 10**7)
    for n in sizes:
        c = workloads.w1_case(n)
        out.append((f"W1 {c.config}", c.loss, c.build(), c.wrt))
    for c in (workloads.w2_case(), workloads.w3_case(512 if quick else 2048),
              workloads.w4_case()):
        out.append((f"{c.workload} {c.config}", c.loss, c.build(), c.wrt))
    x = np.random.default_rng(6).uniform(-1, 1, 16).astype(np.float32)
    out.append(("chain of 100 on 16", _chain_loss, [x], (0,)))
    n = 10**5 if quick else 10**7
    xy = [np.random.default_rng(7).standard_normal(n, dtype=np.float32) for _ in range(2)]
    out.append((f"three sums N={n:.0e}", _three_sums_loss, xy, (0, 1)))
    return out


def _saved(low) -> tuple[int, int, int]:
    fwd, bwd = low.forward_graph, low.backward_graph
    saved = fwd.outvars[len(fwd.outvars) - fwd.n_saved:]
    nbytes = sum(int(np.prod(v.shape, dtype=np.int64)) * v.dtype.itemsize for v in saved)
    fwd_outputs = {v for e in fwd.eqns for v in e.outputs}
    replayed = sum(1 for e in bwd.eqns if any(v in fwd_outputs for v in e.outputs))
    return len(saved), nbytes, replayed


def main(argv: list[str] | None = None) -> None:
    import jitgrad
    from jitgrad.autograd import grad
    import importlib

    rc = importlib.import_module("jitgrad.jit.passes.recompute")

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    ops = JitgradOps()
    print(f"{'workload':<30}{'policy':<8}{'saved':>6}{'saved bytes':>14}{'replayed':>10}"
          f"{'ms/call':>10}")
    for name, loss, arrays, wrt in _cases(args.quick):
        ts = [jitgrad.from_numpy(a.copy()) for a in arrays]
        for i in wrt:
            ts[i].requires_grad_()
        steps, rows = {}, {}
        for policy in rc.POLICIES:
            rc.POLICY = policy
            fn = jitgrad.jit(lambda *a, _loss=loss: _loss(ops, *a), backend="numba")
            rows[policy] = _saved(fn.lower(*ts))

            wrt_ts = tuple(ts[i] for i in wrt)

            def step(fn=fn, ts=ts, wrt_ts=wrt_ts):
                return grad(fn(*ts), wrt_ts)
            step()  # compile
            steps[policy] = step
        rc.POLICY = "mincut"
        times: dict[str, list[float]] = {p: [] for p in rc.POLICIES}
        for _ in range(args.repeat):
            for policy, step in steps.items():
                t0 = time.perf_counter()
                step()
                times[policy].append(time.perf_counter() - t0)
        for policy in rc.POLICIES:
            n, nbytes, replayed = rows[policy]
            ms = statistics.median(times[policy]) * 1e3
            print(f"{name:<30}{policy:<8}{n:>6}{nbytes:>14,}{replayed:>10}{ms:>10.3f}")


if __name__ == "__main__":
    main()
