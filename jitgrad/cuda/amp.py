"""``jitgrad.cuda.amp``: torch.cuda.amp's deprecated spelling of ``jitgrad.amp``'s names."""

from __future__ import annotations

import warnings
from collections.abc import Callable

from .. import dtypes
from ..amp import autocast_mode
from ..amp import grad_scaler as _grad_scaler


__all__ = ["GradScaler", "amp_definitely_not_available", "autocast", "custom_bwd", "custom_fwd"]


class autocast(autocast_mode.autocast):  # noqa: N801 - torch's name
    """``jitgrad.amp.autocast("cuda", ...)``, with torch's deprecation warning."""

    def __init__(self, enabled: bool = True, dtype: dtypes.dtype = dtypes.float16,
                 cache_enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_grad_scaler.GradScaler):
    """``jitgrad.amp.GradScaler("cuda", ...)``, with torch's deprecation warning."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)


def custom_fwd(fwd: Callable | None = None, *,
               cast_inputs: dtypes.dtype | None = None) -> Callable:
    """``jitgrad.amp.custom_fwd(..., device_type="cuda")``, with torch's deprecation warning."""
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    return autocast_mode.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd: Callable) -> Callable:
    """``jitgrad.amp.custom_bwd(..., device_type="cuda")``, with torch's deprecation warning."""
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    return autocast_mode.custom_bwd(bwd, device_type="cuda")


def amp_definitely_not_available() -> bool:
    """Whether CUDA autocast can certainly not run here (no usable CUDA device)."""
    from . import is_available

    return not is_available()
