"""The digits CNN's train step: jitgrad eager and jitted against torch eager, in one run.

    python -m benchmarks.cnn_step [--steps 50] [--rounds 5] [--batch 64]

The model of ``examples/train_cnn.py`` (conv 1->8 3x3 pad 1, BatchNorm2d, ReLU, MaxPool2d 2,
conv 8->16, BatchNorm2d, ReLU, MaxPool2d 2, Linear 64->10), float32, on a batch of 8x8x1
digits-like images: forward, cross-entropy, backward, SGD step (momentum 0.9). Both libraries
start from the same weights; the configurations alternate round by round (same machine load),
and the medians of the per-step times are printed with the ratio to torch eager (the issue's
target: jitgrad within 1.5x of torch eager). The first rounds' losses are checked to agree.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

# OpenBLAS's worker threads only add overhead on these small matrices (and spin on a busy
# machine); the variable counts only if set before NumPy loads OpenBLAS (see main()).
_BLAS_PINNED = "numpy" not in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _jitgrad_step(params: dict, x: np.ndarray, y: np.ndarray, use_jit: bool) -> Callable:
    import jitgrad
    from jitgrad import optim
    from jitgrad.nn import functional as F

    sys.path.insert(0, str(ROOT / "examples"))
    from train_cnn import DigitsCNN

    model = DigitsCNN()
    model.load_state_dict({k: jitgrad.tensor(v) for k, v in params.items()})
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    xb, yb = jitgrad.tensor(x), jitgrad.tensor(y)

    def loss_of(xb, yb):
        return F.cross_entropy(model(xb), yb)

    loss_fn = jitgrad.jit(loss_of) if use_jit else loss_of

    def step() -> float:
        loss = loss_fn(xb, yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return step


def _torch_step(params: dict, x: np.ndarray, y: np.ndarray) -> Callable | None:
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64, 10))
    renamed = {k.replace("features.", "").replace("classifier.", "9."): torch.tensor(v)
               for k, v in params.items()}
    model.load_state_dict(renamed)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    xb, yb = torch.tensor(x), torch.tensor(y)

    def step():
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return step


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Times the three steps; prints and returns the medians (seconds per step)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args(argv)
    if not _BLAS_PINNED:  # NumPy was loaded first (python -m benchmarks...): start afresh
        cmd = [sys.executable, "-m", "benchmarks.cnn_step"] + list(
            sys.argv[1:] if argv is None else argv)
        os.execve(sys.executable, cmd, dict(os.environ, PYTHONPATH=str(ROOT)))
    sys.path.insert(0, str(ROOT))
    import jitgrad

    sys.path.insert(0, str(ROOT / "examples"))
    from train_cnn import DigitsCNN

    jitgrad.manual_seed(0)
    params = {k: v.detach().numpy().copy() for k, v in DigitsCNN().state_dict().items()}
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (args.batch, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 10, args.batch)
    steps = {"jitgrad eager": _jitgrad_step(params, x, y, False),
             "jitgrad jit": _jitgrad_step(params, x, y, True)}
    torch_step = _torch_step(params, x, y)
    if torch_step is not None:
        steps["torch eager"] = torch_step
    # warm-up, and the same losses from the same weights
    losses = {name: [float(step().detach()) for _ in range(3)] for name, step in steps.items()}
    first = losses["jitgrad eager"]
    for name, got in losses.items():
        if not np.allclose(got, first, rtol=1e-4, atol=1e-5):
            raise SystemExit(f"{name}'s losses {got} disagree with jitgrad eager's {first}")
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(args.rounds):
        for name, step in steps.items():
            for _ in range(args.steps):
                t0 = time.perf_counter()
                step()
                times[name].append(time.perf_counter() - t0)
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    base = medians.get("torch eager")
    print(f"CNN train step, batch {args.batch}, 1x8x8 float32 "
          f"({args.rounds} rounds x {args.steps} steps, median per step)")
    for name, m in medians.items():
        ratio = f"  {m / base:5.2f}x torch eager" if base else ""
        print(f"  {name:14s} {m * 1e6:9.1f} us{ratio}")
    return medians


if __name__ == "__main__":
    main()
