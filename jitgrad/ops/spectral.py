"""torch's window functions (``hann_window``, ``hamming_window``, ``bartlett_window``,
``blackman_window``, ``kaiser_window``) and the short-time Fourier transform (``stft``,
``istft``; also Tensor methods).

A window is computed by torch's recipe, step by step in ``dtype`` (rounded where torch's
kernels round; bfloat16 windows are float32 ones rounded; a periodic window is the symmetric
one of ``window_length + 1`` points without its last). torch's float32 ``cos`` is within an ulp
of the correctly rounded one used here: 3% of float32 window entries are an ulp apart.
``stft`` is torch's composition: the signal padded by ``n_fft // 2`` on both sides
(``center=True``, with ``pad_mode``), framed (``Tensor.unfold``), multiplied by the window
(zero-padded to ``n_fft`` about its centre), then one ``_fft_r2c`` (or ``_fft_c2c`` for complex
input or window) over the frames; ``istft`` inverts each frame (``_fft_c2r``/``_fft_c2c``),
multiplies it by the window, overlap-adds (``unfold_backward``) and divides by the overlap-added
squared window. Both are differentiable in the signal and the window.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .. import _config, dtypes
from .autocast_policy import FP32, autocast_policy
from .fft_ops import FFT_C2C, FFT_C2R, FFT_R2C, NORM_BY_N, NORM_BY_ROOT_N, NORM_NONE
from .registry import apply, state
from .surface import public

_C_NAMES = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
            "uint8": "unsigned char", "bool": "bool"}


def _window_dtype(name: str, dtype: Any) -> dtypes.dtype:
    dt = dtypes.get_default_dtype() if dtype is None else dtype
    if dt.is_complex:
        raise NotImplementedError(
            f'"arange_cpu" not implemented for \'{dt._scalar_name}\'')
    if not dt.is_floating_point:
        raise RuntimeError(
            f"{name} expects floating point dtypes, got: TensorOptions(dtype="
            f"{_C_NAMES.get(dt.name, dt.name)}, device=cpu, layout=Strided (default), "
            "requires_grad=false (default), pinned_memory=false, memory_format=(nullopt))")
    return dt


def _window(name: str, window_length: int, periodic: bool, formula, dtype: Any, device: Any,
            requires_grad: bool):
    from .creation import tensor

    dt = _window_dtype(name, dtype)
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    if window_length <= 1:
        values = np.ones(window_length)
    else:
        n = window_length + 1 if periodic else window_length
        work = {dtypes.float64: np.float64, dtypes.float16: np.float16}.get(dt, np.float32)
        values = formula(np.arange(n, dtype=work), n, work)
        if periodic:
            values = values[:-1]
    return tensor(values, dtype=dt, device=device, requires_grad=requires_grad)


def _cos(x: np.ndarray) -> np.ndarray:
    """``cos`` rounded once to ``x``'s dtype (torch's float32 cos is within an ulp of it)."""
    return np.cos(x.astype(np.float64)).astype(x.dtype)


def _cosine_sum(alpha: float, beta: float):
    """torch's ``arange(n).mul_(2 pi / (n - 1)).cos_().mul_(-beta).add_(alpha)``, each scalar
    in the window's dtype."""
    def formula(k, n, work):
        t = _cos(k * work(2 * math.pi / (n - 1)))
        return t * work(-beta) + work(alpha)
    return formula


@public("hann_window")
def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                layout: Any = None, device: Any = None, requires_grad: bool = False):
    """The Hann window: ``0.5 - 0.5 cos(2 pi n / (N - 1))``."""
    return _window("hann_window", window_length, periodic, _cosine_sum(0.5, 0.5), dtype, device,
                   requires_grad)


@public("hamming_window")
def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype: Any = None, layout: Any = None,
                   device: Any = None, requires_grad: bool = False):
    """The Hamming window: ``alpha - beta cos(2 pi n / (N - 1))``."""
    return _window("hamming_window", window_length, periodic, _cosine_sum(alpha, beta), dtype,
                   device, requires_grad)


@public("bartlett_window")
def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    layout: Any = None, device: Any = None, requires_grad: bool = False):
    """The Bartlett (triangular) window: ``1 - |2 n / (N - 1) - 1|``."""
    def formula(k, n, work):  # (torch: arange(n) * 2 / (n - 1), its second half 2 - that)
        t = k * work(2.0 / (n - 1))
        half = ((n - 1) >> 1) + 1
        t[half:] = t[half:] * work(-1) + work(2)
        return t
    return _window("bartlett_window", window_length, periodic, formula, dtype, device,
                   requires_grad)


@public("blackman_window")
def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    layout: Any = None, device: Any = None, requires_grad: bool = False):
    """The Blackman window: ``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``."""
    def formula(k, n, work):  # (torch: t = arange(n) * pi / (n - 1); the sum in this order)
        t = k * work(math.pi / (n - 1))
        return (_cos(t * work(4)) * work(0.08) - _cos(t * work(2)) * work(0.5)) + work(0.42)
    return _window("blackman_window", window_length, periodic, formula, dtype, device,
                   requires_grad)


@public("kaiser_window")
def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype: Any = None, layout: Any = None, device: Any = None,
                  requires_grad: bool = False):
    """The Kaiser window: ``I0(beta sqrt(1 - (2 n / (N - 1) - 1)^2)) / I0(beta)``."""
    return _window("kaiser_window", window_length, periodic,
                   lambda k, n, work: np.kaiser(n, beta), dtype, device, requires_grad)


# ---------------------------------------------------------------- stft / istft


def _desc(x) -> str:
    return f"torch.{x.dtype._legacy}[{', '.join(str(n) for n in x.shape)}]"


def _window_desc(w) -> str:
    return "None" if w is None else \
        f"torch.{w.dtype._legacy}{{[{', '.join(str(n) for n in w.shape)}]}}"


def _opt(v) -> str:
    return "None" if v is None else str(int(v))


def _centred_window(window, win_length: int, n_fft: int, like):
    """The window (ones when None) zero-padded to ``n_fft`` about its centre."""
    from .creation import ones
    from .nn_ops2 import CONSTANT_PAD_ND

    if window is None:
        window = ones(win_length, dtype=like.dtype.to_real(), device=like.device)
    left = (n_fft - win_length) // 2
    if left or n_fft - win_length - left:
        window = apply(CONSTANT_PAD_ND, window, pad=(left, n_fft - win_length - left), value=0.0)
    return window


def _pad_signal(x, pad: int, mode: str):
    """torch.stft's centring: ``F.pad`` of the signal (as a 3-d batch) by ``pad`` each side."""
    from .creation import host_device, tensor
    from .nn_ops2 import CONSTANT_PAD_ND, GATHER_PADS, pad_positions

    x3 = x.reshape((1,) * (3 - x.ndim) + tuple(x.shape))
    if mode == "constant":
        out = apply(CONSTANT_PAD_ND, x3, pad=(pad, pad), value=0.0)
    elif mode in ("reflect", "replicate"):
        n = x3.shape[-1]
        if mode == "reflect" and pad >= n:
            raise RuntimeError(
                f"Argument #4: Padding size should be less than the corresponding input "
                f"dimension, but got: padding ({pad}, {pad}) at dimension 2 of input "
                f"{list(x3.shape)}")
        out = apply(GATHER_PADS[mode, 1], x3, padding=(pad, pad))
    elif mode == "circular":
        if pad > x3.shape[-1]:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        out = x3.index_select(2, tensor(pad_positions(mode, x3.shape[-1], pad, pad),
                                        device=host_device(x3)))
    else:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    return out.reshape(tuple(out.shape[3 - x.ndim:]))


@public("stft", method=True)
@autocast_policy(FP32)
def stft(input: Any, n_fft: int, hop_length: int | None = None,  # noqa: A002
         win_length: int | None = None, window: Any = None, center: bool = True,
         pad_mode: str = "reflect", normalized: bool = False, onesided: bool | None = None,
         return_complex: bool | None = None, align_to_window: bool | None = None):
    """The short-time Fourier transform of a 1-d signal or a batch of them: ``(freq, frames)``
    (``(batch, freq, frames)``) complex values, ``freq = n_fft // 2 + 1`` when onesided."""
    from .torch_extras2 import unfold

    if center:
        input = _pad_signal(input, n_fft // 2, pad_mode)  # noqa: A001
    if window is None:  # (torch warns first, before its checks)
        _config.warn_once("stft-window", "A window was not provided. A rectangular window will "
                          "be applied,which is known to cause spectral leakage. Other windows "
                          "such as torch.hann_window or torch.hamming_window are recommended to "
                          "reduce spectral leakage.To suppress this warning and use a rectangular "
                          "window, explicitly set `window=torch.ones(n_fft, device=<device>)`.")
    complex_input = input.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None and not complex_input:
        raise RuntimeError("stft requires the return_complex parameter be given for real "
                           "inputs, and will further require that return_complex=True in a "
                           "future PyTorch release.")
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    prefix = (f"stft({_desc(input)}, n_fft={n_fft}, hop_length={hop}, win_length={win}, "
              f"window={_window_desc(window)}, normalized={int(normalized)}, "
              f"onesided={_opt(onesided)}, return_complex={_opt(return_complex)}, "
              f"align_to_window={_opt(align_to_window)}) : ")
    if input.ndim not in (1, 2):
        raise RuntimeError(prefix + "expected a 1D or 2D tensor")
    x = input.unsqueeze(0) if input.ndim == 1 else input
    length = x.shape[1]
    if not 0 < n_fft <= length:
        raise RuntimeError(prefix + f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(prefix + f"expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(prefix + f"expected 0 < win_length <= n_fft, but got "
                                    f"win_length={win}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise RuntimeError(prefix + f"expected a 1D window tensor of size equal to "
                                    f"win_length={win}, but got window with size "
                                    f"{list(window.shape)}")
    if not x.dtype.is_floating_point and not x.dtype.is_complex:
        x = x.to(dtypes.get_default_dtype())
    frames = unfold(x, 1, n_fft, hop)  # (batch, frames, n_fft)
    if window is not None or win < n_fft:  # (no window: ones over win_length, centred)
        frames = frames * _centred_window(window, win, n_fft, frames)
    one = onesided if onesided is not None else not complex_input
    norm = NORM_BY_ROOT_N if normalized else NORM_NONE
    if complex_input:
        if one:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        if not frames.dtype.is_complex:
            frames = frames.to(frames.dtype.to_complex())
        out = apply(FFT_C2C, frames, dim=(2,), norm=norm, forward=True)
    else:
        out = apply(FFT_R2C, frames, dim=(2,), norm=norm, onesided=bool(one))
    out = out.transpose(1, 2)
    if input.ndim == 1:
        out = out.squeeze(0)
    if return_complex:
        return out
    warnings.warn("stft with return_complex=False is deprecated. In a future pytorch release, "
                  "stft will return complex tensors for all inputs, and return_complex=False "
                  "will raise an error.", UserWarning, stacklevel=2)
    from .movement import stack

    return stack([out.real, out.imag], -1)


@public("istft", method=True)
def istft(input: Any, n_fft: int, hop_length: int | None = None,  # noqa: A002
          win_length: int | None = None, window: Any = None, center: bool = True,
          normalized: bool = False, onesided: bool | None = None, length: int | None = None,
          return_complex: bool = False):
    """The inverse of ``stft`` (least-squares overlap-add of the inverse-transformed frames)."""
    from .torch_extras2 import UNFOLD_BACKWARD

    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    prefix = (f"istft(CPU{input.dtype._scalar_name}Type"
              f"[{', '.join(str(n) for n in input.shape)}], n_fft={n_fft}, hop_length={hop}, "
              f"win_length={win}, window={_window_desc(window)}, center={int(center)}, "
              f"normalized={int(normalized)}, onesided={_opt(onesided)}, "
              f"length={'None' if length is None else length}, "
              f"return_complex={int(return_complex)}) ")
    if input.ndim not in (2, 3):
        raise RuntimeError(prefix + f": expected a tensor with 3 or 4 dimensions of "
                                    f"complex, but got {input.ndim}")
    x = input.unsqueeze(0) if input.ndim == 2 else input
    fft_size, n_frames = x.shape[1], x.shape[2]
    if not 0 < hop <= win:
        raise RuntimeError(prefix + ": expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        raise RuntimeError(prefix + ": expected 0 < win_length <= n_fft")
    one = onesided if onesided is not None else fft_size != n_fft
    if one and n_fft // 2 + 1 != fft_size:
        raise RuntimeError(prefix + ": expected the frequency dimension (3rd to the last) of "
                                    "the input tensor to match n_fft / 2 + 1 when "
                                    f"onesided=True, but got {fft_size}")
    if not one and n_fft != fft_size:
        raise RuntimeError(prefix + ": expected the frequency dimension (3rd to the last) of "
                                    "the input tensor to match n_fft when onesided=False, but "
                                    f"got {fft_size}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise RuntimeError(prefix + ": expected a 1D window tensor of size equal to "
                                    f"win_length={win}, but got window with size "
                                    f"{list(window.shape)}")
    if window is None:
        _config.warn_once("istft-window", "A window was not provided. A rectangular window will "
                          "be applied.Please provide the same window used by stft to make the "
                          "inversion lossless.To suppress this warning and use a rectangular "
                          "window, explicitly set `window=torch.ones(n_fft, device=<device>)`.")
    w = _centred_window(window, win, n_fft, x)
    frames = x.transpose(1, 2)  # (batch, frames, freq)
    norm = NORM_BY_ROOT_N if normalized else NORM_BY_N
    if return_complex:
        if one:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = apply(FFT_C2C, frames, dim=(2,), norm=norm, forward=False)
    elif one:
        frames = apply(FFT_C2R, frames, dim=(2,), norm=norm, last_dim_size=n_fft)
    else:
        frames = apply(FFT_C2C, frames, dim=(2,), norm=norm, forward=False).real
    total = n_fft + hop * (n_frames - 1)
    y = apply(UNFOLD_BACKWARD, frames * w, shape=(x.shape[0], total), dimension=1, size=n_fft,
              step=hop)
    envelope = apply(UNFOLD_BACKWARD, (w * w).expand(1, n_frames, n_fft), shape=(1, total),
                     dimension=1, size=n_fft, step=hop)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (total - n_fft // 2 if center else total)
    stop = min(end, total)
    y, envelope = y[:, start:stop], envelope[:, start:stop]
    # (eager only: under jit the values are abstract, and a vanishing envelope gives inf/nan)
    if not state.traces and bool((envelope.abs() < 1e-11).any()):
        raise RuntimeError(prefix + "window overlap add min: 1\n[ CPUBoolType{} ]")
    y = y / envelope
    if input.ndim == 2:
        y = y.squeeze(0)
    if end > total:
        from .nn_ops2 import CONSTANT_PAD_ND

        _config.warn_once("istft-length", "The length of signal is shorter than the length "
                          "parameter. Result is being padded with zeros in the tail. Please check "
                          "your center and hop_length settings.")
        y = apply(CONSTANT_PAD_ND, y, pad=(0, end - total), value=0.0)
    return y
