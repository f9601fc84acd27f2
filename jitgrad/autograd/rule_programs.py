"""Rule programs: an op's VJP rule, traced once and run on plain arrays by the eager engine.

A backward without ``create_graph`` records nothing, so running a VJP rule through the
dispatcher (a tensor per intermediate, a dispatch per op) is pure overhead. For a recorded op
whose signature is *uniform* (every argument a tensor with the output's shape and dtype, no
params: ``h * w``, ``h + w``, ``tanh(h)`` on same-shaped tensors), the engine instead traces
the op's own rule, through the same ``run_vjp`` and ``fit_grad`` the JIT uses, into a
small graph (with the tracer the JIT's is built on, ``_tracer``), and renders that as
straight-line NumPy (``_pycode``). The rule stays the
single source; this only changes how it is executed.

A program depends only on ``(op, key)``, ``key = (needs mask, dtype, shape)``: which inputs
need a gradient, and the one dtype and shape of the signature. It is built the second time a
key is seen (a one-off backward does not pay for tracing) and kept per op; a rule that cannot
be traced (it reads values) is remembered as such and runs through the dispatcher as before.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from .._pycode import compile_function
from .._tracer import Trace, active, graph_of
from ..ops import registry
from ..ops.vjp_apply import SIXTEEN_BIT, run_vjp
from .node import SavedTensor

MAX_PROGRAMS_PER_OP = 256  # a shape-varying workload must not grow the caches without bound
_UNTRACEABLE = False
# op -> {node key -> sightings (int), compiled program, or _UNTRACEABLE}: the engine's cache,
# kept here (an ``OpDef`` is a definition, not runtime state)
PROGRAMS: defaultdict = defaultdict(dict)


def lookup(node: Any, key: tuple) -> Any:
    """The program for ``node``'s op and ``key``, or None (not yet worth building, or the rule
    cannot be traced)."""
    return _lookup(PROGRAMS[node.op], node, key, build)


def _lookup(programs: dict, node: Any, key: tuple, builder: Any) -> Any:
    """``programs[key]``: counted on first sight, built by ``builder`` on the second."""
    found = programs.get(key)
    if found is None:  # first sight: count it
        if len(programs) >= MAX_PROGRAMS_PER_OP:
            programs.clear()
        programs[key] = 1
        return None
    if found is _UNTRACEABLE:
        return None
    if type(found) is int:
        try:
            found = builder(node, key)
        except Exception:  # noqa: BLE001 - e.g. the rule reads a value: not traceable
            found = _UNTRACEABLE
        programs[key] = found
        return found or None
    return found


def build(node: Any, key: tuple):
    """Traces ``node.op``'s VJP rule for ``key`` and compiles it to ``f(node, grad, release) ->
    grads`` (one per input, None where not needed) for a ``UniformNode``: it unpacks (and
    version-checks) the node's saved values, frees them with ``release``, and runs the rule's
    NumPy code."""
    from .node import FREED

    op = node.op
    mask, dt, shape = key
    n = len(node._needs)
    needs = tuple(bool(mask >> i & 1) for i in range(n))
    kept = [node._inputs is not None and node._inputs[i] is not None for i in range(n)]
    trace = Trace()
    trace.rule_program = True
    with active(trace):
        grad = trace.new_input(shape, dt, hint="grad")
        inputs = tuple(trace.new_input(shape, dt, hint="saved") if k else registry.Meta(shape, dt)
                       for k in kept)
        ans = trace.new_input(shape, dt, hint="result") if op.save_output else None
        grads = run_vjp(op, (grad,), ans, inputs, {}, needs)
    outvars = [trace.var_of(g) if g is not None else None for g in grads]
    graph = graph_of(trace, outvars, f"{op.name}_vjp")
    # The prologue binds a0 (the gradient), then each saved input's array, then the result's;
    # a modified value goes through the node's own checks, which raise torch's error.
    prologue = ["if node._freed:", "    raise RuntimeError(FREED)", "a0 = g"]
    k = 1
    if any(kept):
        prologue += ["kept = node._inputs", "versions = node._versions"]
    for i in range(n):
        if kept[i]:
            prologue += [f"t = kept[{i}]",
                         f"if t._vc[0] != versions[{i}]:", f"    node.saved_input({i})",
                         f"a{k} = t._data"]
            k += 1
    if op.save_output:
        prologue += [f"a{k}, vc, version = node._out",
                     "if vc[0] != version:", "    node.saved_output()"]
    if node._saved:
        prologue += ["if release:", "    node._freed = True", "    node._inputs = node._out = None"]
    return compile_function(graph, f"{op.name}_vjp", "node, g, release", tuple(prologue),
                            {"FREED": FREED})


# ---------------------------------------------------------------- programs of general nodes
#
# An ``OpNode`` (any op: params, broadcasting, literals, movement, reductions, matmul) with one
# output gets a program too. Its key describes everything its rule can see: which inputs need a
# gradient, each argument (a saved tensor's or a ``Meta``'s shape and dtype, a literal's type
# and value), the params (type-tagged, as ``1``, ``1.0``, ``True`` and ``-0.0`` differ) and the
# output's shape and dtype. A node whose key cannot be formed (a saved-tensor hook, a tensor or
# array among its params or literals, several outputs) runs through the dispatcher as before.

GENERAL_PROGRAMS: defaultdict = defaultdict(dict)  # op -> {key -> sightings, program, False}


class _NoKeyError(Exception):
    """A node's arguments or params have no program key."""


_ATOMS = frozenset((int, str, type(None)))


def _frozen(v: Any) -> Any:
    t = type(v)
    if t in _ATOMS:
        return v
    if t is tuple:
        return tuple(_frozen(x) for x in v)
    if t is float:
        return (float, v.hex())  # (-0.0 and 0.0 compare equal)
    if t is bool:
        return (bool, v)
    if t is complex:
        return (complex, v.real.hex(), v.imag.hex())
    if isinstance(v, registry.Tensor) or not getattr(t, "__hash__", None):
        raise _NoKeyError  # (a tensor would be pinned by the cache; unhashable values have no key)
    return (t, v)


def general_key(node: Any, g: Any) -> tuple | None:
    """The program key of ``node`` (an ``OpNode``) for the gradient array ``g``, or None."""
    meta = node._out_meta
    if type(meta) is not registry.Meta or type(g) is not np.ndarray or g.shape != meta.shape \
            or g.dtype != meta.dtype.np:  # (a sparse gradient, or one of another type)
        return None
    if node.op.opmath_backward and meta.dtype in SIXTEEN_BIT:  # (run_vjp rounds once)
        return None
    described = []
    mask = 0
    bit = 1
    for e in node._needs:
        if e is not None:
            mask |= bit
        bit <<= 1
    try:
        for a in node._inputs:
            t = type(a)
            if t is SavedTensor:
                if a._unpack is not None or a._vc is None:
                    return None
                data = a._value._data
                if type(data) is not np.ndarray:  # (a sparse or meta tensor)
                    return None
                described.append((0, data.shape, a._dtype))
            elif t is registry.Meta:
                described.append((1, a.shape, a.dtype))
            else:
                described.append(_frozen(a))
        params = node.params
        frozen = tuple((k, _frozen(v)) for k, v in params.items()) if params else ()
    except _NoKeyError:
        return None
    out = node._out
    if out is not None and (type(out) is not SavedTensor or out._unpack is not None
                            or type(out._value) is not np.ndarray):
        return None
    return (mask, tuple(described), frozen, meta.shape, meta.dtype, out is not None)


def general_lookup(node: Any, key: tuple) -> Any:
    """The program for ``node`` and ``key`` (see ``lookup``), or None."""
    return _lookup(GENERAL_PROGRAMS[node.op], node, key, build_general)


def build_general(node: Any, key: tuple):
    """Traces ``node.op``'s VJP rule for ``key`` into ``f(node, g, release) -> grads``: the
    prologue version-checks the saved values (``SavedTensor.unpack`` raises torch's error) and
    frees them with ``release``."""
    from .node import FREED

    op = node.op
    mask, described, _, out_shape, out_dtype, has_out = key
    needs = tuple(bool(mask >> i & 1) for i in range(len(node._needs)))
    trace = Trace()
    trace.rule_program = True
    prologue = ["if node._freed:", "    raise RuntimeError(FREED)", "a0 = g",
                "kept = node._inputs"]
    k = 1
    with active(trace):
        grad = trace.new_input(out_shape, out_dtype, hint="grad")
        inputs = []
        for i, (a, d) in enumerate(zip(node._inputs, described)):
            if type(a) is SavedTensor:
                inputs.append(trace.new_input(d[1], d[2], hint="saved"))
                prologue += [f"s = kept[{i}]", "if s._vc[0] != s._version:",
                             "    s.unpack(node)", f"a{k} = s._value._data"]
                k += 1
            else:  # a Meta or a literal: the rule sees it as eager mode does
                inputs.append(a)
        ans = None
        if has_out:
            ans = trace.new_input(out_shape, out_dtype, hint="result")
            prologue += ["s = node._out", "if s._vc[0] != s._version:", "    s.unpack(node)",
                         f"a{k} = s._value"]
        grads = run_vjp(op, (grad,), ans, tuple(inputs), node.params, needs)
    outvars = [trace.var_of(g) if g is not None else None for g in grads]
    graph = graph_of(trace, outvars, f"{op.name}_vjp")
    prologue += ["if release:", "    node._release()"]
    return compile_function(graph, f"{op.name}_vjp", "node, g, release", tuple(prologue),
                            {"FREED": FREED})
