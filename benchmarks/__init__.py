"""jitgrad's benchmark harness: the workloads of docs/benchmarks.md on every available peer.

Run ``python -m benchmarks`` (``--help`` for options). Modules: ``workloads`` (each workload
defined once), ``peers`` (jitgrad eager/jit, NumPy, torch, torch.compile, jax), ``runner``
(agreement check, interleaved timing), ``compile_latency`` (fresh-process first calls),
``memory`` (fresh-process peak memory of W3), ``report`` (tables, JSON, chart), ``cli`` (the
command line); ``eager_overhead`` measures W4 alone against torch eager.
"""

from .cli import main, parse_args, run

__all__ = ["main", "parse_args", "run"]
