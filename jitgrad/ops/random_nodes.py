"""The autograd nodes torch records on random draws from parameters that require grad.

torch's ``poisson(rates)`` and ``bernoulli(p)`` results have a node (``PoissonBackward0``,
``BernoulliBackward0``) whose gradient is zero: a loss through them backpropagates (zeros)
instead of failing for want of a graph. ``binomial``, ``bernoulli(x, p_number)`` and
``_sample_dirichlet`` record torch's ``NotImplemented`` node, whose backward raises
``derivative for aten::<op> is not implemented``. ``record_draws`` puts such a node between
the parameters and the draws (the draws pass through unchanged; nothing is recorded when no
parameter requires grad).
"""

from __future__ import annotations

from typing import Any

from .registry import OPAQUE, apply, defop, state


def _pass_draws(*arrays):
    return arrays[-1]


def _draws_meta(*values, **params):
    return tuple(values[-1].shape), values[-1].dtype


def _zero_vjp(g, ans, parameter, draws):
    from .creation import zeros_like

    return zeros_like(g)  # (the draws have the parameter's shape and dtype)


def _zero_jvp(tangents, ans, *values):
    from .creation import zeros_like

    return zeros_like(ans)


def _not_implemented(name: str):
    def rule(*args: Any) -> Any:
        raise RuntimeError(f"derivative for aten::{name} is not implemented")

    return rule


def _zero_node(name: str, node_name: str) -> Any:
    return defop(name, _pass_draws, kind=OPAQUE, meta=_draws_meta, node_name=node_name,
                 vjp=(_zero_vjp, None), jvp=_zero_jvp)


def unimplemented_node(name: str, aten: str, n_parameters: int) -> Any:
    """An op recording torch's ``NotImplemented`` node over ``n_parameters`` parents: its
    backward raises ``derivative for aten::<aten> is not implemented``."""
    rule = _not_implemented(aten)
    return defop(name, _pass_draws, kind=OPAQUE, meta=_draws_meta, node_name="NotImplemented",
                 vjp=(rule,) * n_parameters + (None,), jvp=rule)


POISSON_NODE = _zero_node("poisson_draws", "PoissonBackward0")
BERNOULLI_NODE = _zero_node("bernoulli_draws", "BernoulliBackward0")
BINOMIAL_NODE = unimplemented_node("binomial_draws", "binomial", 2)
BERNOULLI_P_NODE = unimplemented_node("bernoulli_p_draws", "bernoulli", 1)
SAMPLE_DIRICHLET_NODE = unimplemented_node("sample_dirichlet_draws", "_sample_dirichlet", 1)


def record_draws(node: Any, parameters: tuple, draws: Any) -> Any:
    """``draws`` behind ``node``'s autograd node when a parameter requires grad (eager)."""
    if state.grad_enabled and any(getattr(p, "requires_grad", False) for p in parameters):
        return apply(node, *parameters, draws)
    return draws
