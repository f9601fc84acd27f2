"""``jitgrad.autograd.forward_ad``: forward-mode AD with dual tensors (torch's API).

Inside ``with dual_level():`` a tensor made by ``make_dual(primal, tangent)`` carries its
tangent in ``Tensor._fw_grads`` (a dict ``{level: tangent}``). While a level is active,
``ops.registry.apply`` calls ``_propagate`` after every op, which gives the outputs their
tangents with the op's JVP rule (``OpDef.jvp``, written with jitgrad ops like the VJP rules, so
tangent computations are themselves differentiable). Exiting the level drops every tangent
made in it. Only one level at a time is supported, as in torch.
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from collections.abc import Iterator
from typing import Any, NamedTuple

from ..ops import registry
from ._decorator import DecoratorContextManager

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "dual_level"]

_current_level = -1
_duals: dict[int, list] = {}  # level -> weak references to the tensors holding a tangent


def enter_dual_level() -> int:
    """Enters a new forward grad level and makes it the default of the other functions.

    Returns:
        The new level (0: nested levels are not supported).
    """
    global _current_level
    if _current_level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _current_level += 1
    _duals[_current_level] = []
    registry.fw_hook = _propagate
    return _current_level


def exit_dual_level(*, level: int | None = None) -> None:
    """Exits a forward grad level, deleting every tangent associated with it.

    Args:
        level: The level to exit; only the latest entered level may be exited.
    """
    global _current_level
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    if level != _current_level:
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. This "
            "is not supported.")
    for ref in _duals.pop(level, ()):
        t = ref()
        if t is not None and t._fw_grads is not None:
            t._fw_grads.pop(level, None)
            if not t._fw_grads:
                t._fw_grads = None
    _current_level = level - 1
    if _current_level < 0:
        registry.fw_hook = None


class dual_level(DecoratorContextManager):  # noqa: N801 - torch's name
    """Context manager (and decorator) inside which forward-mode AD computations happen.

    ``__enter__`` returns the level. On exit, every tangent of this level is deleted, so
    ``unpack_dual`` then returns a None tangent.
    """

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc: Any) -> None:
        exit_dual_level()


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the primal and the tangent (None if there is none)."""

    primal: Any
    tangent: Any


def _tangent(t: Any, level: int) -> Any:
    fw = t._fw_grads
    return fw.get(level) if fw is not None else None


def _set_tangent(t: Any, tangent: Any, level: int) -> None:
    if t._fw_grads is None:
        t._fw_grads = {}
    t._fw_grads[level] = tangent
    _duals[level].append(weakref.ref(t))


def make_dual(tensor: Any, tangent: Any, *, level: int | None = None) -> Any:
    """Associates ``tensor`` with its ``tangent``: returns a dual tensor for forward AD.

    The result is a view of ``tensor`` (so it is backward differentiable) holding ``tangent``
    as-is.

    Args:
        tensor: The primal value (floating point or complex).
        tangent: Its tangent, of the same shape.
        level: The dual level (default: the current one).
    """
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
            "enter_dual_level() first.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(
            f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(
            f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if level != _current_level:
        raise RuntimeError(
            f"Trying to create a dual Tensor at level {level} but the current level is "
            f"{_current_level}.")
    if _tangent(tensor, level) is not None:
        raise RuntimeError(
            "Making a dual Tensor based on a Tensor that already has a forward gradient at the "
            f"same level {level} is not supported.")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(tensor.shape)} "
            f"while the given forward gradient is of size {list(tangent.shape)}.")
    from ..ops.movement import VIEW

    dual = registry.apply(VIEW, tensor, shape=tuple(tensor.shape))
    _set_tangent(dual, tangent, level)
    return dual


def unpack_dual(tensor: Any, *, level: int | None = None) -> UnpackedDualTensor:
    """Returns ``(primal, tangent)`` of a dual tensor; ``tangent`` is None if it has none.

    ``primal`` is a view of ``tensor`` without the tangent (backward differentiable).

    Args:
        tensor: Any tensor.
        level: The dual level (default: the current one).
    """
    if level is None:
        level = _current_level
    if level < 0 or registry.fw_hook is None:  # no level, or inside a Function's forward
        return UnpackedDualTensor(tensor, None)
    tangent = _tangent(tensor, level)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    from ..ops.movement import VIEW

    hook = registry.fw_hook
    registry.fw_hook = None
    try:
        primal = registry.apply(VIEW, tensor, shape=tuple(tensor.shape))
    finally:
        registry.fw_hook = hook
    return UnpackedDualTensor(primal, tangent)


# ---------------------------------------------------------------- propagation through ops


def _propagate(op: registry.OpDef, args: tuple, params: dict, outputs: tuple) -> None:
    """The ``registry.fw_hook``: computes the tangents of ``outputs`` from those of ``args``."""
    level = _current_level
    Tensor = registry.Tensor
    tangents = None
    for i, a in enumerate(args):
        if isinstance(a, Tensor) and a._fw_grads is not None:
            t = a._fw_grads.get(level)
            if t is not None:
                if tangents is None:
                    tangents = [None] * len(args)
                tangents[i] = t
    if tangents is None or not op.differentiable:
        return
    if op.jvp is None:
        raise NotImplementedError(
            f"Trying to use forward AD with {op.name} that does not support it because it has "
            "not been implemented yet.")
    registry.fw_hook = None  # the rule's own ops do not propagate tangents
    try:
        ans = outputs[0] if op.n_outputs == 1 else outputs
        out = run_jvp(op, tuple(tangents), ans, args, params)
    finally:
        registry.fw_hook = _propagate
    outs = (out,) if op.n_outputs == 1 else tuple(out)
    for o, t in zip(outputs, outs):
        if t is not None and (o._dtype.is_floating_point or o._dtype.is_complex):
            _set_tangent(o, _fit_tangent(t, o), level)


def _fit_tangent(t: Any, o: Any) -> Any:
    """Casts a tangent to its primal's dtype (the real part for a real primal) and shape."""
    if t.dtype is not o._dtype:
        if t.dtype.is_complex and not o._dtype.is_complex:
            t = t.real
        if t.dtype is not o._dtype:
            t = t.to(o._dtype)
    if tuple(t.shape) != tuple(o.shape):
        t = t.expand(tuple(o.shape))
    return t


def run_jvp(op: registry.OpDef, tangents: tuple, ans: Any, inputs: tuple, params: dict) -> Any:
    """Applies ``op``'s JVP rule (a function or one of the registry's shorthands)."""
    rule = op.jvp
    if rule == registry.LINEAR:
        return registry.apply(op, *_linear_args(tangents, inputs), **params)
    if rule == registry.BILINEAR:
        a, b = inputs[0], inputs[1]
        ta, tb = tangents[0], tangents[1]
        out = registry.apply(op, ta, b, **params) if ta is not None else None
        if tb is not None:
            term = registry.apply(op, a, tb, **params)
            out = term if out is None else out + term
        return out
    if rule == registry.ELEMENTWISE:
        # For the pointwise rules (torch's convention: vjp_i(g) = g * conj(df/dx_i)), the JVP
        # is sum_i t_i * df/dx_i = conj(vjp_i(conj(t_i))); conj is a no-op on real tensors.
        out = None
        rules = op.vjp if isinstance(op.vjp, tuple) else (None,) * len(tangents)
        for i, (r, t) in enumerate(zip(rules, tangents)):
            if t is None:
                continue
            if r is not None:
                term = r(t.conj(), ans, *inputs, **params)
            elif not isinstance(op.vjp, tuple):  # one function for all the inputs' gradients
                term = op.vjp(t.conj(), ans, *inputs, **params)[i]
            else:
                continue
            if term is not None:
                term = term.conj()
                out = term if out is None else out + term
        return out
    return rule(tangents, ans, *inputs, **params)


def _linear_args(tangents: tuple, inputs: tuple) -> list:
    from ..ops.creation import zeros

    Tensor = registry.Tensor
    args = []
    for t, a in zip(tangents, inputs):
        if t is not None:
            args.append(t)
        elif isinstance(a, Tensor):
            floating = a._dtype.is_floating_point or a._dtype.is_complex
            args.append(zeros(tuple(a.shape), dtype=a._dtype, device=a.device) if floating
                        else a)
        elif isinstance(a, (int, float, complex)) and not isinstance(a, bool):
            args.append(0)
        else:
            args.append(a)
    return args


# ---------------------------------------------------------------- custom Functions


def function_jvp(cls: Any, ctx: Any, args: tuple, outputs: tuple) -> None:
    """Gives the outputs of a custom Function their tangents with its ``jvp`` staticmethod.

    Called by ``Function.apply`` when an input has a tangent. ``jvp(ctx, *tangents)`` receives
    one tangent per input (zeros for tensors without one, None for non-tensors) and, through
    ``ctx.saved_tensors``, what forward passed to ``ctx.save_for_forward``.
    """
    from ..ops.creation import zeros_like

    level = _current_level
    Tensor = registry.Tensor
    tangents = []
    for a in args:
        if isinstance(a, Tensor):
            t = _tangent(a, level)
            tangents.append(t if t is not None else zeros_like(a))
        else:
            tangents.append(None)
    saved = ctx._saved
    ctx._saved = list(getattr(ctx, "_saved_for_forward", ()))
    registry.fw_hook = None
    try:
        out = cls.jvp(ctx, *tangents)
    finally:
        registry.fw_hook = _propagate
        ctx._saved = saved
    outs = out if isinstance(out, tuple) else (out,)
    tensors = [o for o in outputs if isinstance(o, Tensor)]
    if len(outs) != len(tensors):
        raise RuntimeError(
            f"jvp() returned an incorrect number of tangents (expected {len(tensors)}, got "
            f"{len(outs)})")
    for o, t in zip(tensors, outs):
        if t is not None and (o._dtype.is_floating_point or o._dtype.is_complex):
            _set_tangent(o, _fit_tangent(t, o), level)


def has_tangent(args: tuple) -> bool:
    """Whether a dual level is active and one of ``args`` has a tangent at it."""
    if _current_level < 0:
        return False
    Tensor = registry.Tensor
    return any(isinstance(a, Tensor) and _tangent(a, _current_level) is not None for a in args)


@contextlib.contextmanager
def fw_disabled() -> Iterator[None]:
    """Tangents do not propagate inside (a custom Function's forward: its jvp gives them)."""
    hook = registry.fw_hook
    registry.fw_hook = None
    try:
        yield
    finally:
        registry.fw_hook = hook


def transfer_tangent(src: Any, dst: Any) -> None:
    """An in-place op wrote ``src``'s value into ``dst``: ``dst`` takes ``src``'s tangent."""
    level = _current_level
    t = _tangent(src, level) if level >= 0 else None
    if dst._fw_grads is not None:
        dst._fw_grads.pop(level, None)
    if t is not None:
        _set_tangent(dst, t, level)


registry.forward_ad = sys.modules[__name__]  # (see registry.forward_ad)
