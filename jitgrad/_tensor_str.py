"""Printing tensors as torch prints them (a port of ``torch/_tensor_str.py`` to NumPy arrays).

One formatter per tensor picks integer mode (``1.``), fixed point (``1.5000``) or scientific
notation (``1.0000e+05``) from the non-zero finite values and pads every element to one width;
rows wrap at ``linewidth`` (80) columns; tensors of more than ``threshold`` (1000) elements are
summarized with ``...``; suffixes (``dtype=``, ``size=``, ``grad_fn=<...>``,
``requires_grad=True``) go on the last line, or on a new line when they would pass 80 columns.
``set_printoptions`` / ``printoptions`` change the options, as in torch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Any

import numpy as np

from . import dtypes


@dataclasses.dataclass
class _PrinterOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrinterOptions()


def set_printoptions(precision: int | None = None, threshold: float | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     profile: str | None = None, sci_mode: bool | None = None) -> None:
    """Sets the options for printing tensors (torch.set_printoptions).

    Args:
        precision: digits after the decimal point (default 4).
        threshold: element count above which a tensor is summarized (default 1000).
        edgeitems: items shown at each end of a summarized dim (default 3).
        linewidth: characters per line (default 80).
        profile: ``"default"``, ``"short"`` or ``"full"``: presets for the options above.
        sci_mode: force (True) or forbid (False) scientific notation; None chooses.
    """
    if profile is not None:
        presets = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80),
                   "full": (4, math.inf, 3, 80)}
        (PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems,
         PRINT_OPTS.linewidth) = presets[profile]
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """The current print options, as keyword arguments for ``set_printoptions``."""
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs: Any):
    """Sets print options for the duration of a ``with`` block."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


class _Formatter:
    def __init__(self, data: np.ndarray, floating: bool) -> None:
        self.floating_dtype = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = data.reshape(-1)
        if not floating:
            for value in flat.tolist():
                self.max_width = max(self.max_width, len(f"{value}"))
            return
        vals = flat[np.isfinite(flat) & (flat != 0)]
        if vals.size == 0:
            return
        mags = np.abs(vals).astype(np.float64)
        lo, hi = float(mags.min()), float(mags.max())
        values = vals.tolist()
        self.int_mode = all(v == math.ceil(v) for v in values)
        p = PRINT_OPTS.precision
        self.sci_mode = (hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4) \
            if PRINT_OPTS.sci_mode is None else PRINT_OPTS.sci_mode
        if self.sci_mode:
            width = max(len(f"{v:.{p}e}") for v in values)
        elif self.int_mode:
            width = max(len(f"{v:.0f}") + 1 for v in values)
        else:
            width = max(len(f"{v:.{p}f}") for v in values)
        self.max_width = max(self.max_width, width)

    def width(self) -> int:
        return self.max_width

    def format(self, value: Any) -> str:
        if self.floating_dtype:
            p = PRINT_OPTS.precision
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{p}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _complex_str(value: complex, f1: _Formatter, f2: _Formatter) -> str:
    real = f1.format(value.real)
    imag = (f2.format(value.imag) + "j").lstrip()
    return real + imag if imag[0] in "+-" else real + "+" + imag


def _vector_str(data: np.ndarray, indent: int, summarize: bool, f1: _Formatter,
                f2: _Formatter | None) -> str:
    element_length = f1.width() + 2
    if f2 is not None:
        element_length += f2.width() + 1
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))

    def fmt(v):
        return f1.format(v) if f2 is None else _complex_str(v, f1, f2)

    edge = PRINT_OPTS.edgeitems
    if summarize and not edge:
        items = ["..."]
    elif summarize and data.shape[0] > 2 * edge:
        items = [fmt(v) for v in data[:edge].tolist()] + [" ..."] + \
            [fmt(v) for v in data[-edge:].tolist()]
    else:
        items = [fmt(v) for v in data.tolist()]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str_with_formatter(data: np.ndarray, indent: int, summarize: bool,
                               f1: _Formatter, f2: _Formatter | None = None) -> str:
    dim = data.ndim
    if dim == 0:
        v = data.item()
        return f1.format(v) if f2 is None else _complex_str(v, f1, f2)
    if dim == 1:
        return _vector_str(data, indent, summarize, f1, f2)
    edge = PRINT_OPTS.edgeitems
    n = data.shape[0]
    if summarize and n > 2 * edge:
        slices = [_tensor_str_with_formatter(data[i], indent + 1, summarize, f1, f2)
                  for i in range(edge)] + ["..."] + \
                 [_tensor_str_with_formatter(data[i], indent + 1, summarize, f1, f2)
                  for i in range(n - edge, n)]
    else:
        slices = [_tensor_str_with_formatter(data[i], indent + 1, summarize, f1, f2)
                  for i in range(n)]
    return "[" + ("," + "\n" * (dim - 1) + " " * (indent + 1)).join(slices) + "]"


def _summarized(data: np.ndarray) -> np.ndarray:
    """The elements a summarized tensor shows (``edgeitems`` at each end of every dim)."""
    edge = PRINT_OPTS.edgeitems
    if data.ndim == 0:
        return data
    if data.ndim == 1:
        return np.concatenate([data[:edge], data[-edge:]]) if data.shape[0] > 2 * edge \
            else data
    if not edge:
        return data[(slice(0, 0),) * data.ndim]
    rows = list(range(edge)) + list(range(len(data) - edge, len(data))) \
        if data.shape[0] > 2 * edge else range(data.shape[0])
    return np.stack([_summarized(data[i]) for i in rows])


def tensor_str(data: np.ndarray, dt: dtypes.dtype, indent: int) -> str:
    """The bracketed values of a tensor's ``repr`` (what follows ``tensor(``)."""
    if data.size == 0:
        return "[]"
    summarize = data.size > PRINT_OPTS.threshold
    seen = _summarized(data) if summarize else data
    if dt.is_complex:
        return _tensor_str_with_formatter(data, indent, summarize,
                                          _Formatter(seen.real, True),
                                          _Formatter(seen.imag, True))
    return _tensor_str_with_formatter(data, indent, summarize,
                                      _Formatter(seen, dt.is_floating_point))


def add_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    """``text`` with ``, suffix`` appended, each on a new line if it would pass the width."""
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def _values(data: Any, dt: Any, indent: int, suffixes: list) -> str:
    """The printed values of array ``data`` (NumPy or cuda), adding its suffixes."""
    default = dtypes.get_default_dtype()
    default_complex = dtypes.complex128 if default is dtypes.float64 else dtypes.complex64
    if hasattr(data, "copy_to_host"):  # a cuda tensor: printed from a host copy, as torch does
        suffixes.append("device='cuda:0'")
        data = data.copy_to_host()
    if data.size == 0:
        if data.ndim != 1:
            suffixes.append(f"size={tuple(data.shape)}")
        if dt is not default:
            suffixes.append(f"dtype={dt!r}")
        return "[]"
    if not PRINT_OPTS.edgeitems:
        suffixes.append(f"size={tuple(data.shape)}")
    if dt not in (default, default_complex, dtypes.int64, dtypes.bool):
        suffixes.append(f"dtype={dt!r}")
    return tensor_str(data, dt, indent)


def tensor_repr(t: Any, prefix: str = "tensor(") -> str:
    """torch's ``repr`` of tensor ``t``."""
    data, dt = t._data, t._dtype
    indent = len(prefix)
    suffixes = []
    if t.is_meta:  # no values: torch prints the shape (and any dtype but the default one)
        suffixes.append("device='meta'")
        suffixes.append(f"size={tuple(data.shape)}")
        if dt is not dtypes.get_default_dtype():
            suffixes.append(f"dtype={dt!r}")
        body = "..."
    else:
        body = _values(data, dt, indent, suffixes)
    grad_fn = t._grad_fn
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{grad_fn.name()}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    if t._fw_grads:  # a dual tensor (forward-mode AD): its tangent at the current level
        from .ops import registry

        tangent = registry.forward_ad.unpack_dual(t).tangent
        if tangent is not None:
            suffixes.append(f"tangent={tangent!r}")
    return add_suffixes(prefix + body, suffixes, indent)
