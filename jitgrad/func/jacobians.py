"""Jacobians and friends, built as torch.func builds them: ``jacrev`` is ``vmap`` over ``vjp``
of the basis vectors, ``jacfwd`` is ``vmap`` over ``jvp``, ``hessian`` is ``jacfwd(jacrev)``.

``jvp`` is the VJP of the VJP: ``vjp_fn`` is linear in its cotangent, so differentiating it
with respect to the cotangent (at zero), against the tangents, gives ``J @ tangents``. That
uses only reverse-mode rules, so ``jvp`` (and everything built on it) works eagerly, inside
``jit`` (one graph) and under ``vmap``, nested in any order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..tensor import Tensor
from . import _pytree as pytree
from ._grad import keep_graph, value_and_grad, vjp
from .vmap import current_level, vmap

__all__ = ["jvp", "jacrev", "jacfwd", "hessian", "linearize", "grad_and_value"]


def grad_and_value(func: Callable, argnums: int | tuple = 0, has_aux: bool = False) -> Callable:
    """A function returning ``(grad, value)`` (``(grad, (value, aux))`` with ``has_aux``), as
    torch.func.grad_and_value."""
    vg = value_and_grad(func, argnums, has_aux)

    def wrapper(*args: Any, **kwargs: Any) -> tuple:
        value, g = vg(*args, **kwargs)
        return g, value

    wrapper.__name__ = f"grad_and_value({getattr(func, '__name__', 'f')})"
    return wrapper


def _check_argnums(argnums: Any, n: int) -> tuple:
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        nums = (argnums,)
    elif isinstance(argnums, tuple) and all(isinstance(i, int) for i in argnums):
        nums = argnums
        if len(set(i % n if n else i for i in nums)) != len(nums):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    else:
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    for i in nums:
        if not -n <= i < n:
            raise RuntimeError(f"Got argnum={i}, but only {n} positional inputs")
    return tuple(i % n for i in nums)


def _flattened(func: Callable, args: tuple, nums: tuple, kwargs: dict) -> tuple:
    """``func`` as a function of the leaves of ``args[nums]`` (each a tensor or a pytree of
    tensors, such as a dict of parameters), those leaves, and ``regroup`` that turns one value
    per leaf back into one pytree per argument."""
    trees = [pytree.tree_flatten(args[i]) for i in nums]
    leaves = [leaf for lv, _ in trees for leaf in lv]

    def regroup(values: list) -> list:
        out, k = [], 0
        for lv, spec in trees:
            out.append(pytree.tree_unflatten(list(values[k:k + len(lv)]), spec))
            k += len(lv)
        return out

    def f(*ps: Tensor) -> Any:
        return func(*_substitute(args, nums, regroup(list(ps))), **kwargs)

    return f, leaves, regroup


def _substitute(args: tuple, nums: tuple, values: list) -> list:
    a = list(args)
    for i, v in zip(nums, values):
        a[i] = v
    return a


def _check_outputs(flat: list, what: str) -> None:
    for o in flat:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{what}: expected f(*primals) to return only tensors, got "
                               f"unsupported type {type(o)}")


def _tangents_of(fn: Callable, spec: Any, flat_out: list, tangents: tuple) -> list:
    """``J @ tangents`` from ``vjp_fn`` (``fn``): the VJP of ``fn`` at zero cotangents."""
    from ..ops.creation import zeros_like

    def transposed(*cts: Tensor) -> tuple:
        return fn(pytree.tree_unflatten(list(cts), spec))

    # differentiable results when the outputs are (an outer transform differentiates them)
    prev = keep_graph[0]
    keep_graph[0] = any(o.requires_grad for o in flat_out)
    try:
        _, back = vjp(transposed, *[zeros_like(o) for o in flat_out])
    finally:
        keep_graph[0] = prev
    return list(back(tuple(tangents)))


def jvp(func: Callable, primals: Any, tangents: Any, *, strict: bool = False,
        has_aux: bool = False) -> tuple:
    """``(func(*primals), J @ tangents)`` (and ``aux``), as torch.func.jvp.

    Args:
        func: a function of tensors returning a tensor or a tuple of tensors.
        primals: a tuple of tensors (or pytrees of tensors, such as dicts), the point.
        tangents: of the primals' structure and shapes.
        strict: accepted for torch's signature (torch.func does not support True either).
        has_aux: ``func`` returns ``(output, aux)``; aux is returned as is.
    """
    if strict:
        raise RuntimeError("jvp(f, primals, tangents): strict=True is not supported.")
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it "
                           "should be valid to call f(*primals).")
    pspec, tspec = pytree.tree_structure(primals), pytree.tree_structure(tangents)
    if pspec != tspec:
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals and tangents to have the same python "
            "structure. For example, if primals is a tuple of 3 tensors, tangents also must "
            f"be. Got primals with structure {pspec} and tangents with structure {tspec}")
    flat_primals, primal_spec = pytree.tree_flatten(primals)
    flat_tangents = pytree.tree_flatten(tangents)[0]
    for p, t in zip(flat_primals, flat_tangents):
        if not isinstance(p, Tensor):
            raise RuntimeError("jvp(f, primals, tangents): Expected primals to only contain "
                               f"Tensors, got {type(p)}")
        if not isinstance(t, Tensor):
            raise RuntimeError("jvp(f, primals, tangents): Expected tangents to only contain "
                               f"Tensors, got {type(t)}")
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(
                "Trying to set a forward gradient that has a different size than that of the "
                f"original Tensor, this is not supported. Tensor is of size {list(p.shape)} "
                f"while the given forward gradient is of size {list(t.shape)}.")
    aux_box: list = []

    def f(*ps: Tensor) -> Any:  # (of the primals' leaves: they may be dicts of parameters)
        res = func(*pytree.tree_unflatten(list(ps), primal_spec))
        if has_aux:
            if not (isinstance(res, tuple) and len(res) == 2):
                raise RuntimeError("jvp(f, primals, tangents): output of function f should be "
                                   "a tuple: (output, aux) if has_aux is True")
            res, aux = res
            aux_box.append(aux)
        return res

    out, fn = vjp(f, *flat_primals)
    flat_out, spec = pytree.tree_flatten(out)
    _check_outputs(flat_out, "jvp(f, primals, tangents)")
    tangent_out = pytree.tree_unflatten(_tangents_of(fn, spec, flat_out, flat_tangents), spec)
    if has_aux and not keep_graph[0] and not any(p.requires_grad for p in flat_primals):
        aux_box[0] = pytree.tree_map(
            lambda a: a.detach() if isinstance(a, Tensor) else a, aux_box[0])
    return (out, tangent_out, aux_box[0]) if has_aux else (out, tangent_out)


def linearize(func: Callable, *primals: Tensor) -> tuple:
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is ``J @ tangents`` at the primals,
    callable many times (torch.func.linearize)."""
    out, fn = vjp(func, *primals)
    flat_out, spec = pytree.tree_flatten(out)
    _check_outputs(flat_out, "linearize")

    def jvp_fn(*tangents: Tensor) -> Any:
        if len(tangents) != len(primals):
            raise RuntimeError(f"Expected {len(primals)} tangents, got {len(tangents)}")
        return pytree.tree_unflatten(_tangents_of(fn, spec, flat_out, tangents), spec)

    return out, jvp_fn


def _device_of(values: Any) -> Any:
    """The device of the first tensor among ``values`` (the CPU if none is one)."""
    return next((v.device for v in values if isinstance(v, Tensor)), "cpu")


def _basis(shapes: list, dtypes: list, device: Any = None) -> list:
    """Rows of the identity over all elements, split into one block per shape:
    ``[(N, *shape_i)]`` with ``N`` the total number of elements, on ``device`` (the values')."""
    from ..ops.creation import eye

    sizes = [_numel(s) for s in shapes]
    total = sum(sizes)
    out, start = [], 0
    for s, n, dt in zip(shapes, sizes, dtypes):
        out.append(eye(total, dtype=dt, device=device)[:, start:start + n].reshape(
            (total,) + tuple(s)))
        start += n
    return out


def _numel(shape: tuple) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def jacrev(func: Callable, argnums: int | tuple = 0, *, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable:
    """The Jacobian of ``func`` w.r.t. ``args[argnums]`` by reverse mode (torch.func.jacrev):
    ``vmap`` of ``vjp_fn`` over the rows of the identity.

    Args:
        func: a function returning a tensor or a pytree of tensors (``(output, aux)`` with
            ``has_aux``).
        argnums: which positional argument(s) to differentiate (an int or a tuple).
        has_aux: whether ``func`` returns an auxiliary value (returned as is).
        chunk_size: how many rows ``vmap`` computes at once (None: all).

    Returns:
        A function returning the Jacobian (for each output leaf, ``output.shape + arg.shape``;
        a tuple over argnums for a tuple ``argnums``), and ``aux``.
    """
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _check_argnums(argnums, len(args))
        f, primals, regroup = _flattened(func, args, nums, kwargs)
        res = vjp(f, *primals, has_aux=has_aux)
        out, fn = res[0], res[1]
        flat_out, spec = pytree.tree_flatten(out)
        _check_outputs(flat_out, "vjp(f, *primals)")
        basis = _basis([tuple(o.shape) for o in flat_out], [o.dtype for o in flat_out],
                       _device_of(flat_out))

        def row(*cts: Tensor) -> tuple:
            return fn(pytree.tree_unflatten(list(cts), spec))

        if basis[0].shape[0] == 0:  # no output elements: an empty Jacobian
            from ..ops.creation import zeros

            grads = tuple(zeros((0,) + tuple(p.shape), dtype=p.dtype, device=p.device)
                          for p in primals)
        elif current_level() is None:
            grads = vmap(row, chunk_size=chunk_size)(*basis)  # per primal: (N, *p.shape)
        else:  # a vjp inside vmap: its vjp_fn takes this level's cotangents, row by row
            from ..ops.movement import stack

            rows = [row(*[b[i] for b in basis]) for i in range(basis[0].shape[0])]
            grads = tuple(stack([r[j] for r in rows]) for j in range(len(primals)))
        leaves, start = [], 0
        for o in flat_out:
            n = o.numel()
            per_arg = tuple(regroup([g[start:start + n].reshape(tuple(o.shape) + tuple(p.shape))
                                     for g, p in zip(grads, primals)]))
            leaves.append(per_arg if isinstance(argnums, tuple) else per_arg[0])
            start += n
        jac = pytree.tree_unflatten(leaves, spec)
        return (jac, res[2]) if has_aux else jac

    wrapper.__name__ = f"jacrev({getattr(func, '__name__', 'f')})"
    return wrapper


def jacfwd(func: Callable, argnums: int | tuple = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """The Jacobian of ``func`` w.r.t. ``args[argnums]`` by forward mode (torch.func.jacfwd):
    ``vmap`` of ``jvp`` over the basis of the inputs' tangents.

    Args:
        func: a function returning a tensor or a pytree of tensors (``(output, aux)`` with
            ``has_aux``).
        argnums: which positional argument(s) to differentiate (an int or a tuple).
        has_aux: whether ``func`` returns an auxiliary value (returned as is).
        randomness: vmap's randomness mode for the batch of tangents.

    Returns:
        A function returning the Jacobian, laid out as ``jacrev``'s, and ``aux``.
    """
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _check_argnums(argnums, len(args))
        f, primals, regroup = _flattened(func, args, nums, kwargs)
        primals = tuple(primals)
        for p in primals:
            if not isinstance(p, Tensor):
                raise RuntimeError("jvp(f, primals, tangents): Expected primals to only "
                                   f"contain Tensors, got {type(p)}")
        basis = _basis([tuple(p.shape) for p in primals], [p.dtype for p in primals],
                       _device_of(primals))

        def push(*tangents: Tensor) -> Any:
            res = jvp(f, primals, tangents, has_aux=has_aux)
            return (res[1], res[2]) if has_aux else res[1]

        outs = vmap(push, randomness=randomness)(*basis)
        touts, aux = outs if has_aux else (outs, None)
        if has_aux:  # the same for every tangent: its first row
            aux = pytree.tree_map(lambda a: a[0], aux)
        flat, spec = pytree.tree_flatten(touts)
        leaves = []
        for t in flat:  # (M, *out.shape), M = all primals' elements
            oshape = tuple(t.shape[1:])
            per_arg, start = [], 0
            for p in primals:
                n = p.numel()
                block = t[start:start + n].reshape(n, _numel(oshape))
                per_arg.append(block.transpose(0, 1).reshape(oshape + tuple(p.shape)))
                start += n
            per_arg = regroup(per_arg)
            leaves.append(tuple(per_arg) if isinstance(argnums, tuple) else per_arg[0])
        jac = pytree.tree_unflatten(leaves, spec)
        return (jac, aux) if has_aux else jac

    wrapper.__name__ = f"jacfwd({getattr(func, '__name__', 'f')})"
    return wrapper


def hessian(func: Callable, argnums: int | tuple = 0) -> Callable:
    """The Hessian of scalar ``func`` w.r.t. ``args[argnums]``: ``jacfwd(jacrev(func))``, as
    torch.func.hessian."""
    return jacfwd(jacrev(func, argnums), argnums)
