"""``jitgrad.cuda``: whether a CUDA device is usable (``is_available``, ``device_count``).

jitgrad's tensors live on the CPU in this version: there is no CUDA tensor path yet, so
``is_available()`` is False even on a machine with a GPU, and scripts that choose a device with
``"cuda" if torch.cuda.is_available() else "cpu"`` run unchanged on the CPU. ``gpu_usable()``
says whether numba itself could drive a GPU here (for the CUDA backend to come); it imports
``numba.cuda`` only when asked and never raises.
"""

from __future__ import annotations


def _numba_cuda():
    try:
        from numba import cuda
    except Exception:  # noqa: BLE001 - no numba, or numba without CUDA support
        return None
    return cuda


# Set by the CUDA tensor backend when it exists; until then no tensor can live on a GPU.
CUDA_TENSORS = False


def is_available() -> bool:
    """True if jitgrad can put tensors on a CUDA GPU here (never, in this version; see
    ``gpu_usable``); never raises."""
    return CUDA_TENSORS and gpu_usable()


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


def manual_seed(seed: int) -> None:
    """Seeds the CUDA generators. jitgrad draws every random number on the CPU (seed it with
    ``jitgrad.manual_seed``), so there is nothing to seed: as torch on a machine without CUDA,
    this does nothing."""
    int(seed)  # (torch checks that the seed is an integer)


def manual_seed_all(seed: int) -> None:
    """Seeds the generators of all CUDA devices: nothing to seed in jitgrad (see
    ``manual_seed``)."""
    int(seed)
