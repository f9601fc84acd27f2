"""``jitgrad.nn``: Parameter, Module and layers with torch.nn's names and semantics."""

from . import functional, init, parallel
from .batchnorm import BatchNorm1d, BatchNorm2d
from .conv import Conv1d, Conv2d
from .layers import GELU, Dropout, Identity, LayerNorm, Linear, ReLU, Sequential, SiLU, Tanh
from .module import Module
from .parameter import Parameter
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d

__all__ = ["Parameter", "Module", "Identity", "Linear", "ReLU", "Tanh", "GELU", "SiLU", "Dropout",
           "LayerNorm", "Sequential", "functional", "init", "parallel"]
__all__ += ["Conv1d", "Conv2d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "BatchNorm1d",
            "BatchNorm2d"]
