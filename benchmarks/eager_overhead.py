"""W4, eager overhead: jitgrad eager against torch eager, per op, measured in one run.

The workload is the harness's (``workloads.w4_case``): two 16-element float32 tensors that
require grad, a chain of 100 ops alternating ``h * w``, ``h + w`` and ``tanh(h)``, then a sum and
``backward()``. One call is forward + backward; the figure is microseconds per op of the chain.
Both peers run in interleaved rounds (a round of jitgrad calls, then a round of torch calls, and
so on), so a noisy machine slows both alike; each peer's figure is the median over its rounds.
Before timing, both peers' value and gradients are checked against the float64 NumPy reference.

Run ``python -m benchmarks.eager_overhead [--quick]`` from the repository root, or call
``run(quick=False)``. A benchmark, not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from typing import Any

import numpy as np

from .workloads import w4_case


def _peers() -> dict[str, Any]:
    import jitgrad

    peers: dict[str, Any] = {"jitgrad eager": jitgrad}
    try:
        import torch
    except ImportError:
        return peers
    torch.set_num_threads(1)  # tiny tensors: threads only add noise
    peers["torch eager"] = torch
    return peers


def _make_step(lib: Any, case: Any, arrays: list[np.ndarray]):
    """Returns ``step()``: one forward + backward on fresh leaves' ``.grad`` (zeroed each call)."""
    x, w = (lib.tensor(a.copy(), requires_grad=True) for a in arrays)

    def step() -> None:
        x.grad = None
        w.grad = None
        case.loss(lib, x, w).backward()

    return step, (x, w)


def _check(lib: Any, case: Any, arrays: list[np.ndarray]) -> None:
    step, leaves = _make_step(lib, case, arrays)
    step()
    value = float(case.loss(lib, *leaves).detach())
    ref_value, ref_grads = case.numpy_grad(*(a.astype(np.float64) for a in arrays))
    np.testing.assert_allclose(value, ref_value, rtol=case.rtol)
    for leaf, ref in zip(leaves, ref_grads):
        np.testing.assert_allclose(np.asarray(leaf.grad.detach().numpy(), dtype=np.float64), ref,
                                   rtol=case.rtol, atol=case.rtol)


def run(quick: bool = False) -> dict:
    """Measures W4 on jitgrad eager and (when installed) torch eager.

    Args:
        quick: Fewer rounds and calls (a smoke run: the figures are rougher).

    Returns:
        A dict with ``workload``, ``config``, ``ops_per_call``, ``rounds``, ``calls_per_round``,
        ``us_per_op`` (peer name -> median microseconds per op, forward + backward),
        ``ratio`` (jitgrad eager / torch eager, or None without torch) and ``checked``
        (the peers whose value and gradients matched the reference).
    """
    case = w4_case()
    arrays = case.build()
    peers = _peers()
    for lib in peers.values():
        _check(lib, case, arrays)
    rounds, calls = (5, 20) if quick else (25, 40)
    steps = {name: _make_step(lib, case, arrays)[0] for name, lib in peers.items()}
    for step in steps.values():  # warm-up
        for _ in range(calls // 2):
            step()
    per_op: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            gc.collect()
            t0 = time.perf_counter()
            for _ in range(calls):
                step()
            elapsed = time.perf_counter() - t0
            per_op[name].append(elapsed / calls / case.ops_per_call * 1e6)
    us = {name: statistics.median(v) for name, v in per_op.items()}
    ratio = us["jitgrad eager"] / us["torch eager"] if "torch eager" in us else None
    return {"workload": case.workload, "config": case.config,
            "ops_per_call": case.ops_per_call, "rounds": rounds, "calls_per_round": calls,
            "us_per_op": us, "ratio": ratio, "checked": sorted(peers)}


def _print(result: dict) -> None:
    print(f"W4 eager overhead ({result['config']}, forward + backward per op; median of "
          f"{result['rounds']} interleaved rounds of {result['calls_per_round']} calls)")
    for name, us in result["us_per_op"].items():
        print(f"  {name:<14} {us:8.2f} us/op")
    if result["ratio"] is not None:
        print(f"  ratio jitgrad / torch: {result['ratio']:.2f}x (target <= 1.0x)")
    else:
        print("  torch is not installed: no ratio")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.eager_overhead",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    args = parser.parse_args(argv)
    _print(run(quick=args.quick))
    return 0


if __name__ == "__main__":
    sys.exit(main())
