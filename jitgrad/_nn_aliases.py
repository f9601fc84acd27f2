"""torch's top-level functional aliases of ``nn.functional`` (``torch.conv2d``,
``torch.max_pool1d``, ``torch.batch_norm``, ``torch.dropout``, ``torch.selu_`` ...), with torch's
positional signatures (which differ from ``F``'s for several: ``torch.embedding(weight,
indices)``, ``torch.batch_norm(input, weight, bias, running_mean, ...)``, ``torch.dropout(input,
p, train)``).

``jitgrad.__getattr__`` serves these names; ``jitgrad.nn`` is imported on the first call, so
``import jitgrad`` stays as light as it was.
"""

from __future__ import annotations

from typing import Any

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "avg_pool1d",
           "adaptive_avg_pool1d", "adaptive_max_pool1d", "conv1d", "conv2d", "conv3d",
           "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "convolution",
           "batch_norm", "instance_norm", "group_norm", "layer_norm", "pixel_shuffle",
           "pixel_unshuffle", "channel_shuffle", "embedding", "dropout", "dropout_",
           "alpha_dropout", "alpha_dropout_", "feature_dropout", "feature_dropout_",
           "feature_alpha_dropout", "feature_alpha_dropout_", "bilinear", "prelu", "selu",
           "selu_", "celu", "celu_", "threshold", "threshold_", "hardshrink", "rrelu", "rrelu_",
           "embedding_bag", "constant_pad_nd", "pdist"]


def _fn() -> Any:
    from .nn import functional

    return functional


def _stride(stride: Any) -> Any:
    return None if stride is None or (not isinstance(stride, int) and len(stride) == 0) \
        else stride


def max_pool1d(input: Any, kernel_size: Any, stride: Any = (), padding: Any = 0,  # noqa: A002
               dilation: Any = 1, ceil_mode: bool = False) -> Any:
    """``torch.max_pool1d``: the values of ``F.max_pool1d``."""
    return _fn().max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input: Any, kernel_size: Any, stride: Any = (), padding: Any = 0,  # noqa: A002
               dilation: Any = 1, ceil_mode: bool = False) -> Any:
    """``torch.max_pool2d``: the values of ``F.max_pool2d``."""
    return _fn().max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input: Any, kernel_size: Any, stride: Any = (), padding: Any = 0,  # noqa: A002
               dilation: Any = 1, ceil_mode: bool = False) -> Any:
    """``torch.max_pool3d``: the values of ``F.max_pool3d``."""
    return _fn().max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input: Any, kernel_size: Any, stride: Any = (),  # noqa: A002
                            padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False) -> Any:
    """``torch.max_pool1d_with_indices``: values and positions of the maxima."""
    return _fn().max_pool1d_with_indices(input, kernel_size, _stride(stride), padding, dilation,
                                        ceil_mode)


def avg_pool1d(input: Any, kernel_size: Any, stride: Any = (), padding: Any = 0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True) -> Any:
    """``torch.avg_pool1d`` (``F.avg_pool1d``)."""
    return _fn().avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode,
                           count_include_pad)


def adaptive_avg_pool1d(input: Any, output_size: Any) -> Any:  # noqa: A002
    """``torch.adaptive_avg_pool1d`` (``F.adaptive_avg_pool1d``)."""
    return _fn().adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input: Any, output_size: Any) -> Any:  # noqa: A002
    """``torch.adaptive_max_pool1d``: values and positions of the maxima (a pair, as torch)."""
    return _fn().adaptive_max_pool1d(input, output_size, True)


def conv1d(input: Any, weight: Any, bias: Any = None, stride: Any = 1,  # noqa: A002
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Any:
    """``torch.conv1d`` (``F.conv1d``)."""
    return _fn().conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Any, weight: Any, bias: Any = None, stride: Any = 1,  # noqa: A002
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Any:
    """``torch.conv2d`` (``F.conv2d``)."""
    return _fn().conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Any, weight: Any, bias: Any = None, stride: Any = 1,  # noqa: A002
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Any:
    """``torch.conv3d`` (``F.conv3d``)."""
    return _fn().conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input: Any, weight: Any, bias: Any = None, stride: Any = 1,  # noqa: A002
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Any:
    """``torch.conv_transpose1d`` (``F.conv_transpose1d``)."""
    return _fn().conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)


def conv_transpose2d(input: Any, weight: Any, bias: Any = None, stride: Any = 1,  # noqa: A002
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Any:
    """``torch.conv_transpose2d`` (``F.conv_transpose2d``)."""
    return _fn().conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)


def conv_transpose3d(input: Any, weight: Any, bias: Any = None, stride: Any = 1,  # noqa: A002
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Any:
    """``torch.conv_transpose3d`` (``F.conv_transpose3d``)."""
    return _fn().conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)


def convolution(input: Any, weight: Any, bias: Any, stride: Any, padding: Any,  # noqa: A002
                dilation: Any, transposed: bool, output_padding: Any, groups: int) -> Any:
    """``torch.convolution``: the 1-, 2- or 3-d (transposed) convolution by ``weight.ndim``."""
    n = weight.ndim - 2
    if n not in (1, 2, 3):
        raise RuntimeError(f"Expected 3D, 4D or 5D weight for convolution, but got weight of "
                           f"size: {list(weight.shape)}")
    F = _fn()
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[n - 1]
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    fn = (F.conv1d, F.conv2d, F.conv3d)[n - 1]
    return fn(input, weight, bias, stride, padding, dilation, groups)


def batch_norm(input: Any, weight: Any, bias: Any, running_mean: Any,  # noqa: A002
               running_var: Any, training: bool, momentum: float, eps: float,
               cudnn_enabled: bool) -> Any:
    """``torch.batch_norm`` (``F.batch_norm`` with torch's positional order)."""
    return _fn().batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                           eps)


def instance_norm(input: Any, weight: Any, bias: Any, running_mean: Any,  # noqa: A002
                  running_var: Any, use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool) -> Any:
    """``torch.instance_norm`` (``F.instance_norm`` with torch's positional order)."""
    return _fn().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                              momentum, eps)


def group_norm(input: Any, num_groups: int, weight: Any = None, bias: Any = None,  # noqa: A002
               eps: float = 1e-05, cudnn_enabled: bool = True) -> Any:
    """``torch.group_norm`` (``F.group_norm``)."""
    return _fn().group_norm(input, num_groups, weight, bias, eps)


def layer_norm(input: Any, normalized_shape: Any, weight: Any = None,  # noqa: A002
               bias: Any = None, eps: float = 1e-05, cudnn_enable: bool = True) -> Any:
    """``torch.layer_norm`` (``F.layer_norm``)."""
    return _fn().layer_norm(input, normalized_shape, weight, bias, eps)


def pixel_shuffle(input: Any, upscale_factor: int) -> Any:  # noqa: A002
    """``torch.pixel_shuffle`` (``F.pixel_shuffle``)."""
    return _fn().pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input: Any, downscale_factor: int) -> Any:  # noqa: A002
    """``torch.pixel_unshuffle`` (``F.pixel_unshuffle``)."""
    return _fn().pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input: Any, groups: int) -> Any:  # noqa: A002
    """``torch.channel_shuffle`` (``F.channel_shuffle``)."""
    return _fn().channel_shuffle(input, groups)


def embedding(weight: Any, indices: Any, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Any:
    """``torch.embedding(weight, indices)``: the rows of ``weight`` (a negative
    ``padding_idx`` is none)."""
    return _fn().embedding(indices, weight, padding_idx if padding_idx >= 0 else None,
                          scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def dropout(input: Any, p: float, train: bool) -> Any:  # noqa: A002
    """``torch.dropout(input, p, train)`` (``F.dropout``)."""
    return _fn().dropout(input, p, train)


def dropout_(input: Any, p: float, train: bool) -> Any:  # noqa: A002
    """In-place ``torch.dropout``."""
    return _fn().dropout(input, p, train, True)


def alpha_dropout(input: Any, p: float, train: bool) -> Any:  # noqa: A002
    """``torch.alpha_dropout(input, p, train)`` (``F.alpha_dropout``)."""
    return _fn().alpha_dropout(input, p, train)


def alpha_dropout_(input: Any, p: float, train: bool) -> Any:  # noqa: A002
    """In-place ``torch.alpha_dropout``."""
    return _fn().alpha_dropout(input, p, train, True)


def feature_dropout(input: Any, p: float, train: bool) -> Any:  # noqa: A002
    """``torch.feature_dropout``: whole channels (dim 1 of ``(N, C, *)``) zeroed with
    probability ``p``, the rest scaled by ``1 / (1 - p)``."""
    from .nn._functional_extra import _check_p, _feature_dropout

    _check_p(p)
    return _feature_dropout(input, p, train, False)


def feature_dropout_(input: Any, p: float, train: bool) -> Any:  # noqa: A002
    """In-place ``torch.feature_dropout``."""
    from .nn._functional_extra import _check_p, _feature_dropout

    _check_p(p)
    return _feature_dropout(input, p, train, True)


def feature_alpha_dropout(input: Any, p: float, train: bool) -> Any:  # noqa: A002
    """``torch.feature_alpha_dropout`` (``F.feature_alpha_dropout``)."""
    return _fn().feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input: Any, p: float, train: bool) -> Any:  # noqa: A002
    """In-place ``torch.feature_alpha_dropout``."""
    return _fn().feature_alpha_dropout(input, p, train, True)


def bilinear(input1: Any, input2: Any, weight: Any, bias: Any = None) -> Any:
    """``torch.bilinear`` (``F.bilinear``)."""
    return _fn().bilinear(input1, input2, weight, bias)


def prelu(input: Any, weight: Any) -> Any:  # noqa: A002
    """``torch.prelu`` (``F.prelu``)."""
    return _fn().prelu(input, weight)


def selu(input: Any) -> Any:  # noqa: A002
    """``torch.selu`` (``F.selu``)."""
    return _fn().selu(input)


def selu_(input: Any) -> Any:  # noqa: A002
    """In-place ``torch.selu``."""
    return _fn().selu(input, True)


def celu(input: Any, alpha: float = 1.0) -> Any:  # noqa: A002
    """``torch.celu`` (``F.celu``)."""
    return _fn().celu(input, alpha)


def celu_(input: Any, alpha: float = 1.0) -> Any:  # noqa: A002
    """In-place ``torch.celu``."""
    return _fn().celu(input, alpha, True)


def threshold(input: Any, threshold: float, value: float) -> Any:  # noqa: A002
    """``torch.threshold`` (``F.threshold``)."""
    return _fn().threshold(input, threshold, value)


def threshold_(input: Any, threshold: float, value: float) -> Any:  # noqa: A002
    """In-place ``torch.threshold``."""
    return _fn().threshold(input, threshold, value, True)


def hardshrink(input: Any, lambd: float = 0.5) -> Any:  # noqa: A002
    """``torch.hardshrink`` (``F.hardshrink``)."""
    return _fn().hardshrink(input, lambd)


def rrelu(input: Any, lower: float = 1.0 / 8, upper: float = 1.0 / 3,  # noqa: A002
          training: bool = False, generator: Any = None) -> Any:
    """``torch.rrelu`` (``F.rrelu``; ``generator`` draws the training slopes)."""
    from .nn._functional_act3 import _rrelu

    return _rrelu(input, lower, upper, training, False, generator)


def rrelu_(input: Any, lower: float = 1.0 / 8, upper: float = 1.0 / 3,  # noqa: A002
           training: bool = False, generator: Any = None) -> Any:
    """In-place ``torch.rrelu``."""
    from .nn._functional_act3 import _rrelu

    return _rrelu(input, lower, upper, training, True, generator)


def embedding_bag(weight: Any, indices: Any, offsets: Any, scale_grad_by_freq: bool = False,
                  mode: int = 0, sparse: bool = False, per_sample_weights: Any = None,
                  include_last_offset: bool = False, padding_idx: int | None = None) -> tuple:
    """``torch.embedding_bag(weight, indices, offsets, ...)``: ``F.embedding_bag``'s output
    (``mode`` 0 sum, 1 mean, 2 max) and torch's CPU kernel's ``offset2bag``, ``bag_size`` and
    ``max_indices``. For mean and max: the bag of each index, the non-padding count of each
    bag, and (max) the row of each maximum or (mean) the counts again. For sum: zeros (one per
    offset, or per bag when recording a gradient), and ``offset2bag`` empty for float32
    weights without ``padding_idx`` (torch's fast path), else the bag of each index."""
    import numpy as np

    from . import dtypes
    from .ops.creation import tensor

    if mode not in (0, 1, 2):
        raise RuntimeError(f"mode has to be one of sum, mean or max, but got {mode}")
    out = _fn().embedding_bag(indices, weight, offsets, scale_grad_by_freq=scale_grad_by_freq,
                              mode=("sum", "mean", "max")[mode], sparse=sparse,
                              per_sample_weights=per_sample_weights,
                              include_last_offset=include_last_offset, padding_idx=padding_idx)
    idx = indices.detach().cpu().numpy().reshape(-1).astype(np.int64)
    offs = offsets.detach().cpu().numpy().reshape(-1).astype(np.int64)
    n_bags = len(offs) - 1 if include_last_offset else len(offs)
    bag = np.searchsorted(offs[:n_bags], np.arange(len(idx)), side="right") - 1
    keep = idx != padding_idx if padding_idx is not None else np.ones(len(idx), bool)
    dev = weight.device

    def as_tensor(a: Any) -> Any:
        return tensor(np.asarray(a, dtype=np.int64), device=dev)

    if mode == 0:
        fast = weight.dtype == dtypes.float32 and padding_idx is None
        from .autograd.grad_mode import is_grad_enabled

        # (torch's autograd path sizes them by the bags, its no-grad path by the offsets)
        zeros = np.zeros(n_bags if weight.requires_grad and is_grad_enabled() else len(offs),
                         dtype=np.int64)
        return (out, as_tensor(np.zeros(0) if fast else bag), as_tensor(zeros),
                as_tensor(zeros))
    sizes = np.bincount(bag[keep], minlength=n_bags)[:n_bags]
    if mode == 1:
        return out, as_tensor(bag), as_tensor(sizes), as_tensor(sizes)
    rows = np.zeros((n_bags, weight.shape[1]), dtype=np.int64)
    w = weight.detach().cpu().numpy()
    for b in range(n_bags):
        members = idx[(bag == b) & keep]
        if len(members):
            rows[b] = members[w[members].argmax(0)]
    return out, as_tensor(bag), as_tensor(sizes), as_tensor(rows)


def constant_pad_nd(input: Any, pad: Any, value: float = 0) -> Any:  # noqa: A002
    """``torch.constant_pad_nd``: ``F.pad(input, pad, value=value)``."""
    return _fn().pad(input, list(pad), value=value)


def pdist(input: Any, p: float = 2) -> Any:  # noqa: A002
    """``torch.pdist``: ``F.pdist``, the p-norm distances between the rows of ``input``."""
    return _fn().pdist(input, p)


def install_tensor_methods(tensor_type: type) -> None:
    """``Tensor.hardshrink`` and ``Tensor.prelu``, torch's methods of these two functions."""
    for name in ("hardshrink", "prelu"):
        if name not in tensor_type.__dict__:
            setattr(tensor_type, name, globals()[name])
