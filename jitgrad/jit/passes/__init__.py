"""The pass pipeline: every stage from a traced graph to a backend's kernels, in one list.

``PIPELINE`` is that list. Each ``Stage`` is a pure function of a ``Program`` (the forward
graph; after ``vjp`` also the joint graph; after ``partition`` the backward graph) and of the
``Target`` one compilation asks for (which inputs to differentiate, and the fusing backend's
rules, if any). A stage whose condition does not hold for the target is skipped: without an
input that requires grad there is no ``vjp``; the interpreter backend fuses nothing.

    dce, cse, simplify, dce                      the forward
    vjp, partition, recompute                    the backward is derived and split off
    backward cse, backward simplify, backward dce
    index_maps, fuse, schedule                   fusing backends (numba): both graphs

With ``JITGRAD_DEBUG=1`` the program is verified and printed to stderr after every stage;
``JITGRAD_VERIFY=1`` (set by the test suite) verifies without printing.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from dataclasses import dataclass

from ... import _config
from ..._ir import Eqn, Graph
from .cse import cse
from .dce import dce
from .fuse import fuse
from .index_maps import push_index_maps
from .partition import partition
from .recompute import recompute
from .schedule import schedule
from .simplify import simplify
from .vjp import Joint, vjp

__all__ = ["PIPELINE", "Joint", "Program", "Stage", "Target", "compile_program", "cse", "dce",
           "fuse", "partition", "push_index_maps", "recompute", "run", "schedule", "simplify",
           "vjp"]


@dataclass(frozen=True)
class Target:
    """What one compilation asks of the pipeline."""

    wrt: tuple[bool, ...] | None = None  # the inputs to differentiate; None: no backward
    recomputable: Callable[[Eqn], bool] | None = None  # cheaper to recompute than to save
    fusible: Callable[[Eqn], bool] | None = None  # what a fusing backend puts in kernels


@dataclass(frozen=True)
class Program:
    """What flows through the pipeline."""

    forward: Graph
    joint: Joint | None = None  # from vjp until partition splits it
    backward: Graph | None = None
    tangent_slots: tuple[int, ...] = ()  # the forward outputs the backward takes tangents for

    def graphs(self) -> list[Graph]:
        if self.joint is not None:
            return [self.joint.graph]
        return [self.forward] + ([self.backward] if self.backward is not None else [])


@dataclass(frozen=True)
class Stage:
    """One named stage: ``run(program, target)`` if ``when(target)``."""

    name: str
    run: Callable[[Program, Target], Program]
    when: Callable[[Target], bool] = lambda target: True


def _forward(fn: Callable[[Graph], Graph]) -> Callable[[Program, Target], Program]:
    return lambda p, t: dataclasses.replace(p, forward=fn(p.forward))


def _backward(fn: Callable[[Graph], Graph]) -> Callable[[Program, Target], Program]:
    return lambda p, t: dataclasses.replace(p, backward=fn(p.backward))


def _each(fn: Callable[[Graph, Target], Graph]) -> Callable[[Program, Target], Program]:
    def run_on_each(p: Program, t: Target) -> Program:
        bwd = fn(p.backward, t) if p.backward is not None else None
        return dataclasses.replace(p, forward=fn(p.forward, t), backward=bwd)
    return run_on_each


def _vjp(p: Program, t: Target) -> Program:
    return dataclasses.replace(p, joint=vjp(p.forward, list(t.wrt)))


def _partition(p: Program, t: Target) -> Program:
    fwd, bwd = partition(p.joint)
    return Program(fwd, None, bwd, tuple(p.joint.tangent_slots))


def _recompute(p: Program, t: Target) -> Program:
    fwd, bwd = recompute(p.forward, p.backward, t.recomputable)
    return dataclasses.replace(p, forward=fwd, backward=bwd)


def _differentiates(t: Target) -> bool:
    return t.wrt is not None


def _recomputes(t: Target) -> bool:
    return t.wrt is not None and t.recomputable is not None


def _fuses(t: Target) -> bool:
    return t.fusible is not None


PIPELINE: list[Stage] = [
    Stage("dce", _forward(dce)),
    Stage("cse", _forward(cse)),
    Stage("simplify", _forward(simplify)),
    Stage("dce", _forward(dce)),
    Stage("vjp", _vjp, _differentiates),
    Stage("partition", _partition, _differentiates),
    Stage("recompute", _recompute, _recomputes),
    Stage("backward cse", _backward(cse), _differentiates),
    Stage("backward simplify", _backward(simplify), _differentiates),
    Stage("backward dce", _backward(dce), _differentiates),
    Stage("index_maps", _each(lambda g, t: push_index_maps(g, t.recomputable or _never,
                                                           t.fusible)), _fuses),
    Stage("fuse", _each(lambda g, t: fuse(g, t.fusible)), _fuses),
    Stage("schedule", _each(lambda g, t: schedule(g)), _fuses),
]


def _never(e: Eqn) -> bool:
    return False


def debug_enabled() -> bool:
    """Whether JITGRAD_DEBUG asks for a dump of the program after each stage."""
    return _config.debug()


def verify_enabled() -> bool:
    """Whether every stage's result is checked with ``Graph.verify()``: with JITGRAD_DEBUG or
    JITGRAD_VERIFY set (the test suite sets the latter). Users' calls skip it: it re-derives
    every equation's type, a large share of tracing time on long programs."""
    return _config.verify()


def dump(name: str, program: Program | Graph) -> None:
    """Prints the program (every graph it holds) after stage ``name`` on stderr."""
    print(f"--- jitgrad.jit: after {name} ---", file=sys.stderr)
    graphs = program.graphs() if isinstance(program, Program) else [program]
    for g in graphs:
        print(g.format(), file=sys.stderr)


def run(program: Program, target: Target, stages: list[Stage] | None = None) -> Program:
    """Runs the ``stages`` (default: ``PIPELINE``) that apply to ``target``, in order,
    verifying (and with JITGRAD_DEBUG dumping) after each."""
    debug, check = debug_enabled(), verify_enabled()
    if debug:
        dump("trace", program)
    if check:
        for g in program.graphs():
            g.verify()
    for stage in PIPELINE if stages is None else stages:
        if not stage.when(target):
            continue
        program = stage.run(program, target)
        if check:
            for g in program.graphs():
                g.verify()
        if debug:
            dump(stage.name, program)
    return program


def compile_program(traced: Graph, target: Target) -> Program:
    """The traced graph through the whole pipeline for ``target``."""
    return run(Program(traced), target)
