"""``jitgrad.quasirandom``: torch.quasirandom's ``SobolEngine``.

The unscrambled sequence is torch's exactly: the same direction numbers (Joe and Kuo's D(6)
table for 21201 dimensions, in ``_directions``), the same state recurrence and the same
Gray-code order of points. Scrambling is torch's algorithm (a random digital shift and random
lower-triangular linear matrix scrambling, Owen 1998) driven by jitgrad's generator, whose
stream differs from torch's: a seeded scrambled engine is reproducible, but its points are not
torch's points for the same seed.
"""

from __future__ import annotations

import base64
import functools
import zlib

import numpy as np

import jitgrad

__all__ = ["SobolEngine"]

_MAXBIT = 30


@functools.lru_cache(maxsize=1)
def _table() -> tuple[np.ndarray, np.ndarray]:
    """``(poly, vinit)``: the primitive polynomials and the initial direction numbers (int64,
    shapes (21201,) and (21201, 18)), decoded from ``_directions`` (the encoding is described
    in ``jitgrad/quasirandom/_generate_directions.py``)."""
    from . import _directions

    raw = np.frombuffer(zlib.decompress(base64.b85decode(_directions.DATA)), np.uint8)
    ndim, ncol = _directions.MAXDIM, _directions.MAXDEG
    poly = np.cumsum(raw[:ndim].astype(np.int64)) * 2 + 1
    deg = np.floor(np.log2(poly)).astype(np.int64)  # bit_length(poly) - 1 (exact: poly < 2**20)
    vinit = np.zeros((ndim, ncol), np.int64)
    vinit[:, 0] = 1
    pos = ndim
    for i in range(1, ncol):
        rows = np.nonzero(deg > i)[0]
        nbytes = (len(rows) * i + 7) // 8
        bits = np.unpackbits(raw[pos:pos + nbytes])[:len(rows) * i].reshape(len(rows), i)
        vinit[rows, i] = (bits.astype(np.int64) << np.arange(i - 1, -1, -1)).sum(1) * 2 + 1
        pos += nbytes
    return poly, vinit


def _initial_state(dimension: int) -> np.ndarray:
    """The (dimension, 30) direction numbers ``v_j * 2**(30 - j)`` (torch's
    ``_sobol_engine_initialize_state_``)."""
    poly, vinit = _table()
    p = poly[:dimension]
    m = np.floor(np.log2(p)).astype(np.int64)
    state = np.zeros((dimension, _MAXBIT), np.int64)
    cols = np.arange(vinit.shape[1])
    state[:, :vinit.shape[1]] = np.where(cols < m[:, None], vinit[:dimension], 0)
    state[0, :] = 1  # the first dimension (poly 1, degree 0) is all ones
    rows = np.arange(dimension)
    for j in range(_MAXBIT):
        todo = m <= j
        if j == 0:
            todo &= m > 0  # (degree 0: the row keeps its ones)
        if not todo.any():
            continue
        newv = state[rows, np.maximum(j - m, 0)]
        for k in range(vinit.shape[1]):
            use = todo & (k < m) & (((p >> np.maximum(m - 1 - k, 0)) & 1) == 1)
            newv = np.where(use, newv ^ (state[:, max(j - k - 1, 0)] << (k + 1)), newv)
        state[:, j] = np.where(todo & (m > 0), newv, state[:, j])
    return state * (2 ** np.arange(_MAXBIT - 1, -1, -1, dtype=np.int64))


def _scramble_state(state: np.ndarray, ltm: np.ndarray) -> np.ndarray:
    """torch's ``_sobol_engine_scramble_``: each direction number multiplied (over GF(2)) by its
    dimension's lower-triangular matrix ``ltm`` (diagonal set to 1), the bits read as torch
    reads them."""
    ltm = ltm.astype(np.int64).copy()
    idx = np.arange(_MAXBIT)
    ltm[:, idx, idx] = 1
    # row p of a matrix as an integer: column c has weight 2**(29 - c) (torch's cdot_pow2)
    dots = (ltm << np.arange(_MAXBIT - 1, -1, -1, dtype=np.int64)).sum(-1)  # (D, 30)
    out = np.empty_like(state)
    for lo in range(0, len(state), 4096):  # (in chunks: the products are D x 30 x 30)
        d, s = dots[lo:lo + 4096], state[lo:lo + 4096]
        parity = np.bitwise_count(d[:, None, :] & s[:, :, None]) & 1  # (D, j, p)
        out[lo:lo + 4096] = (parity.astype(np.int64) << (_MAXBIT - 1 - idx)).sum(-1)
    return out


class SobolEngine:
    r"""An engine for (scrambled) Sobol sequences, torch.quasirandom.SobolEngine's API.

    Sobol sequences are low-discrepancy quasi-random sequences. The engine draws points of up to
    21201 dimensions with the direction numbers of Joe and Kuo (search criterion D(6)).

    Args:
        dimension: the dimensionality of the points (1 to 21201).
        scramble: draw a scrambled sequence (random digital shift and linear matrix scrambling).
        seed: the seed of the scrambling's generator (a ``jitgrad.Generator``); ``None`` draws
            from jitgrad's default generator.
    """

    MAXBIT = _MAXBIT
    MAXDIM = 21201

    def __init__(self, dimension: int, scramble: bool = False, seed: int | None = None) -> None:
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError("Supported range of dimensionality "
                             f"for SobolEngine is [1, {self.MAXDIM}]")
        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        self._state = _initial_state(dimension)
        if not scramble:
            self._shift = np.zeros(dimension, np.int64)
        else:
            self._scramble()
        self._quasi = self._shift.copy()
        # torch divides the long shift by 2**30: the default float dtype at construction
        first = self._shift.astype(jitgrad.get_default_dtype().np) / 2 ** self.MAXBIT
        self._first_point = first.reshape(1, -1)
        self.num_generated = 0

    @property
    def sobolstate(self) -> jitgrad.Tensor:
        """The (dimension, 30) int64 direction numbers (scrambled when ``scramble``)."""
        return jitgrad.from_numpy(self._state.copy())

    @property
    def shift(self) -> jitgrad.Tensor:
        """The (dimension,) int64 digital shift (zeros unless ``scramble``)."""
        return jitgrad.from_numpy(self._shift.copy())

    @property
    def quasi(self) -> jitgrad.Tensor:
        """The (dimension,) int64 current point, as integers (the engine's state)."""
        return jitgrad.from_numpy(self._quasi.copy())

    def _advance(self, n: int, num_generated: int) -> np.ndarray:
        """The next ``n`` integer points after ``self._quasi``, which becomes the last of them;
        point ``k`` (counting from ``num_generated``) flips the direction number of the lowest
        zero bit of ``k`` (Gray-code order)."""
        if n <= 0:
            return np.zeros((0, self.dimension), np.int64)
        k = np.arange(num_generated, num_generated + n, dtype=np.int64)
        low_zero = np.bitwise_count(k ^ (k + 1)) - 1  # trailing ones of k
        pts = np.bitwise_xor.accumulate(self._state[:, low_zero].T, axis=0) ^ self._quasi
        self._quasi = pts[-1].copy()
        return pts

    def _draw_points(self, n: int, num_generated: int, dtype: jitgrad.dtype) -> np.ndarray:
        """torch's ``_sobol_engine_draw``: the next ``n`` points as floats of ``dtype``."""
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: "
                               f"[{n}, {self.dimension}]")
        if dtype not in (jitgrad.float32, jitgrad.float64):
            raise NotImplementedError(f'"_sobol_engine_draw" not implemented for '
                                      f"'{dtype._scalar_name}'")
        npdt = np.dtype(dtype.np)
        return self._advance(n, num_generated).astype(npdt) * npdt.type(1.0 / (1 << _MAXBIT))

    def draw(self, n: int = 1, out: jitgrad.Tensor | None = None,
             dtype: jitgrad.dtype | None = None) -> jitgrad.Tensor:
        """Draws the next ``n`` points of the sequence, a (n, dimension) tensor.

        Args:
            n: how many points.
            out: a tensor the points are written into (resized to (n, dimension)).
            dtype: the points' floating dtype; default ``jitgrad.get_default_dtype()``.

        Returns:
            The points (``out`` when given).
        """
        if dtype is None:
            dtype = jitgrad.get_default_dtype()
        if self.num_generated == 0 and n == 1:
            result = self._first_point.astype(dtype.np)
        elif self.num_generated == 0:
            pts = self._draw_points(n - 1, self.num_generated, dtype)
            result = np.concatenate([self._first_point.astype(pts.dtype), pts], axis=-2)
        else:
            result = self._draw_points(n, self.num_generated - 1, dtype)
        self.num_generated += n
        res = jitgrad.from_numpy(np.ascontiguousarray(result))
        if out is not None:
            out.resize_as_(res).copy_(res)
            return out
        return res

    def draw_base2(self, m: int, out: jitgrad.Tensor | None = None,
                   dtype: jitgrad.dtype | None = None) -> jitgrad.Tensor:
        """Draws the next ``2**m`` points; the total drawn must stay a power of two.

        Args:
            m: the base-2 exponent of the number of points.
            out: a tensor the points are written into.
            dtype: the points' floating dtype.

        Returns:
            The (2**m, dimension) points.
        """
        n = 2 ** m
        total_n = self.num_generated + n
        if not (total_n & (total_n - 1) == 0):
            raise ValueError("The balance properties of Sobol' points require "
                             f"n to be a power of 2. {self.num_generated} points have been "
                             f"previously generated, then: n={self.num_generated}+2**{m}="
                             f"{total_n}. If you still want to do this, please use "
                             "'SobolEngine.draw()' instead.")
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self) -> SobolEngine:
        """Returns the engine to its first point."""
        self._quasi = self._shift.copy()
        self.num_generated = 0
        return self

    def fast_forward(self, n: int) -> SobolEngine:
        """Skips ``n`` points (as drawing them would, without returning them).

        Args:
            n: how many points to skip.
        """
        if self.num_generated == 0:
            self._advance(n - 1, self.num_generated)
        else:
            self._advance(n, self.num_generated - 1)
        self.num_generated += n
        return self

    def _scramble(self) -> None:
        g = None
        if self.seed is not None:
            g = jitgrad.Generator()
            g.manual_seed(self.seed)
        shift_ints = jitgrad.randint(2, (self.dimension, self.MAXBIT), generator=g).numpy()
        self._shift = shift_ints.astype(np.int64) @ (2 ** np.arange(self.MAXBIT, dtype=np.int64))
        ltm = jitgrad.randint(2, (self.dimension, self.MAXBIT, self.MAXBIT), generator=g).numpy()
        self._state = _scramble_state(self._state, np.tril(ltm))

    def __repr__(self) -> str:
        fmt_string = [f"dimension={self.dimension}"]
        if self.scramble:
            fmt_string += ["scramble=True"]
        if self.seed is not None:
            fmt_string += [f"seed={self.seed}"]
        return self.__class__.__name__ + "(" + ", ".join(fmt_string) + ")"
