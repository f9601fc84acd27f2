"""Per-sample gradients (our own benchmark of the technique torch.func's tutorial describes):
vmap(grad(loss)) against the loop over the samples, in jitgrad (eager vmap, jit of vmap, the
loop) and torch (torch.func, the loop), in one run.

The workload: a 16-32-32-10 ReLU MLP, cross-entropy, a batch of 64 float32 examples; one call
computes every example's gradient of every parameter. Before timing, every peer's gradients
are checked against jitgrad's loop. Peers run in interleaved rounds (so a noisy machine slows
all alike); each figure is the median over rounds, and the ratios are medians divided by
torch.func's.

Run ``python -m benchmarks.per_sample_grads [--quick]`` from the repository root. A benchmark,
not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

BATCH, SIZES = 64, (16, 32, 32, 10)


def _data() -> dict:
    rng = np.random.default_rng(0)
    ws = [rng.standard_normal((o, i)).astype(np.float32) / np.sqrt(i)
          for i, o in zip(SIZES[:-1], SIZES[1:])]
    bs = [rng.standard_normal(o).astype(np.float32) * 0.1 for o in SIZES[1:]]
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH)
    return {"ws": ws, "bs": bs, "x": x, "y": y}


def _model(lib: Any, d: dict) -> tuple[Any, dict]:
    nn = lib.nn
    layers: list = []
    for i, o in zip(SIZES[:-1], SIZES[1:]):
        layers += [nn.Linear(i, o), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    with lib.no_grad():
        for k, (w, b) in enumerate(zip(d["ws"], d["bs"])):
            model[2 * k].weight.copy_(lib.tensor(w))
            model[2 * k].bias.copy_(lib.tensor(b))
    params = {k: v.detach() for k, v in model.named_parameters()}
    return model, params


def _peers(d: dict) -> dict[str, Callable[[], dict]]:
    import jitgrad
    import jitgrad.nn.functional as F
    from jitgrad.func import functional_call, grad, vmap

    model, params = _model(jitgrad, d)
    x, y = jitgrad.tensor(d["x"]), jitgrad.tensor(d["y"])

    def loss(p, xi, yi):
        return F.cross_entropy(functional_call(model, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))
    compiled = jitgrad.jit(per_sample)
    g = grad(loss)

    def loop():
        rows = [g(params, x[i], y[i]) for i in range(BATCH)]
        return {k: jitgrad.stack([r[k] for r in rows]) for k in params}

    peers = {"jitgrad vmap": lambda: per_sample(params, x, y),
             "jitgrad jit(vmap)": lambda: compiled(params, x, y),
             "jitgrad loop": loop}
    try:
        import torch
        import torch.func as tf
    except ImportError:
        return peers
    torch.set_num_threads(1)
    tmodel, tparams = _model(torch, d)
    tx, ty = torch.tensor(d["x"]), torch.tensor(d["y"])

    def tloss(p, xi, yi):
        return torch.nn.functional.cross_entropy(
            tf.functional_call(tmodel, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))

    tper = tf.vmap(tf.grad(tloss), in_dims=(None, 0, 0))
    tg = tf.grad(tloss)

    def tloop():
        rows = [tg(tparams, tx[i], ty[i]) for i in range(BATCH)]
        return {k: torch.stack([r[k] for r in rows]) for k in tparams}

    peers["torch.func vmap"] = lambda: tper(tparams, tx, ty)
    peers["torch loop"] = tloop
    return peers


def _numpy(g: Any) -> np.ndarray:
    return g.detach().numpy() if hasattr(g, "detach") else np.asarray(g)


def run(quick: bool = False) -> dict[str, float]:
    """Checks every peer against jitgrad's loop, then times them; returns median seconds."""
    d = _data()
    peers = _peers(d)
    want = {k: _numpy(v) for k, v in peers["jitgrad loop"]().items()}
    for name, fn in peers.items():
        got = fn()
        for k, v in want.items():
            np.testing.assert_allclose(_numpy(got[k]), v, rtol=2e-4, atol=2e-6,
                                       err_msg=f"{name}: {k}")
    rounds, calls = (3, 2) if quick else (9, 5)
    times: dict[str, list] = {n: [] for n in peers}
    gc.disable()
    try:
        for _ in range(rounds):
            for name, fn in peers.items():
                start = time.perf_counter()
                for _ in range(calls):
                    fn()
                times[name].append((time.perf_counter() - start) / calls)
    finally:
        gc.enable()
    return {n: statistics.median(t) for n, t in times.items()}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds")
    args = ap.parse_args(argv)
    med = run(quick=args.quick)
    base = med.get("torch.func vmap")
    print(f"per-sample gradients, MLP {SIZES}, batch {BATCH}, float32 (median per call)")
    for name, s in med.items():
        ratio = f"  x{s / base:6.2f} vs torch.func vmap" if base else ""
        print(f"  {name:18s} {s * 1e3:9.3f} ms{ratio}")
    loop = med["jitgrad loop"]
    print(f"  jitgrad vmap is {loop / med['jitgrad vmap']:.1f}x faster than jitgrad's loop; "
          f"jit(vmap) {loop / med['jitgrad jit(vmap)']:.1f}x")


if __name__ == "__main__":
    main()
