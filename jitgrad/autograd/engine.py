"""The backward engine: micrograd's skeleton with torch's semantics on top.

1. Walk the graph from the roots and count, for each node, how many edges lead into it.
2. Pop ready nodes (all their gradients have arrived) in reverse creation order, run hooks and
   the node's backward, and route each input gradient along its edge, summing where edges meet.
3. AccumulateGrad nodes write into leaves' ``.grad``; ``autograd.grad`` captures instead.
"""

from __future__ import annotations

import heapq
import warnings
from typing import Any

import numpy as np

from ..ops.registry import state
from .node import AccumulateGrad, Node, _anomaly


def run_backward(roots: list, grad_roots: list, retain_graph: bool, create_graph: bool,
                 inputs: list | None = None, accumulate: bool = True) -> list | None:
    """Backpropagates ``grad_roots`` from ``roots`` (edges: (node, output_nr) pairs).

    With ``accumulate`` the leaves' ``.grad`` is updated (restricted to the tensors ``inputs``
    if given). Without it, the gradients flowing into ``inputs`` are returned instead
    (``autograd.grad``).
    """
    capture: dict = {}  # (node, output_nr) -> positions in `inputs`
    for i, t in enumerate(inputs or ()):
        capture.setdefault(gradient_edge(t), []).append(i)
    deps, needed = _discover([n for n, _ in roots], set(n for n, _ in capture) or None)
    buffers: dict[Node, list] = {}
    ready: list = []
    for (node, nr), g in zip(roots, grad_roots):
        if node not in needed:
            continue
        _add_to_buffer(buffers, node, nr, g)
    for node in buffers:
        if deps.get(node, 0) == 0:
            heapq.heappush(ready, (-node._seq, id(node), node))
    captured: list = [None] * len(inputs or ())
    prev = state.grad_enabled
    state.grad_enabled = create_graph
    try:
        while ready:
            node = heapq.heappop(ready)[2]
            grads = buffers.pop(node)
            _run_tensor_hooks(node, grads)
            for nr, g in enumerate(grads):
                for i in capture.get((node, nr), ()):
                    captured[i] = g
            if isinstance(node, AccumulateGrad) and not (accumulate and node in needed):
                continue
            out = _call(node, grads)
            if not retain_graph:
                node._release()
            for edge, g in zip(node.next_functions, out):
                if edge is None or g is None:
                    continue
                nxt, nr = edge
                if nxt not in needed:
                    continue
                _add_to_buffer(buffers, nxt, nr, g)
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    heapq.heappush(ready, (-nxt._seq, id(nxt), nxt))
    finally:
        state.grad_enabled = prev
    if accumulate:
        for t, g in zip(inputs or (), captured):  # backward(inputs=[non-leaf]) fills its .grad
            if t._grad_fn is not None and g is not None:
                g = g if create_graph else _copy(g)
                t._grad = g if t._grad is None else t._grad + g
        return None
    return captured


def gradient_edge(t: Any) -> tuple:
    """The (node, output_nr) through which gradients reach tensor ``t``."""
    if t._grad_fn is not None:
        return (t._grad_fn, t._output_nr)
    return (t._get_accumulator(), 0)


def _discover(root_nodes: list, targets: set | None) -> tuple[dict, set]:
    """Dependency counts for every node reachable from the roots, and the set of nodes that
    must run: all of them, or with ``targets`` only those on a path to a target."""
    deps: dict[Node, int] = {}
    seen = set(root_nodes)
    order = []
    stack = list(root_nodes)
    while stack:
        node = stack.pop()
        order.append(node)
        for edge in node.next_functions:
            if edge is None:
                continue
            nxt = edge[0]
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    if targets is None:
        return deps, seen
    needed = set()
    changed = True
    # Reverse-topological fixpoint: a node is needed if it is a target or feeds a needed node.
    for node in order:
        if node in targets:
            needed.add(node)
    while changed:
        changed = False
        for node in order:
            if node in needed:
                continue
            for edge in node.next_functions:
                if edge is not None and edge[0] in needed:
                    needed.add(node)
                    changed = True
                    break
    # Only edges between needed nodes count towards readiness.
    deps = {}
    for node in needed:
        for edge in node.next_functions:
            if edge is not None and edge[0] in needed:
                deps[edge[0]] = deps.get(edge[0], 0) + 1
    return deps, needed


def _add_to_buffer(buffers: dict, node: Node, nr: int, g: Any) -> None:
    buf = buffers.get(node)
    if buf is None:
        buf = buffers[node] = [None] * node.n_outputs
    buf[nr] = g if buf[nr] is None else buf[nr] + g


def _run_tensor_hooks(node: Node, grads: list) -> None:
    if node._tensor_hooks is None and node._retained is None \
            and not (isinstance(node, AccumulateGrad) and node.variable._hooks):
        return
    for nr in range(len(grads)):
        for hook in node._tensor_pre_hooks(nr):
            if grads[nr] is None:
                continue
            new = hook(grads[nr])
            if new is not None:
                grads[nr] = _check_hook_result(new, grads[nr])
        ref = node._retained.get(nr) if node._retained else None
        tensor = ref() if ref is not None else None
        if tensor is not None and grads[nr] is not None:
            g = grads[nr]
            if tensor._grad is None:
                tensor._grad = g if state.grad_enabled else _copy(g)
            else:
                tensor._grad = tensor._grad + g


def _copy(g: Any) -> Any:
    t = g.detach()
    t._data = np.array(g._data, copy=True)
    t._vc = [0]
    return t


def _check_hook_result(new: Any, old: Any) -> Any:
    from ..tensor import Tensor

    if not isinstance(new, Tensor):
        raise TypeError(f"hook should return a Tensor or None, but got {type(new).__name__}")
    if new.shape != old.shape:
        raise RuntimeError(
            f"hook 'hook' has changed the size of value from {list(old.shape)} to "
            f"{list(new.shape)}")
    return new


def _call(node: Node, grads: list) -> tuple:
    if node._pre_hooks:
        for hook in list(node._pre_hooks.values()):
            new = hook(tuple(grads))
            if new is not None:
                grads = list(new)
    try:
        out = node.apply(grads)
    except Exception:
        if _anomaly.enabled and node._anomaly_trace:
            warnings.warn(
                f"Error detected in {node.name()}. Traceback of forward call that caused the "
                "error:\n" + "".join(node._anomaly_trace), UserWarning, stacklevel=2)
        raise
    if node._post_hooks:
        for hook in list(node._post_hooks.values()):
            new = hook(tuple(out), tuple(grads))
            if new is not None:
                out = tuple(new)
    if _anomaly.enabled and _anomaly.check_nan:
        for i, g in enumerate(out):
            if g is not None and np.isnan(g._data).any():
                if node._anomaly_trace:
                    warnings.warn(
                        f"Error detected in {node.name()}. Traceback of forward call that caused "
                        "the error:\n" + "".join(node._anomaly_trace), UserWarning, stacklevel=2)
                raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th "
                                   "output.")
    return out
