"""``jitgrad.cuda``: the cuda device (``is_available``, ``device_count``, ``synchronize``).

Tensors go to the GPU with ``device="cuda"``, ``.cuda()`` or ``.to("cuda")``; their data are
numba-cuda device arrays (``pip install jitgrad[cuda]``). ``is_available()`` is True where
numba-cuda can drive a GPU, or under ``NUMBA_ENABLE_CUDASIM=1`` (numba's simulator, which
runs the same kernels on the CPU, slowly). It imports ``numba.cuda`` only when asked and
never raises.
"""

from __future__ import annotations

from ..errors import OutOfMemoryError  # noqa: F401 - torch.cuda.OutOfMemoryError is torch's


def _numba_cuda():
    try:
        from numba import cuda
    except Exception:  # noqa: BLE001 - no numba, or numba without CUDA support
        return None
    return cuda


# Tensors can live on a cuda device (kept for code that read this flag).
CUDA_TENSORS = True


def is_available() -> bool:
    """True if jitgrad can put tensors on a CUDA GPU here (or numba's simulator is on);
    never raises."""
    return gpu_usable()


def synchronize(device=None) -> None:
    """Waits for every kernel launched on the cuda device to finish."""
    from ..device import check_device

    check_device("cuda" if device is None else device)
    _numba_cuda().synchronize()


def current_device() -> int:
    """The index of the cuda device jitgrad uses (always 0)."""
    return 0


def gpu_usable() -> bool:
    """True if numba can use a CUDA GPU on this machine; never raises."""
    cuda = _numba_cuda()
    if cuda is None:
        return False
    try:
        return bool(cuda.is_available())
    except Exception:  # noqa: BLE001 - a broken driver or toolkit counts as unavailable
        return False


def device_count() -> int:
    """The number of CUDA GPUs jitgrad can use (0 while ``is_available()`` is False)."""
    if not is_available():
        return 0
    try:
        return len(_numba_cuda().gpus)
    except Exception:  # noqa: BLE001
        return 0


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether cuda tensors can be bfloat16 (``torch.cuda.is_bf16_supported``): False, as
    jitgrad's cuda tensors have no bfloat16 (CPU bfloat16 tensors work); scripts that pick
    ``'bfloat16' if torch.cuda.is_bf16_supported() else 'float16'`` get float16.

    Args:
        including_emulation: torch's flag for bfloat16 emulated on older GPUs (no difference
            here).
    """
    return False


def manual_seed(seed: int) -> None:
    """Sets the seed of the CUDA device's random generators (``torch.cuda.manual_seed``): the
    CPU generator is left alone. ``jitgrad.manual_seed`` seeds both.

    Args:
        seed: the seed, an integer.
    """
    from .. import _cuda_array
    from ..random import default_generator

    _cuda_array.DEVICE_SEED.update(seed=int(seed), rng=default_generator()._rng)


def manual_seed_all(seed: int) -> None:
    """Sets the seed of every CUDA device's generators (jitgrad drives one device).

    Args:
        seed: the seed, an integer.
    """
    manual_seed(seed)


def memory_allocated(device=None) -> int:
    """The bytes held by the cuda tensors alive now (``torch.cuda.memory_allocated``): the
    device arrays jitgrad allocated for tensor data, each rounded up to 512 bytes as torch's
    caching allocator rounds it; 0 before any cuda tensor exists.

    Args:
        device: the cuda device (jitgrad drives one; None is the current one).
    """
    from .._cuda_array import MEMORY

    return MEMORY["allocated"]


def max_memory_allocated(device=None) -> int:
    """The most bytes ``memory_allocated`` reached since the start or the last
    ``reset_peak_memory_stats`` (``torch.cuda.max_memory_allocated``).

    Args:
        device: the cuda device (jitgrad drives one; None is the current one).
    """
    from .._cuda_array import MEMORY

    return MEMORY["peak"]


def reset_peak_memory_stats(device=None) -> None:
    """Starts ``max_memory_allocated`` again from what is allocated now.

    Args:
        device: the cuda device (jitgrad drives one; None is the current one).
    """
    from .._cuda_array import MEMORY

    MEMORY["peak"] = MEMORY["allocated"]


def empty_cache() -> None:
    """Hands the device memory that freed tensors left cached back to the driver
    (``torch.cuda.empty_cache``): numba's pending deallocations are flushed. Before jitgrad
    put any tensor on the device nothing happens (no CUDA context is made, as torch's makes
    none before CUDA is initialized)."""
    from .._cuda_array import MEMORY

    if MEMORY["peak"] == 0:
        return
    try:
        context = _numba_cuda().current_context()
        context.deallocations.clear()
    except Exception:  # noqa: BLE001 - the simulator's context caches nothing
        return


def __getattr__(name: str):
    if name == "amp":  # torch.cuda.amp's deprecated names (imported on first use)
        import importlib

        return importlib.import_module(f"{__name__}.amp")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
