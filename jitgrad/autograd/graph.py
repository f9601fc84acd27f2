"""``jitgrad.autograd.graph``: Node, GradientEdge, get_gradient_edge, saved_tensors_hooks."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, NamedTuple

from .node import Node, saved_tensor_hooks_stack

__all__ = ["Node", "GradientEdge", "get_gradient_edge", "saved_tensors_hooks",
           "disable_saved_tensors_hooks", "save_on_cpu", "register_multi_grad_hook",
           "increment_version"]


def increment_version(tensor: Any) -> None:
    """Bumps the version counter of ``tensor`` (or of each tensor of an iterable), as an
    in-place op does: saved copies of it then fail their version check in backward."""
    from ..tensor import Tensor

    for t in [tensor] if isinstance(tensor, Tensor) else tensor:
        t._vc[0] += 1


class GradientEdge(NamedTuple):
    """An edge of the backward graph: gradients flow into ``node``'s ``output_nr``-th input."""

    node: Node
    output_nr: int
    ownership_token: Any = None


def get_gradient_edge(tensor: Any) -> GradientEdge:
    """The edge through which ``tensor``'s gradient flows (its AccumulateGrad for a leaf)."""
    if not tensor.requires_grad:
        raise RuntimeError(
            "It is not possible to get the gradient edge for a Tensor that does not require "
            "gradients")
    from .engine import gradient_edge

    node, nr = gradient_edge(tensor)
    return GradientEdge(node if node._named else node._named_as_torch(), nr)


class saved_tensors_hooks:  # noqa: N801 - torch's name
    """Context manager: every value saved for backward inside goes through ``pack_hook``, and
    through ``unpack_hook`` when the backward needs it. The innermost hooks apply."""

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        if _disabled_message[0] is not None:
            raise RuntimeError(_disabled_message[0])
        saved_tensor_hooks_stack.append((self.pack_hook, self.unpack_hook))

    def __exit__(self, *exc: object) -> None:
        saved_tensor_hooks_stack.pop()


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - torch's name
    """Context manager: tensors saved for backward inside are kept in CPU memory (copied off
    the GPU; CPU tensors stay as they are) and copied back to their device when the backward
    needs them.

    Args:
        pin_memory: keep the copies in page-locked memory (``Tensor.pin_memory``).
        device_type: accepted for torch's signature (jitgrad has one GPU device type).
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor: Any) -> tuple:
            if not pin_memory or not tensor.is_cuda:
                return tensor.device, tensor.cpu()
            return tensor.device, tensor.cpu().pin_memory()

        def unpack_from_cpu(packed: tuple) -> Any:
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


_disabled_message: list = [None]  # set inside disable_saved_tensors_hooks


class disable_saved_tensors_hooks(contextlib.ContextDecorator):  # noqa: N801
    """Context manager (and decorator): registering saved-tensor hooks inside, or entering it
    while hooks are registered, raises ``RuntimeError(error_message)``."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> None:
        if saved_tensor_hooks_stack:
            raise RuntimeError(self.error_message)
        self.prev = _disabled_message[0]
        _disabled_message[0] = self.error_message

    def __exit__(self, *exc: object) -> None:
        _disabled_message[0] = self.prev


class _MultiHandle:
    """The handle of a multi-grad hook: ``remove()`` removes the hook of every tensor."""

    def __init__(self, handles: tuple) -> None:
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()

    def __enter__(self) -> _MultiHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def register_multi_grad_hook(tensors: Any, fn: Callable, *, mode: str = "all") -> _MultiHandle:
    """Registers ``fn`` on the gradients of several tensors (torch's ``register_multi_grad_hook``).

    With ``mode="all"``, ``fn(grads)`` runs once per backward pass, after the gradients of all
    the tensors that pass computes have been computed (``grads``: one entry per tensor, None for
    those it does not reach). With ``mode="any"``, ``fn(grad)`` runs once per backward pass with
    the first of them computed.

    Args:
        tensors: the tensors (each requiring grad).
        fn: the hook.
        mode: ``"all"`` or ``"any"``.

    Returns:
        A handle whose ``remove()`` unregisters the hook.
    """
    from . import engine

    supported_modes = ("all", "any")
    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")
    tensors = tuple(tensors)
    if mode == "any":
        fired: set = set()

        def any_hook(grad: Any) -> None:
            task = engine.current_graph_task_id()
            if task not in fired:
                fired.add(task)
                fn(grad)

        return _MultiHandle(tuple(t.register_hook(any_hook) for t in tensors
                                  if t.requires_grad))
    state: dict = {}  # graph task id -> [gradients, how many are still to come]

    def get_inner_hook(idx: int) -> Callable:
        def inner_hook(grad: Any) -> None:
            task = engine.current_graph_task_id()
            entry = state.get(task)
            if entry is None:
                expected = sum(1 for t in tensors if t.requires_grad
                               and engine.will_execute(engine.gradient_edge(t)[0])) or 1
                entry = state[task] = [[None] * len(tensors), expected]
            entry[0][idx] = grad
            entry[1] -= 1
            if entry[1] == 0:
                del state[task]
                fn(entry[0])

        return inner_hook

    return _MultiHandle(tuple(t.register_hook(get_inner_hook(i)) for i, t in enumerate(tensors)
                              if t.requires_grad))
