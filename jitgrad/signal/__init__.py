"""``jitgrad.signal``: signal processing (``jitgrad.signal.windows``), as ``torch.signal``."""

from . import windows

__all__ = ["windows"]
