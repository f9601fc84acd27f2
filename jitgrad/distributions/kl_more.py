"""The KL divergences torch registers between two distributions of one family, for the
families ``kl`` does not cover (Beta, Gamma, Dirichlet, Pareto, the low-rank normal, ...):
torch's closed forms in jitgrad ops.
Importing the module registers them with ``kl.register_kl``."""

from __future__ import annotations

from math import inf
from typing import Any

import jitgrad
from jitgrad.distributions.beta import Beta
from jitgrad.distributions.continuous import Cauchy
from jitgrad.distributions.gumbel import Gumbel
from jitgrad.distributions.continuous_bernoulli import ContinuousBernoulli
from jitgrad.distributions.dirichlet import Dirichlet
from jitgrad.distributions.discrete import Binomial, Geometric
from jitgrad.distributions.exp_family import ExponentialFamily
from jitgrad.distributions.gamma import Gamma
from jitgrad.distributions.half_normal import HalfNormal
from jitgrad.distributions.kl import kl_divergence, register_kl
from jitgrad.distributions.lowrank_multivariate_normal import (
    LowRankMultivariateNormal,
    _batch_lowrank_logdet,
    _batch_lowrank_mahalanobis,
)
from jitgrad.distributions.pareto import Pareto
from jitgrad.distributions.transformed_distribution import TransformedDistribution
from jitgrad.distributions.utils import _sum_rightmost
from jitgrad.distributions.utils import euler_constant as _euler_gamma

__all__: list[str] = []


def _infinite_like(tensor: Any) -> Any:
    return jitgrad.full_like(tensor, inf)


def _x_log_x(tensor: Any) -> Any:
    return jitgrad.xlogy(tensor, tensor)


def _batch_trace_XXT(bmat: Any) -> Any:  # noqa: N802 (torch's name)
    n = bmat.size(-1)
    m = bmat.size(-2)
    flat_trace = bmat.reshape(-1, m * n).pow(2).sum(-1)
    return flat_trace.reshape(bmat.shape[:-2])


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Any, q: Any) -> Any:
    sum_params_p = p.concentration1 + p.concentration0
    sum_params_q = q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + sum_params_p.lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + sum_params_q.lgamma()
    t3 = (p.concentration1 - q.concentration1) * jitgrad.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * jitgrad.digamma(p.concentration0)
    t5 = (sum_params_q - sum_params_p) * jitgrad.digamma(sum_params_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Any, q: Any) -> Any:
    if (p.total_count < q.total_count).any():
        raise NotImplementedError(
            "KL between Binomials where q.total_count > p.total_count is not implemented"
        )
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    inf_idxs = p.total_count > q.total_count
    kl = jitgrad.where(inf_idxs, inf, kl)
    return kl


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p: Any, q: Any) -> Any:
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + jitgrad.log1p(-p.probs)
    t3 = -q._cont_bern_log_norm() - jitgrad.log1p(-q.probs)
    return t1 + t2 + t3


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Any, q: Any) -> Any:
    sum_p_concentration = p.concentration.sum(-1)
    sum_q_concentration = q.concentration.sum(-1)
    t1 = sum_p_concentration.lgamma() - sum_q_concentration.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - sum_p_concentration.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p: Any, q: Any) -> Any:
    if type(p) is not type(q):
        raise NotImplementedError(
            "The cross KL-divergence between different exponential families cannot"
            + " " * 29 + "be computed using Bregman divergences"  # (torch's spaces)
        )
    p_nparams = [np.detach().requires_grad_() for np in p._natural_params]
    q_nparams = q._natural_params
    lg_normal = p._log_normalizer(*p_nparams)
    gradients = jitgrad.autograd.grad(lg_normal.sum(), p_nparams, create_graph=True)
    result = q._log_normalizer(*q_nparams) - lg_normal
    for pnp, qnp, g in zip(p_nparams, q_nparams, gradients):
        term = (qnp - pnp) * g
        result -= _sum_rightmost(term, len(q.event_shape))
    return result


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Any, q: Any) -> Any:
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = jitgrad.lgamma(q.concentration) - jitgrad.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * jitgrad.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Any, q: Any) -> Any:
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t2 = ct1 * _euler_gamma
    t3 = jitgrad.exp(ct2 + (1 + ct1).lgamma() - ct3)
    return t1 + t2 + t3 - (1 + _euler_gamma)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Any, q: Any) -> Any:
    return -p.entropy() - jitgrad.log1p(-q.probs) / p.probs - q.logits


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: Any, q: Any) -> Any:
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrankmultivariatenormal_lowrankmultivariatenormal(p: Any, q: Any) -> Any:
    if p.event_shape != q.event_shape:
        raise ValueError(
            f"KL-divergence between two Low Rank Multivariate Normals with{' ' * 26}"
            "different event shapes cannot be computed"
        )
    term1 = _batch_lowrank_logdet(
        q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag, q._capacitance_tril
    ) - _batch_lowrank_logdet(
        p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag, p._capacitance_tril
    )
    term3 = _batch_lowrank_mahalanobis(
        q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag, q.loc - p.loc, q._capacitance_tril
    )
    qWt_qDinv = q._unbroadcasted_cov_factor.mT / q._unbroadcasted_cov_diag.unsqueeze(-2)
    A = jitgrad.linalg.solve_triangular(q._capacitance_tril, qWt_qDinv, upper=False)
    term21 = (p._unbroadcasted_cov_diag / q._unbroadcasted_cov_diag).sum(-1)
    term22 = _batch_trace_XXT(
        p._unbroadcasted_cov_factor * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1)
    )
    term23 = _batch_trace_XXT(A * p._unbroadcasted_cov_diag.sqrt().unsqueeze(-2))
    term24 = _batch_trace_XXT(A.matmul(p._unbroadcasted_cov_factor))
    term2 = term21 + term22 - term23 - term24
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Any, q: Any) -> Any:
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    t1 = q.alpha * scale_ratio.log()
    t2 = -alpha_ratio.log()
    result = t1 + t2 + alpha_ratio - 1
    result = jitgrad.where(p.support.lower_bound < q.support.lower_bound, inf, result)
    return result


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: Any, q: Any) -> Any:
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Any, q: Any) -> Any:
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    t2 = (4 * p.scale * q.scale).log()
    return t1 - t2


