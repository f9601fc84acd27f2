"""``BinaryOpFuzzer``: pairs ``x``, ``y`` of 1-3 dimensional tensors, ``y`` sometimes with
size-one dimensions (broadcasting), both sometimes strided or non-contiguous."""

from __future__ import annotations

from .... import dtypes
from ..utils.fuzzer import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias
from ._shapes import random_value, shape_parameters, step_parameters

__all__ = ["BinaryOpFuzzer"]


class BinaryOpFuzzer(Fuzzer):
    """torch's ``op_fuzzers.binary.BinaryOpFuzzer``.

    Args:
        seed: The Fuzzer's seed.
        dtype: The tensors' dtype.
        cuda: Whether to put them on the GPU.
    """

    def __init__(self, seed: int, dtype: dtypes.dtype = dtypes.float32,
                 cuda: bool = False) -> None:
        y_sizes = [FuzzedParameter(name=f"y_k{i}",
                                   distribution={ParameterAlias(f"k{i}"): 0.8, 1: 0.2},
                                   strict=True) for i in range(3)]
        common = {"steps": ("x_step_0", "x_step_1", "x_step_2"), "probability_contiguous": 0.75,
                  "max_allocation_bytes": 2 * 1024 ** 3, "dim_parameter": "dim",
                  "dtype": dtype, "cuda": cuda}
        super().__init__(
            parameters=[*shape_parameters(), y_sizes, step_parameters(("x", "y")),
                        random_value()],
            tensors=[
                FuzzedTensor(name="x", size=("k0", "k1", "k2"), min_elements=4 * 1024,
                             max_elements=32 * 1024 ** 2, **common),
                # (torch's y also takes x's steps: its y_step parameters are drawn, unused)
                FuzzedTensor(name="y", size=("y_k0", "y_k1", "y_k2"), **common),
            ],
            seed=seed)
