"""Cache keys, guards and the recompile log of ``JitFunction``.

A call's *key* is built from its arguments: for every tensor (tensors may sit inside tuples,
lists and dicts) its shape, dtype, device and whether it requires grad; the grad mode; and every
other argument *by value* (it must be hashable). On top of the key, an entry carries *guards*
on what the function read from its globals and closure at trace time: tensors by identity and
Python scalars (or tuples/lists/dicts of them) by value, so rebinding ``w = w + 1`` or changing
a global ``scale = 2.0`` retraces instead of giving a stale result.
"""

from __future__ import annotations

import dataclasses

import operator
import sys
import types
from collections import OrderedDict, namedtuple
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _config
from ..ops.registry import state
from ..tensor import Tensor, _make

CacheInfo = namedtuple("CacheInfo", ["hits", "misses", "entries", "trace_seconds",
                                     "compile_seconds"])

# specializations kept per function (torch.compile's recompile limit): JITGRAD_CACHE_SIZE_LIMIT
cache_size_limit = _config.cache_size_limit

KEY_FIELDS = ("shapes", "dtypes", "devices", "requires_grad", "grad_mode", "autocast", "static")

_LEAF = object()  # marks a tensor position in a tree spec
LEAF = _LEAF  # the spec of a single tensor


# ---------------------------------------------------------------- pytrees


class Static:
    """An argument marked static with ``static_argnums``: keyed by value (a tensor by its
    shape, dtype and data), and concrete while tracing, so Python may branch on it."""

    __slots__ = ("value", "key")

    def __init__(self, value: Any) -> None:
        self.value = value
        if isinstance(value, Tensor):
            data = value.detach().numpy()
            self.key = ("tensor", tuple(data.shape), value.dtype, data.tobytes())
        else:
            self.key = ("value", value)

    def fresh(self) -> Any:
        """The value to trace with: a private copy of a tensor (a constant of the graph)."""
        if isinstance(self.value, Tensor):
            return _make(self.value._data.copy(), self.value.dtype)  # (not an op: no
            # equation is recorded for the copy)
        return self.value

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Static) and self.key == other.key

    def __repr__(self) -> str:
        return f"Static({self.value!r})"



def flatten(tree: Any) -> tuple[list, Any]:
    """(tensor leaves, a hashable spec with the tensors replaced by markers)."""
    leaves: list = []
    return leaves, _flatten(tree, leaves)  # no recursive closures: they would form cycles that
    # keep tensors alive until the garbage collector runs


_PLAIN_INITS = (dict.__init__, OrderedDict.__init__)


def _flatten(x: Any, leaves: list) -> Any:
    if isinstance(x, Tensor):
        leaves.append(x)
        return _LEAF
    if type(x) in (tuple, list):
        return (type(x).__name__, tuple(_flatten(y, leaves) for y in x))
    if type(x) is dict:
        return ("dict", tuple((k, _flatten(v, leaves)) for k, v in x.items()))
    if hasattr(x, "_fields") and isinstance(x, tuple):  # named tuples
        return ("namedtuple", type(x), tuple(_flatten(y, leaves) for y in x))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):  # (HF's ModelOutput too)
        names = tuple(f.name for f in dataclasses.fields(x) if f.init)
        return ("dataclass", type(x), names,
                tuple(_flatten(getattr(x, n), leaves) for n in names))
    if isinstance(x, dict) and type(x).__init__ in _PLAIN_INITS:  # (an OrderedDict subclass)
        return ("mapping", type(x), tuple(x), tuple(_flatten(v, leaves) for v in x.values()))
    return ("static", x)


def unflatten(spec: Any, leaves: list) -> Any:
    """Inverse of ``flatten``."""
    return _unflatten(spec, iter(leaves))


def _unflatten(s: Any, it: Any) -> Any:
    if s is _LEAF:
        return next(it)
    kind = s[0]
    if kind == "static":
        return s[1]
    if kind == "tuple":
        return tuple(_unflatten(y, it) for y in s[1])
    if kind == "list":
        return [_unflatten(y, it) for y in s[1]]
    if kind == "dict":
        return {k: _unflatten(v, it) for k, v in s[1]}
    if kind == "dataclass":
        return s[1](**{n: _unflatten(y, it) for n, y in zip(s[2], s[3])})
    if kind == "mapping":
        return s[1]([(k, _unflatten(y, it)) for k, y in zip(s[2], s[3])])
    return s[1](*(_unflatten(y, it) for y in s[2]))


def packer(spec: Any, n: int) -> Callable[[list], Any]:
    """``unflatten(spec, leaves)`` as one generated function of the ``n`` leaves (the jit's
    lean call path packs every result with it)."""
    if spec is _LEAF:
        return operator.itemgetter(0)
    names: dict = {}
    leaf = iter(range(n))

    def constant(value: Any) -> str:
        name = f"k{len(names)}"
        names[name] = value
        return name

    def expression(s: Any) -> str:
        if s is _LEAF:
            return f"o[{next(leaf)}]"
        kind = s[0]
        if kind == "static":
            return constant(s[1])
        if kind == "dict":
            return "{" + ", ".join(f"{constant(k)}: {expression(v)}" for k, v in s[1]) + "}"
        items = [expression(y) for y in s[-1]]
        if kind == "dataclass":
            return f"{constant(s[1])}(" + ", ".join(
                f"{n}={e}" for n, e in zip(s[2], items)) + ")"
        if kind == "mapping":
            return f"{constant(s[1])}([" + ", ".join(
                f"({constant(k)}, {e})" for k, e in zip(s[2], items)) + "])"
        if kind == "tuple":
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if kind == "list":
            return "[" + ", ".join(items) + "]"
        return f"{constant(s[1])}({', '.join(items)})"  # a named tuple

    source = f"def pack(o):\n    return {expression(spec)}\n"
    exec(compile(source, "<jitgrad pack>", "exec"), names)  # noqa: S102
    return names["pack"]


def static_leaves(spec: Any, out: list | None = None) -> list:
    """The static (non-tensor) values of a spec, in order."""
    out = [] if out is None else out
    if spec is _LEAF:
        return out
    if spec[0] == "static":
        out.append(spec[1])
    else:
        for y in spec[-1]:
            static_leaves(y[1] if spec[0] == "dict" else y, out)
    return out


def check_hashable(spec: Any, fn_name: str) -> None:
    """Raises a clear TypeError if a static (non-tensor) argument is unhashable."""
    try:
        hash(spec)
    except TypeError:
        bad = _find_unhashable(spec)
        raise TypeError(
            f"jit function {fn_name!r}: non-tensor arguments are static (part of the cache key, "
            f"compared by value) and must be hashable, but got an unhashable value of type "
            f"{type(bad).__name__}: {bad!r:.80}. Pass tensors as tensors (inside tuples, lists "
            "or dicts is fine), and other values as hashable ones (tuple instead of list, ...)"
        ) from None


def _find_unhashable(spec: Any) -> Any:
    if isinstance(spec, tuple) and spec and spec[0] == "static":
        return spec[1]
    if isinstance(spec, tuple):
        for s in spec:
            try:
                hash(s)
            except TypeError:
                return _find_unhashable(s)
    return spec


def make_key(tensors: list, spec: Any) -> tuple:
    """The cache key: one tuple per field of ``KEY_FIELDS``."""
    grad = state.grad_enabled and not state.inference  # else requires_grad changes nothing
    return (tuple(tuple(t.shape) for t in tensors), tuple(t.dtype for t in tensors),
            tuple(str(t.device) for t in tensors),
            tuple(t.requires_grad for t in tensors) if grad else None,
            (state.grad_enabled, state.inference), state.autocast, spec)


def explain_miss(fn_name: str, key: tuple, earlier: list) -> str:
    """Which key field changed against the closest earlier key (``JITGRAD_LOG=recompiles``)."""
    if not earlier:
        return f"jitgrad.jit: compiling {fn_name!r} (first call)"
    def distance(k: tuple) -> tuple:
        static = 0 if k[-1] == key[-1] else len(_static_changes(k[-1], key[-1]))
        return sum(a != b for a, b in zip(k, key)), static

    best = min(earlier, key=distance)
    changed = []
    for name, a, b in zip(KEY_FIELDS, best, key):
        if a == b:
            continue
        if name == "static":
            changed.extend(_static_changes(a, b))
        else:
            changed.append(f"{name}: {_short(a)} -> {_short(b)}")
    return f"jitgrad.jit: recompiling {fn_name!r} because " + "; ".join(changed)


def _static_changes(old: Any, new: Any) -> list[str]:
    """'static argument 1: 1.0 -> 2.0' for each differing non-tensor value of two call specs
    (the spec of ``(args, kwargs)`` as ``flatten`` builds it)."""
    (_, (old_args, old_kw)), (_, (new_args, new_kw)) = old, new
    out: list[str] = []
    n = max(len(old_args[1]), len(new_args[1]))
    for i in range(n):
        a = old_args[1][i] if i < len(old_args[1]) else _ABSENT
        b = new_args[1][i] if i < len(new_args[1]) else _ABSENT
        _spec_diff(a, b, f"argument {i}", out)
    old_kw, new_kw = dict(old_kw[1]), dict(new_kw[1])
    for k in sorted(set(old_kw) | set(new_kw), key=str):
        _spec_diff(old_kw.get(k, _ABSENT), new_kw.get(k, _ABSENT), f"argument {k!r}", out)
    return out


_ABSENT = ("static", type("absent", (), {"__repr__": lambda self: "(not passed)"})())


def _describe(spec: Any) -> str:
    if spec is _LEAF:
        return "a tensor"
    if spec[0] == "static":
        return _short(spec[1])
    return _short(unflatten(spec, [_TensorMark()] * 1000))


class _TensorMark:
    def __repr__(self) -> str:
        return "<tensor>"


def _spec_diff(a: Any, b: Any, path: str, out: list) -> None:
    if a == b:
        return
    same_container = (a is not _LEAF and b is not _LEAF and a[0] == b[0] and
                      a[0] in ("tuple", "list") and len(a[1]) == len(b[1]))
    if same_container:
        for i, (x, y) in enumerate(zip(a[1], b[1])):
            _spec_diff(x, y, f"{path}[{i}]", out)
        return
    out.append(f"static {path}: {_describe(a)} -> {_describe(b)}")


def _short(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= 120 else text[:117] + "..."


log_enabled = _config.log_enabled


def log(message: str) -> None:
    print(message, file=sys.stderr)


# ---------------------------------------------------------------- guards

_SCALARS = (int, float, complex, bool, str, bytes, type(None))
_MAX_GUARDS = 4000
_MAX_DEPTH = 6


def _snapshot(x: Any, depth: int = 0) -> Any:
    """A hashable value snapshot of scalars and small containers of them; None if not one."""
    if isinstance(x, _SCALARS):
        return (type(x), x)
    if depth < 3 and type(x) in (tuple, list) and len(x) <= 64:
        items = tuple(_snapshot(y, depth + 1) for y in x)
        return None if any(i is None for i in items) else (type(x), items)
    if depth < 3 and type(x) is dict and len(x) <= 64:
        items = tuple((k, _snapshot(v, depth + 1)) for k, v in x.items())
        return None if any(i[1] is None for i in items) else (dict, items)
    return None


def _immutable(snap: Any) -> bool:
    """Whether a snapshot's value cannot change in place (scalars, tuples of them)."""
    kind, value = snap
    if kind is tuple:
        return all(_immutable(y) for y in value)
    return kind in _SCALARS


def _code_names(code: types.CodeType) -> set:
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _code_names(c)
    return names


class Guards:
    """What a function read from its globals and closure, checked before each cached call."""

    def __init__(self, fn: Any, static_args: tuple = (), skip: set | frozenset = frozenset()
                 ) -> None:
        self.entries: list[tuple] = []  # (description, getter, kind, expected)
        self._skip = skip  # ids of objects not to walk (see ``Trace.defer``)
        # immutable values still bound to the very object seen at trace time hold without a
        # snapshot: (getter, object) pairs checked by identity first, then the other entries
        self._same: list[tuple] = []
        self._rest: list[tuple] | None = None
        self._walk_function(fn)
        for i, obj in enumerate(static_args):  # objects passed as (static) arguments
            if getattr(obj, "__dict__", None) is not None and not isinstance(
                    obj, (types.ModuleType, type, types.FunctionType, types.MethodType)):
                self._walk(f"argument {i}", lambda o=obj: o, obj, 0)

    def _walk_function(self, fn: Any) -> None:
        self_obj = getattr(fn, "__self__", None)
        fn = getattr(fn, "__func__", fn)
        code = getattr(fn, "__code__", None)
        if code is None:
            return
        if self_obj is not None:
            self._walk("self", lambda o=self_obj: o, self_obj, 0)
        glb = getattr(fn, "__globals__", {})
        for name in sorted(_code_names(code)):
            if name in glb:
                self._walk(name, lambda g=glb, n=name: g[n], glb[name], 0)
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            self._walk(name, lambda c=cell: c.cell_contents, value, 0)

    def _walk(self, desc: str, get: Any, value: Any, depth: int) -> None:
        if len(self.entries) >= _MAX_GUARDS or id(value) in self._skip or \
                getattr(type(value), "_not_guarded", False):
            return
        if isinstance(value, Tensor):
            self.entries.append((desc, get, "tensor", id(value)))
            return
        snap = _snapshot(value)
        if snap is not None:
            self.entries.append((desc, get, "value", snap))
            if _immutable(snap):
                self._same.append((get, value))
            return
        if depth >= _MAX_DEPTH or isinstance(value, (types.ModuleType, type, types.FunctionType,
                                            types.BuiltinFunctionType, types.MethodType)):
            return
        if type(value) in (list, tuple):
            for i, y in enumerate(value[:256]):
                self._walk(f"{desc}[{i}]", lambda g=get, i=i: g()[i], y, depth + 1)
            return
        if type(value) is dict:
            for k in list(value)[:256]:
                self._walk(f"{desc}[{k!r}]", lambda g=get, k=k: g()[k], value[k], depth + 1)
            return
        attrs = getattr(value, "__dict__", None)
        if isinstance(attrs, dict):
            for k in list(attrs)[:256]:
                self._walk(f"{desc}.{k}", lambda g=get, k=k: vars(g())[k], attrs[k], depth + 1)

    def keep_tensors(self, ids: set) -> None:
        """Drops identity guards on tensors the trace did not use (optimizer state, ...)."""
        self.entries = [g for g in self.entries if g[2] != "tensor" or g[3] in ids]

    def add_value_reads(self, reads: dict) -> None:
        """Guards the values of tensors that Python read while tracing (and that still live)."""
        for ref, snapshot in reads.values():
            if ref() is not None:
                self.entries.append(("value of a captured tensor read at trace time", ref,
                                     "data", snapshot))

    def add_values(self, guards: list) -> None:
        """Guards ``(description, getter, value)`` triples: a call whose ``getter()`` is not
        ``value`` (a scalar, compared by value) retraces."""
        for desc, get, value in guards:
            snap = _snapshot(value)
            if snap is not None:
                self.entries.append((desc, get, "value", snap))
        self._rest = None

    def check(self) -> str | None:
        """None if every guard holds, else a description of the first one that changed."""
        if self._rest is None:
            quick = {id(get) for get, _ in self._same}
            self._rest = [g for g in self.entries if id(g[1]) not in quick]
        try:
            for get, obj in self._same:
                if get() is not obj:
                    return self._check(self.entries)
        except (KeyError, IndexError, AttributeError, ValueError, TypeError):
            return self._check(self.entries)
        return self._check(self._rest) if self._rest else None

    def _check(self, entries: list) -> str | None:
        for desc, get, kind, expected in entries:
            if kind == "data":
                t = get()
                if t is not None and not (t._data.shape == expected.shape
                                          and np.array_equal(t._data, expected)):
                    return f"the {desc} changed"
                continue
            try:
                value = get()
            except (KeyError, IndexError, AttributeError, ValueError, TypeError):
                return f"{desc!r} is gone"
            if kind == "tensor":
                if not isinstance(value, Tensor) or id(value) != expected:
                    return f"{desc!r} was rebound to another object"
            elif _snapshot(value) != expected:
                return f"{desc!r} changed: {_short(expected[1])} -> {_short(value)}"
        return None
