"""``jitgrad.device``: where a tensor lives. CPU tensors hold NumPy arrays, cuda tensors
numba-cuda device arrays (``_cuda_array.CudaArray``), meta tensors only a shape and dtype
(``_meta.MetaArray``).

The default device of factory functions (``get_default_device``) is set for the process's
thread by ``set_default_device`` or, for a ``with`` block, by a device used as a context
manager (``with jitgrad.device("meta"):``), as torch's ``DeviceContext`` does: blocks nest, and
a factory's explicit ``device=`` wins over them."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

_DEVICE_STRING = re.compile(r"[a-zA-Z_]+(:(0|[1-9][0-9]*))?")


class device:  # noqa: N801 - named like torch.device
    """A device such as ``device("cpu")`` or ``device("cuda", 0)``."""

    __slots__ = ("type", "index")

    def __init__(self, type: str | device, index: int | None = None) -> None:  # noqa: A002
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments - got "
                            f"({type.__class__.__name__})")
        if not _DEVICE_STRING.fullmatch(type):  # (torch's parse: letters, then ":<index>")
            raise RuntimeError(f"Invalid device string: '{type}'")
        if ":" in type:
            type, idx = type.split(":", 1)  # noqa: A001
            index = int(idx)
        if type not in ("cpu", "cuda", "meta"):
            raise RuntimeError(
                f"Expected one of cpu, cuda, meta device type at start of device string: {type}")
        self.type, self.index = type, index

    def __enter__(self) -> device:
        """Makes this the default device of factory functions until the block ends (torch's
        ``DeviceContext``); a cuda device is refused, as ``set_default_device`` refuses it."""
        d = _checked_default(self)
        _DEFAULT.stack.append(d)
        _DEFAULT.device = d
        return self

    def __exit__(self, *exc: object) -> None:
        st = _DEFAULT
        st.stack.pop()
        st.device = st.stack[-1] if st.stack else st.base

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))


cpu = device("cpu")


def cuda_unavailable(reason: str = "") -> RuntimeError:
    """The error for a cuda device on a machine where numba-cuda cannot drive a GPU."""
    why = f" ({reason})" if reason else ""
    return RuntimeError(
        f"jitgrad: device 'cuda' needs a usable CUDA GPU, its driver and numba-cuda, and none "
        f"is usable here{why}. Install the CUDA extra with `pip install jitgrad[cuda]` "
        "(numba-cuda with the NVVM/NVRTC wheels) on a machine with an NVIDIA driver, or set "
        "NUMBA_ENABLE_CUDASIM=1 to run on numba's CUDA simulator (slow; for tests), or keep "
        "the tensor on 'cpu'.")


def check_device(dev) -> device:
    """The device ``dev`` names (None: the default device, ``get_default_device()``); for a
    cuda device, loads the CUDA runtime or raises ``cuda_unavailable``."""
    if dev is None:
        return _DEFAULT.device
    d = dev if type(dev) is device else device(dev)
    if d.type != "cuda":
        return d
    if d.index not in (None, 0):
        raise RuntimeError(f"jitgrad: only cuda:0 is supported, got {d}")
    cuda_runtime()
    return _CUDA0


_CUDA0 = device("cuda", 0)
_LOADED: list = []
# device type -> a function that loads its runtime or raises (a plug-in: ``jitgrad.backends``
# sets "cuda" when ``import jitgrad`` imports it; the CUDA runtime is a backend, far above
# this module)
RUNTIME_LOADERS: dict[str, Callable[[], None]] = {}


def cuda_runtime() -> None:
    """Loads jitgrad's CUDA runtime (the eager cuda dispatcher) once, or raises
    ``cuda_unavailable`` when numba-cuda cannot drive a GPU (or its simulator) here."""
    if _LOADED:
        return
    load = RUNTIME_LOADERS.get("cuda")
    if load is None:  # (jitgrad.backends comes with ``import jitgrad``)
        raise cuda_unavailable("jitgrad.backends is not imported")
    load()
    _LOADED.append(True)


class _Default(threading.local):
    """This thread's default device (``device``): the innermost ``with device(...)`` block's
    (``stack``), else ``set_default_device``'s (``base``)."""

    def __init__(self) -> None:
        self.device = cpu
        self.base = cpu
        self.stack: list = []


_DEFAULT = _Default()


def _checked_default(d: device) -> device:
    d = device(d)
    if d.type == "cuda":
        raise RuntimeError(
            f"set_default_device({str(d)!r}): jitgrad's factory functions make tensors on "
            "the CPU or the meta device by default, so the default device can only be 'cpu' "
            "or 'meta'; pass device='cuda' to a factory, or move tensors with .cuda().")
    return d


def set_default_device(device: str | device | None) -> None:  # noqa: F811
    """Sets the device that factory functions (``zeros``, ``randn``, ``tensor``, ...) use when
    they are given none: ``"cpu"`` or ``"meta"`` (None: back to the CPU). A cuda default is
    refused (pass ``device="cuda"`` to the factory instead).

    Args:
        device: the device, its name, or None.
    """
    d = cpu if device is None else _checked_default(device)
    _DEFAULT.base = _DEFAULT.device = d  # (at once, and after the enclosing blocks end)


def get_default_device() -> device:
    """The device factory functions use by default: the innermost ``with device(...)``
    block's, else ``set_default_device``'s (``device(type='cpu')`` unless set)."""
    return _DEFAULT.device
