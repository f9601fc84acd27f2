"""Peak memory of one W3 call (forward + backward) per peer, each in a fresh process.

A probe process builds W3's inputs, runs one warm-up call (tracing and compiling happen there),
checks it against the reference, frees it, then resets the kernel's resident-set high-water
mark (``/proc/self/clear_refs``), runs one more call and reads the high-water mark again
(``VmHWM``). The figure is that peak minus the resident size just before the call: the extra
memory one steady-state call needs, with imports and inputs left out. glibc's malloc is told
to return large blocks to the system (``MALLOC_MMAP_THRESHOLD_``), so freed arrays of the
warm-up call do not hide the second call's allocations. Linux only.

Run as ``python -m benchmarks.memory PEER [--quick]`` it is the probe: it prints one JSON
object on its last line.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

from .runner import Progress, make_row

_ROOT = Path(__file__).resolve().parent.parent
_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_kib(field: str) -> int:
    for line in _STATUS.read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not found in {_STATUS}")


def supported() -> str | None:
    """``None`` when this system can measure peaks, else why not."""
    if not (_STATUS.exists() and _CLEAR_REFS.exists()):
        return "peak memory needs Linux's /proc/self/status and /proc/self/clear_refs"
    return None


def probe(peer_name: str, quick: bool) -> dict:
    """In this (fresh) process: the extra peak resident memory of one W3 call on a peer."""
    from .peers import select
    from .runner import disagreement
    from .workloads import cases, reference

    why = supported()
    if why is not None:
        return {"status": "unavailable", "reason": why}
    (case,) = cases(quick, ("W3",))
    (peer,) = select((peer_name,))
    why = peer.unavailable()
    if why is not None:
        return {"status": "unavailable", "reason": why}
    arrays = case.build()
    step = peer.prepare(case, arrays)
    result = step()
    bad = disagreement(case, peer.to_numpy(result), reference(case, arrays))
    if bad is not None:
        return {"status": "mismatch", "reason": bad}
    del result
    gc.collect()
    base = _status_kib("VmRSS")
    _CLEAR_REFS.write_text("5")  # resets VmHWM to the current resident size
    result = step()
    peak = _status_kib("VmHWM")
    del result
    return {"status": "ok", "peak_bytes": (peak - base) * 1024, "baseline_bytes": base * 1024,
            "config": case.config}


def measure(peer_names: list[str], quick: bool, progress: Progress | None = None,
            timeout_s: float = 300.0) -> list[dict]:
    """One ``memory`` row per peer: ``peak_bytes`` and ``ratio`` to the smallest peak."""
    from .workloads import cases

    config = "W3 " + cases(quick, ("W3",))[0].config
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_ROOT), env.get("PYTHONPATH")) if p)
    rows = []
    for name in peer_names:
        if progress:
            progress.update(f"peak memory: {config} {name} (fresh process)")
        cmd = [sys.executable, "-m", "benchmarks.memory", name] + (["--quick"] if quick else [])
        try:
            out = subprocess.run(cmd, env=env, cwd=str(_ROOT), capture_output=True, text=True,
                                 timeout=timeout_s)
            lines = out.stdout.strip().splitlines()
            if out.returncode != 0 or not lines:
                tail = (out.stderr.strip().splitlines() or ["(no output)"])[-1]
                res = {"status": "error", "reason": f"probe exited {out.returncode}: {tail}"}
            else:
                res = json.loads(lines[-1])
        except subprocess.TimeoutExpired:
            res = {"status": "error", "reason": f"probe ran over {timeout_s:.0f} s"}
        if res["status"] == "ok":
            rows.append(make_row("memory", config, name, "ok", None, rounds=1,
                                 peak_bytes=res["peak_bytes"],
                                 baseline_bytes=res["baseline_bytes"]))
        else:
            rows.append(make_row("memory", config, name, res["status"],
                                 reason=res.get("reason")))
    peaks = [r["peak_bytes"] for r in rows if r["status"] == "ok"]
    for r in rows:
        if r["status"] == "ok" and min(peaks) > 0:
            r["ratio"] = r["peak_bytes"] / min(peaks)
    return rows


def _main(argv: list[str]) -> int:
    args = [a for a in argv if a != "--quick"]
    if len(args) != 1:
        print("usage: python -m benchmarks.memory PEER [--quick]", file=sys.stderr)
        return 2
    print(json.dumps(probe(args[0], "--quick" in argv)))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
