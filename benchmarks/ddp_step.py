"""W2's train step with DistributedDataParallel on 2 MPI ranks against 1 process.

    python -m benchmarks.ddp_step [--steps 200] [--rounds 3] [--ranks 2]

Launches ``mpiexec`` itself, alternating the configurations round by round so that they see
the same machine load, and prints medians:

- ``1 process``: the W2 MLP (784-512-512-10, ReLU, cross-entropy, float32), batch 128,
  forward + backward, no DDP.
- ``N ranks, global batch 128``: DDP, each rank a shard of 128/N (strong scaling).
- ``N ranks, batch 128 each``: DDP, N times the samples per step (weak scaling).
- ``N ranks, global batch 128, no progress thread``: as the second, with only the gradient
  hooks driving MPI (``JITGRAD_MPI_PROGRESS_THREAD=0``).
- with ``--jit``: the first two again with ``jitgrad.jit`` around the forward and the loss
  (the compiled backward hands out all gradients at once, so buckets start together).

Each step starts after a barrier and counts at the pace of the slowest rank. For the DDP runs:
``local`` is the same step inside ``no_sync()`` (no communication; interleaved step by step
with the synchronized one), ``comm`` the time of the same bucketed all-reduce run alone
(nothing to overlap), ``wait`` the time the last gradient hook blocked waiting for the buckets
(the slowest rank's; it includes waiting for a rank that is behind), and ``overlapped`` the
share of the all-reduce's bytes whose reduction had already finished on every rank when the
last gradient of the backward arrived (mean over steps): the part hidden behind the backward.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _worker(args: argparse.Namespace) -> None:
    import jitgrad
    import jitgrad.distributed as dist
    from jitgrad import nn
    from jitgrad.nn import functional as F
    from jitgrad.nn.parallel import DistributedDataParallel

    dist.init_process_group(backend="mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    jitgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))
    ddp = None if args.plain else DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb)
    run = model if ddp is None else ddp
    rng = np.random.default_rng(rank)
    x = jitgrad.tensor(rng.standard_normal((args.batch, 784), dtype=np.float32))
    y = jitgrad.tensor(rng.integers(0, 10, args.batch))
    comm = dist.group.WORLD.comm

    loss_of = (jitgrad.jit(lambda x, y: F.cross_entropy(run(x), y)) if args.jit
               else (lambda x, y: F.cross_entropy(run(x), y)))

    def step() -> float:
        model.zero_grad()
        comm.Barrier()
        t0 = time.perf_counter()
        loss_of(x, y).backward()
        elapsed = time.perf_counter() - t0
        return max(comm.allgather(elapsed))  # a synchronous step goes at the slowest rank's pace

    synced, local, exposed, overlapped, comm_alone = [], [], [], [], []
    total_bytes = 0 if ddp is None else sum(b.buffer.nbytes for b in ddp.reducer.buckets)
    for i in range(args.warmup + args.steps):
        t_sync = step()
        if ddp is not None:
            wait = max(comm.allgather(ddp.reducer.last_wait_seconds))
            share = min(comm.allgather(ddp.reducer.last_overlapped_bytes / total_bytes))
        if ddp is not None:  # the same step without communication, interleaved
            with ddp.no_sync():
                t_local = step()
        if i >= args.warmup:
            synced.append(t_sync)
            if ddp is not None:
                local.append(t_local)
                exposed.append(wait)
                overlapped.append(share)
    if ddp is not None:
        from mpi4py import MPI

        buffers = [b.buffer for b in ddp.reducer.buckets]
        for i in range(args.warmup + args.steps):
            comm.Barrier()
            t0 = time.perf_counter()
            MPI.Request.Waitall([comm.Iallreduce(MPI.IN_PLACE, b, MPI.SUM) for b in buffers])
            elapsed = max(comm.allgather(time.perf_counter() - t0))
            if i >= args.warmup:
                comm_alone.append(elapsed)
    result = {"world": world, "batch": args.batch, "plain": args.plain,
              "step_s": float(np.median(synced))}
    if ddp is not None:
        result.update(local_s=float(np.median(local)), comm_s=float(np.median(comm_alone)),
                      wait_s=float(np.median(exposed)), overlap=float(np.mean(overlapped)),
                      buckets=[len(b.params) for b in ddp.reducer.buckets],
                      bucket_bytes=[int(b.buffer.nbytes) for b in ddp.reducer.buckets])
    if rank == 0:
        print("RESULT " + json.dumps(result), flush=True)
    dist.destroy_process_group()


def _launch(n: int, *extra: str, env: dict | None = None) -> dict:
    mpiexec = Path(sys.executable).parent / "mpiexec"
    exe = str(mpiexec) if mpiexec.exists() else shutil.which("mpiexec")
    cmd = [exe, "-n", str(n), sys.executable, "-m", "benchmarks.ddp_step", "--worker", *extra]
    full_env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=full_env,
                          timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(proc.stdout + proc.stderr)
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--bucket-cap-mb", type=float, default=None)
    parser.add_argument("--async-progress", action="store_true",
                        help="also run with MPICH's progress thread (MPIR_CVAR_ASYNC_PROGRESS)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--plain", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--jit", action="store_true",
                        help="also time the step with jitgrad.jit around forward and loss")
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args)
        return
    n = args.ranks
    common = ["--steps", str(args.steps), "--warmup", str(args.warmup)]
    if args.bucket_cap_mb is not None:
        common += ["--bucket-cap-mb", str(args.bucket_cap_mb)]
    configs = {
        "1 process, batch 128, no DDP": (1, ["--plain", "--batch", "128"], None),
        f"{n} ranks, global batch 128 ({128 // n} each)": (n, ["--batch", str(128 // n)], None),
        f"{n} ranks, batch 128 each": (n, ["--batch", "128"], None),
        f"{n} ranks, global batch 128, no progress thread": (
            n, ["--batch", str(128 // n)], {"JITGRAD_MPI_PROGRESS_THREAD": "0"}),
    }
    if args.jit:
        configs["1 process, batch 128, no DDP, jit"] = (1, ["--plain", "--batch", "128",
                                                          "--jit"], None)
        configs[f"{n} ranks, global batch 128, jit"] = (n, ["--batch", str(128 // n), "--jit"],
                                                       None)
    if args.async_progress:
        configs[f"{n} ranks, global batch 128, async progress"] = (
            n, ["--batch", str(128 // n)], {"MPIR_CVAR_ASYNC_PROGRESS": "1"})
    runs: dict[str, list[dict]] = {k: [] for k in configs}
    for r in range(args.rounds):
        for name, (ranks, extra, env) in configs.items():
            runs[name].append(_launch(ranks, *common, *extra, env=env))
            print(f"round {r + 1}/{args.rounds}: {name}: "
                  f"{runs[name][-1]['step_s'] * 1e3:.2f} ms", file=sys.stderr, flush=True)
    base = float(np.median([x["step_s"] for x in runs["1 process, batch 128, no DDP"]]))
    print(f"W2 step (forward + backward), medians of {args.rounds} runs x {args.steps} steps")
    print(f"{'configuration':50s} {'step':>8s} {'vs 1':>6s} {'samples/s':>9s} "
          f"{'local':>8s} {'comm':>8s} {'wait':>8s} {'overlapped':>10s}")
    for name, rs in runs.items():
        step = float(np.median([x["step_s"] for x in rs]))
        samples = rs[0]["batch"] * rs[0]["world"] / step
        row = f"{name:50s} {step * 1e3:6.2f}ms {step / base:5.2f}x {samples:9.0f}"
        if "comm_s" in rs[0]:
            local, comm, wait, share = (float(np.median([x[k] for x in rs]))
                                        for k in ("local_s", "comm_s", "wait_s", "overlap"))
            row += (f" {local * 1e3:6.2f}ms {comm * 1e3:6.2f}ms {wait * 1e3:6.2f}ms "
                    f"{share * 100:9.0f}%")
        print(row)
    ddp_rows = [rs[0] for rs in runs.values() if "buckets" in rs[0]]
    if ddp_rows:
        print(f"buckets (parameters, bytes): "
              f"{list(zip(ddp_rows[0]['buckets'], ddp_rows[0]['bucket_bytes']))}")


if __name__ == "__main__":
    main()
