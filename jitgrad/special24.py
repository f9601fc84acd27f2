"""torch.special's Bessel, Airy, error-function, incomplete-gamma, zeta and orthogonal-polynomial
functions (re-exported by ``jitgrad.special``), each with torch's ``out=`` argument.

The ops live in ``ops/special24.py`` (Bessel-type functions, ``erfcx``, ``log_ndtr``,
``ndtri``), ``ops/special24_gamma.py`` (``gammainc``/``gammaincc`` = ``igamma``/``igammac``,
``zeta``) and ``ops/special24_poly.py`` (the polynomials). Gradients exist where torch defines
them (``i0``, ``i0e``, ``i1``, ``i1e``, ``erfcx``, ``log_ndtr``, ``ndtri``; ``gammainc``,
``gammaincc`` and ``zeta`` with respect to their second argument only); the Bessel, Airy and
polynomial functions are not differentiable (their results do not require grad), as in torch.
"""

from __future__ import annotations

from typing import Any

from .ops import special24 as _b
from .ops import special24_gamma as _g
from .ops import special24_poly as _p
from .ops.numpy_compat import torch_names
from .ops.out_arg import write_out
from .ops.registry import OpDef, apply
from .ops.surface import need_tensor

__all__ = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
           "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "erfcx", "gammainc", "gammaincc", "hermite_polynomial_h",
           "hermite_polynomial_he", "i0", "i0e", "i1", "i1e", "laguerre_polynomial_l",
           "legendre_polynomial_p", "log_ndtr", "modified_bessel_i0", "modified_bessel_i1",
           "modified_bessel_k0", "modified_bessel_k1", "ndtri", "scaled_modified_bessel_k0",
           "scaled_modified_bessel_k1", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "spherical_bessel_j0", "zeta"]


def _unary(name: str, op: OpDef, doc: str):
    def fn(input: Any, *, out: Any = None) -> Any:  # noqa: A002
        result = apply(op, input)
        return result if out is None else write_out(f"special_{name}", out, result)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _operand(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.ndarray):
        from .ops import tensor

        return tensor(value)
    return value


def _binary(name: str, op: OpDef, second: str, doc: str):
    """``special_<name>(input, <second>, *, out=None)``: either operand may be a number."""
    def call(a: Any, b: Any, out: Any) -> Any:
        from .tensor import Tensor

        a, b = _operand(a), _operand(b)
        if not isinstance(a, Tensor) and not isinstance(b, Tensor):
            raise TypeError(f"special_{name}() received an invalid combination of arguments: "
                            "one of the arguments must be a Tensor")
        result = apply(op, a, b)
        return result if out is None else write_out(f"special_{name}", out, result)

    if second == "n":  # (the polynomials: torch names their argument x)
        def fn(x: Any, n: Any, *, out: Any = None) -> Any:
            return call(x, n, out)
    else:
        def fn(input: Any, other: Any, *, out: Any = None) -> Any:  # noqa: A002
            return call(input, other, out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc + f"\n\n    Args:\n        input: a tensor or number.\n" \
                       f"        {second}: a tensor or number.\n        out: the tensor to " \
                       "write the result into.\n"
    return fn


i0 = _unary("i0", _b.I0, "The modified Bessel function of the first kind of order 0.")
i0e = _unary("i0e", _b.I0E, "``exp(-|x|) i0(x)``, the exponentially scaled ``i0``.")
i1 = _unary("i1", _b.I1, "The modified Bessel function of the first kind of order 1.")
i1e = _unary("i1e", _b.I1E, "``exp(-|x|) i1(x)``, the exponentially scaled ``i1``.")
erfcx = _unary("erfcx", _b.ERFCX, "The scaled complementary error function "
               "``exp(x^2) erfc(x)``.")
log_ndtr = _unary("log_ndtr", _b.LOG_NDTR, "The log of the standard normal distribution "
                  "function, accurate far in the lower tail.")
ndtri = _unary("ndtri", _b.NDTRI, "The inverse of the standard normal distribution function "
               "(its quantile function).")

_BESSEL_DOCS = {
    "bessel_j0": "The Bessel function of the first kind of order 0.",
    "bessel_j1": "The Bessel function of the first kind of order 1.",
    "bessel_y0": "The Bessel function of the second kind of order 0.",
    "bessel_y1": "The Bessel function of the second kind of order 1.",
    "modified_bessel_i0": "The modified Bessel function of the first kind of order 0.",
    "modified_bessel_i1": "The modified Bessel function of the first kind of order 1.",
    "modified_bessel_k0": "The modified Bessel function of the second kind of order 0.",
    "modified_bessel_k1": "The modified Bessel function of the second kind of order 1.",
    "scaled_modified_bessel_k0": "``exp(x) modified_bessel_k0(x)``.",
    "scaled_modified_bessel_k1": "``exp(x) modified_bessel_k1(x)``.",
    "airy_ai": "The Airy function Ai.",
    "spherical_bessel_j0": "The spherical Bessel function of the first kind of order 0, "
                           "``sin(x) / x``.",
}
bessel_j0 = _unary("bessel_j0", _b.BESSEL_OPS["bessel_j0"], _BESSEL_DOCS["bessel_j0"])
bessel_j1 = _unary("bessel_j1", _b.BESSEL_OPS["bessel_j1"], _BESSEL_DOCS["bessel_j1"])
bessel_y0 = _unary("bessel_y0", _b.BESSEL_OPS["bessel_y0"], _BESSEL_DOCS["bessel_y0"])
bessel_y1 = _unary("bessel_y1", _b.BESSEL_OPS["bessel_y1"], _BESSEL_DOCS["bessel_y1"])
modified_bessel_i0 = _unary("modified_bessel_i0", _b.BESSEL_OPS["modified_bessel_i0"],
                            _BESSEL_DOCS["modified_bessel_i0"])
modified_bessel_i1 = _unary("modified_bessel_i1", _b.BESSEL_OPS["modified_bessel_i1"],
                            _BESSEL_DOCS["modified_bessel_i1"])
modified_bessel_k0 = _unary("modified_bessel_k0", _b.BESSEL_OPS["modified_bessel_k0"],
                            _BESSEL_DOCS["modified_bessel_k0"])
modified_bessel_k1 = _unary("modified_bessel_k1", _b.BESSEL_OPS["modified_bessel_k1"],
                            _BESSEL_DOCS["modified_bessel_k1"])
scaled_modified_bessel_k0 = _unary("scaled_modified_bessel_k0",
                                   _b.BESSEL_OPS["scaled_modified_bessel_k0"],
                                   _BESSEL_DOCS["scaled_modified_bessel_k0"])
scaled_modified_bessel_k1 = _unary("scaled_modified_bessel_k1",
                                   _b.BESSEL_OPS["scaled_modified_bessel_k1"],
                                   _BESSEL_DOCS["scaled_modified_bessel_k1"])
airy_ai = _unary("airy_ai", _b.BESSEL_OPS["airy_ai"], _BESSEL_DOCS["airy_ai"])
spherical_bessel_j0 = _unary("spherical_bessel_j0", _b.BESSEL_OPS["spherical_bessel_j0"],
                             _BESSEL_DOCS["spherical_bessel_j0"])
# torch names these functions' argument x (the other Bessel functions' is input)
airy_ai, scaled_modified_bessel_k0, scaled_modified_bessel_k1, spherical_bessel_j0 = (
    torch_names(f, f"special_{f.__name__}", x="input") for f in (
        airy_ai, scaled_modified_bessel_k0, scaled_modified_bessel_k1, spherical_bessel_j0))


def _check_out_cast(input: Any, other: Any, out: Any) -> None:
    """torch checks ``out`` takes the operands' promoted dtype before its kernel refuses an
    integer one (``result type Long can't be cast to the desired output type Bool``)."""
    from ._type_info import can_cast
    from .dtypes import result_type

    dt, to = result_type(input, other), getattr(out, "dtype", None)
    if to is not None and not can_cast(dt, to):
        raise RuntimeError(f"result type {dt._scalar_name} can't be cast to "
                           f"the desired output type {to._scalar_name}")


def _incomplete_gamma(op: OpDef, fname: str, input: Any, other: Any, out: Any) -> Any:  # noqa: A002
    input, other = _operand(input), _operand(other)
    need_tensor(fname, "input", 1, input)
    need_tensor(fname, "other", 2, other)
    if out is not None:
        _check_out_cast(input, other, out)
    result = apply(op, input, other)
    return result if out is None else write_out(fname, out, result)


def gammainc(input: Any, other: Any, *, out: Any = None) -> Any:  # noqa: A002
    """The regularized lower incomplete gamma function ``P(input, other)`` (``torch.igamma``).

    Args:
        input: the shape parameter ``a >= 0`` (a floating tensor).
        other: the integration limit ``x >= 0`` (a floating tensor).
        out: the tensor to write the result into.

    Returns:
        ``1 / Gamma(a) * int_0^x t^(a-1) e^-t dt``; differentiable in ``other`` only.
    """
    return _incomplete_gamma(_g.IGAMMA, "special_gammainc", input, other, out)


def gammaincc(input: Any, other: Any, *, out: Any = None) -> Any:  # noqa: A002
    """The regularized upper incomplete gamma function ``Q(input, other) = 1 - P``
    (``torch.igammac``).

    Args:
        input: the shape parameter ``a >= 0`` (a floating tensor).
        other: the lower integration limit ``x >= 0`` (a floating tensor).
        out: the tensor to write the result into.

    Returns:
        ``1 / Gamma(a) * int_x^inf t^(a-1) e^-t dt``; differentiable in ``other`` only.
    """
    return _incomplete_gamma(_g.IGAMMAC, "special_gammaincc", input, other, out)


zeta = _binary("zeta", _g.ZETA, "other",
               "The Hurwitz zeta function ``sum_k (other + k)^-input``.")

_POLY_DOC = "The {} ``P_n(input)`` of order ``n`` (truncated to an integer; 0 for ``n < 0``)."
_POLY_NAMES = {
    "chebyshev_polynomial_t": "Chebyshev polynomial of the first kind",
    "chebyshev_polynomial_u": "Chebyshev polynomial of the second kind",
    "chebyshev_polynomial_v": "Chebyshev polynomial of the third kind",
    "chebyshev_polynomial_w": "Chebyshev polynomial of the fourth kind",
    "shifted_chebyshev_polynomial_t": "shifted Chebyshev polynomial of the first kind",
    "shifted_chebyshev_polynomial_u": "shifted Chebyshev polynomial of the second kind",
    "shifted_chebyshev_polynomial_v": "shifted Chebyshev polynomial of the third kind",
    "shifted_chebyshev_polynomial_w": "shifted Chebyshev polynomial of the fourth kind",
    "hermite_polynomial_h": "physicists' Hermite polynomial",
    "hermite_polynomial_he": "probabilists' Hermite polynomial",
    "laguerre_polynomial_l": "Laguerre polynomial",
    "legendre_polynomial_p": "Legendre polynomial",
}


def _poly(name: str):
    return _binary(name, _p.POLYNOMIAL_OPS[name], "n",
                   _POLY_DOC.format(_POLY_NAMES[name]))


chebyshev_polynomial_t = _poly("chebyshev_polynomial_t")
chebyshev_polynomial_u = _poly("chebyshev_polynomial_u")
chebyshev_polynomial_v = _poly("chebyshev_polynomial_v")
chebyshev_polynomial_w = _poly("chebyshev_polynomial_w")
shifted_chebyshev_polynomial_t = _poly("shifted_chebyshev_polynomial_t")
shifted_chebyshev_polynomial_u = _poly("shifted_chebyshev_polynomial_u")
shifted_chebyshev_polynomial_v = _poly("shifted_chebyshev_polynomial_v")
shifted_chebyshev_polynomial_w = _poly("shifted_chebyshev_polynomial_w")
hermite_polynomial_h = _poly("hermite_polynomial_h")
hermite_polynomial_he = _poly("hermite_polynomial_he")
laguerre_polynomial_l = _poly("laguerre_polynomial_l")
legendre_polynomial_p = _poly("legendre_polynomial_p")
