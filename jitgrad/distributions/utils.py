"""Helpers shared by the distributions, named as in ``torch.distributions.utils``."""

from __future__ import annotations

import math
import numbers
from functools import update_wrapper
from typing import Any

import jitgrad
import jitgrad.nn.functional as F

__all__ = [
    "broadcast_all",
    "clamp_probs",
    "euler_constant",
    "lazy_property",
    "logits_to_probs",
    "probs_to_logits",
    "tril_matrix_to_vec",
    "vec_to_tril_matrix",
]

euler_constant = 0.57721566490153286060  # Euler Mascheroni Constant

_FINFO = {
    jitgrad.float16: (6.103515625e-05, 0.0009765625),
    jitgrad.float32: (1.1754943508222875e-38, 1.1920928955078125e-07),
    jitgrad.float64: (2.2250738585072014e-308, 2.220446049250313e-16),
}


def _finfo(tensor: Any) -> tuple[float, float]:
    """Returns ``(tiny, eps)`` of ``tensor``'s floating dtype (as ``torch.finfo``)."""
    return _FINFO.get(tensor.dtype, _FINFO[jitgrad.float32])


def broadcast_all(*values: Any) -> tuple[Any, ...]:
    """Broadcasts numbers and tensors to one shape, as ``torch.distributions.utils``.

    Numbers become tensors of the default dtype (or of the first tensor's dtype).

    Args:
        *values: Tensors or Python numbers.

    Returns:
        The broadcast tensors.

    Raises:
        ValueError: If a value is neither a tensor nor a number.
    """
    if not all(jitgrad.is_tensor(v) or isinstance(v, numbers.Number) for v in values):
        raise ValueError(
            "Input arguments must all be instances of numbers.Number, "
            "torch.Tensor or objects implementing __torch_function__."
        )
    if not all(jitgrad.is_tensor(v) for v in values):
        dtype = jitgrad.get_default_dtype()
        for value in values:
            if jitgrad.is_tensor(value):
                dtype = value.dtype
                break
        values = tuple(
            v if jitgrad.is_tensor(v) else jitgrad.tensor(v, dtype=dtype) for v in values
        )
    return tuple(jitgrad.broadcast_tensors(*values))


def _standard_normal(shape: Any, dtype: Any, device: Any = None) -> Any:
    """Standard normal draws of ``shape`` from jitgrad's default generator."""
    return jitgrad.randn(tuple(shape), dtype=dtype, device=device)


def _sum_rightmost(value: Any, dim: int) -> Any:
    """Sums out the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    required_shape = tuple(value.shape[: value.dim() - dim]) + (-1,)
    return value.reshape(required_shape).sum(-1)


def _mvlgamma(x: Any, p: int) -> Any:
    """Multivariate log-gamma ``log Gamma_p(x)`` (``torch.mvlgamma``), from ``lgamma``."""
    out = jitgrad.lgamma(x) + p * (p - 1) / 4 * math.log(math.pi)
    for i in range(1, p):
        out = out + jitgrad.lgamma(x - i / 2)
    return out


def logits_to_probs(logits: Any, is_binary: bool = False) -> Any:
    """Converts logits to probabilities (sigmoid if binary, else softmax over the last dim)."""
    if is_binary:
        return jitgrad.sigmoid(logits)
    return F.softmax(logits, dim=-1)


def clamp_probs(probs: Any) -> Any:
    """Clamps probabilities into ``[eps, 1 - eps]`` of their dtype."""
    eps = _finfo(probs)[1]
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Any, is_binary: bool = False) -> Any:
    """Converts probabilities to logits (log-odds if binary, else log-probabilities)."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return jitgrad.log(ps_clamped) - jitgrad.log1p(-ps_clamped)
    return jitgrad.log(ps_clamped)


class lazy_property:  # noqa: N801 (torch's name)
    """A property computed once per instance on first access, then stored on the instance."""

    def __init__(self, wrapped: Any):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)  # type: ignore[arg-type]

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):  # noqa: N801
    """Lets ``lazy_property`` be introspected on the class like a ``property``."""

    def __init__(self, wrapped: Any):
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat: Any, diag: int = 0) -> Any:
    """Flattens the lower triangle (offset ``diag``) of the last two dims, row by row."""
    n = mat.shape[-1]
    if not (-n <= diag < n):
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = [], []
    for i in range(n):
        for j in range(n):
            if j - i <= diag:
                rows.append(i)
                cols.append(j)
    return mat[..., jitgrad.tensor(rows), jitgrad.tensor(cols)]


def vec_to_tril_matrix(vec: Any, diag: int = 0) -> Any:
    """Inverse of :func:`tril_matrix_to_vec`: builds the lower-triangular matrix."""
    n = int((-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag)
                                * (diag + 1)) ** 0.5) / 2)
    eps = _finfo(vec)[1]
    if not (abs(n - round(n)) < eps):
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be "
                         "expressed as the lower triangular part of a square D x D matrix.")
    n = round(n)
    idx = [(i, j) for i in range(n) for j in range(n) if j - i <= diag]
    mat = jitgrad.zeros(*tuple(vec.shape[:-1]), n * n, dtype=vec.dtype)
    flat = jitgrad.tensor([i * n + j for i, j in idx])
    mat = _scatter_last(mat, flat, vec)
    return mat.reshape(tuple(vec.shape[:-1]) + (n, n))


def _scatter_last(mat: Any, flat: Any, vec: Any) -> Any:
    """Places ``vec``'s last-dim entries at positions ``flat`` of ``mat``'s last dim."""
    index = flat.expand(tuple(vec.shape[:-1]) + (flat.shape[0],))
    return mat.scatter(-1, index, vec)
