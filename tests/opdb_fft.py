"""opdb records of ``jitgrad.fft`` (``jitgrad/ops/fft_ops.py``), appended to ``opdb.OP_DB``.

The sweeps compare real outputs, so a complex result is returned as its real and imaginary
parts (``z.real * 1.0``: a ``MulBackward0`` on jitgrad and on torch alike, where torch's bare
``z.real`` is a ``SelectBackward0`` of a view); a complex input is made of two real sample
arrays, ``re + 1j * im`` (both differentiated). Every transform is linear, so the second
derivatives are those of the rules themselves (each rule is the op in the other direction).
"""

from __future__ import annotations

import numpy as np


def _parts(z):
    return (z.real * 1.0, z.imag * 1.0) if z.dtype.is_complex else z


def _real_call(f, x, **kw):
    return _parts(f(x, **kw))


def _complex_call(f, re, im, **kw):
    return _parts(f(re + 1j * im, **kw))


def _np_parts(z):
    return (z.real, z.imag) if np.iscomplexobj(z) else z


def _ref1(name: str, complex_input: bool = False):
    def ref(*arrays, n=None, dim=-1, norm=None):
        x = arrays[0] + 1j * arrays[1] if complex_input else arrays[0]
        return _np_parts(getattr(np.fft, name)(x, n=n, axis=dim, norm=norm))
    return ref


def _refn(name: str, complex_input: bool = False, two: bool = False):
    def ref(*arrays, s=None, dim=None, norm=None):
        x = arrays[0] + 1j * arrays[1] if complex_input else arrays[0]
        axes = (-2, -1) if two and dim is None else dim
        if axes is None and s is not None:  # torch's default: the last len(s) dims
            axes = tuple(range(x.ndim - len(s), x.ndim))
        if s is not None and axes is not None and -1 in s:  # numpy has no -1 size
            s = tuple(x.shape[a] if k == -1 else k for a, k in zip(axes, s))
        fn = {"hfftn": _np_hfftn, "hfft2": _np_hfftn, "ihfftn": _np_ihfftn,
              "ihfft2": _np_ihfftn}.get(name) or getattr(np.fft, name)
        if fn is not getattr(np.fft, name, None) and axes is None:
            axes = tuple(range(x.ndim))
        return _np_parts(fn(x, s=s, axes=axes, norm=norm))
    return ref


_SWAP = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _np_hfftn(x, s=None, axes=None, norm=None):
    """NumPy has no hfftn: the irfftn of the conjugate with the norm swapped (as its hfft)."""
    return np.fft.irfftn(np.conj(x), s=s, axes=axes, norm=_SWAP[norm])


def _np_ihfftn(x, s=None, axes=None, norm=None):
    return np.conj(np.fft.rfftn(x, s=s, axes=axes, norm=_SWAP[norm]))


def fft_records() -> list:
    """The records (``opdb.OpInfo``); opdb's helpers are imported here, when opdb calls this."""
    from opdb import OpInfo, _arr, _many, _s

    tol = {"rtol": {"float32": 1e-4, "float64": 1e-9},
           "atol": {"float32": 1e-4, "float64": 1e-10}}

    def real1(name, path, np_name, *samples):
        return OpInfo(name, path, _many(*samples), _ref1(np_name), call=_real_call, **tol)

    def cplx1(name, path, np_name, *samples):
        return OpInfo(name, path, _many(*samples), _ref1(np_name, True), call=_complex_call,
                      **tol)

    def realn(name, path, np_name, *samples, two=False):
        return OpInfo(name, path, _many(*samples), _refn(np_name, two=two), call=_real_call,
                      **tol)

    def cplxn(name, path, np_name, *samples, two=False):
        return OpInfo(name, path, _many(*samples), _refn(np_name, True, two),
                      call=_complex_call, **tol)

    x, re_im = _arr(3, 8), (_arr(3, 6), _arr(3, 6))
    return [
        real1("fft.fft", "fft.fft", "fft", _s(x, name="real"),
              _s(x, n=5, dim=0, name="pad_dim0"), _s(x, n=5, norm="ortho", name="trim_ortho")),
        cplx1("fft.fft_complex", "fft.fft", "fft", _s(*re_im, name="c2c"),
              _s(*re_im, n=9, norm="forward", name="pad_forward")),
        real1("fft.ifft", "fft.ifft", "ifft", _s(x, name="real"),
              _s(x, n=6, norm="ortho", name="trim_ortho")),
        cplx1("fft.ifft_complex", "fft.ifft", "ifft", _s(*re_im, name="c2c"),
              _s(*re_im, n=4, dim=0, norm="forward", name="pad_dim0")),
        real1("fft.rfft", "fft.rfft", "rfft", _s(x, name="even"),
              _s(x, n=7, name="trim_odd"), _s(x, n=11, norm="ortho", name="pad_ortho")),
        cplx1("fft.irfft", "fft.irfft", "irfft", _s(*re_im, name="default_n"),
              _s(*re_im, n=9, name="odd_n"), _s(*re_im, n=4, norm="ortho", name="trim"),
              _s(*re_im, n=14, norm="forward", name="pad")),
        cplx1("fft.hfft", "fft.hfft", "hfft", _s(*re_im, name="default_n"),
              _s(*re_im, n=7, norm="ortho", name="odd_n")),
        real1("fft.ihfft", "fft.ihfft", "ihfft", _s(x, name="even"),
              _s(x, n=5, norm="forward", name="odd_n")),
        cplxn("fft.fftn", "fft.fftn", "fftn", _s(*re_im, name="all"),
              _s(*re_im, s=(4, 5), norm="ortho", name="s")),
        realn("fft.fftn_real", "fft.fftn", "fftn", _s(x, dim=(0,), name="dim0")),
        cplxn("fft.ifftn", "fft.ifftn", "ifftn", _s(*re_im, s=(2, 7), dim=(1, 0), name="s_dim")),
        realn("fft.rfftn", "fft.rfftn", "rfftn", _s(x, name="all"),
              _s(x, s=(4, 5), norm="forward", name="s_odd")),
        cplxn("fft.irfftn", "fft.irfftn", "irfftn", _s(*re_im, name="all"),
              _s(*re_im, s=(4, 7), norm="ortho", name="s_odd")),
        cplxn("fft.fft2", "fft.fft2", "fft2", _s(*re_im, name="last2"), two=True),
        cplxn("fft.ifft2", "fft.ifft2", "ifft2", _s(*re_im, norm="ortho", name="ortho"),
              two=True),
        realn("fft.rfft2", "fft.rfft2", "rfft2", _s(x, s=(2, 6), name="s"), two=True),
        cplxn("fft.irfft2", "fft.irfft2", "irfft2", _s(*re_im, name="last2"), two=True),
        cplxn("fft.hfftn", "fft.hfftn", "hfftn", _s(*re_im, name="all"),
              _s(*re_im, s=(2, 5), norm="ortho", name="s_odd")),
        realn("fft.ihfftn", "fft.ihfftn", "ihfftn", _s(x, name="all"),
              _s(x, s=(4, 5), norm="forward", name="s_odd")),
        cplxn("fft.hfft2", "fft.hfft2", "hfft2", _s(*re_im, name="last2"), two=True),
        realn("fft.ihfft2", "fft.ihfft2", "ihfft2", _s(x, name="last2"), two=True),
        OpInfo("fft.fftshift", "fft.fftshift", _many(_s(x, name="all"), _s(x, dim=1, name="d1")),
               lambda a, dim=None: np.fft.fftshift(a, axes=dim)),
        OpInfo("fft.ifftshift", "fft.ifftshift", _many(_s(_arr(3, 5), name="all")),
               lambda a, dim=None: np.fft.ifftshift(a, axes=dim)),
        # the complex views the transforms' callers pair them with (rotary embeddings, spectra)
        OpInfo("view_as_real", "view_as_real",
               _many(_s(*re_im, name="matrix"), _s(_arr(5), _arr(5), name="vector")),
               lambda re, im: np.stack([re, im], -1),
               call=lambda f, re, im: f(re + 1j * im) * 1.0, gradgrad=False),
        OpInfo("angle_complex", "angle", _many(_s(*re_im, name="matrix")),
               lambda re, im: np.angle(re + 1j * im), call=lambda f, re, im: f(re + 1j * im)),
        OpInfo("view_as_complex", "view_as_complex",
               _many(_s(_arr(3, 2), name="matrix"), _s(_arr(2, 4, 2), name="batch")),
               lambda x: (x[..., 0], x[..., 1]), gradgrad=False,
               # (contiguous: the sweeps also pass strided slices, which torch refuses to view)
               call=lambda f, x: _parts(f(x.contiguous()))),
    ]
