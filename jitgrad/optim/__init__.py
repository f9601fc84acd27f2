"""``jitgrad.optim``: optimizers (SGD, Adam, AdamW, RMSprop, Adagrad) with torch.optim's update
math, and ``lr_scheduler``."""

from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam
from .adamw import AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]
