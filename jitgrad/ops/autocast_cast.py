"""The casts autocast makes (``ops/autocast_policy.py`` says which ops make them): below the
registry, which calls ``autocast_arguments`` for a primitive op with ``OpDef.autocast``."""

from __future__ import annotations

from typing import Any

from .. import dtypes
from .op_fields import AUTOCAST_LOWER

_ELIGIBLE = (dtypes.float16, dtypes.bfloat16, dtypes.float32)


def _cast_one(x: Any, policy: str, enabled: tuple, tensor_type: type) -> Any:
    if isinstance(x, tensor_type) and x._dtype in _ELIGIBLE:
        device_type = x.device.type
        for on_type, dtype in enabled:
            if on_type == device_type:
                target = dtype if policy == AUTOCAST_LOWER else dtypes.float32
                return x if x._dtype is target else x.to(target)
        return x
    if isinstance(x, (list, tuple)) and x and isinstance(x[0], tensor_type):
        return type(x)(_cast_one(t, policy, enabled, tensor_type) for t in x)
    return x


def autocast_arguments(policy: str, enabled: tuple, tensor_type: type, args: tuple,
                       kwargs: dict | None = None) -> tuple:
    """``args`` (and ``kwargs``) with each tensor autocast makes eligible cast as ``policy``
    says: floating but not float64, on a device type whose autocast is on (``enabled``: the
    ``(device type, dtype)`` pairs); to its dtype (``AUTOCAST_LOWER``) or to float32
    (``AUTOCAST_FP32``)."""
    args = tuple(_cast_one(a, policy, enabled, tensor_type) for a in args)
    if kwargs is None:
        return args
    return args, {k: _cast_one(v, policy, enabled, tensor_type) for k, v in kwargs.items()}
