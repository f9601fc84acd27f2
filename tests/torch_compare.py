"""Helpers for tests that run the same code under torch and under jitgrad."""

import re

import numpy as np

import jitgrad


def arr(t):
    """A tensor of either library as a NumPy array (None stays None)."""
    return None if t is None else np.asarray(t.detach().numpy())


def both(fn):
    """Runs ``fn(lib)`` for torch, then jitgrad, and returns both results."""
    import torch

    return fn(torch), fn(jitgrad)


def same_error(fn):
    """Asserts ``fn(lib)`` raises the same error type and text under both libraries (with
    torch's self-references, like ``torch.Size``, read as ``jitgrad``)."""
    import torch

    errs = []
    for lib in (torch, jitgrad):
        try:
            fn(lib)
        except Exception as e:  # noqa: BLE001 - compared below
            errs.append((type(e).__name__, str(e)))
        else:
            errs.append(None)
    assert errs[0] is not None, "torch did not raise"
    assert errs[1] == (errs[0][0], re.sub(r"\btorch\b", "jitgrad", errs[0][1]))


def raises_as_torch(fn_t, fn_j, translate=None):
    """Asserts ``fn_j()`` raises the error type and text that ``fn_t()`` (torch's) raises
    (torch's text through ``translate`` first, when given: ``torch.Size`` -> ``jitgrad.Size``)."""
    import pytest

    with pytest.raises(Exception) as t_err:  # noqa: PT011
        fn_t()
    with pytest.raises(t_err.type) as j_err:
        fn_j()
    expected = str(t_err.value)
    assert str(j_err.value) == (translate(expected) if translate else expected)


def jitgrad_sizes(text: str) -> str:
    """torch's ``torch.Size(...)`` in an error text read as jitgrad's."""
    return text.replace("torch.Size", "jitgrad.Size")


_TYPE_NAME = re.compile(r"torch\.(\w+Tensor)\b")


def jitgrad_type_names(text: str) -> str:
    """torch's tensor type names in an error text read as jitgrad's (``torch.LongTensor`` ->
    ``jitgrad.LongTensor``)."""
    return _TYPE_NAME.sub(r"jitgrad.\1", text)


def same_outcome(t, j, rtol: float, atol: float = 1e-8, signed_zeros: bool = False) -> bool:
    """Whether two ``(dtype name, values array)`` or ``(error class, text)`` outcomes agree:
    equal errors, or equal dtypes and shapes with values close (NaN where NaN; with
    ``signed_zeros``, zeros of one sign, real and imaginary parts apart)."""
    if isinstance(t[1], str) or isinstance(j[1], str):
        return t == j
    x, y = t[1], j[1]
    if t[0] != j[0] or x.shape != y.shape:
        return False
    if x.dtype.kind not in "fc":
        return bool(np.array_equal(x, y))
    if not np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True):
        return False
    if signed_zeros:
        for part in (np.real, np.imag) if x.dtype.kind == "c" else (np.real,):
            px, py = part(x), part(y)
            zeros = (px == 0) & (py == 0)
            if np.any(np.signbit(px[zeros]) != np.signbit(py[zeros])):
                return False
    return True
