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
from ..tensor import Tensor, _refresh_view
from .node import AccumulateGrad, Node, _anomaly


_new = object.__new__


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
    targets = set(n for n, _ in capture) or None
    deps, needed = _discover([n for n, _ in roots], targets)
    buffers: dict[Node, list] = {}
    ready: list = []  # a heap of (-sequence number, node): the newest node runs first
    for (node, nr), g in zip(roots, grad_roots):
        if node not in needed:
            continue
        _add_to_buffer(buffers, node, nr, g)
    for node in buffers:
        if deps.get(node, 0) == 0:
            heapq.heappush(ready, (-node._seq, node))
    captured: list = [None] * len(inputs or ())
    prev = state.grad_enabled
    state.grad_enabled = create_graph
    anomaly = _anomaly.enabled
    restrict = targets is not None  # only nodes on a path to an input run
    heappop, heappush = heapq.heappop, heapq.heappush
    try:
        while ready:
            node = heappop(ready)[1]
            grads = buffers.pop(node)
            hooked = node._hooked
            if hooked or type(node) is AccumulateGrad:
                _run_tensor_hooks(node, grads)
                if isinstance(node, AccumulateGrad) and not (accumulate and node in needed):
                    _capture(capture, captured, node, grads)
                    continue
            if capture:
                _capture(capture, captured, node, grads)
            if hooked or anomaly:
                out = _call(node, grads)
            else:
                out = node.apply(grads)
            if not retain_graph:
                node._release()
            for edge, g in zip(node._next, out):
                if edge is None or g is None:
                    continue
                nxt, nr = edge
                if restrict and nxt not in needed:
                    continue
                buf = buffers.get(nxt)
                if buf is None:
                    buf = buffers[nxt] = [None] * nxt.n_outputs
                    buf[nr] = g
                elif buf[nr] is None:
                    buf[nr] = g
                else:
                    buf[nr] = _sum_grads(buf[nr], g, create_graph)
                left = deps[nxt] - 1
                deps[nxt] = left
                if left == 0:
                    heappush(ready, (-nxt._seq, nxt))
    finally:
        state.grad_enabled = prev
    if accumulate:
        for t, g in zip(inputs or (), captured):  # backward(inputs=[non-leaf]) fills its .grad
            if t._grad_fn is not None and g is not None:
                g = g if create_graph else _copy(g)
                t._grad = g if t._grad is None else t._grad + g
        return None
    return captured


def _sum_grads(a: Any, b: Any, create_graph: bool) -> Any:
    """``a + b`` for two gradients flowing into the same input. Without ``create_graph`` two
    eager gradients of one dtype and shape are plain arrays to add (nothing records): the same
    result as the ``add`` op, without its dispatch."""
    if not create_graph and type(a) is Tensor and type(b) is Tensor and a._dtype is b._dtype \
            and a._data.shape == b._data.shape:  # (eager: tracers are a subclass)
        data = np.add(a._data, b._data)
        t = _new(Tensor)  # Tensor._init, inlined
        t._data = data if type(data) is np.ndarray else np.asarray(data)
        t._dtype = a._dtype
        t._vc = [0]
        t._grad_fn = None
        return t
    return a + b


def _capture(capture: dict, captured: list, node: Node, grads: list) -> None:
    for nr, g in enumerate(grads):
        for i in capture.get((node, nr), ()):
            captured[i] = g


def gradient_edge(t: Any) -> tuple:
    """The (node, output_nr) through which gradients reach tensor ``t``."""
    if getattr(t, "_base", None) is not None and t._vc[0] != t._view_version:
        _refresh_view(t)
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
        for edge in node._next:
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
            for edge in node._next:
                if edge is not None and edge[0] in needed:
                    needed.add(node)
                    changed = True
                    break
    # Only edges between needed nodes count towards readiness.
    deps = {}
    for node in needed:
        for edge in node._next:
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
                grads[nr] = _check_hook_result(new, grads[nr], hook)
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


def _check_hook_result(new: Any, old: Any, hook: Any) -> Any:
    if not isinstance(new, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}'")
    if new.shape != old.shape:
        raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the size of value")
    return new


def _hook_name(hook: Any) -> str:
    return getattr(hook, "__name__", type(hook).__name__)


def _check_node_hook_result(hook: Any, new: Any, old: tuple) -> list:
    """Validates what a grad_fn pre-hook or post-hook returned in place of ``old``."""
    if not isinstance(new, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(new).__name__}'")
    if len(new) != len(old):
        raise RuntimeError(
            f"hook '{_hook_name(hook)}' has returned an incorrect number of values (got "
            f"{len(new)}, but expected {len(old)})")
    for n, o in zip(new, old):
        if o is None and n is not None:
            raise RuntimeError("can't replace a None gradient with a non-None value")
    return list(new)


def _call(node: Node, grads: list) -> tuple:
    if node._pre_hooks:
        for hook in list(node._pre_hooks.values()):
            new = hook(tuple(grads))
            if new is not None:
                grads = _check_node_hook_result(hook, new, tuple(grads))
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
                out = _check_node_hook_result(hook, new, tuple(out))
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
