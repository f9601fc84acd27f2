"""Activation checkpointing (``torch.utils.checkpoint``): recompute a segment in the backward
instead of keeping what its forward saved."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable
from typing import Any

from .. import autograd
from .._generator import _default as _default_generator
from ..autograd.grad_mode import enable_grad, no_grad
from ..autograd.graph import saved_tensors_hooks

__all__ = ["checkpoint", "checkpoint_sequential"]


def _is_tensor(value: Any) -> bool:
    from ..tensor import Tensor

    return isinstance(value, Tensor)


@contextlib.contextmanager
def _rng_as(state: Any):
    """Runs the block with the default generator in ``state`` (if given), then restores it."""
    if state is None:
        yield
        return
    now = _default_generator.get_state()
    _default_generator.set_state(state)
    try:
        yield
    finally:
        _default_generator.set_state(now)


class CheckpointFunction(autograd.Function):
    """The reentrant checkpoint: one node whose backward reruns the segment and backpropagates
    through the rerun (``grad_fn`` is ``CheckpointFunctionBackward``, as torch's)."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.rng_state = _default_generator.get_state() if preserve_rng_state else None
        ctx.tensor_indices = [i for i, a in enumerate(args) if _is_tensor(a)]
        ctx.inputs = [None if _is_tensor(a) else a for a in args]
        ctx.save_for_backward(*[a for a in args if _is_tensor(a)])
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t.detach().requires_grad_(t.requires_grad)
        with _rng_as(ctx.rng_state), enable_grad():
            outputs = ctx.run_function(*inputs)
        if _is_tensor(outputs):
            outputs = (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads) if _is_tensor(o) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                               "not necessary")
        autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(a.grad if _is_tensor(a) else None for a in inputs)


def _checkpoint_without_reentrant(function: Callable, preserve_rng_state: bool, args: tuple,
                                  kwargs: dict, check: bool) -> Any:
    """Saved-tensor hooks: the forward keeps only a slot number per saved value; the first
    unpack in the backward reruns ``function`` (same inputs, same random numbers) and hands
    out what the rerun saved, slot by slot."""
    rng_state = _default_generator.get_state() if preserve_rng_state else None
    recomputed: list = []
    count = [0]

    def pack(_value: Any) -> int:
        count[0] += 1
        return count[0] - 1

    def unpack(slot: int) -> Any:
        if not recomputed:
            def keep(value: Any) -> Any:
                recomputed.append(value)
                return value

            with saved_tensors_hooks(keep, lambda v: v), _rng_as(rng_state), enable_grad():
                function(*args, **kwargs)
            if check and len(recomputed) != count[0]:
                raise RuntimeError(
                    "torch.utils.checkpoint: A different number of tensors was saved during the "
                    f"original forward and recomputation.\nNumber of tensors saved during "
                    f"forward: {count[0]}\nNumber of tensors saved during recomputation: "
                    f"{len(recomputed)}.")
        return recomputed[slot]

    with saved_tensors_hooks(pack, unpack):
        return function(*args, **kwargs)


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable | None = None, determinism_check: str = "default",
               debug: bool = False, preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    """Runs ``function(*args, **kwargs)`` without keeping the values its backward needs, and
    recomputes them (rerunning ``function``) when the backward reaches it.

    Args:
        function: the segment to run.
        *args: its positional arguments.
        use_reentrant: ``False`` (recommended) recomputes through saved-tensor hooks and works
            with ``autograd.grad`` and keyword arguments; ``True`` records one
            ``CheckpointFunctionBackward`` node. Omitted, it is ``True`` with torch's warning.
        context_fn: accepted for torch compatibility (only the default is supported).
        determinism_check: ``"default"`` checks that the rerun saves as many values; ``"none"``
            skips the check.
        debug: accepted for torch compatibility.
        preserve_rng_state: the rerun draws the same random numbers (dropout) as the forward.
        **kwargs: keyword arguments of ``function`` (non-reentrant only).

    Returns:
        what ``function`` returns.
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
            "exception. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", UserWarning, stacklevel=2)
        use_reentrant = True
    if context_fn is not None:
        raise ValueError("Passing `context_fn` is not supported by jitgrad's checkpoint.")
    if determinism_check not in ("default", "none"):
        raise ValueError("determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if not any(_is_tensor(a) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                          UserWarning, stacklevel=2)
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    return _checkpoint_without_reentrant(function, preserve_rng_state, args, kwargs,
                                         determinism_check == "default")


def checkpoint_sequential(functions: Any, segments: int, input: Any,  # noqa: A002
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """Runs a sequence of modules (or an ``nn.Sequential``) in ``segments`` checkpointed
    chunks; the last chunk runs normally.

    Args:
        functions: an ``nn.Sequential`` or a list of modules or functions, run in order.
        segments: the number of chunks.
        input: the input of the first function.
        use_reentrant: as in :func:`checkpoint`.
        **kwargs: more arguments of :func:`checkpoint`.
    """
    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    functions = list(functions)

    def run(start: int, end: int) -> Callable:
        def forward(x: Any) -> Any:
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, **kwargs)
    return run(end + 1, len(functions) - 1)(input)
