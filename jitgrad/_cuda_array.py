"""``CudaArray``: the data of a cuda tensor, a strided view of a numba-cuda device allocation.

A cuda tensor's ``_data`` is a ``CudaArray`` where a CPU tensor's is a NumPy array. It holds
a flat, contiguous device allocation (``root``, a numba-cuda device array) and a view of it:
``shape``, element ``strides`` and element ``offset``, so movement ops (transpose, slices,
expand, reshape) stay views on the device as they are in NumPy. ``dev()`` is the view as a
numba-cuda device array, the form kernels take. It reads like a small ndarray (``shape``,
``dtype``, ``ndim``, ``size``, ``strides``, ``flags.c_contiguous``, ``copy()``) so the code
that only reads metadata serves both devices; converting it to NumPy raises torch's
``TypeError`` (a silent copy to the host is never made).

Under ``NUMBA_ENABLE_CUDASIM=1`` numba's simulator stands in for the GPU: its device arrays
wrap host arrays (``_ary``), and kernels run as Python threads.
"""

from __future__ import annotations

import weakref

import numpy as np

from .device import device

CUDA0 = device("cuda", 0)

TO_NUMPY = ("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
            "tensor to host memory first.")

_CUDA: list = []  # the numba.cuda module, once imported
# Kernels the array's methods call (``copy``, ``add``) and the device's random draws
# (``draw``, for ``ops.rng`` and the in-place samplers), installed by ``backends.cuda_eager``
# when it loads (it always has: a CudaArray is only made after ``device.check_device``
# loaded the CUDA runtime).
HOOKS: dict = {}
# A seed ``jitgrad.cuda.manual_seed`` gave the device generators ("seed"), and the CPU default
# generator's NumPy generator at that moment ("rng"): ``backends/cuda_random`` uses the seed
# unless ``jitgrad.manual_seed`` has reseeded everything since.
DEVICE_SEED: dict = {"seed": None, "rng": None}


def cuda():
    """The ``numba.cuda`` module (imported on first use)."""
    if not _CUDA:
        from numba import cuda as numba_cuda

        _CUDA.append(numba_cuda)
    return _CUDA[0]


def simulated() -> bool:
    """Whether numba's CUDA simulator stands in for a GPU."""
    import numba

    return bool(numba.config.ENABLE_CUDASIM)


class NoDevicePointerError(BufferError, AttributeError):
    """Raised for device pointers under the simulator (an AttributeError too, so ``hasattr(t,
    "__cuda_array_interface__")`` is False there)."""


class _Flags:
    __slots__ = ("c_contiguous",)

    def __init__(self, c: bool) -> None:
        self.c_contiguous = c


def contiguous_strides(shape: tuple) -> tuple:
    strides, n = [], 1
    for s in reversed(shape):
        strides.append(n)
        n *= max(int(s), 1)
    return tuple(reversed(strides))


class CudaArray:
    """A strided view of a device allocation (see the module docstring)."""

    __slots__ = ("root", "offset", "shape", "strides", "dtype", "_dev", "__weakref__")
    device = CUDA0

    def __init__(self, root, shape: tuple, strides: tuple | None = None,
                 offset: int = 0) -> None:
        self.root = root
        self.shape = tuple(int(s) for s in shape)
        self.strides = contiguous_strides(self.shape) if strides is None else tuple(strides)
        self.offset = int(offset)
        self.dtype = np.dtype(root.dtype)
        self._dev = None

    # -------------------------------------------------------------- ndarray-like metadata
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def byte_strides(self) -> tuple:
        return tuple(s * self.dtype.itemsize for s in self.strides)

    @property
    def flags(self) -> _Flags:
        return _Flags(self.is_contiguous())

    def is_contiguous(self) -> bool:
        want = contiguous_strides(self.shape)
        return all(n == 1 or s == w for n, s, w in zip(self.shape, self.strides, want))

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"CudaArray(shape={self.shape}, dtype={self.dtype}, device='cuda:0')"

    # -------------------------------------------------------------- device views
    def dev(self):
        """This view as a numba-cuda device array (made once)."""
        d = self._dev
        if d is None:
            d = self._dev = _device_view(self.root, self.shape, self.byte_strides,
                                         self.offset, self.dtype)
        return d

    def view(self, shape: tuple, strides: tuple | None = None, offset: int | None = None):
        """Another view of the same allocation (element strides and offset)."""
        if strides is None:
            if not self.is_contiguous():
                raise ValueError("a new shape of a non-contiguous CudaArray needs a copy")
            strides = contiguous_strides(tuple(shape))
        return CudaArray(self.root, shape, strides, self.offset if offset is None else offset)

    def reshape(self, *shape) -> CudaArray:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if tuple(shape) == self.shape:
            return self
        return (self if self.is_contiguous() else self.copy()).view(tuple(shape))

    def _host_read(self, other):
        raise NotImplementedError(
            "jitgrad: this op reads a cuda tensor's values on the host (it compares them in "
            "Python); move its inputs with .cpu() to run it there")

    __lt__ = __le__ = __gt__ = __ge__ = _host_read

    def shares_memory(self, other) -> bool:
        return isinstance(other, CudaArray) and other.root is self.root

    def copy(self) -> CudaArray:
        """A contiguous copy on the device (a copy kernel)."""
        return HOOKS["copy"](self)

    def copy_from(self, src: CudaArray) -> None:
        """Writes ``src`` (broadcast to this shape, cast to this dtype) into this view."""
        HOOKS["copy_into"](self, src)

    def copy_to_host(self) -> np.ndarray:
        """The values as a new NumPy array (a device-to-host copy)."""
        src = self if self.is_contiguous() else self.copy()
        out = src.dev().copy_to_host()
        return np.asarray(out).reshape(self.shape)

    # -------------------------------------------------------------- no silent host copies
    def __array__(self, dtype=None, copy=None):
        raise TypeError(TO_NUMPY)

    def tolist(self):
        return self.copy_to_host().tolist()

    # the engine adds gradients flowing into one input with ``+`` and ``+=``
    def __add__(self, other):
        return HOOKS["add"](self, other)

    @property
    def base(self):
        """The allocation this view reads (as ``ndarray.base`` names a view's owner)."""
        return self.root

    __iadd__ = __add__

    @property
    def __cuda_array_interface__(self) -> dict:
        """The CUDA array interface (version 3) of this view, for CuPy, torch, numba."""
        if simulated():
            raise NoDevicePointerError("__cuda_array_interface__ and DLPack export are not "
                                   "available under NUMBA_ENABLE_CUDASIM (the simulator has no "
                                   "device pointers)")
        return self.dev().__cuda_array_interface__

    def synchronize(self) -> None:
        """Waits for the kernels launched on the device."""
        cuda().synchronize()


def descriptor(x: CudaArray) -> tuple[np.ndarray, np.ndarray]:
    """A host array with ``x``'s shape and strides over a scratch buffer the size of ``x``'s
    allocation (never read unless a NumPy function copies it, and then discarded), and the
    buffer: NumPy's view functions run on it tell what view of ``x`` they make."""
    buf = np.empty(max(int(x.root.shape[0]), 1), dtype=x.dtype)
    desc = np.lib.stride_tricks.as_strided(buf[x.offset:], x.shape, x.byte_strides)
    return desc, buf


def _device_view(root, shape: tuple, byte_strides: tuple, offset: int, dt: np.dtype):
    if hasattr(root, "_ary"):  # the simulator: device arrays wrap host arrays
        host = np.lib.stride_tricks.as_strided(root._ary[offset:], shape, byte_strides)
        return type(root)(host)
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    start = offset * dt.itemsize  # the view's first element, to the allocation's end
    data = root.gpu_data.view(start) if start else root.gpu_data
    return DeviceNDArray(shape, byte_strides, dt, gpu_data=data)


# the bytes of the device arrays jitgrad allocated for tensors that are alive, and their peak
# (torch.cuda.memory_allocated / max_memory_allocated), each allocation rounded up to 512 bytes
# as torch's caching allocator rounds it
MEMORY = {"allocated": 0, "peak": 0}


def _uncount(nbytes: int) -> None:
    MEMORY["allocated"] -= nbytes


def _counted(dev, nbytes: int):
    """``dev``, a new device allocation of ``nbytes`` payload, counted until it is freed."""
    nbytes = -(-nbytes // 512) * 512
    MEMORY["allocated"] += nbytes
    MEMORY["peak"] = max(MEMORY["peak"], MEMORY["allocated"])
    weakref.finalize(dev, _uncount, nbytes)
    return dev


def format_size(nbytes: int) -> str:
    """A byte count as torch's allocator writes it (``512 bytes``, ``2.00 KiB``, ``1.50 GiB``)."""
    for limit, unit, scale in ((1024, None, 1), (1 << 20, "KiB", 1024), (1 << 30, "MiB", 1 << 20)):
        if nbytes <= limit:
            return f"{nbytes} bytes" if unit is None else f"{nbytes / scale:.2f} {unit}"
    return f"{nbytes / (1 << 30):.2f} GiB"


_CUDA_ERROR_OUT_OF_MEMORY = 2


def _allocate(make, nbytes: int):
    """``make()``, a numba-cuda allocation of ``nbytes``; the driver's out-of-memory error
    becomes torch's ``OutOfMemoryError`` (``except torch.cuda.OutOfMemoryError`` catches it),
    with the start of torch's text."""
    try:
        return make()
    except Exception as e:
        if getattr(e, "code", None) != _CUDA_ERROR_OUT_OF_MEMORY:
            raise
        from .errors import OutOfMemoryError

        text = f"CUDA out of memory. Tried to allocate {format_size(-(-nbytes // 512) * 512)}."
        try:
            free, total = cuda().current_context().get_memory_info()
            text += (f" GPU 0 has a total capacity of {format_size(total)} of which "
                     f"{format_size(free)} is free.")
        except Exception:  # noqa: BLE001 - (the sizes only add to the text)
            pass
        raise OutOfMemoryError(text) from e


def empty(shape: tuple, dt) -> CudaArray:
    """An uninitialized contiguous device array."""
    shape = tuple(int(s) for s in shape)
    n = int(np.prod(shape, dtype=np.int64))
    dt = np.dtype(dt)
    dev = _allocate(lambda: cuda().device_array(max(n, 1), dtype=dt), n * dt.itemsize)
    return CudaArray(_counted(dev, n * dt.itemsize), shape)


def to_device(arr: np.ndarray) -> CudaArray:
    """A host array copied to the device."""
    arr = np.asarray(arr)
    if not arr.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
        arr = arr.copy()
    flat = arr.reshape(-1) if arr.size else np.zeros(1, arr.dtype)
    dev = _allocate(lambda: cuda().to_device(flat), arr.nbytes)
    return CudaArray(_counted(dev, arr.nbytes), arr.shape)


def from_device_array(dev) -> CudaArray:
    """A device array (numba-cuda's, or any object with ``__cuda_array_interface__`` or a
    DLPack capsule of device memory) as a ``CudaArray``, without a copy when it is
    C-contiguous."""
    if hasattr(dev, "_ary"):  # the simulator's device array
        host = dev._ary
        if not host.flags.c_contiguous:
            host = np.ascontiguousarray(host)
        return CudaArray(type(dev)(host.reshape(-1)), tuple(dev.shape))
    dev = cuda().as_cuda_array(dev)
    shape = tuple(dev.shape)
    if not dev.is_c_contiguous():
        raise ValueError("from_dlpack: only C-contiguous CUDA arrays come in without a copy")
    return CudaArray(dev.reshape(dev.size) if dev.size else dev, shape)
