"""``jitgrad.testing``: ``assert_close`` and ``make_tensor``, as ``torch.testing``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import dtypes

__all__ = ["assert_allclose", "assert_close", "make_tensor"]

# torch's default (rtol, atol) by dtype; other dtypes compare exactly
_TOLERANCES = {"float16": (1e-3, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
               "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7)}


class _MismatchError(AssertionError):
    pass


def _tensor_class():
    from ..tensor import Tensor

    return Tensor


def _as_array(value: Any) -> tuple[np.ndarray, str, Any] | None:
    """(values, dtype name, the value's Size or shape) of a tensor, array or number (values
    None for a meta tensor, which has none)."""
    Tensor = _tensor_class()
    if isinstance(value, Tensor):
        if value.is_meta:
            return None, value.dtype.name, value.shape
        data = value.detach().cpu().numpy()
        return np.asarray(data), value.dtype.name, value.shape
    if isinstance(value, np.ndarray):
        return value, value.dtype.name, value.shape
    if isinstance(value, (bool, int, float, complex)):
        name = {bool: "bool", int: "int64", float: "float64", complex: "complex128"}[type(value)]
        return np.asarray(value), name, None
    return None


def _where(index: tuple) -> str:
    return f"({', '.join(str(int(i)) for i in index)}{',' if len(index) == 1 else ''})"


def _compare(actual: Any, expected: Any, rtol: float | None, atol: float | None,
             equal_nan: bool, check_dtype: bool, path: str) -> None:
    a, e = _as_array(actual), _as_array(expected)
    Tensor = _tensor_class()
    if a is None or e is None or (isinstance(actual, (Tensor, np.ndarray))
                                  != isinstance(expected, (Tensor, np.ndarray))) \
            or isinstance(actual, Tensor) != isinstance(expected, Tensor):
        raise TypeError(f"No comparison pair was able to handle inputs of type "
                        f"{type(actual)} and {type(expected)}.")
    (av, an, ashape), (ev, en, eshape) = a, e
    tensors = ashape is not None
    if tensors and tuple(ashape) != tuple(eshape):
        raise _MismatchError(f"The values for attribute 'shape' do not match: {ashape} != "
                        f"{eshape}.{path}")
    if check_dtype and an != en:
        if tensors and isinstance(actual, Tensor):
            raise _MismatchError(f"The values for attribute 'dtype' do not match: {actual.dtype} "
                            f"!= {expected.dtype}.{path}")
        if tensors:
            raise _MismatchError(f"The values for attribute 'dtype' do not match: {av.dtype} != "
                            f"{ev.dtype}.{path}")
    if av is None or ev is None:  # meta tensors: their metadata is all there is to compare
        return
    if rtol is None:
        worst = max((an, en), key=lambda n: _TOLERANCES.get(n, (0.0, 0.0)))
        rtol, atol = _TOLERANCES.get(worst, (0.0, 0.0))
    exact = rtol == 0 and atol == 0
    common = np.result_type(av, ev)
    if common.kind in "biu":  # differences of integers, relative ones in float32 (as torch)
        ac, ec = av.astype(np.int64), ev.astype(np.int64)
    else:  # in the values' common dtype, as torch computes them
        ac, ec = av.astype(common), ev.astype(common)
    with np.errstate(all="ignore"):
        abs_diff = np.abs(ac - ec)
        scale = np.abs(ec)
        close = abs_diff <= atol + rtol * scale
        close |= ac == ec  # equal infinities
        if equal_nan:
            close |= np.isnan(ac) & np.isnan(ec)
        if bool(np.all(close)):
            return
        if common.kind in "biu":
            rel_diff = abs_diff.astype(np.float32) / scale.astype(np.float32)
        else:
            rel_diff = abs_diff / scale
    word = "equal" if exact else "close"
    allowed_abs = "" if exact else f" (up to {atol} allowed)"
    allowed_rel = "" if exact else f" (up to {rtol} allowed)"
    if not tensors or av.ndim == 0:
        got, want = av.item(), ev.item()
        raise _MismatchError(f"Scalars are not {word}!\n\nExpected {want} but got {got}.\n"
                        f"Absolute difference: {abs_diff.item()}{allowed_abs}\n"
                        f"Relative difference: {rel_diff.item()}{allowed_rel}{path}")
    bad = int(np.size(close) - np.count_nonzero(close))
    total = int(np.size(close))
    ia = np.unravel_index(int(np.argmax(np.where(np.isnan(abs_diff), np.inf, abs_diff))),
                          abs_diff.shape)
    ir = np.unravel_index(int(np.argmax(np.where(np.isnan(rel_diff), np.inf, rel_diff))),
                          rel_diff.shape)
    raise _MismatchError(f"Tensor-likes are not {word}!\n\n"
                    f"Mismatched elements: {bad} / {total} ({100 * bad / total:.1f}%)\n"
                    f"Greatest absolute difference: {abs_diff[ia].item()} at index "
                    f"{_where(ia)}{allowed_abs}\n"
                    f"Greatest relative difference: {rel_diff[ir].item()} at index "
                    f"{_where(ir)}{allowed_rel}{path}")


def _walk(actual: Any, expected: Any, items: list, kw: dict) -> None:
    Tensor = _tensor_class()
    where = "".join(f"[{i!r}]" for i in items)
    path = f"\n\nThe failure occurred for item {where}" if items else ""
    leaf = (Tensor, np.ndarray, str, bytes)
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if set(actual) != set(expected):
            raise _MismatchError(f"The keys of the mappings do not match:\nMissing keys in the "
                            f"actual mapping: {sorted(map(repr, set(expected) - set(actual)))}"
                            f"\nAdditional keys in the actual mapping: "
                            f"{sorted(map(repr, set(actual) - set(expected)))}{path}")
        for key in expected:
            _walk(actual[key], expected[key], items + [key], kw)
        return
    if isinstance(actual, Sequence) and isinstance(expected, Sequence) \
            and not isinstance(actual, leaf) and not isinstance(expected, leaf):
        if len(actual) != len(expected):
            raise _MismatchError(f"The length of the sequences mismatch: {len(actual)} != "
                            f"{len(expected)}{path}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            _walk(a, e, items + [i], kw)
        return
    _compare(actual, expected, path=path, **kw)


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True,
                 rtol: float | None = None, atol: float | None = None,
                 equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True,
                 check_stride: bool = False, msg: Any = None) -> None:
    """Asserts that ``actual`` and ``expected`` are close, as ``torch.testing.assert_close``.

    Tensors (and NumPy arrays, and Python numbers) compare elementwise with
    ``|actual - expected| <= atol + rtol * |expected|``; sequences and mappings compare item
    by item. Without ``rtol``/``atol`` the tolerances are torch's defaults for the dtype
    (float32: ``rtol=1.3e-6, atol=1e-5``; float64: ``1e-7, 1e-7``; integers and bool: exact).

    Args:
        actual: the value under test.
        expected: the reference value.
        allow_subclasses: accepted for torch compatibility.
        rtol: relative tolerance (give ``atol`` too).
        atol: absolute tolerance (give ``rtol`` too).
        equal_nan: NaN equals NaN.
        check_device: both tensors must be on the same device.
        check_dtype: both values must have the same dtype.
        check_layout: accepted for torch compatibility (jitgrad tensors are strided).
        check_stride: both tensors must have the same strides.
        msg: replaces the message of a failure (a string, or a function of it).

    Raises:
        AssertionError: the values are not close, or a checked attribute differs.
        ValueError: only one of ``rtol`` and ``atol`` is given.
        TypeError: the inputs cannot be compared (a tensor against a list, say).
    """
    if (rtol is None) != (atol is None):
        missing = "atol" if atol is None else "rtol"
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"no {missing}.")
    try:
        _check_attributes(actual, expected, check_device, check_stride)
        _walk(actual, expected, [], dict(rtol=rtol, atol=atol, equal_nan=equal_nan,
                                         check_dtype=check_dtype))
    except _MismatchError as failure:
        text = str(failure)
        if msg is not None:
            text = msg(text) if callable(msg) else str(msg)
        raise AssertionError(text) from None


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None,
                    atol: float | None = None, equal_nan: bool = True, msg: str = "") -> None:
    """(deprecated, as in torch) ``assert_close`` of ``expected`` as a tensor like ``actual``,
    without the dtype/device checks and NaNs equal by default."""
    import warnings

    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `torch.testing.assert_close()` "
                  "instead. You can find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning,
                  stacklevel=2)
    tensor_class = _tensor_class()
    if not isinstance(actual, tensor_class):
        from ..ops.creation import tensor

        actual = tensor(actual)
    if not isinstance(expected, tensor_class):
        from ..ops.creation import tensor

        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:  # (the old assert_allclose's per-dtype tolerances)
        old = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}
        pairs = [old.get(t.dtype.name, (0.0, 0.0)) for t in (actual, expected)]
        rtol, atol = max(p[0] for p in pairs), max(p[1] for p in pairs)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_device=True, check_dtype=False, check_stride=False,
                 msg=msg or None)


def _check_attributes(actual: Any, expected: Any, check_device: bool,
                      check_stride: bool) -> None:
    Tensor = _tensor_class()
    if not (isinstance(actual, Tensor) and isinstance(expected, Tensor)):
        return
    if check_device and actual.device != expected.device:
        raise _MismatchError(f"The values for attribute 'device' do not match: {actual.device} != "
                        f"{expected.device}.")
    if check_stride and tuple(actual.shape) == tuple(expected.shape) \
            and actual.stride() != expected.stride():
        raise _MismatchError(f"The values for attribute 'stride()' do not match: {actual.stride()} "
                        f"!= {expected.stride()}.")


def make_tensor(*shape: Any, dtype: dtypes.dtype, device: Any = None, low: float | None = None,
                high: float | None = None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format: Any = None) -> Any:
    """A tensor of ``shape`` filled with values drawn uniformly from ``[low, high)``, as
    ``torch.testing.make_tensor`` (defaults: ``[-9, 9)`` for floats and signed integers,
    ``[0, 10)`` for ``uint8``; bools are drawn from {False, True}).

    Args:
        shape: the sizes, as separate integers or one sequence.
        dtype: the dtype.
        device: the device.
        low: the inclusive lower bound.
        high: the exclusive upper bound.
        requires_grad: whether the result requires grad (floating and complex dtypes only).
        noncontiguous: return a non-contiguous view of the same values.
        exclude_zero: replace zeros by the dtype's smallest positive step.
        memory_format: accepted for torch compatibility.
    """
    from .. import random as jg_random
    from ..ops.creation import tensor

    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    if low is not None and high is not None and low > high:
        raise ValueError(f"`low` must be less than or equal to `high`, but got {low} > {high}")
    if dtype == dtypes.bool:
        values = jg_random.rand(shape, dtype=dtypes.float64).numpy() < 0.5
    else:
        lo = (0 if dtype == dtypes.uint8 else -9) if low is None else low
        hi = 10 if high is None and dtype == dtypes.uint8 else (9 if high is None else high)
        u = jg_random.rand(shape, dtype=dtypes.float64).numpy()
        if dtype.is_complex:
            u = u + 1j * jg_random.rand(shape, dtype=dtypes.float64).numpy()
            values = lo + (hi - lo) * u.real + 1j * (lo + (hi - lo) * u.imag)
        elif dtype.is_floating_point:
            values = lo + (hi - lo) * u
        else:
            values = np.floor(math.ceil(lo) + (math.ceil(hi) - math.ceil(lo)) * u)
        if exclude_zero:
            step = 1 if not (dtype.is_floating_point or dtype.is_complex) \
                else float(np.finfo(dtype.to_real().np if dtype.is_complex else dtype.np).tiny)
            values = np.where(values == 0, step, values)
    out = tensor(np.asarray(values).astype(dtype.np), dtype=dtype, device=device)
    if noncontiguous and out.numel() > 1:
        doubled = out.repeat_interleave(2, dim=-1) if out.ndim else out
        out = doubled[..., ::2]
    if requires_grad:
        out.requires_grad_(True)
    return out
