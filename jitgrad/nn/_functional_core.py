"""The activations, ``softmax``, ``linear``, ``layer_norm``, ``dropout``, ``embedding``,
``pad``, ``one_hot`` and ``normalize`` of ``jitgrad.nn.functional`` (re-exported there).

Each function follows ``torch.nn.functional`` (names, defaults, error texts). Where torch
records one node the function calls that op (``NativeLayerNormBackward0``,
``AddmmBackward0`` ...); the rest is composed of jitgrad ops, so every function is
differentiable to any order and traceable by ``jit``. The losses (``_functional_loss``) and
attention (``functional_attention``) build on this module; nothing here imports them.
"""

from __future__ import annotations

import warnings
from typing import Any

from ..ops._shape import int_tuple_arg
from ..ops.autocast_policy import LOWER, autocast_policy
from .. import dtypes
from ..ops import composite
from ..ops.creation import zeros
from ..ops.dtype_rules import check_norm_parameters
from ..ops.linalg import addmm, matmul
from ..ops.nn_ops import GELU, LAYER_NORM, SILU
from ..ops.nn_ops2 import (CONSTANT_PAD_ND, ELU, ELU_RESULT, EMBEDDING, GATHER_PADS,
                           LEAKY_RELU, LEAKY_RELU_RESULT)
from ..ops.registry import apply
from ..tensor import Tensor

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


@autocast_policy(LOWER)
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:  # noqa: A002
    """``input @ weight.T + bias``; one ``addmm`` (``AddmmBackward0``) as torch records it,
    except for a non-contiguous input of 3 or more dims (``matmul``, then ``+ bias``)."""
    if bias is None:
        return matmul(input, weight.t())
    if input.ndim == 2:
        return addmm(bias, input, weight.t())
    if input.ndim == 0:
        raise RuntimeError(
            f"both arguments to linear need to be at least 1D, but they are {input.ndim}D and "
            f"{weight.ndim}D")
    if not (input.is_contiguous() and (input.ndim == 3 or bias.ndim == 1)):
        return matmul(input, weight.t()) + bias  # torch: AddBackward0 over matmul's mm
    lead = tuple(input.shape[:-1])  # torch's _flatten_nd_linear: one addmm over the rows
    out = addmm(bias, input.reshape(-1, input.shape[-1]), weight.t())
    return out.reshape(lead + (out.shape[-1],))


def layer_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalizes over the trailing ``normalized_shape`` dims (``NativeLayerNormBackward0``)."""
    normalized_shape = int_tuple_arg("layer_norm", "normalized_shape", 2, normalized_shape)
    check_norm_parameters(input, weight, bias)
    return apply(LAYER_NORM, input, weight, bias, normalized_shape=normalized_shape,
                 eps=float(eps))


def check_dropout_dtype(input: Tensor, alpha: bool = False) -> None:  # noqa: A002
    """torch's error for a random dropout mask on a non-floating input: complex numbers have no
    Bernoulli kernel, and the float mask's product cannot be cast back to an integer or bool
    (an alpha dropout of bools computes in int64 first)."""
    dt = input.dtype
    if dt.is_floating_point:
        return
    name = dt._scalar_name
    if dt.is_complex:
        raise NotImplementedError(f"\"bernoulli_scalar_cpu_\" not implemented for '{name}'")
    if alpha and dt is dtypes.bool:
        name = "Long"
    raise RuntimeError(f"result type Float can't be cast to the desired output type {name}")


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
    if p != 1:
        check_dropout_dtype(input)
    from ..random import uniforms_like

    if p == 1:
        noise = zeros((), dtype=input.dtype, device=input.device)
    else:  # drawn with jitgrad.rand, so that inside jit the mask is a fresh draw per call
        keep = uniforms_like(input) < 1.0 - p
        noise = keep.to(input.dtype) / (1.0 - p)
    return input.mul_(noise) if inplace else input * noise


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,  # noqa: A002
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by the integer ``input`` (``EmbeddingBackward0``).

    The row ``padding_idx`` gets no gradient; with ``max_norm`` the picked rows whose
    ``norm_type``-norm exceeds it are rescaled in place first (as torch's
    ``embedding_renorm_``); ``scale_grad_by_freq`` divides each row's gradient by the count
    of its index in the batch. With ``sparse=True`` the gradient w.r.t. ``weight`` is a sparse
    COO tensor (torch's: one entry per looked-up index, not coalesced).
    """
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < weight.size(0), "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -weight.size(0), "Padding_idx must be within num_embeddings"
            padding_idx = weight.size(0) + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        _embedding_renorm_(weight, input, float(max_norm), float(norm_type))
    if sparse:
        from ..sparse._embedding import embedding_sparse

        return embedding_sparse(weight, input, padding_idx, scale_grad_by_freq)
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
    from ..ops.creation import host_device, tensor
    from ..ops.nn_ops2 import pad_positions

    out = input
    for i in range(n_dims):
        d = input.ndim - 1 - i
        pos = pad_positions(mode, input.shape[d], pad[2 * i], pad[2 * i + 1])
        out = out.index_select(d, tensor(pos, device=host_device(out)))
    return out


def one_hot(input: Tensor, num_classes: int = -1) -> Tensor:  # noqa: A002
    """``int64`` one-hot encoding of the class indices in ``input`` (a new last dim)."""
    import numpy as np

    from ..ops.creation import tensor as as_tensor

    if input.dtype != dtypes.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if input.is_meta:  # (the shape needs num_classes: the values are not there to count)
        if num_classes == -1:
            from .._meta import data_dependent_error

            raise data_dependent_error("one_hot without num_classes")
        from ..ops.creation import empty

        return empty(*input.shape, num_classes, dtype=dtypes.int64, device="meta")
    idx = input.detach().numpy()
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
