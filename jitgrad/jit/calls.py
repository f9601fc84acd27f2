"""Running a compiled entry of a jit function: one call (``run``: the compiled forward on the
arguments' arrays, the alias checks that keep outputs from sharing memory with inputs,
constants or each other, written-back mutations) and the autograd node its outputs share
(``CompiledFunctionBackward``: the compiled backward, or under ``create_graph=True`` the
backward graph through eager ops). ``lean_runner`` is a call without the per-call checks, for
entries that provably need none."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._np_errors import quiet, restore
from ..autograd.node import FREED, Node, _edge, check_version
from ..ops import registry
from ..ops.registry import state
from ..tensor import _make
from . import cache
from ._memory import root_of, shares_any, writable_in_place
from .passes.fuse import KERNEL_OP


class CompiledFunctionBackward(Node):
    """The backward of one call of a jit function: runs its compiled backward program."""

    __slots__ = ("_entry", "_inputs", "_residuals", "_checks", "_versions", "_freed",
                 "_all_edges")

    def __init__(self, entry: Any, inputs: list, residuals: list, checks: list) -> None:
        super().__init__(tuple(_edge(t) for t in inputs))
        self._entry = entry
        self._inputs = inputs
        self._residuals = residuals
        self._checks = checks  # (input, version) for inputs the residuals alias
        self._versions: list = []  # every input's version, for the create_graph recompute
        self._freed = False
        self._all_edges = None not in self._next and len(self._next) == len(entry.bwd.outvars)

    @property
    def n_outputs(self) -> int:
        return self._entry.n_slots

    def _output_meta(self, i: int) -> registry.Meta:
        return self._entry.fwd.outvars[i].meta

    def apply(self, grad_outputs: list) -> tuple:
        from ..backends.interpreter import run_eager
        from ..ops.creation import zeros

        if self._freed:
            raise RuntimeError(FREED)
        for t, version in self._checks:
            check_version(t._vc, version, t._data, t._dtype, "CompiledFunction")
        e = self._entry
        tangents = []
        for s in e.tangent_slots:
            m = self._output_meta(s)
            g = grad_outputs[s] if s < len(grad_outputs) else None
            if g is None:
                g = zeros(m.shape, dtype=m.dtype)
            elif g.dtype is not m.dtype:
                g = g.to(m.dtype)
            tangents.append(g)
        if state.grad_enabled:  # create_graph=True: differentiable backward through eager ops
            if e.mutations:
                raise RuntimeError(
                    "create_graph=True through a jit function that writes into its inputs in "
                    "place is not supported; return the new values instead")
            for t, version in zip(self._inputs, self._versions):
                check_version(t._vc, version, t._data, t._dtype, "CompiledFunction")
            saved = e.fwd.outvars[e.n_slots:]
            known = {v: _make(a, v.dtype) for v, a in zip(saved, self._residuals)
                     if v in e.rng_vars}
            residuals = run_eager(e.fwd, self._inputs, known)[e.n_slots:]
            grads = run_eager(e.bwd, residuals + tangents)
        else:
            arrays = quietly(e.bwd_run, list(self._residuals) + [g._data for g in tangents])
            grads = [None if a is None else _make(a, v.dtype)
                     for a, v in zip(arrays, e.bwd.outvars)]
        edges = getattr(self, "_next", None) or self.next_functions
        return tuple(g if edge is not None and edge[0] is not None else None
                     for g, edge in zip(grads, edges))

    def apply_arrays(self, grad_outputs: list, release: bool) -> list:
        """The engine's lane when nothing records: the compiled backward on plain arrays."""
        if self._freed:
            raise RuntimeError(FREED)
        for t, version in self._checks:
            check_version(t._vc, version, t._data, t._dtype, "CompiledFunction")
        arguments = list(self._residuals)
        n = len(grad_outputs)
        for s, shape, dt in self._entry.tangent_types:
            g = grad_outputs[s] if s < n else None
            if g is None:
                g = np.zeros(shape, dt)
            elif g.dtype is not dt and g.dtype != dt:
                g = g.astype(dt)
            arguments.append(g)
        arrays = quietly(self._entry.bwd_run, arguments)
        if release:
            self._release()
        if self._all_edges:
            return arrays
        return [None if edge is None else a for a, edge in zip(arrays, self._next)]

    def _release(self) -> None:
        self._freed = True
        self._residuals = None
        self._inputs = None


def quietly(program: Any, arrays: list) -> Any:
    """``program(arrays)`` with NumPy's floating-point warnings off (as eager ops run)."""
    token = quiet()
    try:
        return program(arrays)
    finally:
        restore(token)


def lean_runner(e: Any) -> Any:
    """``run(args) -> result`` for an entry whose outputs provably never alias its inputs, its
    constants or each other (each is a fresh array a kernel allocated, returned once) and whose
    residuals are fresh arrays or inputs: ``run`` without its per-call alias checks. None if
    the entry needs those checks (or writes into its inputs, or reads captured tensors)."""
    fwd = e.fwd
    final = getattr(e.fwd_run, "final", None)
    if final is None or e.implicit or e.mutations or e.after_call or \
            not getattr(e.backend, "fresh_kernel_outputs", False):
        return None
    producer = {v: q for q in fwd.eqns for v in q.outputs}
    counts: dict = {}
    for v in fwd.outvars:
        counts[v] = counts.get(v, 0) + 1

    def fresh(v: Any) -> bool:
        q = producer.get(v)
        return counts[v] == 1 and q is not None and q.op is KERNEL_OP

    n = e.n_slots
    if not all(fresh(v) for v in fwd.outvars[:n]):
        return None
    position = {v: i for i, v in enumerate(fwd.invars)}
    saved = set()  # inputs a residual is or views (their versions are checked before backward)
    for v in fwd.outvars[n:]:
        if fresh(v):
            continue
        while v in producer and producer[v].op.view:  # (views alias their first input)
            v = producer[v].inputs[0]
        if v not in position:
            return None
        saved.add(position[v])
    saved_inputs = sorted(saved)
    dtypes = [v.dtype for v in fwd.outvars[:n]]
    pack = cache.packer(e.out_spec, e.n_user)
    if e.bwd is None:
        def run(tensors: tuple) -> Any:
            outs = final(*[t._data for t in tensors])
            return pack([_make(a, dt) for a, dt in zip(outs, dtypes)])
        return run
    slots = e.tangent_slots

    def run_with_backward(tensors: tuple) -> Any:
        outs = final(*[t._data for t in tensors])
        outs_t = [_make(a, dt) for a, dt in zip(outs, dtypes)]
        if state.grad_enabled:
            node = CompiledFunctionBackward(e, list(tensors), list(outs[n:]),
                                            [(tensors[i], tensors[i]._vc[0])
                                             for i in saved_inputs])
            node._versions = [t._vc[0] for t in tensors]
            for s in slots:
                outs_t[s]._grad_fn, outs_t[s]._output_nr = node, s
        return pack(outs_t)
    return run_with_backward


def run(e: Any, tensors: list, captured: list | None = None) -> Any:
    """One call of an entry on its tensor arguments (and ``captured``, its captured tensors
    as ``_Entry.fetch`` just found them; fetched here when None)."""
    if e.implicit:
        inputs = tensors + (captured if captured is not None else
                            [ref() for ref, *_ in e.implicit])
    else:
        inputs = tensors
    arrays = [t._data for t in inputs]
    written = writable_in_place(e.donated, e.const_roots, arrays) if e.donated else ()
    outs = quietly(e.fwd_run, arrays)
    vals, res = outs[:e.n_slots], outs[e.n_slots:]
    # Outputs never alias inputs, constants, residuals or each other. Arrays whose memory
    # owners differ cannot overlap; only an output sharing an owner is compared closely.
    in_owners = [id(a) if a.base is None else id(root_of(a)) for a in arrays]
    res_owners = {id(r) if r.base is None else id(root_of(r)) for r in res}
    taken = res_owners.union(in_owners)
    if e.const_roots:
        taken |= e.const_roots
    consts = None
    for i, a in enumerate(vals):
        owner = id(a) if a.base is None else id(root_of(a))
        if owner in taken and i not in written:
            if consts is None:
                consts = [t._data for t in e.fwd.consts.values()]
            if shares_any(a, arrays) or shares_any(a, consts) or shares_any(a, res) or \
                    shares_any(a, vals[:i]):
                vals[i] = a = a.copy()
                owner = id(a)
        taken.add(owner)
    grad = e.bwd is not None and state.grad_enabled
    for idx, _ in e.mutations:
        for k, r in enumerate(res):
            if shares_any(r, [arrays[idx]]):
                res[k] = r.copy()
    n_user = e.n_user  # (the written-back mutations' values need no tensors)
    outs_t = [_make(a, v.dtype) for a, v in zip(vals[:n_user], e.fwd.outvars)]
    node = None
    if grad:
        checks = [(t, None) for t, a, owner in zip(inputs, arrays, in_owners)
                  if owner in res_owners and shares_any(a, res)]
        node = CompiledFunctionBackward(e, inputs, res, checks)
        for s in e.tangent_slots:
            if s < n_user:
                outs_t[s]._grad_fn, outs_t[s]._output_nr = node, s
    for idx, slot in e.mutations:
        t = inputs[idx]
        if slot not in written:
            np.copyto(t._data, vals[slot], casting="unsafe")
        t._vc[0] += 1
        if node is not None and slot in e.tangent_slots:
            t._grad_fn, t._output_nr = node, slot
    if node is not None:
        node._checks = [(t, t._vc[0]) for t, _ in node._checks]
        node._versions = [t._vc[0] for t in inputs]
    if state.inference:
        for t in outs_t:
            t._is_inference = True
    for fn in e.after_call:
        fn()
    if e.out_spec is cache.LEAF:  # a single tensor
        return outs_t[0]
    return cache.unflatten(e.out_spec, outs_t)
