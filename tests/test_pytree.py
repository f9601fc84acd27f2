"""``jitgrad.utils._pytree`` against ``torch.utils._pytree``: flatten order, specs (repr,
counts, equality), unflatten, the map/all/any helpers, key paths, registration and errors."""

from __future__ import annotations

from collections import OrderedDict, defaultdict, deque, namedtuple

import pytest

import jitgrad
from jitgrad.utils import _pytree as pt

Point = namedtuple("Point", ["x", "y"])

TREES = [
    1, None, "s", [], (), {}, [1, 2, 3], (1, (2, 3)), {"b": 1, "a": 2},
    {"b": [1, (2, None)], "a": {"z": 3, "y": 4}},
    [Point(1, [2, 3]), OrderedDict([("q", 1), ("p", 2)])],
    defaultdict(list, {"k": 1, "j": (2,)}),
    deque([1, [2, 3]], maxlen=5), deque([4]),
    ((), [[]], {"e": ()}, None),
    {1: "one", (2, 3): [4.0, 5.0]},
]


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_flatten_spec_and_unflatten_match_torch(tree):
    tp = pytest.importorskip("torch.utils._pytree")
    leaves, spec = pt.tree_flatten(tree)
    tleaves, tspec = tp.tree_flatten(tree)
    assert leaves == tleaves
    assert repr(spec) == repr(tspec)
    assert (spec.num_leaves, spec.num_nodes, spec.num_children) == \
        (tspec.num_leaves, tspec.num_nodes, tspec.num_children)
    assert spec.is_leaf() == tspec.is_leaf()
    back = pt.tree_unflatten(leaves, spec)
    assert back == tree and type(back) is type(tree)
    assert pt.tree_leaves(tree) == tp.tree_leaves(tree)
    paths = [(pt.keystr(p), v) for p, v in pt.tree_flatten_with_path(tree)[0]]
    tpaths = [(tp.keystr(p), v) for p, v in tp.tree_flatten_with_path(tree)[0]]
    assert paths == tpaths


def test_dicts_keep_insertion_order_and_none_is_a_leaf():
    leaves, spec = pt.tree_flatten({"b": None, "a": 1})
    assert leaves == [None, 1]
    assert spec.context == ["b", "a"]
    assert pt.tree_structure(None).is_leaf()


def test_spec_equality_and_hash():
    a = pt.tree_structure({"x": [1, 2], "y": 3})
    b = pt.tree_structure({"x": [4, 5], "y": "z"})
    c = pt.tree_structure({"y": 3, "x": [1, 2]})
    assert a == b and hash(a) == hash(b)
    assert a != c  # (key order is part of the structure)
    assert pt.tree_structure(1) == pt.LeafSpec() == pt.treespec_leaf()
    assert pt.treespec_tuple([pt.LeafSpec(), pt.LeafSpec()]) == pt.tree_structure((1, 2))
    assert pt.treespec_dict(a=pt.LeafSpec()) == pt.tree_structure({"a": 0})
    assert pt.tree_structure(Point(1, 2)).context is Point


def test_unflatten_errors_as_torch():
    spec = pt.tree_structure([1, 2])
    with pytest.raises(ValueError, match="`leaves` has length 1 but the spec refers to a pytree "
                                         "that holds 2 items"):
        pt.tree_unflatten([1], spec)
    with pytest.raises(TypeError, match="Expected `treespec` to be an instance of PyTreeSpec"):
        pt.tree_unflatten([1], [1])
    assert pt.tree_unflatten(spec, [3, 4]) == [3, 4]  # (spec first, as torch accepts)


def test_tree_map_variants():
    tree = {"x": 7, "y": (42, 64), "z": None}
    assert pt.tree_map(lambda x: x is None, tree) == {"x": False, "y": (False, False), "z": True}
    assert pt.tree_map(lambda x, y: [x] + y, [5, 6], [[7, 9], [1, 2]]) == [[5, 7, 9], [6, 1, 2]]
    with pytest.raises(ValueError, match="Node arity mismatch; expected 2, but got 3."):
        pt.tree_map(lambda a, b: a + b, [1, 2], [3, 4, 5])
    with pytest.raises(ValueError, match="Node type mismatch"):
        pt.tree_map(lambda a, b: a + b, [1, 2], (3, 4))
    with pytest.raises(ValueError, match="Node keys mismatch; missing key\\(s\\): \\{'b'\\}; "
                                         "extra key\\(s\\): \\{'c'\\}"):
        pt.tree_map(lambda a, b: a + b, {"a": 1, "b": 2}, {"a": 1, "c": 2})
    # (the standard dict types are interchangeable as the other trees)
    assert pt.tree_map(lambda a, b: a + b, {"a": 1}, OrderedDict(a=2)) == {"a": 3}
    seen = []
    assert pt.tree_map_(seen.append, tree) is tree and seen == [7, 42, 64, None]
    assert pt.tree_map_only(int, lambda x: x * 10, [1, "a", 2.0]) == [10, "a", 2.0]
    assert pt.tree_map_only((int, float), lambda x: x * 10, [1, "a", 2.0]) == [10, "a", 20.0]
    assert pt.tree_map_only(lambda x: x == "a", str.upper, [1, "a", "b"]) == [1, "A", "b"]
    with pytest.raises(TypeError, match="Argument must be a type, a tuple of types, or a "
                                        "callable."):
        pt.tree_map_only(3, str, [1])
    assert pt.tree_map(lambda x: x, [1, [2]], is_leaf=lambda x: x == [2]) == [1, [2]]
    assert pt.tree_leaves([1, [2, 3, 4]], is_leaf=lambda x: isinstance(x, list) and len(x) == 3) \
        == [1, [2, 3, 4]]


def test_all_any():
    assert not pt.tree_all(bool, [1, 0])
    assert pt.tree_any(bool, [1, 0])
    assert pt.tree_all_only(int, lambda x: x > 0, [1, -1.0])
    assert not pt.tree_any_only(float, lambda x: x > 0, [1, -1.0])
    assert pt.tree_all(bool, [])


def test_tensors_are_leaves_and_maps_work_on_them():
    t = jitgrad.ones(2)
    out = pt.tree_map_only(jitgrad.Tensor, lambda x: x * 2, {"w": t, "n": 3})
    assert out["n"] == 3 and out["w"].tolist() == [2.0, 2.0]


class Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b

    def __eq__(self, other):
        return isinstance(other, Pair) and (self.a, self.b) == (other.a, other.b)


def test_register_pytree_node():
    pt.register_pytree_node(
        Pair, lambda p: ([p.a, p.b], "ctx"), lambda v, c: Pair(*v),
        serialized_type_name="tests.Pair",
        flatten_with_keys_fn=lambda p: ([(pt.GetAttrKey("a"), p.a), (pt.GetAttrKey("b"), p.b)],
                                        "ctx"))
    try:
        tree = [Pair(1, (2, 3)), 4]
        leaves, spec = pt.tree_flatten(tree)
        assert leaves == [1, 2, 3, 4]
        assert repr(spec).startswith("TreeSpec(list, None, [TreeSpec(Pair, ctx, [*,")
        assert pt.tree_unflatten([5, 6, 7, 8], spec) == [Pair(5, (6, 7)), 8]
        assert [pt.keystr(p) for p, _ in pt.tree_leaves_with_path(tree)] == \
            ["[0].a", "[0].b[0]", "[0].b[1]", "[1]"]
        assert pt.key_get(tree, pt.tree_leaves_with_path(tree)[2][0]) == 3
        with pytest.raises(ValueError, match="is already registered as pytree node."):
            pt.register_pytree_node(Pair, lambda p: ([], None), lambda v, c: Pair(0, 0))
        with pytest.raises(ValueError, match="Type mismatch"):
            spec.flatten_up_to([(1, 2), 3])
    finally:
        pt._deregister_pytree_node(Pair)
    assert pt.tree_leaves([Pair(1, 2)]) == [Pair(1, 2)]
    with pytest.raises(ValueError, match="Both to_dumpable_context and from_dumpable_context"):
        pt.register_pytree_node(Pair, lambda p: ([], None), lambda v, c: Pair(0, 0),
                                to_dumpable_context=str)


def test_func_transforms_use_the_same_pytrees():
    from jitgrad.func import _pytree as fpt
    assert fpt.tree_flatten is pt.tree_flatten and fpt.TreeSpec is pt.TreeSpec
    # an OrderedDict of inputs comes back as an OrderedDict
    x = jitgrad.ones(3, dtype=jitgrad.float64)
    g = jitgrad.func.grad(lambda d: (d["a"] * d["b"]).sum())(OrderedDict(a=x, b=x * 2))
    assert type(g) is OrderedDict and list(g) == ["a", "b"]
    assert g["a"].tolist() == [2.0, 2.0, 2.0]
