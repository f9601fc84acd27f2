"""Pytrees for the transforms: nests of tuples, lists and dicts, with anything else a leaf."""

from __future__ import annotations

from typing import Any


class TreeSpec:
    """The structure of a pytree (printed as torch prints its TreeSpec)."""

    __slots__ = ("kind", "context", "children")

    def __init__(self, kind: Any, context: Any, children: list) -> None:
        self.kind = kind  # None for a leaf, else tuple / list / dict / a namedtuple class
        self.context = context  # dict keys
        self.children = children

    @property
    def num_leaves(self) -> int:
        return 1 if self.kind is None else sum(c.num_leaves for c in self.children)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TreeSpec) and self.kind is other.kind and \
            self.context == other.context and self.children == other.children

    def __hash__(self) -> int:
        return hash((self.kind, tuple(self.children)))

    def __repr__(self) -> str:
        if self.kind is None:
            return "*"
        inner = ",\n  ".join(repr(c) for c in self.children)
        return f"TreeSpec({self.kind.__name__}, {self.context}, [{inner}])"


def _is_node(x: Any) -> bool:
    return isinstance(x, (tuple, list, dict))


def tree_flatten(tree: Any) -> tuple[list, TreeSpec]:
    """(the leaves, left to right, and the structure)."""
    leaves: list = []
    return leaves, _flatten(tree, leaves)


# (module-level recursion: a nested recursive closure is a reference cycle, which would keep
# the leaves alive until the garbage collector runs; jit decides constants by liveness)
def _flatten(x: Any, leaves: list) -> TreeSpec:
    if isinstance(x, dict):
        keys = list(x)
        return TreeSpec(dict, keys, [_flatten(x[k], leaves) for k in keys])
    if isinstance(x, (tuple, list)):
        return TreeSpec(type(x), None, [_flatten(v, leaves) for v in x])
    leaves.append(x)
    return TreeSpec(None, None, [])


def tree_unflatten(leaves: list, spec: TreeSpec) -> Any:
    """The tree of ``spec``'s structure with ``leaves``."""
    return _unflatten(iter(leaves), spec)


def _unflatten(it: Any, s: TreeSpec) -> Any:
    if s.kind is None:
        return next(it)
    vals = [_unflatten(it, c) for c in s.children]
    if s.kind is dict:
        return dict(zip(s.context, vals))
    if s.kind in (tuple, list):
        return s.kind(vals)
    return s.kind(*vals)  # a named tuple


def tree_structure(tree: Any) -> TreeSpec:
    return tree_flatten(tree)[1]


def tree_map(fn: Any, tree: Any) -> Any:
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def broadcast_prefix(prefix: Any, tree: Any) -> list:
    """``prefix``'s leaves repeated over the subtrees of ``tree`` they stand for (one per leaf
    of ``tree``); ValueError when ``prefix`` is not a prefix of ``tree``'s structure."""
    out: list = []
    _broadcast(prefix, tree, out)
    return out


def _broadcast(p: Any, t: Any, out: list) -> None:
    if not _is_node(p):
        out.extend([p] * len(tree_flatten(t)[0]))
        return
    if isinstance(p, dict):
        if not isinstance(t, dict) or set(p) != set(t):
            raise ValueError("not a prefix")
        for k in t:
            _broadcast(p[k], t[k], out)
        return
    if not isinstance(t, (tuple, list)) or isinstance(t, dict) or len(p) != len(t) \
            or isinstance(p, list) != isinstance(t, list):
        raise ValueError("not a prefix")
    for a, b in zip(p, t):
        _broadcast(a, b, out)
