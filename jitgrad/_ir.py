"""The IR: a flat, typed list of equations in A-normal form (like a jaxpr).

A ``Graph`` has input ``Var``s, constants (tensors whose data is read when the graph runs),
equations (``Eqn``: one primitive ``OpDef`` applied to vars and Python literals, with its
params, output vars and the user's source line) and outputs. Trailing outputs of a forward
graph may be *saved* values (residuals) that the backward graph consumes; the printer shows
them as ``saved:``. ``Graph.verify()`` checks use-before-definition and re-derives every
equation's output types with the op's own shape/dtype rule.

The IR sits below the autograd graph, not in ``jit/``: the jit builds its programs in it, and
so do the eager engine's rule programs (``autograd/rule_programs.py``).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from . import dtypes
from .dtypes import type_str
from .ops import registry

_ids = itertools.count(1)

class IRError(RuntimeError):
    """A malformed graph (raised by ``Graph.verify``)."""


class Var:
    """A typed SSA value. ``hint`` names graph inputs in print-outs (primals, tangents, ...)."""

    __slots__ = ("shape", "dtype", "hint", "id")

    def __init__(self, shape: tuple, dtype: dtypes.dtype, hint: str = "t") -> None:
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype
        self.hint = hint
        self.id = next(_ids)

    @property
    def meta(self) -> registry.Meta:
        return registry.Meta(self.shape, self.dtype)

    def __repr__(self) -> str:
        return f"Var#{self.id}({type_str(self.shape, self.dtype)})"


class Eqn:
    """``outputs = op(*inputs, **params)``; inputs are ``Var``s or Python literals."""

    __slots__ = ("op", "inputs", "params", "outputs", "source", "nograd")

    def __init__(self, op: registry.OpDef, inputs: list, params: dict, outputs: list,
                 source: str = "", nograd: bool = False) -> None:
        self.op = op
        self.inputs = list(inputs)
        self.params = dict(params)
        self.outputs = list(outputs)
        self.source = source
        self.nograd = nograd  # recorded under no_grad(): no gradient flows through it

    def in_vars(self) -> list[Var]:
        return [v for v in self.inputs if isinstance(v, Var)]

    def __repr__(self) -> str:
        return f"Eqn({self.op.name}, {self.inputs} -> {self.outputs})"


class Graph:
    """A program: inputs, constants, equations, outputs (the last ``n_saved`` are residuals)."""

    def __init__(self, invars: list[Var], outvars: list, eqns: list[Eqn],
                 consts: dict | None = None, name: str = "forward", n_saved: int = 0) -> None:
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.eqns = list(eqns)
        self.consts: dict[Var, Any] = dict(consts or {})  # Var -> Tensor (read when run)
        self.name = name
        self.n_saved = n_saved

    def replace(self, **changes: Any) -> Graph:
        """A copy with some fields replaced (passes are pure functions)."""
        kw = dict(invars=self.invars, outvars=self.outvars, eqns=self.eqns, consts=self.consts,
                  name=self.name, n_saved=self.n_saved)
        kw.update(changes)
        return Graph(**kw)

    # ------------------------------------------------------------------ checking
    def verify(self) -> Graph:
        """Checks definitions before uses, single assignment, and every equation's types."""
        defined: set[Var] = set()
        for v in list(self.invars) + list(self.consts):
            if v in defined:
                raise IRError(f"{self.name}: {v} is defined twice")
            defined.add(v)
        for k, e in enumerate(self.eqns):
            for v in e.in_vars():
                if v not in defined:
                    raise IRError(f"{self.name}: equation {k} ({e.op.name}) uses {v} before it "
                                  "is defined")
            args = [v.meta if isinstance(v, Var) else v for v in e.inputs]
            shapes, dts = e.op.meta(*args, **e.params)
            if e.op.n_outputs == 1:
                shapes, dts = (shapes,), (dts,)
            elif not isinstance(dts, tuple):
                dts = (dts,) * len(shapes)
            if len(shapes) != len(e.outputs):
                raise IRError(f"{self.name}: equation {k} ({e.op.name}) has {len(e.outputs)} "
                              f"outputs, its op gives {len(shapes)}")
            for v, s, d in zip(e.outputs, shapes, dts):
                if v.shape != tuple(s) or v.dtype is not d:
                    raise IRError(
                        f"{self.name}: equation {k} ({e.op.name}) declares "
                        f"{type_str(v.shape, v.dtype)}, its op gives {type_str(tuple(s), d)}")
                if v in defined:
                    raise IRError(f"{self.name}: {v} is defined twice")
                defined.add(v)
        for v in self.outvars:
            if isinstance(v, Var) and v not in defined:
                raise IRError(f"{self.name}: output {v} is never defined")
        if not 0 <= self.n_saved <= len(self.outvars):
            raise IRError(f"{self.name}: n_saved={self.n_saved} out of range")
        for e in self.eqns:  # (cond's branches, while_loop's functions: closed sub-graphs)
            for g in subgraphs(e):
                g.verify()
        return self

    # ------------------------------------------------------------------ printing
    def names(self, start: dict | None = None) -> dict[Var, str]:
        """Printed names: inputs by their hint (``primals_1``), constants ``c1``, residuals
        ``saved_1`` (the same in the forward, the backward and the kernel listings), others
        ``t1``."""
        names = dict(start or {})
        counts: dict[str, int] = {}
        for n in names.values():
            m = re.fullmatch(r"(.*?)_?(\d+)", n)
            if m:
                counts[m.group(1)] = max(counts.get(m.group(1), 0), int(m.group(2)))

        def fresh(base: str, sep: str = "_") -> str:
            counts[base] = counts.get(base, 0) + 1
            return f"{base}{sep}{counts[base]}"

        for v in self.invars:
            if v not in names:
                names[v] = fresh(v.hint)
        for v in self.consts:
            if v not in names:
                names[v] = fresh("c", "")
        for e in _flat(self.eqns):
            for v in e.outputs:
                if v not in names:  # (a residual keeps its "saved" name in every listing)
                    names[v] = fresh("t", "") if v.hint == "t" else fresh(v.hint)
        return names

    def format(self, source: bool = True, names: dict | None = None) -> str:
        """The program as text, jaxpr style, with each equation's source line if ``source``."""
        names = self.names(names)

        def arg(v: Any) -> str:
            return names[v] if isinstance(v, Var) else repr(v)

        header = ", ".join(f"{names[v]}: {type_str(v.shape, v.dtype)}" for v in self.invars)
        lines = [f"def {self.name}({header}):"]
        for v in self.consts:
            lines.append(f"  {names[v]}: {type_str(v.shape, v.dtype)} = const")
        for e in self.eqns:
            lines.append(_eqn_line(e, names, arg, source, "  "))
            body = e.params.get("body") if e.op.kind == KERNEL else None
            if body is not None:  # a fused kernel: its equations, indented below it
                lines += [_eqn_line(q, names, arg, source, "      ") for q in body.eqns]
            for g in subgraphs(e, printed=True):  # control flow: sub-graphs, indented
                lines += ["      " + line for line in g.format(source).splitlines()]
        n_out = len(self.outvars) - self.n_saved
        outs = ", ".join(arg(v) if v is not None else "None" for v in self.outvars[:n_out])
        ret = f"  return ({outs}{',' if n_out == 1 else ''})"
        if self.n_saved:
            saved = ", ".join(arg(v) for v in self.outvars[n_out:])
            ret += f"  saved: ({saved}{',' if self.n_saved == 1 else ''})"
        lines.append(ret)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()

    def __repr__(self) -> str:
        return f"<Graph {self.name}: {len(self.eqns)} equations>"


KERNEL = "kernel"  # the kind of a fused kernel's op (jit.passes.fuse)


def _flat(eqns: list) -> list:
    """Equations with each kernel's body equations in its place (then the kernel itself), so
    values are numbered in the order they are computed."""
    out = []
    for e in eqns:
        if e.op.kind == KERNEL:
            out += e.params["body"].eqns
        out.append(e)
    return out


def _eqn_line(e: Eqn, names: dict, arg, source: bool, indent: str) -> str:
    outs = ", ".join(f"{names[v]}: {type_str(v.shape, v.dtype)}" for v in e.outputs)
    if e.op.kind == KERNEL:
        body = e.params["body"]
        text = f"{indent}{outs} = kernel[{e.params['name']}] " + \
            ", ".join(arg(v) for v in e.inputs)
        text += f"  # {len(body.eqns)} ops, {len(e.outputs)} outputs"
        return text
    text = f"{indent}{outs} = {e.op.name}"
    ins = ", ".join(arg(v) for v in e.inputs)
    if ins:
        text += " " + ins
    if e.params:
        text += " " + " ".join(f"{k}={_param(p)}" for k, p in e.params.items())
    if e.nograd:
        text += "  [no_grad]"
    if source and e.source:
        text = f"{text:<60}  # {e.source}"
    return text


def subgraphs(e: Eqn, printed: bool = False) -> list[Graph]:
    """The sub-graphs an equation holds in its params (a ``cond``'s branches, a
    ``while_loop``'s functions), in order; none for other equations. ``printed``: those a
    listing shows (a ``cond``'s backward branches, ``bwd``, show in the backward listing)."""
    if e.op.kind == KERNEL:
        return []
    out = []
    for k, p in e.params.items():
        if printed and k == "bwd":
            continue
        if isinstance(p, Graph):
            out.append(p)
        elif isinstance(p, tuple) and p and all(isinstance(g, Graph) for g in p):
            out.extend(p)
    return out


def _param(p: Any) -> str:
    if isinstance(p, dtypes.dtype):
        return dtypes.short_name(p)
    if isinstance(p, Graph):
        return p.name
    if isinstance(p, tuple) and p and all(isinstance(g, Graph) for g in p):
        return "(" + ", ".join(g.name for g in p) + ")"
    return repr(p)
