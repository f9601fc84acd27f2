"""Runs cases on peers: agreement check first, then interleaved timing rounds, medians, ratios.

Every case gives one row per peer (a dict; see :func:`make_row`). A peer's row is ``"ok"`` only
when its value and every gradient agree with the float64 reference within the case's tolerance;
otherwise it is ``"mismatch"``, ``"error"`` or ``"unavailable"`` with the reason, and untimed.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np

from .peers import Peer, Step
from .workloads import Case, reference


@dataclass(frozen=True, kw_only=True)
class Timing:
    """How hard to time: rounds per case, seconds per timed batch, of warm-up, of settling."""

    rounds: int = 15
    batch_s: float = 0.05
    warmup_s: float = 0.2
    settle_s: float = 0.2
    max_calls: int = 20000


QUICK = Timing(rounds=7, batch_s=0.01, warmup_s=0.03, settle_s=0.03)
FULL = Timing()


class Progress:
    """One status line on stderr, rewritten in place on a terminal, one line per update else."""

    def __init__(self, stream: TextIO | None = None, enabled: bool = True) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._width = 0
        self.t0 = time.perf_counter()
        self.stage = ""  # e.g. "3/8": which configuration of how many is running

    def update(self, text: str) -> None:
        if not self.enabled:
            return
        stage = f" {self.stage}" if self.stage else ""
        line = f"[{time.perf_counter() - self.t0:6.1f}s{stage}] {text}"
        if self.tty:
            line = line[:max(shutil.get_terminal_size().columns - 1, 20)]
            pad = max(self._width - len(line), 0)
            self.stream.write("\r" + line + " " * pad)
            self._width = len(line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def done(self) -> None:
        if self.enabled and self.tty and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0


def make_row(workload: str, config: str, peer: str, status: str = "ok",
             median_s: float | None = None, **extra: Any) -> dict:
    """One JSON row: ``workload``, ``config``, ``peer``, ``status``, ``median_s``, ``ratio``..."""
    row = {"workload": workload, "config": config, "peer": peer, "status": status,
           "median_s": median_s, "ratio": None, "reason": None}
    row.update(extra)
    return row


def set_ratios(rows: list[dict]) -> None:
    """Fill ``ratio`` = median / fastest median among the ``ok`` rows of the same config."""
    best: dict[tuple, float] = {}
    for r in rows:
        if r["status"] == "ok" and r["median_s"]:
            k = (r["workload"], r["config"])
            best[k] = min(best.get(k, float("inf")), r["median_s"])
    for r in rows:
        k = (r["workload"], r["config"])
        if r["status"] == "ok" and r["median_s"] and k in best:
            r["ratio"] = r["median_s"] / best[k]


# ----------------------------------------------------------------- agreement


def disagreement(case: Case, got: tuple[float, list[np.ndarray]],
                 ref: tuple[float, list[np.ndarray]]) -> str | None:
    """Why ``got`` does not match the reference, or ``None`` when it does.

    Each array must satisfy ``|got - ref| <= rtol * (|ref| + max|ref|)`` elementwise: a
    relative tolerance, with an absolute floor scaled to the array's magnitude (float32
    gradients of near-zero entries carry the rounding error of their larger neighbours).
    """
    value, grads = got
    ref_value, ref_grads = ref
    if len(grads) != len(ref_grads):
        return f"returned {len(grads)} gradients, expected {len(ref_grads)}"
    names = [case.names[i] for i in case.wrt]
    items = [("value", np.asarray(value, dtype=np.float64), np.asarray(ref_value))]
    items += [(f"grad[{n}]", np.asarray(g), r) for n, g, r in zip(names, grads, ref_grads)]
    for what, a, r in items:
        if a.shape != r.shape:
            return f"{what} has shape {a.shape}, expected {r.shape}"
        a = a.astype(np.float64)
        if not np.all(np.isfinite(a)):
            return f"{what} is not finite"
        scale = float(np.max(np.abs(r))) if r.size else 0.0
        err = np.abs(a - r)
        tol = case.rtol * (np.abs(r) + scale)
        if np.any(err > tol):
            i = int(np.argmax(err - tol))
            return (f"{what} disagrees with the float64 reference: max abs error "
                    f"{float(err.flat[i]):.3g} (tolerance {float(tol.flat[i]):.3g}, "
                    f"rtol={case.rtol:g})")
    return None


# ----------------------------------------------------------------- timing


def _calls_per_batch(step: Step, timing: Timing) -> int:
    """Warm up ``step`` (at least 2 calls) and size a batch to last about ``timing.batch_s``."""
    calls, t0 = 0, time.perf_counter()
    while True:
        t = time.perf_counter()
        step()
        last = time.perf_counter() - t
        calls += 1
        if calls >= 2 and time.perf_counter() - t0 >= timing.warmup_s:
            break
        if calls >= 2 and last > timing.warmup_s:
            break
    per_call = max(last, 1e-9)
    return int(min(max(1, round(timing.batch_s / per_call)), timing.max_calls))


def settle(step: Step, seconds: float) -> None:
    """Run ``step`` untimed for ``seconds`` (at least once)."""
    t0 = time.perf_counter()
    step()
    while time.perf_counter() - t0 < seconds:
        step()


def time_interleaved(steps: dict[str, Step], timing: Timing,
                     progress: Callable[[str], None] = lambda s: None
                     ) -> tuple[dict[str, list[float]], dict[str, str]]:
    """Per-call seconds of each step, one sample per round, peers interleaved in each round.

    The order of peers rotates every round, so slow drifts of the machine (another process,
    frequency changes) touch every peer alike. Before its timed batch, each peer runs untimed
    for ``timing.settle_s`` (at least one call). Worker threads of the previous peer's library
    keep spinning for a while after its last call, and a thread pool that went idle needs a
    while to come back to speed: measured on 2 cores, jax's W2 step took 1.9-2.0 ms for its
    first 100 ms of calls after another peer's batch, and 1.23 ms after that, its speed in a
    loop of its own. Timing the first calls would report the cost of switching libraries, which
    a user's loop never pays. A step that raises is dropped from the rounds.

    Returns:
        ``(samples, failures)``: peer -> per-round seconds per call, and peer -> why it failed.
    """
    names = list(steps)
    batch, failures = {}, {}

    def failed(name: str, e: Exception) -> None:
        failures[name] = f"failed while timing: {type(e).__name__}: {e}".splitlines()[0][:300]
        names.remove(name)

    for name in names[:]:
        progress(f"warm-up {name}")
        try:
            batch[name] = _calls_per_batch(steps[name], timing)
        except Exception as e:  # noqa: BLE001 - reported in the peer's row
            failed(name, e)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for r in range(timing.rounds):
        progress(f"round {r + 1}/{timing.rounds}")
        k = r % len(names) if names else 0
        for name in names[k:] + names[:k]:
            step, n = steps[name], batch[name]
            try:
                settle(step, timing.settle_s)
                t0 = time.perf_counter()
                for _ in range(n):
                    step()
                samples[name].append((time.perf_counter() - t0) / n)
            except Exception as e:  # noqa: BLE001
                failed(name, e)
                del samples[name]
    return samples, failures


def run_case(case: Case, peers: list[Peer], timing: Timing, progress: Progress | None = None,
             skip: dict[str, str] | None = None) -> list[dict]:
    """Check then time ``case`` on every peer; one row per peer.

    Args:
        case: the workload configuration.
        peers: the peers to run it on.
        timing: rounds and batch sizes.
        progress: where to show what runs.
        skip: peer name -> reason, for peers deliberately left out (their rows say why).
    """
    skip = skip or {}
    progress = progress or Progress(enabled=False)
    label = f"{case.workload} {case.config}"
    arrays = case.build()
    ref = reference(case, arrays)
    rows, steps = {}, {}
    peers_by = {p.name: p for p in peers}
    for peer in peers:
        if peer.name in skip:
            rows[peer.name] = make_row(case.workload, case.config, peer.name, "skipped",
                                       reason=skip[peer.name])
            continue
        why = peer.unavailable()
        if why is not None:
            rows[peer.name] = make_row(case.workload, case.config, peer.name, "unavailable",
                                       reason=why)
            continue
        progress.update(f"{label}: {peer.name}: prepare + first call + check")
        try:
            step = peer.prepare(case, arrays)
            got = peer.to_numpy(step())
            bad = disagreement(case, got, ref)
        except Exception as e:  # noqa: BLE001 - a failing peer is reported, not fatal
            rows[peer.name] = make_row(case.workload, case.config, peer.name, "error",
                                       reason=f"{type(e).__name__}: {e}".splitlines()[0][:300])
            continue
        if bad is not None:
            rows[peer.name] = make_row(case.workload, case.config, peer.name, "mismatch",
                                       reason=bad)
            continue
        steps[peer.name] = step
    samples, failures = time_interleaved(steps, timing,
                                         lambda s: progress.update(f"{label}: {s}"))
    for name, why in failures.items():
        rows[name] = make_row(case.workload, case.config, name, "error", reason=why)
    for name, ts in samples.items():
        progress.update(f"{label}: {name}: check after timing")
        try:  # the last call must agree too (no state carried between calls)
            bad = disagreement(case, peers_by[name].to_numpy(steps[name]()), ref)
        except Exception as e:  # noqa: BLE001
            bad = f"{type(e).__name__}: {e}".splitlines()[0][:300]
        if bad is not None:
            rows[name] = make_row(case.workload, case.config, name, "mismatch",
                                  reason=f"after {len(ts)} timed rounds: {bad}")
            continue
        med = statistics.median(ts)
        row = make_row(case.workload, case.config, name, "ok", med, rounds=len(ts),
                       min_s=min(ts))
        if case.ops_per_call:
            row["per_op_s"] = med / case.ops_per_call
        if case.roofline_bytes:
            row["bytes"] = case.roofline_bytes
        rows[name] = row
    return [rows[p.name] for p in peers]


# ----------------------------------------------------------------- memory bandwidth


def measure_bandwidth(quick: bool = False, n: int = 1 << 24,
                      progress: Progress | None = None) -> list[dict]:
    """STREAM-style copy and triad with NumPy (float64): rows with ``bandwidth_gbs``.

    Bytes are counted as STREAM does (copy: read + write = 16 B/element; triad ``a = b + s*c``:
    24 B/element). NumPy's triad takes two passes, so its figure understates the hardware.
    """
    if progress:
        progress.update("memory bandwidth: NumPy copy and triad")
    reps = 5 if quick else 15
    a = np.zeros(n)
    b = np.random.default_rng(0).standard_normal(n)
    c = np.ones(n)

    def copy():
        np.copyto(a, b)

    def triad():
        np.multiply(c, 3.0, out=a)
        np.add(a, b, out=a)

    rows = []
    for name, fn, nbytes in (("copy", copy, 16 * n), ("triad", triad, 24 * n)):
        fn()
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        med = statistics.median(ts)
        rows.append(make_row("bandwidth", f"{name} {nbytes >> 20} MiB", "numpy", "ok", med,
                             bandwidth_gbs=nbytes / med / 1e9, bytes=nbytes, rounds=reps,
                             min_s=min(ts)))
    return rows


def add_roofline(rows: list[dict], bandwidth_gbs: float) -> None:
    """For W1 rows, the fraction of the memory roofline (``bytes`` at ``bandwidth_gbs``)."""
    for r in rows:
        if r["status"] == "ok" and r.get("bytes") and r["workload"] == "W1":
            r["roofline_fraction"] = r["bytes"] / bandwidth_gbs / 1e9 / r["median_s"]
