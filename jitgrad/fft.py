"""``jitgrad.fft``: torch.fft's discrete Fourier transforms, differentiable in both modes.

Each transform is one of three primitives with torch's nodes (``FftC2CBackward0``,
``FftR2CBackward0``, ``FftC2RBackward0``; ``ops/fft_ops.py``), after the input is promoted
(integers to the default float dtype) and padded or trimmed to the signal length ``n``/``s``.
``norm`` is ``"backward"`` (the default: the inverse scales by ``1/n``), ``"ortho"``
(``1/sqrt(n)`` both ways) or ``"forward"`` (the forward scales by ``1/n``). NumPy's pocketfft
computes; float32 gives complex64 and float64 complex128, as torch.
"""

from __future__ import annotations

from typing import Any

from .ops import fft_ops as _f
from .ops.out_arg import with_out

__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "hfft2", "hfftn", "ifft",
           "ifft2", "ifftn", "ifftshift", "ihfft", "ihfft2", "ihfftn", "irfft", "irfft2",
           "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn"]

_Dims = Any  # an int, a sequence of ints, or None


def _fft(input: Any, n: int | None = None, dim: int = -1,  # noqa: A002
         norm: str | None = None) -> Any:
    """The 1-d discrete Fourier transform of ``input`` along ``dim`` (complex result)."""
    if input.dtype.is_complex:
        return _f.c2c("fft", input, n, dim, norm, True)
    return _f.r2c("fft", input, n, dim, norm, True, False)


def _ifft(input: Any, n: int | None = None, dim: int = -1,  # noqa: A002
          norm: str | None = None) -> Any:
    """The 1-d inverse discrete Fourier transform of ``input`` along ``dim``."""
    if input.dtype.is_complex:
        return _f.c2c("ifft", input, n, dim, norm, False)
    return _f.r2c("ifft", input, n, dim, norm, False, False)


def _rfft(input: Any, n: int | None = None, dim: int = -1,  # noqa: A002
          norm: str | None = None) -> Any:
    """The 1-d transform of a real ``input``: the ``n // 2 + 1`` non-redundant bins."""
    return _f.r2c("rfft", input, n, dim, norm, True, True)


def _irfft(input: Any, n: int | None = None, dim: int = -1,  # noqa: A002
           norm: str | None = None) -> Any:
    """The inverse of ``rfft``: a real signal of length ``n`` (default ``2 * (m - 1)``)."""
    return _f.c2r("irfft", input, n, dim, norm, False)


def _hfft(input: Any, n: int | None = None, dim: int = -1,  # noqa: A002
          norm: str | None = None) -> Any:
    """The transform of a Hermitian-symmetric signal given by its onesided half (real
    result of length ``n``, default ``2 * (m - 1)``)."""
    return _f.c2r("hfft", input, n, dim, norm, True)


def _ihfft(input: Any, n: int | None = None, dim: int = -1,  # noqa: A002
           norm: str | None = None) -> Any:
    """The inverse of ``hfft``: the onesided inverse transform of a real ``input``."""
    return _f.r2c("ihfft", input, n, dim, norm, False, True)


def _fftn(input: Any, s: _Dims = None, dim: _Dims = None,  # noqa: A002
          norm: str | None = None) -> Any:
    """The n-d transform over ``dim`` (default: the last ``len(s)`` dims, or all)."""
    return _f.c2c_n("fftn", input, s, dim, norm, True)


def _ifftn(input: Any, s: _Dims = None, dim: _Dims = None,  # noqa: A002
           norm: str | None = None) -> Any:
    """The n-d inverse transform over ``dim``."""
    return _f.c2c_n("ifftn", input, s, dim, norm, False)


def _rfftn(input: Any, s: _Dims = None, dim: _Dims = None,  # noqa: A002
           norm: str | None = None) -> Any:
    """The n-d transform of a real ``input``, onesided in the last of ``dim``."""
    return _f.r2c_n("rfftn", input, s, dim, norm, True)


def _irfftn(input: Any, s: _Dims = None, dim: _Dims = None,  # noqa: A002
            norm: str | None = None) -> Any:
    """The inverse of ``rfftn`` (real result; the last size defaults to ``2 * (m - 1)``)."""
    return _f.c2r_n("irfftn", input, s, dim, norm, False)


def _fft2(input: Any, s: _Dims = None, dim: _Dims = (-2, -1),  # noqa: A002
          norm: str | None = None) -> Any:
    """``fftn`` over the last two dims."""
    return _f.c2c_n("fft2", input, s, dim, norm, True)


def _ifft2(input: Any, s: _Dims = None, dim: _Dims = (-2, -1),  # noqa: A002
           norm: str | None = None) -> Any:
    """``ifftn`` over the last two dims."""
    return _f.c2c_n("ifft2", input, s, dim, norm, False)


def _rfft2(input: Any, s: _Dims = None, dim: _Dims = (-2, -1),  # noqa: A002
           norm: str | None = None) -> Any:
    """``rfftn`` over the last two dims."""
    return _f.r2c_n("rfftn", input, s, dim, norm, True)


def _irfft2(input: Any, s: _Dims = None, dim: _Dims = (-2, -1),  # noqa: A002
            norm: str | None = None) -> Any:
    """``irfftn`` over the last two dims."""
    return _f.c2r_n("irfft2", input, s, dim, norm, False)


def _hfftn(input: Any, s: _Dims = None, dim: _Dims = None,  # noqa: A002
           norm: str | None = None) -> Any:
    """The n-d ``hfft``: real output, the last size defaulting to ``2 * (m - 1)``."""
    return _f.hfft_n("hfftn", input, s, dim, norm)


def _ihfftn(input: Any, s: _Dims = None, dim: _Dims = None,  # noqa: A002
            norm: str | None = None) -> Any:
    """The n-d ``ihfft`` of a real input, onesided in the last of ``dim``."""
    return _f.ihfft_n("ihfftn", input, s, dim, norm)


def _hfft2(input: Any, s: _Dims = None, dim: _Dims = (-2, -1),  # noqa: A002
           norm: str | None = None) -> Any:
    """``hfftn`` over the last two dims."""
    return _f.hfft_n("hfft2", input, s, dim, norm)


def _ihfft2(input: Any, s: _Dims = None, dim: _Dims = (-2, -1),  # noqa: A002
            norm: str | None = None) -> Any:
    """``ihfftn`` over the last two dims."""
    return _f.ihfft_n("ihfft2", input, s, dim, norm)


fft = with_out("fft_fft", _fft)
ifft = with_out("fft_ifft", _ifft)
rfft = with_out("fft_rfft", _rfft)
irfft = with_out("fft_irfft", _irfft)
hfft = with_out("fft_hfft", _hfft)
ihfft = with_out("fft_ihfft", _ihfft)
fftn = with_out("fft_fftn", _fftn)
ifftn = with_out("fft_ifftn", _ifftn)
rfftn = with_out("fft_rfftn", _rfftn)
irfftn = with_out("fft_irfftn", _irfftn)
fft2 = with_out("fft_fft2", _fft2)
ifft2 = with_out("fft_ifft2", _ifft2)
rfft2 = with_out("fft_rfft2", _rfft2)
irfft2 = with_out("fft_irfft2", _irfft2)
hfftn = with_out("fft_hfftn", _hfftn)
ihfftn = with_out("fft_ihfftn", _ihfftn)
hfft2 = with_out("fft_hfft2", _hfft2)
ihfft2 = with_out("fft_ihfft2", _ihfft2)
for _name in __all__:
    if _name in globals() and hasattr(globals()[_name], "__name__"):
        globals()[_name].__name__ = _name
        globals()[_name].__qualname__ = _name


def _freq(n: int, d: float, values, dtype, device, requires_grad: bool):
    from . import dtypes
    from .ops.creation import tensor

    dt = dtypes.get_default_dtype() if dtype is None else dtype
    return tensor(values / (n * d), dtype=dt, device=device, requires_grad=requires_grad)


def fftfreq(n: int, d: float = 1.0, *, out: Any = None, dtype: Any = None,
            layout: Any = None, device: Any = None, requires_grad: bool = False) -> Any:
    """The sample frequencies of an ``n``-point ``fft`` with sample spacing ``d``:
    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)``."""
    import numpy as np

    del layout
    k = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
    result = _freq(n, d, k.astype(np.float64), dtype, device, requires_grad)
    return result if out is None else out.copy_(result)


def rfftfreq(n: int, d: float = 1.0, *, out: Any = None, dtype: Any = None,
             layout: Any = None, device: Any = None, requires_grad: bool = False) -> Any:
    """The sample frequencies of an ``n``-point ``rfft``: ``[0, 1, ..., n // 2] / (d * n)``."""
    import numpy as np

    del layout
    result = _freq(n, d, np.arange(0, n // 2 + 1, dtype=np.float64), dtype, device,
                   requires_grad)
    return result if out is None else out.copy_(result)


def _shift(input: Any, dim: _Dims, sign: int) -> Any:
    from .ops._shape import wrap_dim
    from .ops.torch_extras import roll

    dims = range(input.ndim) if dim is None else ((dim,) if isinstance(dim, int) else dim)
    dims = [wrap_dim(d, input.ndim) for d in dims]
    shifts = [(input.shape[d] // 2) if sign > 0 else -(input.shape[d] // 2) for d in dims]
    if not dims:
        raise RuntimeError("`shifts` required")
    return roll(input, shifts, dims)


def fftshift(input: Any, dim: _Dims = None) -> Any:  # noqa: A002
    """Moves the zero-frequency bin to the centre (``roll`` by ``n // 2`` along ``dim``)."""
    return _shift(input, dim, 1)


def ifftshift(input: Any, dim: _Dims = None) -> Any:  # noqa: A002
    """The inverse of ``fftshift`` (``roll`` by ``-(n // 2)``)."""
    return _shift(input, dim, -1)
