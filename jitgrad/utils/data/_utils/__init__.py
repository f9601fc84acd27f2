"""``torch.utils.data._utils``: the collate functions (``collate``, ``default_collate``,
``default_convert``, ``default_collate_fn_map``) that custom ``collate_fn``s build on."""

from . import collate

__all__ = ["collate"]
