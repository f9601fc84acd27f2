"""jitgrad: torch.autograd semantics on NumPy, with a tracing JIT that stages the backward."""

from __future__ import annotations

from . import dtypes
from .dtypes import (bool, cdouble, cfloat, complex64, complex128, double, dtype, float,  # noqa: A004
                     float16, float32, float64, get_default_dtype, half, int, int8, int16, int32,
                     int64, long, promote_types, set_default_dtype, short, uint8)
from .device import device
from .tensor import Size, Tensor
from .ops import *  # noqa: F403
from .ops import (_install, abs, absolute, add, addmm, all, allclose, amax, amin, any,  # noqa: A004
                  arange, argmax, argmin, as_tensor, bmm, cat, chunk, clamp, clip, clone, concat,
                  concatenate, conj, cos, div, divide, dot, empty, empty_like, eq, equal, erf,
                  exp, expand, expm1, eye, flatten, from_numpy, full, full_like, gather, ge, gt,
                  imag, index_add, index_select, is_tensor, isnan, le, linspace, log, log1p,
                  log_softmax, logical_and, logical_not, logical_or, logsumexp, lt, masked_fill,
                  matmul, max, maximum, mean, min, minimum, mm, mul, multiply, mv, narrow, ne,
                  neg, negative, numel, ones, ones_like, outer, permute, pow, prod, real,
                  reciprocal, relu, reshape, rsqrt, scatter_add, select, sgn, sigmoid, sign, sin,
                  softmax, split, sqrt, squeeze, stack, std, sub, subtract, sum, t, tan, tanh,
                  tensor, transpose, true_divide, unsqueeze, var, view, where, zeros, zeros_like)
from .random import manual_seed, rand, rand_like, randint, randn, randn_like
from .ops.extras import *  # noqa: F403 - sort, cumsum, norm, einsum, ... (issue 15)
from .ops.extras import masked_fill  # noqa: F811 - MaskedFillBackward0, as torch
from .random import (Generator, get_rng_state, initial_seed, normal, randperm, seed,
                     set_rng_state)
from .random import _default as default_generator
from ._legacy import (BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor,
                      IntTensor, LongTensor, ShortTensor)
from .device import get_default_device, set_default_device
from .serialization import load, save
from ._tensor_str import get_printoptions, printoptions, set_printoptions
from . import cuda, linalg
from .autograd import op_node as _op_node  # noqa: F401 - wires OpNode into the dispatcher
from .autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled,
                                 is_inference_mode_enabled, no_grad, set_grad_enabled)
from . import autograd

_install(Tensor)

__version__ = "0.1.0"


def result_type(tensor1, tensor2) -> dtype:  # noqa: A001
    """The dtype torch's promotion gives ``tensor1 op tensor2``."""
    return dtypes.result_type(tensor1, tensor2)


def __getattr__(name: str):
    import importlib

    if name in ("nn", "optim", "func", "jit", "viz", "distributed", "utils"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'jitgrad' has no attribute {name!r}")
