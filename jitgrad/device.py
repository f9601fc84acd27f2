"""``jitgrad.device``: where a tensor lives. CPU tensors are NumPy arrays."""

from __future__ import annotations


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
        if ":" in type:
            type, idx = type.split(":", 1)  # noqa: A001
            index = int(idx)
        if type not in ("cpu", "cuda"):
            raise RuntimeError(
                f"Expected one of cpu, cuda device type at start of device string: {type}")
        self.type, self.index = type, index

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


def cuda_unavailable() -> RuntimeError:
    return RuntimeError(
        "CUDA tensors are not available in this build of jitgrad: tensors live on the CPU. "
        "Use backend='cuda' in jitgrad.jit for GPU kernels once that backend lands, or keep "
        "the tensor on 'cpu'.")


def check_device(dev) -> device:
    d = cpu if dev is None else device(dev)
    if d.type != "cpu":
        raise cuda_unavailable()
    return d


def set_default_device(device: str | device | None) -> None:  # noqa: F811
    """Sets the device factory functions use by default: only ``"cpu"`` (or None) exists in
    jitgrad, so this accepts those and raises for any other device."""
    if device is None:
        return
    d = globals()["device"](device)
    if d.type != "cpu":
        raise RuntimeError(
            f"set_default_device({str(d)!r}): jitgrad tensors live on the CPU, so the default "
            "device can only be 'cpu'.")


def get_default_device() -> device:
    """The device factory functions use by default: always ``device(type='cpu')``."""
    return cpu
