"""``vmap``: vectorizing map, torch.func's semantics, as a batching level of the dispatcher.

``vmap(f)(x)`` runs ``f`` once on ``Batched`` tensors: tensors that show ``f`` one sample's
shape while holding the whole batch (their ``_value``, batch dim first). A ``BatchTrace`` (one
per ``vmap`` call, a *level*) sits on the dispatcher's trace stack (``registry.state.traces``)
above any jit trace; ``registry.apply`` hands it every op, and ``bind`` runs the op's batching
rule (``OpDef.batch``, else the generic rule of its kind in ``batching.py``, else a loop over
the batch) on the batch values, one level down. Inside ``jit``, the values are jit tracers: a
vmapped function traces into one graph of batched equations. Nested ``vmap`` stacks levels, as
JAX's ``BatchTrace`` and functorch's levels do.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .._tracer import Tracer
from ..ops import registry
from ..ops.registry import state
from ..tensor import Tensor
from . import _pytree as pytree

__all__ = ["vmap", "Batched", "BatchTrace"]

_ITEM_ERROR = (
    "vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over "
    "calling .item() on a Tensor, please try to rewrite what you're doing with other "
    "operations. If error is occurring somewhere inside PyTorch internals, please file a bug "
    "report.")
_DATA_ERROR = "Cannot access data pointer of Tensor that doesn't have storage"
_CONTROL_FLOW_ERROR = (
    "vmap: It looks like you're attempting to use a Tensor in some data-dependent control "
    "flow. We don't support that yet, please file an issue at "
    "https://github.com/pytorch/pytorch/issues .")


class Batched(Tracer):
    """A tensor inside ``vmap``: one sample's shape outside, the whole batch inside.

    ``_value`` is the batch (a tensor of the level below: eager, a jit tracer or another
    level's ``Batched``) with the batch dim first; ``_trace`` is its ``BatchTrace``.
    ``_uniform``: every sample is the same by construction (an unbatched primal that a
    transform inside ``vmap`` lifted to the batch, and what deterministic ops make of such
    values alone): torch keeps those unbatched, so ``bool()`` and ``item()`` of them work.
    """

    __slots__ = ("_value", "_uniform")

    @property
    def device(self):
        """The CPU, as for every tracer, unless the batch is on the meta device (so that
        tensors made like this one, ``zeros_like``, are meta too)."""
        v = self._value
        return v.device if v.is_meta else Tracer.device.fget(self)

    @property
    def is_meta(self) -> bool:
        return self._value.is_meta

    @property
    def _data(self):
        raise RuntimeError(_DATA_ERROR)

    def _sample(self) -> Tensor:
        """The one sample of a uniform value (one level down)."""
        with below(self._trace.index):
            return self._value[0]

    def item(self):
        if self._uniform:
            return self._sample().item()
        raise RuntimeError(_ITEM_ERROR)

    def tolist(self):
        raise RuntimeError(_DATA_ERROR)

    def numpy(self, *, force: bool = False):
        raise RuntimeError(_DATA_ERROR)

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError(_DATA_ERROR)

    def __bool__(self) -> bool:
        if self._uniform:
            return bool(self._sample())
        raise RuntimeError(_CONTROL_FLOW_ERROR)

    def __float__(self) -> float:
        if self._uniform:
            return float(self._sample())
        raise RuntimeError(_ITEM_ERROR)

    def __int__(self) -> int:
        if self._uniform:
            return int(self._sample())
        raise RuntimeError(_ITEM_ERROR)

    def __index__(self) -> int:
        if self._uniform:
            return self._sample().__index__()
        raise RuntimeError(_ITEM_ERROR)

    def __complex__(self) -> complex:
        raise RuntimeError(_ITEM_ERROR)

    def backward(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "vmap: .backward() is not supported inside vmap; use jitgrad.func.grad or vjp "
            "inside the vmapped function instead")

    def register_hook(self, hook: Any) -> Any:
        raise RuntimeError("vmap: register_hook is not supported on a Tensor inside vmap")

    def __repr__(self) -> str:
        return (f"BatchedTensor(lvl={self._trace.index + 1}, bdim=0, value=\n"
                f"{self._value!r}\n)")

    def __deepcopy__(self, memo):
        raise RuntimeError("vmap: deepcopy of a Tensor inside vmap is not supported")


def wrap(trace: BatchTrace, value: Any, uniform: bool = False) -> Batched:
    """A ``Batched`` of ``trace``'s level for ``value`` (batch dim first; ``uniform``: every
    sample the same)."""
    t = Batched.__new__(Batched)
    t._value = value
    t._uniform = uniform
    t._var = None
    t._shape = tuple(value.shape[1:])
    t._dtype = value.dtype
    t._requires_grad = value.requires_grad
    t._grad = t._grad_fn = t._base = t._hooks = t._post_acc_hooks = t._accumulator = None
    t._fw_grads = None
    t._output_nr, t._vc = 0, [0]
    t._retains_grad = t._is_inference = False
    t._trace = trace
    return t


@contextmanager
def below(index: int) -> Iterator[None]:
    """Runs the block with the trace stack cut to the levels below ``index``."""
    traces = state.traces
    saved = traces[index:]
    del traces[index:]
    try:
        yield
    finally:
        del traces[index:]
        traces.extend(saved)


class BatchTrace:
    """One ``vmap`` level: the batch size, the randomness mode and the stack position."""

    batching = True

    def __init__(self, size: int, randomness: str) -> None:
        self.size = size
        self.randomness = randomness
        self.index = len(state.traces)

    # ------------------------------------------------------------------ values
    def lift(self, x: Any) -> Any:
        """``x`` as a value of this level's batch: its ``_value``, or ``x`` repeated ``size``
        times (an expand, no copy). Call below this level."""
        if type(x) is Batched and x._trace is self:
            return x._value
        return x.unsqueeze(0).expand((self.size,) + tuple(x.shape))

    # ------------------------------------------------------------------ dispatch
    def bind(self, op: registry.OpDef, args: tuple, params: dict) -> Any:
        from .batching import run_rule

        if op.nondeterministic and not args:  # a random draw (ops/rng.py): by the randomness mode
            draw = dict(params)
            return self.random(draw.pop("kind"), draw.pop("shape"), draw.pop("dtype"),
                               draw.pop("generator", None), **draw)
        top = None
        for a in args:
            if type(a) is Batched and (top is None or a._trace.index > top.index):
                top = a._trace
        if top is None:  # nothing batched: the op belongs to the levels below every vmap
            with below(_lowest_batch_level()):
                return registry.apply(op, *args, **params)
        if top is not self:
            return top.bind(op, args, params)
        if op.decompose is not None and op.batch is None:
            out = op.decompose(*args, **params)  # composites batch through their primitives
            if out is not NotImplemented:
                return out
        flags = [type(a) is Batched and a._trace is self for a in args]
        values = [a._value if f else a for a, f in zip(args, flags)]
        with below(self.index):
            out = run_rule(self, op, values, flags, params)
        uniform = not op.nondeterministic and all(a._uniform for a, f in zip(args, flags) if f)
        if isinstance(out, (tuple, list)):
            return tuple(wrap(self, o, uniform) for o in out)
        return wrap(self, out, uniform)

    def random(self, kind: str, shape: tuple, dtype: Any, generator: Any = None,
               **params: Any) -> Any:
        """A random draw inside vmap, by the level's ``randomness`` mode."""
        from .. import random as jrandom

        if self.randomness == "error":
            raise RuntimeError(
                "vmap: called random operation while in randomness error mode. Please either "
                "use the 'same' or 'different' randomness flags on vmap or perform the "
                "randomness operation out of vmap")
        same = self.randomness == "same"
        size = tuple(shape) if same else (self.size,) + tuple(shape)
        with below(self.index):
            if kind == "uniform":
                out = jrandom.rand(size, dtype=dtype, generator=generator)
            elif kind == "normal":
                out = jrandom.randn(size, dtype=dtype, generator=generator)
            else:
                out = jrandom.randint(params["low"], params["high"], size, dtype=dtype,
                                      generator=generator)
        return out if same else wrap(self, out)

    def random_fill(self, target: Tensor, fill: Callable) -> Tensor:
        """An in-place random draw (``uniform_``, ``normal_`` ...) inside vmap: ``fill`` writes
        a plain tensor; by the level's ``randomness`` mode, as torch's."""
        if self.randomness == "error":
            self.random("uniform", (), None)  # (its error)
        batched = type(target) is Batched and target._trace is self
        if not batched:
            if self.randomness == "different":
                raise RuntimeError(
                    "vmap: Cannot ask for different inplace randomness on an unbatched tensor. "
                    "This will appear like same randomness. If this is necessary for your "
                    "usage, please file an issue with functorch.")
            with below(self.index):
                return fill(target)
        with below(self.index):
            if self.randomness == "same":  # (one sample's draw, written into each)
                from ..ops.creation import empty

                target._value.copy_(fill(empty(tuple(target.shape), dtype=target.dtype)))
            else:
                fill(target._value)
                target._uniform = False
        return target

    def inplace(self, target: Tensor, new: Any) -> Tensor:
        """An in-place op inside vmap: written into the batch one level down."""
        if not (type(target) is Batched and target._trace is self):
            if type(new) is Batched and new._trace.index >= self.index:
                raise RuntimeError(
                    f"output with shape {list(target.shape)} doesn't match the broadcast shape "
                    f"{[new._trace.size] + list(new.shape)}")
            with below(self.index):
                return target.copy_(new)
        if tuple(new.shape) != tuple(target.shape):
            from ..ops.registry import broadcast_shapes

            if broadcast_shapes(tuple(target.shape), tuple(new.shape)) != tuple(target.shape):
                raise RuntimeError(
                    f"output with shape {list(target.shape)} doesn't match the broadcast shape "
                    f"{list(broadcast_shapes(tuple(target.shape), tuple(new.shape)))}")
        with below(self.index):
            value = self.lift(new) if type(new) is Batched and new._trace is self else new
            target._value.copy_(value)
        if type(new) is Batched and new._trace is self and not new._uniform:
            target._uniform = False
        return target

    def read_value(self, t: Tensor) -> None:
        for tr in reversed(state.traces[:self.index]):
            if not tr.batching:
                tr.read_value(t)
                return

    def apply_function(self, cls: type, args: tuple, kwargs: dict) -> Any:
        flags = [type(a) is Batched and a._trace is self for a in args]
        if any(flags):  # its vmap staticmethod, or the rule generate_vmap_rule asks for
            from .batching_function import apply_batched

            values = [a._value if f else a for a, f in zip(args, flags)]
            return apply_batched(self, cls, values, flags, kwargs, sys.modules[__name__])
        if any(type(a) is Batched for a in args):  # batched at a lower level only
            with below(self.index):
                return cls.apply(*args, **kwargs)
        with below(_lowest_batch_level()):
            return cls.apply(*args, **kwargs)


def _lowest_batch_level() -> int:
    for i, tr in enumerate(state.traces):
        if tr.batching:
            return i
    return len(state.traces)


def current_level() -> BatchTrace | None:
    """The innermost active vmap level, when it is the top of the trace stack."""
    traces = state.traces
    return traces[-1] if traces and traces[-1].batching else None


# ---------------------------------------------------------------------- vmap


def _fname(func: Callable) -> str:
    return getattr(func, "__name__", repr(func))


def _check_in_dims(func: Callable, in_dims: Any, args: tuple) -> list:
    """One in_dim per flattened argument (None or a dim), checked with torch's texts."""
    def bad_type():
        return ValueError(
            f"vmap({_fname(func)}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to "
            "be int or a (potentially nested) tuple matching the structure of inputs, got: "
            f"{type(in_dims)}.")

    if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
        raise bad_type()
    flat_args, spec = pytree.tree_flatten(args)
    if isinstance(in_dims, int):
        dims = [in_dims] * len(flat_args)
    else:
        if len(in_dims) != len(args):
            raise ValueError(
                f"vmap({_fname(func)}, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
                "compatible with the structure of `inputs`. in_dims has structure "
                f"{pytree.tree_structure(in_dims)} but inputs has structure {spec}.")
        dims = []
        for d, a in zip(in_dims, args):
            n = len(pytree.tree_flatten(a)[0])
            if d is None or isinstance(d, int):
                dims.extend([d] * n)
            else:
                try:
                    dims.extend(pytree.broadcast_prefix(d, a))
                except ValueError:
                    raise ValueError(
                        f"vmap({_fname(func)}, in_dims={in_dims}, ...)(<inputs>): in_dims is "
                        "not compatible with the structure of `inputs`. in_dims has structure "
                        f"{pytree.tree_structure(in_dims)} but inputs has structure "
                        f"{spec}.") from None
    for d, a in zip(dims, flat_args):
        if d is None:
            continue
        if not isinstance(d, int) or isinstance(d, bool):
            raise ValueError(
                f"vmap({_fname(func)}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for "
                "an input but in_dim must be either an integer dimension or None.")
        if not isinstance(a, Tensor):
            raise ValueError(
                f"vmap({_fname(func)}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for "
                f"an input but the input is of type {type(a)}. We cannot vmap over non-Tensor "
                "arguments, please use None as the respective in_dim")
        n = a.ndim
        if not -n <= d < n:
            raise ValueError(
                f"vmap({_fname(func)}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for "
                f"some input, but that input is a Tensor of dimensionality {n} so expected "
                f"in_dim to satisfy {-n} <= in_dim < {n}.")
    return dims


def _batch_size(func: Callable, in_dims: Any, dims: list, flat_args: list) -> int:
    sizes = [a.shape[d] for d, a in zip(dims, flat_args) if d is not None]
    if not sizes:
        raise ValueError(
            f"vmap({_fname(func)}, in_dims={in_dims}, ...)(<inputs>): at least one input must "
            "be a Tensor with a mapped dimension (in_dims were all None)")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got "
            f"sizes {sizes} for the mapped dimension")
    return sizes[0]


def _out_dims(func: Callable, out_dims: Any, out: Any) -> list:
    flat, spec = pytree.tree_flatten(out)
    if out_dims is None or isinstance(out_dims, int):
        return [out_dims] * len(flat)
    if isinstance(out_dims, tuple) and not isinstance(out, tuple) and len(out_dims) == 1:
        return [out_dims[0]] * len(flat)
    try:
        return pytree.broadcast_prefix(out_dims, out)
    except ValueError:
        raise ValueError(
            f"vmap({_fname(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
            "compatible with the structure of `outputs`. out_dims has structure "
            f"{pytree.tree_structure(out_dims)} but outputs has structure {spec}.") from None


def vmap(func: Callable, in_dims: int | tuple = 0, out_dims: int | tuple = 0,
         randomness: str = "error", *, chunk_size: int | None = None) -> Callable:
    """Vectorizes ``func`` over a dimension of its inputs (torch.func.vmap).

    Args:
        func: a function of tensors (and pytrees of them) returning tensors (or pytrees).
        in_dims: the mapped dim of each input: an int for all, or a tuple (nested like the
            inputs) of ints and None (not mapped).
        out_dims: where the mapped dim goes in each output (an int, or a tuple like the
            outputs; None for an output that does not depend on the mapped inputs).
        randomness: "error" (random ops raise), "different" (one draw per sample) or "same"
            (one draw shared by the batch).
        chunk_size: run the batch in chunks of this many samples (None: all at once).

    Returns:
        The batched function.
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError("Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    compiled: list = []  # vmap(jit(f)) at the top level: jit(vmap(f)), compiled once

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if not state.traces and _is_plain_jit(func):
            if not compiled:
                from ..jit import jit

                compiled.append(jit(vmap(func.py_func, in_dims, out_dims, randomness,
                                         chunk_size=chunk_size), backend=func.backend))
            return compiled[0](*args, **kwargs)
        dims = _check_in_dims(func, in_dims, args)
        flat_args, spec = pytree.tree_flatten(args)
        size = _batch_size(func, in_dims, dims, flat_args)
        if chunk_size is None or chunk_size >= size:
            return _vmap_call(func, spec, flat_args, dims, size, out_dims, randomness, kwargs)
        from ..ops.movement import cat

        from ..random import get_rng_state, set_rng_state

        parts = []
        rng_state = get_rng_state() if randomness == "same" else None
        for start in range(0, size, chunk_size):
            if rng_state is not None:  # (as torch's: every chunk draws the same numbers)
                set_rng_state(rng_state)
            n = min(chunk_size, size - start)
            chunk = [a.narrow(d, start, n) if d is not None else a
                     for a, d in zip(flat_args, dims)]
            parts.append(_vmap_call(func, spec, chunk, dims, n, out_dims, randomness, kwargs))
        flat0, ospec = pytree.tree_flatten(parts[0])
        odims = _out_dims(func, out_dims, parts[0])
        cols = [pytree.tree_flatten(p)[0] for p in parts]
        outs = [cat([c[i] for c in cols], dim=d) if d is not None else flat0[i]
                for i, d in enumerate(odims)]
        return pytree.tree_unflatten(outs, ospec)

    return wrapped


def _is_plain_jit(func: Any) -> bool:
    """A ``jit`` function without static arguments or checking (vmap(jit(f)) = jit(vmap(f)))."""
    from ..jit.function import JitFunction

    return isinstance(func, JitFunction) and not func.static_argnums and not func.check


def _vmap_call(func: Callable, spec: Any, flat_args: list, dims: list, size: int,
               out_dims: Any, randomness: str, kwargs: dict) -> Any:
    trace = BatchTrace(size, randomness)
    inner = [wrap(trace, a.movedim(d, 0) if d != 0 else a) if d is not None else a
             for a, d in zip(flat_args, dims)]
    state.traces.append(trace)
    try:
        out = func(*pytree.tree_unflatten(inner, spec), **kwargs)
    finally:
        del state.traces[trace.index:]
    flat_out, ospec = pytree.tree_flatten(out)
    odims = _out_dims(func, out_dims, out)
    result = []
    for o, d in zip(flat_out, odims):
        if not isinstance(o, Tensor):
            raise ValueError(
                f"vmap({_fname(func)}, ...): `{_fname(func)}` must only return Tensors, got "
                f"type {type(o)}. Did you mean to set out_dims= to None for output?")
        batched = type(o) is Batched and o._trace is trace
        if d is None:
            if batched:
                raise ValueError(
                    f"vmap({_fname(func)}, ..., out_dims={out_dims})(<inputs>): Can not return "
                    "a BatchedTensor when out_dim is None")
            result.append(o)
            continue
        v = o._value if batched else o.unsqueeze(0).expand((size,) + tuple(o.shape))
        n = v.ndim
        if not -n <= d < n:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got "
                f"{d})")
        result.append(v.movedim(0, d) if d % n != 0 else v)
    return pytree.tree_unflatten(result, ospec)


# ---------------------------------------------------------------------- grad inside vmap


def vjp_batched(vjp: Callable, func: Callable, primals: tuple, has_aux: bool) -> tuple:
    """``vjp`` called inside a vmap level: the vjp of the whole batch, one level down.

    The batched function maps each sample's inputs to that sample's outputs only, so its VJP
    with a batched cotangent is the per-sample VJP. Primals not batched at this level are
    lifted to the batch first (an expand), so their gradients are per sample too, as
    torch.func gives them.
    """
    level = state.traces[-1]
    with below(level.index):
        values = [level.lift(p) for p in primals]
    # (a lifted primal is the same in every sample: torch keeps it unbatched, so control flow
    # on it works)
    uniform = [not (type(p) is Batched and p._trace is level) or p._uniform for p in primals]
    aux_box: list = []
    spec_box: list = []

    def lowered(*vs: Tensor) -> Any:
        state.traces.append(level)
        try:
            res = func(*[wrap(level, v, u) for v, u in zip(vs, uniform)])
            if has_aux:
                if not (isinstance(res, tuple) and len(res) == 2):
                    raise RuntimeError("vjp(f, *primals): output of function f should be a "
                                       "tuple: (output, aux) if has_aux is True")
                res, aux = res
                aux_box.append(aux)
            flat, spec = pytree.tree_flatten(res)
            spec_box.append(spec)
            for o in flat:
                if not isinstance(o, Tensor):
                    raise RuntimeError("vjp(f, *primals): expected f(*primals) to return only "
                                       f"tensors, got unsupported type {type(o)}")
        finally:
            del state.traces[level.index:]
        with below(level.index):
            return tuple(level.lift(o) for o in flat)

    with below(level.index):
        out_values, lower_fn = vjp(lowered, *values)[:2]
    spec = spec_box[0]
    out = pytree.tree_unflatten([wrap(level, v) for v in out_values], spec)

    def vjp_fn(cotangents: Any) -> tuple:
        flat, cspec = pytree.tree_flatten(cotangents)
        if cspec != spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure "
                f"of outputs to the function. cotangents: {cspec}, primal output: {spec}")
        outer = [c._trace for c in flat if type(c) is Batched and c._trace.index > level.index]
        if outer:  # vmap over this vjp_fn (the NTK's vjp-then-jvp): one cotangent at a time
            top = max(outer, key=lambda tr: tr.index)
            with below(top.index):
                rows = [vjp_fn(pytree.tree_unflatten(
                    [c._value[i] if type(c) is Batched and c._trace is top else c for c in flat],
                    cspec)) for i in range(top.size)]
                from ..ops.movement import stack

                return tuple(wrap(top, stack([r[j] for r in rows])) for j in range(len(rows[0])))
        with below(level.index):
            cts = tuple(level.lift(c) for c in flat)
            grads = lower_fn(cts)
        return tuple(wrap(level, g) for g in grads)

    if not has_aux:
        return out, vjp_fn
    aux = aux_box[0]
    if not any(v.requires_grad for v in out_values):  # (the level below detached its outputs)
        aux = pytree.tree_map(lambda a: a.detach() if isinstance(a, Tensor) else a, aux)
    return out, vjp_fn, aux


def debug_unwrap(tensor: Any, *, recurse: bool = True) -> Any:
    """The tensor a ``vmap``-ed tensor stands for, its batch dim first (torch.func's, for
    debugging: its result must not be used inside the transformed function).

    Args:
        tensor: a tensor inside ``vmap`` (others are returned as they are).
        recurse: unwrap every level of nested ``vmap``, not only the innermost.
    """
    while isinstance(tensor, Batched):
        tensor = tensor._value
        if not recurse:
            break
    return tensor
