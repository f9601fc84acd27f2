"""Shape helpers shared by the ops' meta rules."""

from __future__ import annotations

from typing import Any


def wrap_dim(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not isinstance(dim, int):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def normalize_dims(dim, ndim: int) -> tuple[int, ...]:
    """A sorted tuple of non-negative dims; None means every dim."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, int):
        dim = (dim,)
    wrapped = [wrap_dim(d, ndim) for d in dim]
    out = tuple(sorted(set(wrapped)))
    if len(out) != len(wrapped):
        repeated = next(d for i, d in enumerate(wrapped) if d in wrapped[:i])
        raise RuntimeError(f"dim {repeated} appears multiple times in the list of dims")
    return out if ndim else ()


def reduction_dims(dim, ndim: int) -> tuple[int, ...]:
    """``normalize_dims`` for a reduction: an empty list of dims is every dim, as torch's."""
    if dim is not None and not isinstance(dim, int) and len(dim) == 0:
        dim = None
    return normalize_dims(dim, ndim)


def reduced_shape(shape: tuple, dims: tuple, keepdim: bool) -> tuple:
    if len(dims) == len(shape) and not keepdim:  # every dim (dims are unique)
        return ()
    if keepdim:
        return tuple(1 if i in dims else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in dims)


def numel(shape: tuple) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def axis_alias(fn):
    """``fn`` also accepting torch's NumPy-style alias ``axis=`` for ``dim=``."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if "axis" in kwargs:
            if "dim" in kwargs:
                raise TypeError(f"{fn.__name__}() got both 'dim' and its alias 'axis'")
            kwargs["dim"] = kwargs.pop("axis")
        return fn(*args, **kwargs)
    return wrapper


def int_tuple_arg(fname: str, arg: str, position: int, value: Any) -> tuple:
    """``value`` as a tuple of ints, or the TypeError torch's argument parser gives
    ``fname`` for an ``int[]`` argument that is not a list or tuple of ints (a plain int too)."""
    where = f"{fname}(): argument '{arg}' (position {position}) must be tuple of ints"
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{where}, not {type(value).__name__}")
    out = []
    for i, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, int) and not hasattr(item, "__index__"):
            kind = type(item).__name__
            if i == 0:
                raise TypeError(f"{where}, but found element of type {kind} at pos 0")
            raise TypeError(f"{fname}(): argument '{arg}' failed to unpack the object at pos "
                            f"{i + 1} with error \"type must be tuple of ints,but got {kind}\"")
        out.append(int(item.__index__()))
    return tuple(out)


def by_keyword(fn: str, given: tuple, value) -> tuple:
    """The sizes given positionally (``x.reshape(2, 3)``) or by keyword (``x.reshape(shape=(2,
    3))``, as torch's signatures allow), not both."""
    if value is None:
        return given
    if given:
        raise TypeError(f"{fn}() received an invalid combination of arguments")
    return (value,)
