"""torch's top-level ATen entry points of ``nn.functional`` losses, norms and samplers
(``torch.kl_div``, ``torch.native_layer_norm``, ``torch.grid_sampler``, ``torch.conv_tbc``
...), with torch's positional ATen signatures: an ``int`` reduction (0 none, 1 mean, 2 sum; any
other value: none, as ATen's ``apply_loss_reduction``), integer sampling modes, and the extra
outputs of the ``native_*`` functions.

An omitted ``reduction`` is 0 (none): the schemas say ``at::Reduction::Mean``, but torch's
Python binding reads that default as 0, so ``torch.kl_div(x, t)`` is elementwise there.

Each is a thin entry point over ``nn.functional`` or the existing ops: no math of its own
beyond the statistics the ``native_*`` functions return. ``jitgrad.__getattr__`` serves these
names, importing ``jitgrad.nn`` on the first call.
"""

from __future__ import annotations

import warnings
from typing import Any

from .ops.dtype_rules import broadcast_shapes as _broadcast_shapes

__all__ = ["binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
           "triplet_margin_loss", "cosine_embedding_loss", "hinge_embedding_loss",
           "margin_ranking_loss", "ctc_loss", "conv_tbc", "embedding_renorm_", "grid_sampler",
           "grid_sampler_2d", "grid_sampler_3d", "affine_grid_generator", "native_layer_norm",
           "native_batch_norm", "native_group_norm", "native_dropout", "native_norm",
           "norm_except_dim",
           "frobenius_norm", "nuclear_norm"]


def _fn() -> Any:
    from .nn import functional

    return functional


def _reduction(reduction: int, fn: str, position: int) -> str:
    """ATen's loss reduction enum: 1 mean, 2 sum, anything else none."""
    if isinstance(reduction, bool) or not isinstance(reduction, int):
        raise TypeError(f"{fn}(): argument 'reduction' (position {position}) must be int, not "
                        f"{type(reduction).__name__}")
    return {1: "mean", 2: "sum"}.get(reduction, "none")


def binary_cross_entropy_with_logits(input: Any, target: Any, weight: Any = None,  # noqa: A002
                                     pos_weight: Any = None, reduction: int = 0) -> Any:
    """``torch.binary_cross_entropy_with_logits``: ``F.binary_cross_entropy_with_logits``
    with an int ``reduction``."""
    mode = _reduction(reduction, "binary_cross_entropy_with_logits", 5)
    # ATen broadcasts the input to the target's shape (F refuses any mismatch), and computes
    # into a target-shaped buffer: a target that would itself need broadcasting is refused
    shape = _broadcast_shapes(tuple(target.shape), tuple(input.shape))
    if shape != tuple(target.shape):
        raise RuntimeError(f"output with shape {list(target.shape)} doesn't match the broadcast "
                           f"shape {list(shape)}")
    return _fn().binary_cross_entropy_with_logits(input.expand(shape), target, weight,
                                                  reduction=mode, pos_weight=pos_weight)


def kl_div(input: Any, target: Any, reduction: int = 0, *,  # noqa: A002
           log_target: bool = False) -> Any:
    """``torch.kl_div``: the pointwise KL divergence of ``F.kl_div`` reduced by an int
    ``reduction`` (1 is the mean over all elements, without ``F``'s batchmean warning)."""
    mode = _reduction(reduction, "kl_div", 3)
    loss = _fn().kl_div(input, target, reduction="none", log_target=log_target)
    return loss.mean() if mode == "mean" else loss.sum() if mode == "sum" else loss


def poisson_nll_loss(input: Any, target: Any, log_input: bool, full: bool,  # noqa: A002
                     eps: float, reduction: int) -> Any:
    """``torch.poisson_nll_loss`` (every argument required, as ATen's)."""
    return _fn().poisson_nll_loss(input, target, log_input, full, eps=eps,
                                  reduction=_reduction(reduction, "poisson_nll_loss", 6))


def triplet_margin_loss(anchor: Any, positive: Any, negative: Any, margin: float = 1.0,
                        p: float = 2.0, eps: float = 1e-06, swap: bool = False,
                        reduction: int = 0) -> Any:
    """``torch.triplet_margin_loss`` (``F.triplet_margin_loss``, int ``reduction``)."""
    return _fn().triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                     reduction=_reduction(reduction, "triplet_margin_loss", 8))


def cosine_embedding_loss(input1: Any, input2: Any, target: Any, margin: float = 0.0,
                          reduction: int = 0) -> Any:
    """``torch.cosine_embedding_loss`` (``F.cosine_embedding_loss``, int ``reduction``)."""
    return _fn().cosine_embedding_loss(input1, input2, target, margin,
                                       reduction=_reduction(reduction, "cosine_embedding_loss", 5))


def hinge_embedding_loss(input: Any, target: Any, margin: float = 1.0,  # noqa: A002
                         reduction: int = 0) -> Any:
    """``torch.hinge_embedding_loss`` (``F.hinge_embedding_loss``, int ``reduction``)."""
    mode = _reduction(reduction, "hinge_embedding_loss", 4)
    return _fn().hinge_embedding_loss(input, target, margin, reduction=mode)


def margin_ranking_loss(input1: Any, input2: Any, target: Any, margin: float = 0.0,
                        reduction: int = 0) -> Any:
    """``torch.margin_ranking_loss`` (``F.margin_ranking_loss``, int ``reduction``)."""
    return _fn().margin_ranking_loss(input1, input2, target, margin,
                                     reduction=_reduction(reduction, "margin_ranking_loss", 5))


def conv_tbc(input: Any, weight: Any, bias: Any, pad: int = 0) -> Any:  # noqa: A002
    """``torch.conv_tbc``: ``F.conv_tbc``, a 1-d convolution of ``(time, batch, channels)``
    sequences."""
    return _fn().conv_tbc(input, weight, bias, pad)


def ctc_loss(log_probs: Any, targets: Any, input_lengths: Any, target_lengths: Any,
             blank: int = 0, reduction: int = 0, zero_infinity: bool = False) -> Any:
    """``torch.ctc_loss`` (``F.ctc_loss``, int ``reduction``; lengths as tensors or lists)."""
    return _fn().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                          _reduction(reduction, "ctc_loss", 6), zero_infinity)


def embedding_renorm_(input: Any, indices: Any, max_norm: float,  # noqa: A002
                      norm_type: float) -> Any:
    """``torch.embedding_renorm_``: rescales in place (without recording a gradient) each row
    of ``input`` that ``indices`` names whose ``norm_type``-norm exceeds ``max_norm`` to norm
    ``max_norm``; returns ``input``."""
    from .nn._functional_core import _embedding_renorm_

    if indices.dtype.name not in ("int64", "int32"):
        raise RuntimeError(
            "Expected tensor for argument #2 'indices' to have one of the following scalar "
            f"types: Long, Int; but got torch.{indices.dtype._legacy} instead (while checking "
            "arguments for embedding_renorm_)")
    _embedding_renorm_(input, indices, float(max_norm), float(norm_type))
    return input


_INTERPOLATION = ("bilinear", "nearest", "bicubic")
_PADDING = ("zeros", "border", "reflection")


def grid_sampler(input: Any, grid: Any, interpolation_mode: int,  # noqa: A002
                 padding_mode: int, align_corners: bool) -> Any:
    """``torch.grid_sampler``: ``F.grid_sample`` with ATen's integer modes
    (``interpolation_mode`` 0 bilinear, 1 nearest, 2 bicubic; ``padding_mode`` 0 zeros,
    1 border, 2 reflection)."""
    if grid.ndim and grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.ndim - 2} in last "
                           f"dimension, but got grid with sizes {list(grid.shape)}")
    if interpolation_mode not in (0, 1, 2):
        raise RuntimeError(f"grid_sampler(): unknown interpolation_mode {interpolation_mode}")
    if padding_mode not in (0, 1, 2):
        raise RuntimeError(f"grid_sampler(): unknown padding_mode {padding_mode}")
    return _fn().grid_sample(input, grid, _INTERPOLATION[interpolation_mode],
                             _PADDING[padding_mode], bool(align_corners))


def grid_sampler_2d(input: Any, grid: Any, interpolation_mode: int,  # noqa: A002
                    padding_mode: int, align_corners: bool) -> Any:
    """``torch.grid_sampler_2d``: ``grid_sampler`` of a 4-D input."""
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input: Any, grid: Any, interpolation_mode: int,  # noqa: A002
                    padding_mode: int, align_corners: bool) -> Any:
    """``torch.grid_sampler_3d``: ``grid_sampler`` of a 5-D input (trilinear or nearest)."""
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def affine_grid_generator(theta: Any, size: Any, align_corners: bool) -> Any:
    """``torch.affine_grid_generator``: ``F.affine_grid`` (``align_corners`` required)."""
    return _fn().affine_grid(theta, size, bool(align_corners))


def native_layer_norm(input: Any, normalized_shape: Any, weight: Any, bias: Any,  # noqa: A002
                      eps: float) -> tuple:
    """``torch.native_layer_norm``: ``(F.layer_norm(...), mean, rstd)``, the statistics of
    each normalized slice with the normalized dims kept as size 1 (no gradient flows through
    them, as torch)."""
    from .autograd.grad_mode import no_grad

    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    out = _fn().layer_norm(input, normalized_shape, weight, bias, eps)
    dims = tuple(range(input.ndim - len(normalized_shape), input.ndim))
    with no_grad():
        mean = input.mean(dims, keepdim=True)
        rstd = (input.var(dims, unbiased=False, keepdim=True) + eps).rsqrt()
    return out, mean, rstd


def native_batch_norm(input: Any, weight: Any, bias: Any, running_mean: Any,  # noqa: A002
                      running_var: Any, training: bool, momentum: float, eps: float) -> tuple:
    """``torch.native_batch_norm``: ``(F.batch_norm(...), save_mean, save_invstd)``; in
    training the batch mean and ``1 / sqrt(var + eps)`` per channel (the running statistics
    updated in place, as ``F.batch_norm``), in eval two empty tensors."""
    from .autograd.grad_mode import no_grad
    from .ops.creation import empty

    out = _fn().batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                           eps)
    if not training:
        return (out, empty(0, dtype=input.dtype, device=input.device),
                empty(0, dtype=input.dtype, device=input.device))
    dims = (0,) + tuple(range(2, input.ndim))
    with no_grad():
        mean = input.mean(dims)
        invstd = (input.var(dims, unbiased=False) + eps).rsqrt()
    return out, mean, invstd


def native_group_norm(input: Any, weight: Any, bias: Any, N: int, C: int,  # noqa: A002,N803
                      HxW: int, group: int, eps: float) -> tuple:  # noqa: N803
    """``torch.native_group_norm``: ``(F.group_norm(...), mean, rstd)`` with the ``(N,
    group)`` statistics of each group (differentiable, as torch's)."""
    if input.numel() != N * C * HxW:
        raise RuntimeError(f"Expected input to have {N * C * HxW} elements, got "
                           f"{input.numel()}")
    out = _fn().group_norm(input, group, weight, bias, eps)
    groups = input.reshape(N, group, -1)
    mean = groups.mean(-1)
    rstd = (groups.var(-1, unbiased=False) + eps).rsqrt()
    return out, mean, rstd


def native_dropout(input: Any, p: float, train: bool | None) -> tuple:  # noqa: A002
    """``torch.native_dropout``: ``(output, mask)``, the kept elements scaled by
    ``1 / (1 - p)`` and the bool mask of the kept ones; with ``train`` False the input
    (copied) and an all-True mask (``None`` means training, as torch)."""
    from .ops.creation import ones
    from .random import rand

    if train is not None and not train:
        return input * 1, ones(tuple(input.shape), dtype=_bool(), device=input.device)
    if not 0 <= 1 - p <= 1:  # (torch draws the mask with bernoulli_(1 - p))
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={1 - p:g}")
    keep = rand(tuple(input.shape), device=input.device) < 1.0 - p
    scale = 0.0 if p >= 1 else 1.0 / (1.0 - p)
    return input * keep.to(input.dtype) * scale, keep


def native_norm(input: Any, p: Any = 2, dim: Any = None, keepdim: bool = False,  # noqa: A002
                dtype: Any = None) -> Any:
    """``torch.native_norm``: the ``p``-norm of a sparse tensor's (coalesced) values, a full
    reduction only, and without a gradient (torch has no derivative for it). Dense input has
    no kernel, as in torch.

    Args:
        input: a sparse COO tensor.
        p: the norm's order (None: 2).
        dim: None, empty or every dim (torch's sparse kernel reduces fully only).
        keepdim: False (torch's sparse kernel refuses True).
        dtype: None (torch's sparse kernel refuses a dtype).
    """
    from .ops.norms import vector_norm

    if not getattr(input, "is_sparse", False):
        raise NotImplementedError(
            "Could not run 'aten::native_norm' with arguments from the 'CPU' backend. This could "
            "be because the operator doesn't exist for this backend, or was omitted during the "
            "selective/custom build process (if using custom build).")
    dims = [] if dim is None else [dim] if isinstance(dim, int) else list(dim)
    if dims and sorted(d % input.ndim for d in dims) != list(range(input.ndim)):
        raise RuntimeError("norm_sparse currently only supports full reductions, so 'dim' must "
                           "either be empty or contain all dimensions of the input")
    if keepdim:
        raise RuntimeError("norm_sparse currently does not support keepdim=True")
    if dtype is not None:
        raise RuntimeError("norm_sparse currently does not support 'dtype' argument")
    return vector_norm(input.coalesce().values().detach(), 2 if p is None else p)


def _bool() -> Any:
    from . import dtypes

    return dtypes.bool


def norm_except_dim(v: Any, pow: float = 2, dim: int = 0) -> Any:  # noqa: A002
    """``torch.norm_except_dim``: the ``pow``-norm of ``v`` over every dim but ``dim``, kept
    as size-1 dims (``dim == -1``: the norm of all of ``v``, a 0-d tensor), as weight
    normalisation uses it."""
    if dim == -1:
        return v.norm(pow)
    dim = _wrap(dim, v.ndim)
    others = tuple(d for d in range(v.ndim) if d != dim)
    # (a 1-d ``v``: the norm of each element alone)
    return v.norm(pow, others, keepdim=True) if others else v.unsqueeze(-1).norm(pow, -1)


def _wrap(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


def frobenius_norm(input: Any, dim: Any, keepdim: bool = False) -> Any:  # noqa: A002
    """``torch.frobenius_norm`` (deprecated in torch, with its warning): the 2-norm of the
    elements over ``dim`` (at most 2 dims; ``[]``: all of them)."""
    from .ops.norms import vector_norm

    warnings.warn("at::frobenius_norm is deprecated and it is just left for JIT compatibility. "
                  "It will be removed in a future PyTorch release. Please use "
                  "`linalg.vector_norm(A, 2., dim, keepdim)` instead", UserWarning, stacklevel=2)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions "
                           "instead.")
    return vector_norm(input, 2.0, dims or None, keepdim)


def nuclear_norm(input: Any, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A002
    """``torch.nuclear_norm(input, keepdim=False)`` or ``(input, dim, keepdim=False)``
    (deprecated in torch, with its warning): the sum of the singular values of the matrices
    over ``dim`` (the last two dims when not given)."""
    from .ops.norms import matrix_norm

    warnings.warn("at::nuclear_norm is deprecated and it is just left for JIT compatibility. "
                  "It will be removed in a future PyTorch release. Please use "
                  "`linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead", UserWarning,
                  stacklevel=2)
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    return matrix_norm(input, "nuc", (-2, -1) if dim is None else tuple(dim), keepdim)
