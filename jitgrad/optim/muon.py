"""``Muon`` (torch.optim.Muon): momentum, then the update orthogonalized by a quintic
Newton-Schulz iteration, for 2-D parameters.

The Newton-Schulz iteration runs in bfloat16 with torch's ``addmm`` steps, as torch's does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from .. import dtypes
from ..ops.creation import zeros_like
from ..ops.linalg import addmm
from ..tensor import Tensor
from .adam import _lerp_
from .optimizer import Optimizer

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _zeropower_via_newtonschulz(grad: Tensor, ns_coefficients: tuple[float, float, float],
                                ns_steps: int, eps: float) -> Tensor:
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    x = grad.to(dtypes.bfloat16)
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.t()
    x = x / x.norm().clamp(min=eps)
    for _ in range(ns_steps):
        gram = x @ x.t()
        gram_update = addmm(gram, gram, gram, beta=b, alpha=c)
        x = addmm(x, gram_update, x, beta=a)
    return x.t() if tall else x


def _adjust_lr(lr: float, adjust_lr_fn: str | None, param_shape: Any) -> float:
    rows, cols = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """Muon with torch's update: ``buf = lerp(buf, grad, 1 - momentum)``; the update is
    ``lerp(grad, buf, momentum)`` with ``nesterov`` (else ``buf``), orthogonalized by
    ``ns_steps`` Newton-Schulz steps with ``ns_coefficients``; ``param *= 1 - lr *
    weight_decay``; ``param -= adjusted_lr * update`` (``adjust_lr_fn``: None / 'original'
    scales ``lr`` by ``sqrt(max(1, rows / cols))``, 'match_rms_adamw' by
    ``0.2 * sqrt(max(rows, cols))``).

    Args:
        params: 2-D parameters or param-group dicts.
        lr: learning rate. Default: 1e-3.
        weight_decay: decoupled weight decay. Default: 0.1.
        momentum: momentum factor. Default: 0.95.
        nesterov: Nesterov momentum. Default: True.
        ns_coefficients: the quintic's ``(a, b, c)``.
        eps: floor of the norm the iteration starts by dividing by. Default: 1e-7.
        ns_steps: Newton-Schulz iterations (< 100). Default: 5.
        adjust_lr_fn: None, 'original' or 'match_rms_adamw'.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B,
                                                                DEFAULT_C),
                 eps: float = EPS, ns_steps: int = DEFAULT_NS_STEPS,
                 adjust_lr_fn: str | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum,
                    "nesterov": nesterov, "ns_coefficients": ns_coefficients, "eps": eps,
                    "ns_steps": ns_steps, "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def _update_group(self, group: dict[str, Any]) -> None:
        lr = float(group["lr"])
        momentum = group["momentum"]
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.is_complex():
                raise RuntimeError("Muon does not support complex parameters")
            state = self.state[p]
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = zeros_like(p.grad)
            grad = p.grad
            if grad.ndim != 2:
                raise ValueError("Param gradient must be a 2D matrix")
            buf = state["momentum_buffer"]
            _lerp_(buf, grad, 1 - momentum)
            update = _lerp_(grad.clone(), buf, momentum) if group["nesterov"] else buf
            update = _zeropower_via_newtonschulz(update, group["ns_coefficients"],
                                                 group["ns_steps"], group["eps"])
            adjusted_lr = _adjust_lr(lr, group["adjust_lr_fn"], p.shape)
            p.mul_(1 - lr * group["weight_decay"])
            p.add_(update.to(p.dtype), alpha=-adjusted_lr)
