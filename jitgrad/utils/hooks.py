"""``jitgrad.utils.hooks``: torch.utils.hooks's ``RemovableHandle``, what hook registrations
return."""

from .._hooks import RemovableHandle as RemovableHandle

__all__ = ["RemovableHandle"]
