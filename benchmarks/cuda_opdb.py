"""The op database swept on the cuda device: each record's first sample, eager, forward and
backward, on cuda tensors against the same call on the CPU.

Run ``python -m benchmarks.cuda_opdb`` (on a GPU, or with ``NUMBA_ENABLE_CUDASIM=1`` on numba's
simulator). It prints, per op, ``ok`` (values and gradients equal the CPU's within the
record's float32 tolerance), ``no kernel`` (the CUDA runtime raised NotImplementedError: the
op runs on the CPU only) or the mismatch, then the counts. ``tests/test_cuda_opdb.py`` runs
it under the simulator. A check, not a timing.
"""

from __future__ import annotations

import sys
import zlib
from typing import Any

import numpy as np


def _tests_path() -> None:
    import os

    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests")
    if here not in sys.path:
        sys.path.insert(0, here)


def _to(obj: Any, device: str) -> Any:
    import jitgrad

    if isinstance(obj, jitgrad.Tensor):
        return obj.detach().to(device).requires_grad_(obj.requires_grad)
    if isinstance(obj, tuple):
        return tuple(_to(o, device) for o in obj)
    if isinstance(obj, list):
        return [_to(o, device) for o in obj]
    return obj


def check(rec: Any) -> str:
    """``"ok"``, ``"no kernel"`` or a description of the difference, for one record."""
    import jitgrad
    from opdb import as_list, convert

    sample = rec.samples(np.random.default_rng(zlib.crc32(rec.name.encode())))[0]
    dt = jitgrad.float32 if "float32" in rec.dtypes else getattr(jitgrad, rec.dtypes[0])
    diff = rec.differentiable and dt.is_floating_point
    results = []
    for device in ("cpu", "cuda"):
        args = _to(convert(sample.args, jitgrad, dt, requires_grad=diff), device)
        kwargs = _to(convert(sample.kwargs, jitgrad, dt), device)
        leaves = [a for a in args if isinstance(a, jitgrad.Tensor) and a.requires_grad]
        try:
            outs = [o for o in as_list(rec.run(jitgrad, args, kwargs))
                    if isinstance(o, jitgrad.Tensor)]
            grads = []
            if leaves and any(o.requires_grad for o in outs):
                total = sum((o.float() * (k + 1)).sum() for k, o in enumerate(outs)
                            if o.requires_grad and o.dtype.is_floating_point)
                grads = jitgrad.autograd.grad(total, leaves, allow_unused=True)
        except NotImplementedError:
            if device == "cpu":
                raise
            return "no kernel"
        if device == "cuda" and any(not o.is_cuda for o in outs):
            return "an output left the device"
        results.append(([o.detach().cpu().numpy() for o in outs],
                        [None if g is None else g.cpu().numpy() for g in grads]))
    (cpu_out, cpu_g), (gpu_out, gpu_g) = results
    rtol, atol = rec.rtol.get("float32", 1e-5) * 10, rec.atol.get("float32", 1e-6) * 10
    for what, a, b in [("output", x, y) for x, y in zip(cpu_out, gpu_out)] + \
            [("gradient", x, y) for x, y in zip(cpu_g, gpu_g)]:
        if (a is None) != (b is None):
            return f"a {what} is missing on one device"
        if a is not None and not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            return f"{what} differs by {np.nanmax(np.abs(a.astype(float) - b)):.3g}"
    return "ok"


def run(names: Any = None, out=sys.stdout) -> dict[str, str]:
    """Checks every record (or those named); returns ``{name: result}``."""
    _tests_path()
    from opdb import OP_DB

    results = {}
    for rec in OP_DB:
        if names is not None and rec.name not in names:
            continue
        try:
            results[rec.name] = check(rec)
        except Exception as e:  # noqa: BLE001 - reported per op
            results[rec.name] = f"error: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
        print(f"{rec.name:28s} {results[rec.name]}", file=out, flush=True)
    counts: dict[str, int] = {}
    for r in results.values():
        key = r if r in ("ok", "no kernel") else "other"
        counts[key] = counts.get(key, 0) + 1
    print(f"{len(results)} ops: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())),
          file=out)
    return results


if __name__ == "__main__":
    run()
