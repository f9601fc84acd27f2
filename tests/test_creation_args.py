"""Factory arguments as torch's argument parser and kernels take them: sizes are ints (a float
is refused, never truncated), arange's step agrees with its bounds, numbers fit the dtype.

Before: ``zeros(2, 2.5)`` made a (2, 2) tensor, ``arange(1, 0)`` an empty one, ``full((2,),
1e20, dtype=int32)`` and ``tensor([nan], dtype=int64)`` wrapped to the integer minimum, and
``linspace(0, 1, 2.5)`` truncated its step count: each where torch raises.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

import jitgrad

VALUES = [0, 1, -1, 2.5, -0.5, 3, True, 1e20, math.inf, math.nan]
CASES = {
    "zeros": lambda L, a, b: L.zeros(a, b),
    "zeros_tuple": lambda L, a, b: L.zeros((a, b)),
    "ones_single": lambda L, a, b: L.ones(a),
    "empty_kw": lambda L, a, b: L.empty(size=(2, a)).fill_(0),
    "randn": lambda L, a, b: L.randn(3, a, b) * 0,
    "full": lambda L, a, b: L.full((2,), a, dtype=L.int64),
    "full_int32": lambda L, a, b: L.full((2,), a, dtype=L.int32),
    "full_uint8": lambda L, a, b: L.full((2,), b, dtype=L.uint8),
    "fill_": lambda L, a, b: L.zeros(2, dtype=L.int16).fill_(a),
    "tensor_int": lambda L, a, b: L.tensor([a, b], dtype=L.int32),
    "arange1": lambda L, a, b: L.arange(a),
    "arange2": lambda L, a, b: L.arange(a, b),
    "arange3": lambda L, a, b: L.arange(0, a, b),
    "eye": lambda L, a, b: L.eye(a),
    "tril_indices": lambda L, a, b: L.tril_indices(a, b),
    "triu_indices": lambda L, a, b: L.triu_indices(3, a, b),
    "linspace": lambda L, a, b: L.linspace(0, 1, a),
}


def _outcome(lib, case, a, b):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = CASES[case](lib, a, b)
    except Exception as e:  # noqa: BLE001  (the class and text are compared)
        text = str(e).replace("torch.", "jitgrad.")  # (the parser's signatures name the module)
        return "raised", f"{type(e).__name__}: {text}"
    dtype = str(out.dtype).split(".")[-1]
    return "ok", (dtype, tuple(out.shape), out.to(lib.float64).numpy())


@pytest.mark.parametrize("case", sorted(CASES))
def test_factory_arguments_match_torch(case):
    torch = pytest.importorskip("torch")
    bad = []
    for a, b in itertools.product(VALUES, VALUES):
        t, j = _outcome(torch, case, a, b), _outcome(jitgrad, case, a, b)
        if t[0] == "raised" and "received an invalid combination" in t[1] and \
                case in ("randn", "eye"):
            # (torch lists its overloads; for randn/eye jitgrad's list differs in wording)
            t, j = t[0], j[0]
        elif t[0] == "ok" and j[0] == "ok":
            same = t[1][:2] == j[1][:2] and np.allclose(t[1][2], j[1][2], equal_nan=True)
            t, j = "ok", "ok" if same else j
        if t != j:
            bad.append((a, b, t, j))
    assert bad == []


def test_a_float_size_is_refused_not_truncated():
    with pytest.raises(TypeError, match="argument 'size' failed to unpack the object at pos 2"):
        jitgrad.zeros(2, 2.5)
    with pytest.raises(TypeError, match=r"must be tuple of ints, not float"):
        jitgrad.ones(2.0)
    assert tuple(jitgrad.zeros(np.int64(2), jitgrad.tensor(3)).shape) == (2, 3)


def test_arange_step_must_agree_with_the_bounds():
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with step "
                                           "sign"):
        jitgrad.arange(1, 0)
    with pytest.raises(RuntimeError, match="unsupported range: 0 -> inf"):
        jitgrad.arange(0, math.inf)
    assert jitgrad.arange(0, 1, math.inf).numel() == 0  # (torch's ceil((end - start) / step))
    assert jitgrad.arange(5, 0, -2).tolist() == [5, 3, 1]


def test_numbers_that_do_not_fit_the_dtype_are_refused():
    with pytest.raises(RuntimeError, match="value cannot be converted to type int without "
                                           "overflow"):
        jitgrad.full((2,), 1e20, dtype=jitgrad.int32)
    with pytest.raises(RuntimeError, match="value cannot be converted to type int64 without "
                                           "overflow"):
        jitgrad.tensor([math.nan], dtype=jitgrad.int64)
    # (unsigned: two's complement down to -max, as torch)
    assert jitgrad.full((1,), -1, dtype=jitgrad.uint8).tolist() == [255]
