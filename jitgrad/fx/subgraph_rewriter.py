"""``torch.fx.subgraph_rewriter.replace_pattern``: find every occurrence of a pattern
(a function or module, traced) in a ``GraphModule`` and replace it with a replacement."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from ._symbolic_trace import symbolic_trace
from .graph import Graph
from .graph_module import GraphModule
from .node import Node


class Match(NamedTuple):
    """One occurrence: the pattern's node that produces its result (``anchor``, as torch)
    and the map from the pattern's nodes to the graph's nodes."""

    anchor: Node
    nodes_map: dict[Node, Node]


def _graph_of(obj: Callable | Graph | GraphModule) -> Graph:
    if isinstance(obj, GraphModule):
        return obj.graph
    if isinstance(obj, Graph):
        return obj
    return symbolic_trace(obj).graph


def _same_target(pn: Node, gn: Node) -> bool:
    if pn.op != gn.op:
        return False
    if pn.op == "call_module":
        pm = pn.graph.owning_module.get_submodule(pn.target) if pn.graph.owning_module \
            else None
        gm = gn.graph.owning_module.get_submodule(gn.target) if gn.graph.owning_module \
            else None
        return type(pm) is type(gm)
    return pn.target == gn.target


class _Matcher:
    def __init__(self, pattern: Graph) -> None:
        self.pattern = pattern
        out = [n for n in pattern.nodes if n.op == "output"]
        if len(out) != 1:
            raise ValueError("the pattern graph must have one output node")
        returned = out[0].args[0]
        if not isinstance(returned, Node):
            raise NotImplementedError("replace_pattern: only patterns that return one value "
                                      "are supported")
        self.anchor = returned
        self.inner = [n for n in pattern.nodes if n.op not in ("placeholder", "output")]

    def match(self, gn: Node) -> dict[Node, Node] | None:
        nodes_map: dict[Node, Node] = {}

        def match_arg(pa: Any, ga: Any) -> bool:
            if isinstance(pa, Node):
                return isinstance(ga, Node) and match_node(pa, ga)
            if isinstance(pa, (list, tuple)):
                return type(pa) is type(ga) and len(pa) == len(ga) \
                    and all(match_arg(a, b) for a, b in zip(pa, ga))
            if isinstance(pa, dict):
                return isinstance(ga, dict) and pa.keys() == ga.keys() \
                    and all(match_arg(pa[k], ga[k]) for k in pa)
            return type(pa) is type(ga) and pa == ga

        def match_node(pn: Node, g: Node) -> bool:
            if pn in nodes_map:
                return nodes_map[pn] is g
            if pn.op == "placeholder":
                if g in nodes_map.values():
                    return False
                nodes_map[pn] = g
                return True
            if not _same_target(pn, g) or g in nodes_map.values():
                return False
            nodes_map[pn] = g
            if not (match_arg(pn.args, g.args) and match_arg(pn.kwargs, g.kwargs)):
                del nodes_map[pn]
                return False
            return True

        if not match_node(self.anchor, gn):
            return None
        if any(pn not in nodes_map for pn in self.inner):
            return None
        # the matched inner nodes (the anchor excepted) feed nothing outside the match
        matched = {nodes_map[pn] for pn in self.inner}
        for pn in self.inner:
            if pn is self.anchor:
                continue
            if any(user not in matched for user in nodes_map[pn].users):
                return None
        return nodes_map


def replace_pattern(gm: GraphModule, pattern: Callable | Graph | GraphModule,
                    replacement: Callable | Graph | GraphModule) -> list[Match]:
    """Replaces each non-overlapping occurrence of ``pattern`` in ``gm``'s graph with
    ``replacement`` (its placeholders bound to the occurrence's inputs, in order), recompiles
    ``gm`` and returns the matches."""
    pattern_graph = _graph_of(pattern)
    replacement_graph = _graph_of(replacement)
    matcher = _Matcher(pattern_graph)
    original = gm.graph
    matches: list[Match] = []
    taken: set[Node] = set()
    for node in original.nodes:
        if node.op in ("placeholder", "output"):
            continue
        nodes_map = matcher.match(node)
        if nodes_map is None:
            continue
        inner = {nodes_map[pn] for pn in matcher.inner}
        if inner & taken:
            continue
        taken |= inner
        matches.append(Match(anchor=matcher.anchor, nodes_map=nodes_map))
    pattern_placeholders = [n for n in pattern_graph.nodes if n.op == "placeholder"]
    replacement_placeholders = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    if len(pattern_placeholders) != len(replacement_placeholders):
        raise ValueError("the pattern and the replacement must take the same number of inputs")
    match_changed_node: dict[Node, Node] = {}  # (a replaced match's value -> its new node)
    for match in matches:
        val_map = {}
        for pp, rp in zip(pattern_placeholders, replacement_placeholders):
            gn = match.nodes_map[pp]
            val_map[rp] = match.nodes_map[pp] = match_changed_node.get(gn, gn)
        returning = match.nodes_map[matcher.anchor]
        users = set(returning.users)
        insert_point = next((n for n in original.nodes if n in users), None)
        if insert_point is None:  # (no users: right after the returning node)
            insert_point = returning.next
        with original.inserting_before(insert_point):
            copied = original.graph_copy(replacement_graph, val_map)
        if isinstance(copied, (list, tuple)):
            copied = copied[0] if len(copied) == 1 else copied
        returning.replace_all_uses_with(copied)
        match_changed_node[returning] = copied
        for pn in reversed(list(pattern_graph.nodes)):
            if pn.op not in ("placeholder", "output"):
                original.erase_node(match.nodes_map[pn])
    for node in replacement_graph.nodes:
        if node.op == "get_attr" or node.op == "call_module":
            owner = replacement_graph.owning_module
            if owner is not None and not _has_path(gm, node.target):
                gm.add_submodule(node.target, owner.get_submodule(node.target)) \
                    if node.op == "call_module" else setattr(gm, node.target,
                                                             _get_path(owner, node.target))
    gm.recompile()
    return matches


def _has_path(mod: Any, target: str) -> bool:
    try:
        _get_path(mod, target)
    except AttributeError:
        return False
    return True


def _get_path(mod: Any, target: str) -> Any:
    for atom in target.split("."):
        mod = getattr(mod, atom)
    return mod

