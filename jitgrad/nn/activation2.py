"""More activation modules with torch.nn's arguments and repr: ReLU6, Hardtanh, Hardsigmoid,
Hardswish, SELU, CELU, Mish, Softsign, Softmin, Threshold, Tanhshrink, Softshrink, Hardshrink,
LogSigmoid, GLU, PReLU (see ``nn.functional`` for the math)."""

from __future__ import annotations

import warnings
from typing import Any

from .. import dtypes
from ..ops.creation import empty
from ..tensor import Tensor
from . import _functional_act as F
from . import init
from .module import Module
from .parameter import Parameter

__all__ = ["ReLU6", "Hardtanh", "Hardsigmoid", "Hardswish", "SELU", "CELU", "Mish", "Softsign",
           "Softmin", "Threshold", "Tanhshrink", "Softshrink", "Hardshrink", "LogSigmoid", "GLU",
           "PReLU"]


class _Inplace(Module):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Hardtanh(Module):
    """``input`` clamped to ``[min_val, max_val]`` (defaults -1 and 1)."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None) -> None:
        super().__init__()
        for old, new in (("min_value", "min_val"), ("max_value", "max_val")):
            if (min_value if old == "min_value" else max_value) is not None:
                warnings.warn(f"keyword argument `{old}` is deprecated and renamed to `{new}`",
                              FutureWarning, stacklevel=2)
        min_val = min_val if min_value is None else min_value
        max_val = max_val if max_value is None else max_value
        if min_val > max_val:
            raise ValueError("min_val cannot be greater than max_val")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + \
            (", inplace=True" if self.inplace else "")


class ReLU6(Hardtanh):
    """``min(max(0, input), 6)``."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Hardsigmoid(_Inplace):
    """``relu6(input + 3) / 6`` (its repr shows no ``inplace``, as torch's)."""

    def extra_repr(self) -> str:
        return ""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.hardsigmoid(input, self.inplace)


class Hardswish(_Inplace):
    """``input * relu6(input + 3) / 6`` (its repr shows no ``inplace``, as torch's)."""

    def extra_repr(self) -> str:
        return ""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.hardswish(input, self.inplace)


class SELU(_Inplace):
    """Scaled ELU with the self-normalizing constants."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.selu(input, self.inplace)


class Mish(_Inplace):
    """``input * tanh(softplus(input))``."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.mish(input, self.inplace)


class CELU(Module):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softsign(Module):
    """``x / (1 + |x|)``."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.softsign(input)


class Tanhshrink(Module):
    """``x - tanh(x)``."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.tanhshrink(input)


class LogSigmoid(Module):
    """``log(sigmoid(x))``."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.logsigmoid(input)


class Softmin(Module):
    """``softmax(-x, dim)``."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.softmin(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Threshold(Module):
    """``x`` where above ``threshold``, else ``value``."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + \
            (", inplace=True" if self.inplace else "")


class _Shrink(Module):
    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def extra_repr(self) -> str:
        return str(self.lambd)


class Softshrink(_Shrink):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.softshrink(input, self.lambd)


class Hardshrink(_Shrink):
    """``x`` where ``|x| > lambd``, else 0."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.hardshrink(input, self.lambd)


class GLU(Module):
    """``a * sigmoid(b)`` of the halves of the input along ``dim`` (default -1)."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """``x`` where non-negative, else ``weight * x``, with a learned ``weight``
    (``num_parameters``: 1, or one per channel; starting at ``init``)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None,
                 dtype: dtypes.dtype | None = None) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(empty(num_parameters, dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Sets every weight to ``init``."""
        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"
