"""``CustomOpDef``: a Python function made an operator, as ``torch.library.custom_op``.

A call picks the kernel for the device of its tensor arguments (``register_kernel``; the
function itself is the kernel for every device unless ``device_types`` names some). When grad
mode is on and a tensor argument requires grad (or under ``jitgrad.jit``), the call goes through
one ``jitgrad.autograd.Function`` per op, whose ``backward`` is the one given to
``register_autograd`` (without one, backward raises torch's error). So the op is differentiable
by jitgrad's autograd, and under ``jit`` it is one opaque equation (``jit/custom_function.py``
learns its output shapes by running the kernel on stand-ins). A ``register_fake`` function is
kept and checked by ``opcheck``; the jit does not need it. A mutating op (``mutates_args``)
writes into its arguments and bumps their version counters, as torch's; under ``jit`` it is
functionalized: one opaque equation whose kernel writes into copies, which are then copied
into the arguments (the jit writes inputs back after the call).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..ops import custom_namespaces
from ..ops.registry import Tensor, state
from ._schema import parse_schema_args, signature_of

__all__ = ["CustomOpDef", "OPDEFS", "OpOverload", "OpOverloadPacket"]

OPDEFS: dict[str, CustomOpDef] = {}


@dataclasses.dataclass(frozen=True)
class _Meta:
    """The last argument of the op's ``Function.apply``: how the flat tensors regroup into
    the op's arguments (``-1``: one value; ``n``: a list of ``n`` tensors), and the
    keyword-only arguments."""

    groups: tuple
    kwargs: tuple


class OpOverload:
    """``jitgrad.ops.<ns>.<name>.default``: the op's one overload (callable)."""

    def __init__(self, opdef: CustomOpDef) -> None:
        self._opdef = opdef

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._opdef(*args, **kwargs)

    def __repr__(self) -> str:
        return f"{self._opdef._namespace}.{self._opdef._name}.default"


class OpOverloadPacket(OpOverload):
    """``jitgrad.ops.<ns>.<name>`` (callable; ``.default`` is its overload)."""

    @property
    def default(self) -> OpOverload:
        return self._opdef._opoverload

    @property
    def _qualified_op_name(self) -> str:
        return self._opdef._qualname

    def __repr__(self) -> str:
        return f"{self._opdef._namespace}.{self._opdef._name}"


def _device_type(value: Any) -> str | None:
    if isinstance(value, Tensor):
        return value.device.type
    if isinstance(value, (list, tuple)):
        for v in value:
            d = _device_type(v)
            if d is not None:
                return d
    return None


class CustomOpDef:
    """A custom operator (made by :func:`jitgrad.library.custom_op`): call it like the function;
    register its kernels, autograd formula and fake (meta) function with the methods."""

    def __init__(self, namespace: str, name: str, schema: str, fn: Callable | None) -> None:
        self._namespace = namespace
        self._name = name
        self._schema = schema
        self._init_fn = fn  # (None for an op of ``Library.define``: kernels come by ``impl``)
        self._backend_fns: dict[str | None, Callable] = {}
        # kernels that do their own autograd (``Library.impl`` with an Autograd or
        # CompositeImplicitAutograd key): called as they are, traced through by the jit
        self._autograd_fns: dict[str | None, Callable] = {}
        self._composite_fns: dict[str | None, Callable] = {}
        self._abstract_fn: Callable | None = None
        self._setup_context_fn: Callable | None = None
        self._backward_fn: Callable | None = None
        self._disabled_kernel: set = set()
        self._args = parse_schema_args(schema)
        self._signature = inspect.signature(fn) if fn is not None else signature_of(self._args)
        self._mutated = tuple(a[0] for a in self._args if a[3])
        self._has_kwarg_only = any(a[2] for a in self._args)
        self._fn_name = fn.__name__ if fn is not None else name
        self._returns_nothing = schema.rsplit("->", 1)[1].strip() == "()"
        if any(a[2] and a[1].startswith("Tensor") for a in self._args):
            raise NotImplementedError(
                "custom_op with kwarg-only Tensor args. Please make your tensors not "
                f"kwarg-only. Got: {name}{schema}")
        self._function = type(f"GeneratedBackwardFor_{namespace}_{name}_default", (Function,),
                              {"forward": staticmethod(self._forward),
                               "backward": staticmethod(self._backward)})
        self._mutating_function = type(
            f"Functionalized_{namespace}_{name}", (Function,),
            {"forward": staticmethod(self._forward_functionalized)})
        self._opoverload = OpOverload(self)
        self._packet = OpOverloadPacket(self)
        custom_namespaces.namespace(namespace).add(name, self._packet)
        OPDEFS[self._qualname] = self

    @property
    def _qualname(self) -> str:
        return f"{self._namespace}::{self._name}"

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._qualname})>"

    # ---- registration ---------------------------------------------------------------------

    def register_kernel(self, device_types: str | Sequence[str] | None,
                        fn: Callable | None = None, /) -> Callable:
        """Register ``fn`` as the kernel for ``device_types`` ("cpu", "cuda", or several; None:
        every device). Usable as a decorator: ``@op.register_kernel("cpu")``.

        Raises:
            ValueError: device types given for an op without tensor arguments and without a
                ``device`` argument.
        """
        def inner(fn: Callable) -> Callable:
            types = [device_types] if device_types is None or isinstance(device_types, str) \
                else list(device_types)
            for t in types:
                self._backend_fns[t] = fn
            return fn

        if device_types is not None and not any(a[1].startswith("Tensor")
                                                for a in self._args):
            if not any(a[1].startswith("Device") for a in self._args):
                raise ValueError("Functions without tensor inputs are required to have a "
                                 "`device: torch.device` argument")
        return inner if fn is None else inner(fn)

    def register_fake(self, fn: Callable, /) -> Callable:
        """Register the fake (meta) function: given the inputs, it returns outputs of the right
        shapes and dtypes without computing them (``torch.compile`` needs it; jitgrad keeps it
        for :func:`jitgrad.library.opcheck`, its jit runs the kernel on stand-ins instead)."""
        self._abstract_fn = fn
        return fn

    def register_autograd(self, backward: Callable, /, *,
                          setup_context: Callable | None = None) -> None:
        """Register the op's backward formula: ``backward(ctx, *grads)`` returns one gradient
        per positional input (None for non-tensors); ``setup_context(ctx, inputs, output)``
        (with ``keyword_only_inputs`` when the op has keyword-only arguments) saves what it
        needs on ``ctx``.

        Raises:
            RuntimeError: the op mutates its arguments (not functional).
        """
        if self._mutated:
            raise RuntimeError(
                f"Cannot register autograd formula for non-functional operator {self} with "
                f"schema {self._qualname}{self._schema}. Please create a functional operator "
                "and register an autograd formula for that.")
        self._backward_fn = backward
        self._setup_context_fn = setup_context

    @contextlib.contextmanager
    def set_kernel_enabled(self, device_type: str, enabled: bool = True) -> Iterator[None]:
        """Within the block, the kernel registered for ``device_type`` is disabled
        (``enabled=False``: the op's own function runs instead) or enabled."""
        was_disabled = device_type in self._disabled_kernel
        if enabled:
            self._disabled_kernel.discard(device_type)
        else:
            self._disabled_kernel.add(device_type)
        try:
            yield
        finally:
            if was_disabled:
                self._disabled_kernel.add(device_type)
            else:
                self._disabled_kernel.discard(device_type)

    # ---- calls ----------------------------------------------------------------------------

    def _bind(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        pos, kw = [], {}
        for name, p in self._signature.parameters.items():
            if p.kind == inspect.Parameter.KEYWORD_ONLY:
                kw[name] = bound.arguments[name]
            else:
                pos.append(bound.arguments[name])
        return tuple(pos), kw

    def _device(self, args: tuple, kwargs: dict) -> str | None:
        device = next((d for d in map(_device_type, args) if d is not None), None)
        if device is None:  # (no tensors: the ``device`` argument picks)
            for (_, typ, _, _, _), a in zip(self._args, args + tuple(kwargs.values())):
                if typ.startswith("Device") and a is not None:
                    device = a.type if hasattr(a, "type") else str(a).split(":")[0]
        return device

    def _direct_kernel(self, args: tuple, kwargs: dict) -> Callable | None:
        """A kernel that does its own autograd, if one serves the call's device (an Autograd
        kernel first; a CompositeImplicitAutograd one where no backend kernel serves)."""
        if not (self._autograd_fns or self._composite_fns):
            return None
        device = self._device(args, kwargs)
        fn = self._autograd_fns.get(device, self._autograd_fns.get(None))
        if fn is None and device not in self._backend_fns and None not in self._backend_fns:
            fn = self._composite_fns.get(device, self._composite_fns.get(None))
        return fn

    def _kernel(self, args: tuple, kwargs: dict) -> Callable:
        device = self._device(args, kwargs)
        fn = self._backend_fns.get(device, self._backend_fns.get(None))
        if fn is None:
            fn = self._composite_fns.get(device, self._composite_fns.get(None))
        if fn is None:
            raise NotImplementedError(
                f"Could not run '{self._qualname}' with arguments from the "
                f"'{(device or 'cpu').upper()}' backend: no kernel is registered for it "
                f"(registered: {sorted(k for k in self._backend_fns if k)}). Please use "
                "register_kernel to add one.")
        if device in self._disabled_kernel and self._init_fn is not None:
            return self._init_fn
        return fn

    def _run(self, args: tuple, kwargs: dict) -> Any:
        kernel = self._kernel(args, kwargs)
        result = kernel(*args, **kwargs)
        if not self._mutated:
            self._check_aliasing(args, result, kernel)
        return result

    def _check_aliasing(self, args: tuple, result: Any, kernel: Callable) -> None:
        if state.traces:  # (stand-in tensors under jit: no memory to compare)
            return
        outs = [r for r in (result if isinstance(result, (tuple, list)) else (result,))
                if isinstance(r, Tensor)]
        ins = [t for a in args for t in (a if isinstance(a, (list, tuple)) else (a,))
               if isinstance(t, Tensor)]
        for i, o in enumerate(outs):
            if any(_aliases(o, x) for x in ins + outs[:i]):
                raise RuntimeError(
                    f"{self._name} (with implementation in {inspect.getmodule(kernel)}): The "
                    "output of this custom operator (1) must not also be an input to this "
                    "custom operator and (2) may not alias any inputs to this custom operator "
                    "or other returns. The most common way to trigger this error is if we have "
                    "y = custom_op(x) and y and x are the same Tensor. Please instead return a "
                    "clone of the offending output tensor(s) (e.g. return x.clone()) or "
                    "refactor the custom operator to not return y.")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = self._bind(args, kwargs)
        direct = self._direct_kernel(args, kwargs)
        if direct is not None:
            return direct(*args, **kwargs)
        if self._mutated:
            return self._call_mutating(args, kwargs)
        tensors = [t for a in args for t in (a if isinstance(a, (list, tuple)) else (a,))
                   if isinstance(t, Tensor)]
        if state.traces or (is_grad_enabled() and any(t.requires_grad for t in tensors)):
            flat, meta = self._flatten(args, kwargs)
            return self._function.apply(*flat, meta)
        return self._run(args, kwargs)

    def _flatten(self, args: tuple, kwargs: dict) -> tuple[list, _Meta]:
        flat, groups = [], []
        for a in args:
            if isinstance(a, (list, tuple)) and a and all(isinstance(t, Tensor) for t in a):
                flat.extend(a)
                groups.append(len(a))
            else:
                flat.append(a)
                groups.append(-1)
        return flat, _Meta(tuple(groups), tuple(kwargs.items()))

    def _call_mutating(self, args: tuple, kwargs: dict) -> Any:
        named = dict(zip(self._signature.parameters, args + tuple(kwargs.values())))
        written = [t for n in self._mutated
                   for t in (named[n] if isinstance(named[n], (list, tuple)) else (named[n],))
                   if isinstance(t, Tensor)]
        if is_grad_enabled():
            for t in written:
                if t.is_leaf and t.requires_grad:
                    raise RuntimeError("a leaf Variable that requires grad is being used in an "
                                       "in-place operation.")
        if state.traces:  # (jit: functionalized, see _forward_functionalized)
            flat, meta = self._flatten(args, kwargs)
            outs = self._mutating_function.apply(*flat, meta)
            for t, new in zip(written, outs[:len(written)]):
                t.copy_(new)  # (the jit writes it back into the real tensor after the call)
            rest = outs[len(written):]
            return rest[0] if rest and rest[-1] == "single" and len(rest) == 2 else \
                None if rest == ("none",) else tuple(rest[:-1])
        result = self._run(args, kwargs)
        for t in written:  # (in-place: saved values of them are now stale)
            t._vc[0] += 1
        return result

    def _forward_functionalized(self, ctx: Any, *flat: Any) -> tuple:
        """A mutating op as a function: the kernel writes into copies of the mutated tensors,
        which are returned (then the kernel's own outputs and how they were packed)."""
        meta = flat[-1]
        args = list(self._regroup(flat[:-1], meta.groups))
        names = list(self._signature.parameters)
        copies = []
        for i, a in enumerate(args):
            if names[i] in self._mutated:
                if isinstance(a, Tensor):
                    args[i] = a.clone()
                    copies.append(args[i])
                elif isinstance(a, (list, tuple)):
                    args[i] = [t.clone() for t in a]
                    copies.extend(args[i])
        kwargs = dict(meta.kwargs)
        result = self._kernel(tuple(args), kwargs)(*args, **kwargs)
        ctx.mark_non_differentiable(*copies)
        if result is None:
            return (*copies, "none")
        if isinstance(result, Tensor):
            return (*copies, result, "single")
        return (*copies, *result, "tuple")

    # ---- the autograd.Function ------------------------------------------------------------

    @staticmethod
    def _regroup(flat: tuple, groups: tuple) -> tuple:
        out, i = [], 0
        for g in groups:
            if g < 0:
                out.append(flat[i])
                i += 1
            else:
                out.append(list(flat[i:i + g]))
                i += g
        return tuple(out)

    def _forward(self, ctx: Any, *flat: Any) -> Any:
        meta = flat[-1]
        args, kwargs = self._regroup(flat[:-1], meta.groups), dict(meta.kwargs)
        ctx._forward_meta = meta  # (for backward: the inputs' grouping)
        result = self._run(args, kwargs)
        if self._setup_context_fn is not None:
            if self._has_kwarg_only:
                self._setup_context_fn(ctx=ctx, inputs=args, keyword_only_inputs=kwargs,
                                       output=result)
            else:
                self._setup_context_fn(ctx=ctx, inputs=args, output=result)
        return result

    def _backward(self, ctx: Any, *grads: Any) -> tuple:
        if self._backward_fn is None:
            raise RuntimeError(
                f"Trying to backward through {self._opoverload} but no autograd formula was "
                "registered. Please use register_autograd to add one.")
        groups = ctx._forward_meta.groups
        prev = ctx.needs_input_grad
        try:  # (one entry per op input, as the user's backward returns; a list for a list)
            ctx.needs_input_grad = self._regroup(prev[:-1], groups)
            result = self._backward_fn(ctx, *grads)
        finally:
            ctx.needs_input_grad = prev
        if not isinstance(result, tuple):
            result = (result,)
        flat: list = []
        for g, n in zip(result, groups):
            if n < 0:
                flat.append(g)
            else:
                flat.extend(g if g is not None else [None] * n)
        return (*flat, None)


def _aliases(a: Tensor, b: Tensor) -> bool:
    if a is b:
        return True
    if a.device.type != "cpu" or b.device.type != "cpu":
        return False
    return bool(np.shares_memory(a.detach().numpy(), b.detach().numpy()))

