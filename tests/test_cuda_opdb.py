"""The op database on the cuda device (numba's simulator): ``benchmarks/cuda_opdb.py`` runs
each record's first sample forward and backward on cuda tensors and on the CPU.

Every op either equals the CPU (values and gradients) or says clearly that it has no CUDA
kernel; none gives a different answer. The ops with kernels today are listed (every one of the
161 records): a change that loses one fails here.
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
    # issue 14's second part: line kernels, data-dependent sizes, compositions, network ops
    "prod", "round_decimals", "sort", "argsort", "topk", "cumsum", "cumprod", "tril", "triu",
    "masked_select", "masked_scatter", "nonzero", "scatter", "scatter_multiply", "norm",
    "norm_p0", "linalg.vector_norm", "linalg.matrix_norm", "linalg.norm", "conv2d", "conv1d",
    "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "batch_norm", "copy_slices",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "smooth_l1_loss", "huber_loss",
    "pad", "pad_reflect", "pad_replicate", "linalg.svdvals", "linalg.matrix_norm_svd",
    # the ops of opdb_arranging: decompositions into ops with kernels, and (last session's
    # eleven) pointwise ops with templates
    "addcdiv", "addcmul", "broadcast_tensors", "count_nonzero", "diff", "flip", "isclose",
    "linalg_cross", "meshgrid", "repeat", "repeat_interleave", "roll", "square", "tensordot",
    "tile", "trace", "atan2", "hypot", "logaddexp", "lerp_scalar", "lerp_tensor", "nan_to_num",
    "remainder", "remainder_scalar", "fmod", "fmod_scalar", "floor_divide",
}


def test_opdb_on_cuda_equals_the_cpu_or_says_no_kernel():
    from benchmarks import cuda_opdb

    results = cuda_opdb.run(out=io.StringIO())
    wrong = {name: r for name, r in results.items() if r not in ("ok", "no kernel")}
    assert not wrong, wrong
    lost = sorted(name for name in WITH_KERNELS if results.get(name) != "ok")
    assert not lost, {name: results.get(name) for name in lost}
