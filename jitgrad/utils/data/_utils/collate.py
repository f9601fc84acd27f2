"""``default_collate`` and ``default_convert``: how a ``DataLoader`` turns a list of samples
into a batch (torch.utils.data's rules)."""

from __future__ import annotations

import collections.abc
import copy
import re
from typing import Any

import numpy as np

from ....tensor import Tensor

__all__ = ["collate", "default_collate", "default_collate_fn_map", "default_convert"]

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
    from ....ops.creation import as_tensor

    if isinstance(data, Tensor):
        return data
    if type(data).__module__ == "numpy" and not isinstance(data, (np.str_, np.bytes_)):
        if isinstance(data, np.ndarray) and _NP_STR_OBJ.search(data.dtype.str) is not None:
            return data
        return as_tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        converted = {key: default_convert(data[key]) for key in data}
        try:  # (the mapping's type kept, as torch's)
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update(converted)
                return clone
            return type(data)(converted)
        except TypeError:
            return converted
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:  # (the sequence's type kept, as torch's)
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate_tensor_fn(batch: list, *, collate_fn_map: dict | None = None) -> Any:
    """Tensors stacked along a new dim 0."""
    from ....ops.movement import stack

    return stack(list(batch), 0)


def collate_numpy_array_fn(batch: list, *, collate_fn_map: dict | None = None) -> Any:
    """NumPy arrays as tensors, collated (strings and objects refused)."""
    from ....ops.creation import as_tensor

    elem = batch[0]
    if _NP_STR_OBJ.search(elem.dtype.str) is not None:
        raise TypeError(_ERR.format(elem.dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch: list, *, collate_fn_map: dict | None = None) -> Any:
    """NumPy scalars as one tensor."""
    from ....ops.creation import as_tensor

    return as_tensor(np.asarray(batch))


def collate_float_fn(batch: list, *, collate_fn_map: dict | None = None) -> Any:
    """Python floats as a float64 tensor."""
    from .... import dtypes
    from ....ops.creation import tensor

    return tensor(batch, dtype=dtypes.float64)


def collate_int_fn(batch: list, *, collate_fn_map: dict | None = None) -> Any:
    """Python ints (and bools) as an int64 (bool) tensor."""
    from ....ops.creation import tensor

    return tensor(batch)


def collate_str_fn(batch: list, *, collate_fn_map: dict | None = None) -> Any:
    """Strings stay as they come."""
    return batch


def collate(batch: list, *, collate_fn_map: dict | None = None) -> Any:
    """Collates a list of samples with ``collate_fn_map`` (type, or tuple of types -> function
    ``fn(batch, *, collate_fn_map)``: the sample type's own entry, else the first entry it is
    an instance of), recursing into mappings (per key, keeping the mapping's type: a
    ``defaultdict`` stays one), namedtuples (per field) and other sequences (a list of
    per-position batches; a mutable sequence keeps its type), as torch's."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for kind in collate_fn_map:
            if isinstance(elem, kind):
                return collate_fn_map[kind](batch, collate_fn_map=collate_fn_map)

    def each(samples: Any) -> Any:
        return collate(samples, collate_fn_map=collate_fn_map)

    if isinstance(elem, collections.abc.Mapping):
        collated = {key: each([d[key] for d in batch]) for key in elem}
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)  # (its type and extra attributes kept)
                clone.update(collated)
                return clone
            return elem_type(collated)
        except TypeError:
            return collated
    if _is_namedtuple(elem):
        return elem_type(*(each(s) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        # (each position's samples stay a tuple, as in torch: strings come back as a tuple)
        if isinstance(elem, tuple):
            return [each(s) for s in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = each(samples)
                return clone
            return elem_type([each(s) for s in transposed])
        except TypeError:
            return [each(s) for s in transposed]
    raise TypeError(_ERR.format(elem_type))


default_collate_fn_map: dict = {
    Tensor: collate_tensor_fn, np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn, float: collate_float_fn,
    int: collate_int_fn, str: collate_str_fn, bytes: collate_str_fn}


def default_collate(batch: list) -> Any:
    """Stacks a list of samples into a batch, recursing into their structure
    (``collate`` with ``default_collate_fn_map``):

    tensors are stacked along a new dim 0; NumPy arrays become tensors and are stacked; Python
    floats become a float64 tensor, ints an int64 tensor (bools a bool tensor); strings stay as
    they come (a list; a tuple inside a sequence); dicts collate per key; namedtuples per
    field; other sequences (tuples included) become a list of per-position batches, as in torch.
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
