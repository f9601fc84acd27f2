"""``torch.storage``: ``UntypedStorage`` (the bytes under a tensor and its views) and the
deprecated ``TypedStorage``, the classes of ``Tensor.untyped_storage()`` and
``Tensor.storage()`` (CPU storages only; see ``jitgrad/ops/storage.py``)."""

from __future__ import annotations

from .ops.storage import TypedStorage, UntypedStorage, is_storage

__all__ = ["TypedStorage", "UntypedStorage"]
_is_storage = is_storage
