"""torch's NumPy-style keyword aliases: ``x.sum(axis=0, keepdims=True)``, ``torch.cat(ts,
axis=1)``, ``x.argmax(axis=1)``.

torch's argument parser, which every native function and Tensor method goes through, accepts
``axis`` for ``dim``, ``keepdims`` for ``keepdim``, ``x``/``a``/``x1`` for ``input`` and ``x2``
for ``other`` (NumPy's names; d2l.ai's code uses them). Its Python-level functions
(``torch.norm``, ``Tensor.split``, ``torch.unique``, ``Tensor.unflatten``) do not. Here the
public functions and Tensor methods that take a ``dim`` or ``keepdim`` get a thin wrapper that
renames the aliases; giving an alias together with its name is torch's TypeError.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable
from typing import Any

_ALIASES = {"dim": ("axis",), "keepdim": ("keepdims",), "input": ("x", "a", "x1"),
            "other": ("x2",)}
# torch's Python-level functions and methods: they take no aliases
_PYTHON_LEVEL = frozenset({"norm", "split", "unique", "unique_consecutive", "unflatten"})
_WRAPPED: dict[Callable, Callable] = {}
_ORIGINAL: dict[Callable, Callable] = {}  # wrapper -> the function it wraps


def _positions(fn: Callable) -> dict[str, int] | None:
    """The parameters of ``fn`` by name -> position (None if it takes no dim/keepdim)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    names = {p.name: i for i, p in enumerate(params)}
    if "dim" not in names and "keepdim" not in names:
        return None
    return names


def with_aliases(fn: Callable, name: str) -> Callable:
    """``fn`` also accepting torch's NumPy-style keyword aliases (itself when it takes no
    ``dim``/``keepdim``, or torch's function of that name does not take them)."""
    if name in _PYTHON_LEVEL or not isinstance(fn, types.FunctionType):
        return fn
    made = _WRAPPED.get(fn)
    if made is not None:
        return made
    positions = _positions(fn)
    if positions is None:
        return fn
    renames = {alias: target for target, aliases in _ALIASES.items() if target in positions
               for alias in aliases}

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if kwargs and not renames.keys().isdisjoint(kwargs):
            for alias in renames.keys() & kwargs.keys():
                target = renames[alias]
                if target in kwargs or positions[target] < len(args):  # given twice
                    raise TypeError(f"{name}() got an unexpected keyword argument '{alias}'")
                kwargs[target] = kwargs.pop(alias)
        return fn(*args, **kwargs)

    _WRAPPED[fn] = wrapper
    _WRAPPED[wrapper] = wrapper
    _ORIGINAL[wrapper] = fn
    return wrapper


def torch_names(fn: Callable, name: str, **renames: str) -> Callable:
    """``fn`` called by torch's parameter names: ``renames`` maps torch's name to ``fn``'s
    (``input="A"``: torch's parser says ``input`` where its docs say ``A``), with the NumPy
    aliases of ``input`` and ``other``; ``fn``'s own names stay accepted."""
    sig = inspect.signature(fn)
    positions = {p: i for i, p in enumerate(sig.parameters)}
    mapping = {alias: ours for theirs, ours in renames.items()
               for alias in (theirs, *_ALIASES.get(theirs, ())) if alias != ours}
    theirs_of = {ours: theirs for theirs, ours in renames.items()}

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if kwargs and not mapping.keys().isdisjoint(kwargs):
            for key in mapping.keys() & kwargs.keys():
                ours = mapping[key]
                if ours in kwargs or positions[ours] < len(args):
                    raise TypeError(f"{name}() got multiple values for argument '{key}'")
                kwargs[ours] = kwargs.pop(key)
        return fn(*args, **kwargs)

    call.__signature__ = sig.replace(parameters=[  # type: ignore[attr-defined]
        p.replace(name=theirs_of.get(p.name, p.name)) for p in sig.parameters.values()])
    return call


def unwrap(fn: Callable) -> Callable:
    """The declared function behind ``fn`` when ``fn`` is an alias wrapper, else ``fn``."""
    return _ORIGINAL.get(fn, fn)


def install(namespace: dict, tensor_type: type) -> None:
    """Wraps ``jitgrad.<name>`` functions and Tensor methods that take a dim or keepdim."""
    for name, fn in list(namespace.items()):
        if not name.startswith("_") and callable(fn):
            namespace[name] = with_aliases(fn, name)
    for name, fn in list(vars(tensor_type).items()):
        if not name.startswith("_"):
            wrapped = with_aliases(fn, name)
            if wrapped is not fn:
                setattr(tensor_type, name, wrapped)
