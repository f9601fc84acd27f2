"""``jitgrad.optim``: optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam,
RAdam, Rprop, ASGD, LBFGS, Adafactor, Muon, SparseAdam) with torch.optim's update
math, and ``lr_scheduler``."""

from . import lr_scheduler, swa_utils
from .adagrad import Adagrad
from .adam import Adam
from .asgd import ASGD
from .adaptive import Adadelta, Adamax, NAdam, RAdam
from .adamw import AdamW
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam",
           "RAdam", "Rprop", "ASGD", "LBFGS", "lr_scheduler", "swa_utils"]

from .adafactor import Adafactor  # noqa: E402 - loss24
from .muon import Muon  # noqa: E402
from .sparse_adam import SparseAdam  # noqa: E402

__all__ += ["Adafactor", "Muon", "SparseAdam"]
