"""Probability distributions with ``torch.distributions``' API, composed from jitgrad ops.

``log_prob``, ``entropy`` and ``rsample`` are differentiable; sampling draws from jitgrad's
default generator, whose streams are torch's: after the same ``manual_seed``, samples are
torch's.
"""

from jitgrad.distributions import constraints
from jitgrad.distributions.continuous import (
    Cauchy,
    Exponential,
    Laplace,
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
from jitgrad.distributions.gumbel import Gumbel
from jitgrad.distributions.log_normal import LogNormal
from jitgrad.distributions.beta import Beta
from jitgrad.distributions.chi2 import Chi2
from jitgrad.distributions.constraint_registry import biject_to, transform_to
from jitgrad.distributions.continuous_bernoulli import ContinuousBernoulli
from jitgrad.distributions.dirichlet import Dirichlet
from jitgrad.distributions.exp_family import ExponentialFamily
from jitgrad.distributions.fishersnedecor import FisherSnedecor
from jitgrad.distributions.gamma import Gamma
from jitgrad.distributions.generalized_pareto import GeneralizedPareto
from jitgrad.distributions.half_cauchy import HalfCauchy
from jitgrad.distributions.half_normal import HalfNormal
from jitgrad.distributions.inverse_gamma import InverseGamma
from jitgrad.distributions.kumaraswamy import Kumaraswamy
from jitgrad.distributions.lkj_cholesky import LKJCholesky
from jitgrad.distributions.logistic_normal import LogisticNormal
from jitgrad.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from jitgrad.distributions.mixture_same_family import MixtureSameFamily
from jitgrad.distributions.multinomial import Multinomial
from jitgrad.distributions.negative_binomial import NegativeBinomial
from jitgrad.distributions.one_hot_categorical import OneHotCategoricalStraightThrough
from jitgrad.distributions.pareto import Pareto
from jitgrad.distributions.relaxed_bernoulli import RelaxedBernoulli
from jitgrad.distributions.relaxed_categorical import RelaxedOneHotCategorical
from jitgrad.distributions.studentT import StudentT
from jitgrad.distributions.transformed_distribution import TransformedDistribution
from jitgrad.distributions.transforms import (
    AbsTransform,
    AffineTransform,
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
)
from jitgrad.distributions.von_mises import VonMises
from jitgrad.distributions.weibull import Weibull
from jitgrad.distributions.wishart import Wishart

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
    "Beta",
    "Chi2",
    "ContinuousBernoulli",
    "Dirichlet",
    "ExponentialFamily",
    "FisherSnedecor",
    "Gamma",
    "GeneralizedPareto",
    "HalfCauchy",
    "HalfNormal",
    "InverseGamma",
    "Kumaraswamy",
    "LKJCholesky",
    "LogisticNormal",
    "LowRankMultivariateNormal",
    "MixtureSameFamily",
    "Multinomial",
    "NegativeBinomial",
    "OneHotCategoricalStraightThrough",
    "Pareto",
    "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
    "StudentT",
    "TransformedDistribution",
    "VonMises",
    "Weibull",
    "Wishart",
    "biject_to",
    "transform_to",
    "AbsTransform",
    "AffineTransform",
    "CatTransform",
    "ComposeTransform",
    "CorrCholeskyTransform",
    "CumulativeDistributionTransform",
    "ExpTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "PositiveDefiniteTransform",
    "PowerTransform",
    "ReshapeTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "SoftplusTransform",
    "StackTransform",
    "StickBreakingTransform",
    "TanhTransform",
    "Transform",
    "identity_transform",
    "constraints",
    "transforms",
    "kl_divergence",
    "register_kl",
]

# the KL divergences torch registers for the families above (registered on import)
from jitgrad.distributions import kl_mixed, kl_more  # noqa: E402, F401

# torch's per-distribution submodules (``distributions.normal``, ...), as attributes
from jitgrad.distributions import (  # noqa: E402
    bernoulli,
    binomial,
    categorical,
    cauchy,
    exponential,
    geometric,
    gumbel,
    laplace,
    log_normal,
    normal,
    poisson,
    uniform,
)
