"""More of ``torch.optim.lr_scheduler``: ``LinearLR``, ``PolynomialLR``, ``OneCycleLR``,
``CyclicLR``, ``SequentialLR`` and ``ChainedScheduler``, with torch's (chainable) formulas, so
the learning rates (and, for the cyclic ones, momenta) equal torch's step by step. They are
exported from ``jitgrad.optim.lr_scheduler``."""

from __future__ import annotations

import math
import types
from bisect import bisect_right
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from . import _compiling
from ._lr_base import LRScheduler, _lrs, _set_group_lr
from .lr_scheduler1 import ReduceLROnPlateau
from .optimizer import Optimizer

__all__ = ["LinearLR", "PolynomialLR", "OneCycleLR", "CyclicLR", "SequentialLR",
           "ChainedScheduler"]


def _format_param(name: str, optimizer: Optimizer, param: Any) -> list:
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. {name} has "
                f"{len(param)} values, param_groups has {len(optimizer.param_groups)}.")
        return list(param)
    return [param] * len(optimizer.param_groups)


class LinearLR(LRScheduler):
    """Scales the learning rate by a factor going linearly from ``start_factor`` to
    ``end_factor`` over ``total_iters`` steps.

    Args:
        optimizer: the wrapped optimizer.
        start_factor: the first factor, in (0, 1]. Default: 1/3.
        end_factor: the last factor, in [0, 1]. Default: 1.0.
        total_iters: steps to reach ``end_factor``. Default: 5.
        last_epoch: the index of the last epoch. Default: -1.
    """

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and "
                             "less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The next learning rates (torch's recursive form)."""
        self._warn_outside_step()
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [g["lr"] * self.start_factor for g in groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return [g["lr"] for g in groups]
        diff = self.end_factor - self.start_factor
        return [g["lr"] * (1.0 + diff / (self.total_iters * self.start_factor
                                         + (self.last_epoch - 1) * diff)) for g in groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * (self.start_factor + (self.end_factor - self.start_factor)
                        * min(self.total_iters, self.last_epoch) / self.total_iters)
                for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decays the learning rate as ``(1 - t / total_iters) ** power`` until ``total_iters``.

    Args:
        optimizer: the wrapped optimizer.
        total_iters: steps of decay. Default: 5.
        power: the polynomial's power. Default: 1.0.
        last_epoch: the index of the last epoch. Default: -1.
    """

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The next learning rates (torch's recursive form)."""
        self._warn_outside_step()
        groups = self.optimizer.param_groups
        if self._is_initial or self.last_epoch > self.total_iters:
            return [g["lr"] for g in groups]
        factor = ((1.0 - self.last_epoch / self.total_iters)
                  / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [g["lr"] * factor for g in groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters)
                ** self.power for base in self.base_lrs]


def _set_momentum(group: dict[str, Any], use_beta1: bool, value: float) -> None:
    if use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


def _init_momenta(sched: Any, optimizer: Optimizer, base_momentum: Any, max_momentum: Any,
                  last_epoch: int) -> tuple[list, list]:
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` "
                         "option enabled")
    sched.use_beta1 = "betas" in optimizer.defaults
    max_m = _format_param("max_momentum", optimizer, max_momentum)
    base_m = _format_param("base_momentum", optimizer, base_momentum)
    if last_epoch == -1:
        for mx, bs, group in zip(max_m, base_m, optimizer.param_groups, strict=True):
            _set_momentum(group, sched.use_beta1, mx)
            group["max_momentum"] = mx
            group["base_momentum"] = bs
    return base_m, max_m


class OneCycleLR(LRScheduler):
    """The 1cycle policy: the learning rate anneals from ``max_lr / div_factor`` up to
    ``max_lr``, then down to ``initial_lr / final_div_factor`` (and momentum the other way).

    Args:
        optimizer: the wrapped optimizer.
        max_lr: the peak learning rate (one per group, or one for all).
        total_steps: the cycle's steps (or ``epochs * steps_per_epoch``).
        epochs, steps_per_epoch: the alternative to ``total_steps``.
        pct_start: the fraction of the cycle spent increasing. Default: 0.3.
        anneal_strategy: ``"cos"`` or ``"linear"``. Default: ``"cos"``.
        cycle_momentum: cycle ``momentum`` (or Adam's beta1) inversely. Default: True.
        base_momentum, max_momentum: the momentum's bounds. Default: 0.85, 0.95.
        div_factor: ``initial_lr = max_lr / div_factor``. Default: 25.
        final_div_factor: ``min_lr = initial_lr / final_div_factor``. Default: 1e4.
        three_phase: a third phase annihilating the learning rate. Default: False.
        last_epoch: the index of the last batch. Default: -1.
    """

    def __init__(self, optimizer: Optimizer, max_lr: float | list[float],
                 total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: float | list[float] = 0.85,
                 max_momentum: float | list[float] = 0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got "
                                 f"{steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND "
                             "steps_per_epoch)")
        up = float(pct_start * self.total_steps) - 1
        if three_phase:
            self._schedule_phases = [
                {"end_step": up, "start_lr": "initial_lr", "end_lr": "max_lr",
                 "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
                {"end_step": float(2 * pct_start * self.total_steps) - 2, "start_lr": "max_lr",
                 "end_lr": "initial_lr", "start_momentum": "base_momentum",
                 "end_momentum": "max_momentum"},
                {"end_step": self.total_steps - 1, "start_lr": "initial_lr", "end_lr": "min_lr",
                 "start_momentum": "max_momentum", "end_momentum": "max_momentum"}]
        else:
            self._schedule_phases = [
                {"end_step": up, "start_lr": "initial_lr", "end_lr": "max_lr",
                 "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
                {"end_step": self.total_steps - 1, "start_lr": "max_lr", "end_lr": "min_lr",
                 "start_momentum": "base_momentum", "end_momentum": "max_momentum"}]
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        max_lrs = _format_param("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for m, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = m / div_factor
                group["max_lr"] = m
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            _init_momenta(self, optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)

    def _anneal_func(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        """The learning rates of the current step (and sets the momenta)."""
        self._warn_outside_step()
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(f"Tried to step {step_num} times. The specified number of total "
                             f"steps is {self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    lr = self._anneal_func(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        mom = self._anneal_func(group[phase["start_momentum"]],
                                                group[phase["end_momentum"]], pct)
                    break
                start_step = phase["end_step"]
            lrs.append(lr)
            if self.cycle_momentum:
                _set_momentum(group, self.use_beta1, mom)
        return lrs


class CyclicLR(LRScheduler):
    """Cycles the learning rate between ``base_lr`` and ``max_lr`` (and momentum the other way)
    with the ``triangular``, ``triangular2`` or ``exp_range`` policy, or ``scale_fn``.

    Args:
        optimizer: the wrapped optimizer.
        base_lr, max_lr: the cycle's bounds (one per group, or one for all).
        step_size_up: steps of the increasing half. Default: 2000.
        step_size_down: steps of the decreasing half. Default: ``step_size_up``.
        mode: ``"triangular"``, ``"triangular2"`` or ``"exp_range"``.
        gamma: ``exp_range``'s factor per iteration. Default: 1.0.
        scale_fn: a custom amplitude scaling (overrides ``mode``).
        scale_mode: ``"cycle"`` or ``"iterations"``: what ``scale_fn`` takes.
        cycle_momentum: cycle ``momentum`` (or beta1). Default: True.
        base_momentum, max_momentum: the momentum's bounds. Default: 0.8, 0.9.
        last_epoch: the index of the last batch. Default: -1.
    """

    def __init__(self, optimizer: Optimizer, base_lr: float | list[float],
                 max_lr: float | list[float], step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn: Callable[[float], float] | None = None,
                 scale_mode: str = "cycle", cycle_momentum: bool = True,
                 base_momentum: float = 0.8, max_momentum: float = 0.9,
                 last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        base_lrs = _format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups, strict=True):
                _set_group_lr(group, lr)
        self.max_lrs = _format_param("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.base_momentums, self.max_momentums = _init_momenta(
                self, optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref = self._triangular_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref = self._triangular2_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "exp_range":
            self._scale_fn_ref = partial(self._exp_range_scale_fn, self.gamma)
            self.scale_mode = "iterations"

    def scale_fn(self, x: float) -> float:
        """The amplitude's scale at cycle (or iteration) ``x``."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        return self._scale_fn_ref(x)

    @staticmethod
    def _triangular_scale_fn(x: float) -> float:
        return 1.0

    @staticmethod
    def _triangular2_scale_fn(x: float) -> float:
        return 1 / (2.0 ** (x - 1))

    @staticmethod
    def _exp_range_scale_fn(gamma: float, x: float) -> float:
        return gamma ** x

    def get_lr(self) -> list[float]:
        """The learning rates of the current step (and sets the momenta)."""
        self._warn_outside_step()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        factor = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        at = cycle if self.scale_mode == "cycle" else self.last_epoch
        lrs = [base + (mx - base) * factor * self.scale_fn(at)
               for base, mx in zip(self.base_lrs, self.max_lrs, strict=True)]
        if self.cycle_momentum:
            for group, base, mx in zip(self.optimizer.param_groups, self.base_momentums,
                                       self.max_momentums, strict=True):
                _set_momentum(group, self.use_beta1, mx - (mx - base) * factor
                              * self.scale_fn(at))
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """The attributes, without the scale function (a custom callable object's ``__dict__``
        is kept, as in torch)."""
        state = super().state_dict()
        state.pop("_scale_fn_ref", None)
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None
        if fn is not None and not isinstance(fn, types.FunctionType):
            state["_scale_fn_custom"] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores ``state_dict()``."""
        fn = state_dict.pop("_scale_fn_custom")
        super().load_state_dict(state_dict)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


def _check_children(owner: str, optimizer: Optimizer, schedulers: Sequence[Any]) -> None:
    for i, s in enumerate(schedulers):
        if not hasattr(s, "optimizer"):
            raise TypeError(f"{owner} at index {i} should have `optimizer` as its attribute.")
        if isinstance(s, ReduceLROnPlateau):
            raise ValueError(
                f"{owner} does not support `ReduceLROnPlateau` scheduler as it requires "
                "additional kwargs to be specified when calling `step`, but got one at index "
                f"{i} in the given schedulers sequence.")
        if optimizer != s.optimizer:
            raise ValueError(
                f"{owner} expects all schedulers to belong to the same optimizer, but got "
                f"scheduler {type(s).__name__} at index {i} has {s.optimizer}, which is "
                f"different from {type(optimizer).__name__}.")


class _Composite(LRScheduler):
    """state_dict/load_state_dict of a scheduler made of schedulers."""

    def state_dict(self) -> dict[str, Any]:
        """The attributes, with each child's ``state_dict()`` under ``_schedulers``."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores ``state_dict()``, the children's included."""
        children = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        state_dict["_schedulers"] = children
        for s, sd in zip(self._schedulers, children):
            s.load_state_dict(sd)


class SequentialLR(_Composite):
    """Runs ``schedulers`` one after another, switching at ``milestones``.

    Args:
        optimizer: the wrapped optimizer.
        schedulers: the schedulers, in order.
        milestones: the steps at which the next one takes over (one fewer than schedulers).
        last_epoch: the index of the last epoch. Default: -1.
    """

    def __init__(self, optimizer: Optimizer, schedulers: list[LRScheduler],
                 milestones: list[int], last_epoch: int = -1) -> None:
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler, but got no scheduler.")
        _check_children(name, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more "
                f"than the number of milestone points, but got number of schedulers "
                f"{len(schedulers)} and the number of milestones to be equal to "
                f"{len(milestones)}")
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            _set_group_lr(group, group["initial_lr"])
        self.recursive_undo()
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()
        self._last_lr = schedulers[idx].get_last_lr()

    def recursive_undo(self, sched: Any = None) -> None:
        """Takes back the initial step of every (nested) scheduler."""
        scheds = self if sched is None else sched
        if hasattr(scheds, "_schedulers"):
            for s in scheds._schedulers:
                self.recursive_undo(s)
        elif hasattr(scheds, "last_epoch"):
            scheds.last_epoch -= 1

    def step(self) -> None:  # type: ignore[override]
        """Advances the scheduler of the current phase (restarting the next at a milestone)."""
        if _compiling.defer_scheduler_step(self):
            return
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._set_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_Composite):
    """Steps every scheduler of ``schedulers`` at each ``step()`` (their factors compose).

    Args:
        schedulers: the chained schedulers.
        optimizer: their optimizer (default: the first one's).
    """

    def __init__(self, schedulers: Sequence[LRScheduler],
                 optimizer: Optimizer | None = None) -> None:
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler to be chained, but got no "
                             "scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        _check_children(name, optimizer, schedulers)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _lrs(self._schedulers[-1].optimizer)

    def step(self) -> None:  # type: ignore[override]
        """Steps each scheduler in turn."""
        if _compiling.defer_scheduler_step(self):
            return
        for s in self._schedulers:
            s.step()
        self._last_lr = _lrs(self._schedulers[-1].optimizer)

