"""Random draws on the device: ``rand``, ``randn``, ``randint`` (and what is made of them:
``normal_``, ``uniform_``, ``dropout``'s mask, ``randperm``) for cuda tensors.

The numbers come from numba-cuda's xoroshiro128+ generators (``numba.cuda.random``): a fixed
set of ``states()`` generators, one per thread of the drawing kernel, each 2**64 draws apart
in the same stream. The kernel runs a grid-stride loop with exactly one thread per generator,
so element ``f`` is always the ``f // n``-th draw of generator ``f % n``: the same seed gives
the same tensor on every run. The generators are seeded from the default generator's seed
(``jitgrad.manual_seed`` reseeds both, as torch's seeds every device), and made again when it
is reseeded, or from ``jitgrad.cuda.manual_seed``'s seed (the device alone); the stream
differs from the CPU's (NumPy's PCG64), as torch's CUDA stream differs from its CPU stream.

* uniform: ``xoroshiro128p_uniform_float32``/``float64`` (24 or 53 random bits in [0, 1)),
  float16 from 11 random bits (so a draw never rounds up to 1);
* normal: ``xoroshiro128p_normal_float32``/``float64`` (Box-Muller), float16 from float32;
* integers in ``[low, high)``: ``low + next % (high - low)`` (64 random bits; torch's CUDA
  ``random_`` reduces the same way).

Complex dtypes get real draws (imaginary part 0), as the CPU's ``rand``/``randn`` do.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _cuda_array as ca
from .. import _generator, dtypes
from .numba_cuda import block_size, compile_source
from .render import npname

# Generators (threads of the drawing kernel): enough to fill an H100 (132 SMs x 2048 resident
# threads is 270k; a thread then draws a few elements in a row, which costs nothing). Under
# the simulator each is a Python thread: few.
STATES = 256 * 256
SIM_STATES = 64

_HEAD = ("from numba.cuda.random import (xoroshiro128p_next, xoroshiro128p_normal_float32,\n"
         "    xoroshiro128p_normal_float64, xoroshiro128p_uniform_float32,\n"
         "    xoroshiro128p_uniform_float64)\n")
_LOOP = ("def draw(states, out, a, b):\n"
         "    t = cuda.grid(1)\n"
         "    for f in range(t, out.shape[0], cuda.gridsize(1)):\n"
         "        out[f] = {value}\n")

_STATE: dict = {"rng": None, "states": None}


def n_states() -> int:
    """How many generators (threads) draw."""
    return SIM_STATES if ca.simulated() else STATES


def states(generator: Any):
    """The device generators, seeded from ``generator``'s seed (made again after a reseed:
    ``manual_seed`` gives its generator a new NumPy ``Generator``), or from the seed of
    ``jitgrad.cuda.manual_seed`` when it was called after that reseed. A cuda
    ``Generator`` keeps its own states, made from its seed at its first draw."""
    if generator.device.type == "cuda":
        if generator._states is None:
            from numba.cuda.random import create_xoroshiro128p_states

            generator._states = create_xoroshiro128p_states(n_states(),
                                                            seed=generator.initial_seed())
        return generator._states
    asked = ca.DEVICE_SEED
    seed = None
    if asked["seed"] is not None:
        if asked["rng"] is generator._rng:  # (not overtaken by jitgrad.manual_seed)
            seed = asked["seed"]
        asked.update(seed=None, rng=None)
    if seed is None and (_STATE["rng"] is not generator._rng or _STATE["states"] is None):
        seed = generator.initial_seed()
    if seed is not None:
        from numba.cuda.random import create_xoroshiro128p_states

        _STATE["states"] = create_xoroshiro128p_states(n_states(), seed=seed)
        _STATE["rng"] = generator._rng
    return _STATE["states"]


def _value(kind: str, work: np.dtype, out: np.dtype) -> str:
    """The drawn element's expression (``a``, ``b``: the kernel's two parameters)."""
    if kind == "integers":  # a: low (int64), b: high - low (uint64)
        value = "a + np.int64(xoroshiro128p_next(states, t) % b)"
    elif kind == "uniform16":  # 11 random bits: an exact float16 in [0, 1)
        value = "a + b * (np.float32(xoroshiro128p_next(states, t) >> np.uint64(53)) " \
                "* np.float32(0.00048828125))"
    else:
        bits = 64 if work == np.float64 else 32
        value = f"a + b * xoroshiro128p_{kind}_float{bits}(states, t)"
    return f"{npname(out)}({value})"


def draw(kind: str, shape: tuple, dtype: dtypes.dtype, generator: Any = None, low: int = 0,
         high: int = 1, shift: float = 0.0, scale: float = 1.0) -> ca.CudaArray:
    """A device array of ``shape`` and ``dtype`` drawn from the device generators: ``kind``
    "uniform" (``shift + scale * U[0, 1)``), "normal" (``shift + scale * N(0, 1)``) or
    "integers" (``[low, high)``)."""
    from .._generator import default_generator

    if generator is not None and generator.device.type != "cuda":
        raise RuntimeError(f"Expected a 'cuda' device type for generator but found "
                           f"'{generator.device.type}'")
    out_dt = np.dtype(dtype.np)
    if dtype.is_complex:  # real draws, as on the CPU
        from .cuda_eager import copy_into

        out = ca.empty(shape, out_dt)
        copy_into(out, draw(kind, shape, dtype.to_real(), generator, low, high, shift, scale))
        return out
    if kind == "integers":
        work, a, b = np.dtype(np.int64), np.int64(low), np.uint64(high - low)
    else:
        work = np.dtype(np.float64 if out_dt == np.float64 else np.float32)
        a, b = work.type(shift), work.type(scale)
        if kind == "uniform" and out_dt == np.float16:
            kind = "uniform16"
    out = ca.empty(shape, out_dt)
    n = n_states()
    if out.size:
        source = _HEAD + _LOOP.format(value=_value(kind, work, out_dt))
        fn = compile_source(source, "draw")
        block = block_size()
        fn[n // block, block](states(generator or default_generator()), out.root, a, b)
    return out


def state_bytes(generator: Any) -> bytes:
    """A cuda generator's state: its seed (8 bytes), then its device generators' states."""
    st = states(generator).copy_to_host()
    return np.uint64(generator.initial_seed()).tobytes() + st.tobytes()


def set_state_bytes(generator: Any, raw: bytes) -> None:
    """Restores a state made by ``state_bytes`` (torch's error for one of another size)."""
    from numba.cuda.random import xoroshiro128p_dtype

    n = n_states()
    if len(raw) != 8 + n * xoroshiro128p_dtype.itemsize:
        raise RuntimeError("RNG state is wrong size")
    generator.manual_seed(int(np.frombuffer(raw[:8], np.uint64)[0]))
    host = np.frombuffer(raw[8:], dtype=xoroshiro128p_dtype).copy()
    generator._states = ca.cuda().to_device(host)


_generator.CUDA_STATE_IO.update(get=state_bytes, set=set_state_bytes)  # (see _generator)
