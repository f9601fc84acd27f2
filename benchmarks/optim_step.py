"""Optimizer steps, eager and compiled, jitgrad against torch, in one run.

    python -m benchmarks.optim_step [--params 10] [--size 256] [--steps 50] [--rounds 7]
                                    [--torch-compile]

Each optimizer (Adam, AdamW with weight decay, SGD with momentum) updates ``--params`` float32
parameters of ``size x size`` from fixed gradients: jitgrad eager (``opt.step()``), jitgrad
compiled (``jitgrad.compile(opt.step)``: one program, its kernels writing the parameters and
state in place), torch eager (its default step: on the CPU, the loop over parameters) and, with
``--torch-compile``, ``torch.compile(opt.step)`` (about 10 s of compile per optimizer). All
start from the same parameters; after the warm-up steps every peer's parameters are checked
against jitgrad eager's. The configurations alternate round by round, and the median time per
step is printed with its ratio to torch eager. Memory traffic of one Adam step: it reads
parameters, gradients and both moments and writes all but the gradients (28 bytes per element).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

OPTIMIZERS = {"Adam": {"lr": 1e-3}, "AdamW": {"lr": 1e-3, "weight_decay": 0.01},
              "SGD": {"lr": 1e-2, "momentum": 0.9}}


def _steps(lib, name: str, params: list, grads: list, compiled: bool) -> tuple[Callable, list]:
    ps = [lib.nn.Parameter(lib.tensor(p.copy())) for p in params]
    for p, g in zip(ps, grads):
        p.grad = lib.tensor(g)
    opt = getattr(lib.optim, name)(ps, **OPTIMIZERS[name])
    return (lib.compile(opt.step) if compiled else opt.step), ps


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    """Times every optimizer's steps; prints and returns the medians (seconds per step)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", type=int, default=10)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--steps", type=int, default=50, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--torch-compile", action="store_true",
                        help="also time torch.compile(opt.step)")
    parser.add_argument("--only", default=",".join(OPTIMIZERS),
                        help="comma-separated optimizers")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    import jitgrad

    try:
        import torch
    except ImportError:
        torch = None
    rng = np.random.default_rng(0)
    shape = (args.size, args.size)
    params = [rng.standard_normal(shape).astype(np.float32) for _ in range(args.params)]
    grads = [rng.standard_normal(shape).astype(np.float32) for _ in range(args.params)]
    results = {}
    for name in args.only.split(","):
        peers = {"jitgrad eager": _steps(jitgrad, name, params, grads, False),
                 "jitgrad compiled": _steps(jitgrad, name, params, grads, True)}
        if torch is not None:
            peers["torch eager"] = _steps(torch, name, params, grads, False)
            if args.torch_compile:
                peers["torch.compile"] = _steps(torch, name, params, grads, True)
        for step, _ in peers.values():  # warm-up (and the compiles)
            for _ in range(3):
                step()
        want = [p.detach().numpy() for p in peers["jitgrad eager"][1]]
        for peer, (_, ps) in peers.items():
            for a, b in zip(ps, want):
                if not np.allclose(a.detach().numpy(), b, rtol=1e-5, atol=1e-6):
                    raise SystemExit(f"{name}: {peer}'s parameters disagree with jitgrad "
                                     "eager's after the warm-up steps")
        times: dict[str, list[float]] = {peer: [] for peer in peers}
        for _ in range(args.rounds):
            for peer, (step, _) in peers.items():
                t0 = time.perf_counter()
                for _ in range(args.steps):
                    step()
                times[peer].append((time.perf_counter() - t0) / args.steps)
        medians = {peer: statistics.median(ts) for peer, ts in times.items()}
        base = medians.get("torch eager")
        print(f"{name} step, {args.params} float32 parameters of {args.size}x{args.size} "
              f"({args.rounds} rounds x {args.steps} steps, median per step)")
        for peer, m in medians.items():
            ratio = f"  {m / base:5.2f}x torch eager" if base else ""
            print(f"  {peer:17s} {m * 1e3:8.3f} ms{ratio}")
        results[name] = medians
    return results


if __name__ == "__main__":
    main()
