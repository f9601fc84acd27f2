"""The shape parameters the unary and binary op fuzzers share (torch's, in torch's order)."""

from __future__ import annotations

import numpy as np

from ..utils.fuzzer import FuzzedParameter, ParameterAlias

_MIN_DIM_SIZE = 16
_MAX_DIM_SIZE = 16 * 1024 ** 2
_POW_TWO_SIZES = tuple(2 ** i for i in range(int(np.log2(_MIN_DIM_SIZE)),
                                             int(np.log2(_MAX_DIM_SIZE)) + 1))


def shape_parameters() -> list:
    """The dimensionality (1, 2 or 3) and sizes ``k0..k2``: loguniform over all integers (80%)
    or over the powers of two (20%)."""
    return [
        FuzzedParameter("dim", distribution={1: 0.3, 2: 0.4, 3: 0.3}, strict=True),
        [FuzzedParameter(name=f"k_any_{i}", minval=_MIN_DIM_SIZE, maxval=_MAX_DIM_SIZE,
                         distribution="loguniform") for i in range(3)],
        [FuzzedParameter(name=f"k_pow2_{i}",
                         distribution={size: 1. / len(_POW_TWO_SIZES) for size in _POW_TWO_SIZES})
         for i in range(3)],
        [FuzzedParameter(name=f"k{i}", distribution={ParameterAlias(f"k_any_{i}"): 0.8,
                                                     ParameterAlias(f"k_pow2_{i}"): 0.2},
                         strict=True) for i in range(3)],
    ]


def step_parameters(names: tuple[str, ...]) -> list:
    """Slice steps ``{name}_step_{i}`` (strided memory access), interleaved as torch's."""
    return [FuzzedParameter(name=f"{name}_step_{i}",
                            distribution={1: 0.8, 2: 0.06, 4: 0.06, 8: 0.04, 16: 0.04})
            for i in range(3) for name in names]


def random_value() -> FuzzedParameter:
    """Repeatable entropy for downstream applications."""
    return FuzzedParameter(name="random_value", minval=0, maxval=2 ** 32 - 1,
                           distribution="uniform")
