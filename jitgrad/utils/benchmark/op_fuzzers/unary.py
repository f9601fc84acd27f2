"""``UnaryOpFuzzer``: 1-3 dimensional tensors ``x``, sometimes strided or non-contiguous."""

from __future__ import annotations

from .... import dtypes
from ..utils.fuzzer import FuzzedTensor, Fuzzer
from ._shapes import random_value, shape_parameters, step_parameters

__all__ = ["UnaryOpFuzzer"]


class UnaryOpFuzzer(Fuzzer):
    """torch's ``op_fuzzers.unary.UnaryOpFuzzer``.

    Args:
        seed: The Fuzzer's seed.
        dtype: The tensor's dtype.
        cuda: Whether to put it on the GPU.
    """

    def __init__(self, seed: int, dtype: dtypes.dtype = dtypes.float32,
                 cuda: bool = False) -> None:
        super().__init__(
            parameters=[*shape_parameters(), step_parameters(("x",)), random_value()],
            tensors=[FuzzedTensor(name="x", size=("k0", "k1", "k2"),
                                  steps=("x_step_0", "x_step_1", "x_step_2"),
                                  probability_contiguous=0.75, min_elements=4 * 1024,
                                  max_elements=32 * 1024 ** 2,
                                  max_allocation_bytes=2 * 1024 ** 3, dim_parameter="dim",
                                  dtype=dtype, cuda=cuda)],
            seed=seed)
