"""``jitgrad.utils._pytree``: nested containers flattened to a list of leaves and a structure,
as ``torch.utils._pytree``.

A pytree is a nest of registered container types (tuple, list, dict, namedtuple, OrderedDict,
defaultdict, deque, and any type given to :func:`register_pytree_node`); anything else, ``None``
included, is a leaf. Dicts flatten in insertion order (as torch; not sorted as in JAX).
``jitgrad.func``'s transforms flatten their arguments and outputs with this module.
"""

from __future__ import annotations

import types
from collections import OrderedDict, defaultdict, deque
from collections.abc import Callable, Iterable
from typing import Any

from ._pytree_nodes import (  # noqa: F401 - (re-exported: torch's _pytree has them all)
    PyTree, Context, KeyPath, NodeDef, SUPPORTED_NODES, _NODE_REGISTRY_LOCK, _HANDLERS,
    _private_register, _handler, register_pytree_node, _SERIALIZED_NAMES,
    _deregister_pytree_node, SequenceKey, MappingKey, GetAttrKey, is_namedtuple_class,
    is_namedtuple, is_namedtuple_instance, _seq_keys, _map_keys, _tuple_flatten, _list_flatten,
    _dict_flatten, _namedtuple_flatten, _namedtuple_flatten_with_keys, _defaultdict_flatten,
    _deque_flatten, STANDARD_DICT_TYPES, BUILTIN_TYPES, _get_node_type, tree_is_leaf)

__all__ = ["PyTree", "Context", "KeyPath", "TreeSpec", "LeafSpec", "SequenceKey", "MappingKey",
           "GetAttrKey", "register_pytree_node", "tree_is_leaf", "tree_flatten",
           "tree_unflatten", "tree_iter", "tree_leaves", "tree_structure", "tree_map",
           "tree_map_", "map_only", "tree_map_only", "tree_map_only_", "tree_all", "tree_any",
           "tree_all_only", "tree_any_only", "tree_flatten_with_path", "tree_leaves_with_path",
           "tree_map_with_path", "keystr", "key_get", "treespec_leaf", "treespec_tuple",
           "treespec_dict", "is_namedtuple", "is_namedtuple_class", "is_namedtuple_instance",
           "arg_tree_leaves"]

# ---- TreeSpec -------------------------------------------------------------------------------

class TreeSpec:
    """The structure of a pytree: the root's node type, its context (dict keys, a namedtuple
    class, ...) and one spec per child; a leaf is ``TreeSpec(None, None, [])``, printed ``*``."""

    __slots__ = ("type", "_context", "_children", "num_nodes", "num_leaves", "num_children")

    def __init__(self, type: Any, context: Context, children_specs: list) -> None:  # noqa: A002
        self.type = type
        self._context = context
        self._children = children_specs
        if type is None:
            if context is not None:
                raise AssertionError("leaf node should not have a context")
            if children_specs:
                raise AssertionError("leaf node should not have children")
            self.num_nodes, self.num_leaves, self.num_children = 1, 1, 0
        else:
            self.num_nodes = 1 + sum(c.num_nodes for c in children_specs)
            self.num_leaves = sum(c.num_leaves for c in children_specs)
            self.num_children = len(children_specs)

    @property
    def context(self) -> Context:
        """The root node's context (dict keys, the namedtuple class, a deque's maxlen ...)."""
        return self._context

    @property
    def children_specs(self) -> list:
        """The children's specs (the list itself; torch deprecates this for ``children()``)."""
        return self._children

    def is_leaf(self) -> bool:
        """Whether this spec is a single leaf."""
        return self.num_nodes == 1 and self.num_leaves == 1

    def children(self) -> list:
        """A copy of the children's specs."""
        return list(self._children)

    def child(self, index: int) -> TreeSpec:
        """The ``index``-th child's spec."""
        return self._children[index]

    def __repr__(self, indent: int = 0) -> str:
        if self.type is None:
            return "*"
        out = f"TreeSpec({self.type.__name__}, {self._context}, ["
        if self._children:
            indent += 2
            out += self._children[0].__repr__(indent)
            out += "," if len(self._children) > 1 else ""
            out += ",".join("\n" + " " * indent + c.__repr__(indent) for c in self._children[1:])
        return out + "])"

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, TreeSpec):
            return NotImplemented
        return (str(self.type) == str(other.type) and self._context == other._context
                and self._children == other._children)

    def __hash__(self) -> int:
        t, c = self.type, self._context
        if t is defaultdict:
            c = (c[0], tuple(c[1]))
        elif t in (dict, OrderedDict):
            c = tuple(c)
        elif not (t is None or t in BUILTIN_TYPES):
            c = None  # (a user type's context may be unhashable)
        return hash((t, c, tuple(self._children)))

    def flatten_up_to(self, tree: PyTree) -> list:
        """The subtrees of ``tree`` at this spec's leaves (``tree`` must have this spec as a
        prefix of its structure; torch's ValueError texts otherwise)."""
        out: list = []
        _flatten_up_to(self, tree, out)
        return out

    def unflatten(self, leaves: Iterable[Any]) -> PyTree:
        """The pytree of this structure holding ``leaves`` (left to right)."""
        if not isinstance(leaves, (list, tuple)):
            leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(
                f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} "
                f"but the spec refers to a pytree that holds {self.num_leaves} "
                f"items ({self}).")
        return _unflatten(self, iter(leaves))


class LeafSpec(TreeSpec):
    """The spec of a leaf (``*``)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(None, None, [])


_LEAF_SPEC = LeafSpec()
PyTreeSpec = TreeSpec


def treespec_leaf() -> LeafSpec:
    """The spec of a leaf."""
    return _LEAF_SPEC


def treespec_tuple(iterable: Iterable[TreeSpec] = (), /) -> TreeSpec:
    """A tuple spec of the given children."""
    children = list(iterable)
    if any(not isinstance(c, TreeSpec) for c in children):
        raise ValueError(f"Expected a tuple of TreeSpec values, got: {children!r}.")
    return TreeSpec(tuple, None, children)


def treespec_dict(mapping: Any = (), /, **kwargs: TreeSpec) -> TreeSpec:
    """A dict spec of the given children."""
    dct = dict(mapping, **kwargs)
    if any(not isinstance(c, TreeSpec) for c in dct.values()):
        raise ValueError(f"Expected a dictionary of TreeSpec values, got: {dct!r}.")
    return TreeSpec(dict, list(dct.keys()), list(dct.values()))


# (module-level recursion throughout: a nested recursive closure is a reference cycle that
# would keep the leaves alive until the garbage collector runs; the jit decides constants by
# liveness)
def _unflatten(spec: TreeSpec, it: Any) -> Any:
    if spec.type is None:
        return next(it)
    children = [_unflatten(c, it) for c in spec._children]
    return SUPPORTED_NODES[spec.type].unflatten_fn(children, spec._context)


def _flatten_up_to(spec: TreeSpec, node: Any, out: list) -> None:
    if spec.is_leaf():
        out.append(node)
        return
    node_type = _get_node_type(node)
    if spec.type not in BUILTIN_TYPES:
        if node_type != spec.type:
            raise ValueError(f"Type mismatch; expected {spec.type!r}, but got {node_type!r}.")
        children, context = SUPPORTED_NODES[node_type].flatten_fn(node)
        if len(children) != spec.num_children:
            raise ValueError(f"Node arity mismatch; expected {spec.num_children}, but got "
                             f"{len(children)}.")
        if context != spec._context:
            raise ValueError(f"Node context mismatch for custom node type {spec.type!r}.")
    else:
        both_dict = spec.type in STANDARD_DICT_TYPES and node_type in STANDARD_DICT_TYPES
        if not both_dict and node_type != spec.type:
            raise ValueError(f"Node type mismatch; expected {spec.type!r}, but got "
                             f"{node_type!r}.")
        if len(node) != spec.num_children:
            raise ValueError(f"Node arity mismatch; expected {spec.num_children}, but got "
                             f"{len(node)}.")
        if both_dict:
            keys = spec._context if spec.type is not defaultdict else spec._context[1]
            got, want = set(node), set(keys)
            if got != want:
                message = ""
                if want - got:
                    message += f"; missing key(s): {want - got}"
                if got - want:
                    message += f"; extra key(s): {got - want}"
                raise ValueError(f"Node keys mismatch{message}.")
            children = [node[k] for k in keys]
        else:
            children, context = SUPPORTED_NODES[node_type].flatten_fn(node)
            if node_type is not deque and context != spec._context:
                raise ValueError(
                    f"Node context mismatch for node type {spec.type!r}; "
                    f"expected {spec._context!r}, but got {context!r}.")
    for sub, subspec in zip(children, spec._children):
        _flatten_up_to(subspec, sub, out)


def _flatten(node: Any, leaves: list, is_leaf: Callable | None) -> TreeSpec:
    h = None if is_leaf is not None and is_leaf(node) else _handler(type(node))
    if h is None:
        leaves.append(node)
        return _LEAF_SPEC
    children, context = h.flatten_fn(node)
    return TreeSpec(h.type, context, [_flatten(c, leaves, is_leaf) for c in children])


def tree_flatten(tree: PyTree,
                 is_leaf: Callable[[PyTree], bool] | None = None) -> tuple[list, TreeSpec]:
    """Flatten ``tree`` into its leaves (left to right) and its :class:`TreeSpec`."""
    leaves: list = []
    return leaves, _flatten(tree, leaves, is_leaf)


def tree_unflatten(leaves: Iterable[Any], treespec: TreeSpec) -> PyTree:
    """The pytree of ``treespec``'s structure holding ``leaves`` (inverse of
    :func:`tree_flatten`)."""
    if not isinstance(treespec, TreeSpec):
        if not isinstance(leaves, TreeSpec):
            raise TypeError(f"Expected `treespec` to be an instance of PyTreeSpec but got item "
                            f"of type {type(treespec)}.")
        leaves, treespec = treespec, leaves  # (the spec passed first, as torch allows)
    return treespec.unflatten(leaves)


def tree_iter(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> Iterable[Any]:
    """The leaves of ``tree``, left to right, lazily."""
    h = None if is_leaf is not None and is_leaf(tree) else _handler(type(tree))
    if h is None:
        yield tree
        return
    for c in h.flatten_fn(tree)[0]:
        yield from tree_iter(c, is_leaf)


def tree_leaves(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> list:
    """The leaves of ``tree``, left to right."""
    return list(tree_iter(tree, is_leaf))


def tree_structure(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> TreeSpec:
    """The :class:`TreeSpec` of ``tree``."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
             is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """A new pytree of ``tree``'s structure with ``func(x, *xs)`` at each leaf ``x``; each of
    ``rests`` must have ``tree``'s structure as a prefix (its subtrees there are the ``xs``)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    flat = [leaves] + [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(map(func, *flat))


def tree_map_(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
              is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """Call ``func(x, *xs)`` at each leaf for its side effect; returns ``tree`` itself."""
    leaves, spec = tree_flatten(tree, is_leaf)
    flat = [leaves] + [spec.flatten_up_to(r) for r in rests]
    deque(map(func, *flat), maxlen=0)
    return tree


def map_only(type_or_types_or_pred: Any, /) -> Callable[[Callable], Callable]:
    """A decorator: the function applies to values of the given type(s) (or for which the
    predicate holds) and passes every other value through."""
    if isinstance(type_or_types_or_pred, (type, tuple, types.UnionType)):
        def pred(x: Any) -> bool:
            return isinstance(x, type_or_types_or_pred)
    elif callable(type_or_types_or_pred):
        pred = type_or_types_or_pred
    else:
        raise TypeError("Argument must be a type, a tuple of types, or a callable.")

    def wrapper(func: Callable) -> Callable:
        def wrapped(x: Any) -> Any:
            return func(x) if pred(x) else x
        wrapped.__wrapped__ = func  # type: ignore[attr-defined]
        wrapped.__name__ = getattr(func, "__name__", "wrapped")
        return wrapped
    return wrapper


def tree_map_only(type_or_types_or_pred: Any, /, func: Callable[[Any], Any], tree: PyTree,
                  is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """:func:`tree_map` of ``func`` over the leaves of the given type(s) (or predicate); the
    other leaves are kept."""
    return tree_map(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types_or_pred: Any, /, func: Callable[[Any], Any], tree: PyTree,
                   is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """:func:`tree_map_` of ``func`` over the leaves of the given type(s) (or predicate)."""
    return tree_map_(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable[[Any], bool], tree: PyTree,
             is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Whether ``pred`` holds for every leaf."""
    return all(map(pred, tree_iter(tree, is_leaf)))


def tree_any(pred: Callable[[Any], bool], tree: PyTree,
             is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Whether ``pred`` holds for some leaf."""
    return any(map(pred, tree_iter(tree, is_leaf)))


def tree_all_only(type_or_types: Any, /, pred: Callable[[Any], bool], tree: PyTree,
                  is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Whether ``pred`` holds for every leaf of the given type(s)."""
    return all(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types: Any, /, pred: Callable[[Any], bool], tree: PyTree,
                  is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Whether ``pred`` holds for some leaf of the given type(s)."""
    return any(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


def arg_tree_leaves(*args: PyTree, **kwargs: PyTree) -> list:
    """The leaves of ``(args, kwargs)``."""
    leaves: list = []
    for a in args:
        leaves.extend(tree_iter(a))
    for a in kwargs.values():
        leaves.extend(tree_iter(a))
    return leaves


# ---- key paths ------------------------------------------------------------------------------

def _key_paths(path: tuple, tree: Any, is_leaf: Callable | None, out: list) -> None:
    handler = None if is_leaf is not None and is_leaf(tree) else _handler(type(tree))
    if handler is None:
        out.append((path, tree))
        return
    if handler.flatten_with_keys_fn is None:
        raise ValueError(
            f"Did not find a flatten_with_keys_fn for type: {handler.type}. "
            "Please pass a flatten_with_keys_fn argument to register_pytree_node.")
    for k, c in handler.flatten_with_keys_fn(tree)[0]:
        _key_paths((*path, k), c, is_leaf, out)


def tree_leaves_with_path(tree: PyTree,
                          is_leaf: Callable[[PyTree], bool] | None = None) -> list:
    """``[(key path, leaf)]`` for the leaves of ``tree``, left to right."""
    out: list = []
    _key_paths((), tree, is_leaf, out)
    return out


def tree_flatten_with_path(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None
                           ) -> tuple[list, TreeSpec]:
    """As :func:`tree_flatten`, with each leaf paired with its key path."""
    return tree_leaves_with_path(tree, is_leaf), tree_structure(tree, is_leaf)


def tree_map_with_path(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
                       is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """As :func:`tree_map`, with ``func(key_path, x, *xs)``."""
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    flat = [[p for p, _ in pairs], [x for _, x in pairs]] + [spec.flatten_up_to(r)
                                                             for r in rests]
    return spec.unflatten(func(*xs) for xs in zip(*flat))


def keystr(kp: KeyPath) -> str:
    """A key path printed: ``"['a'][0].x"``."""
    return "".join(str(k) for k in kp)


def key_get(obj: Any, kp: KeyPath) -> Any:
    """The value of ``obj`` at key path ``kp``."""
    for k in kp:
        obj = k.get(obj)
    return obj
