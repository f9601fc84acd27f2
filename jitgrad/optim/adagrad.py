"""``Adagrad``: per-coordinate steps scaled by the root of the summed squared gradients."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import dtypes
from ..ops.creation import full_like, tensor
from ..sparse import sparse_coo_tensor
from ..tensor import Tensor
from . import _compiling, _foreach
from ._flags import check_flags
from .optimizer import Optimizer

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad with torch.optim.Adagrad's update (single-tensor form), step by step:

    ``g = -grad`` if ``maximize``; ``g += weight_decay * p``; ``clr = lr / (1 + (step - 1) *
    lr_decay)``; ``sum += g * g``; ``p -= clr * g / (sqrt(sum) + eps)``. The state (``step``
    and ``sum``, filled with ``initial_accumulator_value``) is created at construction, as
    torch does. A sparse gradient (``Embedding(sparse=True)``) updates the entries it has,
    coalesced, and refuses ``weight_decay``, as torch's.

    Args:
        params: parameters or param-group dicts to optimize.
        lr: learning rate. Default: 1e-2.
        lr_decay: learning-rate decay per step. Default: 0.
        weight_decay: L2 penalty. Default: 0.
        initial_accumulator_value: the starting value of the sums. Default: 0.
        eps: term added to the denominator. Default: 1e-10.
        foreach: accepted; jitgrad has one implementation.
        maximize: maximize the objective. Default: False.
        differentiable: not supported (must be False).
        fused: accepted; runs the same update (see ``_flags``).
    """

    _sparse_grads = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(
                f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_flags("Adagrad", differentiable=differentiable, fused=fused, foreach=foreach)
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value,
                    "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = tensor(0.0, dtype=dtypes.float32)
                state["sum"] = full_like(p, group["initial_accumulator_value"])

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, lr_decay, eps = group["lr"], group["lr_decay"], group["eps"]
        weight_decay = group["weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            state["step"].add_(1)
            step = _compiling.get_value(state["step"])
            if p.is_complex() and p.grad.is_sparse:
                raise NotImplementedError("jitgrad's Adagrad takes sparse gradients of real "
                                          "parameters only")
            param, grad, st = _foreach.as_real(p, state, "Adagrad")
            grad = -grad if group["maximize"] else grad
            if weight_decay != 0:
                if grad.is_sparse:
                    raise RuntimeError("weight_decay option is not compatible with sparse "
                                       "gradients")
                grad = grad.add(param, alpha=weight_decay)
            if isinstance(step, Tensor):  # compiled: the program computes the decayed lr,
                # in float64 as eager mode's Python floats, rounded where eager mode rounds
                decay = 1 + (step.to(dtypes.float64) - 1) * lr_decay
                clr = (lr / decay.to(lr.dtype) if isinstance(lr, Tensor) else lr / decay
                       ).to(p.dtype)
            else:
                clr = lr / (1 + (step - 1) * lr_decay)
            state_sum = st["sum"]
            if grad.is_sparse:  # the entries of the coalesced gradient only
                grad = grad.coalesce()
                values = grad._values()
                state_sum.add_(_like(grad, values.pow(2)))
                std = state_sum.sparse_mask(grad)._values().sqrt_().add_(eps)
                p.add_(_like(grad, values / std), alpha=-clr)
                continue
            state_sum.add_(grad * grad)
            std = state_sum.sqrt().add_(eps)
            param.add_(grad * (-clr) / std)


def _like(grad: Any, values: Any) -> Any:
    """A sparse tensor with coalesced ``grad``'s indices and ``values``."""
    return sparse_coo_tensor(grad._indices(), values, grad.shape)
