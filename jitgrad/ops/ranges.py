"""Ranges: ``arange``, ``linspace`` and ``logspace``, with torch's lengths, checks and CPU
values (the float32/float64 linspace bit for bit)."""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from .. import dtypes
from ..device import check_device
from .. import tensor as _tensor  # (a module: tensor.py is mid-import when the ops load)
from .arg_errors import invalid_combination
from .creation import _OPTS, _is_int, check_layout, meta_empty
from .surface import public


@public("arange")
def arange(start=None, end=None, step=1, *, dtype=None, layout=None, device=None,
           requires_grad=False, pin_memory=False):
    """Values from ``start`` to ``end`` (exclusive) by ``step``; ``arange(end)`` and
    ``arange(end=n)`` start at 0."""
    check_layout("arange", layout)
    dev = check_device(device)
    if start is None:
        if end is None:
            raise invalid_combination("arange", (), {}, (
                "Number end, " + _OPTS.format(gen=""),
                "Number start, Number end, " + _OPTS.format(gen="").replace(
                    "Tensor out = None, ", ""),
                "Number start, Number end, Number step = 1, " + _OPTS.format(gen="")))
        start = 0
    elif end is None:
        start, end = 0, start
    start, end, step = (v.item() if isinstance(v, _tensor.Tensor) and v.ndim == 0 else v
                        for v in (start, end, step))  # (0-d tensors count as their numbers)
    n = _arange_length(start, end, step)
    if dtype is None:
        is_float = builtins.any(isinstance(v, float) for v in (start, end, step))
        dtype = dtypes.get_default_dtype() if is_float else dtypes.int64
    if dtypes.is_integral(dtype) and dtype is not dtypes.bool and builtins.any(
            isinstance(v, float) for v in (start, end, step)):
        # torch's integer kernel truncates the bounds and the step first (int64 counts its
        # length from them too; the other integer dtypes from the given numbers)
        start, end, step = (int(v) for v in (start, end, step))
        if dtype is dtypes.int64:  # (a step truncated to 0: torch's text and type for it)
            if step == 0:
                raise ValueError("step must be nonzero")
            n = _arange_length(start, end, step)
        if dev.type != "meta":
            values = start + np.arange(n, dtype=np.int64) * step
            return _tensor._new(values.astype(dtype.np), dtype, requires_grad, dev)
    if dtype is dtypes.bool or dtype.is_complex or dtype in dtypes.LIMITED_UINTS:
        # (torch has no arange kernel for bool, complex, uint16/32/64)
        raise NotImplementedError(f'"arange_cpu" not implemented for '
                                  f"'{dtype._scalar_name}'")
    if dev.type == "meta":
        return meta_empty((n,), dtype, requires_grad)
    values = np.arange(start, end, step)[:n] if n else np.zeros(0)
    return _tensor._new(values.astype(dtype.np), dtype, requires_grad, dev)


def _arange_length(start: Any, end: Any, step: Any) -> int:
    """torch's length of ``arange(start, end, step)``, ``ceil((end - start) / step)``, with its
    checks (a step of the wrong sign is an error, not an empty range)."""
    start_f, end_f, step_f = float(start), float(end), float(step)
    if not (step_f > 0 or step_f < 0):
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start_f) and math.isfinite(end_f)):
        raise RuntimeError(f"unsupported range: {start_f:g} -> {end_f:g}")
    if not ((step_f > 0 and end_f >= start_f) or (step_f < 0 and end_f <= start_f)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    size = math.ceil((end_f - start_f) / step_f)
    if size > 2 ** 63 - 1:
        raise RuntimeError("invalid size, possible overflow?")
    return int(size)


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a * b`` in float64 and its rounding error, exactly (Dekker's split)."""
    p = a * b

    def split(x):
        c = 134217729.0 * x  # (2**27 + 1)
        hi = c - (c - x)
        return hi, x - hi

    (ah, al), (bh, bl) = split(a), split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _fma(a: np.ndarray, b: np.ndarray, c: float) -> np.ndarray:
    """``a * b + c`` in float64, rounded once (as a fused multiply-add)."""
    p, p_err = _two_product(a, b)
    total = c + p  # (Knuth's TwoSum: the error of this addition, exactly)
    back = total - c
    return total + (((c - (total - back)) + (p - back)) + p_err)


def _linspace_values(start, end, steps: int, np_dt: np.dtype) -> np.ndarray:
    """torch's CPU linspace bit for bit: the ends in the dtype (integers: truncated), the step
    ``(end - start) / (steps - 1)`` in the dtype (double for integers), the first half
    ``start + step * i`` and the rest ``end - step * (steps - 1 - i)``, each one fused
    multiply-add rounded once. The 16-bit floats and complex dtypes take NumPy's linspace."""
    start, end = (v.item() if hasattr(v, "item") else v for v in (start, end))
    np_dt = np.dtype(np_dt)
    if steps <= 1 or np_dt.kind not in "iuf" or (np_dt.kind == "f" and np_dt.itemsize < 4):
        return np.linspace(start, end, steps).astype(np_dt)
    integral = np_dt.kind in "iu"
    lo_end, hi_end = (float(int(v)) if integral else v for v in (start, end))
    if integral or np_dt == np.float64:
        lo_end, hi_end = np.float64(lo_end), np.float64(hi_end)
        step = (hi_end - lo_end) / np.float64(steps - 1)
    else:  # (float32: the step in float32; its products with i are exact in float64)
        lo_end, hi_end = np.float32(lo_end), np.float32(hi_end)
        step = np.float64((hi_end - lo_end) / np.float32(steps - 1))
    half = steps // 2
    to_go = np.arange(steps - half - 1, -1, -1).astype(np_dt if not integral else np.float64)
    first = _fma(step, np.arange(half, dtype=np.float64), np.float64(lo_end))
    last = _fma(-step, to_go.astype(np.float64), np.float64(hi_end))
    values = np.concatenate([first, last])
    return np.trunc(values).astype(np_dt) if integral else values.astype(np_dt)


@public("linspace")
def linspace(start, end, steps: int, *, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` (torch's CPU values exactly)."""
    check_layout("linspace", layout)
    dev = check_device(device)
    _check_steps("linspace", (start, end, steps), "")
    dt = _spaced_dtype("linspace", start, end, dtype)
    if dt is dtypes.bool:
        raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
    values = _linspace_values(start, end, int(steps), dt.np)
    return _tensor._new(values, dt, requires_grad, dev)


@public("logspace")
def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, layout=None,
             device=None, requires_grad=False, pin_memory=False):
    """``steps`` values from ``base ** start`` to ``base ** end``, evenly spaced in exponent."""
    check_layout("logspace", layout)
    dev = check_device(device)
    _check_steps("logspace", (start, end, steps), "float base = 10.0, ")
    dt = _spaced_dtype("logspace", start, end, dtype)
    if dt is dtypes.bool:
        raise NotImplementedError("\"logspace_cpu\" not implemented for 'Bool'")
    if dt.is_complex:
        values = float(base) ** np.linspace(complex(start), complex(end), int(steps))
    else:
        values = np.logspace(float(start), float(end), int(steps), base=float(base))
    if dt.np.kind in "iub":
        values = np.round(values)
    return _tensor._new(values.astype(dt.np), dt, requires_grad, dev)


def _spaced_dtype(fname: str, start: Any, end: Any, dtype: Any) -> dtypes.dtype:
    """linspace/logspace's dtype: complex ends make it complex (as torch's inference)."""
    default = dtypes.get_default_dtype()
    if not builtins.any(isinstance(v, complex) or getattr(v, "is_complex", lambda: False)()
                        for v in (start, end)):
        return dtype or default
    inferred = dtypes.complex128 if default is dtypes.float64 else dtypes.complex64
    if dtype is not None and not dtype.is_complex:
        cpp = {"complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}
        raise RuntimeError(f"torch.{fname}(): inferred dtype {cpp[inferred.name]} can't be "
                           f"safely cast to passed dtype {dtype._scalar_name}")
    return dtype or inferred


def _check_steps(fname: str, args: tuple, extra: str) -> None:
    """linspace/logspace's ``steps``: an int (a float is never truncated), not negative."""
    steps = args[-1]
    if isinstance(steps, bool) or not _is_int(steps):
        opts = extra + _OPTS.format(gen="")
        raise invalid_combination(fname, args, {}, tuple(
            f"{a} start, {b} end, int steps, {opts}"
            for a, b in (("Tensor", "Tensor"), ("Number", "Tensor"), ("Tensor", "Number"),
                         ("Number", "Number"))))
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
