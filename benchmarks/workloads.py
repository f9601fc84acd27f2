"""The benchmark workloads of docs/benchmarks.md, each defined once.

A workload configuration is a :class:`Case`: a seeded input builder, one loss function written
against a small op namespace (so the same source runs on jitgrad, torch and jax), the indices of
the inputs to differentiate, and a NumPy implementation with a hand-written gradient. The NumPy
gradient is dtype-generic: run in float64 it is the reference every peer is checked against.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

WORKLOADS = ("W1", "W2", "W3", "W4", "W5", "W6")
COMPILE = "compile"

_C = math.sqrt(2.0 / math.pi)
_K = 0.044715
LN_EPS = 1e-5
W4_OPS = 100


@dataclass(frozen=True)
class Case:
    """One workload configuration, run on every peer.

    Attributes:
        workload: ``"W1"`` ... ``"W5"``.
        config: a short label of the sizes, e.g. ``"N=1e5"``.
        build: returns the inputs as a list of NumPy arrays (seeded, so every call is equal).
        loss: ``loss(ops, *inputs) -> scalar``; ``ops`` is a peer's op namespace.
        numpy_grad: ``numpy_grad(*arrays) -> (value, [grad per wrt input])``, written by hand.
        wrt: indices of the inputs the gradient is taken with respect to.
        names: one name per input (for messages).
        rtol: relative tolerance of the agreement check against the float64 reference.
        ops_per_call: W4 only: the number of ops in the chain (for the per-op figure).
        roofline_bytes: W1 only: bytes a perfectly fused forward+backward moves per call.
    """

    workload: str
    config: str
    build: Callable[[], list[np.ndarray]]
    loss: Callable[..., Any]
    numpy_grad: Callable[..., tuple[float, list[np.ndarray]]]
    wrt: tuple[int, ...]
    names: tuple[str, ...]
    rtol: float = 1e-4
    ops_per_call: int | None = None
    roofline_bytes: int | None = None
    extra: dict = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return (self.workload, self.config)


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _fmt_n(n: int) -> str:
    e = int(round(math.log10(n)))
    return f"1e{e}" if 10 ** e == n else str(n)


# ----------------------------------------------------------------- W1: elementwise chain


def w1_loss(ops, x, y):
    """``sum(tanh(x)*sigmoid(y) + x*y**2 - exp(-x*x))``."""
    return ops.sum(ops.tanh(x) * ops.sigmoid(y) + x * y ** 2 - ops.exp(-x * x))


def w1_numpy(x: np.ndarray, y: np.ndarray) -> tuple[float, list[np.ndarray]]:
    """W1's value and hand-written gradient w.r.t. ``x`` and ``y``."""
    t = np.tanh(x)
    s = 1.0 / (1.0 + np.exp(-y))
    e = np.exp(-x * x)
    y2 = y * y
    value = np.sum(t * s + x * y2 - e)
    dx = (1.0 - t * t) * s + y2 + 2.0 * x * e
    dy = t * s * (1.0 - s) + 2.0 * x * y
    return value, [dx.astype(x.dtype, copy=False), dy.astype(y.dtype, copy=False)]


def w1_case(n: int) -> Case:
    def build():
        rng = _rng(1)
        return [rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)]

    return Case("W1", f"N={_fmt_n(n)}", build, w1_loss, w1_numpy, (0, 1), ("x", "y"),
                roofline_bytes=16 * n, extra={"n": n})


# ----------------------------------------------------------------- W2: MLP train step


def w2_loss(ops, x, labels, w1, b1, w2, b2, w3, b3):
    """784 -> 512 -> 512 -> 10 MLP with ReLU and mean softmax cross-entropy."""
    h = ops.relu(x @ w1 + b1)
    h = ops.relu(h @ w2 + b2)
    return ops.cross_entropy(h @ w3 + b3, labels)


def w2_numpy(x, labels, w1, b1, w2, b2, w3, b3) -> tuple[float, list[np.ndarray]]:
    """W2's value and hand-written gradient w.r.t. the six weights and biases."""
    batch = x.shape[0]
    z1 = x @ w1 + b1
    h1 = np.maximum(z1, 0)
    z2 = h1 @ w2 + b2
    h2 = np.maximum(z2, 0)
    logits = h2 @ w3 + b3
    shifted = logits - logits.max(axis=1, keepdims=True)
    ex = np.exp(shifted)
    denom = ex.sum(axis=1, keepdims=True)
    rows = np.arange(batch)
    value = np.mean(np.log(denom[:, 0]) - shifted[rows, labels])
    dlogits = ex / denom
    dlogits[rows, labels] -= 1
    dlogits /= batch
    dw3 = h2.T @ dlogits
    db3 = dlogits.sum(axis=0)
    dz2 = (dlogits @ w3.T) * (z2 > 0)
    dw2 = h1.T @ dz2
    db2 = dz2.sum(axis=0)
    dz1 = (dz2 @ w2.T) * (z1 > 0)
    dw1 = x.T @ dz1
    db1 = dz1.sum(axis=0)
    return value, [dw1, db1, dw2, db2, dw3, db3]


def w2_case(batch: int = 128, sizes: tuple[int, ...] = (784, 512, 512, 10)) -> Case:
    def build():
        rng = _rng(2)
        arrays = [rng.standard_normal((batch, sizes[0]), dtype=np.float32),
                  rng.integers(0, sizes[-1], batch, dtype=np.int64)]
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
            bound = 1.0 / math.sqrt(fan_in)  # torch.nn.Linear's default init
            arrays.append(rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32))
            arrays.append(rng.uniform(-bound, bound, fan_out).astype(np.float32))
        return arrays

    config = f"batch={batch} {'-'.join(str(s) for s in sizes)}"
    return Case("W2", config, build, w2_loss, w2_numpy, (2, 3, 4, 5, 6, 7),
                ("x", "labels", "W1", "b1", "W2", "b2", "W3", "b3"))


# ----------------------------------------------------------------- W3: layer norm + GELU


def w3_loss(ops, x, gamma, beta, w):
    """``mean((gelu_tanh(layer_norm(x) * gamma + beta) @ W) ** 2)``."""
    y = ops.gelu_tanh(ops.layer_norm(x, gamma, beta, LN_EPS)) @ w
    return ops.mean(y * y)


def w3_numpy(x, gamma, beta, w) -> tuple[float, list[np.ndarray]]:
    """W3's value and hand-written gradient w.r.t. ``x``, ``gamma``, ``beta`` and ``W``."""
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    rstd = 1.0 / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + LN_EPS)
    xhat = xc * rstd
    a = xhat * gamma + beta
    t = np.tanh(_C * (a + _K * a ** 3))
    h = 0.5 * a * (1.0 + t)
    y = h @ w
    value = np.mean(y * y)
    dy = y * (2.0 / y.size)
    dw = h.T @ dy
    da = (dy @ w.T) * (0.5 * (1.0 + t) + 0.5 * a * (1.0 - t * t) * _C * (1.0 + 3 * _K * a * a))
    dgamma = (da * xhat).sum(axis=0)
    dbeta = da.sum(axis=0)
    dxhat = da * gamma
    dx = rstd * (dxhat - dxhat.mean(axis=-1, keepdims=True)
                 - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True))
    dt = x.dtype
    return value, [dx.astype(dt, copy=False), dgamma.astype(dt, copy=False),
                   dbeta.astype(dt, copy=False), dw.astype(dt, copy=False)]


def w3_case(rows: int = 2048, dim: int = 1024) -> Case:
    def build():
        rng = _rng(3)
        return [rng.standard_normal((rows, dim), dtype=np.float32),
                (1.0 + 0.1 * rng.standard_normal(dim)).astype(np.float32),
                (0.1 * rng.standard_normal(dim)).astype(np.float32),
                (rng.standard_normal((dim, dim)) / math.sqrt(dim)).astype(np.float32)]

    return Case("W3", f"x={rows}x{dim}", build, w3_loss, w3_numpy, (0, 1, 2, 3),
                ("x", "gamma", "beta", "W"))


# ----------------------------------------------------------------- W4: eager overhead


def w4_loss(ops, x, w):
    """A chain of 100 ops alternating ``h * w``, ``h + w`` and ``tanh(h)``, then a sum."""
    h = x
    for i in range(W4_OPS):
        k = i % 3
        if k == 0:
            h = h * w
        elif k == 1:
            h = h + w
        else:
            h = ops.tanh(h)
    return ops.sum(h)


def w4_numpy(x, w) -> tuple[float, list[np.ndarray]]:
    """W4's value and hand-written gradient (forward keeps what the reverse sweep needs)."""
    saved = []
    h = x
    for i in range(W4_OPS):
        k = i % 3
        saved.append(h)
        h = h * w if k == 0 else (h + w if k == 1 else np.tanh(h))
        if k == 2:
            saved[-1] = h  # tanh's gradient uses its output
    value = h.sum()
    g = np.ones_like(h)
    gw = np.zeros_like(w)
    for i in reversed(range(W4_OPS)):
        k = i % 3
        if k == 0:
            gw += g * saved[i]
            g = g * w
        elif k == 1:
            gw += g
        else:
            g = g * (1 - saved[i] * saved[i])
    return value, [g, gw]


def w4_case(n: int = 16) -> Case:
    def build():
        rng = _rng(4)
        return [rng.uniform(-1, 1, n).astype(np.float32),
                rng.uniform(0.5, 1.0, n).astype(np.float32)]

    return Case("W4", f"n={n} ops={W4_OPS}", build, w4_loss, w4_numpy, (0, 1), ("x", "w"),
                ops_per_call=W4_OPS)


# ----------------------------------------------------------------- W5: tiny call


def w5_loss(ops, x):
    """Rosenbrock: ``sum(100*(x[1:] - x[:-1]**2)**2 + (1 - x[:-1])**2)``."""
    a = x[:-1]
    d = x[1:] - a * a
    e = 1 - a
    return ops.sum(100 * (d * d) + e * e)


def w5_numpy(x) -> tuple[float, list[np.ndarray]]:
    """Rosenbrock's value and hand-written gradient, in Python floats (as one would write it)."""
    x0, x1 = x.tolist()
    d = x1 - x0 * x0
    e = 1.0 - x0
    value = 100.0 * d * d + e * e
    return value, [np.array([-400.0 * d * x0 - 2.0 * e, 200.0 * d], dtype=x.dtype)]


def w5_case() -> Case:
    def build():
        return [np.array([-1.2, 1.0])]

    return Case("W5", "n=2 float64", build, w5_loss, w5_numpy, (0,), ("x",), rtol=1e-10)


# ----------------------------------------------------------------- W6: a long program


def w6_loss(ops, x, steps: int = 100):
    """A chain of ``steps`` alternating ``h*h*0.5`` and ``tanh(h)*1.01 + 0.1``, then a sum: how
    tracing, passes and compile time grow with the length of a program."""
    h = x
    for i in range(steps):
        h = h * h * 0.5 if i % 2 == 0 else ops.tanh(h) * 1.01 + 0.1
    return ops.sum(h)


def w6_numpy(x, steps: int = 100) -> tuple[float, list[np.ndarray]]:
    """W6's value and hand-written gradient."""
    hs = []
    h = x
    for i in range(steps):
        hs.append(h)
        h = h * h * 0.5 if i % 2 == 0 else np.tanh(h) * 1.01 + 0.1
    value = float(h.sum())
    g = np.ones_like(h)
    for i in reversed(range(steps)):
        h = hs[i]
        g = g * h if i % 2 == 0 else g * 1.01 * (1 - np.tanh(h) ** 2)
    return value, [g]


def w6_case(steps: int = 100) -> Case:
    def build():
        return [np.linspace(-1.0, 1.0, 16)]  # float64: the float32 gradient underflows

    def loss(ops, x):
        return w6_loss(ops, x, steps)

    def numpy_grad(x):
        return w6_numpy(x, steps)

    return Case("W6", f"N={steps}", build, loss, numpy_grad, (0,), ("x",), rtol=1e-6,
                ops_per_call=steps)


# ----------------------------------------------------------------- the suite


def cases(quick: bool = False, only: tuple[str, ...] | None = None) -> list[Case]:
    """The configurations to run: the full sizes, or smaller ones with ``quick``."""
    w1_sizes = (10 ** 3, 10 ** 5) if quick else (10 ** 3, 10 ** 5, 10 ** 7)
    suite = [w1_case(n) for n in w1_sizes]
    suite += [w2_case(), w3_case(512, 256) if quick else w3_case(), w4_case(), w5_case()]
    suite += [w6_case(100)] if quick else [w6_case(100), w6_case(1600)]
    if only is not None:
        suite = [c for c in suite if c.workload in only]
    return suite


def compile_cases() -> dict[str, Case]:
    """The configurations the compile-latency probe runs (same in quick and full runs)."""
    return {"W1": w1_case(10 ** 5), "W2": w2_case(), "W6": w6_case(1600)}


def reference(case: Case, arrays: list[np.ndarray]) -> tuple[float, list[np.ndarray]]:
    """The float64 reference: the hand-written NumPy gradient on float64 copies of the inputs."""
    wide = [a.astype(np.float64) if np.issubdtype(a.dtype, np.floating) else a for a in arrays]
    value, grads = case.numpy_grad(*wide)
    return float(value), [np.asarray(g, dtype=np.float64) for g in grads]
