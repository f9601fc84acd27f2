"""Batching rules: how one op runs on a whole batch at once (see ``vmap.py``).

A rule is ``rule(op, values, flags, params, size)``: ``values`` are the op's arguments one level
below the vmap (a batched argument is its batch, batch dim first; ``flags[i]`` says which are
batched), ``size`` is the batch size. It returns the batched result (batch dim first; a tuple for
a multi-output op), computed with ordinary jitgrad ops on the values, or ``NotImplemented`` when
it cannot handle the call. Rules never see the batch level itself: their ops run one level
down (eagerly, into a jit trace, or into an outer vmap's level).

Which rule runs: ``op.batch`` if set, else the generic rule of ``op.kind`` (pointwise:
align the batch dims and broadcast; reduce: shift the reduced dims past the batch dim;
movement: remap dims and shapes), else a Python loop over the batch, with a one-time warning
naming the op, as torch does. Composite ops with a ``decompose`` batch through their
primitives (``BatchTrace.bind``).

The ops whose rule is not the generic one get it here, by name, at the end of this file.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from ..ops import registry
from ..ops.registry import MOVEMENT, OPS, POINTWISE, REDUCE, Tensor, apply

_warned: set[str] = set()


def run_rule(trace: Any, op: registry.OpDef, values: list, flags: list, params: dict) -> Any:
    """The batched result of ``op`` (one level below ``trace``)."""
    size = trace.size
    rule = op.batch
    if rule is not None:
        out = rule(op, values, flags, params, size)
        if out is not NotImplemented:
            return out
    generic = _GENERIC.get(op.kind)
    if generic is not None:
        out = generic(op, values, flags, params, size)
        if out is not NotImplemented:
            return out
    return loop_rule(op, values, flags, params, size)


def loop_rule(op: registry.OpDef, values: list, flags: list, params: dict, size: int) -> Any:
    """The fallback: ``op`` on each sample, the results stacked (never a wrong answer)."""
    from ..ops.movement import stack

    if op.name not in _warned:
        from ..ops.aten_namespace import op_key

        _warned.add(op.name)
        warnings.warn(
            f"There is a performance drop because we have not yet implemented the batching "
            f"rule for {op_key(op).name()}. Please file us an issue on GitHub so that we can "
            "prioritize its implementation.", UserWarning, stacklevel=4)
    results = []
    for b in range(size):
        args = [v.select(0, b) if f else v for v, f in zip(values, flags)]
        results.append(apply(op, *args, **params))
    if op.n_outputs == 1:
        return stack(results)
    return tuple(stack([r[i] for r in results]) for i in range(len(results[0])))


# ---------------------------------------------------------------------- helpers


def logical_ndim(v: Any, flag: bool) -> int:
    return v.ndim - 1 if flag else v.ndim


def lift(v: Any, flag: bool, size: int) -> Any:
    """An unbatched tensor repeated over the batch (an expand, no copy)."""
    if flag:
        return v
    return v.unsqueeze(0).expand((size,) + tuple(v.shape))


def align(v: Any, flag: bool, ndim: int, size: int) -> Any:
    """A batched value with ones inserted after the batch dim to logical rank ``ndim``, so it
    broadcasts against the other operands as the sample did."""
    if not flag:  # (an unbatched operand, maybe a Python number: index_put's 0.0)
        return v
    k = v.ndim - 1
    if k >= ndim:
        return v
    return v.reshape((size,) + (1,) * (ndim - k) + tuple(v.shape[1:]))


def _tensor_ndims(values: list, flags: list) -> int:
    return max((logical_ndim(v, f) for v, f in zip(values, flags) if isinstance(v, Tensor)),
               default=0)


def _shifted(params: dict, names: tuple = ("dim", "dims", "dim0", "dim1")) -> dict | None:
    """``params`` with their dims moved past the batch dim (None: a dim was None)."""
    p = dict(params)
    for name in names:
        if name in p:
            d = p[name]
            if d is None:
                return None
            p[name] = tuple(x + 1 for x in d) if isinstance(d, tuple) else d + 1
    return p


# ---------------------------------------------------------------------- generic rules


def pointwise_rule(op: registry.OpDef, values: list, flags: list, params: dict,
                   size: int) -> Any:
    """Broadcasting ops: each batched operand gets its batch dim first and ones up to the
    result's rank; unbatched operands broadcast against it as they are."""
    n = _tensor_ndims(values, flags)
    args = [align(v, f, n, size) if f else v for v, f in zip(values, flags)]
    dts = {v.dtype for v in values if isinstance(v, Tensor)}
    if len(dts) > 1 and hasattr(op.meta, "by_category"):
        # torch's promotion tells dimensioned tensors from 0-d ones: decide it on the samples'
        # shapes (a batched 0-d sample is not 0-d in the batch), and compute in that dtype
        logical = [registry.Meta(tuple(v.shape[1:]), v.dtype) if f else v
                   for v, f in zip(values, flags)]
        work = registry.compute_dtype(op, logical)[0]
        if work is not registry.compute_dtype(op, args)[0]:
            args = [a.to(work) if isinstance(a, Tensor) and i not in op.nonpromoted
                    and a.dtype is not work else a for i, a in enumerate(args)]
    return apply(op, *args, **params)


def reduce_rule(op: registry.OpDef, values: list, flags: list, params: dict, size: int) -> Any:
    """Reductions over given dims: the dims shift by one (the batch dim is first)."""
    if not flags[0] or any(flags[1:]):
        return NotImplemented
    p = _shifted(params)
    if p is None or not any(k in params for k in ("dim", "dims")):
        return NotImplemented
    return apply(op, values[0], **p)


def dim_rule(op: registry.OpDef, values: list, flags: list, params: dict, size: int) -> Any:
    """Ops along given dims of their tensor operands (same rank): every tensor operand lifted
    to the batch, the dims shifted (cumsum, sort, gather, scatter, ...)."""
    if any(f and v.ndim == 1 for v, f in zip(values, flags)):
        return NotImplemented  # 0-d samples: dim 0 is the scalar itself
    p = _shifted(params)
    if p is None:
        return NotImplemented
    args = [lift(v, f, size) if isinstance(v, Tensor) else v for v, f in zip(values, flags)]
    return apply(op, *args, **p)


def first_dim_rule(op: registry.OpDef, values: list, flags: list, params: dict,
                   size: int) -> Any:
    """Ops batched only in their first operand, along shifted dims (index_select, ...)."""
    if any(flags[1:]) or (flags[0] and values[0].ndim == 1):
        return NotImplemented
    p = _shifted(params)
    if p is None:
        return NotImplemented
    return apply(op, values[0], *values[1:], **p)


def last_dims_rule(op: registry.OpDef, values: list, flags: list, params: dict,
                   size: int) -> Any:
    """Ops on the last dims of one operand (tril, triu): the batch dim in front changes
    nothing."""
    if any(flags[1:]):
        return NotImplemented
    return apply(op, *values, **params)


def matrix_rule(op: registry.OpDef, values: list, flags: list, params: dict,
                size: int) -> Any:
    """torch.linalg's ops on the last two dims, broadcasting the dims in front: the batch dim
    is one more of those once every operand has it (a single matrix, vector or pivots per
    sample; samples that are batches themselves loop)."""
    tensors = [(v, f) for v, f in zip(values, flags) if isinstance(v, Tensor)]
    if len(tensors) > 1 and any(logical_ndim(v, f) > 2 for v, f in tensors):
        return NotImplemented
    return apply(op, *(lift(v, f, size) if isinstance(v, Tensor) else v
                       for v, f in zip(values, flags)), **params)


def _broadcast_cores(op: registry.OpDef, values: list, flags: list, params: dict, size: int,
                     cores: tuple) -> Any:
    """Ops on the last ``cores[i]`` dims of each tensor operand that broadcast the dims in
    front: each batched operand gets ones after its batch dim up to the most front dims, so
    the batch dim is one more broadcast dim."""
    front = max(logical_ndim(v, f) - c for v, f, c in zip(values, flags, cores)
                if isinstance(v, Tensor))
    return apply(op, *(align(v, f, front + c, size) if isinstance(v, Tensor) else v
                       for v, f, c in zip(values, flags, cores)), **params)


def broadcast_matrices_rule(op: registry.OpDef, values: list, flags: list, params: dict,
                            size: int) -> Any:
    """Ops on matrices (the last two dims) that broadcast the dims in front
    (``solve_triangular``, ``cholesky_solve``)."""
    return _broadcast_cores(op, values, flags, params, size, (2, 2))


def _solve_rule(op, values, flags, params, size):
    """``linalg.solve``: a matrix and a matrix, or a vector, per sample (the op's ``vector``,
    decided on the samples' shapes)."""
    return _broadcast_cores(op, values, flags, params, size, (2, 1 if params["vector"] else 2))


def _diagonal_rule(op, values, flags, params, size):
    return apply(op, values[0], **dict(params, dim1=params["dim1"] + 1,
                                       dim2=params["dim2"] + 1))


def _diag_embed_rule(op, values, flags, params, size):
    """diag_embed / diagonal_backward, whose param is the result's shape."""
    return apply(op, values[0], **dict(params, shape=(size,) + tuple(params["shape"]),
                                       dim1=params["dim1"] + 1, dim2=params["dim2"] + 1))


def _searchsorted_rule(op, values, flags, params, size):
    """Each sample's values searched in its boundaries: 1-D boundaries of a batch become one
    row per sample, spread over the sample's leading dims."""
    seq, vals = values
    scalar = flags[1] and vals.ndim == 1 or not flags[1] and vals.ndim == 0
    vals = lift(vals, flags[1], size)
    if scalar:  # (a 0-d sample: one value)
        vals = vals.unsqueeze(-1)
    if flags[0] and seq.ndim == 2 or not flags[0] and seq.ndim > 1:
        seq = lift(seq, flags[0], size)
        lead = tuple(vals.shape[1:-1])
        seq = seq.reshape((size,) + (1,) * (len(lead) - seq.ndim + 2) + tuple(seq.shape[1:])) \
            .expand((size,) + lead + (seq.shape[-1],))
    out = apply(op, seq, vals, **params)
    return out.squeeze(-1) if scalar else out


def _reshape_rule(op, values, flags, params, size):
    if any(flags[1:]):
        return NotImplemented
    return values[0].reshape((size,) + tuple(params["shape"]))


def _shape_rule(op, values, flags, params, size):
    """squeeze/unsqueeze/..., whose param is the result's shape."""
    if any(flags[1:]):
        return NotImplemented
    return apply(op, values[0], **dict(params, shape=(size,) + tuple(params["shape"])))


def _expand_rule(op, values, flags, params, size):
    shape = tuple(params["shape"])
    v = align(values[0], True, len(shape), size)
    return apply(op, v, shape=(size,) + shape)


def _permute_rule(op, values, flags, params, size):
    return apply(op, values[0], dims=(0,) + tuple(d + 1 for d in params["dims"]))


def _t_rule(op, values, flags, params, size):
    v = values[0]
    return v if v.ndim < 3 else v.transpose(1, 2)


def _backward_shape_rule(op, values, flags, params, size):
    """select_backward / slice_backward: the gradient's full shape and dim."""
    p = _shifted(params, ("dim",))
    p["shape"] = (size,) + tuple(params["shape"])
    return apply(op, values[0], **p)


def _stacking_rule(op, values, flags, params, size):
    """cat, stack: every operand lifted, the dim shifted."""
    args = [lift(v, f, size) for v, f in zip(values, flags)]
    return apply(op, *args, dim=params["dim"] + 1)


def movement_rule(op: registry.OpDef, values: list, flags: list, params: dict,
                  size: int) -> Any:
    """Movement ops of one tensor whose params are dims (shifted) and no shapes."""
    if any(isinstance(v, Tensor) for v in values[1:]) or "shape" in params \
            or "spec" in params:
        return NotImplemented
    p = _shifted(params)
    if p is None:
        return NotImplemented
    return apply(op, values[0], **p)


_GENERIC: dict[str, Callable] = {POINTWISE: pointwise_rule, REDUCE: reduce_rule,
                                 MOVEMENT: movement_rule}


# ---------------------------------------------------------------------- matrix products


def _matmul(a: Any, fa: bool, b: Any, fb: bool) -> Any:
    """``a @ b`` of two matrices (or stacks), each maybe batched: torch.matmul broadcasts the
    batch dim (a batched operand against an unbatched one folds into one mm)."""
    from ..ops.linalg import matmul

    return matmul(a, b)


def _mm_rule(op, values, flags, params, size):
    (a, b), (fa, fb) = values, flags
    return _matmul(a, fa, b, fb)


def _mv_rule(op, values, flags, params, size):
    (a, x), (fa, fx) = values, flags
    if not fx:
        return _matmul(a, fa, x, fx)
    return _matmul(a, fa, x.unsqueeze(-1), True).squeeze(-1)


def _dot_rule(op, values, flags, params, size):
    (a, b), (fa, fb) = values, flags
    if fa and fb:
        return (a * b).sum(-1)
    if fa:
        return _matmul(a, True, b, False)
    return _matmul(b, True, a, False)


def _embedding_rule(op, values, flags, params, size):
    """Batched indices look up the one table directly; a batched table becomes one table of
    all the samples' rows, each sample's indices offset to its own rows (not with
    ``padding_idx`` or ``scale_grad_by_freq``, whose gradients are per table: those loop)."""
    (weight, indices), (fw, fi) = values, flags
    if not fw:
        return apply(op, weight, indices, **params)
    if params["padding_idx"] >= 0 or params["scale_grad_by_freq"]:
        return NotImplemented
    from ..ops.ranges import arange

    rows = weight.shape[1]
    if not fi:
        indices = indices.unsqueeze(0).expand(size, *indices.shape)
    offsets = arange(size, device=indices.device).reshape((size,) + (1,) * (indices.ndim - 1))
    table = weight.reshape(size * rows, weight.shape[2])
    return apply(op, table, indices + offsets * rows, **params)


def _addmm_rule(op, values, flags, params, size):
    bias, a, b = values
    prod = _matmul(a, flags[1], b, flags[2])
    return prod + align(bias, flags[0], 2, size)


def _masked_fill_rule(op, values, flags, params, size):
    """masked_fill: the result has the input's shape, so a batched mask or value lifts it; a
    batched fill value (a 0-d tensor per sample) makes it a ``where``."""
    if len(values) > 2 and flags[2]:
        from ..ops.elementwise import where

        x = lift(values[0], flags[0], size)
        n = x.ndim - 1
        return where(align(values[1], flags[1], n, size),
                     align(values[2], True, n, size).to(x.dtype), x)
    x = values[0] if flags[0] or not any(flags[1:]) else lift(values[0], False, size)
    fx = flags[0] or any(flags[1:])
    n = logical_ndim(x, fx)
    args = [x] + [align(v, f, n, size) if f else v for v, f in zip(values[1:], flags[1:])]
    return apply(op, *args, **params)


def _vector_norm_rule(op, values, flags, params, size):
    if any(flags[1:]):
        return NotImplemented
    v = values[0]
    dims = params["dims"]
    dims = tuple(range(1, v.ndim)) if dims is None else tuple(d + 1 for d in dims)
    return apply(op, v, **dict(params, dims=dims))


def _nll_loss_rule(op, values, flags, params, size):
    """nll_loss of each sample: one unreduced nll_loss over all the batch's rows, then each
    sample's sum (or weighted mean)."""
    from ..ops.elementwise import where

    logp, target, weight = values
    if flags[2]:
        return NotImplemented
    logp, target = lift(logp, flags[0], size), lift(target, flags[1], size)
    classes = logp.shape[-1]
    rows = apply(op, logp.reshape(-1, classes), target.reshape(-1), weight, reduction="none",
                 ignore_index=params["ignore_index"])
    per_sample = rows.reshape(tuple(target.shape))  # (B,) or (B, N)
    reduction = params["reduction"]
    if reduction == "none":
        return per_sample
    if per_sample.ndim == 1:
        per_sample = per_sample.unsqueeze(1)
        target = target.unsqueeze(1)
    total = per_sample.sum(1)
    if reduction == "sum":
        return total
    valid = target != params["ignore_index"]
    if weight is None:
        w = valid.to(logp.dtype)
    else:
        w = where(valid, weight.index_select(0, where(valid, target, 0).reshape(-1))
                  .reshape(tuple(target.shape)), 0.0).to(logp.dtype)
    return total / w.sum(1)


def _index_rule(op, values, flags, params, size):
    """Advanced indexing of a batched tensor by unbatched indices: a full slice in front for
    the batch dim. NumPy puts the indexed dims first when the advanced indices are not
    adjacent; then the batch dim is moved back to the front."""
    if any(flags[1:]):
        return NotImplemented
    spec = params["spec"]
    advanced = [i for i, e in enumerate(spec)
                if (isinstance(e, tuple) and e[0] == "t") or isinstance(e, int)]
    out = apply(op, *values, **dict(params, spec=(("slice", None, None, None),) + spec))
    if advanced and advanced[-1] - advanced[0] + 1 != len(advanced):
        k = max((values[1 + e[1]].ndim for e in spec if isinstance(e, tuple) and e[0] == "t"),
                default=0)
        out = out.movedim(k, 0)
    return out


def _lifted_pointwise_rule(op, values, flags, params, size):
    """Broadcasting ops whose shape rule reads only some operands (normal(mean, std, noise)):
    every tensor operand lifted to the batch and aligned."""
    n = _tensor_ndims(values, flags)
    args = [align(lift(v, f, size), True, n, size) if isinstance(v, Tensor) else v
            for v, f in zip(values, flags)]
    return apply(op, *args, **params)


def _adjacent(spec: tuple) -> bool:
    advanced = [i for i, e in enumerate(spec)
                if (isinstance(e, tuple) and e[0] == "t") or isinstance(e, int)]
    return not advanced or advanced[-1] - advanced[0] + 1 == len(advanced)


def _index_put_rule(op, values, flags, params, size):
    """``x[idx] = v`` (or ``+=``) per sample: the batch dim gets a full slice in front."""
    if any(flags[2:]) or not _adjacent(params["spec"]):
        return NotImplemented
    x, v, *idx = values
    x = lift(x, flags[0], size)
    sample = registry.Meta(tuple(x.shape[1:]), x.dtype)
    indexed = len(OPS["index"].meta(sample, *idx, spec=params["spec"])[0])
    v = align(v, flags[1], indexed, size)
    return apply(op, x, v, *idx, **dict(params, spec=(("slice", None, None, None),)
                                       + params["spec"]))


_RULES: dict[str, Callable] = {
    "index_put": _index_put_rule,
    "normal_tensor_float": _lifted_pointwise_rule, "normal_float_tensor": _lifted_pointwise_rule,
    "normal_tensor_tensor": _lifted_pointwise_rule,
    "index": _index_rule,
    "nll_loss": _nll_loss_rule,
    "view": _reshape_rule, "unsafe_view": _reshape_rule, "reshape_alias": _reshape_rule,
    "squeeze": _shape_rule, "squeeze_dim": _shape_rule, "squeeze_dims": _shape_rule,
    "squeeze_dim_": _shape_rule, "unsqueeze": _shape_rule,
    "expand": _expand_rule, "permute": _permute_rule, "t": _t_rule,
    "select_backward": _backward_shape_rule, "slice_backward": _backward_shape_rule,
    "cat": _stacking_rule, "stack": _stacking_rule,
    "mm": _mm_rule, "bmm": _mm_rule, "mv": _mv_rule, "dot": _dot_rule, "addmm": _addmm_rule,
    "embedding": _embedding_rule,
    "masked_fill": _masked_fill_rule, "masked_fill_tensor": _masked_fill_rule,
    "cumsum": dim_rule, "cumprod": dim_rule, "logcumsumexp": dim_rule,
    "logcumsumexp_backward": dim_rule, "logcumsumexp_tangent": dim_rule, "cummax": dim_rule,
    "cummin": dim_rule, "median_dim": dim_rule, "nanmedian_dim": dim_rule,
    "kthvalue": dim_rule, "mode": dim_rule, "sort": dim_rule, "argsort": dim_rule,
    "topk": dim_rule, "argtopk": dim_rule, "gather": dim_rule, "scatter": dim_rule,
    "scatter_add": dim_rule, "scatter_value": dim_rule, "index_add": first_dim_rule,
    "index_select": first_dim_rule, "linalg_vector_norm": _vector_norm_rule,
    "tril": last_dims_rule, "triu": last_dims_rule,
    "linalg_solve_triangular": broadcast_matrices_rule, "cholesky_solve": broadcast_matrices_rule,
    "cdist": broadcast_matrices_rule, "_euclidean_dist": broadcast_matrices_rule,
    "linalg_solve": _solve_rule,
    "diagonal": _diagonal_rule, "diagonal_copy": _diagonal_rule,
    "diagonal_backward": _diag_embed_rule, "diag_embed": _diag_embed_rule,
    "searchsorted": _searchsorted_rule,
    **{name: matrix_rule for name in (
        "linalg_inv", "linalg_cholesky", "linalg_det", "linalg_slogdet", "linalg_eig",
        "linalg_eigh", "linalg_qr", "linalg_svd", "linalg_svdvals", "linalg_pinv",
        "linalg_matrix_exp", "linalg_lu_factor_ex", "linalg_lu_solve", "geqrf",
        "linalg_ldl_factor_ex")},
}


def register_rules() -> None:
    """Sets ``OpDef.batch`` of the ops above (called once, when jitgrad.func is imported)."""
    from .batching_nn import RULES as NN_RULES

    for name, rule in {**_RULES, **NN_RULES}.items():
        op = OPS.get(name)
        if op is not None and op.batch is None:
            op.batch = rule


register_rules()
