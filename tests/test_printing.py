"""Tensors print as torch prints them: ``repr`` compared with torch's, string for string, over
many shapes, dtypes and value ranges (wrapping at 80 columns, suffix placement, summarization,
integer/fixed/scientific formatting, bool, complex, empty tensors, grad_fn and requires_grad)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import jitgrad


def _torch():
    return pytest.importorskip("torch")


_RNG = np.random.default_rng(15)

_VALUES = {
    "ints_small": lambda shape: _RNG.integers(-5, 5, shape),
    "ints_wide": lambda shape: _RNG.integers(-100000, 100000, shape),
    "floats": lambda shape: _RNG.standard_normal(shape),
    "floats_big": lambda shape: _RNG.standard_normal(shape) * 1e5,
    "floats_tiny": lambda shape: _RNG.standard_normal(shape) * 1e-6,
    "whole_floats": lambda shape: _RNG.integers(-50, 50, shape).astype(np.float64),
    "mixed_scale": lambda shape: _RNG.standard_normal(shape) * 10.0 ** _RNG.integers(-3, 6, shape),
}

_SHAPES = [(), (1,), (5,), (25,), (40,), (3, 4), (3, 10), (2, 3, 4), (12, 12), (2, 1, 30),
           (1001,), (40, 40), (3, 400), (2, 0), (0,), (0, 3, 1)]


def _suffixes_joined(s: str) -> str:
    # "dtype=jitgrad.int32" is two characters longer than torch's "dtype=torch.int32", which can
    # move it (and what follows it) to a line of its own: compared with suffixes joined
    return re.sub(r",\s+(dtype=|grad_fn=|requires_grad=|size=)", r", \1", s)


def _same(make):
    t = _torch()
    got = make(jitgrad)
    want = make(t).replace("torch.", "jitgrad.")
    if "dtype=" in want:
        got, want = _suffixes_joined(got), _suffixes_joined(want)
    assert got == want, f"\njitgrad:\n{got}\ntorch:\n{want}"


_GRID = [(shape, kind, dtype) for shape in _SHAPES for kind in _VALUES
         for dtype in ("float32", "float64", "int64", "int32")
         if not (dtype.startswith("int") and kind.startswith("floats"))]


@pytest.mark.parametrize("shape,kind,dtype", _GRID, ids=str)
def test_repr_matches_torch(shape, kind, dtype):
    data = np.asarray(_VALUES[kind](shape)).astype(dtype)
    _same(lambda lib: repr(lib.tensor(data)))


@pytest.mark.parametrize("shape", [(2,), (30,), (3, 30), ()], ids=str)
def test_bool_repr(shape):
    data = _RNG.random(shape) > 0.5
    _same(lambda lib: repr(lib.tensor(data)))


@pytest.mark.parametrize("values", [[1.0, float("nan"), float("inf")], [float("-inf"), 2.5],
                                    [0.0, -0.0], [1e-5, 1.0], [1e10, 1.0], [123456789.0],
                                    [0.1, 0.25, 1000.0], [float("nan")]], ids=str)
def test_special_floats(values):
    _same(lambda lib: repr(lib.tensor(values)))


@pytest.mark.parametrize("dtype", ["float16", "uint8", "int8", "int16", "complex64",
                                   "complex128"])
def test_other_dtypes(dtype):
    data = (np.arange(12).reshape(3, 4) * 1.5 - 4).astype(dtype)
    if dtype.startswith("complex"):
        data = data + 1j * data[::-1]
    _same(lambda lib: repr(lib.tensor(data)))


@pytest.mark.parametrize("n", [3, 9, 25, 60])
def test_grad_fn_and_requires_grad_suffixes(n):
    data = _RNG.standard_normal(n)
    _same(lambda lib: repr(lib.tensor(data, requires_grad=True)))
    _same(lambda lib: repr(lib.tensor(data, requires_grad=True) * 2))
    _same(lambda lib: repr((lib.tensor(data, requires_grad=True) * 2).sum()))
    _same(lambda lib: repr(lib.tensor(data, dtype=lib.float64, requires_grad=True).exp()))


def test_dtype_suffix_follows_the_default_dtype():
    t = _torch()
    data = [1.5, 2.0]
    try:
        jitgrad.set_default_dtype(jitgrad.float64)
        t.set_default_dtype(t.float64)
        _same(lambda lib: repr(lib.tensor(data, dtype=lib.float32)))
        _same(lambda lib: repr(lib.tensor(data)))
        _same(lambda lib: repr(lib.tensor([1 + 2j])))
    finally:
        jitgrad.set_default_dtype(jitgrad.float32)
        t.set_default_dtype(t.float32)


def test_printoptions_match_torch():
    t = _torch()
    data = np.linspace(-1, 1, 30)
    for opts in ({"precision": 2}, {"threshold": 5}, {"linewidth": 40}, {"edgeitems": 1,
                                                                           "threshold": 5},
                 {"sci_mode": True}, {"profile": "short"}):
        with jitgrad.printoptions(**opts), t._tensor_str.printoptions(**opts):
            _same(lambda lib: repr(lib.tensor(data)))
            _same(lambda lib: repr(lib.tensor(data.reshape(5, 6))))
    assert jitgrad.get_printoptions() == t._tensor_str.get_printoptions()


def test_str_and_format_of_a_scalar():
    x = jitgrad.tensor(2.5)
    assert str(x) == "tensor(2.5000)"
    assert f"{x:.2f}" == "2.50"


def test_format_of_tensors_as_torch():
    t = _torch()

    def formats(lib):
        scalars = (lib.tensor(7), lib.tensor(-1.5, requires_grad=True), lib.tensor(True),
                   lib.tensor(3))
        out = ["{}|{:+.2f}|{:>5}|{!r}".format(*scalars),  # noqa: UP032 - str.format itself
               f"{lib.tensor([1, 2])}", f"{lib.nn.Parameter(lib.tensor(2.0))}",
               format(lib.tensor(0.125, dtype=lib.float64), ".1e")]
        for bad in (lib.tensor([1.0, 2.0]), lib.nn.Parameter(lib.tensor(2.0))):
            with pytest.raises(TypeError, match="unsupported format string passed to"):
                format(bad, ".2f")
        return out
    ours, theirs = formats(jitgrad), formats(t)
    assert ours[0] == theirs[0] == "7|-1.50|    1|tensor(3)"
    assert [o.replace("jitgrad", "torch") for o in ours] == theirs


def test_dual_tensors_print_their_tangent_like_torch():
    t = _torch()

    def make(lib):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            d = fw.make_dual(lib.tensor([1.0, 2.0]), lib.tensor([3.0, 4.0]))
            return repr(d) + repr(d * 2)
    assert make(jitgrad) == make(t)


def test_sort_and_topk_results_print_like_torch():
    _same(lambda lib: repr(lib.tensor([3.0, 1.0, 2.0]).sort()))
    _same(lambda lib: repr(lib.tensor([[3, 1], [0, 2]]).topk(1)))
