"""torch's top-level forms of ``nn.functional`` functions (``torch.conv2d``, ``torch.dropout``,
``torch.layer_norm``, ``torch.embedding``, ...), with torch's top-level argument orders, and
the ``Tensor.hardshrink`` / ``Tensor.prelu`` methods. Each calls ``jitgrad.nn.functional``
(imported on first call): the same ops, nodes and gradients."""

from __future__ import annotations

from typing import Any


def _F():  # noqa: N802
    from .nn import functional

    return functional


def dropout(input: Any, p: float, train: bool) -> Any:  # noqa: A002
    """``F.dropout(input, p, training=train)``."""
    return _F().dropout(input, p, train)


def dropout_(input: Any, p: float, train: bool) -> Any:  # noqa: A002
    """``F.dropout(input, p, train, inplace=True)``."""
    return _F().dropout(input, p, train, inplace=True)


def alpha_dropout(input: Any, p: float, train: bool) -> Any:  # noqa: A002
    """``F.alpha_dropout(input, p, training=train)``."""
    return _F().alpha_dropout(input, p, train)


def alpha_dropout_(input: Any, p: float, train: bool) -> Any:  # noqa: A002
    """``F.alpha_dropout(input, p, train, inplace=True)``."""
    return _F().alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input: Any, p: float, train: bool) -> Any:  # noqa: A002
    """``F.feature_alpha_dropout(input, p, training=train)``."""
    return _F().feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input: Any, p: float, train: bool) -> Any:  # noqa: A002
    """``F.feature_alpha_dropout(input, p, train, inplace=True)``."""
    return _F().feature_alpha_dropout(input, p, train, inplace=True)


def celu(input: Any, alpha: float = 1.0) -> Any:  # noqa: A002
    """``F.celu``."""
    return _F().celu(input, alpha)


def celu_(input: Any, alpha: float = 1.0) -> Any:  # noqa: A002
    """``F.celu(..., inplace=True)``."""
    return _F().celu(input, alpha, inplace=True)


def selu(input: Any) -> Any:  # noqa: A002
    """``F.selu``."""
    return _F().selu(input)


def selu_(input: Any) -> Any:  # noqa: A002
    """``F.selu(..., inplace=True)``."""
    return _F().selu(input, inplace=True)


def threshold(input: Any, threshold: float, value: float) -> Any:  # noqa: A002
    """``F.threshold``: ``value`` where ``input <= threshold``."""
    return _F().threshold(input, threshold, value)


def threshold_(input: Any, threshold: float, value: float) -> Any:  # noqa: A002
    """``F.threshold(..., inplace=True)``."""
    return _F().threshold(input, threshold, value, inplace=True)


def hardshrink(input: Any, lambd: float = 0.5) -> Any:  # noqa: A002
    """``F.hardshrink``."""
    return _F().hardshrink(input, lambd)


def prelu(input: Any, weight: Any) -> Any:  # noqa: A002
    """``F.prelu``."""
    return _F().prelu(input, weight)


def layer_norm(input: Any, normalized_shape: Any, weight: Any = None, bias: Any = None,  # noqa: A002
               eps: float = 1e-5, cudnn_enable: bool = True) -> Any:
    """``F.layer_norm`` (``cudnn_enable`` is accepted and unused)."""
    return _F().layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Any, num_groups: int, weight: Any = None, bias: Any = None,  # noqa: A002
               eps: float = 1e-5, cudnn_enabled: bool = True) -> Any:
    """``F.group_norm`` (``cudnn_enabled`` is accepted and unused)."""
    return _F().group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any,  # noqa: A002
               training: bool, momentum: float, eps: float, cudnn_enabled: bool) -> Any:
    """torch's top-level argument order for ``F.batch_norm``."""
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                           eps)


def instance_norm(input: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any,  # noqa: A002
                  use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool) -> Any:
    """torch's top-level argument order for ``F.instance_norm``."""
    return _F().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                              momentum, eps)


def embedding(weight: Any, indices: Any, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Any:
    """torch's top-level ``embedding(weight, indices, ...)`` (``padding_idx=-1``: none)."""
    return _F().embedding(indices, weight, padding_idx=None if padding_idx == -1 else
                          padding_idx, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def constant_pad_nd(input: Any, pad: Any, value: float = 0) -> Any:  # noqa: A002
    """``F.pad(input, pad, value=value)``."""
    return _F().pad(input, list(pad), value=value)


# F functions whose top-level form takes the same arguments
_SAME = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "bilinear",
         "pixel_shuffle", "pixel_unshuffle", "channel_shuffle")


def _same(name: str):
    def fn(*args: Any, **kwargs: Any) -> Any:
        return getattr(_F(), name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``nn.functional.{name}``."
    fn.__module__ = "jitgrad"
    return fn


def install(namespace: dict, tensor_type: type) -> None:
    """Puts the functions in ``namespace`` (``jitgrad``'s) where it has none of that name, and
    ``hardshrink``/``prelu`` on ``tensor_type``."""
    own = {name: obj for name, obj in globals().items()
           if callable(obj) and not name.startswith("_") and name != "install"
           and getattr(obj, "__module__", None) == __name__}
    for name, obj in own.items():
        namespace.setdefault(name, obj)
    for name in _SAME:
        namespace.setdefault(name, _same(name))
    for name in ("hardshrink", "prelu"):
        if name not in tensor_type.__dict__:
            setattr(tensor_type, name, own[name])
