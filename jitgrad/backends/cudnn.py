"""``torch.backends.cudnn``'s switches, as scripts set them. jitgrad's CUDA kernels are its own
(no cuDNN), so the switches are recorded and read back but change nothing, and
``is_available()`` is False."""

from __future__ import annotations

#: torch: use deterministic convolution algorithms (jitgrad's are deterministic already).
deterministic = False
#: torch: let cuDNN time convolution algorithms and pick the fastest (nothing to pick here).
benchmark = False
#: torch: whether cuDNN is used where it could be.
enabled = True
#: torch: TF32 in cuDNN convolutions (jitgrad computes float32 in float32).
allow_tf32 = True


def is_available() -> bool:
    """Whether cuDNN can be used: never (jitgrad does not link cuDNN)."""
    return False


def version() -> None:
    """cuDNN's version: None, as torch returns without cuDNN."""
    return None
