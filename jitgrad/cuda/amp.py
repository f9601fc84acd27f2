"""``jitgrad.cuda.amp``: torch.cuda.amp's deprecated spelling of ``jitgrad.amp``'s names."""

from __future__ import annotations

import warnings

from .. import dtypes
from ..amp import autocast_mode


class autocast(autocast_mode.autocast):  # noqa: N801 - torch's name
    """``jitgrad.amp.autocast("cuda", ...)``, with torch's deprecation warning."""

    def __init__(self, enabled: bool = True, dtype: dtypes.dtype = dtypes.float16,
                 cache_enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
