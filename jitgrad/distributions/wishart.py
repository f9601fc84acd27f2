"""``torch.distributions.wishart``: ``Wishart`` (ported from torch 2.13)."""

from __future__ import annotations

from typing import Any

import math
import warnings
import jitgrad
from jitgrad.distributions.distribution import _EMPTY
from math import nan
from jitgrad.distributions import constraints
from jitgrad.distributions.exp_family import ExponentialFamily
from jitgrad.distributions.utils import _mvlgamma, lazy_property
from numbers import Number

_Number = Number
__all__ = ["Wishart"]
_log_2 = math.log(2)


def _mvdigamma(x: Any, p: int) -> Any:
    if not x.gt((p - 1) / 2).all():
        raise AssertionError("Wrong domain for multivariate digamma function.")
    return jitgrad.digamma(
        x.unsqueeze(-1)
        - jitgrad.arange(p, dtype=x.dtype, device=x.device).div(2).expand(x.shape + (-1,))
    ).sum(-1)


def _precision_to_scale_tril(p: Any) -> Any:
    """Lower Cholesky factor of ``p``'s inverse (torch's ``_precision_to_scale_tril``)."""
    lf = jitgrad.linalg.cholesky(jitgrad.flip(p, (-2, -1)))
    l_inv = jitgrad.transpose(jitgrad.flip(lf, (-2, -1)), -2, -1)
    eye = jitgrad.eye(p.shape[-1], dtype=p.dtype)
    return jitgrad.linalg.solve_triangular(l_inv, eye, upper=False)


def _clamp_above_eps(x: Any) -> Any:
    return x.clamp(min=jitgrad.finfo(x.dtype).eps)


class Wishart(ExponentialFamily):
    """Wishart distribution over positive-definite matrices (Bartlett decomposition sampling).

    Args:
        df: Degrees of freedom, greater than ``p - 1``.
        covariance_matrix: Scale matrix (exactly one of the three matrix arguments).
        precision_matrix: Inverse of the scale matrix.
        scale_tril: Lower Cholesky factor of the scale matrix.
        validate_args: Whether to validate parameters and values.
    """

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self) -> Any:
        return {
            "covariance_matrix": constraints.positive_definite,
            "precision_matrix": constraints.positive_definite,
            "scale_tril": constraints.lower_cholesky,
            "df": constraints.greater_than(self.event_shape[-1] - 1),
        }

    def __init__(
        self,
        df: Any | Number,
        covariance_matrix: Any | None = None,
        precision_matrix: Any | None = None,
        scale_tril: Any | None = None,
        validate_args: bool | None = None,
    ) -> None:
        if (covariance_matrix is not None) + (scale_tril is not None) + (
            precision_matrix is not None
        ) != 1:
            raise AssertionError(
                "Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified."  # noqa: E501
            )
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril) if p is not None)
        if param.dim() < 2:
            raise ValueError(
                "scale_tril must be at least two-dimensional, with optional leading batch dimensions"  # noqa: E501
            )
        if isinstance(df, _Number):
            batch_shape = jitgrad.Size(param.shape[:-2])
            self.df = jitgrad.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = jitgrad.broadcast_shapes(param.shape[:-2], df.shape)
            self.df = df.expand(batch_shape)
        event_shape = param.shape[-2:]
        if self.df.le(event_shape[-1] - 1).any():
            raise ValueError(
                f"Value of df={df} expected to be greater than ndim - 1 = {event_shape[-1] - 1}."
            )
        if scale_tril is not None:
            self.scale_tril = param.expand(batch_shape + (-1, -1))
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(batch_shape + (-1, -1))
        elif precision_matrix is not None:
            self.precision_matrix = param.expand(batch_shape + (-1, -1))
        if self.df.lt(event_shape[-1]).any():
            warnings.warn(
                "Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df < ndim.",  # noqa: E501
                stacklevel=2,
            )
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = jitgrad.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = jitgrad.distributions.chi2.Chi2(
            df=self.df.unsqueeze(-1)
            - jitgrad.arange(
                self._event_shape[-1],
                dtype=self._unbroadcasted_scale_tril.dtype,
                device=self._unbroadcasted_scale_tril.device,
            ).expand(batch_shape + (-1,))
        )

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = jitgrad.Size(batch_shape)
        cov_shape = batch_shape + self.event_shape
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        if "covariance_matrix" in self.__dict__:
            new.covariance_matrix = self.covariance_matrix.expand(cov_shape)
        if "scale_tril" in self.__dict__:
            new.scale_tril = self.scale_tril.expand(cov_shape)
        if "precision_matrix" in self.__dict__:
            new.precision_matrix = self.precision_matrix.expand(cov_shape)
        new._dist_chi2 = jitgrad.distributions.chi2.Chi2(
            df=new.df.unsqueeze(-1)
            - jitgrad.arange(
                self.event_shape[-1],
                dtype=new._unbroadcasted_scale_tril.dtype,
                device=new._unbroadcasted_scale_tril.device,
            ).expand(batch_shape + (-1,))
        )
        super(Wishart, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self) -> Any:
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self) -> Any:
        return (
            self._unbroadcasted_scale_tril @ self._unbroadcasted_scale_tril.transpose(-2, -1)
        ).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self) -> Any:
        identity = jitgrad.eye(
            self._event_shape[-1],
            device=self._unbroadcasted_scale_tril.device,
            dtype=self._unbroadcasted_scale_tril.dtype,
        )
        return jitgrad.cholesky_solve(identity, self._unbroadcasted_scale_tril).expand(
            self._batch_shape + self._event_shape
        )

    @property
    def mean(self) -> Any:
        return self.df.view(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def mode(self) -> Any:
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = jitgrad.where(factor <= 0, nan, factor)
        return factor.view(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def variance(self) -> Any:
        V = self.covariance_matrix
        diag_V = V.diagonal(dim1=-2, dim2=-1)
        return self.df.view(self._batch_shape + (1, 1)) * (
            V.pow(2) + jitgrad.einsum("...i,...j->...ij", diag_V, diag_V)
        )

    def _bartlett_sampling(self, sample_shape: Any = _EMPTY) -> Any:
        p = self._event_shape[-1]
        noise = _clamp_above_eps(self._dist_chi2.rsample(sample_shape).sqrt()).diag_embed(
            dim1=-2, dim2=-1
        )
        i, j = jitgrad.tril_indices(p, p, offset=-1)
        noise[..., i, j] = jitgrad.randn(
            jitgrad.Size(sample_shape) + self._batch_shape + (int(p * (p - 1) / 2),),
            dtype=noise.dtype,
            device=noise.device,
        )
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.transpose(-2, -1)

    def rsample(self, sample_shape: Any = _EMPTY, max_try_correction: Any = None) -> Any:
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = jitgrad.Size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        is_singular = self.support.check(sample)
        if self._batch_shape:
            is_singular = is_singular.amax(self._batch_dims)
        if is_singular.any():
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                sample_new = self._bartlett_sampling(is_singular[is_singular].shape)
                sample[is_singular] = sample_new
                is_singular_new = ~self.support.check(sample_new)
                if self._batch_shape:
                    is_singular_new = is_singular_new.amax(self._batch_dims)
                is_singular[is_singular.clone()] = is_singular_new
                if not is_singular.any():
                    break
        return sample

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        return (
            -nu
            * (
                p * _log_2 / 2
                + self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
            )
            - _mvlgamma(nu / 2, p=p)
            + (nu - p - 1) / 2 * jitgrad.linalg.slogdet(value).logabsdet
            - jitgrad.cholesky_solve(value, self._unbroadcasted_scale_tril)
            .diagonal(dim1=-2, dim2=-1)
            .sum(dim=-1)
            / 2
        )

    def entropy(self) -> Any:
        nu = self.df
        p = self._event_shape[-1]
        return (
            (p + 1)
            * (
                p * _log_2 / 2
                + self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
            )
            + _mvlgamma(nu / 2, p=p)
            - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p)
            + nu * p / 2
        )

    @property
    def _natural_params(self) -> tuple[Any, Any]:
        nu = self.df
        p = self._event_shape[-1]
        return (-self.precision_matrix / 2, (nu - p - 1) / 2)

    def _log_normalizer(self, x: Any, y: Any) -> Any:
        p = self._event_shape[-1]
        return (y + (p + 1) / 2) * (
            -jitgrad.linalg.slogdet(-2 * x).logabsdet + _log_2 * p
        ) + _mvlgamma(y + (p + 1) / 2, p=p)
