"""``jitgrad.nn``: Parameter, Module and layers with torch.nn's names and semantics."""

from . import functional, init, parallel
from .layers import GELU, Dropout, Identity, LayerNorm, Linear, ReLU, Sequential, SiLU, Tanh
from .module import Module
from .parameter import Parameter

__all__ = ["Parameter", "Module", "Identity", "Linear", "ReLU", "Tanh", "GELU", "SiLU", "Dropout",
           "LayerNorm", "Sequential", "functional", "init", "parallel"]
