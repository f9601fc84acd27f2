"""``jitgrad.amp``: automatic mixed precision (``torch.amp``): ``GradScaler``, which scales the
loss so that float16 gradients do not underflow and skips the steps whose gradients overflow."""

from .grad_scaler import GradScaler as GradScaler
