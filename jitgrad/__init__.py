"""jitgrad: torch.autograd semantics on NumPy, with a tracing JIT that stages the backward."""

from __future__ import annotations

from . import _malloc, dtypes
from ._version import __version__ as __version__
from .dtypes import (bool, cdouble, cfloat, complex64, complex128, double, dtype, float,  # noqa: A004
                     bfloat16, float16, float32, float64, get_default_dtype, half, int, int8,
                     int16, int32, int64, long, promote_types, set_default_dtype, short, uint8)
from .device import device
from .tensor import Size, Tensor
from . import ops
from .ops.registry import OPS, OpDef, apply, defop
from .random import Generator  # (jitgrad.random declares rand, randn, ... before ops.install)
from .ops.extras import (channels_last, channels_last_3d, contiguous_format, memory_format,
                         preserve_format)
from .random import _default as default_generator
from .ops.control_flow import cond, while_loop  # torch.cond, torch.while_loop
from ._legacy import (BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, DoubleTensor,
                      FloatTensor, HalfTensor, IntTensor, LongTensor, ShortTensor)
from ._runtime_flags import (is_anomaly_check_nan_enabled, is_anomaly_enabled,
                             is_warn_always_enabled, set_anomaly_enabled, set_warn_always)
from .device import get_default_device, set_default_device
from .serialization import load, save
from ._tensor_str import get_printoptions, printoptions, set_printoptions
from . import cuda, linalg
from . import backends  # noqa: F401 - plugs the CUDA runtime into device (RUNTIME_LOADERS)
from .autograd import op_node as _op_node  # noqa: F401 - wires OpNode into the dispatcher
from .autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled,
                                 is_inference_mode_enabled, no_grad, set_grad_enabled)
from . import autograd
from ._threads import get_num_threads, set_num_threads
from ._deterministic import (are_deterministic_algorithms_enabled, get_deterministic_debug_mode,
                             get_float32_matmul_precision,
                             is_deterministic_algorithms_warn_only_enabled,
                             set_deterministic_debug_mode, set_float32_matmul_precision,
                             use_deterministic_algorithms)
from ._type_info import can_cast, finfo, iinfo, is_complex, is_floating_point
from .amp.autocast_mode import (autocast, get_autocast_cpu_dtype, get_autocast_dtype,
                                get_autocast_gpu_dtype, is_autocast_cpu_enabled,
                                is_autocast_enabled, set_autocast_dtype, set_autocast_enabled)
from .amp.autocast_mode import (autocast_decrement_nesting, autocast_increment_nesting,
                                clear_autocast_cache, is_autocast_cache_enabled,
                                set_autocast_cache_enabled, set_autocast_cpu_dtype,
                                set_autocast_cpu_enabled, set_autocast_gpu_dtype)
from .amp.grad_scaler import (_amp_foreach_non_finite_check_and_unscale_,  # noqa: F401
                              _amp_update_scale_)
from ._runtime_switches import (compiled_with_cxx11_abi, get_num_interop_threads, has_lapack,
                                has_mkl, has_openmp, has_spectral, init_num_threads,
                                is_vulkan_available, set_default_tensor_type, set_flush_denormal,
                                set_num_interop_threads)
from ._lowrank import pca_lowrank, svd_lowrank
from .errors import AcceleratorError, OutOfMemoryError
from ._lobpcg import lobpcg
from ._sym import sym_float, sym_int, sym_ite, sym_max, sym_min, sym_not, sym_sqrt, sym_sum

_malloc.tune()  # (glibc keeps freed mid-size arrays for the next ones: see _malloc)
ops.install(globals(), Tensor)  # every declared public function, method and in-place method
from . import _torch_function as _tf  # noqa: E402 - torch's __torch_function__ protocol
from . import overrides  # noqa: E402 - (its installer: wraps the surface once the protocol is used)

_tf.package = __import__("sys").modules[__name__]
Tensor.__torch_function__ = classmethod(_tf.tensor_torch_function)
Tensor.__init_subclass__ = classmethod(_tf.tensor_init_subclass)
Tensor._make_subclass = staticmethod(_tf.make_subclass)
from ._nn_aliases import install_tensor_methods as _install_nn_methods  # noqa: E402

_install_nn_methods(Tensor)  # Tensor.hardshrink / prelu (torch.conv2d ...: __getattr__ below)
from . import sparse  # noqa: E402 - sparse tensors (their methods and dispatch hook)
from .sparse import (sparse_bsc, sparse_bsc_tensor, sparse_bsr,  # noqa: E402
                     sparse_bsr_tensor, sparse_compressed_tensor, sparse_coo, sparse_coo_tensor,
                     sparse_csc, sparse_csc_tensor, sparse_csr, sparse_csr_tensor, smm, spmm)


def result_type(tensor1, tensor2) -> dtype:  # noqa: A001
    """The dtype torch's promotion gives ``tensor1 op tensor2``."""
    return dtypes.result_type(tensor1, tensor2)


def __getattr__(name: str):
    import importlib

    if name in ("nn", "optim", "func", "jit", "viz", "distributed", "utils", "testing",
                "special", "distributions", "fft", "accelerator", "amp", "cpu",
                "multiprocessing", "profiler", "signal", "library", "functional", "quasirandom",
                "fx", "futures", "types", "storage", "hub", "_logging", "_dynamo", "compiler",
                "_C", "version", "return_types"):
        return importlib.import_module(f"{__name__}.{name}")
    if name in ("uint16", "uint32", "uint64"):  # (limited dtypes: see dtypes.__getattr__)
        return getattr(dtypes, name)
    if name == "vmap":  # torch.vmap is torch.func.vmap
        from .func import vmap

        return vmap
    if name == "GradScaler":  # torch.GradScaler is torch.amp.GradScaler
        from .amp import GradScaler

        return GradScaler
    if name == "to_dlpack":  # torch.to_dlpack is torch.utils.dlpack.to_dlpack
        from .utils.dlpack import to_dlpack

        return to_dlpack
    if name == "get_device_module":
        from .accelerator import get_device_module

        return get_device_module
    if name == "compile":  # torch.compile's entry point, on jit (imported on first use)
        from .jit.torch_compile import compile

        return compile
    # torch.conv2d ... (light); torch.kl_div, native_layer_norm ...; lstm_cell, lstm ...
    for module in ("_nn_aliases", "_aten_nn", "_aten_rnn"):
        aliases = importlib.import_module(f"{__name__}.{module}")
        if name in aliases.__all__:
            return getattr(aliases, name)
    if name in ("_standard_gamma", "_sample_dirichlet", "_standard_gamma_grad", "_dirichlet_grad"):
        return getattr(importlib.import_module(f"{__name__}.distributions._standard_gamma"), name)
    if name.startswith("_foreach_"):  # torch._foreach_add_, ... (multi-tensor ops)
        from ._foreach_ops import FUNCTIONS

        if name in FUNCTIONS:
            return FUNCTIONS[name]
    if name in _QUANTIZED_NAMES:
        raise AttributeError(
            f"module 'jitgrad' has no attribute {name!r}: jitgrad has no quantized tensors "
            "(torch 2.13 deprecates them and torch.ao.quantization); for quantization-aware "
            "training use jitgrad.fake_quantize_per_tensor_affine / "
            "fake_quantize_per_channel_affine")
    raise AttributeError(f"module 'jitgrad' has no attribute {name!r}")


_QUANTIZED_NAMES = frozenset({
    "ao", "quantization", "quantize_per_tensor", "quantize_per_channel",
    "quantize_per_tensor_dynamic", "dequantize", "qint8", "quint8", "qint32", "quint4x2",
    "quint2x4", "qscheme", "per_tensor_affine", "per_channel_affine", "per_tensor_symmetric",
    "per_channel_symmetric", "per_channel_affine_float_qparams", "int_repr"})
