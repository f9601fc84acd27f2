"""Data-parallel training of an MLP on 8x8 digits with DistributedDataParallel over MPI.

    mpiexec -n 2 python examples/ddp_digits.py --steps 50

Each rank trains on its shard of every global batch (DistributedSampler); DDP averages the
gradients over the ranks during the backward. Rank 0 then repeats the training in one process
on the whole global batches and checks that the parameters are the same: splitting the batch
over ranks changes nothing but the rounding (float64 here, so the difference is ~1e-15).
Runs on one rank too (``python examples/ddp_digits.py``). Uses scikit-learn's digits when it is
installed, synthetic Gaussian clusters of the same shape otherwise.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # the ranks share the cores

import numpy as np  # noqa: E402

import jitgrad  # noqa: E402
import jitgrad.distributed as dist  # noqa: E402
from jitgrad import nn, optim  # noqa: E402
from jitgrad.nn import functional as F  # noqa: E402
from jitgrad.nn.parallel import DistributedDataParallel  # noqa: E402
from jitgrad.utils.data import DistributedSampler  # noqa: E402


def load_data() -> tuple[np.ndarray, np.ndarray]:
    """Standardized float64 features and integer labels (1797 samples, 64 features)."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        rng = np.random.default_rng(0)
        centers = rng.normal(0.0, 1.0, (10, 64))
        y = rng.integers(0, 10, 1797)
        x = centers[y] + rng.normal(0.0, 2.0, (1797, 64))
    else:
        digits = load_digits()
        x, y = digits.data.astype(np.float64), digits.target
    return (x - x.mean(0)) / (x.std(0) + 1e-6), y.astype(np.int64)


def make_model(seed: int) -> nn.Module:
    jitgrad.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                         nn.Linear(64, 10)).double()


def train(model: nn.Module, x: np.ndarray, y: np.ndarray, sampler: DistributedSampler,
          batch: int, steps: int, lr: float) -> float:
    """``steps`` SGD steps on ``batch`` samples of this rank's shard each; the last loss."""
    opt = optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    step, epoch, loss = 0, 0, float("nan")
    while step < steps:
        sampler.set_epoch(epoch)
        order = list(sampler)
        for start in range(0, len(order) - batch + 1, batch):
            idx = order[start:start + batch]
            opt.zero_grad()
            out = F.cross_entropy(model(jitgrad.tensor(x[idx])), jitgrad.tensor(y[idx]))
            out.backward()
            opt.step()
            loss, step = out.item(), step + 1
            if step == steps:
                break
        epoch += 1
    return loss


def main(argv: list[str] | None = None) -> float:
    """Trains on every rank; returns the largest parameter difference to one process."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=96, help="the global batch")
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args(argv)

    dist.init_process_group(backend="mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch_size % world:
        raise ValueError(f"--batch-size {args.batch_size} must divide by the {world} ranks")
    x, y = load_data()
    # Every rank builds its own random initialization: DDP broadcasts rank 0's.
    model = DistributedDataParallel(make_model(seed=rank))
    sampler = DistributedSampler(range(len(x)), seed=1, drop_last=True)
    loss = train(model, x, y, sampler, args.batch_size // world, args.steps, args.lr)
    mine = [p.detach().numpy() for p in model.module.parameters()]

    diff = 0.0
    if rank == 0:  # the same training in one process, on the whole global batches
        single = make_model(seed=0)
        # The same permutation; its k-th global batch is the union of the ranks' k-th batches.
        whole = DistributedSampler(range(len(x)), num_replicas=1, rank=0, seed=1)
        single_loss = train(single, x, y, whole, args.batch_size, args.steps, args.lr)
        diff = max(float(np.abs(a - b.detach().numpy()).max())
                   for a, b in zip(mine, single.parameters()))
        with jitgrad.no_grad():
            acc = float((model(jitgrad.tensor(x)).argmax(1) == jitgrad.tensor(y)).double()
                        .mean())
        print(f"{world} rank(s), {args.steps} steps of global batch {args.batch_size}: "
              f"loss {loss:.4f} on rank 0's shard, {single_loss:.4f} in one process; "
              f"train accuracy {acc:.3f}")
        verdict = "match" if diff < 1e-10 else "DIFFER"
        print(f"parameters {verdict} the single-process run: max abs difference {diff:.2e}")
    dist.destroy_process_group()
    return diff


if __name__ == "__main__":
    main()
