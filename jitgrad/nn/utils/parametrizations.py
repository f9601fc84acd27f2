"""``torch.nn.utils.parametrizations``: ``weight_norm`` (``parametrizations.weight.original0``
holds ``g``, ``original1`` holds ``v``) and ``spectral_norm`` (buffers ``0._u`` and ``0._v``,
one power-iteration step per access in training), recomputed on every access of
``module.weight``."""

from __future__ import annotations

from typing import Any

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ..module import Module
from .parametrize import register_parametrization
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["weight_norm", "spectral_norm"]


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Any, name: str = "weight", dim: int | None = 0) -> Any:
    """Parametrizes ``module.<name>`` as ``g * v / ||v||`` (the norm over every dim but
    ``dim``; ``None``: the whole tensor).

    Args:
        module: the module holding the parameter.
        name: the parameter's name. Default: ``'weight'``.
        dim: the dim kept by the norm. Default: 0.

    Returns:
        ``module``.
    """
    register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


def _normalize(x: Tensor, eps: float) -> Tensor:
    return x / x.norm().clamp(min=eps)


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        from ...random import randn

        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, "
                             f"{ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            self.register_buffer("_u", _normalize(randn(h, dtype=weight.dtype), eps))
            self.register_buffer("_v", _normalize(randn(w, dtype=weight.dtype), eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(_normalize(weight_mat.mv(self._v), self.eps))
                self._v.copy_(_normalize(weight_mat.t().mv(self._u), self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return _normalize(weight, self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = u.dot(weight_mat.mv(v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Any, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Any:
    """Parametrizes ``module.<name>`` as itself over its spectral norm, estimated by power
    iteration (15 steps at registration, one per access in training mode).

    Args:
        module: the module holding the parameter.
        name: the parameter's name. Default: ``'weight'``.
        n_power_iterations: power-iteration steps per access in training. Default: 1.
        eps: the floor of the norms in the normalizations. Default: 1e-12.
        dim: the output dim; default 0, or 1 for transposed convolutions.

    Returns:
        ``module``.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from ..conv import _ConvTransposeNd

        dim = 1 if isinstance(module, _ConvTransposeNd) else 0
    register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
