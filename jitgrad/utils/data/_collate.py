"""``default_collate`` and ``default_convert``: how a ``DataLoader`` turns a list of samples
into a batch (torch.utils.data's rules)."""

from __future__ import annotations

import collections.abc
import re
from typing import Any

import numpy as np

__all__ = ["default_collate", "default_convert"]

_NP_STR_OBJ = re.compile(r"[SaUO]")
_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found {}")
_CONVERT_ERR = "default_convert: batch must contain tensors, numpy arrays, numbers, dicts or " \
    "lists; found {}"


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def default_convert(data: Any) -> Any:
    """NumPy arrays (and NumPy scalars) to tensors, inside mappings and sequences too; the
    rest unchanged (the collate function of ``batch_size=None``)."""
    from ...ops.creation import as_tensor
    from ...tensor import Tensor

    if isinstance(data, Tensor):
        return data
    if type(data).__module__ == "numpy" and not isinstance(data, (np.str_, np.bytes_)):
        if isinstance(data, np.ndarray) and _NP_STR_OBJ.search(data.dtype.str) is not None:
            return data
        return as_tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return {key: default_convert(data[key]) for key in data}
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return [default_convert(d) for d in data]
    return data


def default_collate(batch: list) -> Any:
    """Stacks a list of samples into a batch, recursing into their structure:

    tensors are stacked along a new dim 0; NumPy arrays become tensors and are stacked; Python
    floats become a float64 tensor, ints an int64 tensor (bools a bool tensor); strings stay as
    they come (a list; a tuple inside a sequence); dicts collate per key; namedtuples per
    field; other sequences (tuples included) become a list of per-position batches, as in torch.
    """
    from ...ops.creation import as_tensor, tensor
    from ...ops.movement import stack
    from ...tensor import Tensor
    from ... import dtypes

    elem = batch[0]
    elem_type = type(elem)
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_",
                                                                      "bytes_"):
        if isinstance(elem, np.ndarray):
            if _NP_STR_OBJ.search(elem.dtype.str) is not None:
                raise TypeError(_ERR.format(elem.dtype))
            return default_collate([as_tensor(b) for b in batch])
        if elem.shape == ():
            return as_tensor(np.asarray(batch))
    if isinstance(elem, float):
        return tensor(batch, dtype=dtypes.float64)
    if isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return elem_type(collated)
        except TypeError:
            return collated
    if _is_namedtuple(elem):
        return elem_type(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        # (each position's samples stay a tuple, as in torch: strings come back as a tuple)
        if isinstance(elem, tuple):
            return [default_collate(s) for s in transposed]
        try:
            return elem_type([default_collate(s) for s in transposed])
        except TypeError:
            return [default_collate(s) for s in transposed]
    raise TypeError(_ERR.format(elem_type))
