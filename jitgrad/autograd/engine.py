"""The backward engine: micrograd's skeleton with torch's semantics on top.

1. Walk the graph from the roots and sort the nodes newest first: every node is newer than the
   nodes its edges lead to, so each runs after all of its consumers (torch's order).
2. Run each node that received a gradient (hooks, then its backward) and route each input
   gradient along its edge, summing where edges meet.
3. AccumulateGrad nodes write into leaves' ``.grad``; ``autograd.grad`` captures instead.
"""

from __future__ import annotations

import itertools
import threading
import warnings
from collections.abc import Callable
from operator import attrgetter
from typing import Any

import numpy as np

from .. import _torch_function, dtypes
from .._np_errors import quiet, restore
from ..ops import registry
from ..ops.op_observers import ACTIVE as OBSERVERS
from ..ops.registry import state
from .._views import _refresh_view
from ..tensor import Tensor, _make
from .node import AccumulateGrad, Node, _anomaly, as_tensor
from .._meta import touches_meta


_ndarray = np.ndarray
# This thread's running backward passes ("graph tasks"), innermost last: [id, callbacks, the
# set of nodes it runs, whether it runs all of them (no ``inputs``)] each
_local = threading.local()
_task_ids = itertools.count()


def _tasks() -> list:
    tasks = _local.__dict__.get("tasks")
    if tasks is None:
        tasks = _local.tasks = []
    return tasks


def current_graph_task_id() -> int:
    """The id of the backward pass running now (torch's ``_current_graph_task_id``), or -1."""
    tasks = _tasks()
    return tasks[-1][0] if tasks else -1


def queue_callback(callback: Callable[[], None]) -> None:
    """Runs ``callback()`` when the backward pass running now has finished (torch's
    ``Variable._execution_engine.queue_callback``)."""
    tasks = _tasks()
    if not tasks:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    tasks[-1][1].append(callback)


def checkpoint_valid() -> bool:
    """torch's ``autograd._is_checkpoint_valid``: False inside a backward pass restricted to
    ``inputs`` (``autograd.grad``, ``backward(inputs=...)``), which a reentrant checkpoint's
    inner backward cannot honour."""
    tasks = _tasks()
    return not tasks or tasks[-1][3]


def will_execute(node: Any) -> bool:
    """Whether the backward pass running now runs ``node`` (torch's
    ``_will_engine_execute_node``); True outside a backward pass."""
    tasks = _tasks()
    return not tasks or tasks[-1][2] is None or node in tasks[-1][2]


def run_backward(roots: list, grad_roots: list, retain_graph: bool, create_graph: bool,
                 inputs: list | None = None, accumulate: bool = True) -> list | None:
    """Backpropagates ``grad_roots`` from ``roots`` (edges: (node, output_nr) pairs).

    With ``accumulate`` the leaves' ``.grad`` is updated (restricted to the tensors ``inputs``
    if given). Without it, the gradients flowing into ``inputs`` are returned instead
    (``autograd.grad``). Callbacks queued meanwhile (``queue_callback``) run at the end.
    """
    if registry.torch_function_live and not _torch_function.state.no_all:
        # (torch's engine is native code: no __torch_function__ runs inside the backward pass)
        with _torch_function.DisableTorchFunction():
            return run_backward(roots, grad_roots, retain_graph, create_graph, inputs,
                                accumulate)
    task = [next(_task_ids), [], None, inputs is None]
    tasks = _tasks()
    tasks.append(task)
    try:
        out = _run_backward(task, roots, grad_roots, retain_graph, create_graph, inputs,
                            accumulate)
        callbacks = task[1]
        while callbacks:  # (a callback may queue another)
            callbacks.pop(0)()
        return out
    finally:
        tasks.remove(task)


def _run_backward(task: list, roots: list, grad_roots: list, retain_graph: bool,
                  create_graph: bool, inputs: list | None, accumulate: bool) -> list | None:
    capture: dict = {}  # (node, output_nr) -> positions in `inputs`
    for i, t in enumerate(inputs or ()):
        capture.setdefault(gradient_edge(t), []).append(i)
    targets = set(n for n, _ in capture) or None
    order, needed, pending = _discover([n for n, _ in roots], targets)
    task[2] = needed  # (what will_execute answers from)
    # Without create_graph (and anomaly mode) nothing records: gradients travel as plain arrays
    # and nodes run through ``apply_arrays``; a node with hooks, or whose gradient is captured,
    # sees tensors as usual.
    # (op observers must see the rules' ops: no traced programs on arrays while one watches)
    raw = not create_graph and not _anomaly.enabled and not OBSERVERS
    if raw and registry.cuda_live:  # cuda gradients travel as tensors (the lane is NumPy code)
        raw = not _touches_cuda(grad_roots, order)
    if raw and registry.bfloat16_live:  # (the array lane reads dtypes off float32 arrays)
        raw = not _touches_bfloat16(grad_roots, order)
    if raw and registry.meta_live:  # meta gradients travel as tensors (no values to compute)
        raw = not touches_meta(grad_roots)
    buffers: dict[Node, list] = {}
    for (node, nr), g in zip(roots, grad_roots):
        if node in needed:
            _add_to_buffer(buffers, node, nr, g._data if raw and g is not None else g)
    captured: list = [None] * len(inputs or ())
    restrict = targets is not None  # only nodes on a path to an input run
    release = not retain_graph
    add = _add_arrays if raw else _add_tensors
    lane = raw and not restrict  # every node without hooks takes the array lane

    def run(node: Node, grads: list) -> Any:
        """One node's backward: the array lane (``apply_arrays``) when gradients travel as
        arrays, unless hooks or a capture must see tensors."""
        if raw and not node._hooked and not (restrict and node in targets):
            return node.apply_arrays(grads, release)
        if raw:
            out = _unwrap(_run_node(node, _wrap(grads), capture, captured, needed, accumulate))
        else:
            out = _run_node(node, grads, capture, captured, needed, accumulate)
        if release:
            node._release()
        return out

    if registry.profiler is not None:  # jitgrad.profiler records: each node as a range
        lane = False
        run = registry.profiler.node_runner(run)
    prev = state.grad_enabled
    state.grad_enabled = create_graph
    try:
        for node in order:  # newest first: every node runs after all its consumers
            grads = buffers.pop(node, None)
            if grads is None:  # no gradient reached it (or a leaf's, already accumulated)
                continue
            out = node.apply_arrays(grads, release) if lane and not node._hooked \
                else run(node, grads)
            for edge, g in zip(node._next, out):
                if edge is None or restrict and edge[0] not in needed:
                    continue
                nxt, nr = edge
                if g is not None:  # route it, summing where gradients meet
                    buf = buffers.get(nxt)
                    if buf is None:
                        buf = buffers[nxt] = [None] * nxt.n_outputs
                        buf[nr] = g
                    else:
                        buf[nr] = g if buf[nr] is None else add(buf[nr], g)
                if type(nxt) is AccumulateGrad:  # a leaf's runs once all its producers ran
                    left = pending[nxt] = pending[nxt] - 1
                    if left == 0 and nxt in buffers:
                        run(nxt, buffers.pop(nxt))
    finally:
        state.grad_enabled = prev
    if accumulate:  # (backward(inputs=[non-leaf]) made it retain its grad: that fills .grad)
        return None
    return captured


def _touches_cuda(grad_roots: list, order: list) -> bool:
    """Whether a backward reaches cuda tensors: a cuda root, or a copy between devices."""
    for g in grad_roots:
        if g is not None and g.is_cuda:
            return True
    return any(getattr(getattr(n, "op", None), "name", None) == "to_device" for n in order)


def _touches_bfloat16(grad_roots: list, order: list) -> bool:
    """Whether a backward carries bfloat16 gradients (a root, a node's output or a leaf)."""
    bf16 = dtypes.bfloat16
    if any(g is not None and g._dtype is bf16 for g in grad_roots):
        return True
    for node in order:
        meta = getattr(node, "_out_meta", None)
        if meta is None:
            key = getattr(node, "_key", None)
            if type(key) is tuple and len(key) == 3 and key[1] is bf16:  # a UniformNode's
                return True
            var = getattr(node, "variable", None)
            if var is not None and var._dtype is bf16:
                return True
            continue
        for m in meta if type(meta) is tuple else (meta,):
            if getattr(m, "dtype", None) is bf16:
                return True
    return False


def _run_node(node: Node, grads: list, capture: dict, captured: list, needed: set,
              accumulate: bool) -> Any:
    """Runs one node on tensor gradients, with its hooks and captures."""
    hooked = node._hooked
    if hooked or type(node) is AccumulateGrad:
        _run_tensor_hooks(node, grads)
        if isinstance(node, AccumulateGrad) and not (accumulate and node in needed):
            _capture(capture, captured, node, grads)
            return ()
    if capture:
        _capture(capture, captured, node, grads)
    if hooked or _anomaly.enabled:
        return _call(node, grads)
    return node.apply(grads)


def _wrap(grads: list) -> list:
    out = [None if g is None else as_tensor(g) for g in grads]
    if registry.sparse_live:  # (hooks see a sparse gradient as a sparse tensor)
        out = [None if g is None else registry.sparse_wrap(g) for g in out]
    return out


def _unwrap(out: Any) -> list:
    return [None if g is None else g._data for g in out]


def _add_arrays(a: Any, b: Any) -> Any:
    """Two gradient arrays flowing into the same input, summed as the ``add`` op would (two
    arrays of one dtype and shape are added directly, others through the op)."""
    if a.dtype is b.dtype and a.shape == b.shape:
        token = quiet()  # (inf + -inf is nan silently, as torch's)
        try:
            c = a + b  # (a NumPy scalar for 0-d arrays; two sparse storages: their entries)
        finally:
            restore(token)
        if type(c) is _ndarray:
            return c
        return np.asarray(c) if isinstance(c, np.generic) else c
    return (as_tensor(a) + as_tensor(b))._data


def _add_tensors(a: Any, b: Any) -> Any:
    """``a + b`` for two gradient tensors flowing into the same input. Without ``create_graph``
    (grad mode off while the engine runs) two eager gradients of one dtype and shape are plain
    arrays to add (nothing records): the same result as the ``add`` op, without its dispatch."""
    if not state.grad_enabled and type(a) is Tensor and type(b) is Tensor \
            and a._dtype is b._dtype and a._data.shape == b._data.shape \
            and type(a._data) is _ndarray:  # (eager: tracers are a subclass)
        data = np.add(a._data, b._data)
        return _make(data if type(data) is _ndarray else np.asarray(data), a._dtype)
    if registry.sparse_live and not state.grad_enabled and registry.sparse_any((a, b)) \
            and a._dtype is b._dtype and a.shape == b.shape:  # (summed as _add_arrays does)
        return registry.sparse_wrap(_make(a._data + b._data, a._dtype))
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


def _discover(root_nodes: list, targets: set | None) -> tuple[list, set, dict]:
    """What must run: the nodes in the order they run, the same as a set, and for each leaf's
    AccumulateGrad the number of edges into it.

    Every node is reachable from the roots or, with ``targets``, on a path to a target. A node
    is always newer (higher sequence number) than the nodes its edges lead to, so newest-first
    is a topological order (the order torch's ready queue takes). AccumulateGrad nodes, which
    a leaf creates when it is first used, run as soon as all their producers ran (torch gives
    them the highest priority), or else last.
    """
    seen = set(root_nodes)
    pending: dict = {}
    stack = list(root_nodes)
    while stack:
        node = stack.pop()
        for edge in node._next:
            if edge is not None:
                nxt = edge[0]
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
                if type(nxt) is AccumulateGrad:
                    pending[nxt] = pending.get(nxt, 0) + 1
    order = sorted(seen, key=_seq_of, reverse=True)  # (AccumulateGrad's is -1: last)
    if targets is None:
        return order, seen, pending
    # A node is needed if it is a target or feeds a needed node: one sweep, oldest first.
    needed = set()
    for node in reversed(order):
        if node in targets:
            needed.add(node)
            continue
        for edge in node._next:
            if edge is not None and edge[0] in needed:
                needed.add(node)
                break
    order = [n for n in order if n in needed]
    pending = {}
    for node in order:
        for edge in node._next:
            if edge is not None and type(edge[0]) is AccumulateGrad:
                pending[edge[0]] = pending.get(edge[0], 0) + 1
    return order, needed, pending


_seq_of = attrgetter("_seq")


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
    if new.dtype is not old.dtype or new.device != old.device:
        raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the type of value (was "
                           f"{old.type()} got {new.type()})")
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
    if node._post_hooks:  # (they see the grad_inputs of the inputs next_functions lists)
        keep = node._graph_positions()
        for hook in list(node._post_hooks.values()):
            shown = tuple(out) if keep is None else tuple(out[i] for i in keep)
            new = hook(shown, tuple(grads))
            if new is not None:
                new = _check_node_hook_result(hook, new, shown)
                if keep is None:
                    out = new
                else:
                    out = list(out)
                    for i, g in zip(keep, new):
                        out[i] = g
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
