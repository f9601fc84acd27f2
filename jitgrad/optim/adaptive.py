"""``Adadelta``, ``Adamax``, ``NAdam`` and ``RAdam`` with torch.optim's (single-tensor) update
math, step by step, and torch's state layout (``step`` and ``mu_product`` are float32 0-d
tensors, as torch keeps them)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import dtypes
from ..ops import maximum
from ..ops.creation import tensor, zeros_like
from ..tensor import Tensor
from ._flags import check_flags
from .optimizer import Optimizer

__all__ = ["Adadelta", "Adamax", "NAdam", "RAdam"]


def _check(lr: float, eps: float, weight_decay: float, betas: tuple | None = None) -> None:
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if betas is not None:
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def _step_tensor() -> Tensor:
    return tensor(0.0, dtype=dtypes.float32)


class _Adaptive(Optimizer):
    """The shared loop: the gradient (negated with ``maximize``), the state made on first use
    (``_init_state``), then ``_update(p, grad, state, group)``."""

    _state_keys: tuple[str, ...] = ()

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
        self._steps_to_tensors()

    def _init_state(self, p: Tensor, state: dict[str, Any]) -> None:
        state["step"] = _step_tensor()
        for key in self._state_keys:
            state[key] = zeros_like(p)

    def _update_group(self, group: dict[str, Any]) -> None:
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.is_complex():
                raise NotImplementedError(
                    f"jitgrad's {type(self).__name__} supports real parameters only")
            state = self.state[p]
            if len(state) == 0:
                self._init_state(p, state)
            grad = -p.grad if group["maximize"] else p.grad
            state["step"].add_(1)
            self._update(p, grad, state, group)

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any],
                group: dict[str, Any]) -> None:
        raise NotImplementedError


class Adadelta(_Adaptive):
    """Adadelta (torch.optim.Adadelta): ``g += weight_decay * p``; ``v = rho * v + (1 - rho) *
    g * g``; ``delta = sqrt(u + eps) / sqrt(v + eps) * g``; ``u = rho * u + (1 - rho) *
    delta * delta``; ``p -= lr * delta``.

    Args:
        params: parameters or param-group dicts to optimize.
        lr: coefficient of the delta. Default: 1.0.
        rho: running-average coefficient. Default: 0.9.
        eps: term added inside the roots. Default: 1e-6.
        weight_decay: L2 penalty. Default: 0.
        foreach: accepted; jitgrad has one implementation.
        capturable, differentiable: not supported (must be False).
        maximize: maximize the objective. Default: False.
    """

    _state_keys = ("square_avg", "acc_delta")

    def __init__(self, params: Iterable[Any], lr: float = 1.0, rho: float = 0.9,
                 eps: float = 1e-6, weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check(lr, eps, weight_decay)
        check_flags("Adadelta", capturable, differentiable)
        super().__init__(params, {"lr": lr, "rho": rho, "eps": eps,
                                  "weight_decay": weight_decay, "maximize": maximize,
                                  "capturable": capturable, "foreach": foreach,
                                  "differentiable": differentiable})

    def _update(self, p, grad, state, group):
        rho, eps, lr, wd = group["rho"], group["eps"], group["lr"], group["weight_decay"]
        if wd != 0:
            grad = grad.add(p, alpha=wd)
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
        std = square_avg.add(eps).sqrt_()
        delta = acc_delta.add(eps).sqrt_().div_(std).mul_(grad)
        acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        p.add_(delta, alpha=-lr)


class Adamax(_Adaptive):
    """Adamax (torch.optim.Adamax): ``g += weight_decay * p``; ``m = lerp(m, g, 1 - beta1)``;
    ``u = max(beta2 * u, |g| + eps)``; ``p -= lr / (1 - beta1**t) * m / u``.

    Args:
        params: parameters or param-group dicts to optimize.
        lr: learning rate. Default: 2e-3.
        betas: coefficients of the running average and of the infinity norm.
        eps: term added to ``|g|``. Default: 1e-8.
        weight_decay: L2 penalty. Default: 0.
        foreach: accepted; jitgrad has one implementation.
        maximize: maximize the objective. Default: False.
        differentiable, capturable: not supported (must be False).
    """

    _state_keys = ("exp_avg", "exp_inf")

    def __init__(self, params: Iterable[Any], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        _check(lr, eps, weight_decay, betas)
        check_flags("Adamax", capturable, differentiable)
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps,
                                  "weight_decay": weight_decay, "foreach": foreach,
                                  "maximize": maximize, "differentiable": differentiable,
                                  "capturable": capturable})

    def _update(self, p, grad, state, group):
        (beta1, beta2), eps, lr = group["betas"], group["eps"], group["lr"]
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_inf.copy_(maximum(exp_inf.mul_(beta2), grad.abs().add_(eps)))
        clr = lr / (1 - beta1 ** state["step"].item())
        p.addcdiv_(exp_avg, exp_inf, value=-clr)


class NAdam(_Adaptive):
    """NAdam (torch.optim.NAdam): Adam with Nesterov momentum, the momentum coefficient
    ``mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))`` and its running product
    (``mu_product``, a float32 tensor as in torch).

    Args:
        params: parameters or param-group dicts to optimize.
        lr: learning rate. Default: 2e-3.
        betas: coefficients of the running averages. Default: (0.9, 0.999).
        eps: term added to the denominator. Default: 1e-8.
        weight_decay: L2 penalty (decoupled, as AdamW, with ``decoupled_weight_decay``).
        momentum_decay: Default: 4e-3.
        decoupled_weight_decay: NAdamW. Default: False.
        foreach: accepted; jitgrad has one implementation.
        maximize: maximize the objective. Default: False.
        capturable, differentiable: not supported (must be False).
    """

    _state_keys = ("exp_avg", "exp_avg_sq")

    def __init__(self, params: Iterable[Any], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check(lr, eps, weight_decay, betas)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        check_flags("NAdam", capturable, differentiable)
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps,
                                  "weight_decay": weight_decay,
                                  "momentum_decay": momentum_decay,
                                  "decoupled_weight_decay": decoupled_weight_decay,
                                  "maximize": maximize, "foreach": foreach,
                                  "capturable": capturable, "differentiable": differentiable})

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("decoupled_weight_decay", False)

    def _init_state(self, p, state):
        state["step"] = _step_tensor()
        state["mu_product"] = tensor(1.0, dtype=dtypes.float32)
        state["exp_avg"] = zeros_like(p)
        state["exp_avg_sq"] = zeros_like(p)

    def _update(self, p, grad, state, group):
        (beta1, beta2), eps, lr = group["betas"], group["eps"], group["lr"]
        wd, momentum_decay = group["weight_decay"], group["momentum_decay"]
        step = state["step"].item()
        bias_correction2 = 1 - beta2 ** step
        if wd != 0:
            if group["decoupled_weight_decay"]:
                p.mul_(1 - lr * wd)
            else:
                grad = grad.add(p, alpha=wd)
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        mu_product = state["mu_product"]
        mu_product.mul_(mu)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = exp_avg_sq.div(bias_correction2).sqrt().add_(eps)
        prod = mu_product.item()
        prod_next = prod * mu_next
        p.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - prod))
        p.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1.0 - prod_next))


class RAdam(_Adaptive):
    """RAdam (torch.optim.RAdam): Adam whose adaptive term is used only once the variance of
    its estimate is tractable (``rho_t > 5``), scaled by the rectification term; before that,
    a bias-corrected momentum step.

    Args:
        params: parameters or param-group dicts to optimize.
        lr: learning rate. Default: 1e-3.
        betas: coefficients of the running averages. Default: (0.9, 0.999).
        eps: term added to the denominator. Default: 1e-8.
        weight_decay: L2 penalty (decoupled, as AdamW, with ``decoupled_weight_decay``).
        decoupled_weight_decay: Default: False.
        foreach: accepted; jitgrad has one implementation.
        maximize: maximize the objective. Default: False.
        capturable, differentiable: not supported (must be False).
    """

    _state_keys = ("exp_avg", "exp_avg_sq")

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check(lr, eps, weight_decay, betas)
        check_flags("RAdam", capturable, differentiable)
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps,
                                  "weight_decay": weight_decay, "maximize": maximize,
                                  "foreach": foreach, "capturable": capturable,
                                  "decoupled_weight_decay": decoupled_weight_decay,
                                  "differentiable": differentiable})

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("decoupled_weight_decay", False)

    def _update(self, p, grad, state, group):
        (beta1, beta2), eps, lr = group["betas"], group["eps"], group["lr"]
        wd = group["weight_decay"]
        if wd != 0:
            if group["decoupled_weight_decay"]:
                p.mul_(1 - lr * wd)
            else:
                grad = grad.add(p, alpha=wd)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step = state["step"].item()
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        corrected = exp_avg / bias_correction1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive = (bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add_(eps)
            p.add_(corrected * lr * adaptive * rect, alpha=-1.0)
        else:
            p.add_(corrected * lr, alpha=-1.0)
