"""The windows of ``torch.signal.windows``, written as torch's: each is a composition of
jitgrad ops on a ``linspace`` of the window's points (in ``dtype``), so the values round as
torch's and ``requires_grad=True`` gives the same differentiable result (the ``linspace`` is
the leaf; the window has a ``grad_fn``).

All take the length ``M`` positionally and the rest by keyword: ``sym=True`` (a symmetric
window for filter design; ``False`` is periodic, for spectral analysis), ``dtype`` (float32 or
float64; the default dtype when None), ``layout`` (strided only), ``device``,
``requires_grad``. They raise torch's ValueErrors for a negative ``M``, another layout or
dtype, and bad parameters.
"""

# ruff: noqa: N803  (the length is torch's argument ``M``)
from __future__ import annotations

from collections.abc import Iterable
from math import sqrt
from typing import Any

import jitgrad
from jitgrad import Tensor

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _window_function_checks(function_name: str, M: int, dtype: Any, layout: Any) -> None:
    """The checks every window makes first (torch's texts)."""
    if M < 0:
        raise ValueError(f"{function_name} requires non-negative window length, got M={M}")
    if layout is not jitgrad.strided:
        raise ValueError(
            f"{function_name} is implemented for strided tensors only, got: {layout}")
    if dtype not in [jitgrad.float32, jitgrad.float64]:
        raise ValueError(f"{function_name} expects float32 or float64 dtypes, got: {dtype}")


def _prelude(name: str, M: int, dtype: Any, layout: Any) -> Any:
    dtype = jitgrad.get_default_dtype() if dtype is None else dtype
    _window_function_checks(name, M, dtype, layout)
    return dtype


def _empty_or_one(M: int, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    return (jitgrad.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
            if M == 0 else
            jitgrad.ones((1,), dtype=dtype, device=device, requires_grad=requires_grad))


def _points(start: Any, end: Any, M: int, dtype: Any, device: Any,
            requires_grad: bool) -> Tensor:
    return jitgrad.linspace(start=start, end=end, steps=M, dtype=dtype, device=device,
                            requires_grad=requires_grad)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype: Any = None, layout: Any = jitgrad.strided, device: Any = None,
                requires_grad: bool = False) -> Tensor:
    """The exponential (Poisson) window ``exp(-|n - center| / tau)``.

    Args:
        M: the window's length.
        center: where the window peaks (periodic windows only); ``M / 2`` periodic,
            ``(M - 1) / 2`` symmetric by default.
        tau: the decay (positive).
        sym: symmetric (True) or periodic.
        dtype: float32 or float64.
        layout: strided.
        device: the device.
        requires_grad: whether the result records autograd.

    Returns:
        The window, shape ``(M,)``.
    """
    dtype = _prelude("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _empty_or_one(0, dtype, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / tau
    k = _points(-center * constant, (-center + (M - 1)) * constant, M, dtype, device,
                requires_grad)
    return jitgrad.exp(-jitgrad.abs(k))


def cosine(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = jitgrad.strided,
           device: Any = None, requires_grad: bool = False) -> Tensor:
    """The cosine (sine) window ``sin(pi (n + 0.5) / M)``, as SciPy's.

    Args:
        M: the window's length.
        sym: symmetric (True) or periodic.
        dtype: float32 or float64.
        layout: strided.
        device: the device.
        requires_grad: whether the result records autograd.

    Returns:
        The window, shape ``(M,)``.
    """
    dtype = _prelude("cosine", M, dtype, layout)
    if M == 0:
        return _empty_or_one(0, dtype, device, requires_grad)
    start = 0.5
    constant = jitgrad.pi / (M + 1 if not sym and M > 1 else M)
    k = _points(start * constant, (start + (M - 1)) * constant, M, dtype, device,
                requires_grad)
    return jitgrad.sin(k)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype: Any = None,
             layout: Any = jitgrad.strided, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """The Gaussian window ``exp(-(n - c)^2 / (2 std^2))``.

    Args:
        M: the window's length.
        std: the standard deviation (positive).
        sym: symmetric (True) or periodic.
        dtype: float32 or float64.
        layout: strided.
        device: the device.
        requires_grad: whether the result records autograd.

    Returns:
        The window, shape ``(M,)``.
    """
    dtype = _prelude("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _empty_or_one(0, dtype, device, requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / (std * sqrt(2))
    k = _points(start * constant, (start + (M - 1)) * constant, M, dtype, device,
                requires_grad)
    return jitgrad.exp(-(k ** 2))


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype: Any = None,
           layout: Any = jitgrad.strided, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """The Kaiser window ``I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta)``.

    Args:
        M: the window's length.
        beta: the shape parameter (non-negative).
        sym: symmetric (True) or periodic.
        dtype: float32 or float64.
        layout: strided.
        device: the device.
        requires_grad: whether the result records autograd.

    Returns:
        The window, shape ``(M,)``.
    """
    dtype = _prelude("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M <= 1:
        return _empty_or_one(M, dtype, device, requires_grad)
    b = jitgrad.tensor(beta, dtype=dtype, device=device)  # (in dtype, so no NaN at the ends)
    start = -b
    constant = 2.0 * b / (M if not sym else M - 1)
    end = jitgrad.minimum(b, start + (M - 1) * constant)
    k = _points(start, end, M, dtype, device, requires_grad)
    return jitgrad.i0(jitgrad.sqrt(b * b - jitgrad.pow(k, 2))) / jitgrad.i0(b)


def hamming(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = jitgrad.strided,
            device: Any = None, requires_grad: bool = False) -> Tensor:
    """The Hamming window: :func:`general_hamming` with ``alpha=0.54``.

    Args:
        M: the window's length.
        sym: symmetric (True) or periodic.
        dtype: float32 or float64.
        layout: strided.
        device: the device.
        requires_grad: whether the result records autograd.

    Returns:
        The window, shape ``(M,)``.
    """
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = jitgrad.strided,
         device: Any = None, requires_grad: bool = False) -> Tensor:
    """The Hann window: :func:`general_hamming` with ``alpha=0.5``.

    Args:
        M: the window's length.
        sym: symmetric (True) or periodic.
        dtype: float32 or float64.
        layout: strided.
        device: the device.
        requires_grad: whether the result records autograd.

    Returns:
        The window, shape ``(M,)``.
    """
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = jitgrad.strided,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """The Blackman window: :func:`general_cosine` with ``a=[0.42, 0.5, 0.08]``.

    Args:
        M: the window's length.
        sym: symmetric (True) or periodic.
        dtype: float32 or float64.
        layout: strided.
        device: the device.
        requires_grad: whether the result records autograd.

    Returns:
        The window, shape ``(M,)``.
    """
    dtype = _prelude("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = jitgrad.strided,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """The Bartlett (triangular) window ``1 - |2n / (M - 1) - 1|``.

    Args:
        M: the window's length.
        sym: symmetric (True) or periodic.
        dtype: float32 or float64.
        layout: strided.
        device: the device.
        requires_grad: whether the result records autograd.

    Returns:
        The window, shape ``(M,)``.
    """
    dtype = _prelude("bartlett", M, dtype, layout)
    if M <= 1:
        return _empty_or_one(M, dtype, device, requires_grad)
    start = -1
    constant = 2 / (M if not sym else M - 1)
    k = _points(start, start + (M - 1) * constant, M, dtype, device, requires_grad)
    return 1 - jitgrad.abs(k)


def general_cosine(M: int, *, a: Iterable, sym: bool = True, dtype: Any = None,
                   layout: Any = jitgrad.strided, device: Any = None,
                   requires_grad: bool = False) -> Tensor:
    """The generalized cosine window ``sum_i (-1)^i a_i cos(2 pi i n / (M - 1))``.

    Args:
        M: the window's length.
        a: the coefficients (a non-empty list or tuple).
        sym: symmetric (True) or periodic.
        dtype: float32 or float64.
        layout: strided.
        device: the device.
        requires_grad: whether the result records autograd.

    Returns:
        The window, shape ``(M,)``.
    """
    dtype = _prelude("general_cosine", M, dtype, layout)
    if M <= 1:
        return _empty_or_one(M, dtype, device, requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    constant = 2 * jitgrad.pi / (M if not sym else M - 1)
    k = _points(0, (M - 1) * constant, M, dtype, device, requires_grad)
    a_i = jitgrad.tensor([(-1) ** i * w for i, w in enumerate(a)], device=device, dtype=dtype,
                         requires_grad=requires_grad)
    i = jitgrad.arange(a_i.shape[0], dtype=a_i.dtype, device=a_i.device,
                       requires_grad=a_i.requires_grad)
    return (a_i.unsqueeze(-1) * jitgrad.cos(i.unsqueeze(-1) * k)).sum(0)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, dtype: Any = None,
                    layout: Any = jitgrad.strided, device: Any = None,
                    requires_grad: bool = False) -> Tensor:
    """The generalized Hamming window ``alpha - (1 - alpha) cos(2 pi n / (M - 1))``.

    Args:
        M: the window's length.
        alpha: the window's coefficient.
        sym: symmetric (True) or periodic.
        dtype: float32 or float64.
        layout: strided.
        device: the device.
        requires_grad: whether the result records autograd.

    Returns:
        The window, shape ``(M,)``.
    """
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = jitgrad.strided,
            device: Any = None, requires_grad: bool = False) -> Tensor:
    """The minimum 4-term Blackman-Harris window of Nuttall.

    Args:
        M: the window's length.
        sym: symmetric (True) or periodic.
        dtype: float32 or float64.
        layout: strided.
        device: the device.
        requires_grad: whether the result records autograd.

    Returns:
        The window, shape ``(M,)``.
    """
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)
