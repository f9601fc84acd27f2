"""torch.fft's transforms as torch builds them: three primitive ops, ``_fft_c2c``,
``_fft_r2c`` and ``_fft_c2r`` (each one node: ``FftC2CBackward0``, ``FftR2CBackward0``,
``FftC2RBackward0``), under public functions that promote the input, resize it to the signal
length (``constant_pad_nd`` to pad, ``narrow`` to trim: their own nodes, as torch's), and
conjugate where torch does (``ifft``/``ihfft`` of a real input, ``hfft``). NumPy's pocketfft
(``np.fft``) computes; the result is cast back to torch's dtype (float32 -> complex64, float64
-> complex128).

Each op takes a normalization *mode*, torch's ``fft_norm_mode``: 0 none, 1 ``1/sqrt(n)``,
2 ``1/n`` (``n`` the product of the signal sizes), whatever the direction. The gradients are
torch's formulas, written with the ops themselves (so second derivatives work):

* c2c: the adjoint of a DFT is the DFT in the other direction with the same scaling;
* r2c: zero-fill the discarded half of a onesided gradient, inverse c2c, real part;
* c2r: a onesided r2c of the gradient, with the bins whose mirror image lies outside the
  onesided half (``1 .. n - n//2 - 1``) doubled (torch's Hermitian-doubling).

Forward mode is the op itself (every transform is linear).
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from .registry import AUTOCAST_FP32, LINEAR, OPAQUE, apply, defop

NORM_NONE, NORM_BY_ROOT_N, NORM_BY_N = 0, 1, 2


def _scaled(out: np.ndarray, sizes, norm: int) -> np.ndarray:
    n = math.prod(sizes)
    if norm == NORM_NONE or n == 0:
        return out
    out *= 1.0 / math.sqrt(n) if norm == NORM_BY_ROOT_N else 1.0 / n  # (out is a new array)
    return out


def _full_from_half(half: np.ndarray, dim: tuple, n: int) -> np.ndarray:
    """The full transform of a real signal from its onesided half (last of ``dim``, ``n``
    points), by Hermitian symmetry ``X[k] = conj(X[-k])``, as torch's r2c does: about a
    quarter of the cost of a complex transform."""
    last, h = dim[-1], half.shape[dim[-1]]
    shape = list(half.shape)
    shape[last] = n
    out = np.empty(shape, dtype=half.dtype)
    index = [slice(None)] * half.ndim
    index[last] = slice(0, h)
    out[tuple(index)] = half
    if n > h:
        mirror = half
        for d in dim[:-1]:  # index i -> (-i) mod n_d over the other transformed dims
            mirror = np.roll(np.flip(mirror, d), 1, d)
        src = [slice(None)] * half.ndim
        src[last] = slice(n - h, 0, -1)  # k = h .. n-1 reads the bin n - k
        index[last] = slice(h, n)
        out[tuple(index)] = np.conj(mirror[tuple(src)])
    return out


def _with_size(shape: tuple, dim: int, n: int) -> tuple:
    shape = list(shape)
    shape[dim] = n
    return tuple(shape)


# ---------------------------------------------------------------- the primitives


def _batch_rule(op, values, flags, params, size):
    """vmap: the transformed dims (non-negative) move past the batch dim."""
    if not flags[0]:
        return NotImplemented
    return apply(op, values[0], **dict(params, dim=tuple(d + 1 for d in params["dim"])))


def _c2c_impl(x, dim, norm, forward):
    if not dim:
        return x.copy()
    if len(dim) == 1:
        out = np.fft.fft(x, axis=dim[0]) if forward else \
            np.fft.ifft(x, axis=dim[0], norm="forward")
    else:
        out = np.fft.fftn(x, axes=dim) if forward else np.fft.ifftn(x, axes=dim, norm="forward")
    return _scaled(out, [x.shape[d] for d in dim], norm).astype(x.dtype, copy=False)


def _c2c_vjp(g, ans, x, dim, norm, forward):
    return apply(FFT_C2C, _as_complex(g), dim=dim, norm=norm, forward=not forward)


def _as_complex(g):
    return g if g.dtype.is_complex else g.to(g.dtype.to_complex())


FFT_C2C = defop("_fft_c2c", _c2c_impl, kind=OPAQUE,
                autocast=AUTOCAST_FP32,
                meta=lambda x, dim, norm, forward: (tuple(x.shape), x.dtype),
                node_name="FftC2CBackward0", vjp=(_c2c_vjp,), jvp=LINEAR, batch=_batch_rule,
                saved_names={"dim": ("param", "dim"), "normalization": ("param", "norm"),
                             "forward": ("param", "forward")})


def _r2c_meta(x, dim, norm, onesided):
    shape = tuple(x.shape)
    if onesided:
        shape = _with_size(shape, dim[-1], shape[dim[-1]] // 2 + 1)
    return shape, x.dtype.to_complex()


def _r2c_impl(x, dim, norm, onesided):
    out = np.fft.rfft(x, axis=dim[0]) if len(dim) == 1 else np.fft.rfftn(x, axes=dim)
    if not onesided:
        out = _full_from_half(out, dim, x.shape[dim[-1]])
    out = _scaled(out, [x.shape[d] for d in dim], norm)
    return out.astype(np.complex64 if x.dtype == np.float32 else np.complex128, copy=False)


def _r2c_vjp(g, ans, x, dim, norm, onesided):
    g = _as_complex(g)
    last, n = dim[-1], x.shape[dim[-1]]
    if onesided and g.shape[last] < n:  # the discarded half: zeros
        from .nn_ops2 import CONSTANT_PAD_ND

        pad = [0] * (2 * g.ndim)
        pad[2 * (g.ndim - 1 - last) + 1] = n - g.shape[last]
        g = apply(CONSTANT_PAD_ND, g, pad=tuple(pad), value=0.0)
    return apply(FFT_C2C, g, dim=dim, norm=norm, forward=False).real


FFT_R2C = defop("_fft_r2c", _r2c_impl, kind=OPAQUE, meta=_r2c_meta,
                autocast=AUTOCAST_FP32,
                node_name="FftR2CBackward0", vjp=(_r2c_vjp,), jvp=LINEAR, batch=_batch_rule,
                saved_names={"dim": ("param", "dim"), "normalization": ("param", "norm"),
                             "onesided": ("param", "onesided")})


def _c2r_meta(x, dim, norm, last_dim_size):
    return _with_size(tuple(x.shape), dim[-1], last_dim_size), x.dtype.to_real()


def _c2r_impl(x, dim, norm, last_dim_size):
    s = [x.shape[d] for d in dim[:-1]] + [last_dim_size]
    out = np.fft.irfft(x, n=last_dim_size, axis=dim[0], norm="forward") if len(dim) == 1 \
        else np.fft.irfftn(x, s=s, axes=dim, norm="forward")
    return _scaled(out, s, norm).astype(np.float32 if x.dtype == np.complex64 else np.float64,
                                        copy=False)


def _c2r_vjp(g, ans, x, dim, norm, last_dim_size):
    from .creation import host_device, tensor

    if g.dtype.is_complex:
        g = g.real
    gi = apply(FFT_R2C, g, dim=dim, norm=norm, onesided=True)
    last = dim[-1]
    m = gi.shape[last]
    double = last_dim_size - m  # bins 1 .. n - n//2 - 1 stand for two (their mirror images)
    if double > 0:
        w = np.ones(m)
        w[1:1 + double] = 2.0
        gi = gi * tensor(w.reshape((m,) + (1,) * (gi.ndim - 1 - last)), dtype=g.dtype,
                         device=host_device(gi))
    return gi


FFT_C2R = defop("_fft_c2r", _c2r_impl, kind=OPAQUE, meta=_c2r_meta,
                autocast=AUTOCAST_FP32,
                node_name="FftC2RBackward0", vjp=(_c2r_vjp,), jvp=LINEAR, batch=_batch_rule,
                saved_names={"dim": ("param", "dim"), "normalization": ("param", "norm"),
                             "last_dim_size": ("param", "last_dim_size")})


# ---------------------------------------------------------------- argument handling


def norm_mode(norm: str | None, forward: bool) -> int:
    """torch's ``norm_from_string``: the scaling of a transform in direction ``forward``."""
    if norm is None or norm == "backward":
        return NORM_NONE if forward else NORM_BY_N
    if norm == "forward":
        return NORM_BY_N if forward else NORM_NONE
    if norm == "ortho":
        return NORM_BY_ROOT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _promote(x, require_complex: bool = False):
    """torch's ``promote_tensor_fft``: integers to the default float dtype, optionally to the
    complex dtype; float16 and bfloat16 are refused (as torch on the CPU)."""
    from ..tensor import Tensor
    from .creation import tensor

    if not isinstance(x, Tensor):
        x = tensor(x)
    dt = x.dtype
    if dt in (dtypes.float16, getattr(dtypes, "bfloat16", None)):
        name = "Half" if dt is dtypes.float16 else "BFloat16"
        raise RuntimeError(f"Unsupported dtype {name}")
    if not (dt.is_floating_point or dt.is_complex):
        x = x.to(dtypes.get_default_dtype())
    if require_complex and not x.dtype.is_complex:
        x = x.to(x.dtype.to_complex())
    return x


def _wrap(dim: int, ndim: int) -> int:
    from ._shape import wrap_dim

    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return wrap_dim(int(dim), ndim)


def _resize(x, dims, sizes):
    """torch's ``resize_fft_input``: trim (``narrow``) or zero-pad (``constant_pad_nd``) each
    of ``dims`` to its size in ``sizes``."""
    from .movement import narrow
    from .nn_ops2 import CONSTANT_PAD_ND

    pad = [0] * (2 * x.ndim)
    for d, n in zip(dims, sizes):
        if x.shape[d] > n:
            x = narrow(x, d, 0, n)
        elif x.shape[d] < n:
            pad[2 * (x.ndim - 1 - d) + 1] = n - x.shape[d]
    return apply(CONSTANT_PAD_ND, x, pad=tuple(pad), value=0.0) if any(pad) else x


def _check_n(n: int) -> None:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _real_input(name: str, x, kind: str = "real"):
    from ..tensor import Tensor

    if isinstance(x, Tensor) and x.dtype.is_complex:
        raise RuntimeError(f"{name} expects a {kind} input tensor, but got "
                           f"{x.dtype._scalar_name}")
    return _promote(x)


def _shape_and_dims(x, s, dim):
    """torch's ``canonicalize_fft_shape_and_dim_args``: (sizes, dims) of an n-d transform."""
    ndim = x.ndim
    if dim is not None:
        dims = [_wrap(d, ndim) for d in ((dim,) if isinstance(dim, int) else dim)]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = (s,) if isinstance(s, int) else tuple(s)
        if dim is not None and len(dims) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                               f"{ndim} dimensions.")
        if dim is None:
            dims = list(range(ndim - len(s), ndim))
        sizes = [x.shape[d] if n == -1 else int(n) for d, n in zip(dims, s)]
    elif dim is None:
        dims, sizes = list(range(ndim)), list(x.shape)
    else:
        sizes = [x.shape[d] for d in dims]
    for n in sizes:
        _check_n(n)
    return sizes, tuple(dims)


# ---------------------------------------------------------------- the transforms


def c2c(name: str, x, n, dim: int, norm, forward: bool):
    del name
    d = _wrap(dim, x.ndim)
    n = x.shape[d] if n is None else int(n)
    _check_n(n)
    x = _resize(x, (d,), (n,))
    return apply(FFT_C2C, x, dim=(d,), norm=norm_mode(norm, forward), forward=forward)


def r2c(name: str, x, n, dim: int, norm, forward: bool, onesided: bool):
    x = _real_input(name, x)
    d = _wrap(dim, x.ndim)
    n = x.shape[d] if n is None else int(n)
    _check_n(n)
    x = _resize(x, (d,), (n,))
    out = apply(FFT_R2C, x, dim=(d,), norm=norm_mode(norm, forward), onesided=onesided)
    return out if forward else out.conj()


def c2r(name: str, x, n, dim: int, norm, forward: bool):
    del name
    x = _promote(x, require_complex=True)
    d = _wrap(dim, x.ndim)
    last = 2 * (x.shape[d] - 1) if n is None else int(n)
    _check_n(last)
    if n is not None:
        x = _resize(x, (d,), (last // 2 + 1,))
    mode = norm_mode(norm, forward)
    if forward:
        x = x.conj()
    return apply(FFT_C2R, x, dim=(d,), norm=mode, last_dim_size=last)


def c2c_n(name: str, x, s, dim, norm, forward: bool):
    del name
    x = _promote(x, require_complex=True)
    sizes, dims = _shape_and_dims(x, s, dim)
    x = _resize(x, dims, sizes)
    return apply(FFT_C2C, x, dim=dims, norm=norm_mode(norm, forward), forward=forward)


def r2c_n(name: str, x, s, dim, norm, forward: bool):
    x = _real_input(name, x, "real-valued")
    sizes, dims = _shape_and_dims(x, s, dim)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    x = _resize(x, dims, sizes)
    out = apply(FFT_R2C, x, dim=dims, norm=norm_mode(norm, forward), onesided=True)
    return out if forward else out.conj()


def c2r_n(name: str, x, s, dim, norm, forward: bool):
    x = _promote(x, require_complex=True)
    sizes, dims = _shape_and_dims(x, s, dim)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    last = sizes[-1] if s is not None and tuple((s,) if isinstance(s, int) else s)[-1] != -1 \
        else 2 * (x.shape[dims[-1]] - 1)
    _check_n(last)
    sizes[-1] = last // 2 + 1
    x = _resize(x, dims, sizes)
    if forward:
        x = x.conj()
    return apply(FFT_C2R, x, dim=dims, norm=norm_mode(norm, forward), last_dim_size=last)


def hfft_n(name: str, x, s, dim, norm):
    """torch's ``hfftn``: a c2c over all but the last of ``dim``, then a conjugated c2r."""
    x = _promote(x, require_complex=True)
    sizes, dims = _shape_and_dims(x, s, dim)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    last = sizes[-1] if s is not None and tuple((s,) if isinstance(s, int) else s)[-1] != -1 \
        else 2 * (x.shape[dims[-1]] - 1)
    _check_n(last)
    sizes[-1] = last // 2 + 1
    x = _resize(x, dims, sizes)
    mode = norm_mode(norm, True)
    if len(dims) > 1:
        x = apply(FFT_C2C, x, dim=dims[:-1], norm=mode, forward=True)
    return apply(FFT_C2R, x.conj(), dim=dims[-1:], norm=mode, last_dim_size=last)


def ihfft_n(name: str, x, s, dim, norm):
    """torch's ``ihfftn``: a onesided r2c over the last of ``dim``, conjugated, then an
    inverse c2c over the others."""
    from ..tensor import Tensor

    if isinstance(x, Tensor) and x.dtype.is_complex:
        raise RuntimeError(f"Only supports floating-point dtypes, but found: "
                           f"{x.dtype._scalar_name}")
    x = _promote(x)
    sizes, dims = _shape_and_dims(x, s, dim)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    x = _resize(x, dims, sizes)
    mode = norm_mode(norm, False)
    out = apply(FFT_R2C, x, dim=dims[-1:], norm=mode, onesided=True).conj()
    if len(dims) == 1:
        return out
    return apply(FFT_C2C, out, dim=dims[:-1], norm=mode, forward=False)
