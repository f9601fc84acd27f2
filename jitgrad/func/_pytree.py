"""Pytrees for the transforms: ``jitgrad.utils._pytree`` (torch's containers and registered
nodes; anything else a leaf), plus the in_dims/out_dims prefix broadcast of ``vmap``."""

from __future__ import annotations

from typing import Any

from ..utils._pytree import (  # noqa: F401  (one implementation, torch's semantics)
    TreeSpec, tree_flatten, tree_leaves, tree_map, tree_structure, tree_unflatten)


def _is_node(x: Any) -> bool:
    return isinstance(x, (tuple, list, dict))


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
