"""``trapezoid`` (``trapz``), ``cumulative_trapezoid`` and ``gradient``: torch's numerical
integration and differentiation of sampled functions, compositions of jitgrad ops (so they
differentiate, again, through those ops)."""

from __future__ import annotations

from .surface import public


def _last(y, dim: int):
    return y.movedim(dim, -1)


def _spacing(y, x, dx, dim):
    """The interval widths along the (moved-to-last) ``dim``: a number or a tensor."""
    if x is None:
        return 1.0 if dx is None else dx
    if x.ndim == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"trapezoid: There must be one `x` value for each sample point. "
                               f"Got {x.shape[0]} x values and {y.shape[dim]} sample points")
        return x[1:] - x[:-1]
    xl = _last(x, dim)
    return xl[..., 1:] - xl[..., :-1]


def _pieces(y, x, dx, dim):
    yl = _last(y, dim)
    return (yl[..., 1:] + yl[..., :-1]) * _spacing(y, x, dx, dim) / 2


def _check_input(name: str, y) -> None:
    if y.dtype.is_complex or y.dtype.is_floating_point:
        return
    if y.dtype.name == "bool":
        raise RuntimeError(f"{name}: received a bool input for `y`, but bool is not supported")


@public("trapezoid")
def trapezoid(y, x=None, *, dx=None, dim: int = -1):
    """The trapezoidal rule along ``dim``: ``sum((y[i] + y[i-1]) / 2 * (x[i] - x[i-1]))``
    with sample points ``x`` (1-D, or broadcastable to ``y``) or a constant spacing ``dx``
    (default 1)."""
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments: pass "
                        "either x or dx")
    if not hasattr(x, "shape") and x is not None:  # trapezoid(y, 0.5): the spacing
        x, dx = None, x
    _check_input("trapezoid", y)
    if y.shape[dim] == 0:
        return (_last(y, dim) * 1.0).sum(-1)
    return _pieces(y, x, dx, dim).sum(-1)


@public("trapz")
def trapz(y, x=None, *, dx=None, dim: int = -1):
    """``trapezoid`` (torch's older name)."""
    return trapezoid(y, x, dx=dx, dim=dim)


@public("cumulative_trapezoid")
def cumulative_trapezoid(y, x=None, *, dx=None, dim: int = -1):
    """The running trapezoidal rule along ``dim`` (one value fewer than ``y`` has)."""
    from .scan import cumsum

    if x is not None and dx is not None:
        raise TypeError("cumulative_trapezoid() received an invalid combination of arguments: "
                        "pass either x or dx")
    if not hasattr(x, "shape") and x is not None:
        x, dx = None, x
    _check_input("cumulative_trapezoid", y)
    if y.shape[dim] == 0:
        return y.movedim(dim, -1).movedim(-1, dim) * 1.0
    return cumsum(_pieces(y, x, dx, dim), -1).movedim(-1, dim)


def _gradient_1d(f, h, edge_order: int):
    """The derivative along the last dim of ``f``; ``h`` a number or 1-D coordinates."""
    from .movement import cat

    if isinstance(h, (int, float)):
        mid = (f[..., 2:] - f[..., :-2]) / (2 * h)
        if edge_order == 1:
            first = (f[..., 1:2] - f[..., :1]) / h
            last = (f[..., -1:] - f[..., -2:-1]) / h
        else:
            first = (-1.5 * f[..., :1] + 2 * f[..., 1:2] - 0.5 * f[..., 2:3]) / h
            last = (0.5 * f[..., -3:-2] - 2 * f[..., -2:-1] + 1.5 * f[..., -1:]) / h
        return cat([first, mid, last], -1)
    x = h.to(f.dtype) if not f.dtype.is_complex else h
    hs, hd = x[1:-1] - x[:-2], x[2:] - x[1:-1]
    mid = (-hd / (hs * (hs + hd)) * f[..., :-2] + (hd - hs) / (hs * hd) * f[..., 1:-1]
           + hs / (hd * (hs + hd)) * f[..., 2:])
    if edge_order == 1:
        first = (f[..., 1:2] - f[..., :1]) / (x[1] - x[0])
        last = (f[..., -1:] - f[..., -2:-1]) / (x[-1] - x[-2])
    else:
        d1, d2 = x[1] - x[0], x[2] - x[1]
        first = (-(2 * d1 + d2) / (d1 * (d1 + d2)) * f[..., :1] + (d1 + d2) / (d1 * d2)
                 * f[..., 1:2] - d1 / (d2 * (d1 + d2)) * f[..., 2:3])
        d1, d2 = x[-2] - x[-3], x[-1] - x[-2]
        last = (d2 / (d1 * (d1 + d2)) * f[..., -3:-2] - (d1 + d2) / (d1 * d2) * f[..., -2:-1]
                + (2 * d2 + d1) / (d2 * (d1 + d2)) * f[..., -1:])
    return cat([first, mid, last], -1)


@public("gradient")
def gradient(input, *, spacing=1, dim=None, edge_order: int = 1):  # noqa: A002
    """The derivatives of the sampled function ``input`` along each of ``dim`` (default: every
    dimension), by second-order central differences inside and ``edge_order`` one-sided ones
    at the edges. ``spacing``: one number for all dims, one per dim, or per-dim 1-D tensors of
    coordinates. Returns a tuple of tensors (one per dim)."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = list(range(input.ndim)) if dim is None else (
        [dim] if isinstance(dim, int) else list(dim))
    dims = [d % input.ndim for d in dims]
    if isinstance(spacing, (int, float)) or getattr(spacing, "ndim", None) == 0:
        steps = [float(spacing)] * len(dims)
    else:
        steps = list(spacing)
        if len(steps) == 1 and len(dims) > 1 and isinstance(steps[0], (int, float)):
            steps = steps * len(dims)
        if len(steps) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                               f"it's spacing and dim arguments to have the same length, but "
                               f"got a spacing argument of length {len(steps)} and a dim "
                               f"argument of length {len(dims)}.")
    f = input if (input.dtype.is_floating_point or input.dtype.is_complex) else input.float()
    out = []
    for d, h in zip(dims, steps):
        if f.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
        if hasattr(h, "shape") and h.ndim == 0:
            h = float(h.item())
        out.append(_gradient_1d(f.movedim(d, -1), h, edge_order).movedim(-1, d))
    return tuple(out)
