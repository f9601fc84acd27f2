"""``autograd.Function`` under ``vmap``: its ``vmap`` staticmethod, or the rule that
``generate_vmap_rule = True`` asks for, as torch.func runs them.

A Function with a ``vmap(info, in_dims, *args)`` staticmethod gets the batch values (batch dim
first, ``in_dims`` 0 or None) one level down and returns ``(output, out_dims)``. With
``generate_vmap_rule = True``, the Function runs one level down as a derived Function whose
``forward`` (with ``setup_context``) and ``backward`` are the original's under ``vmap``: its
saved tensors are saved batched, and its ``backward`` sees them per sample again, so the
custom gradient rule (not the autodiff of ``forward``) is what the batch differentiates.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from ..tensor import Tensor
from . import _pytree as pytree

VmapInfo = namedtuple("VmapInfo", ["batch_size", "randomness"])

_SETUP_CONTEXT_ERROR = (
    "In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, jacrev, "
    "...), it must override the setup_context staticmethod. For more details, please see "
    "https://pytorch.org/docs/main/notes/extending.func.html")


def has_vmap_staticmethod(cls: type) -> bool:
    """Whether ``cls`` (an ``autograd.Function``) defines its own ``vmap`` rule."""
    from ..autograd.function import Function

    return getattr(cls, "vmap", None) is not getattr(Function, "vmap", None)


def apply_batched(level: Any, cls: type, values: list, flags: list, kwargs: dict,
                  vmap_module: Any) -> Any:
    """``cls.apply`` on the batch values of ``level`` (``flags``: which are batched); runs one
    level down and returns the outputs batched at ``level``. ``vmap_module`` is
    ``jitgrad.func.vmap`` (passed in: it imports this module)."""
    from ..autograd.function import Function

    below, wrap = vmap_module.below, vmap_module.wrap

    in_dims = tuple(0 if f else None for f in flags)
    with below(level.index):
        if has_vmap_staticmethod(cls):
            info = VmapInfo(level.size, level.randomness)
            res = cls.vmap(info, in_dims, *values, **kwargs)
            if not (isinstance(res, tuple) and len(res) == 2):
                raise RuntimeError(
                    f"Expected the vmap staticmethod to have two returns, an output and out_dims "
                    f"with pytree structure compatible with the output. Got {res!r}")
            out, out_dims = res
        elif getattr(cls, "generate_vmap_rule", False):
            if cls.setup_context is Function.setup_context:
                raise RuntimeError(_SETUP_CONTEXT_ERROR)
            gen = _generated(cls, vmap_module.vmap)
            out = gen.apply(in_dims, level.size, level.randomness, *values)
            out_dims = 0
        else:
            raise RuntimeError(
                f"You tried to vmap over {cls.__name__}, but it does not have vmap support. "
                "Please override and implement the vmap staticmethod or set "
                "generate_vmap_rule=True. For more details, please see "
                "https://pytorch.org/docs/main/notes/extending.func.html")
    flat, spec = pytree.tree_flatten(out)
    dims = [out_dims] * len(flat) if out_dims is None or isinstance(out_dims, int) \
        else pytree.tree_flatten(out_dims)[0]
    if len(dims) != len(flat):
        raise RuntimeError(
            f"The autograd.Function's vmap staticmethod returned an incompatible (output, "
            f"out_dims) tuple. Expected out_dims={out_dims} to be compatible with the structure "
            f"of `output`. out_dims has structure {pytree.tree_structure(out_dims)} but output "
            f"has structure {spec}.")
    result = []
    for o, d in zip(flat, dims):
        if isinstance(o, Tensor) and d is not None:
            with below(level.index):
                o = o.movedim(d, 0) if d != 0 else o
            o = wrap(level, o)
        result.append(o)
    return pytree.tree_unflatten(result, spec)


_GENERATED: dict = {}


def _generated(cls: type, vmap: Any) -> type:
    """The derived Function that runs ``cls`` under ``vmap`` (one per ``cls``)."""
    if cls in _GENERATED:
        return _GENERATED[cls]
    from ..autograd.function import Function

    class _Ctx:
        """What ``cls.setup_context``/``backward`` see as ``ctx``: the real node's attributes,
        with the saved tensors kept per sample."""

        def __init__(self, node: Any, saved: tuple = (), needs: tuple = ()) -> None:
            object.__setattr__(self, "_node", node)
            object.__setattr__(self, "_saved_here", saved)
            object.__setattr__(self, "_marked", ())
            object.__setattr__(self, "needs_input_grad", needs)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._node, name)

        def __setattr__(self, name: str, value: Any) -> None:
            setattr(self._node, name, value)

        def save_for_backward(self, *tensors: Any) -> None:
            object.__setattr__(self, "_saved_here", tensors)

        def save_for_forward(self, *tensors: Any) -> None:
            pass  # (the generated rule has no forward-mode rule)

        def mark_non_differentiable(self, *tensors: Any) -> None:
            object.__setattr__(self, "_marked", tensors)

        def mark_dirty(self, *tensors: Any) -> None:
            raise RuntimeError("vmap: in-place operations (mark_dirty) in an autograd.Function "
                               "with generate_vmap_rule=True are not supported")

        @property
        def saved_tensors(self) -> tuple:
            return tuple(self._saved_here)

    def forward(ctx: Any, in_dims: tuple, size: int, randomness: str, *values: Any) -> Any:
        box: dict = {}

        def per_sample(*args: Any) -> tuple:
            out = cls.forward(*args)
            proxy = _Ctx(ctx)
            cls.setup_context(proxy, args, out)
            outs = out if isinstance(out, tuple) else (out,)
            box["single"] = not isinstance(out, tuple)
            box["marked"] = [any(o is m for m in proxy._marked) for o in outs]
            saved = proxy._saved_here
            box["saved_none"] = [s is None for s in saved]
            return tuple(outs), tuple(s for s in saved if s is not None)

        outs, saved = vmap(per_sample, in_dims=in_dims, randomness=randomness)(*values)
        it = iter(saved)
        ctx.save_for_backward(*[None if none else next(it) for none in box["saved_none"]])
        marked = [o for o, m in zip(outs, box["marked"]) if m]
        if marked:
            ctx.mark_non_differentiable(*marked)
        ctx._gen = (in_dims, randomness, box["single"])
        return outs[0] if box["single"] else tuple(outs)

    def backward(ctx: Any, *grads: Any) -> tuple:
        in_dims, randomness, _ = ctx._gen
        saved = ctx.saved_tensors
        kept = [s for s in saved if s is not None]
        needs = ctx.needs_input_grad[3:]
        nones: list = []

        def per_sample(*args: Any) -> tuple:
            it = iter(args[:len(kept)])
            per_saved = tuple(None if s is None else next(it) for s in saved)
            res = cls.backward(_Ctx(ctx, per_saved, needs), *args[len(kept):])
            res = res if isinstance(res, tuple) else (res,)
            nones[:] = [r is None for r in res]
            return tuple(r for r in res if r is not None)

        out = vmap(per_sample, randomness=randomness)(*kept, *grads)
        it = iter(out)
        res = [None if none else next(it) for none in nones]
        res += [None] * (len(in_dims) - len(res))
        # an input that was not batched gets the sum of the per-sample gradients
        res = [g if g is None or d is not None else g.sum(0) for g, d in zip(res, in_dims)]
        return (None, None, None) + tuple(res)

    gen = type(f"Vmapped{cls.__name__}", (Function,), {
        "forward": staticmethod(forward), "backward": staticmethod(backward)})
    _GENERATED[cls] = gen
    return gen
