"""``RMSprop``: scales each step by a running root mean square of the gradients."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import dtypes
from ..ops.creation import tensor, zeros_like
from . import _compiling, _foreach
from ._flags import check_flags
from .adam import _lerp_
from .optimizer import Optimizer

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop with torch.optim.RMSprop's update (single-tensor form), step by step:

    ``g = -grad`` if ``maximize``; ``g += weight_decay * p``; ``v = alpha * v + (1 - alpha) *
    g * g``; with ``centered``, ``m = lerp(m, g, 1 - alpha)`` and ``avg = sqrt(v - m * m)``,
    else ``avg = sqrt(v)``; ``avg += eps``; with momentum ``buf = momentum * buf + g / avg`` and
    ``p -= lr * buf``, else ``p -= lr * g / avg``.

    Args:
        params: parameters or param-group dicts to optimize.
        lr: learning rate. Default: 1e-2.
        alpha: smoothing constant. Default: 0.99.
        eps: term added to the denominator. Default: 1e-8.
        weight_decay: L2 penalty. Default: 0.
        momentum: momentum factor. Default: 0.
        centered: normalize by the estimated variance of the gradient. Default: False.
        capturable: not supported (must be False).
        foreach: accepted; jitgrad has one implementation.
        maximize: maximize the objective. Default: False.
        differentiable: not supported (must be False).
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0, momentum: float = 0,
                 centered: bool = False, capturable: bool = False, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        check_flags("RMSprop", capturable, differentiable)
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay,
                    "capturable": capturable, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
        weight_decay, momentum = group["weight_decay"], group["momentum"]
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if len(state) == 0:
                with _compiling.eager():  # (compiled: real tensors that the program updates)
                    state["step"] = tensor(0.0, dtype=dtypes.float32)
                    state["square_avg"] = zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = zeros_like(p)
                    if group["centered"]:
                        state["grad_avg"] = zeros_like(p)
            param, grad, st = _foreach.as_real(p, state, "RMSprop")
            grad = -grad if group["maximize"] else grad
            square_avg = st["square_avg"]
            st["step"].add_(1)
            if weight_decay != 0:
                grad = grad.add(param, alpha=weight_decay)
            square_avg.mul_(alpha).add_(grad * (1 - alpha) * grad)
            if group["centered"]:
                grad_avg = st["grad_avg"]
                _lerp_(grad_avg, grad, 1 - alpha)
                avg = (square_avg + grad_avg * (-1) * grad_avg).sqrt_()
            else:
                avg = square_avg.sqrt()
            avg = avg.add_(eps)
            if momentum > 0:
                buf = st["momentum_buffer"]
                buf.mul_(momentum).add_(grad / avg)
                _compiling.sub_scaled_(param, buf, lr)
            else:
                param.add_(grad * (-lr) / avg)
