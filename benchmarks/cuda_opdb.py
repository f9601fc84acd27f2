"""The op database swept on the cuda device: each record's first sample (or smallest), eager,
forward and backward, on cuda tensors against the same call on the CPU.

Run ``python -m benchmarks.cuda_opdb`` (on a GPU, or with ``NUMBA_ENABLE_CUDASIM=1`` on numba's
simulator): per op, ``ok`` (values, dtypes and gradients equal the CPU's within the record's
tolerance), ``no kernel`` (the CUDA runtime raised NotImplementedError: the op runs on the CPU
only) or the mismatch, then the counts. ``--all-dtypes`` checks each record's smallest sample
in float32, float64, complex64, int64 and bool (``unsupported``: the CPU rejects that dtype).
``tests/test_cuda_coverage.py`` runs it under the simulator. A check, not a timing.
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


MESSAGES: dict = {}  # (name, dtype) -> the NotImplementedError's text of a "no kernel"
# ops whose index output may name other elements among tied values on the device than on the
# CPU (torch's CPU kernel follows libstdc++'s unstable selection, its CUDA kernel a stable
# sort): there the indices are right when the values output, gathered by them, is the same
TIE_INDICES = {"topk": 1}
DTYPES = ("float32", "float64", "complex64", "int64", "bool")


def _size(sample: Any) -> int:
    """How many array elements a sample holds (its smallest sample is the cheapest)."""
    total = 0
    for obj in list(sample.args) + list(sample.kwargs.values()):
        stack = [obj]
        while stack:
            o = stack.pop()
            if isinstance(o, np.ndarray):
                total += o.size
            elif isinstance(o, (tuple, list)):
                stack.extend(o)
            elif hasattr(o, "value") and isinstance(o.value, np.ndarray):  # Const
                total += o.value.size
    return total


def check(rec: Any, dtype: str | None = None, smallest: bool = False) -> str:
    """``"ok"``, ``"no kernel"``, ``"unsupported"`` (the CPU itself rejects ``dtype``: the
    record does not support it) or a description of the difference, for one record in one
    dtype (by default float32): its first sample (or its smallest), forward, and backward for
    floating dtypes."""
    import jitgrad
    from opdb import as_list, convert

    samples = rec.samples(np.random.default_rng(zlib.crc32(rec.name.encode())))
    sample = min(samples, key=_size) if smallest else samples[0]
    if dtype is None:
        dtype = "float32" if "float32" in rec.dtypes else rec.dtypes[0]
    dt = getattr(jitgrad, dtype)
    diff = rec.differentiable and dt.is_floating_point
    results = []
    for device in ("cpu", "cuda"):
        args = _to(convert(sample.args, jitgrad, dt, requires_grad=diff), device)
        kwargs = _to(convert(sample.kwargs, jitgrad, dt), device)
        leaves = [a for a in args if isinstance(a, jitgrad.Tensor) and a.requires_grad]
        try:
            with np.errstate(all="ignore"):
                outs = [o for o in as_list(rec.run(jitgrad, args, kwargs))
                        if isinstance(o, jitgrad.Tensor)]
                grads = []
                if leaves and any(o.requires_grad for o in outs):
                    total = sum((o.float() * (k + 1)).sum() for k, o in enumerate(outs)
                                if o.requires_grad and o.dtype.is_floating_point)
                    grads = jitgrad.autograd.grad(total, leaves, allow_unused=True)
        except NotImplementedError as e:
            if device == "cpu":
                if dtype not in rec.dtypes:
                    return "unsupported"
                raise
            MESSAGES[(rec.name, dtype)] = str(e)
            return "no kernel"
        except Exception:
            if device == "cpu" and dtype not in rec.dtypes:
                return "unsupported"
            raise
        if device == "cuda" and any(not o.is_cuda for o in outs):
            return "an output left the device"
        results.append(([o.detach().cpu().numpy() for o in outs],
                        [None if g is None else g.cpu().numpy() for g in grads]))
    (cpu_out, cpu_g), (gpu_out, gpu_g) = results
    key = "float64" if dtype == "float64" else "float32"
    rtol, atol = rec.rtol.get(key, 1e-5) * 10, rec.atol.get(key, 1e-6) * 10
    if dtype == "float64":  # (the device's libdevice and NumPy's libm may differ by ulps)
        rtol, atol = max(rtol, 1e-9), max(atol, 1e-11)
    tie = TIE_INDICES.get(rec.name)
    for i, (what, a, b) in enumerate([("output", x, y) for x, y in zip(cpu_out, gpu_out)] +
                                     [("gradient", x, y) for x, y in zip(cpu_g, gpu_g)]):
        if i == tie and a.shape == b.shape and np.array_equal(cpu_out[0], gpu_out[0]):
            continue  # (the same values: the indices name equal elements)
        if (a is None) != (b is None):
            return f"a {what} is missing on one device"
        if a is None:
            continue
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"{what}: {b.dtype}{b.shape} on the device, {a.dtype}{a.shape} on the cpu"
        if a.dtype.kind in "biu":
            if not np.array_equal(a, b):
                return f"{what} differs"
        elif not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            return f"{what} differs by {np.nanmax(np.abs(a.astype(complex) - b)):.3g}"
    return "ok"


def run(names: Any = None, out=sys.stdout, dtypes: tuple = (None,),
        smallest: bool = False) -> dict:
    """Checks every record (or those named) in each of ``dtypes`` (``None``: the record's
    float32); returns ``{name: result}``, or ``{(name, dtype): result}`` when ``dtypes`` is
    given."""
    _tests_path()
    from opdb import OP_DB

    results: dict = {}
    for rec in OP_DB:
        if names is not None and rec.name not in names:
            continue
        for dtype in dtypes:
            key = rec.name if dtype is None else (rec.name, dtype)
            try:
                results[key] = check(rec, dtype, smallest)
            except Exception as e:  # noqa: BLE001 - reported per op
                results[key] = f"error: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
            label = rec.name if dtype is None else f"{rec.name} {dtype}"
            print(f"{label:36s} {results[key]}", file=out, flush=True)
    counts: dict[str, int] = {}
    for r in results.values():
        k = r if r in ("ok", "no kernel", "unsupported") else "other"
        counts[k] = counts.get(k, 0) + 1
    print(f"{len(results)} checks: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())),
          file=out)
    return results


if __name__ == "__main__":
    if "--all-dtypes" in sys.argv:
        run(dtypes=DTYPES, smallest=True)
    else:
        run()
