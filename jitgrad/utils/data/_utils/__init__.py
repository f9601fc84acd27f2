"""``torch.utils.data._utils``: the collate functions (``collate``, ``default_collate``,
``default_convert``, ``default_collate_fn_map``) that custom ``collate_fn``s build on, and
``worker`` (``get_worker_info``)."""

from . import collate, worker

__all__ = ["collate", "worker"]
