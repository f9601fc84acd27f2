"""``torch.nn.utils.clip_grad``: gradient clipping (``clip_grad_norm_``, ``clip_grad_value_``,
``get_total_norm``, ``clip_grads_with_norm_``) and the deprecated ``clip_grad_norm``."""

from __future__ import annotations

import warnings
from collections.abc import Iterable

from ...autograd.grad_mode import no_grad
from ...ops.creation import tensor
from ...ops.movement import stack
from ...ops.norms import vector_norm
from ...tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _as_list(tensors: Tensor | Iterable[Tensor]) -> list[Tensor]:
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


@no_grad()
def get_total_norm(tensors: Tensor | Iterable[Tensor], norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """The ``norm_type``-norm of the norms of ``tensors`` (as if concatenated into one vector).

    Args:
        tensors: a tensor or an iterable of tensors (typically gradients).
        norm_type: order of the norm; ``inf`` for the max norm.
        error_if_nonfinite: raise if the total norm is nan or inf.
        foreach: accepted for torch's signature (one implementation here).
    """
    tensors = _as_list(tensors)
    if not tensors:
        return tensor(0.0)
    norms = [vector_norm(t, float(norm_type)) for t in tensors]
    total = vector_norm(stack(norms), float(norm_type))  # (stack promotes, as torch's)
    if error_if_nonfinite and bool((total.isnan() | total.isinf()).item()):
        raise RuntimeError(
            f"The total norm of order {float(norm_type)} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total


@no_grad()
def clip_grads_with_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                          total_norm: Tensor, foreach: bool | None = None) -> None:
    """Scales the gradients of ``parameters`` in place by ``min(1, max_norm / (total_norm +
    1e-6))``."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef)  # (in float: a 16-bit gradient is rounded once, as torch's)


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: bool | None = None) -> Tensor:
    """Clips the gradient norm of ``parameters`` (as one vector) to ``max_norm`` in place.

    Args:
        parameters: a tensor or an iterable of tensors whose ``.grad`` is clipped.
        max_norm: the largest norm allowed.
        norm_type: order of the norm; ``inf`` for the max norm. Default: 2.
        error_if_nonfinite: raise if the total norm is nan or inf. Default: False.
        foreach: accepted for torch's signature.

    Returns:
        The total norm of the gradients before clipping.
    """
    parameters = _as_list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


@no_grad()
def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float,
                     foreach: bool | None = None) -> None:
    """Clamps every gradient of ``parameters`` to ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    for p in _as_list(parameters):
        if p.grad is not None:
            p.grad.clamp_(min=-clip_value, max=clip_value)


def clip_grad_norm(parameters: Tensor | Iterable[Tensor], max_norm: float,
                   norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """Deprecated: ``clip_grad_norm_`` (warns a FutureWarning, as torch)."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)
