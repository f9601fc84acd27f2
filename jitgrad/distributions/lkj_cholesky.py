"""``torch.distributions.lkj_cholesky``: ``LKJCholesky`` (ported from torch 2.13)."""

from __future__ import annotations

from typing import Any

import math
import jitgrad
from jitgrad.distributions.distribution import _EMPTY
from jitgrad.distributions import constraints
from jitgrad.distributions.beta import Beta
from jitgrad.distributions.distribution import Distribution
from jitgrad.distributions.utils import _mvlgamma, broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJ distribution over Cholesky factors of correlation matrices (onion method).

    Args:
        dim: Matrix dimension (at least 2).
        concentration: Concentration ``eta``, positive.
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(
        self, dim: int, concentration: Any | float = 1.0, validate_args: bool | None = None
    ) -> None:
        if dim < 2:
            raise ValueError(
                f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}."
            )
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = jitgrad.Size((dim, dim))
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = jitgrad.arange(
            self.dim - 1, dtype=self.concentration.dtype, device=self.concentration.device
        )
        offset = jitgrad.cat([offset.new_zeros((1,)), offset])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0, validate_args=validate_args)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = jitgrad.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape: Any = _EMPTY) -> Any:
        y = self._beta.sample(sample_shape).unsqueeze(-1)
        u_normal = jitgrad.randn(
            self._extended_shape(sample_shape), dtype=y.dtype, device=y.device
        ).tril(-1)
        u_hypersphere = u_normal / u_normal.norm(dim=-1, keepdim=True)
        u_hypersphere = jitgrad.cat(
            [jitgrad.zeros_like(u_hypersphere[..., :1, :]), u_hypersphere[..., 1:, :]], dim=-2
        )
        w = jitgrad.sqrt(y) * u_hypersphere
        eps = jitgrad.finfo(w.dtype).tiny
        diag_elems = jitgrad.clamp(1 - jitgrad.sum(w**2, dim=-1), min=eps).sqrt()
        w += jitgrad.diag_embed(diag_elems)
        return w

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = jitgrad.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = jitgrad.sum(order * diag_elems.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = jitgrad.lgamma(alpha) * dm1
        numerator = _mvlgamma(alpha - 0.5, dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        normalize_term = pi_constant + numerator - denominator
        return unnormalized_log_pdf - normalize_term
