"""Stochastic Weight Averaging and EMA (``torch.optim.swa_utils``): ``AveragedModel``,
``SWALR``, ``update_bn`` and the averaging functions, with torch's formulas."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any

from .. import dtypes
from ..autograd.grad_mode import no_grad
from ..nn.batchnorm import _BatchNorm
from ..nn.module import Module
from ..ops.creation import tensor
from ..tensor import Tensor
from ._lr_base import LRScheduler
from .optimizer import Optimizer

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] "
                         "range.")


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """``ema <- lerp(ema, current, 1 - decay)`` over lists of tensors, in place."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param_list: list, current_param_list: list, _: Any) -> None:
        for p_ema, p_model in zip(ema_param_list, current_param_list):
            if p_ema.is_floating_point() or p_ema.is_complex():
                p_ema.lerp_(p_model, 1 - decay)
            else:
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """The running mean ``avg <- avg + (current - avg) / (n + 1)`` over lists, in place."""
    @no_grad()
    def swa_update(averaged_param_list: list, current_param_list: list,
                   num_averaged: Tensor | int) -> None:
        for p_avg, p_model in zip(averaged_param_list, current_param_list):
            if p_avg.is_floating_point() or p_avg.is_complex():
                w = 1 / (num_averaged + 1)
                p_avg.lerp_(p_model, w.item() if isinstance(w, Tensor) else w)
            else:
                p_avg.copy_(p_avg + (p_model - p_avg) / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """``decay * ema + (1 - decay) * current`` (one tensor)."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn() -> Callable:
    """``avg + (current - avg) / (n + 1)`` (one tensor)."""
    @no_grad()
    def swa_update(averaged_param: Tensor, current_param: Tensor,
                   num_averaged: Tensor | int) -> Tensor:
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters are the (SWA or EMA) average of ``model``'s over
    the ``update_parameters`` calls.

    Args:
        model: the model to average.
        device: where to keep the average (default: where ``model`` is).
        avg_fn: ``avg_fn(averaged, current, n_averaged) -> new averaged`` per tensor.
        multi_avg_fn: the same in place over lists of tensors (``get_ema_multi_avg_fn``).
        use_buffers: average the buffers too (else they are copied from ``model``).
    """

    def __init__(self, model: Module, device: Any = None, avg_fn: Callable | None = None,
                 multi_avg_fn: Callable | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=dtypes.long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Folds ``model``'s current parameters into the average (the first call copies)."""
        self_param = (itertools.chain(self.module.parameters(), self.module.buffers())
                      if self.use_buffers else self.parameters())
        model_param = (itertools.chain(model.parameters(), model.buffers())
                       if self.use_buffers else model.parameters())
        self_detached, model_detached = [], []
        copy_param = bool(self.n_averaged == 0)
        for p_averaged, p_model in zip(self_param, model_param):
            p_model_ = p_model.detach().to(p_averaged.device)
            self_detached.append(p_averaged.detach())
            model_detached.append(p_model_)
            if copy_param:
                with no_grad():
                    p_averaged.detach().copy_(p_model_)
        if self.n_averaged > 0:
            if self.avg_fn is None:
                groups: dict = {}
                for a, m in zip(self_detached, model_detached):
                    key = (a.device, a.dtype)
                    groups.setdefault(key, ([], []))
                    groups[key][0].append(a)
                    groups[key][1].append(m)
                fn = self.multi_avg_fn or get_swa_multi_avg_fn()
                for (dev, _), (avgs, currents) in groups.items():
                    fn(avgs, currents, self.n_averaged.to(dev))
            else:
                with no_grad():
                    for a, m in zip(self_detached, model_detached):
                        a.copy_(self.avg_fn(a, m, self.n_averaged.to(a.device)))
        if not self.use_buffers:  # the buffers follow the source model
            with no_grad():
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged += 1


@no_grad()
def update_bn(loader: Iterable, model: Module, device: Any = None) -> None:
    """Recomputes the BatchNorm running statistics of ``model`` with one pass over ``loader``
    (a cumulative average: momentum None), as after SWA."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for input in loader:  # noqa: A001 - torch's name
        if isinstance(input, (list, tuple)):
            input = input[0]  # noqa: A001
        if device is not None:
            input = input.to(device)  # noqa: A001
        model(input)
    for bn_module, momentum in momenta.items():
        bn_module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's learning rate to ``swa_lr`` over ``anneal_epochs`` steps (cosine or
    linear), then holds it.

    Args:
        optimizer: the wrapped optimizer.
        swa_lr: the target learning rate (or one per param group).
        anneal_epochs: the steps of the annealing (0: at once).
        anneal_strategy: ``"cos"`` or ``"linear"``.
        last_epoch: the index of the last epoch.
    """

    def __init__(self, optimizer: Optimizer, swa_lr: float | list, anneal_epochs: int = 10,
                 anneal_strategy: str = "cos", last_epoch: int = -1) -> None:
        if isinstance(swa_lr, (list, tuple)):
            if len(swa_lr) != len(optimizer.param_groups):
                raise ValueError(
                    "swa_lr must have the same length as optimizer.param_groups. swa_lr has "
                    f"{len(swa_lr)} values, param_groups has {len(optimizer.param_groups)}.")
            swa_lrs = list(swa_lr)
        else:
            swa_lrs = [swa_lr] * len(optimizer.param_groups)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else \
            self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state, without the optimizer and the annealing function (its
        strategy's name is kept), so that a ``weights_only`` load reads it."""
        return {key: value for key, value in self.__dict__.items()
                if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores the state ``state_dict()`` saved, and the annealing function."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float]:
        self._warn_outside_step()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs)]
