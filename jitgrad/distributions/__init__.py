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
from jitgrad.distributions.discrete import (
    Bernoulli,
    Binomial,
    Categorical,
    Geometric,
    OneHotCategorical,
    Poisson,
)
from jitgrad.distributions.distribution import Distribution
from jitgrad.distributions.independent import Independent
from jitgrad.distributions.multivariate_normal import MultivariateNormal
from jitgrad.distributions.kl import kl_divergence, register_kl

__all__ = [
    "Bernoulli",
    "Binomial",
    "Categorical",
    "Geometric",
    "Independent",
    "MultivariateNormal",
    "OneHotCategorical",
    "Poisson",
    "Cauchy",
    "Distribution",
    "Exponential",
    "Gumbel",
    "Laplace",
    "LogNormal",
    "Normal",
    "Uniform",
    "constraints",
    "kl_divergence",
    "register_kl",
]
