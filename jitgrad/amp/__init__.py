"""``jitgrad.amp``: torch.amp's automatic mixed precision (``autocast``, ``GradScaler``)."""

from .autocast_mode import autocast as autocast
from .autocast_mode import custom_bwd as custom_bwd
from .autocast_mode import custom_fwd as custom_fwd
from .autocast_mode import is_autocast_available as is_autocast_available
from .grad_scaler import GradScaler as GradScaler
