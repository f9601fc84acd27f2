"""``grad_fn._saved_<name>`` and ``grad_fn._raw_saved_<name>``: a node's saved values by
torch's names (``MulBackward0._saved_self``, ``ExpBackward0._saved_result``, ...).

The names per op are in ``jitgrad.ops.saved_names``. ``_saved_<name>`` unpacks the value (a
tensor through its saved-tensor hooks, or a number, tuple or bool); ``_raw_saved_<name>`` is the
``SavedTensor`` itself, on which ``register_hooks(pack_hook, unpack_hook)`` installs a pair of
hooks for that one value, as torch's saved-tensors-hooks tutorial does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..ops import registry
from ..ops.saved_names import saved_names
from .node import FREED, SavedTensor, saved_raw

def _missing(node: Any, name: str) -> AttributeError:
    return AttributeError(f"'{node.name()}' object has no attribute '{name}'")


def saved_attribute(node: Any, name: str) -> Any:
    """The value of ``node._saved_<x>`` / ``node._raw_saved_<x>`` (``name`` is the attribute)."""
    if name.startswith("_raw_saved_"):
        key, raw = name[len("_raw_saved_"):], True
    elif name.startswith("_saved_"):
        key, raw = name[len("_saved_"):], False
    else:
        raise _missing(node, name)
    spec = saved_names(node.op).get(key)
    if spec is None or raw and spec[0] not in ("input", "output") or \
            raw and spec == ("output", 1):
        raise _missing(node, name)
    kind, where = spec
    if kind == "const":
        return where
    if kind == "param":
        return node.params.get(where)
    if kind in ("sizes", "numel"):
        shape = tuple(_input_meta(node, where).shape)
        if kind == "sizes":
            return shape
        n = 1
        for s in shape:
            n *= s
        return n
    if kind == "input":
        return _input(node, where, raw)
    return _output(node, where, raw)


def _is_uniform(node: Any) -> bool:
    return node._uniform  # (a class attribute: UniformNode's True, OpNode's False)


def _input_meta(node: Any, i: int) -> Any:
    if _is_uniform(node):
        return registry.Meta(node._key[2], node._key[1])
    v = node._inputs[i]
    if type(v) is SavedTensor:
        return v._meta
    return v


def _check_alive(node: Any) -> None:
    if node._freed:
        raise RuntimeError(FREED)


def _input(node: Any, i: int, raw: bool) -> Any:
    if _is_uniform(node):
        kept = node._inputs
        if kept is None or kept[i] is None:
            if node._freed:
                raise RuntimeError(FREED)
            return None
        if raw:
            return _uniform_raw_input(node, i)
        return node.saved_input(i)
    v = node._inputs[i]
    if type(v) is SavedTensor:
        if raw:
            return v
        _check_alive(node)
        return v.unpack(node)
    if type(v) is registry.Meta:  # a tensor the backward did not need: not saved
        return None
    if type(v) in _WRAPPED_DTYPE:  # a number operand: torch's wrapped 0-dim tensor
        _check_alive(node)
        return registry.make(np.asarray(v, _WRAPPED_DTYPE[type(v)].np), _WRAPPED_DTYPE[type(v)])
    return v


_WRAPPED_DTYPE = {bool: dtypes.bool, int: dtypes.int64, float: dtypes.float64,
                  complex: dtypes.complex128}


def _output(node: Any, k: int, raw: bool) -> Any:
    if k == 0:
        if _is_uniform(node):
            if node._out is None:
                if node._freed:
                    raise RuntimeError(FREED)
                return None
            return _uniform_raw_output(node) if raw else node.saved_output()
        if node._out is None:
            return None
        if raw:
            return node._out
        _check_alive(node)
        return node._out.unpack(node)
    # indices of sort/topk/max(dim): recomputed from the saved input, as the VJP does
    arg_op, names = node.op.saved_indices
    x = _input(node, 0, False)
    prev = registry.state.grad_enabled
    registry.state.grad_enabled = False
    try:
        return registry.apply(registry.OPS[arg_op], x, **{n: node.params[n] for n in names})
    finally:
        registry.state.grad_enabled = prev


def _uniform_raw_input(node: Any, i: int) -> SavedTensor:
    """Input ``i`` of a uniform node as a ``SavedTensor``, which the node then unpacks (so hooks
    registered on it apply); the node leaves the engine's array lane."""
    kept = node._inputs
    t = kept[i]
    if type(t) is SavedTensor:
        return t
    node.saved_input(i)  # torch's checks (freed, modified in place)
    s = saved_raw(t, t._vc, node._versions[i], False, t._dtype)
    kept = list(kept)
    kept[i] = s
    node._inputs = kept
    node._hooked = True  # (the engine then calls node.apply, which unpacks SavedTensors)
    return s


def _uniform_raw_output(node: Any) -> SavedTensor:
    out = node._out
    if type(out) is SavedTensor:
        return out
    node.saved_output()  # torch's checks
    data, vc, version = out
    s = saved_raw(data, vc, version, True, node._key[1])
    node._out = s
    node._hooked = True
    return s
