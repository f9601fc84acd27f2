"""Reporting: the machine, one table per workload, JSON rows, and an optional bar chart."""

from __future__ import annotations

import json
import os
import platform
import subprocess
from pathlib import Path

TITLES = {
    "bandwidth": "Memory bandwidth (NumPy, float64, STREAM byte counts)",
    "W1": "W1 elementwise chain, float32: sum(tanh(x)*sigmoid(y) + x*y**2 - exp(-x*x)), "
          "grads x, y",
    "W2": "W2 MLP train step, float32: 784-512-512-10, ReLU, mean cross-entropy, batch 128, "
          "grads of 6 params",
    "W3": "W3 layer norm + GELU block, float32: mean((gelu_tanh(layer_norm(x)*gamma+beta) @ W)**2)",
    "W4": "W4 eager overhead: 16 elements, chain of 100 mul/add/tanh, sum, backward",
    "W5": "W5 tiny call: Rosenbrock on a length-2 float64 vector, value and gradient",
    "W6": "W6 long program: chain of N alternating x*x*0.5 / tanh(x)*1.01+0.1 on 16 float64, "
          "sum, gradient",
    "compile": "Compile latency: first call (trace + compile + run, fwd+bwd) in a fresh process",
    "memory": "Peak memory: extra resident memory of one W3 call (fwd+bwd) over its inputs, "
              "fresh process",
}
ORDER = ("bandwidth", "W1", "W2", "W3", "W4", "W5", "W6", "compile", "memory")


def cpu_model() -> str:
    """The CPU's model name (``lscpu``'s, else /proc/cpuinfo's, else platform's)."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            if line.strip().lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_line(versions: dict[str, str]) -> str:
    """One line naming the machine and the versions measured."""
    vs = ", ".join(f"{k} {v}" for k, v in versions.items() if v)
    return (f"{cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"{platform.system()} {platform.machine()}; {vs}")


def fmt_time(s: float | None) -> str:
    """Seconds in a readable unit: ``12.3 us``, ``4.56 ms``, ``1.23 s``."""
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.3g} us"
    if s < 1:
        return f"{s * 1e3:.3g} ms"
    return f"{s:.3g} s"


def _table(headers: list[str], body: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in body]
    return "\n".join(lines)


def fmt_bytes(n: float | None) -> str:
    """Bytes in MiB (or KiB below 1 MiB)."""
    if n is None:
        return "-"
    return f"{n / 2 ** 20:.1f} MiB" if n >= 2 ** 20 else f"{n / 2 ** 10:.0f} KiB"


def _cells(r: dict, workload: str) -> list[str]:
    ok = r["status"] == "ok"
    if workload == "memory":
        return [r["peer"], fmt_bytes(r.get("peak_bytes")) if ok else r["status"],
                f"{r['ratio']:.2f}x" if ok and r["ratio"] else "-"]
    cells = [r["peer"], fmt_time(r["median_s"]) if ok else r["status"]]
    if workload != "compile":
        cells.append(fmt_time(r.get("min_s")) if ok else "-")
    cells.append(f"{r['ratio']:.2f}x" if ok and r["ratio"] else "-")
    if workload == "compile":
        cells.append(fmt_time(r.get("later_max_s")) if ok else "-")
    if workload == "W1":
        rf = r.get("roofline_fraction")
        cells.append(f"{rf:.1%}" if rf is not None else "-")
    elif workload == "W4":
        cells.append(fmt_time(r.get("per_op_s")) if ok else "-")
    elif workload == "bandwidth":
        cells.append(f"{r['bandwidth_gbs']:.1f} GB/s" if ok else "-")
    return cells


def format_tables(rows: list[dict]) -> str:
    """A table per workload: config, peer, median, min, ratio to the fastest, and the W1
    roofline fraction, W4 time per op or the bandwidth where they apply."""
    out = []
    shown = [r for r in rows if r["status"] not in ("unavailable", "skipped")]
    for wl in [w for w in ORDER if any(r["workload"] == w for r in shown)]:
        extra = {"W1": ["roofline"], "W4": ["per op"], "bandwidth": ["bandwidth"]}.get(wl, [])
        headers = {"compile": ["config", "peer", "first call", "ratio", "slowest of 2-10"],
                   "memory": ["config", "peer", "peak extra", "ratio"]}.get(
                       wl, ["config", "peer", "median", "min", "ratio"]) + extra
        body, notes = [], []
        configs = list(dict.fromkeys(r["config"] for r in shown if r["workload"] == wl))
        for config in configs:
            group = [r for r in shown if r["workload"] == wl and r["config"] == config]
            group.sort(key=lambda r: (r["status"] != "ok", r["median_s"] or 0.0,
                                      r.get("peak_bytes") or 0))
            for i, r in enumerate(group):
                body.append([config if i == 0 else ""] + _cells(r, wl))
                if r["status"] != "ok":
                    notes.append(f"{r['peer']} ({config}): {r['status']}: {r.get('reason')}")
        text = [TITLES.get(wl, wl), _table(headers, body)] + [f"  {n}" for n in notes]
        out.append("\n".join(text))
    return "\n\n".join(out)


def format_unavailable(rows: list[dict]) -> str:
    """One line per peer that could not run or was left out, with the reason."""
    seen: dict[str, str] = {}
    for r in rows:
        if r["status"] in ("unavailable", "skipped"):
            seen.setdefault(r["peer"], r["reason"])
    return "\n".join(f"not run: {p}: {why}" for p, why in seen.items())


def write_json(rows: list[dict], path: str | os.PathLike) -> None:
    """Write ``rows`` as a JSON list (one object per workload, config and peer)."""
    Path(path).write_text(json.dumps(rows, indent=1) + "\n")


def plot(rows: list[dict], path: str | os.PathLike) -> str:
    """A bar chart of ratios to the fastest peer, one panel per workload and config.

    Returns:
        A message saying where the chart went, or why there is none (matplotlib missing).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import NullFormatter
    except ImportError:
        return ("--plot needs matplotlib, which is not installed: "
                "pip install matplotlib (or pip install \".[plot]\"); no chart written")
    ok = [r for r in rows if r["status"] == "ok" and r["median_s"]
          and r["workload"] != "bandwidth"]
    keys = list(dict.fromkeys((r["workload"], r["config"]) for r in ok))
    if not keys:
        return "no timed rows to plot; no chart written"
    cols = min(3, len(keys))
    nrows = (len(keys) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 3.2 * nrows), squeeze=False)
    for ax, (wl, config) in zip(axes.flat, keys):
        group = sorted((r for r in ok if (r["workload"], r["config"]) == (wl, config)),
                       key=lambda r: r["median_s"])
        names = [r["peer"] for r in group]
        ax.barh(names, [r["ratio"] for r in group],
                color=["tab:orange" if n.startswith("jitgrad") else "tab:blue" for n in names])
        for i, r in enumerate(group):
            ax.text(r["ratio"], i, " " + fmt_time(r["median_s"]), va="center", fontsize=8)
        ax.set_xscale("log")
        ax.set_xlim(0.8, max(r["ratio"] for r in group) * 6)
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.invert_yaxis()
        ax.set_title(f"{wl} {config}", fontsize=10)
        ax.set_xlabel("time / fastest (log)")
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"chart written to {path}"
