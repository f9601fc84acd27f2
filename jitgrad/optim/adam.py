"""``Adam``: adaptive moment estimation (optionally AMSGrad, decoupled weight decay)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import dtypes
from ..ops import maximum
from ..ops.creation import tensor, zeros_like
from ..tensor import Tensor
from . import _compiling, _foreach
from ._flags import check_flags
from .optimizer import Optimizer

__all__ = ["Adam"]


def _lerp_(t: Tensor, end: Tensor, weight: float) -> Tensor:
    # torch's lerp_ (one op: its formula switches at weight 0.5 to stay accurate near both ends)
    return t.lerp_(end, weight)


def _traced_update(p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any],
                   lr: Any) -> None:
    """The end of Adam's update while jit traces it: the step counter is a tensor, so the bias
    corrections are computed by the program (in float64, as eager mode's Python floats, then
    rounded to the parameter's dtype where eager mode's scalars are)."""
    beta1, beta2 = group["betas"]
    step = state["step"].to(dtypes.float64)
    bias_correction1 = 1 - beta1 ** step
    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    if isinstance(lr, Tensor):  # (eager: a float32 tensor divided by a Python float)
        step_size = lr / bias_correction1.to(lr.dtype)
    else:
        step_size = lr / bias_correction1
    sq = state["exp_avg_sq"]
    if group["amsgrad"]:
        max_sq = state["max_exp_avg_sq"]
        max_sq.copy_(maximum(max_sq, sq))
        sq = max_sq
    denom = (sq.sqrt() / bias_correction2_sqrt.to(p.dtype)).add_(group["eps"])
    p.sub_(state["exp_avg"] / denom * step_size.to(p.dtype))


class Adam(Optimizer):
    """Adam with torch.optim.Adam's update (single-tensor form), step by step:

    ``g = -grad`` if ``maximize``; ``g += weight_decay * p`` (or ``p *= 1 - lr * weight_decay``
    when ``decoupled_weight_decay``); ``m = lerp(m, g, 1 - beta1)``; ``v = beta2 * v + (1 -
    beta2) * g * g``; with ``amsgrad`` ``v_max = max(v_max, v)`` is used instead of ``v``;
    ``denom = sqrt(v) / sqrt(1 - beta2**t) + eps``; ``p -= lr / (1 - beta1**t) * m / denom``.

    Args:
        params: parameters or param-group dicts to optimize.
        lr: learning rate. Default: 1e-3.
        betas: coefficients of the running averages of the gradient and its square.
        eps: term added to the denominator. Default: 1e-8.
        weight_decay: L2 penalty. Default: 0.
        amsgrad: use the AMSGrad variant. Default: False.
        maximize: maximize the objective. Default: False.
        foreach: ``False`` runs the update op by op per parameter; the default (or ``True``)
            runs the same arithmetic on all parameters through NumPy in-place kernels, with the
            same result bit for bit (torch's CPU default is its loop: the results are the same).
        capturable, differentiable: not supported (must be False).
        fused: accepted; runs the same update (see ``_flags``).
        decoupled_weight_decay: AdamW-style decay. Default: False.
    """

    _sparse_error = "Adam does not support sparse gradients, please consider SparseAdam instead"

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not (isinstance(betas[0], float) and isinstance(betas[1], float)):
            raise ValueError("betas must be either both floats or both Tensors")
        check_flags(type(self).__name__, capturable, differentiable, fused, foreach)
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)
        self._steps_to_tensors()

    @staticmethod
    def _plain(p: Tensor, state: dict[str, Any], amsgrad: bool) -> bool:
        tensors = [p, p.grad, state["exp_avg"], state["exp_avg_sq"]]
        if amsgrad:
            tensors.append(state["max_exp_avg_sq"])
        return _foreach.plain(*tensors) and _foreach.plain(state["step"], dtype=dtypes.float32)

    def _update_group(self, group: dict[str, Any]) -> None:
        beta1, beta2 = group["betas"]
        lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
        fast = _foreach.available(group["foreach"]) and _foreach.real_number(lr)
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if len(state) == 0:
                with _compiling.eager():  # (compiled: real tensors that the program updates)
                    state["step"] = tensor(0.0, dtype=dtypes.float32)
                    state["exp_avg"] = zeros_like(p)
                    state["exp_avg_sq"] = zeros_like(p)
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = zeros_like(p)
            if fast and not p.is_complex() and self._plain(p, state, group["amsgrad"]):
                _foreach.adam_(p, state, group)
                continue
            param, grad, st = _foreach.as_real(p, state, type(self).__name__)
            grad = -grad if group["maximize"] else grad
            exp_avg, exp_avg_sq, step_t = st["exp_avg"], st["exp_avg_sq"], st["step"]
            step_t.add_(1)
            if weight_decay != 0:
                if group["decoupled_weight_decay"]:
                    param.mul_(1 - lr * weight_decay)
                else:
                    grad = grad.add(param, alpha=weight_decay)
            _lerp_(exp_avg, grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad.conj(), value=1 - beta2)
            if _compiling.trace() is not None:
                _traced_update(p, grad, state, group, lr)
                continue
            step = step_t.item()
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            step_size = lr / bias_correction1
            bias_correction2_sqrt = bias_correction2 ** 0.5
            if group["amsgrad"]:
                max_sq = st["max_exp_avg_sq"]
                max_sq.copy_(maximum(max_sq, exp_avg_sq))
                denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            else:
                denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            param.addcdiv_(exp_avg, denom, value=-step_size)
