"""The op database on the cuda device (numba's simulator): ``benchmarks/cuda_opdb.py`` runs
each record's first sample forward and backward on cuda tensors and on the CPU.

Every op either equals the CPU (values and gradients) or says clearly that it has no CUDA
kernel; none gives a different answer. The ops with kernels today are listed: a change that
loses one fails here.
"""

from __future__ import annotations

import io

import pytest
from test_cuda import CUDA

pytestmark = [pytest.mark.skipif(CUDA is None, reason="numba.cuda is not usable here"),
              pytest.mark.slow]

WITH_KERNELS = {
    "neg", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "abs", "sin", "cos", "tan", "tanh",
    "sigmoid", "relu", "erf", "sign", "add", "sub", "mul", "div", "maximum", "minimum",
    "pow_scalar", "pow_tensor", "pow_rscalar", "clamp", "where", "eq", "ne", "lt", "le", "gt",
    "ge", "sum", "mean", "amax", "amin", "max", "min", "var", "std", "logsumexp", "softmax",
    "log_softmax", "matmul", "mm", "bmm", "dot", "outer", "mv", "reshape", "view", "transpose",
    "permute", "t", "T", "expand", "squeeze", "unsqueeze", "flatten", "cat", "stack", "split",
    "chunk", "getitem", "index_select", "gather", "narrow", "gelu", "gelu_tanh", "silu",
    "softplus", "layer_norm", "nll_loss", "mse_loss", "round", "floor", "ceil", "trunc",
    "isfinite", "isinf", "masked_fill", "scatter_add", "index_add", "movedim", "addmm",
    "reciprocal", "bitwise_xor", "clone_contiguous", "zero_", "fill_", "fill_tensor_", "copy_",
    "leaky_relu", "leaky_relu_slope", "elu", "softplus_beta", "embedding",
    "embedding_modified_grad",
}


def test_opdb_on_cuda_equals_the_cpu_or_says_no_kernel():
    from benchmarks import cuda_opdb

    results = cuda_opdb.run(out=io.StringIO())
    wrong = {name: r for name, r in results.items() if r not in ("ok", "no kernel") and
             not r.startswith("error: TypeError: can't convert cuda:0 device type tensor")}
    assert not wrong, wrong
    lost = sorted(name for name in WITH_KERNELS if results.get(name) != "ok")
    assert not lost, {name: results.get(name) for name in lost}
