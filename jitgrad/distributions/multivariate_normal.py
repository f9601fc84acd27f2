"""MultivariateNormal, parameterized by a covariance, precision or lower Cholesky factor."""

from __future__ import annotations

import math
from typing import Any

import jitgrad
from jitgrad.distributions import constraints
from jitgrad.distributions.distribution import _EMPTY, Distribution
from jitgrad.distributions.utils import _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]


def _broadcast_shapes(*shapes: Any) -> Any:
    """``torch.broadcast_shapes`` for tuples of ints."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for i, size in enumerate(tuple(shape)[::-1]):
            cur = out[ndim - 1 - i]
            if cur == 1:
                out[ndim - 1 - i] = size
            elif size not in (1, cur):
                raise RuntimeError(
                    f"Shape mismatch: objects cannot be broadcast to a single shape.  "
                    f"Mismatch is between {tuple(shapes[0])} and {tuple(shape)}."
                )
    return jitgrad.Size(out)


def _batch_mv(bmat: Any, bvec: Any) -> Any:
    """Batched matrix-vector product with broadcasting of the batch dimensions."""
    return jitgrad.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _tril_solve(tril: Any, rhs: Any) -> Any:
    """Solves ``tril @ X = rhs`` (``rhs`` a batch of matrices) with broadcast batches, reading
    only the lower triangle (torch's ``solve_triangular``: its gradient stays lower
    triangular)."""
    batch = _broadcast_shapes(tril.shape[:-2], rhs.shape[:-2])
    return jitgrad.linalg.solve_triangular(tril.expand(tuple(batch) + tuple(tril.shape[-2:])),
                                           rhs.expand(tuple(batch) + tuple(rhs.shape[-2:])),
                                           upper=False)


def _batch_mahalanobis(bL: Any, bx: Any) -> Any:  # noqa: N803 (torch's names)
    """Squared Mahalanobis norm ``x^T (L L^T)^{-1} x`` of the vectors ``bx``."""
    sol = _tril_solve(bL, bx.unsqueeze(-1)).squeeze(-1)
    return sol.pow(2).sum(-1)


def _half_log_det(tril: Any) -> Any:
    return tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)


class MultivariateNormal(Distribution):
    """Multivariate normal distribution with mean ``loc``.

    Exactly one of ``covariance_matrix``, ``precision_matrix`` or ``scale_tril`` (the
    lower-triangular ``L`` with ``L @ L.mT == covariance_matrix``) is given; all computations
    use ``L`` (from ``jitgrad.linalg.cholesky`` when a matrix is given).

    Args:
        loc: Mean vector(s), shape ``batch_shape + (n,)``.
        covariance_matrix: Positive-definite covariance matrices.
        precision_matrix: Positive-definite precision matrices.
        scale_tril: Lower-triangular factors with positive diagonals.
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Any, covariance_matrix: Any = None, precision_matrix: Any = None,
                 scale_tril: Any = None, validate_args: bool | None = None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = ((covariance_matrix is not None) + (scale_tril is not None)
                 + (precision_matrix is not None))
        if given != 1:
            raise ValueError(
                "Exactly one of covariance_matrix or precision_matrix or scale_tril may be "
                "specified."
            )
        if scale_tril is not None:
            if scale_tril.dim() < 2:
                raise ValueError("scale_tril matrix must be at least two-dimensional, "
                                 "with optional leading batch dimensions")
            batch_shape = _broadcast_shapes(scale_tril.shape[:-2], loc.shape[:-1])
            self.scale_tril = scale_tril.expand(tuple(batch_shape) + (-1, -1))
        elif covariance_matrix is not None:
            if covariance_matrix.dim() < 2:
                raise ValueError("covariance_matrix must be at least two-dimensional, "
                                 "with optional leading batch dimensions")
            batch_shape = _broadcast_shapes(covariance_matrix.shape[:-2], loc.shape[:-1])
            self.covariance_matrix = covariance_matrix.expand(tuple(batch_shape) + (-1, -1))
        else:
            if precision_matrix.dim() < 2:
                raise ValueError("precision_matrix must be at least two-dimensional, "
                                 "with optional leading batch dimensions")
            batch_shape = _broadcast_shapes(precision_matrix.shape[:-2], loc.shape[:-1])
            self.precision_matrix = precision_matrix.expand(tuple(batch_shape) + (-1, -1))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        event_shape = self.loc.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = jitgrad.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = jitgrad.linalg.cholesky(
                jitgrad.linalg.inv(precision_matrix))

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = jitgrad.Size(batch_shape)
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        cov_shape = loc_shape + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> tuple[int, ...]:
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @lazy_property
    def scale_tril(self) -> Any:
        """Lower-triangular Cholesky factor of the covariance."""
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Any:
        """Covariance matrix ``L @ L.mT``."""
        tril = self._unbroadcasted_scale_tril
        return jitgrad.matmul(tril, tril.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Any:
        """Inverse of the covariance matrix."""
        tril = self._unbroadcasted_scale_tril
        return jitgrad.linalg.inv(jitgrad.matmul(tril, tril.mT)).expand(self._matrix_shape())

    @property
    def mean(self) -> Any:
        return self.loc

    @property
    def mode(self) -> Any:
        return self.loc

    @property
    def variance(self) -> Any:
        return (self._unbroadcasted_scale_tril.pow(2).sum(-1)
                .expand(tuple(self._batch_shape) + tuple(self._event_shape)))

    def rsample(self, sample_shape: Any = _EMPTY) -> Any:
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = _half_log_det(self._unbroadcasted_scale_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + m) - half_log_det

    def entropy(self) -> Any:
        half_log_det = _half_log_det(self._unbroadcasted_scale_tril)
        h = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        if len(self._batch_shape) == 0:
            return h
        return h.expand(self._batch_shape)
