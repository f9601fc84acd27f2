"""The pass pipeline: a named, linear list of pure ``Graph -> Graph`` functions.

``trace -> dce -> cse -> simplify -> dce -> vjp -> partition (-> recompute) -> (cse ->
simplify -> dce on the backward)``, then a fusing backend's ``fuse``. With ``JITGRAD_DEBUG=1``
each pass's result is verified and printed to stderr; ``JITGRAD_VERIFY=1`` (set by the test
suite) verifies without printing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from ... import _config
from ..ir import Graph
from .cse import cse
from .dce import dce
from .fuse import fuse
from .partition import partition
from .recompute import recompute
from .simplify import simplify
from .vjp import vjp

__all__ = ["FORWARD_PASSES", "compile_graphs", "cse", "dce", "fuse", "partition", "recompute",
           "run_passes", "simplify", "vjp"]

FORWARD_PASSES: list[tuple[str, Callable[[Graph], Graph]]] = [
    ("dce", dce), ("cse", cse), ("simplify", simplify), ("dce", dce)]


def debug_enabled() -> bool:
    """Whether JITGRAD_DEBUG asks for a dump of the graph after each pass."""
    return _config.debug()


def verify_enabled() -> bool:
    """Whether every pass's result is checked with ``Graph.verify()``: with JITGRAD_DEBUG or
    JITGRAD_VERIFY set (the test suite sets the latter). Users' calls skip it: it re-derives
    every equation's type, a large share of tracing time on long programs."""
    return _config.verify()


def dump(name: str, graph: Graph) -> None:
    """Prints ``graph`` (and its backward, if any) after pass ``name`` on stderr."""
    print(f"--- jitgrad.jit: after {name} ---", file=sys.stderr)
    print(graph.format(), file=sys.stderr)
    if "backward" in graph.extra:
        print(graph.extra["backward"].format(), file=sys.stderr)


def run_passes(graph: Graph, passes: list[tuple[str, Callable[[Graph], Graph]]]) -> Graph:
    """Runs ``passes`` in order, verifying (and with JITGRAD_DEBUG dumping) after each."""
    debug, check = debug_enabled(), verify_enabled()
    for name, fn in passes:
        graph = fn(graph)
        if check:
            graph.verify()
            if "backward" in graph.extra:
                graph.extra["backward"].verify()
        if debug:
            dump(name, graph)
    return graph


def compile_graphs(traced: Graph, wrt: list[bool] | None,
                   cheap: Callable | None = None) -> tuple[Graph, Graph | None]:
    """(forward, backward) for a traced graph; no backward when ``wrt`` is None.

    ``cheap(eqn)``, from a fusing backend, names the equations worth recomputing in the
    backward rather than saving (``recompute``); None saves what the rules read.
    """
    if debug_enabled():
        dump("trace", traced)
    if verify_enabled():
        traced.verify()
    fwd = run_passes(traced, FORWARD_PASSES)
    if wrt is None:
        return fwd, None
    passes = [("vjp", lambda g: vjp(g, wrt)), ("partition", partition)]
    if cheap is not None:
        passes.append(("recompute", lambda g: recompute(g, cheap)))
    fwd = run_passes(fwd, passes)
    bwd = fwd.extra["backward"]
    bwd = run_passes(bwd, [("cse", cse), ("simplify", simplify), ("dce", dce)])
    fwd.extra["backward"] = bwd
    return fwd, bwd
