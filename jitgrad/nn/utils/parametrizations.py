"""``torch.nn.utils.parametrizations``: ``orthogonal`` (a matrix exponential, Cayley map or
Householder product of the free parameters, times the orthogonal ``base`` buffer taken at
assignment), ``weight_norm`` (``parametrizations.weight.original0``
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

__all__ = ["orthogonal", "weight_norm", "spectral_norm"]


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

    def load_old_checkpoint(state_dict, prefix, local_metadata, strict, missing_keys,
                            unexpected_keys, error_msgs):
        # (torch's compatibility hook: nn.utils.weight_norm's ``<name>_g``/``<name>_v`` are
        # this parametrization's originals)
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(load_old_checkpoint)
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


# ---------------------------------------------------------------- orthogonal

_ORTHOGONAL_MAPS = ("matrix_exp", "cayley", "householder")


def _orthonormalized(a: Tensor) -> Tensor:
    """The Q of ``a = QR`` (``a`` tall) with R's diagonal made non-negative."""
    from ...ops.linalg_more2 import geqrf, householder_product

    reflectors, tau = geqrf(a)
    q = householder_product(reflectors, tau)
    return q * reflectors.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _has_orthonormal_columns(q: Tensor) -> bool:
    from ..._type_info import finfo
    from ...ops.creation import eye
    from ...ops.functions import allclose

    n, k = q.shape[-2], q.shape[-1]
    identity = eye(k, dtype=q.dtype, device=q.device)
    return bool(allclose(q.mH @ q, identity, atol=10.0 * n * finfo(q.dtype).eps))


class _Orthogonal(Module):
    """Maps an unconstrained matrix (or batch) to one with orthonormal columns (rows, when
    wide): the tall view's lower triangle, made skew-symmetric, through ``matrix_exp`` or the
    Cayley map, or its columns below the diagonal as Householder reflectors."""

    def __init__(self, weight: Tensor, orthogonal_map: str, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex "
                             "tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Tensor) -> Tensor:
        from ...ops.creation import eye
        from ...ops.linalg2 import solve
        from ...ops.movement import cat

        wide = x.shape[-2] < x.shape[-1]
        if wide:
            x = x.mT
        n, k = x.shape[-2], x.shape[-1]
        if self.orthogonal_map == "householder":
            reflectors = x.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (reflectors * reflectors).sum(dim=-2))
            from ...ops.linalg_more2 import householder_product

            q = householder_product(reflectors, tau)
            # (the diagonal's signs, +-1, pick each column's orientation; not differentiated)
            q = q * x.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        else:
            low = x.tril()
            if n != k:
                pad = low.new_zeros(n, n - k).expand(*low.shape[:-2], -1, -1)
                low = cat([low, pad], dim=-1)
            skew = low - low.mH
            if self.orthogonal_map == "matrix_exp":
                q = skew.matrix_exp()
            else:  # Cayley: (I - A/2)^-1 (I + A/2)
                identity = eye(n, dtype=skew.dtype, device=skew.device)
                q = solve(identity - 0.5 * skew, identity + 0.5 * skew)
            q = q[..., :k]
        if getattr(self, "base", None) is not None:
            q = self.base @ q
        return q.mT if wide else q

    def right_inverse(self, q: Tensor) -> Tensor:
        from ...ops.linalg_more2 import geqrf
        from ...ops.movement import cat
        from ...random import randn

        with no_grad():
            if q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape "
                                 f"{self.shape}. Got a tensor of shape {q.shape}.")
            given = q
            wide = q.shape[-2] < q.shape[-1]
            if wide:
                q = q.mT
            n, k = q.shape[-2], q.shape[-1]
            if "base" not in self._buffers:
                if self.orthogonal_map != "householder":
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley "
                        "parametrizations when use_trivialization=False.")
                reflectors, tau = geqrf(q)
                # (a +-1 diagonal giving R's signs, flipped where a reflector is the identity)
                signs = reflectors.diagonal(dim1=-2, dim2=-1).sign()
                signs = signs.where(tau != 0, -signs)
                reflectors = reflectors.clone()
                reflectors.diagonal(dim1=-2, dim2=-1).copy_(signs)
                return reflectors.mT if wide else reflectors
            if n == k:
                base = q.clone() if _has_orthonormal_columns(q) else _orthonormalized(q)
            else:  # (completed to a square orthogonal matrix by random columns)
                extra = randn(*(tuple(q.shape[:-2]) + (n, n - k)), dtype=q.dtype,
                              device=q.device)
                base = _orthonormalized(cat([q, extra], dim=-1))
            self.base = base
            start = given.new_zeros(given.shape)  # (-I: the Householder map's identity)
            start.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return start


def orthogonal(module: Any, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Any:
    """Parametrizes ``module.<name>`` (a matrix or batch of them) to have orthonormal columns,
    or rows when wide: unitary when complex.

    Args:
        module: the module holding the tensor.
        name: the tensor's name. Default: ``'weight'``.
        orthogonal_map: ``"matrix_exp"``, ``"cayley"`` or ``"householder"``. Default:
            ``"matrix_exp"`` for square or complex matrices, else ``"householder"``.
        use_trivialization: keep an orthogonal ``base`` buffer (set on assignment) that the
            map's output multiplies. Default: True.

    Returns:
        ``module``.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    if orthogonal_map not in _ORTHOGONAL_MAPS:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    parametrization = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    register_parametrization(module, name, parametrization, unsafe=True)
    return module
