"""Probability distributions with ``torch.distributions``' API, composed from jitgrad ops.

``log_prob``, ``entropy`` and ``rsample`` are differentiable; sampling draws from jitgrad's
default generator, so ``jitgrad.manual_seed`` makes it reproducible (the streams differ from
torch's).
"""

from jitgrad.distributions import constraints
from jitgrad.distributions.continuous import (
    Cauchy,
    Exponential,
    Gumbel,
    Laplace,
    LogNormal,
    Normal,
    Uniform,
)
from jitgrad.distributions.distribution import Distribution

__all__ = [
    "Cauchy",
    "Distribution",
    "Exponential",
    "Gumbel",
    "Laplace",
    "LogNormal",
    "Normal",
    "Uniform",
    "constraints",
]
