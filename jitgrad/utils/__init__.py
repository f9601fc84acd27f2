"""``jitgrad.utils``: data loading helpers (``jitgrad.utils.data``)."""

from . import data
