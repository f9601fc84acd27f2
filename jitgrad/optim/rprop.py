"""``Rprop``: resilient backpropagation, a per-element step size grown or shrunk by the sign
agreement of successive gradients."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import dtypes
from ..ops.creation import full_like, tensor, zeros_like
from ._flags import check_flags
from .optimizer import Optimizer

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Rprop with torch.optim.Rprop's update (single-tensor form), per element:

    ``s = sign(grad * prev)``; the step size is multiplied by ``etaplus`` where ``s > 0``,
    ``etaminus`` where ``s < 0`` (and that gradient zeroed), kept where ``s == 0``, then
    clamped to ``step_sizes``; ``p -= sign(grad) * step_size``; ``prev = grad``.

    Args:
        params: parameters or param-group dicts to optimize.
        lr: the initial step size. Default: 1e-2.
        etas: ``(etaminus, etaplus)``, with ``0 < etaminus < 1 < etaplus``. Default: (0.5, 1.2).
        step_sizes: ``(min, max)`` step size. Default: (1e-6, 50).
        capturable: not supported (must be False).
        foreach: accepted; jitgrad has one implementation.
        maximize: maximize the objective. Default: False.
        differentiable: not supported (must be False).
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2,
                 etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        check_flags("Rprop", capturable, differentiable)
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        etaminus, etaplus = group["etas"]
        step_min, step_max = group["step_sizes"]
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.is_complex():
                raise NotImplementedError("jitgrad's Rprop supports real parameters only")
            state = self.state[p]
            if len(state) == 0:
                state["step"] = tensor(0.0, dtype=dtypes.float32)
                state["prev"] = zeros_like(p)
                state["step_size"] = full_like(p.grad, float(group["lr"]))
            grad = -p.grad if group["maximize"] else p.grad
            prev, step_size = state["prev"], state["step_size"]
            state["step"].add_(1)
            sign = (grad * prev).sign()
            factor = zeros_like(sign).masked_fill(sign > 0, etaplus) \
                .masked_fill(sign < 0, etaminus).masked_fill(sign == 0, 1.0)
            step_size.mul_(factor).clamp_(step_min, step_max)
            grad = grad.masked_fill(factor == etaminus, 0.0)
            p.add_(grad.sign() * step_size * (-1))
            prev.copy_(grad)
