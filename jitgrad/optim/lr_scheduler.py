"""``jitgrad.optim.lr_scheduler``: learning-rate schedules with torch's recursive ("chainable")
update rules, so the sequence of learning rates equals torch's step by step.

A scheduler reads and writes ``group["lr"]`` of its optimizer's param groups; call
``scheduler.step()`` after ``optimizer.step()``. ``state_dict()`` holds every attribute but
the optimizer, as in torch.
"""

from __future__ import annotations

from ._lr_base import (EPOCH_DEPRECATION_WARNING, LRScheduler, _lambda_state,  # noqa: F401
                       _load_lambda_state, _lrs, _LRScheduler, _per_group)
from .lr_scheduler1 import (CosineAnnealingLR, ExponentialLR, LambdaLR, MultiStepLR,
                            ReduceLROnPlateau, StepLR)
from .lr_scheduler2 import (ChainedScheduler, CyclicLR, LinearLR, OneCycleLR, PolynomialLR,
                            SequentialLR)
from .lr_scheduler3 import ConstantLR, CosineAnnealingWarmRestarts, MultiplicativeLR

__all__ = ["LRScheduler", "LambdaLR", "StepLR", "MultiStepLR", "ExponentialLR",
           "CosineAnnealingLR", "ReduceLROnPlateau", "LinearLR", "PolynomialLR", "OneCycleLR",
           "CyclicLR", "SequentialLR", "ChainedScheduler", "ConstantLR", "MultiplicativeLR",
           "CosineAnnealingWarmRestarts"]

# Every scheduler is pickled under this module's name, as torch's are (``torch.optim.
# lr_scheduler.StepLR``), whichever file defines it.
for _cls in (LRScheduler, _LRScheduler, *(globals()[_n] for _n in __all__)):
    _cls.__module__ = __name__
del _cls
