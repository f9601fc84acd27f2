"""``ConstantLR``, ``MultiplicativeLR`` and ``CosineAnnealingWarmRestarts`` of
``torch.optim.lr_scheduler``, with torch's formulas (the same learning rates step by step);
exported from ``jitgrad.optim.lr_scheduler``."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from . import _compiling
from ._lr_base import (LRScheduler, _lambda_state, _load_lambda_state, _lrs, _per_group,
                       _set_group_lr)
from .optimizer import Optimizer

__all__ = ["ConstantLR", "MultiplicativeLR", "CosineAnnealingWarmRestarts"]


class ConstantLR(LRScheduler):
    """Multiplies the learning rate by ``factor`` until ``total_iters`` steps, then restores it.

    Args:
        optimizer: the wrapped optimizer.
        factor: the factor, in [0, 1]. Default: 1/3.
        total_iters: steps with the factor. Default: 5.
        last_epoch: the index of the last epoch. Default: -1.
    """

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The next learning rates (torch's recursive form)."""
        self._warn_outside_step()
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [g["lr"] * self.factor for g in groups]
        if self.last_epoch != self.total_iters:
            return [g["lr"] for g in groups]
        return [g["lr"] * (1.0 / self.factor) for g in groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base in self.base_lrs]


class MultiplicativeLR(LRScheduler):
    """Multiplies the learning rate by ``lr_lambda(epoch)`` at every step.

    Args:
        optimizer: the wrapped optimizer.
        lr_lambda: a function of the epoch, or a list of them (one per param group).
        last_epoch: the index of the last epoch. Default: -1.
    """

    def __init__(self, optimizer: Optimizer,
                 lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        self.lr_lambdas = _per_group(optimizer, lr_lambda)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """Attributes but the optimizer; lambdas only as the ``__dict__`` of callable objects."""
        return _lambda_state(self)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores the attributes (and the state of callable-object lambdas)."""
        _load_lambda_state(self, state_dict)

    def get_lr(self) -> list[float]:
        """The next learning rates."""
        self._warn_outside_step()
        groups = self.optimizer.param_groups
        if self._is_initial:
            return [g["lr"] for g in groups]
        return [g["lr"] * fn(self.last_epoch) for fn, g in zip(self.lr_lambdas, groups,
                                                               strict=True)]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from the base learning rate to ``eta_min`` over ``T_i`` steps, then a
    restart, with ``T_i`` multiplied by ``T_mult`` after each (SGDR).

    Args:
        optimizer: the wrapped optimizer.
        T_0: steps of the first cycle.
        T_mult: the cycle length's factor after a restart. Default: 1.
        eta_min: the lowest learning rate. Default: 0.
        last_epoch: the index of the last epoch. Default: -1.
    """

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1,  # noqa: N803
                 eta_min: float = 0.0, last_epoch: int = -1) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type "
                             f"{type(eta_min)}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The learning rates at ``T_cur`` of the current cycle."""
        self._warn_outside_step()
        return [self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.T_cur
                                                                      / self.T_i)) / 2
                for base in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """Advances one step, or jumps to ``epoch`` (which may be fractional)."""
        if _compiling.defer_scheduler_step(self, *(() if epoch is None else (epoch,))):
            return
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            _set_group_lr(group, lr)
        self._last_lr = _lrs(self.optimizer)
