"""The peers a workload runs on: jitgrad eager and jit, NumPy by hand, torch, torch.compile, jax.

A peer turns a :class:`~benchmarks.workloads.Case` and its NumPy inputs into a ``step()``
callable that computes the loss and the gradient of every ``wrt`` input (one forward + backward
per call), and converts a step's result back to NumPy for the agreement check. Frameworks are
imported lazily: a peer whose framework is missing reports why, and is never faked.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from .workloads import Case

PEER_NAMES = ("jitgrad-eager", "jitgrad-jit", "jitgrad-jit-vg", "numpy", "torch", "torch-compile",
              "jax")
Step = Callable[[], Any]


class Peer:
    """A way of running a workload. Subclasses set ``name`` and implement ``prepare``."""

    name = "?"

    def unavailable(self) -> str | None:
        """``None`` when the peer can run here, else the reason it cannot."""
        return None

    def version(self) -> str:
        """The version of the framework behind this peer."""
        return ""

    def prepare(self, case: Case, arrays: list[np.ndarray]) -> Step:
        """A ``step()`` running ``case`` forward and backward on (copies of) ``arrays``."""
        raise NotImplementedError

    def to_numpy(self, result: Any) -> tuple[float, list[np.ndarray]]:
        """A step's ``(value, grads)`` as a float and NumPy arrays."""
        value, grads = result
        return float(np.asarray(value)), [np.asarray(g) for g in grads]


def module_version(module: str) -> str:
    """The installed version of ``module`` (without importing it), or ``""`` when absent."""
    from importlib import metadata

    try:
        return metadata.version(module)
    except metadata.PackageNotFoundError:
        pass
    try:
        return importlib.import_module(module).__version__
    except Exception:  # noqa: BLE001 - any import failure means "not installed"
        return ""


# ----------------------------------------------------------------- op namespaces


class JitgradOps:
    """The op namespace the workloads' losses use, on jitgrad."""

    def __init__(self) -> None:
        import jitgrad
        from jitgrad.ops import nn_ops
        from jitgrad.ops.registry import apply

        self._jg, self._nn, self._apply = jitgrad, nn_ops, apply
        try:
            self._f = importlib.import_module("jitgrad.nn.functional")
        except ImportError:
            self._f = None
        self.tanh, self.sigmoid, self.exp = jitgrad.tanh, jitgrad.sigmoid, jitgrad.exp
        self.sum, self.mean, self.relu = jitgrad.sum, jitgrad.mean, jitgrad.relu

    def _has(self, name: str) -> bool:
        return self._f is not None and hasattr(self._f, name)

    def cross_entropy(self, logits, labels):
        if self._has("cross_entropy"):
            return self._f.cross_entropy(logits, labels)
        logp = self._jg.log_softmax(logits, 1)
        return self._apply(self._nn.NLL_LOSS, logp, labels, None, reduction="mean",
                           ignore_index=-100)

    def layer_norm(self, x, weight, bias, eps):
        shape = (int(x.shape[-1]),)
        if self._has("layer_norm"):
            return self._f.layer_norm(x, shape, weight, bias, eps)
        return self._apply(self._nn.LAYER_NORM, x, weight, bias, normalized_shape=shape, eps=eps)

    def gelu_tanh(self, x):
        if self._has("gelu"):
            return self._f.gelu(x, approximate="tanh")
        return self._apply(self._nn.GELU, x, approximate="tanh")


class TorchOps:
    """The op namespace on torch."""

    def __init__(self) -> None:
        import torch
        import torch.nn.functional as F

        self._f = F
        self.tanh, self.sigmoid, self.exp = torch.tanh, torch.sigmoid, torch.exp
        self.sum, self.mean, self.relu = torch.sum, torch.mean, torch.relu

    def cross_entropy(self, logits, labels):
        return self._f.cross_entropy(logits, labels)

    def layer_norm(self, x, weight, bias, eps):
        return self._f.layer_norm(x, (x.shape[-1],), weight, bias, eps)

    def gelu_tanh(self, x):
        return self._f.gelu(x, approximate="tanh")


class JaxOps:
    """The op namespace on jax.numpy (layer norm and cross-entropy written out)."""

    def __init__(self) -> None:
        import jax
        import jax.numpy as jnp

        self._jax, self._jnp = jax, jnp
        self.tanh, self.exp, self.sum, self.mean = jnp.tanh, jnp.exp, jnp.sum, jnp.mean
        self.sigmoid, self.relu = jax.nn.sigmoid, jax.nn.relu

    def cross_entropy(self, logits, labels):
        logp = self._jax.nn.log_softmax(logits, axis=1)
        return -self._jnp.mean(self._jnp.take_along_axis(logp, labels[:, None], axis=1))

    def layer_norm(self, x, weight, bias, eps):
        jnp = self._jnp
        mu = jnp.mean(x, axis=-1, keepdims=True)
        xc = x - mu
        var = jnp.mean(xc * xc, axis=-1, keepdims=True)
        return xc * self._jax.lax.rsqrt(var + eps) * weight + bias

    def gelu_tanh(self, x):
        return self._jax.nn.gelu(x, approximate=True)


# ----------------------------------------------------------------- peers


class NumpyPeer(Peer):
    """NumPy with the workload's hand-written gradient (no autograd)."""

    name = "numpy"

    def version(self) -> str:
        return np.__version__

    def prepare(self, case: Case, arrays: list[np.ndarray]) -> Step:
        arrays = [a.copy() for a in arrays]
        fn = case.numpy_grad
        return lambda: fn(*arrays)


class JitgradEagerPeer(Peer):
    """jitgrad's eager autograd: ``loss = f(...)``, ``jitgrad.autograd.grad(loss, inputs)``."""

    name = "jitgrad-eager"

    def version(self) -> str:
        return module_version("jitgrad")

    def _tensors(self, case: Case, arrays: list[np.ndarray]) -> list:
        import jitgrad

        ts = [jitgrad.from_numpy(a.copy()) for a in arrays]
        for i in case.wrt:
            ts[i].requires_grad_()
        return ts

    def _fn(self, case: Case) -> Callable:
        ops = JitgradOps()
        loss = case.loss
        return lambda *ts: loss(ops, *ts)

    def prepare(self, case: Case, arrays: list[np.ndarray]) -> Step:
        from jitgrad.autograd import grad

        ts = self._tensors(case, arrays)
        wrt = [ts[i] for i in case.wrt]
        fn = self._fn(case)

        def step():
            loss = fn(*ts)
            return loss, grad(loss, wrt)
        return step

    def to_numpy(self, result: Any) -> tuple[float, list[np.ndarray]]:
        value, grads = result
        return float(value.detach().numpy()), [g.detach().numpy() for g in grads]


def jitgrad_jit_entry(smoke: bool = True) -> tuple[Callable | None, str | None]:
    """``jitgrad.jit`` as API.md defines it, or ``(None, reason)`` when it cannot be used.

    Args:
        smoke: also jit a tiny function and check its gradient (the compile-latency probe turns
            this off, so that nothing is compiled before the call it times).
    """
    flag = os.environ.get("JITGRAD_DISABLE_JIT", "")
    if flag not in ("", "0"):
        return None, f"JITGRAD_DISABLE_JIT={flag} is set (jitgrad.jit returns fn unchanged)"
    try:
        import jitgrad

        jit = jitgrad.jit
    except Exception as e:  # noqa: BLE001 - report whatever stops the import
        return None, f"jitgrad.jit is not importable: {type(e).__name__}: {e}"
    if not callable(jit):
        inner = getattr(jit, "jit", None)
        if not callable(inner):
            return None, "jitgrad.jit is not callable in this checkout (the JIT has not landed)"
        jit = inner
    if not smoke:
        return jit, None
    try:  # a smoke test: a tiny function, forward and backward
        x = jitgrad.ones(3, requires_grad=True)
        out = jit(lambda t: (t * t).sum())(x)
        (g,) = jitgrad.autograd.grad(out, [x])
        if not np.allclose(np.asarray(g.detach().numpy()), 2.0):
            return None, f"jitgrad.jit smoke test gave a wrong gradient: {g}"
    except Exception as e:  # noqa: BLE001
        return None, f"jitgrad.jit failed a smoke test: {type(e).__name__}: {e}"
    return jit, None


class JitgradJitPeer(JitgradEagerPeer):
    """``jitgrad.jit(f)`` whose output is an ordinary tensor; gradients by autograd.grad."""

    name = "jitgrad-jit"

    def __init__(self, smoke: bool = True) -> None:
        self._jit: Callable | None = None
        self._reason: str | None = None
        self._checked = False
        self._smoke = smoke

    def unavailable(self) -> str | None:
        if not self._checked:
            self._jit, self._reason = jitgrad_jit_entry(self._smoke)
            self._checked = True
        return self._reason

    def prepare(self, case: Case, arrays: list[np.ndarray]) -> Step:
        from jitgrad.autograd import grad

        if self.unavailable() is not None:
            raise RuntimeError(self._reason)
        ts = self._tensors(case, arrays)
        wrt = [ts[i] for i in case.wrt]
        fn = self._jit(self._fn(case))

        def step():
            loss = fn(*ts)
            return loss, grad(loss, wrt)
        return step


class JitgradJitValueAndGradPeer(JitgradJitPeer):
    """``jitgrad.jit(jitgrad.func.value_and_grad(f, argnums=wrt))``: the gradient staged inside
    the compiled program, as ``jax.jit(jax.value_and_grad(f))`` stages it."""

    name = "jitgrad-jit-vg"

    def prepare(self, case: Case, arrays: list[np.ndarray]) -> Step:
        import jitgrad

        if self.unavailable() is not None:
            raise RuntimeError(self._reason)
        ts = [t.detach() for t in self._tensors(case, arrays)]
        fn = self._jit(jitgrad.func.value_and_grad(self._fn(case), argnums=case.wrt))
        return lambda: fn(*ts)


class TorchPeer(Peer):
    """PyTorch eager: ``loss = f(...)``, ``torch.autograd.grad(loss, inputs)``."""

    name = "torch"

    def unavailable(self) -> str | None:
        try:
            import torch  # noqa: F401
        except ImportError as e:
            return f"torch is not installed ({e})"
        return None

    def version(self) -> str:
        return module_version("torch")

    def _fn(self, case: Case) -> Callable:
        ops = TorchOps()
        loss = case.loss
        return lambda *ts: loss(ops, *ts)

    def prepare(self, case: Case, arrays: list[np.ndarray]) -> Step:
        import torch

        ts = [torch.from_numpy(a.copy()) for a in arrays]
        for i in case.wrt:
            ts[i].requires_grad_()
        wrt = [ts[i] for i in case.wrt]
        fn = self._compile(self._fn(case))

        def step():
            loss = fn(*ts)
            return loss, torch.autograd.grad(loss, wrt)
        return step

    def _compile(self, fn: Callable) -> Callable:
        return fn

    def to_numpy(self, result: Any) -> tuple[float, list[np.ndarray]]:
        value, grads = result
        return float(value.detach()), [g.detach().numpy() for g in grads]


class TorchCompilePeer(TorchPeer):
    """``torch.compile(f)`` (inductor; forward and backward compiled), gradients as torch."""

    name = "torch-compile"

    def _compile(self, fn: Callable) -> Callable:
        import torch

        torch._dynamo.reset()  # a fresh cache per case: no recompile limit, no stale guards
        return torch.compile(fn)


class JaxPeer(Peer):
    """``jax.jit(jax.value_and_grad(f, argnums=wrt))`` with float64 enabled for W5."""

    name = "jax"

    def unavailable(self) -> str | None:
        try:
            import jax  # noqa: F401
        except ImportError as e:
            return f"jax is not installed ({e})"
        return None

    def version(self) -> str:
        return module_version("jax")

    def prepare(self, case: Case, arrays: list[np.ndarray]) -> Step:
        import jax

        jax.config.update("jax_enable_x64", True)  # W5 is float64; float32 inputs stay float32
        ops = JaxOps()
        loss = case.loss
        xs = [jax.device_put(a.copy()) for a in arrays]
        fn = jax.jit(jax.value_and_grad(lambda *ts: loss(ops, *ts), argnums=case.wrt))

        def step():
            return jax.block_until_ready(fn(*xs))
        return step


def all_peers() -> list[Peer]:
    """One instance of every peer, in PEER_NAMES order."""
    return [JitgradEagerPeer(), JitgradJitPeer(), JitgradJitValueAndGradPeer(), NumpyPeer(),
            TorchPeer(), TorchCompilePeer(), JaxPeer()]


def select(names: tuple[str, ...] | None = None) -> list[Peer]:
    """The peers named in ``names`` (all by default), in PEER_NAMES order."""
    peers = all_peers()
    if names is None:
        return peers
    unknown = sorted(set(names) - set(PEER_NAMES))
    if unknown:
        raise ValueError(f"unknown peer(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(PEER_NAMES)}")
    return [p for p in peers if p.name in names]
