"""The base of ``jitgrad.optim.lr_scheduler``: ``LRScheduler`` (torch's recursive,
"chainable" update rules, ``state_dict``, ``get_last_lr``) and the helpers the schedulers share
(the per-group lambdas and their state). The scheduler modules (``lr_scheduler1``,
``lr_scheduler2``, ``lr_scheduler3``) import it; ``lr_scheduler`` re-exports everything.
"""

from __future__ import annotations

import types
import warnings
from functools import wraps
from typing import Any
from weakref import ref

from ..tensor import Tensor
from . import _compiling
from .optimizer import Optimizer

__all__ = ["LRScheduler"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being "
    "deprecated where possible. Please use `scheduler.step()` to step the "
    "scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available. "
    "Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose."
)


def _lrs(optimizer: Optimizer) -> list[float]:
    """The groups' lrs, a tensor lr as a copy (torch's ``_param_groups_val_list``): the group's
    own tensor is filled in place by the next step."""
    return [_copied(group["lr"]) for group in optimizer.param_groups]


def _copied(value: Any) -> Any:
    return value.clone() if isinstance(value, Tensor) else value


class LRScheduler:
    """Base class: sets ``initial_lr`` in each group, then takes the initial step.

    Args:
        optimizer: the wrapped optimizer.
        last_epoch: the index of the last epoch (-1 to start afresh). Default: -1.
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", _copied(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                        "scheduler with last_epoch >= 0.\nThis typically happens when:\n1. You're "
                        "trying to resume training from a checkpoint but haven't properly loaded "
                        "the optimizer state\n2. You're using last_epoch >= 0 for a fresh "
                        "training run (not recommended)")
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._patch_optimizer_step()
        self._initial_step()

    def _patch_optimizer_step(self) -> None:
        opt = self.optimizer
        if hasattr(opt.step, "_wrapped_by_lr_sched"):
            return
        opt_ref = ref(opt)
        func = opt.step.__func__

        @wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            o = opt_ref()
            o._opt_called = True
            return func.__get__(o, o.__class__)(*args, **kwargs)

        wrapper._wrapped_by_lr_sched = True  # type: ignore[attr-defined]
        opt.step = wrapper  # type: ignore[method-assign]

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores the attributes saved by ``state_dict()``."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list[float]:
        """The learning rates the last ``step()`` set, one per param group."""
        return self._last_lr

    def get_lr(self) -> list[float]:
        """The next learning rates (the chainable form); subclasses define it."""
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Advances one epoch (or, deprecated, jumps to ``epoch`` with the closed form).

        Inside a jit-compiled function it runs eagerly after each call of the compiled
        program (see ``optim._compiling.defer_scheduler_step``)."""
        if _compiling.defer_scheduler_step(self, *(() if epoch is None else (epoch,))):
            return
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                warnings.warn(
                    "Seems like `optimizer.step()` has been overridden after learning rate "
                    "scheduler initialization. Please, make sure to call `optimizer.step()` "
                    "before `lr_scheduler.step()`. See more details at "
                    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                    UserWarning, stacklevel=2)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn(
                    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In "
                    "PyTorch 1.1.0 and later, you should call them in the opposite order: "
                    "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will "
                    "result in PyTorch skipping the first value of the learning rate schedule. "
                    "See more details at "
                    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                    UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._set_lr(epoch)

    def _set_lr(self, epoch: int | None) -> None:
        # the next epoch's rates, or ``epoch``'s (the closed form where there is one)
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            _set_group_lr(group, lr)
        self._last_lr = _lrs(self.optimizer)

    def _warn_outside_step(self) -> None:
        if not getattr(self, "_get_lr_called_within_step", False):
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=3)


def _set_group_lr(group: dict[str, Any], lr: Any) -> None:
    """``group["lr"] = lr``, except that a tensor lr is filled in place (torch's
    ``_update_param_group_val``): a compiled step reading it then sees the new value."""
    if isinstance(group["lr"], Tensor):
        group["lr"].fill_(lr.reshape(()) if isinstance(lr, Tensor) else lr)
    else:
        group["lr"] = lr


class _LRScheduler(LRScheduler):
    """The old name of ``LRScheduler`` (still subclassed by older scripts)."""


def _per_group(optimizer: Optimizer, lr_lambda) -> list:
    """One lambda per param group (``LambdaLR``, ``MultiplicativeLR``)."""
    if not isinstance(lr_lambda, (list, tuple)):
        return [lr_lambda] * len(optimizer.param_groups)
    if len(lr_lambda) != len(optimizer.param_groups):
        raise ValueError(
            f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
    return list(lr_lambda)


def _lambda_state(scheduler: LRScheduler) -> dict[str, Any]:
    state = {k: v for k, v in scheduler.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
    state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                           for fn in scheduler.lr_lambdas]
    return state


def _load_lambda_state(scheduler: LRScheduler, state_dict: dict[str, Any]) -> None:
    state_dict = dict(state_dict)
    lr_lambdas = state_dict.pop("lr_lambdas")
    scheduler.__dict__.update(state_dict)
    for fn, saved in zip(scheduler.lr_lambdas, lr_lambdas):
        if saved is not None:
            fn.__dict__.update(saved)
