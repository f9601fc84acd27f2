"""``jitgrad.utils``: data loading (``jitgrad.utils.data``) and activation checkpointing
(``jitgrad.utils.checkpoint``)."""

from . import _pytree, checkpoint, data, hooks
