"""The pass pipeline: a named, linear list of pure ``Graph -> Graph`` functions.

``trace -> dce -> cse -> simplify -> dce -> vjp -> partition -> (cse -> simplify -> dce on the
backward)``. Every pass's result is verified; with ``JITGRAD_DEBUG=1`` each one is printed to
stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from ..ir import Graph
from .cse import cse
from .dce import dce
from .partition import partition
from .simplify import simplify
from .vjp import vjp

__all__ = ["FORWARD_PASSES", "compile_graphs", "cse", "dce", "partition", "run_passes",
           "simplify", "vjp"]

FORWARD_PASSES: list[tuple[str, Callable[[Graph], Graph]]] = [
    ("dce", dce), ("cse", cse), ("simplify", simplify), ("dce", dce)]


def _debug() -> bool:
    return os.environ.get("JITGRAD_DEBUG", "0") not in ("", "0")


def _dump(name: str, graph: Graph) -> None:
    print(f"--- jitgrad.jit: after {name} ---", file=sys.stderr)
    print(graph.format(), file=sys.stderr)
    if "backward" in graph.extra:
        print(graph.extra["backward"].format(), file=sys.stderr)


def run_passes(graph: Graph, passes: list[tuple[str, Callable[[Graph], Graph]]]) -> Graph:
    """Runs ``passes`` in order, verifying (and with JITGRAD_DEBUG dumping) after each."""
    debug = _debug()
    for name, fn in passes:
        graph = fn(graph)
        graph.verify()
        if "backward" in graph.extra:
            graph.extra["backward"].verify()
        if debug:
            _dump(name, graph)
    return graph


def compile_graphs(traced: Graph, wrt: list[bool] | None) -> tuple[Graph, Graph | None]:
    """(forward, backward) for a traced graph; no backward when ``wrt`` is None."""
    if _debug():
        _dump("trace", traced)
    traced.verify()
    fwd = run_passes(traced, FORWARD_PASSES)
    if wrt is None:
        return fwd, None
    fwd = run_passes(fwd, [("vjp", lambda g: vjp(g, wrt)), ("partition", partition)])
    bwd = fwd.extra["backward"]
    bwd = run_passes(bwd, [("cse", cse), ("simplify", simplify), ("dce", dce)])
    fwd.extra["backward"] = bwd
    return fwd, bwd
