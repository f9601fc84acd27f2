"""``python -m benchmarks``: parse the command line, run the suite, print and save the results."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from . import compile_latency, memory, report, runner
from . import peers as peers_mod
from .peers import PEER_NAMES, Peer, select
from .workloads import COMPILE, WORKLOADS, Case, cases

MEMORY = "memory"
_ROOT = Path(__file__).resolve().parent.parent
SECTIONS = WORKLOADS + (COMPILE, MEMORY)


def _names(text: str, allowed: Sequence[str], what: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(s.strip() for s in text.split(",") if s.strip()))
    canon = {a.lower(): a for a in allowed}
    bad = [n for n in names if n.lower() not in canon]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {', '.join(bad) or repr(text)}; choose from {', '.join(allowed)}")
    return tuple(canon[n.lower()] for n in names)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m benchmarks``."""
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Time jitgrad against NumPy, torch, torch.compile and jax on the workloads "
                    "of docs/benchmarks.md (forward + backward per call; values and gradients are "
                    "checked against a float64 reference before anything is timed).")
    p.add_argument("--quick", action="store_true",
                   help="small sizes and fewer rounds (the whole run takes under 2 minutes)")
    p.add_argument("--only", type=lambda s: _names(s, SECTIONS, "workload"), default=None,
                   metavar="W1,W5", help=f"run only these of {','.join(SECTIONS)}")
    p.add_argument("--peers", type=lambda s: _names(s, PEER_NAMES, "peer"), default=None,
                   metavar="NAMES", help=f"run only these of {','.join(PEER_NAMES)}")
    p.add_argument("--json", metavar="PATH", help="write every row as a JSON list to PATH")
    p.add_argument("--plot", metavar="PATH", help="draw a bar chart to PATH (needs matplotlib)")
    p.add_argument("--rounds", type=int, default=None, metavar="N",
                   help="timing rounds per configuration (default 7 with --quick, else 15)")
    p.add_argument("--no-progress", action="store_true", help="no progress display on stderr")
    p.add_argument("--isolate", action="store_true",
                   help="time each peer in a process of its own, one after the other (no other "
                        "library's threads beside it; rounds are not interleaved across peers)")
    return p


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse ``python -m benchmarks`` options."""
    args = build_parser().parse_args(argv)
    if args.rounds is not None and args.rounds < 1:
        build_parser().error("--rounds must be at least 1")
    return args


def run(args: argparse.Namespace, peers: list[Peer] | None = None,
        progress: runner.Progress | None = None, suite: list[Case] | None = None,
        bandwidth_elements: int = 1 << 24) -> list[dict]:
    """Run what ``args`` selects on ``peers`` (default: every peer ``--peers`` names).

    Args:
        args: parsed options (see :func:`parse_args`).
        peers: the peers to run (default: those ``args.peers`` names).
        progress: the progress display (default: on stderr unless ``--no-progress``).
        suite: the configurations to time (default: the full sizes, or the quick ones).
        bandwidth_elements: float64 elements per array of the bandwidth measurement.

    Returns:
        The rows (dicts with ``workload``, ``config``, ``peer``, ``status``, ``median_s``,
        ``ratio``, and, where they apply, ``reason``, ``roofline_fraction``, ``per_op_s``,
        ``bandwidth_gbs``).
    """
    peers = select(args.peers) if peers is None else peers
    progress = progress or runner.Progress(enabled=not args.no_progress)
    timing = runner.QUICK if args.quick else runner.FULL
    if args.rounds is not None:
        timing = dataclasses.replace(timing, rounds=args.rounds)
    for peer in peers:
        progress.update(f"checking peer {peer.name}")
        peer.unavailable()
    only = args.only
    if suite is None:
        suite = cases(args.quick, None if only is None else
                      tuple(w for w in only if w not in (COMPILE, MEMORY)))
    skip = {}
    if args.quick and (args.peers is None or "torch-compile" not in args.peers):
        skip["torch-compile"] = ("left out of --quick runs (a cold torch.compile takes 10-20 s "
                                 "per workload here); run without --quick, or name it in "
                                 "--peers")
    rows: list[dict] = []
    if any(c.workload == "W1" for c in suite):
        rows += runner.measure_bandwidth(args.quick, bandwidth_elements, progress)
    for i, case in enumerate(suite):
        progress.stage = f"{i + 1}/{len(suite)}"
        rows += runner.run_case(case, peers, timing, progress, skip)
    progress.stage = ""
    if only is None or COMPILE in only:
        available = [p.name for p in peers if p.unavailable() is None]
        compile_rows = compile_latency.measure(("W1", "W2", "W6"), available, skip,
                                               progress)
        rows += [r for r in compile_rows if r["peer"] in {p.name for p in peers}]
        for p in peers:
            why = p.unavailable() if p.name not in skip else None
            if p.name in compile_latency.COMPILED_PEERS and why is not None:
                rows += [runner.make_row("compile", f"{label} {kind}", p.name, "unavailable",
                                         reason=why)
                         for label in compile_latency.LABELS.values()
                         for kind in ("cold", "warm")]
    if only is None or MEMORY in only:
        why = memory.supported()
        names = [p.name for p in peers if p.name not in skip and p.unavailable() is None]
        if why is None:
            rows += memory.measure(names, args.quick, progress)
        else:
            rows += [runner.make_row(MEMORY, "W3", n, "unavailable", reason=why) for n in names]
        rows += [runner.make_row(MEMORY, "W3", p.name, "skipped", reason=skip[p.name])
                 if p.name in skip else
                 runner.make_row(MEMORY, "W3", p.name, "unavailable", reason=p.unavailable())
                 for p in peers if p.name not in names]
    runner.set_ratios(rows)
    bw = [r["bandwidth_gbs"] for r in rows if r["workload"] == "bandwidth"]
    if bw:
        runner.add_roofline(rows, max(bw))
    progress.done()
    return rows


def run_isolated(args: argparse.Namespace, argv: Sequence[str]) -> list[dict]:
    """``--isolate``: the same run, one child process per peer, rows merged and ratios set.

    In one process, the peers' thread pools (torch's and jax's workers, OpenMP's) keep running
    or spinning beside the peer being timed, on a 2-core machine slowing it by up to 2x on the
    microsecond workloads (W1 1e3, W4 jit); a user's process holds one library.
    """
    base = [a for a in argv if a != "--isolate"]
    names = [p.name for p in select(args.peers)]
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="jitgrad-bench-") as tmp:
        for name in names:
            path = os.path.join(tmp, f"{name}.json")
            cmd = [sys.executable, "-m", "benchmarks", *_without_option(base, "--peers"),
                   "--peers", name, "--json", path]
            done = subprocess.run(cmd, cwd=_ROOT, stdout=subprocess.DEVNULL)
            if done.returncode != 0 or not os.path.exists(path):
                rows.append(runner.make_row("harness", "isolated", name, "error",
                                            reason=f"the child process exited with "
                                                   f"{done.returncode}"))
                continue
            have_bandwidth = any(r["workload"] == "bandwidth" for r in rows)
            for r in json.loads(Path(path).read_text()):
                if r["workload"] == "bandwidth" and have_bandwidth:
                    continue  # (each child measures it; the first child's rows stand)
                r["ratio"] = None
                rows.append(r)
    runner.set_ratios(rows)
    bw = [r["bandwidth_gbs"] for r in rows if r["workload"] == "bandwidth"]
    if bw:
        runner.add_roofline(rows, max(bw))
    return rows


def _without_option(argv: Sequence[str], option: str) -> list[str]:
    """``argv`` without ``option`` and its value (``--json x`` or ``--json=x``)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == option:
            skip = True
        elif not a.startswith(option + "="):
            out.append(a)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    t0 = time.perf_counter()
    peers = select(args.peers)
    if args.isolate:
        rows = run_isolated(args, _without_option(argv, "--json"))
    else:
        rows = run(args, peers)
    versions = {name: peers_mod.module_version(name) for name in ("numpy", "jitgrad", "torch",
                                                                   "jax")}
    print(f"jitgrad benchmarks ({'quick' if args.quick else 'full'} run, "
          f"{time.perf_counter() - t0:.0f} s): forward + backward per call, median of "
          f"{'rounds, each peer in a process of its own' if args.isolate else 'interleaved rounds'}"
          "; ratio = time / fastest peer's time")
    print(f"machine: {report.machine_line(versions)}")
    missing = report.format_unavailable(rows)
    if missing:
        print(missing)
    print()
    print(report.format_tables(rows) or "(nothing was timed)")
    bad = [r for r in rows if r["status"] in ("mismatch", "error")]
    if bad:
        print(f"\nWARNING: {len(bad)} row(s) failed the agreement check or raised (see notes)")
    if args.json:
        report.write_json(rows, args.json)
        print(f"\nJSON rows written to {args.json}")
    if args.plot:
        print("\n" + report.plot(rows, args.plot))
    return 0


if __name__ == "__main__":
    sys.exit(main())
