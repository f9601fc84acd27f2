"""Compile latency: the first call (trace + compile + run, forward and backward) in a fresh process.

Each probe also times calls 2-10 and reports the slowest (``later_max_s``): a JIT that
compiles a later tier after some calls (jitgrad's whole programs, from the 4th call) stalls
there, and the first call alone would not show it.

``cold`` runs with empty cache directories (``JITGRAD_CACHE_DIR``, torch inductor's and jax's
persistent caches point into a new temporary directory); ``warm`` runs a second fresh process
on the cache the cold one left. jitgrad's Python modules are compiled to bytecode before
either (as an installed package has them). Run as
``python -m benchmarks.compile_latency W1 jitgrad-jit`` it is the probe: it prints one JSON
object with ``first_call_s`` on its last line.
"""

from __future__ import annotations

import compileall
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .runner import Progress, make_row

COMPILED_PEERS = ("jitgrad-jit", "jitgrad-jit-vg", "torch-compile", "jax")
LABELS = {"W1": "W1 N=1e5", "W2": "W2 MLP", "W6": "W6 N=1600"}
_ROOT = Path(__file__).resolve().parent.parent
LATER_CALLS = 9
LONG_SKIP = "not probed on W6 (torch.compile of an 8000-op program takes many minutes)"


def probe(workload: str, peer_name: str) -> dict:
    """In this (fresh) process: time the first call of ``workload`` on ``peer_name``, check it."""
    from .peers import JitgradJitPeer, JitgradJitValueAndGradPeer, select
    from .runner import disagreement
    from .workloads import compile_cases, reference

    case = compile_cases()[workload]
    # no smoke test for jitgrad-jit: nothing may be compiled before the timed call
    unsmoked = {"jitgrad-jit": JitgradJitPeer, "jitgrad-jit-vg": JitgradJitValueAndGradPeer}
    (peer,) = [unsmoked[peer_name](smoke=False)] if peer_name in unsmoked else \
        select((peer_name,))
    why = peer.unavailable()
    if why is not None:
        return {"status": "unavailable", "reason": why}
    arrays = case.build()
    t0 = time.perf_counter()
    step = peer.prepare(case, arrays)
    result = step()
    first = time.perf_counter() - t0
    later = []  # calls 2-10: a JIT's later tiers (jitgrad's programs) may compile there
    for _ in range(LATER_CALLS):
        t1 = time.perf_counter()
        step()
        later.append(time.perf_counter() - t1)
    second = later[0]
    bad = disagreement(case, peer.to_numpy(result), reference(case, arrays))
    if bad is not None:
        return {"status": "mismatch", "reason": bad}
    return {"status": "ok", "first_call_s": first, "second_call_s": second,
            "later_max_s": max(later), "config": case.config}


def _env(cache: Path) -> dict:
    env = dict(os.environ)
    env["JITGRAD_CACHE_DIR"] = str(cache / "jitgrad")
    env["TORCHINDUCTOR_CACHE_DIR"] = str(cache / "inductor")
    env["JAX_COMPILATION_CACHE_DIR"] = str(cache / "jax")
    env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    env["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_ROOT), env.get("PYTHONPATH")) if p)
    return env


def _run_probe(workload: str, peer: str, cache: Path, timeout_s: float) -> dict:
    cmd = [sys.executable, "-m", "benchmarks.compile_latency", workload, peer]
    try:
        out = subprocess.run(cmd, env=_env(cache), cwd=str(_ROOT), capture_output=True,
                             text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"status": "error", "reason": f"probe ran over {timeout_s:.0f} s"}
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        tail = (out.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"status": "error", "reason": f"probe exited {out.returncode}: {tail[:300]}"}
    return json.loads(lines[-1])


def measure(workloads: tuple[str, ...], peer_names: list[str], skip: dict[str, str],
            progress: Progress | None = None, timeout_s: float = 300.0) -> list[dict]:
    """Cold and warm first-call rows for each workload and compiled peer.

    Args:
        workloads: which of ``W1``, ``W2``, ``W6`` to probe.
        peer_names: the compiled peers that are available (others are left out).
        skip: peer name -> reason, for peers deliberately not probed (rows say why).
        progress: where to show what runs.
        timeout_s: the most one probe process may take.
    """
    # jitgrad's modules compiled to bytecode first, as pip does when it installs a package (a
    # checkout run with PYTHONDONTWRITEBYTECODE=1 would otherwise compile ~120 modules from
    # source inside every timed first call: 0.15 s here). The probes time jitgrad's first call.
    compileall.compile_dir(str(_ROOT / "jitgrad"), quiet=1)
    rows = []
    for wl in workloads:
        for peer in COMPILED_PEERS:
            why = skip.get(peer) or (LONG_SKIP if wl == "W6" and peer == "torch-compile"
                                     else None)
            if why is not None:
                for kind in ("cold", "warm"):
                    rows.append(make_row("compile", f"{LABELS[wl]} {kind}", peer, "skipped",
                                         reason=why))
                continue
            if peer not in peer_names:
                continue
            with tempfile.TemporaryDirectory(prefix="jitgrad-bench-cache-") as tmp:
                for kind in ("cold", "warm"):
                    if progress:
                        progress.update(f"compile latency: {wl} {peer} {kind} (fresh process)")
                    res = _run_probe(wl, peer, Path(tmp), timeout_s)
                    if res.get("status") == "ok":
                        rows.append(make_row("compile", f"{LABELS[wl]} {kind}", peer, "ok",
                                             res["first_call_s"], rounds=1,
                                             second_call_s=res["second_call_s"],
                                             later_max_s=res["later_max_s"]))
                    else:
                        rows.append(make_row("compile", f"{LABELS[wl]} {kind}", peer,
                                             res.get("status", "error"),
                                             reason=res.get("reason")))
    return rows


def _main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m benchmarks.compile_latency W1|W2 PEER", file=sys.stderr)
        return 2
    print(json.dumps(probe(argv[0], argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
