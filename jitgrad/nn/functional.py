"""``jitgrad.nn.functional``: activations, losses, layer_norm, linear and dropout.

Each function follows ``torch.nn.functional`` (names, defaults, error texts, the math of the
reductions). Where torch records one node the function calls that op (``NllLossBackward0``,
``NativeLayerNormBackward0``, ``AddmmBackward0`` ...); the rest is composed of jitgrad ops, so
every function is differentiable to any order and traceable by ``jit``.
"""

from __future__ import annotations

import warnings
from typing import Any

from .. import dtypes
from ..ops import composite
from ..ops.creation import zeros
from ..ops.linalg import addmm, matmul
from ..ops.nn_ops import GELU, LAYER_NORM, MSE_LOSS, NLL_LOSS, SILU
from ..ops.nn_ops2 import (CONSTANT_PAD_ND, ELU, ELU_RESULT, EMBEDDING, GATHER_PADS,
                           LEAKY_RELU, LEAKY_RELU_RESULT)
from ..ops.registry import apply
from ..tensor import Tensor

__all__ = ["relu", "gelu", "silu", "tanh", "sigmoid", "softmax", "log_softmax", "cross_entropy",
           "nll_loss", "mse_loss", "layer_norm", "linear", "dropout", "leaky_relu", "elu",
           "leaky_relu_", "elu_",
           "embedding", "pad", "one_hot", "normalize", "l1_loss", "smooth_l1_loss",
           "huber_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits"]

_REDUCTIONS = ("none", "mean", "sum")


def _legacy_reduction(size_average: bool | None, reduce: bool | None) -> str:
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(
        f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
        stacklevel=3)
    return ret


def _reduction(reduction: str, size_average: bool | None = None,
               reduce: bool | None = None) -> str:
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


# ---------------------------------------------------------------- activations


def relu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``max(input, 0)`` elementwise (``ReluBackward0``)."""
    return input.relu_() if inplace else input.relu()


def gelu(input: Tensor, approximate: str = "none") -> Tensor:  # noqa: A002
    """Gaussian error linear unit; ``approximate='tanh'`` uses the tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return apply(GELU, input, approximate=approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``input * sigmoid(input)`` (``SiluBackward0``)."""
    if inplace:
        from ..ops.inplace import inplace as _inplace

        return _inplace(input, lambda s: apply(SILU, s))
    return apply(SILU, input)


def tanh(input: Tensor) -> Tensor:  # noqa: A002
    """Elementwise hyperbolic tangent."""
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """Elementwise logistic sigmoid."""
    return input.sigmoid()


def leaky_relu(input: Tensor, negative_slope: float = 0.01,  # noqa: A002
               inplace: bool = False) -> Tensor:
    """``input`` where positive, else ``negative_slope * input`` (``LeakyReluBackward0``)."""
    return _maybe_inplace(input, inplace, LEAKY_RELU_RESULT if inplace else LEAKY_RELU,
                          negative_slope=float(negative_slope))


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """``input`` where positive, else ``alpha * (exp(input) - 1)`` (``EluBackward0``)."""
    return _maybe_inplace(input, inplace, ELU_RESULT if inplace else ELU, alpha=float(alpha),
                          scale=1.0, input_scale=1.0)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:  # noqa: A002
    """In-place ``leaky_relu`` (``LeakyReluBackward1``)."""
    return leaky_relu(input, negative_slope, inplace=True)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:  # noqa: A002
    """In-place ``elu`` (``EluBackward1``)."""
    return elu(input, alpha, inplace=True)


def _maybe_inplace(input: Tensor, inplace: bool, op: Any, **params: Any) -> Tensor:  # noqa: A002
    if inplace:
        from ..ops.inplace import inplace as _inplace

        return _inplace(input, lambda s: apply(op, s, **params))
    return apply(op, input, **params)


def _softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
        "dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,  # noqa: A002
            dtype: dtypes.dtype | None = None) -> Tensor:
    """Softmax along ``dim`` (computed in ``dtype`` when given)."""
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim, _stacklevel)
    return composite.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,  # noqa: A002
                dtype: dtypes.dtype | None = None) -> Tensor:
    """Log-softmax along ``dim``, computed stably."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim, _stacklevel)
    return composite.log_softmax(input, dim, dtype=dtype)


# ---------------------------------------------------------------- layers


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:  # noqa: A002
    """``input @ weight.T + bias``; one ``addmm`` (``AddmmBackward0``) as torch records it."""
    if bias is None:
        return matmul(input, weight.t())
    if input.ndim == 2:
        return addmm(bias, input, weight.t())
    if input.ndim == 0:
        raise RuntimeError(
            f"both arguments to linear need to be at least 1D, but they are {input.ndim}D and "
            f"{weight.ndim}D")
    lead = tuple(input.shape[:-1])
    out = addmm(bias, input.reshape(-1, input.shape[-1]), weight.t())
    return out.reshape(lead + (out.shape[-1],))


def layer_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalizes over the trailing ``normalized_shape`` dims (``NativeLayerNormBackward0``)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return apply(LAYER_NORM, input, weight, bias, normalized_shape=tuple(normalized_shape),
                 eps=float(eps))


def dropout(input: Tensor, p: float = 0.5, training: bool = True,  # noqa: A002
            inplace: bool = False) -> Tensor:
    """Zeroes each element with probability ``p`` and scales the rest by ``1 / (1 - p)``.

    The mask is drawn from jitgrad's generator, so ``jitgrad.manual_seed`` makes it
    reproducible. In eval mode (``training=False``), or with ``p == 0``, returns ``input``.
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0 or input.numel() == 0:
        return input
    from ..random import rand

    if p == 1:
        noise = zeros((), dtype=input.dtype, device=input.device)
    else:  # drawn with jitgrad.rand, so that inside jit the mask is a fresh draw per call
        keep = rand(tuple(input.shape), dtype=dtypes.float64, device=input.device) < 1.0 - p
        noise = keep.to(input.dtype) / (1.0 - p)
    return input.mul_(noise) if inplace else input * noise


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,  # noqa: A002
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by the integer ``input`` (``EmbeddingBackward0``).

    The row ``padding_idx`` gets no gradient; with ``max_norm`` the picked rows whose
    ``norm_type``-norm exceeds it are rescaled in place first (as torch's
    ``embedding_renorm_``); ``scale_grad_by_freq`` divides each row's gradient by the count
    of its index in the batch. ``sparse`` gradients are not supported (jitgrad has no sparse
    tensors): ``sparse=True`` raises.
    """
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < weight.size(0), "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -weight.size(0), "Padding_idx must be within num_embeddings"
            padding_idx = weight.size(0) + padding_idx
    else:
        padding_idx = -1
    if sparse:
        raise NotImplementedError(
            "jitgrad has no sparse tensors: embedding(sparse=True) is not supported")
    if max_norm is not None:
        _embedding_renorm_(weight, input, float(max_norm), float(norm_type))
    return apply(EMBEDDING, weight, input, padding_idx=int(padding_idx),
                 scale_grad_by_freq=bool(scale_grad_by_freq))


def _embedding_renorm_(weight: Tensor, input: Tensor, max_norm: float,  # noqa: A002
                       norm_type: float) -> None:
    import numpy as np

    from ..autograd.grad_mode import no_grad

    rows = np.unique(input.detach().numpy().reshape(-1))
    if rows.size == 0:
        return
    with no_grad():
        from ..ops.creation import tensor

        index = tensor(rows)
        picked = weight.index_select(0, index)
        norms = picked.norm(p=norm_type, dim=1, keepdim=True)
        scale = (max_norm / (norms + 1e-7)).clamp(max=1.0)
        weight[index] = picked * scale


_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input: Tensor, pad: Any, mode: str = "constant",  # noqa: A002
        value: float | None = None) -> Tensor:
    """Pads the trailing dims: ``pad = (left_last, right_last, left_2nd_last, ...)``.

    ``constant`` (``ConstantPadNdBackward0``, negative pads crop), ``reflect`` and
    ``replicate`` (torch's ``ReflectionPad1DBackward0`` ... ``ReplicationPad3DBackward0``)
    and ``circular`` (gathered with ``index_select``; torch records copies instead).
    """
    pad = tuple(int(p) for p in pad)
    if mode == "constant":
        return apply(CONSTANT_PAD_ND, input, pad=pad, value=0.0 if value is None else value)
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    n_dims = len(pad) // 2
    if len(pad) % 2 or n_dims not in (1, 2, 3) or input.ndim not in (n_dims + 1, n_dims + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    for i in range(n_dims):
        d = input.ndim - 1 - i
        n, lo, hi = input.shape[d], pad[2 * i], pad[2 * i + 1]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(
                f"Argument #4: Padding size should be less than the corresponding input "
                f"dimension, but got: padding ({lo}, {hi}) at dimension {d} of input "
                f"{list(input.shape)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
    if mode != "circular":
        return apply(GATHER_PADS[mode, n_dims], input, padding=pad)
    from ..ops.creation import tensor
    from ..ops.nn_ops2 import pad_positions

    out = input
    for i in range(n_dims):
        d = input.ndim - 1 - i
        pos = pad_positions(mode, input.shape[d], pad[2 * i], pad[2 * i + 1])
        out = out.index_select(d, tensor(pos))
    return out


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """``int64`` one-hot encoding of the class indices in ``tensor`` (a new last dim)."""
    import numpy as np

    from ..ops.creation import tensor as as_tensor

    if tensor.dtype != dtypes.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    idx = tensor.detach().numpy()
    if num_classes == -1:
        if idx.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(idx.max()) + 1
    if idx.size and idx.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if idx.size and idx.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return as_tensor((idx[..., None] == np.arange(num_classes)).astype(np.int64))


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,  # noqa: A002
              out: Tensor | None = None) -> Tensor:
    """``input / max(||input||_p, eps)`` along ``dim``."""
    denom = input.norm(p, dim, keepdim=True).clamp(min=eps).expand_as(input)
    if out is None:
        return input / denom
    return out.copy_(input / denom)


# ---------------------------------------------------------------- losses


def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None,  # noqa: A002
             reduce: bool | None = None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    """Mean squared error (``MseLossBackward0``); ``weight`` weighs each element."""
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({target.size()}) that is different to the input size "
            f"({input.size()}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.", stacklevel=2)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    from ..ops.registry import broadcast_shapes

    shape = broadcast_shapes(tuple(input.shape), tuple(target.shape))
    x = input if tuple(input.shape) == shape else input.expand(shape)
    y = target if tuple(target.shape) == shape else target.expand(shape)
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError("Weights and input must have the same size.")
        sq = (x - y) ** 2 * weight
        if reduction == "none":
            return sq
        if reduction == "sum":
            return sq.sum()
        if reduction == "mean":
            return sq.sum() / weight.sum()
        raise ValueError(
            f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return apply(MSE_LOSS, x, y, reduction=reduction)


def _check_target_dtype(target: Tensor) -> None:
    if target.dtype not in (dtypes.int64, dtypes.uint8):
        name = target.dtype._legacy.replace("Tensor", "")
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {name}")


def _check_weight(weight: Tensor | None, n_classes: int) -> None:
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != n_classes):
        raise RuntimeError(
            f"weight tensor should be defined either for all {n_classes} classes or no classes "
            f"but got weight tensor of shape: {list(weight.shape)}")


def _to_rows(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """(N, C, d1, ...) -> (N*d1*..., C) rows and their flat targets."""
    c = input.shape[1]
    perm = (0,) + tuple(range(2, input.ndim)) + (1,)
    return input.permute(*perm).reshape(-1, c), target.reshape(-1)


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
             size_average: bool | None = None, ignore_index: int = -100,
             reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of class indices given log-probabilities (``NllLossBackward0``).

    ``input`` is ``(C)``, ``(N, C)`` or ``(N, C, d1, ...)``; the mean divides by the summed
    weights of the non-ignored targets.
    """
    reduction = _reduction(reduction, size_average, reduce)
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    if input.ndim <= 2:
        if target.ndim > 1 or target.ndim != input.ndim - 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        _check_target_dtype(target)
        _check_weight(weight, input.shape[-1])
        return apply(NLL_LOSS, input, target, weight, reduction=reduction,
                     ignore_index=int(ignore_index))
    if tuple(target.shape[:1]) != tuple(input.shape[:1]):
        raise ValueError(
            f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
            f"({target.shape[0]}).")
    if tuple(target.shape[1:]) != tuple(input.shape[2:]):
        raise RuntimeError(
            f"Expected target size {[input.shape[0]] + list(input.shape[2:])}, got "
            f"{list(target.shape)}")
    _check_target_dtype(target)
    _check_weight(weight, input.shape[1])
    rows, flat = _to_rows(input, target)
    out = apply(NLL_LOSS, rows, flat, weight, reduction=reduction,
                ignore_index=int(ignore_index))
    return out.reshape(tuple(target.shape)) if reduction == "none" else out


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                  size_average: bool | None = None, ignore_index: int = -100,
                  reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy between logits and class indices or class probabilities, as torch computes.

    ``input`` is ``(C)``, ``(N, C)`` or ``(N, C, d1, ...)``. ``target`` holds class indices
    (shape of ``input`` without the class dim) or probabilities (same shape as ``input``).
    ``weight`` rescales classes, ``ignore_index`` skips targets (indices only), and
    ``label_smoothing`` mixes the target with the uniform distribution.
    """
    reduction = _reduction(reduction, size_average, reduce)
    class_dim = 0 if input.ndim == 1 else 1
    n_classes = input.shape[class_dim]
    logp = log_softmax(input, class_dim)
    if tuple(input.shape) == tuple(target.shape):
        return _cross_entropy_probs(logp, target, weight, ignore_index, reduction,
                                    label_smoothing, class_dim, n_classes)
    if label_smoothing > 1.0:
        raise RuntimeError(
            f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing:g}")
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing <= 0.0:
        return nll
    ignore = target == ignore_index
    if weight is not None:
        shape = [1] * logp.ndim
        shape[class_dim] = n_classes
        smooth = -(logp * weight.reshape(tuple(shape))).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    smooth = smooth.masked_fill(ignore, 0.0)
    if reduction == "mean":
        if weight is not None:
            safe = target.masked_fill(ignore, 0).reshape(-1)
            denom = weight.index_select(0, safe).masked_fill(ignore.reshape(-1), 0.0).sum()
        else:
            denom = (~ignore).sum()
        ret = smooth.sum() / denom
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth
    return (1 - label_smoothing) * nll + ret * (label_smoothing / n_classes)


def _cross_entropy_probs(logp: Tensor, target: Tensor, weight: Tensor | None,
                         ignore_index: int, reduction: str, label_smoothing: float,
                         class_dim: int, n_classes: int) -> Tensor:
    if not (target.dtype.is_floating_point or target.dtype.is_complex):
        name = target.dtype._legacy.replace("Tensor", "")
        raise RuntimeError(
            f"Expected floating point type for target with class probabilities, got {name}")
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    if label_smoothing > 0.0:
        if label_smoothing > 1.0:
            raise RuntimeError(
                f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing:g}")
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    prod = logp * target
    if weight is not None:
        _check_weight(weight, n_classes)
        shape = [1] * logp.ndim
        shape[class_dim] = n_classes
        prod = prod * weight.reshape(tuple(shape))
    if reduction == "none":
        return -prod.sum(class_dim)
    if reduction == "sum":
        return -prod.sum()
    batch = logp.numel() // n_classes if n_classes else 0
    return -prod.sum() / batch if batch else -prod.sum() * float("nan")


from ._functional_loss import (binary_cross_entropy, binary_cross_entropy_with_logits,  # noqa: E402
                               huber_loss, l1_loss, smooth_l1_loss)

from .functional_conv import *  # noqa: E402, F401, F403 - conv, pooling, batch_norm
from .functional_conv import __all__ as _conv_all  # noqa: E402

__all__ += _conv_all

from .functional_attention import (multi_head_attention_forward,  # noqa: E402
                                   scaled_dot_product_attention)

__all__ += ["scaled_dot_product_attention", "multi_head_attention_forward"]


def _install_declared() -> None:
    from ..ops.surface import install_namespace

    before = set(globals())
    install_namespace(globals(), "functional")  # the ops declared with a functional name
    __all__.extend(sorted(set(globals()) - before - set(__all__)))


_install_declared()
