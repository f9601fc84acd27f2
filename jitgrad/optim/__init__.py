"""``jitgrad.optim``: Optimizer, SGD and Adam with torch.optim's update math."""

from .adam import Adam
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam"]
