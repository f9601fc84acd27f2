"""``Parameter``: a Tensor that a ``Module`` registers as one of its learnable weights."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..ops import registry
from ..ops.memory_formats import preserve_format
from ..tensor import Tensor
from .._torch_function import _disabled_torch_function_impl

__all__ = ["Parameter"]


class Parameter(Tensor):
    """A leaf Tensor that is a module parameter (``torch.nn.Parameter``).

    Assigning a ``Parameter`` as a ``Module`` attribute registers it, so it appears in
    ``parameters()`` and ``state_dict()``. It shares memory and the version counter with
    ``data`` (as torch does) and requires grad unless ``requires_grad=False``.

    Args:
        data: the tensor to wrap; an empty float tensor when None.
        requires_grad: whether the parameter requires gradient. Default: True.
    """

    # (no part in the __torch_function__ protocol, as torch's own subclasses)
    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Parameter:
        if data is None:  # (torch's empty(0): on the default device)
            from ..ops.creation import empty

            data = empty(0)
            arr, dt, vc = data._data, data.dtype, [0]
        else:
            arr, dt, vc = data.detach()._data, data.dtype, data._vc
        if requires_grad and not (dt.is_floating_point or dt.is_complex):
            raise RuntimeError(
                "Only Tensors of floating point and complex dtype can require gradients")
        inference = data is not None and data._is_inference
        if requires_grad and inference and not registry.state.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                               "InferenceMode is not allowed.")
        p = Tensor.__new__(cls)
        p._init(arr, dt, bool(requires_grad))
        p._vc = vc
        if inference:  # (a parameter made of an inference tensor is one, as torch's)
            p._is_inference = True
        return p

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        pass  # everything happens in __new__ (Tensor.__init__ would rebuild the data)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol: Any) -> tuple:
        return (_rebuild_parameter, (self._data, self._dtype.name, self._requires_grad))

    def __deepcopy__(self, memo: dict) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        # (as torch's: a fresh leaf of the data's copy, without ``.grad`` or other attributes)
        new = type(self)(self.data.clone(memory_format=preserve_format), self._requires_grad)
        memo[id(self)] = new
        return new


def _rebuild_parameter(data: np.ndarray, dtype_name: str, requires_grad: bool) -> Parameter:
    t = Tensor(data, dtype=getattr(dtypes, dtype_name))
    return Parameter(t, requires_grad)
