"""The multi-tensor ("foreach") updates of Adam/AdamW and SGD, jitgrad's default step.

torch's optimizers have a for-loop of tensor ops per parameter (``foreach=False``, its default
for CPU tensors) and ``_foreach_*`` kernels that apply each step of the update to every
parameter at once (its default on CUDA, and ``foreach=True``). Here the op-by-op loop is the
reference (each op dispatched, checked and recorded like any eager op: about 10 us per op, and
a temporary plus a copy-back per in-place op), and this module is the fast path: the same
arithmetic in the same order, written as NumPy in-place ufuncs on the parameters' and states'
own arrays. Every intermediate is rounded to the parameter's dtype exactly where the op-by-op
path rounds it (a Python float meets a float32 array as float32), so the two paths agree bit
for bit: tests/test_optim_foreach.py holds them to that.

The fast path is taken only where it cannot differ from the ops: dense CPU float32/float64
tensors of plain ``Tensor``/``Parameter`` type, writable and not inference tensors, a float
learning rate, and no jit trace, forward-mode AD, profiler, autocast, inference mode or
``__torch_function__`` class in play. Anything else runs the op-by-op loop.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..nn.parameter import Parameter
from ..ops import fused_arith, registry
from ..tensor import Tensor

__all__ = ["adam_", "available", "plain", "real_number", "sgd_"]

_PLAIN = (Tensor, Parameter)
_FLOATS = (dtypes.float32, dtypes.float64)


def available(foreach: bool | None) -> bool:
    """Whether the fast path may run at all now (``foreach=False`` asks for the loop)."""
    st = registry.state
    return (foreach is not False and registry.fw_hook is None and registry.profiler is None
            and not registry.torch_function_live and not st.traces and not st.inference
            and not st.autocast)


def plain(*tensors: Any, dtype: Any = None) -> bool:
    """Whether the tensors are dense CPU tensors of one float dtype (``dtype`` if given) that
    the fast path may write. (The jitgrad dtype decides: bfloat16 is held in float32 arrays,
    and its ops round each result to bfloat16, which NumPy's ufuncs would not.)"""
    first = tensors[0]._dtype if dtype is None else dtype
    for t in tensors:
        data = t._data
        if type(t) not in _PLAIN or type(data) is not np.ndarray or t._dtype is not first \
                or t._is_inference or not data.flags.writeable:
            return False
    return first in _FLOATS


def _bump(*tensors: Tensor) -> None:
    for t in tensors:
        t._vc[0] += 1


def _decayed_grad(p: np.ndarray, grad: np.ndarray, maximize: bool,
                  weight_decay: float) -> np.ndarray:
    """``-grad`` if maximizing, plus ``p * weight_decay`` (add's alpha) if decaying: a new array
    when either applies, else ``grad`` itself (read only)."""
    if maximize:
        grad = np.negative(grad, out=np.empty_like(p))
    if weight_decay != 0:  # grad.add(p, alpha=weight_decay): one fma
        out = np.empty_like(p)
        fused_arith.fma_(out, weight_decay, p, grad)
        grad = out
    return grad


def adam_(p: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
    """One Adam/AdamW update of ``p`` and its state, as ``Adam``'s op-by-op loop computes it."""
    beta1, beta2 = group["betas"]
    lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
    param, exp_avg, exp_avg_sq = p._data, state["exp_avg"], state["exp_avg_sq"]
    step_t = state["step"]
    np.add(step_t._data, 1, out=step_t._data)
    _bump(step_t)
    decoupled = group["decoupled_weight_decay"] and weight_decay != 0
    if decoupled:
        param *= 1 - lr * weight_decay
        _bump(p)
    grad = _decayed_grad(param, p.grad._data, group["maximize"],
                         0 if decoupled else weight_decay)
    fused_arith.lerp_(exp_avg._data, grad, 1 - beta1)  # (the lerp_scalar op, fused)
    sq = exp_avg_sq._data
    sq *= beta2
    # addcmul: fma(value * grad, grad, sq)
    scaled = np.multiply(grad, 1 - beta2, out=np.empty_like(sq))
    fused_arith.fma_(sq, scaled, grad, sq)
    _bump(exp_avg, exp_avg_sq, exp_avg_sq)
    step = float(step_t._data)
    step_size = lr / (1 - beta1 ** step)
    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    if group["amsgrad"]:
        max_sq = state["max_exp_avg_sq"]
        np.maximum(max_sq._data, sq, out=max_sq._data)
        _bump(max_sq)
        sq = max_sq._data
    denom = np.sqrt(sq, out=np.empty_like(sq))
    denom /= bias_correction2_sqrt
    denom += eps
    # addcdiv: p + (value * exp_avg) / denom
    scaled = np.multiply(exp_avg._data, -step_size, out=np.empty_like(denom))
    np.divide(scaled, denom, out=denom)
    param += denom
    _bump(p)


def sgd_(p: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
    """One SGD update of ``p`` (and its momentum buffer), as ``SGD``'s op-by-op loop does."""
    lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
    param = p._data
    grad = _decayed_grad(param, p.grad._data, group["maximize"], group["weight_decay"])
    if momentum != 0:
        buf = state.get("momentum_buffer")
        if buf is None:
            copied = np.array(grad, copy=True, order="K")  # grad.clone()
            buf = state["momentum_buffer"] = registry.make(copied, p.dtype)
        else:
            data = buf._data
            data *= momentum
            fused_arith.fma_(data, 1 - dampening, grad, data)  # buf.add_(grad, alpha=...)
            _bump(buf, buf)
        if group["nesterov"]:  # grad.add(buf, alpha=momentum)
            out = np.empty_like(param)
            fused_arith.fma_(out, momentum, buf._data, grad)
            grad = out
        else:
            grad = buf._data
    fused_arith.fma_(param, -lr, grad, param)  # p.add_(grad, alpha=-lr)
    _bump(p)


def real_number(x: Any) -> bool:
    """A learning rate (or other hyperparameter) the fast path takes: a real number, not a
    tensor."""
    return isinstance(x, (float, int, np.floating, np.integer)) and not isinstance(x, bool)



def as_real(p: Tensor, state: dict[str, Any], name: str) -> tuple:
    """torch's handling of a complex parameter: the update runs on ``view_as_real`` of the
    parameter, of its gradient and of its complex state, so the real and imaginary parts step
    as two real numbers (the writes reach the complex tensors). Returns ``(param, grad,
    state)``; a real parameter's own. ``name``: the optimizer, for the compiled step's
    refusal."""
    if not p.is_complex():
        return p, p.grad, state
    from . import _compiling

    if _compiling.trace() is not None:
        raise NotImplementedError(f"a compiled {name} step takes real parameters only: step a "
                                  "complex one in eager mode")
    view = registry.OPS["view_as_real"]
    views = {k: registry.apply(view, v) if isinstance(v, Tensor) and v.is_complex() else v
             for k, v in state.items()}
    return registry.apply(view, p), registry.apply(view, p.grad), views
