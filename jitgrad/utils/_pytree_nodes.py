"""The registry of pytree node types (``register_pytree_node``), the key entries of paths
and the built-in nodes (tuple, list, dict, namedtuple, OrderedDict, defaultdict, deque), below
``jitgrad.utils._pytree``, which re-exports every name."""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict, defaultdict, deque, namedtuple
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

PyTree = Any
Context = Any
KeyPath = tuple


class NodeDef(NamedTuple):
    """How a registered container type flattens and unflattens."""

    type: type
    flatten_fn: Callable[[Any], tuple[list, Context]]
    unflatten_fn: Callable[[Iterable, Context], Any]
    flatten_with_keys_fn: Callable[[Any], tuple[list, Context]] | None


SUPPORTED_NODES: dict[type, NodeDef] = {}
_NODE_REGISTRY_LOCK = threading.Lock()


# class -> its NodeDef (the namedtuple one for a namedtuple class), or None for a leaf class;
# filled on first sight, emptied on every (de)registration
_HANDLERS: dict[type, NodeDef | None] = {}


def _private_register(cls: type, flatten_fn: Callable, unflatten_fn: Callable,
                      flatten_with_keys_fn: Callable | None = None) -> None:
    with _NODE_REGISTRY_LOCK:
        SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)
        _HANDLERS.clear()


def _handler(cls: type) -> NodeDef | None:
    try:
        return _HANDLERS[cls]
    except KeyError:
        h = SUPPORTED_NODES.get(namedtuple if is_namedtuple_class(cls) else cls)
        _HANDLERS[cls] = h
        return h


def register_pytree_node(
    cls: type,
    flatten_fn: Callable[[Any], tuple[list, Context]],
    unflatten_fn: Callable[[Iterable, Context], Any],
    *,
    serialized_type_name: str | None = None,
    to_dumpable_context: Callable | None = None,
    from_dumpable_context: Callable | None = None,
    flatten_with_keys_fn: Callable[[Any], tuple[list, Context]] | None = None,
) -> None:
    """Register a container-like type as a pytree node.

    Args:
        cls: the type to register.
        flatten_fn: ``obj -> (children, context)``.
        unflatten_fn: ``(children, context) -> obj``.
        serialized_type_name: the type's name for serialized specs (accepted and kept; jitgrad
            does not serialize specs).
        to_dumpable_context: with ``from_dumpable_context``, the context's JSON form (both or
            neither).
        from_dumpable_context: see ``to_dumpable_context``.
        flatten_with_keys_fn: like ``flatten_fn`` but returns ``[(key, child)]``, for
            :func:`tree_flatten_with_path`.

    Raises:
        ValueError: ``cls`` is already registered, or only one of the dumpable-context
            functions is given.
    """
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    if (to_dumpable_context is None) ^ (from_dumpable_context is None):
        raise ValueError(f"Both to_dumpable_context and from_dumpable_context for {cls} must "
                         "be None or registered.")
    _private_register(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)
    _SERIALIZED_NAMES[cls] = serialized_type_name


_SERIALIZED_NAMES: dict[type, str | None] = {}


def _deregister_pytree_node(cls: type) -> None:
    """Remove ``cls``'s registration (as torch's private helper; used by tests)."""
    with _NODE_REGISTRY_LOCK:
        SUPPORTED_NODES.pop(cls, None)
        _SERIALIZED_NAMES.pop(cls, None)
        _HANDLERS.clear()


# ---- key entries (for paths) ----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """A child reached by index: ``[idx]``."""

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"

    def get(self, sequence: Any) -> Any:
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class MappingKey:
    """A child reached by key: ``[key]``."""

    key: Any

    def __str__(self) -> str:
        return f"[{self.key!r}]"

    def get(self, mapping: Any) -> Any:
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """A child reached by attribute: ``.name``."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"

    def get(self, obj: Any) -> Any:
        return getattr(obj, self.name)


# ---- the built-in nodes ---------------------------------------------------------------------

def is_namedtuple_class(cls: type) -> bool:
    """Whether ``cls`` is a namedtuple class."""
    return (isinstance(cls, type) and issubclass(cls, tuple)
            and isinstance(getattr(cls, "_fields", None), tuple)
            and all(type(f) is str for f in cls._fields)
            and callable(getattr(cls, "_make", None))
            and callable(getattr(cls, "_asdict", None)))


def is_namedtuple(obj: Any) -> bool:
    """Whether ``obj`` (an instance or a class) is a namedtuple."""
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def is_namedtuple_instance(obj: Any) -> bool:
    """Whether ``obj`` is an instance of a namedtuple class."""
    return is_namedtuple_class(type(obj))


def _seq_keys(flatten: Callable) -> Callable:
    def with_keys(d: Any) -> tuple[list, Context]:
        values, context = flatten(d)
        return [(SequenceKey(i), v) for i, v in enumerate(values)], context
    return with_keys


def _map_keys(flatten: Callable, keys_of: Callable = lambda c: c) -> Callable:
    def with_keys(d: Any) -> tuple[list, Context]:
        values, context = flatten(d)
        return [(MappingKey(k), v) for k, v in zip(keys_of(context), values)], context
    return with_keys


def _tuple_flatten(d: tuple) -> tuple[list, Context]:
    return list(d), None


def _list_flatten(d: list) -> tuple[list, Context]:
    return d, None


def _dict_flatten(d: dict) -> tuple[list, Context]:
    return list(d.values()), list(d.keys())


def _namedtuple_flatten(d: tuple) -> tuple[list, Context]:
    return list(d), type(d)


def _namedtuple_flatten_with_keys(d: tuple) -> tuple[list, Context]:
    return [(GetAttrKey(f), v) for f, v in zip(type(d)._fields, d)], type(d)


def _defaultdict_flatten(d: defaultdict) -> tuple[list, Context]:
    return list(d.values()), [d.default_factory, list(d.keys())]


def _deque_flatten(d: deque) -> tuple[list, Context]:
    return list(d), d.maxlen


_private_register(tuple, _tuple_flatten, lambda v, c: tuple(v), _seq_keys(_tuple_flatten))
_private_register(list, _list_flatten, lambda v, c: list(v), _seq_keys(_list_flatten))
_private_register(dict, _dict_flatten, lambda v, c: dict(zip(c, v)), _map_keys(_dict_flatten))
_private_register(namedtuple, _namedtuple_flatten, lambda v, c: c(*v),  # type: ignore[arg-type]
                  _namedtuple_flatten_with_keys)
_private_register(OrderedDict, _dict_flatten, lambda v, c: OrderedDict(zip(c, v)),
                  _map_keys(_dict_flatten))
_private_register(defaultdict, _defaultdict_flatten,
                  lambda v, c: defaultdict(c[0], dict(zip(c[1], v))),
                  _map_keys(_defaultdict_flatten, lambda c: c[1]))
_private_register(deque, _deque_flatten, lambda v, c: deque(v, maxlen=c),
                  _seq_keys(_deque_flatten))

STANDARD_DICT_TYPES = frozenset({dict, OrderedDict, defaultdict})
BUILTIN_TYPES = frozenset({tuple, list, dict, namedtuple, OrderedDict, defaultdict, deque})


def _get_node_type(tree: Any) -> Any:
    t = type(tree)
    return namedtuple if is_namedtuple_class(t) else t


def tree_is_leaf(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Whether ``tree`` is a leaf: ``is_leaf(tree)`` is true or its type is not registered."""
    if is_leaf is not None and is_leaf(tree):
        return True
    return _handler(type(tree)) is None
