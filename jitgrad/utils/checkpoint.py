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
from ._selective_checkpoint import (SAC_IGNORED_OPS, CheckpointPolicy,
                                    SelectiveCheckpointContext,
                                    create_selective_checkpoint_contexts)

__all__ = ["SAC_IGNORED_OPS", "CheckpointError", "CheckpointPolicy", "SelectiveCheckpointContext",
           "checkpoint", "checkpoint_sequential", "create_selective_checkpoint_contexts",
           "detach_variable", "noop_context_fn", "set_checkpoint_early_stop"]


class CheckpointError(RuntimeError):
    """The recomputation of a non-reentrant checkpoint did not save what the forward saved."""


_TIP = ("\n\nTip: To see a more detailed error message, either pass `debug=True` to\n"
        "`torch.utils.checkpoint.checkpoint(...)` or wrap the code block\n"
        "with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to\n"
        "enable checkpoint\u2011debug mode globally.\n")
_EARLY_STOP: list = [None]  # (set_checkpoint_early_stop's override of checkpoint(early_stop=))


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Whether checkpoints run inside the block stop their recomputation once it has saved
    all the forward saved (overriding ``checkpoint(early_stop=...)``)."""
    prior = _EARLY_STOP[0]
    _EARLY_STOP[0] = enable
    try:
        yield
    finally:
        _EARLY_STOP[0] = prior


def noop_context_fn() -> tuple[Any, Any]:
    """The default ``context_fn``: no context around the forward or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs: tuple) -> tuple:
    """``inputs`` with each tensor detached (keeping its ``requires_grad``)."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for value in inputs:
        if _is_tensor(value):
            detached = value.detach()
            detached.requires_grad = value.requires_grad
            value = detached
        out.append(value)
    return tuple(out)


class _EnoughRecomputed(Exception):  # noqa: N818 - internal signal
    """The recomputation saved all the forward saved: stop it there (early stop)."""


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
        if not autograd._is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                "passing an `inputs` parameter to .backward(). To resolve this error, you can "
                "either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument.")
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
                                  kwargs: dict, check: bool, early_stop: bool,
                                  context_fn: Callable) -> Any:
    """Saved-tensor hooks: the forward keeps only a slot number per saved value; the first
    unpack in the backward reruns ``function`` (same inputs, same random numbers), stopping
    once it has saved as many values as the forward (``early_stop``), and hands out what the
    rerun saved, slot by slot."""
    rng_state = _default_generator.get_state() if preserve_rng_state else None
    forward_context, recompute_context = context_fn()
    recomputed: list = []
    count = [0]

    def pack(_value: Any) -> int:
        count[0] += 1
        return count[0] - 1

    def unpack(slot: int) -> Any:
        if not recomputed:
            def keep(value: Any) -> Any:
                if len(recomputed) == count[0]:
                    raise CheckpointError("torch.utils.checkpoint: trying to save more tensors "
                                          "during recomputation than during the original "
                                          "forward pass." + _TIP)
                recomputed.append(value)
                if early_stop and len(recomputed) == count[0]:
                    raise _EnoughRecomputed
                return value

            try:
                with saved_tensors_hooks(keep, lambda v: v), _rng_as(rng_state), \
                        enable_grad(), recompute_context:
                    function(*args, **kwargs)
            except _EnoughRecomputed:
                pass
            if check and len(recomputed) != count[0]:
                raise CheckpointError(
                    "torch.utils.checkpoint: A different number of tensors was saved during the "
                    f"original forward and recomputation.\nNumber of tensors saved during "
                    f"forward: {count[0]}\nNumber of tensors saved during recomputation: "
                    f"{len(recomputed)}." + _TIP)
        return recomputed[slot]

    with saved_tensors_hooks(pack, unpack), forward_context:
        return function(*args, **kwargs)


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable = noop_context_fn, determinism_check: str = "default",
               debug: bool = False, early_stop: bool = True, preserve_rng_state: bool = True,
               **kwargs: Any) -> Any:
    """Runs ``function(*args, **kwargs)`` without keeping the values its backward needs, and
    recomputes them (rerunning ``function``) when the backward reaches it.

    Args:
        function: the segment to run.
        *args: its positional arguments.
        use_reentrant: ``False`` (recommended) recomputes through saved-tensor hooks and works
            with ``autograd.grad`` and keyword arguments; ``True`` records one
            ``CheckpointFunctionBackward`` node. Omitted, it is ``True`` with torch's warning.
        context_fn: returns two context managers, the forward's and the recomputation's
            (non-reentrant only): ``create_selective_checkpoint_contexts`` for selective
            checkpointing.
        determinism_check: ``"default"`` checks that the rerun saves as many values; ``"none"``
            skips the check.
        debug: accepted for torch compatibility (non-reentrant only).
        early_stop: stop the recomputation once it has saved all the forward saved
            (non-reentrant only; ``set_checkpoint_early_stop`` overrides it).
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
    if use_reentrant and (context_fn is not noop_context_fn or debug):
        raise ValueError("Passing `context_fn` or `debug` is only supported when "
                         "use_reentrant=False.")
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
    stop = early_stop if _EARLY_STOP[0] is None else _EARLY_STOP[0]
    return _checkpoint_without_reentrant(function, preserve_rng_state, args, kwargs,
                                         determinism_check == "default", stop, context_fn)


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
