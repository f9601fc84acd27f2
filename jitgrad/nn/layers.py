"""Layers: Linear, activations (ReLU, Tanh, GELU, SiLU), Dropout, LayerNorm, Sequential,
Flatten and Unflatten."""

from __future__ import annotations

import math
import operator
from collections import OrderedDict
from collections.abc import Iterator
from itertools import islice
from typing import Any

from .. import dtypes
from ..ops.creation import empty
from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter

__all__ = ["Identity", "Linear", "ReLU", "Tanh", "GELU", "SiLU", "Dropout", "LayerNorm",
           "Sequential", "Flatten", "Unflatten"]


class Identity(Module):
    """Returns its input unchanged (arguments are accepted and ignored, as in torch)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return input


class Linear(Module):
    """``y = x @ weight.T + bias``, initialized as torch does.

    ``weight`` (out_features, in_features) is drawn by ``kaiming_uniform_(a=sqrt(5))``, i.e.
    U(-1/sqrt(in_features), 1/sqrt(in_features)); ``bias`` from the same bound.

    Args:
        in_features: size of each input sample.
        out_features: size of each output sample.
        bias: whether to learn an additive bias. Default: True.
        device: only ``None``/``"cpu"``.
        dtype: parameter dtype (default: the default float dtype).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: dtypes.dtype | None = None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in_features), dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(empty((out_features,), dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draws weight and bias with torch's default initialization."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class ReLU(Module):
    """Elementwise ``max(x, 0)``."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Tanh(Module):
    """Elementwise hyperbolic tangent."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return input.tanh()


class GELU(Module):
    """Gaussian error linear unit; ``approximate='tanh'`` for the tanh approximation."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """Elementwise ``x * sigmoid(x)``."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Dropout(Module):
    """Zeroes elements with probability ``p`` while training; the identity in eval mode."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class _AffineNorm(Module):
    """A normalization layer's learned per-element ``weight`` (ones) and ``bias`` (zeros), each
    registered as None when not learned."""

    def _affine(self, shape: tuple, affine: bool, bias: bool, device: Any,
                dtype: dtypes.dtype | None) -> None:
        for name, learned in (("weight", affine), ("bias", affine and bias)):
            if learned:
                setattr(self, name, Parameter(empty(shape, dtype=dtype, device=device)))
            else:
                self.register_parameter(name, None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Sets weight to ones and bias to zeros."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)


class LayerNorm(_AffineNorm):
    """Layer normalization over the trailing ``normalized_shape`` dims, with affine params."""

    def __init__(self, normalized_shape: Any, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device: Any = None,
                 dtype: dtypes.dtype | None = None) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self._affine(self.normalized_shape, elementwise_affine, bias, device, dtype)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class Sequential(Module):
    """Applies its modules in order. Built from modules or from an ``OrderedDict`` of them.

    Supports ``len``, iteration, integer indexing (negative too), slicing (a new
    ``Sequential`` keeping the names), item assignment/deletion, ``append``, ``insert``,
    ``extend``, ``pop``, ``+`` (of two) and ``*`` (repeated).
    """

    def __init__(self, *args: Module) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def _item_by_idx(self, iterator: Iterator, idx: Any) -> Any:
        size = len(self)
        idx = operator.index(idx)
        if not -size <= idx < size:
            raise IndexError(f"index {idx} is out of range")
        return next(islice(iterator, idx % size, None))

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return self._item_by_idx(iter(self._modules.values()), idx)

    def __setitem__(self, idx: int, module: Module) -> None:
        key = self._item_by_idx(iter(self._modules.keys()), idx)
        setattr(self, key, module)

    def __delitem__(self, idx: Any) -> None:
        if isinstance(idx, slice):
            for key in list(self._modules.keys())[idx]:
                delattr(self, key)
        else:
            delattr(self, self._item_by_idx(iter(self._modules.keys()), idx))
        values = list(self._modules.values())
        self._modules.clear()
        self._modules.update((str(i), m) for i, m in enumerate(values))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module) -> Sequential:
        """Adds ``module`` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Puts ``module`` at ``index`` (negative counts from the end), the later ones one
        place on; returns self."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        index = index + n if index < 0 else index
        for i in range(n, index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module
        return self

    def extend(self, sequential: Any) -> Sequential:
        """Appends each module of ``sequential``; returns self."""
        for layer in sequential:
            self.append(layer)
        return self

    def pop(self, key: Any) -> Any:
        """Removes and returns the module (or slice of them) at ``key``."""
        value = self[key]
        del self[key]
        return value

    def __add__(self, other: Any) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        return Sequential().extend(self).extend(other)

    def __iadd__(self, other: Any) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        offset = len(self)
        for i, module in enumerate(other):
            self.add_module(str(i + offset), module)
        return self

    def _check_factor(self, other: Any) -> None:
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and "
                            f"{type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")

    def __mul__(self, other: Any) -> Sequential:
        self._check_factor(other)
        repeated = Sequential()
        for _ in range(other):
            repeated.extend(self)
        return repeated

    def __rmul__(self, other: Any) -> Sequential:
        return self.__mul__(other)

    def __imul__(self, other: Any) -> Sequential:
        self._check_factor(other)
        modules = list(self)
        for _ in range(other - 1):
            self.extend(modules)
        return self

    def forward(self, input: Any) -> Any:  # noqa: A002
        for module in self:
            input = module(input)
        return input


class Flatten(Module):
    """Flattens dims ``start_dim`` .. ``end_dim`` into one (by default all but the batch dim).

    Args:
        start_dim: first dim to flatten. Default: 1.
        end_dim: last dim to flatten. Default: -1.
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits dim ``dim`` into ``unflattened_size`` (one entry may be -1).

    Args:
        dim: the dim to split.
        unflattened_size: the new sizes, whose product is that dim's size.
    """

    def __init__(self, dim: int, unflattened_size: Any) -> None:
        super().__init__()
        if not isinstance(dim, int):
            raise TypeError(f"invalid argument type for dim parameter, expected int, got "
                            f"{type(dim)}")
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError("unflattened_size must be tuple or list, but found type "
                            f"{type(unflattened_size).__name__}")
        for idx, elem in enumerate(unflattened_size):
            if not isinstance(elem, int):
                raise TypeError("unflattened_size must be tuple of ints, but found element "
                                f"of type {type(elem).__name__} at pos {idx}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        shape = tuple(input.shape)
        if not -len(shape) <= self.dim < max(len(shape), 1):
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-len(shape)}, "
                f"{len(shape) - 1}], but got {self.dim})")
        d = self.dim % len(shape)
        sizes = tuple(self.unflattened_size)
        known = math.prod(s for s in sizes if s != -1)
        ok = (shape[d] == known) if -1 not in sizes else (known != 0 and shape[d] % known == 0)
        if not ok:
            raise RuntimeError(
                f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim "
                f"{self.dim} ({shape[d]}) in the input tensor")
        return input.reshape(shape[:d] + sizes + shape[d + 1:])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
