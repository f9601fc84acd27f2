"""The default random generator and the ``Generator`` class (torch.Generator): the bottom of
jitgrad's random numbers.

The ``rng`` op (``ops/rng.py``) and the in-place samplers read the default generator at run
time, and ``jitgrad.random`` (the samplers, ``manual_seed``, ``get_rng_state``, ...) builds on
them: this module imports neither. ``jitgrad.random`` re-exports ``Generator`` and
``default_generator``; ``jitgrad.default_generator`` is ``_default`` itself, the one default
generator, reseeded in place.
"""

from __future__ import annotations

import struct

from typing import Any

import numpy as np

from . import dtypes
from .device import check_device
from ._torch_stream import Stream
from .tensor import Tensor, _new


# ---------------------------------------------------------------- generators (torch.Generator)

_SEED_MASK = 0xFFFF_FFFF_FFFF_FFFF
DEFAULT_SEED = 67280421310721  # a new Generator's seed (torch's c10::default_rng_seed_val)


class Generator:
    """A seeded random number generator (torch.Generator), passed as ``generator=`` to rand,
    randn, randint, randperm, normal and the in-place samplers.

    A CPU generator is torch's: the Mersenne Twister (mt19937) seeded as torch seeds it, and
    the samplers turn its draws into numbers as torch's CPU kernels do (``_torch_stream``), so
    ``manual_seed(s)`` then the same calls gives torch's numbers, in eager mode and under
    ``jitgrad.jit`` alike. A cuda generator (``Generator(device="cuda")``) owns a set of
    numba-cuda xoroshiro128+ generators on the device (``backends/cuda_random``), made from its
    seed at its first draw: it draws for cuda tensors only, and its stream differs from a CPU
    generator's of the same seed (as torch's does).

    A new generator starts from torch's default seed, 67280421310721, so its numbers are the
    same in every run (as torch's; the global generator is seeded at random).

    Args:
        device: ``"cpu"`` (the default) or ``"cuda"`` / ``"cuda:0"``.
    """

    def __init__(self, device: Any = "cpu") -> None:
        self._device = check_device(device)
        self._states = None  # a cuda generator's device states (made at its first draw)
        self.manual_seed(DEFAULT_SEED)

    @property
    def device(self) -> Any:
        return self._device

    def manual_seed(self, seed: int) -> Generator:
        """Seeds the generator; returns it."""
        seed = int(seed)
        if not -0x8000_0000_0000_0000 <= seed <= _SEED_MASK:
            raise RuntimeError(f"Overflow when unpacking long long: seed {seed} is out of range")
        self._seed = seed & _SEED_MASK
        self._stream = Stream(self._seed)
        self._rng = self._stream.numpy  # (the stream's identity, as the cuda draws read it)
        self._states = None
        return self

    def seed(self) -> int:
        """Seeds the generator from a non-deterministic source; returns that seed."""
        self.manual_seed(int(np.random.SeedSequence().entropy) & _SEED_MASK)
        return self._seed

    def initial_seed(self) -> int:
        """The seed the generator was last seeded with."""
        return self._seed

    def get_state(self):
        """The generator's state as a uint8 tensor on the CPU (for ``set_state``): a CPU
        generator's mt19937 state and cached normal, or a cuda generator's seed and device
        generators' states."""
        if self._device.type == "cuda":
            raw = _cuda_state_io()["get"](self)
        else:
            raw = _cpu_state_bytes(self._stream, self._seed)
        return _new(np.frombuffer(raw, dtype=np.uint8).copy(), dtypes.uint8)

    def set_state(self, new_state: Any) -> Generator:
        """Restores a state returned by ``get_state`` (of a generator of the same device; a
        CPU state is torch's 5056-byte ``CPUGeneratorImplState``, so torch's states load)."""
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        if new_state.dtype is not dtypes.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        raw = new_state.cpu()._data.tobytes() if new_state.is_cuda else new_state._data.tobytes()
        if self._device.type == "cuda":
            _cuda_state_io()["set"](self, raw)
            return self
        self._seed = _set_cpu_state(self._stream, raw, self._seed)
        return self

    def clone_state(self) -> Generator:
        """A new generator of the same device in this one's state."""
        other = Generator(self._device)
        return other.set_state(self.get_state())

    def graphsafe_get_state(self) -> Generator:
        """CUDA-graph-safe states: torch's CPU generator has none (this error), nor jitgrad's."""
        raise NotImplementedError("graphsafe_get_state is not supported in this Generator")

    def graphsafe_set_state(self, state: Generator) -> Generator:
        """See ``graphsafe_get_state``."""
        raise NotImplementedError("graphsafe_set_state is not supported in this Generator")

    def _host(self) -> Stream:
        """The CPU stream torch's samplers draw from (a cuda generator has none)."""
        if self._device.type != "cpu":
            raise RuntimeError(f"Expected a 'cpu' device type for generator but found "
                               f"'{self._device.type}'")
        return self._stream

    def __repr__(self) -> str:
        return f"<jitgrad._C.Generator object at {hex(id(self))}>"


# torch's CPUGeneratorImplState: the legacy POD (the initial seed, mt19937's ``left``,
# ``seeded`` and ``next``, its 624 words as uint64, the unused normal_x, the cached double
# normal (normal_y), normal_rho and its valid flag; 5048 bytes with padding), then the cached
# float normal and its flag
_LEGACY = struct.Struct("<QiiQ624QdddI4x")
_STATE = struct.Struct(f"<{_LEGACY.size}sf?3x")
_MT_N = 624


def _cpu_state_bytes(stream: Stream, seed: int) -> bytes:
    mt = stream.bits.state["state"]
    key, pos = mt["key"], int(mt["pos"])
    if pos >= _MT_N:  # (the next draw twists the block: torch's left is 1, its next 0 when
        fresh = np.random.MT19937()  # nothing was drawn since seeding, else 624)
        fresh._legacy_seeding(seed & 0xFFFF_FFFF)
        left, nxt = 1, 0 if np.array_equal(fresh.state["state"]["key"], key) else _MT_N
    else:
        left, nxt = _MT_N + 1 - pos, pos
    cached = stream.next_normal
    legacy = _LEGACY.pack(seed, left, 1, nxt, *key.tolist(), 0.0,
                          0.0 if cached is None else cached, 0.0, cached is not None)
    return _STATE.pack(legacy, 0.0, False)


def _set_cpu_state(stream: Stream, raw: bytes, seed: int) -> int:
    """Loads torch's state bytes into ``stream``; the seed."""
    if len(raw) != _STATE.size:
        raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_STATE.size} but found "
                           f"the input RNG state size to be {len(raw)}")
    fields = _LEGACY.unpack(raw[:_LEGACY.size])
    seed, left, nxt = fields[0], fields[1], fields[3]
    key = np.asarray(fields[4:4 + _MT_N], dtype=np.uint64).astype(np.uint32)
    normal_y, valid = fields[4 + _MT_N + 1], fields[4 + _MT_N + 3]
    pos = _MT_N if left <= 1 else nxt
    stream.bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
    stream.next_normal = float(normal_y) if valid else None
    return seed


_default = Generator()
_default.seed()  # (the global generator starts from a random seed, as torch's)
_generator = _default  # what ``default_generator()`` returns (reseeded in place)


def default_generator() -> Generator:
    return _default


# A cuda generator's state is read and written by the CUDA backend (``backends/cuda_random``,
# far above this module), which plugs its two functions in here when it loads.
CUDA_STATE_IO: dict = {}


def _cuda_state_io() -> dict:
    from .device import cuda_runtime

    cuda_runtime()  # (loads the backend, which fills CUDA_STATE_IO)
    return CUDA_STATE_IO
