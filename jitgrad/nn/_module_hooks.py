"""Module hooks: ``Module.__call__`` with forward (pre-)hooks and full backward (pre-)hooks.

Backward hooks work as torch's ``BackwardHook`` does: the module's tensor inputs go through an
identity ``Function`` before ``forward`` and its tensor outputs through another after it. When
the backward reaches the outputs' identity, the gradients w.r.t. the outputs (``grad_output``)
are recorded, after the backward pre-hooks (which may replace them) ran; when it reaches the
inputs' identity, the backward hooks run with ``grad_input`` (the gradients w.r.t. the inputs,
one entry per positional argument, None for non-tensors) and that ``grad_output``; a hook may
return a replacement ``grad_input``. When no input requires grad, the hooks run at the outputs
with ``grad_input`` all None, as in torch.
"""

from __future__ import annotations

import warnings
from typing import Any

from .._hooks import add_hook as add_hook  # (the modules' hooks register with it)
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor


class BackwardHookFunction(Function):
    """The identity on its tensor arguments; the backward hooks hang on its backward."""

    @staticmethod
    def forward(ctx: Any, state: _BackwardHook, where: str, *args: Tensor) -> tuple:
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        ctx.set_materialize_grads(False)
        ctx.state, ctx.where = state, where
        return args

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple:
        if ctx.where == "output":
            grads = ctx.state.on_grad_output(grads)
        else:
            grads = ctx.state.on_grad_input(grads)
        return (None, None) + tuple(grads)


def _tensor_positions(values: tuple) -> list[int]:
    return [i for i, v in enumerate(values) if isinstance(v, Tensor)]


def _pack(positions: list[int], tensors: tuple, n: int) -> tuple:
    out: list = [None] * n
    for i, t in zip(positions, tensors):
        out[i] = t
    return tuple(out)


class _BackwardHook:
    """One module call's backward hooks (torch.utils.hooks.BackwardHook)."""

    def __init__(self, module: Any, hooks: list, pre_hooks: list) -> None:
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.n_inputs = 0
        self.input_positions: list[int] | None = None
        self.output_positions: list[int] = []
        self.n_outputs = 0
        self.grad_outputs: tuple | None = None

    def _wrap(self, values: tuple, where: str) -> tuple[tuple, list[int] | None]:
        positions = _tensor_positions(values)
        tensors = [values[i] for i in positions]
        if not (is_grad_enabled() and any(t.requires_grad for t in tensors)):
            return values, None
        new = BackwardHookFunction.apply(self, where, *tensors)
        out = list(values)
        for i, t in zip(positions, new):
            out[i] = t
        return tuple(out), positions

    def setup_input_hook(self, args: tuple) -> tuple:
        self.n_inputs = len(args)
        if not self.hooks:
            return args
        args, self.input_positions = self._wrap(args, "input")
        return args

    def setup_output_hook(self, result: Any) -> Any:
        single = not isinstance(result, tuple)
        values = (result,) if single else result
        self.n_outputs = len(values)
        values, positions = self._wrap(values, "output")
        self.output_positions = positions or []
        return values[0] if single else values

    def on_grad_output(self, grads: tuple) -> tuple:
        packed = _pack(self.output_positions, grads, self.n_outputs)
        for hook in self.pre_hooks:
            res = hook(self.module, packed)
            if res is None:
                continue
            if not isinstance(res, tuple) or len(res) != len(packed):
                raise RuntimeError(
                    "Backward pre hook returned an invalid number of grad_output, got "
                    f"{len(res) if isinstance(res, tuple) else 1}, but expected {len(packed)}")
            packed = res
        self.grad_outputs = packed
        if self.input_positions is None and self.hooks:  # no input requires grad
            warnings.warn(
                "Full backward hook is firing when gradients are computed with respect to module "
                "outputs since no inputs require gradients. See https://docs.pytorch.org/docs/"
                "main/generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook"
                " for more details.", UserWarning, stacklevel=2)
            none = (None,) * self.n_inputs
            for hook in self.hooks:
                res = hook(self.module, none, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple)
                                            and all(r is None for r in res)):
                    raise RuntimeError(
                        "Backward hook for Modules where no input requires gradient should "
                        "always return None or None for all gradients.")
        return tuple(packed[i] for i in self.output_positions)

    def on_grad_input(self, grads: tuple) -> tuple:
        positions = self.input_positions or []
        packed = _pack(positions, grads, self.n_inputs)
        for hook in self.hooks:
            res = hook(self.module, packed, self.grad_outputs)
            if res is None:
                continue
            if not isinstance(res, tuple) or len(res) != len(packed):
                raise RuntimeError(
                    "Backward hook returned an invalid number of grad_input, got "
                    f"{len(res) if isinstance(res, tuple) else 1}, but expected {len(packed)}")
            packed = res
        return tuple(packed[i] for i in positions)


# Hooks of every module's forward (``register_module_forward_pre_hook`` and
# ``register_module_forward_hook``), run before each module's own
GLOBAL_FORWARD_PRE_HOOKS: dict = {}
GLOBAL_FORWARD_HOOKS: dict = {}
GLOBAL_FORWARD_HOOKS_WITH_KWARGS: set = set()
GLOBAL_FORWARD_HOOKS_ALWAYS_CALLED: set = set()


def register_module_forward_pre_hook(hook: Any) -> Any:
    """Registers ``hook(module, args) -> None | new args``, run before the forward of every
    module (before the module's own forward pre-hooks).

    Args:
        hook: the hook.

    Returns:
        A handle whose ``remove()`` unregisters it.
    """
    return add_hook(GLOBAL_FORWARD_PRE_HOOKS, hook)


def register_module_forward_hook(hook: Any, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> Any:
    """Registers ``hook(module, args, output) -> None | new output``, run after the forward of
    every module (before the module's own forward hooks).

    Args:
        hook: the hook (``hook(module, args, kwargs, output)`` with ``with_kwargs``).
        with_kwargs: pass the forward's keyword arguments too.
        always_call: run it, with output None, even when the forward raised.

    Returns:
        A handle whose ``remove()`` unregisters it.
    """
    handle = add_hook(GLOBAL_FORWARD_HOOKS, hook)
    if with_kwargs:
        GLOBAL_FORWARD_HOOKS_WITH_KWARGS.add(handle.id)
    if always_call:
        GLOBAL_FORWARD_HOOKS_ALWAYS_CALLED.add(handle.id)
    return handle


def _forward_hooks(module: Any) -> list:
    """The global forward hooks, then the module's (read after its forward, as torch)."""
    return list(GLOBAL_FORWARD_HOOKS.items()) + list(module._forward_hooks.items())


def call_with_hooks(module: Any, args: tuple, kwargs: dict) -> Any:
    """``module(*args, **kwargs)`` running its hooks, in torch's order."""
    d = module.__dict__
    for hook in list(GLOBAL_FORWARD_PRE_HOOKS.values()):
        res = hook(module, args)
        if res is not None:
            args = res if isinstance(res, tuple) else (res,)
    pre_kw = d.get("_forward_pre_hooks_with_kwargs", ())
    for hook_id, hook in list(module._forward_pre_hooks.items()):
        if hook_id in pre_kw:
            res = hook(module, args, kwargs)
            if res is not None:
                if not (isinstance(res, tuple) and len(res) == 2):
                    raise RuntimeError("forward pre-hook must return None or a tuple of "
                                       f"(new_args, new_kwargs), but got {res}.")
                args, kwargs = res
        else:
            res = hook(module, args)
            if res is not None:
                args = res if isinstance(res, tuple) else (res,)
    bw_hooks = list(d.get("_backward_hooks", {}).values())
    bw_pre_hooks = list(d.get("_backward_pre_hooks", {}).values())
    bw = _BackwardHook(module, bw_hooks, bw_pre_hooks) if bw_hooks or bw_pre_hooks else None
    if bw is not None:
        args = bw.setup_input_hook(args)
    hook_kw = d.get("_forward_hooks_with_kwargs", ())
    always = d.get("_forward_hooks_always_called", ())
    if GLOBAL_FORWARD_HOOKS:
        hook_kw = set(hook_kw) | GLOBAL_FORWARD_HOOKS_WITH_KWARGS
        always = set(always) | GLOBAL_FORWARD_HOOKS_ALWAYS_CALLED
    called: set = set()
    try:
        result = module.forward(*args, **kwargs)
        for hook_id, hook in _forward_hooks(module):
            called.add(hook_id)
            res = hook(module, args, kwargs, result) if hook_id in hook_kw else \
                hook(module, args, result)
            if res is not None:
                result = res
    except Exception:
        for hook_id, hook in _forward_hooks(module):
            if hook_id in always and hook_id not in called:
                try:
                    if hook_id in hook_kw:
                        hook(module, args, kwargs, None)
                    else:
                        hook(module, args, None)
                except Exception as e:  # noqa: BLE001 - reported, the forward's error wins
                    warnings.warn("global module forward hook with ``always_call=True`` raised "
                                  f"an exception that was silenced as another error was raised "
                                  f"in forward: {e}", stacklevel=3)
        raise
    if bw is not None:
        result = bw.setup_output_hook(result)
    legacy = d.get("_legacy_backward_hooks")
    if legacy:
        _register_legacy_backward_hooks(module, list(legacy.values()), args, result)
    return result


def _register_legacy_backward_hooks(module: Any, hooks: list, args: tuple, result: Any) -> None:
    """``register_backward_hook``'s hooks go on the node that made the first output tensor,
    with torch's warnings where that node does not see the module's inputs and outputs."""
    var = result
    while not isinstance(var, Tensor):
        var = next(v for v in var.values() if isinstance(v, Tensor)) if isinstance(var, dict) \
            else var[0]
    grad_fn = var.grad_fn
    if grad_fn is None:
        return
    for hook in hooks:
        grad_fn.register_hook(lambda grad_input, grad_output, hook=hook:
                              hook(module, grad_input, grad_output))
    _warn_legacy_backward_hook(args, result, grad_fn)


_LEGACY_TEXT = {
    "outputs": "Using non-full backward hooks on a Module that does not return a single Tensor "
               "or a tuple of Tensors is deprecated and will be removed in future versions. "
               "This hook will be missing some of the grad_output. Please use "
               "register_full_backward_hook to get the documented behavior.",
    "inputs": "Using non-full backward hooks on a Module that does not take as input a single "
              "Tensor or a tuple of Tensors is deprecated and will be removed in future "
              "versions. This hook will be missing some of the grad_input. Please use "
              "register_full_backward_hook to get the documented behavior.",
    "nested": "Using a non-full backward hook when outputs are nested in python data structure "
              "is deprecated and will be removed in future versions. This hook will be missing "
              "some grad_output.",
    "nodes": "Using a non-full backward hook when outputs are generated by different autograd "
             "Nodes is deprecated and will be removed in future versions. This hook will be "
             "missing some grad_output. Please use register_full_backward_hook to get the "
             "documented behavior.",
    "multiple": "Using a non-full backward hook when the forward contains multiple autograd "
                "Nodes is deprecated and will be removed in future versions. This hook will be "
                "missing some grad_input. Please use register_full_backward_hook to get the "
                "documented behavior.",
}


def _warn_legacy_backward_hook(inputs: Any, result: Any, grad_fn: Any) -> None:
    def tensors(x: Any) -> tuple | None:
        if isinstance(x, Tensor):
            return (x,)
        return x if isinstance(x, tuple) and all(isinstance(t, Tensor) for t in x) else None

    outputs, inputs = tensors(result), tensors(inputs)
    reason = None
    if outputs is None:
        reason = "outputs"
    elif inputs is None:
        reason = "inputs"
    else:
        out_nodes = {id(r.grad_fn) for r in outputs if r.grad_fn is not None}
        if not out_nodes or (len(out_nodes) == 1 and id(grad_fn) not in out_nodes):
            reason = "nested"
        elif len(out_nodes) > 1:
            reason = "nodes"
        else:
            input_nodes = {id(i.grad_fn) for i in inputs if i.grad_fn is not None}
            next_nodes = {id(n) for n, _ in grad_fn.next_functions}
            if input_nodes != next_nodes:
                reason = "multiple"
    if reason is not None:
        warnings.warn(_LEGACY_TEXT[reason], FutureWarning, stacklevel=4)
