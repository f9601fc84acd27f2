"""Sparse @ dense (a GCN layer's ``spmm(adj, X)``), forward + backward, and the dense fast lane.

1. ``sparse.mm(A, X)`` with A a random sparse ``n x n`` matrix (``nnz`` entries, A's values
   requiring grad) and X dense ``n x f`` requiring grad, then ``sum().backward()``: jitgrad
   against torch, and against jitgrad's dense ``A.to_dense() @ X``. Values and gradients are
   checked against torch (or NumPy) first.
2. The dense dispatcher's hot lane (1e5 ``a + b`` on tiny tensors), before and after a sparse
   tensor exists (the dispatcher then checks general-path calls for sparse arguments; the lane
   never does).

Rounds of each peer are interleaved so a noisy machine slows all alike; the figure is the
median. Run ``python -m benchmarks.sparse_mm [--quick]`` from the repository root. A
benchmark, not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np


def _graph(n: int, nnz: int, f: int) -> tuple:
    rng = np.random.default_rng(0)
    idx = np.stack([rng.integers(0, n, nnz), rng.integers(0, n, nnz)])
    return idx, rng.standard_normal(nnz).astype(np.float32), \
        rng.standard_normal((n, f)).astype(np.float32)


def _step_fn(lib: Any, idx: np.ndarray, vals: np.ndarray, x: np.ndarray, dense: bool) -> Any:
    a = lib.sparse_coo_tensor(lib.tensor(idx), lib.tensor(vals), (x.shape[0],) * 2).coalesce()
    a = a.detach().requires_grad_()
    xt = lib.tensor(x).requires_grad_()

    def step() -> tuple:
        a.grad = None
        xt.grad = None
        out = (a.to_dense() @ xt) if dense else lib.sparse.mm(a, xt)
        out.sum().backward()
        return out, a.grad, xt.grad

    return step


def _time(fn: Any, rounds: int, calls: int) -> list[float]:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t) / calls)
    return times


def spmm(quick: bool = False) -> dict[str, float]:
    """Median milliseconds per forward + backward for each peer."""
    import jitgrad

    n, nnz, f = (2000, 20000, 32) if quick else (10000, 200000, 64)
    idx, vals, x = _graph(n, nnz, f)
    peers = {"jitgrad sparse.mm": _step_fn(jitgrad, idx, vals, x, False)}
    ref = peers["jitgrad sparse.mm"]()
    try:
        import torch

        peers["torch sparse.mm"] = _step_fn(torch, idx, vals, x, False)
        theirs = peers["torch sparse.mm"]()
        np.testing.assert_allclose(ref[0].detach().numpy(), theirs[0].detach().numpy(),
                                   rtol=1e-3, atol=1e-3)
        np.testing.assert_allclose(ref[1].to_dense().numpy(), theirs[1].to_dense().numpy(),
                                   rtol=1e-3, atol=1e-3)
        np.testing.assert_allclose(ref[2].numpy(), theirs[2].numpy(), rtol=1e-3, atol=1e-3)
    except ImportError:
        pass
    if n <= 4000:  # (a dense n x n copy: 400 MB at n = 10000)
        peers["jitgrad dense (to_dense() @ X)"] = _step_fn(jitgrad, idx, vals, x, True)
    rounds = 3 if quick else 5
    results: dict[str, list] = {k: [] for k in peers}
    for _ in range(rounds):
        for name, fn in peers.items():
            results[name] += _time(fn, 1, 3 if quick else 5)
    print(f"spmm forward + backward, n={n}, nnz={nnz}, f={f} (median ms per call):")
    out = {}
    for name, times in results.items():
        out[name] = statistics.median(times) * 1e3
        print(f"  {name:32s} {out[name]:9.2f}")
    return out


def lane(quick: bool = False) -> dict[str, float]:
    """Median milliseconds for 1e5 ``a + b`` (3-element float32), no sparse tensor yet, then
    with one alive."""
    import jitgrad

    a, b = jitgrad.ones(3), jitgrad.ones(3)
    calls = 20000 if quick else 100000

    def run() -> None:
        for _ in range(calls):
            a + b

    before = _time(run, 5, 1)
    keep = jitgrad.sparse_coo_tensor([[0]], [1.0], (2,))  # (sparse_live from here on)
    after = _time(run, 5, 1)
    del keep
    out = {"before": statistics.median(before) * 1e3, "after": statistics.median(after) * 1e3}
    print(f"{calls} tiny a + b: {out['before']:.1f} ms before a sparse tensor exists, "
          f"{out['after']:.1f} ms after")
    return out


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.sparse_mm")
    p.add_argument("--quick", action="store_true", help="small sizes, fewer rounds")
    args = p.parse_args()
    spmm(args.quick)
    lane(args.quick)


if __name__ == "__main__":
    main()
