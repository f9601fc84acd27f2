"""The default random generator and the ``Generator`` class (torch.Generator): the bottom of
jitgrad's random numbers.

The ``rng`` op (``ops/rng.py``) and the in-place samplers read the default generator at run
time, and ``jitgrad.random`` (the samplers, ``manual_seed``, ``get_rng_state``, ...) builds on
them: this module imports neither. ``jitgrad.random`` re-exports ``Generator`` and
``default_generator``; ``jitgrad.default_generator`` is ``_default`` itself, the one default
generator, reseeded in place.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes
from .device import check_device
from .tensor import _new


def _cpu_only(device: Any, what: str) -> None:
    if check_device(device).type != "cpu":
        raise NotImplementedError(
            f"jitgrad: {what} on a cuda device is not supported yet: jitgrad draws random "
            "numbers on the CPU; draw there and move the result with .cuda()")


# ---------------------------------------------------------------- generators (torch.Generator)

_SEED_MASK = 0xFFFF_FFFF_FFFF_FFFF


class Generator:
    """A seeded random number generator (torch.Generator), passed as ``generator=`` to rand,
    randn, randint, randperm, normal and the in-place samplers.

    It wraps a NumPy ``Generator`` (PCG64); the same seed gives the same numbers in eager mode
    and under ``jitgrad.jit``, but not the same numbers as torch.
    """

    def __init__(self, device: Any = "cpu") -> None:
        _cpu_only(device, "Generator (CUDA generators)")
        self._device = check_device(device)
        self.seed()

    @property
    def device(self) -> Any:
        return self._device

    def manual_seed(self, seed: int) -> Generator:
        """Seeds the generator; returns it."""
        seed = int(seed)
        if not -0x8000_0000_0000_0000 <= seed <= _SEED_MASK:
            raise RuntimeError(f"Overflow when unpacking long long: seed {seed} is out of range")
        self._seed = seed & _SEED_MASK
        self._rng = np.random.default_rng(self._seed)
        return self

    def seed(self) -> int:
        """Seeds the generator from a non-deterministic source; returns that seed."""
        self.manual_seed(int(np.random.SeedSequence().entropy) & _SEED_MASK)
        return self._seed

    def initial_seed(self) -> int:
        """The seed the generator was last seeded with."""
        return self._seed

    def get_state(self):
        """The generator's state as a uint8 tensor (for ``set_state``)."""
        import json

        raw = json.dumps(self._rng.bit_generator.state).encode()
        return _new(np.frombuffer(raw, dtype=np.uint8).copy(), dtypes.uint8)

    def set_state(self, new_state: Any) -> Generator:
        """Restores a state returned by ``get_state``."""
        import json

        if getattr(new_state, "dtype", None) is not dtypes.uint8:
            raise TypeError("expected a torch.ByteTensor, but got "
                            f"{type(new_state).__name__}")
        self._rng.bit_generator.state = json.loads(new_state._data.tobytes().decode())
        return self

    # NumPy's sampling methods, which jitgrad's samplers call on a generator
    def random(self, size: Any = None) -> np.ndarray:
        return self._rng.random(size)

    def standard_normal(self, size: Any = None) -> np.ndarray:
        return self._rng.standard_normal(size)

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> np.ndarray:
        return self._rng.normal(loc, scale, size)

    def uniform(self, low: Any = 0.0, high: Any = 1.0, size: Any = None) -> np.ndarray:
        return self._rng.uniform(low, high, size)

    def integers(self, low: Any, high: Any = None, size: Any = None, **kwargs: Any) -> np.ndarray:
        return self._rng.integers(low, high, size=size, **kwargs)

    def permutation(self, n: int) -> np.ndarray:
        return self._rng.permutation(n)

    def __repr__(self) -> str:
        return f"<jitgrad._C.Generator object at {hex(id(self))}>"


_default = Generator()
_generator = _default  # what ``default_generator()`` returns (reseeded in place)


def default_generator() -> Generator:
    return _default
