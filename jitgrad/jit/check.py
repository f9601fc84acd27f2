"""``jit(fn, check=True)``: every call is also run eagerly and compared, values and gradients.

A compiled gradient is only as trustworthy as the compiler; this mode is how a user checks one.
Each call runs the compiled program as usual, then ``fn`` itself on detached copies of the
tensor arguments, and compares every output; when grad mode is on and an output requires
grad, it also pulls one random cotangent through both (``retain_graph=True``, so the caller's
own ``backward`` still works) and compares the gradients of every input that requires grad.
A difference raises ``JitCheckError`` naming the first output or input that disagrees and,
where the backend can tell, the first kernel whose outputs differ from the interpreter's
(``backend.diagnose``). Functions that draw random numbers cannot be compared (the two runs
draw different numbers): they are run once with a warning.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..autograd import grad as autograd_grad
from ..ops.registry import state
from ..backends.interpreter import mismatch
from . import cache


class JitCheckError(AssertionError):
    """A compiled result differs from eager mode's (``jit(fn, check=True)``)."""


def _where(backend: Any, graph: Any, arrays: list) -> str:
    diagnose = getattr(backend, "diagnose", None)
    found = diagnose(graph, arrays) if diagnose is not None else None
    return f"; {found}" if found else ""


def checked_call(jf: Any, args: tuple, kwargs: dict, run: Callable) -> Any:
    """Runs ``jf`` (a JitFunction; ``run(entry, tensors)`` runs one of its entries) and
    ``jf.py_func``, and compares them; returns jf's result."""
    entry, tensors = jf._lookup(args, kwargs)
    out = run(entry, tensors)
    if entry.rng_vars:
        warnings.warn(f"jit(check=True): {jf._name()!r} draws random numbers, so its compiled "
                      "and eager results cannot be compared; this call was not checked",
                      stacklevel=3)
        return out
    inputs = tensors + [ref() for ref, *_ in entry.implicit]
    arrays = [t._data for t in inputs]
    leaves_out, _ = cache.flatten(out)
    _, spec = cache.flatten((args, kwargs))
    copies = [t.detach().clone().requires_grad_(t.requires_grad) for t in tensors]
    eargs, ekwargs = cache.unflatten(spec, copies)
    eager_out = jf.py_func(*eargs, **ekwargs)
    eager_leaves, _ = cache.flatten(eager_out)
    name = jf._name()
    if len(eager_leaves) != len(leaves_out):
        raise JitCheckError(f"jit(check=True): {name!r} returned {len(leaves_out)} tensors "
                            f"compiled and {len(eager_leaves)} eagerly")
    for i, (a, b) in enumerate(zip(leaves_out, eager_leaves)):
        why = "dtype" if a.dtype is not b.dtype else mismatch(
            a.detach().numpy(), b.detach().numpy(), a.dtype.name)
        if why:
            raise JitCheckError(f"jit(check=True): output {i} of {name!r} differs from eager "
                                f"mode: {why}{_where(entry.backend, entry.fwd, arrays)}")
    if not state.grad_enabled:
        return out
    pairs = [(a, b) for a, b in zip(leaves_out, eager_leaves)
             if a.requires_grad and b.requires_grad and a.dtype.is_floating_point]
    wrt = [k for k, t in enumerate(inputs) if t.requires_grad]
    if not pairs or not wrt:
        return out
    rng = np.random.default_rng(0)
    from ..ops.creation import tensor

    cts = [tensor(rng.standard_normal(tuple(a.shape)), dtype=a.dtype) for a, _ in pairs]
    eager_inputs = copies + [inputs[k] for k in range(len(tensors), len(inputs))]
    gc = autograd_grad([a for a, _ in pairs], [inputs[k] for k in wrt], cts, retain_graph=True,
                       allow_unused=True)
    ge = autograd_grad([b for _, b in pairs], [eager_inputs[k] for k in wrt], cts,
                       allow_unused=True)
    for k, a, b in zip(wrt, gc, ge):
        if (a is None) != (b is None):
            why = "compiled " + ("None" if a is None else "a tensor") + \
                ", eager " + ("None" if b is None else "a tensor")
        elif a is None:
            continue
        else:
            why = mismatch(a.numpy(), b.numpy(), a.dtype.name)
        if why:
            what = f"argument {k}" if k < len(tensors) else f"captured tensor {k - len(tensors)}"
            where = ""
            node = pairs[0][0].grad_fn
            if entry.bwd is not None and hasattr(node, "_residuals"):
                tangents = []
                for s in entry.tangent_slots:
                    m = entry.fwd.outvars[s]
                    g = next((c for (o, _), c in zip(pairs, cts) if o._output_nr == s), None)
                    tangents.append(g._data if g is not None else np.zeros(m.shape, m.dtype.np))
                where = _where(entry.backend, entry.bwd, list(node._residuals) + tangents)
            raise JitCheckError(f"jit(check=True): the gradient of {what} of {name!r} differs "
                                f"from eager mode: {why}{where}")
    return out
