"""More of ``torch.nn.functional``'s activations: relu6, hardtanh, hardsigmoid, hardswish, selu,
celu, mish, softsign, softmin, threshold, tanhshrink, softshrink, hardshrink, logsigmoid, glu,
prelu. selu and celu are the ELU op with torch's scales (``EluBackward0``); hardtanh (relu6),
threshold, hardshrink, softshrink, prelu, hardsigmoid and hardswish are ops of
``ops/nn_acts.py`` (their gradients are ops too, so second derivatives reach the input as
torch's); the rest are composed of jitgrad ops."""

from __future__ import annotations

from ..ops.autocast_policy import LOWER, autocast_policy
from ..ops.dtype_rules import refuse_dtypes
from ..ops.nn_acts import (HARDSHRINK, HARDSIGMOID, HARDSWISH, HARDTANH, PRELU, SOFTSHRINK,
                           THRESHOLD, THRESHOLD_INPLACE)
from ..ops.nn_ops import SOFTPLUS
from ..ops.nn_ops2 import ELU, ELU_RESULT
from ..ops.registry import apply
from ..tensor import Tensor

__all__ = ["relu6", "hardtanh", "hardsigmoid", "hardswish", "selu", "celu", "mish", "softsign",
           "softmin", "threshold", "tanhshrink", "softshrink", "hardshrink", "logsigmoid", "glu",
           "prelu"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _result(input: Tensor, out: Tensor, inplace: bool) -> Tensor:  # noqa: A002
    return input.copy_(out) if inplace else out


def _op_inplace(input: Tensor, op, **params: float) -> Tensor:  # noqa: A002
    """``op`` applied to ``input`` and written back into it (its node reads a snapshot)."""
    from ..ops.inplace import inplace as _inplace

    return _inplace(input, lambda s: apply(op, s, **params))


def _refuse_non_floating(kernel: str):
    """A check raising torch's error for a kernel built for floating dtypes only."""
    return refuse_dtypes(**dict.fromkeys(("complex", "integer", "bool"), kernel))


_MISH_CHECK = _refuse_non_floating("mish_cpu")
_LOGSIGMOID_CHECK = _refuse_non_floating("log_sigmoid_cpu")
_GLU_CHECK = _refuse_non_floating("glu_cpu")


def _floating_only(input: Tensor, kernel: str) -> None:  # noqa: A002
    if not input.dtype.is_floating_point:  # (torch's kernels are floating only)
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{input.dtype._scalar_name}'")


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,  # noqa: A002
             inplace: bool = False) -> Tensor:
    """``input`` clamped to ``[min_val, max_val]``; gradient 1 strictly inside, else 0."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if (min_val < 0 or max_val < 0) and input.dtype.name == "uint8":
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    params = {"min_val": float(min_val), "max_val": float(max_val)}
    if inplace:
        return _op_inplace(input, HARDTANH, **params)
    return apply(HARDTANH, input, **params)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``min(max(0, input), 6)``."""
    return hardtanh(input, 0.0, 6.0, inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``relu6(input + 3) / 6``."""
    _floating_only(input, "hardsigmoid_cpu")
    if inplace:
        return _op_inplace(input, HARDSIGMOID)
    return apply(HARDSIGMOID, input)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``input * relu6(input + 3) / 6``."""
    _floating_only(input, "hardswish_cpu")
    if inplace:
        return _op_inplace(input, HARDSWISH)
    return apply(HARDSWISH, input)


def selu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``scale * elu(input, alpha)`` with the self-normalizing constants."""
    if inplace:  # EluBackward1 from the output: the input is overwritten
        return _op_inplace(input, ELU_RESULT, alpha=_SELU_ALPHA, scale=_SELU_SCALE, input_scale=1.0)
    return apply(ELU, input, alpha=_SELU_ALPHA, scale=_SELU_SCALE, input_scale=1.0)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """``max(0, input) + min(0, alpha * (exp(input / alpha) - 1))``."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    if inplace:
        return _op_inplace(input, ELU_RESULT, alpha=float(alpha), scale=1.0,
                           input_scale=1.0 / alpha)
    return apply(ELU, input, alpha=float(alpha), scale=1.0, input_scale=1.0 / alpha)


def _softplus(x: Tensor) -> Tensor:
    return apply(SOFTPLUS, x, beta=1.0, threshold=20.0)


def mish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``input * tanh(softplus(input))``."""
    _MISH_CHECK((input,))
    return _result(input, input * _softplus(input).tanh(), inplace)


def softsign(input: Tensor) -> Tensor:  # noqa: A002
    """``input / (1 + |input|)``."""
    return input / (1 + input.abs())


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,  # noqa: A002
            dtype=None) -> Tensor:
    """``softmax(-input, dim)``."""
    from ._functional_core import softmax

    x = input if dtype is None else input.to(dtype)
    return softmax(-x, dim)


def threshold(input: Tensor, threshold: float, value: float,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """``input`` where it is above ``threshold``, else ``value``."""
    params = {"threshold": float(threshold), "value": float(value)}
    if inplace:
        return _op_inplace(input, THRESHOLD_INPLACE, **params)
    return apply(THRESHOLD, input, **params)


def tanhshrink(input: Tensor) -> Tensor:  # noqa: A002
    """``input - tanh(input)``."""
    return input - input.tanh()


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """``input - lambd`` above ``lambd``, ``input + lambd`` below ``-lambd``, else 0."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    _floating_only(input, "softshrink_check")
    return apply(SOFTSHRINK, input, lambd=float(lambd))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """``input`` where ``|input| > lambd``, else 0."""
    _floating_only(input, "hardshrink_cpu")
    return apply(HARDSHRINK, input, lambd=float(lambd))


def logsigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """``log(sigmoid(input))``, computed as ``-softplus(-input)``."""
    _LOGSIGMOID_CHECK((input,))
    return -_softplus(-input)


def glu(input: Tensor, dim: int = -1) -> Tensor:  # noqa: A002
    """``a * sigmoid(b)`` of the two halves ``a, b`` of ``input`` along ``dim``."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    _GLU_CHECK((input,))
    d = dim % input.ndim
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size "
                           f"{input.shape[d]}")
    a, b = input.chunk(2, d)
    return a * b.sigmoid()


@autocast_policy(LOWER)
def prelu(input: Tensor, weight: Tensor) -> Tensor:  # noqa: A002
    """``input`` where non-negative, else ``weight * input`` (``weight`` one value or one per
    channel, dim 1)."""
    if weight.numel() != 1:
        channels = input.shape[1] if input.ndim >= 2 else 1  # (torch's: no channels below 2-d)
        if weight.numel() != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {weight.numel()} and channel size = "
                               f"{channels}.")
        if input.ndim >= 2:
            weight = weight.reshape((1, -1) + (1,) * (input.ndim - 2))
    else:
        weight = weight.reshape(())
    return apply(PRELU, input, weight)
