"""Special functions NumPy lacks, exact to double precision."""

from __future__ import annotations

import math

import numpy as np

_erf = np.vectorize(math.erf, otypes=[np.float64])


def erf(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    return _erf(x).astype(x.dtype, copy=False)
