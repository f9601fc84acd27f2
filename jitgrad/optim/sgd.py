"""``SGD``: stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..ops.creation import zeros_like
from . import _compiling, _foreach
from ._flags import check_flags
from .optimizer import Optimizer

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent with torch.optim.SGD's update (single-tensor form).

    For each parameter with a gradient ``g``: ``g = -g`` if ``maximize``; ``g += weight_decay *
    p``; with momentum, ``buf = g`` on the first step and ``buf = momentum * buf + (1 -
    dampening) * g`` after, and ``g = g + momentum * buf`` (Nesterov) or ``g = buf``; finally
    ``p -= lr * g`` in place.

    Args:
        params: parameters or param-group dicts to optimize.
        lr: learning rate. Default: 1e-3.
        momentum: momentum factor. Default: 0.
        dampening: dampening of the momentum. Default: 0.
        weight_decay: L2 penalty. Default: 0.
        nesterov: use Nesterov momentum. Default: False.
        maximize: maximize the objective instead of minimizing. Default: False.
        foreach: ``False`` runs the update op by op per parameter; the default (or ``True``)
            runs the same arithmetic on all parameters through NumPy in-place kernels, with the
            same result bit for bit (torch's CPU default is its loop: the results are the same).
        differentiable: not supported (must be False).
        fused: accepted; runs the same update (see ``_flags``).
    """

    _sparse_grads = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0,
                 dampening: float = 0, weight_decay: float = 0, nesterov: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        check_flags(type(self).__name__, False, differentiable, fused, foreach)
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        weight_decay, nesterov = group["weight_decay"], group["nesterov"]
        fast = _foreach.available(group["foreach"]) and _foreach.real_number(lr)
        for p in group["params"]:
            if p.grad is None:
                continue
            if fast:
                state = self.state[p] if momentum != 0 else {}
                buf = state.get("momentum_buffer")
                if _foreach.plain(p, p.grad, *([] if buf is None else [buf])):
                    _foreach.sgd_(p, state, group)
                    continue
            grad = -p.grad if group["maximize"] else p.grad
            if weight_decay != 0:
                grad = grad.add(p, alpha=weight_decay)
            if momentum != 0:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                first = buf is None and dampening != 0
                if buf is None and _compiling.trace() is not None:
                    # compiled: the buffer is made eagerly (the program updates it in place).
                    # Without dampening, momentum * 0 + grad is grad: one program serves the
                    # first step and the later ones; with it, the first step's program copies
                    # the grad, and a guard retraces the next call.
                    if first:
                        _compiling.trace().note_guard("whether an SGD momentum buffer exists",
                                                      lambda s=state: "momentum_buffer" in s)
                    with _compiling.eager():
                        buf = state["momentum_buffer"] = zeros_like(p)
                    if first:
                        buf.copy_(grad)
                    else:
                        buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                elif buf is None:
                    buf = grad.detach().clone()
                    state["momentum_buffer"] = buf
                else:
                    buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                grad = grad.add(buf, alpha=momentum) if nesterov else buf
            _compiling.sub_scaled_(p, grad, lr)
