"""``ASGD``: averaged stochastic gradient descent (Polyak-Ruppert averaging after ``t0``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .. import dtypes
from ..ops.creation import tensor, zeros_like
from ._flags import check_flags
from .optimizer import Optimizer

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """ASGD with torch.optim.ASGD's update (single-tensor form), step by step:

    ``g = -grad`` if ``maximize``; ``g += weight_decay * p``; ``p *= 1 - lambd * eta``;
    ``p -= eta * g``; the average ``ax`` follows ``p`` (``ax += mu * (p - ax)`` once
    ``mu != 1``); then ``eta = lr / (1 + lambd * lr * step) ** alpha`` and
    ``mu = 1 / max(1, step - t0)`` (``eta`` and ``mu`` are float32 0-d state tensors, as
    torch's).

    Args:
        params: parameters or param-group dicts to optimize.
        lr: learning rate. Default: 1e-2.
        lambd: decay term. Default: 1e-4.
        alpha: power for the eta update. Default: 0.75.
        t0: the step at which averaging starts. Default: 1e6.
        weight_decay: L2 penalty. Default: 0.
        foreach: accepted; jitgrad has one implementation.
        maximize: maximize the objective. Default: False.
        differentiable: not supported (must be False).
        capturable: not supported (must be False).
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        check_flags("ASGD", capturable, differentiable)
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, lambd, alpha, t0 = float(group["lr"]), group["lambd"], group["alpha"], group["t0"]
        weight_decay = group["weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.is_complex():
                raise NotImplementedError("jitgrad's ASGD supports real parameters only")
            state = self.state[p]
            if len(state) == 0:
                state["step"] = tensor(0.0, dtype=dtypes.float32)
                state["eta"] = tensor(lr, dtype=dtypes.float32)
                state["mu"] = tensor(1.0, dtype=dtypes.float32)
                state["ax"] = zeros_like(p)
            grad = -p.grad if group["maximize"] else p.grad
            state["step"].add_(1)
            if weight_decay != 0:
                grad = grad.add(p, alpha=weight_decay)
            eta = float(state["eta"])
            p.mul_(1 - lambd * eta)
            p.add_(grad, alpha=-eta)
            ax = state["ax"]
            if float(state["mu"]) != 1:
                ax.add_((p - ax) * state["mu"].to(p.dtype))
            else:
                ax.copy_(p)
            step = float(state["step"])
            # torch.as_tensor of the new values: float32, whatever the state's dtype
            state["eta"].fill_(float(np.float32(lr / ((1 + lambd * lr * step) ** alpha))))
            state["mu"].fill_(float(np.float32(1 / max(1, step - t0))))
