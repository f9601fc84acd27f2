"""A float64 batch through a float32 model (or a Long one through anything) fails with torch's
own message, the one users search for: ``mat1 and mat2 must have the same dtype, but got Double
and Float`` from ``nn.Linear``, ``Input type (double) and bias type (float) should be the same``
from a convolution, and the texts of mm, bmm, mv, dot and matmul."""

from __future__ import annotations

import pytest

import jitgrad

torch = pytest.importorskip("torch")

CASES = {
    "mm": lambda L: L.zeros(3, 4, dtype=L.float64).mm(L.zeros(4, 2)),
    "mm_long": lambda L: L.zeros(3, 4, dtype=L.int64).mm(L.zeros(4, 2)),
    "mm_half": lambda L: L.zeros(3, 4, dtype=L.float16).mm(L.zeros(4, 2)),
    "mm_complex": lambda L: L.zeros(3, 4, dtype=L.complex64).mm(L.zeros(4, 2)),
    "mm_shape_first": lambda L: L.zeros(3, 4).mm(L.zeros(5, 2, dtype=L.float64)),
    "matmul_1d": lambda L: L.zeros(4, dtype=L.float64) @ L.zeros(4),
    "matmul_2d_1d": lambda L: L.zeros(3, 4, dtype=L.float64) @ L.zeros(4),
    "matmul_3d_3d": lambda L: L.zeros(2, 3, 4, dtype=L.float64) @ L.zeros(2, 4, 2),
    "bmm": lambda L: L.zeros(2, 3, 4).bmm(L.zeros(2, 4, 2, dtype=L.float64)),
    "mv": lambda L: L.zeros(3, 4).mv(L.zeros(4, dtype=L.float64)),
    "mv_long": lambda L: L.zeros(3, 4, dtype=L.int64).mv(L.zeros(4)),
    "dot": lambda L: L.zeros(4, dtype=L.int64).dot(L.zeros(4)),
    "dot_dtype_before_size": lambda L: L.zeros(4).dot(L.zeros(5, dtype=L.float64)),
    "addmm_mats": lambda L: L.addmm(L.zeros(2), L.zeros(3, 4, dtype=L.float64), L.zeros(4, 2)),
    "addmm_bias": lambda L: L.addmm(L.zeros(2, dtype=L.float64), L.zeros(3, 4), L.zeros(4, 2)),
    "addmm_dtype_before_shape": lambda L: L.addmm(L.zeros(2), L.zeros(3, 4, dtype=L.float64),
                                                  L.zeros(5, 2)),
    "linear_double_input": lambda L: L.nn.Linear(4, 2)(L.zeros(3, 4, dtype=L.float64)),
    "linear_long_input": lambda L: L.nn.Linear(4, 2)(L.zeros(3, 4, dtype=L.int64)),
    "linear_3d_input": lambda L: L.nn.Linear(4, 2)(L.zeros(5, 3, 4, dtype=L.float64)),
    "linear_no_bias": lambda L: L.nn.Linear(4, 2, bias=False)(L.zeros(3, 4, dtype=L.float64)),
    "conv2d_double_input": lambda L: L.nn.Conv2d(1, 2, 3)(L.zeros(1, 1, 4, 4, dtype=L.float64)),
    "conv2d_half_input": lambda L: L.nn.Conv2d(1, 2, 3)(L.zeros(1, 1, 4, 4, dtype=L.float16)),
    "conv2d_long_input": lambda L: L.nn.Conv2d(1, 2, 3)(L.zeros(1, 1, 4, 4, dtype=L.int64)),
    "conv1d_double_input": lambda L: L.nn.Conv1d(1, 2, 3)(L.zeros(1, 1, 4, dtype=L.float64)),
    "conv3d_double_input": lambda L: L.nn.Conv3d(1, 2, 3)(L.zeros(1, 1, 4, 4, 4,
                                                                   dtype=L.float64)),
    "conv2d_no_bias": lambda L: L.nn.Conv2d(1, 2, 3, bias=False)(L.zeros(1, 1, 4, 4,
                                                                         dtype=L.float64)),
    "conv2d_double_bias": lambda L: L.nn.functional.conv2d(
        L.zeros(1, 1, 4, 4), L.zeros(2, 1, 3, 3), L.zeros(2, dtype=L.float64)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_dtype_mismatch_message_as_torch(name):
    def message(lib):
        with pytest.raises(RuntimeError) as info:
            CASES[name](lib)
        return str(info.value)
    assert message(jitgrad) == message(torch)
