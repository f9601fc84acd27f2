"""``jitgrad.cuda.amp``: torch.cuda.amp's deprecated spelling of ``jitgrad.amp``'s names."""

from __future__ import annotations

import warnings

from .. import dtypes
from ..amp import autocast_mode
from ..amp import grad_scaler as _grad_scaler


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
