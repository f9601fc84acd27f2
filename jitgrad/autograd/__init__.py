"""``jitgrad.autograd``: torch.autograd's API on jitgrad's engine."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..ops import registry
from ..ops.creation import ones
from ..tensor import Tensor, _new
from ..tensor import graph as _tensor_graph
from . import graph
from .anomaly import detect_anomaly, set_detect_anomaly
from .engine import checkpoint_valid as _is_checkpoint_valid
from .engine import gradient_edge, run_backward
from .function import Function, once_differentiable
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # shadows the module, as torch
from .multithreading import is_multithreading_enabled, set_multithreading_enabled
from .variable import Variable

__all__ = ["backward", "grad", "Function", "once_differentiable", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "is_grad_enabled", "Variable",
           "detect_anomaly", "set_detect_anomaly", "graph", "gradcheck", "gradgradcheck"]


def _tensor_type():
    return Tensor


def _as_tuple(x: Any, what: str) -> tuple:
    Tensor = _tensor_type()
    if isinstance(x, (Tensor, graph.GradientEdge)):
        return (x,)
    if type(x) is dict:
        return tuple(x.values())
    if isinstance(x, Mapping):
        raise TypeError(f"`inputs` argument to `{what}()` must be a dict, not "
                        f"{type(x).__name__}. Other Mapping types are not supported.")
    return tuple(x)


def _edge(x: Any) -> tuple:
    if isinstance(x, graph.GradientEdge):
        return (x.node, x.output_nr)
    return gradient_edge(x)


def _make_grads(outputs: tuple, grads: tuple, is_grads_batched: bool = False) -> list:
    new = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if isinstance(out, graph.GradientEdge):
            meta = out.node._output_meta(out.output_nr)
            shape, dt, req = tuple(meta.shape), meta.dtype, True
        elif not isinstance(out, Tensor):
            raise AssertionError("Expected output to be a jitgrad.Tensor")
        else:
            shape, dt, req = tuple(out.shape), out.dtype, out.requires_grad
        if isinstance(g, Tensor):
            gshape = tuple(g.shape[1:] if is_grads_batched else g.shape)
            if gshape != shape:
                from ..tensor import Size

                if is_grads_batched:
                    raise RuntimeError(
                        "If `is_grads_batched=True`, we interpret the first dimension of each "
                        "grad_output as the batch dimension. The sizes of the remaining "
                        f"dimensions are expected to match the shape of corresponding output, "
                        f"but a mismatch was detected: grad_output[{i}] has a shape of "
                        f"{Size(g.shape[2:])} and output[{i}] has a shape of {Size(shape)}. If you "
                        "only want some tensors in `grad_output` to be considered batched, "
                        "consider using vmap.")
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {Size(gshape)} and "
                    f"output[{i}] has a shape of {Size(shape)}.")
            if dt.is_complex != g.dtype.is_complex:
                raise RuntimeError(
                    "For complex Tensors, both grad_output and output are required to have the "
                    f"same dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {g.dtype} "
                    f"and output[{i}] has a dtype of {dt}.")
            new.append(g)
        elif g is None:
            if req:
                if any(s != 1 for s in shape):
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not dt.is_floating_point:
                    raise RuntimeError(
                        "grad can be implicitly created only for real scalar outputs but got "
                        f"{dt}")
                if not isinstance(out, graph.GradientEdge) and not out.is_cpu:  # cuda, meta
                    new.append(ones(shape, dtype=dt, device=out.device))
                else:  # every backward of a scalar loss makes one: no factory parsing
                    one = np.empty(shape, dt.np)
                    one.fill(1)
                    new.append(_new(one, dt))
            else:
                new.append(None)
        else:
            raise TypeError(
                f"gradients can be either Tensors or None, but got {type(g).__name__}")
    return new


def _grads_tuple(grads: Any, n: int) -> tuple:
    if grads is None:
        return (None,) * n
    if isinstance(grads, _tensor_type()):
        return (grads,)
    return tuple(grads)  # a non-sequence raises Python's TypeError, as in torch


def _check_counts(outputs: tuple, grads: list) -> None:
    # torch's engine: each tensor needs a gradient (extra gradients were dropped by the zip)
    if len(grads) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grads)} gradients")


def _roots(outputs: tuple) -> list:
    roots = []
    for i, out in enumerate(outputs):
        if isinstance(out, graph.GradientEdge):
            roots.append((out.node, out.output_nr))
            continue
        if not out.requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn")
        roots.append(gradient_edge(out))
    return roots


_warned_create_graph = False


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, grad_variables: Any = None, inputs: Any = None) -> None:
    """Accumulates into leaves' ``.grad`` the gradient of ``tensors`` (torch.autograd.backward).

    Args:
        tensors: Tensors (or GradientEdges) to differentiate.
        grad_tensors: The "vector" of the vector-Jacobian product, one per tensor; None for
            scalars (an implicit 1).
        retain_graph: Keep saved values so the graph can be differentiated again. Defaults to
            ``create_graph``.
        create_graph: Record the backward itself, for higher-order derivatives.
        grad_variables: Deprecated alias of ``grad_tensors``.
        inputs: If given, only these tensors' ``.grad`` is accumulated.
    """
    if grad_variables is not None:
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.",
                      FutureWarning, stacklevel=2)
        if grad_tensors is None:
            grad_tensors = grad_variables
        else:
            raise RuntimeError(
                "`grad_tensors` and `grad_variables` (deprecated) arguments both passed to "
                "`backward()`. Please only use `grad_tensors`.")
    inputs_tuple = () if inputs is None else _as_tuple(inputs, "backward")
    if inputs is not None and len(inputs_tuple) == 0:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    outputs = _as_tuple(tensors, "backward") if not isinstance(tensors, Sequence) or \
        isinstance(tensors, graph.GradientEdge) else tuple(tensors)
    grads = _make_grads(outputs, _grads_tuple(grad_tensors, len(outputs)))
    _check_counts(outputs, grads)
    if retain_graph is None:
        retain_graph = create_graph
    roots = _roots(outputs)
    global _warned_create_graph
    if create_graph and not _warned_create_graph:  # once, like torch
        _warned_create_graph = True
        warnings.warn(
            "Using backward() with create_graph=True will create a reference cycle between the "
            "parameter and its gradient which can cause a memory leak. We recommend using "
            "autograd.grad when creating the graph to avoid this. If you have to use this "
            "function, make sure to reset the .grad fields of your parameters to None after use "
            "to break the cycle and avoid the leak.", UserWarning, stacklevel=3)
    for x in inputs_tuple:  # (torch: an input keeps its .grad, as a leaf does)
        if not isinstance(x, graph.GradientEdge):
            x.retain_grad()
    run_backward(roots, grads, retain_graph, create_graph,
                 inputs=[_EdgeProxy(x) if isinstance(x, graph.GradientEdge) else x
                         for x in inputs_tuple] or None, accumulate=True)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> Any:
    """Computes and returns the gradients of ``outputs`` w.r.t. ``inputs`` (torch.autograd.grad).

    Args:
        outputs: Tensors (or GradientEdges) to differentiate.
        inputs: Tensors (or GradientEdges) w.r.t. which the gradient is returned; a dict's
            values are used and a dict is returned.
        grad_outputs: The "vector" of the vector-Jacobian product, one per output.
        retain_graph: Keep the graph for another backward. Defaults to ``create_graph``.
        create_graph: Record the derivative graph, for higher-order derivatives.
        only_inputs: Deprecated and ignored.
        allow_unused: Return None for inputs the outputs do not depend on instead of raising.
            Defaults to ``materialize_grads``.
        is_grads_batched: Treat the first dimension of each grad_output as a batch.
        materialize_grads: Return zeros instead of None for unused inputs.
    """
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, but "
            "got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    Tensor = _tensor_type()
    outputs_t = (outputs,) if isinstance(outputs, (Tensor, graph.GradientEdge)) \
        else tuple(outputs)
    inputs_t = _as_tuple(inputs, "grad")
    if len(inputs_t) == 0:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if not only_inputs:
        warnings.warn(
            "only_inputs argument is deprecated and is ignored now (defaults to True). To "
            "accumulate gradient for other parts of the graph, please use "
            "jitgrad.autograd.backward.", FutureWarning, stacklevel=2)
    grads = _make_grads(outputs_t, _grads_tuple(grad_outputs, len(outputs_t)), is_grads_batched)
    _check_counts(outputs_t, grads)
    if retain_graph is None:
        retain_graph = create_graph
    roots = _roots(outputs_t)  # (torch checks the outputs before the inputs)
    for x in inputs_t:
        if not isinstance(x, (Tensor, graph.GradientEdge)):
            raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got "
                               f"{type(x).__name__}")
        if isinstance(x, Tensor) and not x.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    edges_as_tensors = [_EdgeProxy(x) if isinstance(x, graph.GradientEdge) else x
                        for x in inputs_t]
    if is_grads_batched:
        result = _batched(roots, grads, retain_graph, create_graph, edges_as_tensors)
    else:
        result = run_backward(roots, grads, retain_graph, create_graph,
                              inputs=edges_as_tensors, accumulate=False)
    if registry.sparse_live:  # (a sparse gradient may come back as a plain Tensor on storage)
        from ..sparse import as_sparse

        result = [r if r is None else as_sparse(r) for r in result]
    for i, r in enumerate(result):
        if r is None and not allow_unused:
            raise RuntimeError(
                f"The differentiated Tensor at index {i} appears to not have been used in the "
                "graph. Set allow_unused=True if this is the desired behavior.")
    if materialize_grads:
        from ..ops.creation import zeros_like

        if any(r is None and isinstance(x, graph.GradientEdge) for r, x in zip(result, inputs_t)):
            raise RuntimeError(
                "materialize_grads cannot be used when the given input is a GradientEdge")
        result = [r if r is not None else zeros_like(x, requires_grad=create_graph)
                  for r, x in zip(result, inputs_t)]
    if type(inputs) is dict:
        return dict(zip(inputs.keys(), result))
    return tuple(result)


class _EdgeProxy:
    """Lets a GradientEdge stand where the engine expects a tensor."""

    _grad = None  # what backward(inputs=[edge]) accumulates for an edge goes nowhere else

    def __init__(self, edge: graph.GradientEdge) -> None:
        self._grad_fn, self._output_nr = edge.node, edge.output_nr


def _batched(roots: list, grads: list, retain_graph: bool, create_graph: bool,
             inputs: list) -> list:
    from ..ops.movement import stack

    n = next(g.shape[0] for g in grads if g is not None)
    per_batch = []
    for b in range(n):
        gb = [g[b] if g is not None else None for g in grads]
        keep = retain_graph or b < n - 1
        per_batch.append(run_backward(roots, gb, keep, create_graph, inputs=inputs,
                                      accumulate=False))
    return [None if per_batch[0][i] is None else stack([r[i] for r in per_batch])
            for i in range(len(inputs))]


_tensor_graph.backward = backward  # Tensor.backward (tensor data sits below the graph)


def variable(*args: Any, **kwargs: Any) -> Any:
    """Removed in torch: raises its error (the module ``autograd.variable`` holds Variable)."""
    raise RuntimeError(
        "torch.autograd.variable(...) is deprecated, use torch.tensor(...) instead")


__all__ += ["set_multithreading_enabled", "is_multithreading_enabled", "variable"]


def __getattr__(name: str) -> Any:
    if name in ("functional", "forward_ad", "anomaly_mode", "profiler", "profiler_util"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
