"""Fractional max pooling (Graham, 2014): ``F.fractional_max_pool2d/3d`` (+ ``_with_indices``)
and the FractionalMaxPool2d/3d layers.

Each plane's windows start at torch's pseudo-random sequence
``int((i + u) * alpha) - int(u * alpha)``, ``alpha = (in - k) / (out - 1)``, the last at
``in - k``, with ``u`` the plane's sample in ``[0, 1)`` (``_random_samples``, drawn uniformly
when not given). The taps are gathered by their flat positions and the max taken over them
(``gather`` + ``max``), so the pooling is differentiable to any order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..ops.creation import tensor
from ..ops.movement import cat
from ..tensor import Tensor
from .module import Module

__all__ = ["fractional_max_pool2d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d", "fractional_max_pool3d_with_indices"]
_MODULES = ["FractionalMaxPool2d", "FractionalMaxPool3d"]


def _ntuple(v: Any, n: int) -> tuple:
    if isinstance(v, (int, float)):
        return (v,) * n
    v = tuple(v)
    return v * n if len(v) == 1 else v


def _starts(samples: np.ndarray, size: int, out: int, k: int) -> np.ndarray:
    """torch's generate_intervals for every plane: ``(planes,)`` samples -> ``(planes, out)``,
    computed in the samples' precision as torch does (NumPy; ``_starts_t`` traces)."""
    dt = samples.dtype
    seq = np.empty(samples.shape + (out,), dtype=np.int64)
    if out > 1:
        alpha = dt.type(size - k) / dt.type(out - 1)
        i = np.arange(out - 1, dtype=dt)
        u = samples[..., None]
        seq[..., :-1] = ((i + u) * alpha).astype(np.int64) - (u * alpha).astype(np.int64)
    if out > 0:
        seq[..., -1] = size - k
    return seq


def _starts_t(samples: Tensor, size: int, out: int, k: int) -> Tensor:
    """``_starts`` of a tensor of samples ``(N, C)`` -> int64 ``(N, C, out)`` (traceable by
    ``jit``: the windows follow the samples' values at run time)."""
    last = tensor(np.full(samples.shape + (1,), size - k, dtype=np.int64),
                  device=samples.device)
    if out == 1:
        return last
    alpha = float(samples.dtype.np.type(size - k) / samples.dtype.np.type(out - 1))
    i = tensor(np.arange(out - 1), dtype=samples.dtype, device=samples.device)
    u = samples.unsqueeze(-1)
    seq = ((i + u) * alpha).to(dtypes.int64) - (u * alpha).to(dtypes.int64)
    return cat([seq, last], -1)


def _fractional(input: Tensor, kernel_size: Any, output_size: Any, output_ratio: Any,
                samples: Tensor | None, nd: int) -> tuple[Tensor, Tensor]:
    name = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    c = input.size(-nd - 1)
    spatial = tuple(input.shape[-nd:])
    if output_size is None:
        if isinstance(output_ratio, (tuple, list)) and len(output_ratio) > nd:
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple "
                             "of Ints.")
        ratio = _ntuple(output_ratio, nd)
        output_size = [int(s * r) for s, r in zip(spatial, ratio)]
    k = tuple(int(v) for v in _ntuple(kernel_size, nd))
    out = tuple(int(v) for v in _ntuple(output_size, nd))
    batched = input.ndim == nd + 2
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    n = input.shape[0] if batched else 1
    if samples is None:
        from ..random import rand

        samples = rand(n, c, nd, dtype=input.dtype, device=input.device)
    if samples.ndim != 3 or samples.shape[2] != nd or samples.shape[1] != c:
        if samples.ndim == 3 and samples.shape[1] != c:
            raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
        raise RuntimeError(f"Expect _random_samples to be of size [N, C, {nd}], but got "
                           f"{list(samples.shape)}")
    if batched and samples.shape[0] < n:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    dims = ("time", "height", "width")[3 - nd:]
    label = name + ("_out" if nd == 3 else "")
    for o, kk, s, dim in zip(out, k, spatial, dims):
        if kk <= 0:
            raise RuntimeError(f"{name}(): kernel_size must be greater than zero, but got "
                               f"{kk}")
        if o + kk - 1 > s:
            raise RuntimeError(f"{label}(): pool {dim} {kk} too large relative to input "
                               f"{dim} {s}")
    x = input if batched else input.unsqueeze(0)
    u = samples.detach()[:n]
    # torch's sample order: (w, h) for 2-d, (t, h, w) for 3-d
    order = (1, 0) if nd == 2 else (0, 1, 2)
    flat = None
    for i in range(nd):
        stride = int(np.prod(spatial[i + 1:], dtype=np.int64))
        pos = _starts_t(u[..., order[i]], spatial[i], out[i], k[i]).unsqueeze(-1) + \
            tensor(np.arange(k[i]), device=input.device)  # (n, c, out_i, k_i)
        shape = [n, c] + [1] * (2 * nd)
        shape[2 + i], shape[2 + nd + i] = out[i], k[i]
        term = pos.reshape(shape) * stride
        flat = term if flat is None else flat + term
    table = flat.expand(n, c, *out, *k).reshape(n, c, -1)
    taps = x.reshape(n, c, -1).gather(-1, table).reshape(n, c, *out, int(np.prod(k)))
    values, local = taps.max(-1)
    indices = table.reshape(n, c, *out, -1).gather(-1, local.unsqueeze(-1)).squeeze(-1)
    return (values, indices) if batched else (values.squeeze(0), indices.squeeze(0))


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: Any,  # noqa: A002
                                       output_size: Any = None, output_ratio: Any = None,
                                       return_indices: bool = False,
                                       _random_samples: Tensor | None = None
                                       ) -> tuple[Tensor, Tensor]:
    """2-d fractional max pooling of ``(N, C, H, W)`` or ``(C, H, W)`` input, with the flat
    ``h * W + w`` positions of the maxima.

    Args:
        input: the input.
        kernel_size: the window size (an int or a pair).
        output_size: the output's ``(oH, oW)`` (or one int for both).
        output_ratio: instead of ``output_size``: its ratio to the input's size, in (0, 1).
        return_indices: ignored (the indices are always returned), as torch.
        _random_samples: ``(N, C, 2)`` samples in ``[0, 1)`` (``[..., 0]`` for the width,
            ``[..., 1]`` for the height); drawn uniformly when None.
    """
    return _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 2)


def fractional_max_pool2d(input: Tensor, kernel_size: Any, output_size: Any = None,  # noqa: A002
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Tensor | None = None) -> Any:
    """2-d fractional max pooling; with ``return_indices`` also the positions (see
    ``fractional_max_pool2d_with_indices``)."""
    out = _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 2)
    return out if return_indices else out[0]


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: Any,  # noqa: A002
                                       output_size: Any = None, output_ratio: Any = None,
                                       return_indices: bool = False,
                                       _random_samples: Tensor | None = None
                                       ) -> tuple[Tensor, Tensor]:
    """3-d fractional max pooling of ``(N, C, T, H, W)`` or ``(C, T, H, W)`` input, with the
    flat ``(t * H + h) * W + w`` positions of the maxima.

    Args:
        input: the input.
        kernel_size: the window size (an int or a triple).
        output_size: the output's ``(oT, oH, oW)`` (or one int for all).
        output_ratio: instead of ``output_size``: its ratio to the input's size, in (0, 1).
        return_indices: ignored (the indices are always returned), as torch.
        _random_samples: ``(N, C, 3)`` samples in ``[0, 1)`` for ``(t, h, w)``; drawn
            uniformly when None.
    """
    return _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 3)


def fractional_max_pool3d(input: Tensor, kernel_size: Any, output_size: Any = None,  # noqa: A002
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Tensor | None = None) -> Any:
    """3-d fractional max pooling; with ``return_indices`` also the positions."""
    out = _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 3)
    return out if return_indices else out[0]


class _FractionalMaxPoolNd(Module):
    _dims = 2

    def __init__(self, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                 return_indices: bool = False, _random_samples: Tensor | None = None) -> None:
        super().__init__()
        n, cls = self._dims, type(self).__name__
        self.kernel_size = _ntuple(kernel_size, n)
        if n == 3 and any(k <= 0 for k in self.kernel_size):
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _ntuple(output_size, n) if output_size is not None else None
        self.output_ratio = _ntuple(output_ratio, n) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{cls} requires specifying either an output size, or a pooling "
                             "ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None:
            if not all(0 < r < 1 for r in self.output_ratio):
                raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        fn = fractional_max_pool2d if self._dims == 2 else fractional_max_pool3d
        return fn(input, self.kernel_size, self.output_size, self.output_ratio,
                  self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """2-d fractional max pooling (torch.nn.FractionalMaxPool2d).

    Args:
        kernel_size: the window size (an int or a pair).
        output_size: the output's ``(oH, oW)``; or
        output_ratio: its ratio to the input's size, in (0, 1).
        return_indices: also return the flat positions of the maxima. Default: False.
        _random_samples: fixed ``(N, C, 2)`` samples (a buffer); None draws them per call.
    """

    _dims = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-d fractional max pooling (torch.nn.FractionalMaxPool3d); see FractionalMaxPool2d
    (``_random_samples`` is ``(N, C, 3)``)."""

    _dims = 3

