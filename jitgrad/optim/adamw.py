"""``AdamW``: Adam with decoupled weight decay (torch.optim.AdamW)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .adam import Adam

__all__ = ["AdamW"]


class AdamW(Adam):
    """Adam whose weight decay shrinks the parameters directly (``p *= 1 - lr *
    weight_decay``) instead of adding to the gradient; ``weight_decay`` defaults to 1e-2.

    Args:
        params: parameters or param-group dicts to optimize.
        lr: learning rate. Default: 1e-3.
        betas: coefficients of the running averages of the gradient and its square.
        eps: term added to the denominator. Default: 1e-8.
        weight_decay: decoupled weight decay. Default: 1e-2.
        amsgrad: use the AMSGrad variant. Default: False.
        maximize: maximize the objective. Default: False.
        foreach: ``False`` runs the update op by op per parameter; the default (or ``True``)
            the same arithmetic through NumPy in-place kernels (see ``Adam``).
        capturable: not supported (must be False).
        differentiable: not supported (must be False).
        fused: accepted; runs the same update (see ``_flags``).
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         foreach=foreach, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
