"""``jitgrad.optim``: optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam,
RAdam) with torch.optim's update
math, and ``lr_scheduler``."""

from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam
from .adaptive import Adadelta, Adamax, NAdam, RAdam
from .adamw import AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam",
           "RAdam", "lr_scheduler"]
