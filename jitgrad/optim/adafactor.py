"""``Adafactor`` (torch.optim.Adafactor, torch's variant of Shazeer & Stern 2018): factored
second moments for matrices (row and column averages), no first moment, relative step sizes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import dtypes
from .._type_info import finfo
from ..ops.creation import tensor, zeros_like
from ..tensor import Tensor
from .adam import _lerp_
from .optimizer import Optimizer

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """Adafactor with torch's update, step by step (``t`` the step):

    ``beta2_t`` complement ``t ** beta2_decay``; ``rho = min(lr, 1 / sqrt(t))``;
    ``alpha = max(eps2, rms(param)) * rho``; ``param *= 1 - lr * weight_decay``; for a matrix
    (``ndim > 1``) ``row_var`` / ``col_var`` follow the mean squares of the gradient's rows /
    columns and ``var = row_var @ col_var / mean(row_var)`` (clamped by ``eps1``), for a vector
    ``var`` follows ``grad ** 2``; ``update = grad / sqrt(max(var, eps1 ** 2))``;
    ``param -= alpha / max(1, rms(update) / d) * update``.

    Args:
        params: parameters or param-group dicts to optimize.
        lr: the largest relative step size. Default: 1e-2.
        beta2_decay: the exponent of the second moment's decay (<= 0). Default: -0.8.
        eps: ``(eps1, eps2)``: the variance floor (None: the dtype's machine epsilon) and the
            smallest parameter RMS. Default: ``(None, 1e-3)``.
        d: the update clipping threshold (>= 1). Default: 1.
        weight_decay: decoupled weight decay. Default: 0.
        foreach: accepted (one implementation).
        maximize: maximize the objective.
    """

    def __init__(self, params: Iterable[Any], lr: float | Tensor = 1e-2,
                 beta2_decay: float = -0.8, eps: tuple[float | None, float] = (None, 1e-3),
                 d: float = 1.0, weight_decay: float = 0.0, *, foreach: bool | None = None,
                 maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
        self._steps_to_tensors()

    def _update_group(self, group: dict[str, Any]) -> None:
        lr = float(group["lr"])
        eps1, eps2 = group["eps"]
        d, beta2_decay, weight_decay = group["d"], group["beta2_decay"], group["weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.is_complex():
                raise RuntimeError("Adafactor does not support complex parameters")
            state = self.state[p]
            if len(state) == 0:
                state["step"] = tensor(0.0, dtype=dtypes.float32)
                if p.grad.ndim > 1:
                    row_shape = list(p.grad.shape)
                    row_shape[-1] = 1
                    state["row_var"] = p.grad.new_zeros(row_shape)
                    col_shape = list(p.grad.shape)
                    col_shape[-2] = 1
                    state["col_var"] = p.grad.new_zeros(col_shape)
                else:
                    state["variance"] = zeros_like(p.grad)
            grad = -p.grad if group["maximize"] else p.grad
            if eps1 is None:  # (kept for the group's later parameters, as torch's loop does)
                eps1 = finfo(p.dtype).eps
            step_t = state["step"]
            step_t.add_(1)
            step = step_t.item()
            one_minus_beta2_t = step ** beta2_decay
            rho_t = min(lr, 1 / (step ** 0.5))
            alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho_t
            if weight_decay != 0:
                p.mul_(1 - lr * weight_decay)
            if grad.ndim > 1:
                row_var, col_var = state["row_var"], state["col_var"]
                row_mean = grad.norm(dim=-1, keepdim=True).square() / grad.shape[-1]
                _lerp_(row_var, row_mean, one_minus_beta2_t)
                col_mean = grad.norm(dim=-2, keepdim=True).square() / grad.shape[-2]
                _lerp_(col_var, col_mean, one_minus_beta2_t)
                var_estimate = row_var @ col_var
                var_estimate = var_estimate / row_var.mean(dim=-2, keepdim=True).clamp(min=eps1)
            else:
                variance = state["variance"]
                _lerp_(variance, grad * grad, one_minus_beta2_t)
                var_estimate = variance.clone()
            update = var_estimate.clamp(min=eps1 * eps1).rsqrt() * grad
            denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
            p.add_(update, alpha=-alpha / denom)
