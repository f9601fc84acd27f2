"""Autocast's cast policies (``jitgrad.amp.autocast``): which ops run in the lower-precision
dtype and which in float32 while autocast is on, as torch's lists for CPU autocast say.

``state.autocast`` (``ops.registry``) holds the enabled ``(device type, dtype)`` pairs of this
thread, an empty tuple outside autocast. A primitive op with ``OpDef.autocast`` set is cast in
``apply`` (by ``autocast_cast.autocast_arguments``); a public function built from several ops takes
the ``autocast_policy`` decorator, which casts its tensor arguments once and runs its body
with autocast off, as torch excludes the autocast dispatch keys inside an autocast-wrapped op.

A tensor is eligible when it is floating point but not float64 and lives on a device type
whose autocast is on: ``LOWER`` casts it to that autocast's dtype, ``FP32`` to float32. Other
arguments pass unchanged.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from . import registry
from .op_fields import AUTOCAST_FP32 as FP32
from .op_fields import AUTOCAST_LOWER as LOWER
from .autocast_cast import autocast_arguments


def autocast_policy(policy: str) -> Callable[[Callable], Callable]:
    """Marks a public function as an autocast op of ``policy`` (``LOWER`` or ``FP32``)."""
    if policy not in (LOWER, FP32):
        raise ValueError(f"unknown autocast policy {policy!r}")

    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            st = registry.state
            enabled = st.autocast
            if not enabled:
                return fn(*args, **kwargs)
            args, kwargs = autocast_arguments(policy, enabled, registry.Tensor, args, kwargs)
            st.autocast = ()
            try:
                return fn(*args, **kwargs)
            finally:
                st.autocast = enabled

        run.autocast_policy = policy
        return run

    return wrap
