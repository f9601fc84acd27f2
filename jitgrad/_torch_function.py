"""The core of torch's ``__torch_function__`` protocol (``jitgrad.overrides`` is its public face).

A call of a public function, Tensor method, operator or property whose arguments hold an object
of a type with its own ``__torch_function__`` (a Tensor subclass, or a Tensor-like class), or made
while a ``TorchFunctionMode`` is active, is handed to those overrides (``dispatch``) instead of
running. Every call would pay for that check, so nothing checks until the protocol is live
(``registry.torch_function_live``): the first Tensor subclass that does not disable the protocol
(``Tensor.__init_subclass__``), the first mode entered, or the first Tensor-like object met by
a public function, an arithmetic operator or the dispatcher's general path (``first_sight``,
``retry_public``) calls ``activate``, which puts the check into every public function (in place:
each function object keeps its identity), method, operator and property (``install``, set by
``jitgrad.overrides``). Until then the eager fast paths are exactly what they were.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Any

from .ops import registry


class _State(threading.local):
    """The protocol's thread-local state (torch keeps it per thread too)."""

    def __init__(self) -> None:
        self.modes: list = []  # the TorchFunctionMode stack, innermost last
        self.no_subclass = 0  # DisableTorchFunctionSubclass depth: subclasses are not consulted
        self.no_all = 0  # DisableTorchFunction depth: neither subclasses nor modes are


state = _State()
# (the dispatcher's general path hands a Tensor-like object it meets first to ``first_sight``)
# Set by ``jitgrad.overrides``: ``install()`` wraps the public surface (called once).
install: Callable[[], None] | None = None
# The ``jitgrad`` package (set by its ``__init__``): where ``first_sight`` finds an op's function.
package: Any = None


def _disabled_torch_function_impl(func: Callable, types: Any, args: Any = (),
                                  kwargs: Any = None) -> Any:
    """torch's ``torch._C._disabled_torch_function_impl``: as a class's ``__torch_function__``
    (``nn.Parameter``'s), its instances take no part in the protocol."""
    with DisableTorchFunctionSubclass():
        return func(*args, **(kwargs or {}))


def activate() -> None:
    """Makes the protocol live (once): the public surface gets its checking wrappers."""
    if registry.torch_function_live:
        return
    registry.torch_function_live = True
    if install is not None:
        install()


# type -> whether its instances take part (a __torch_function__ that is not the disabled one)
_KIND: dict[type, bool] = {}


def _from_pytorch(obj: Any) -> bool:
    """Whether ``obj`` (a class or a callable) belongs to the PyTorch library itself."""
    owner = getattr(obj, "__objclass__", None) or getattr(obj, "__self__", None)
    for o in (obj, owner, type(owner) if owner is not None else None):
        module = getattr(o, "__module__", None) if o is not None else None
        if isinstance(module, str) and module.split(".")[0] == "torch":
            return True
    return False


def mixed_with_pytorch(what: Any) -> str:
    """The error text for a PyTorch tensor (or function) meeting jitgrad's."""
    return (f"jitgrad does not mix with PyTorch objects ({getattr(what, '__qualname__', what)} "
            "met a jitgrad Tensor): convert the torch tensor with "
            "jitgrad.from_numpy(t.detach().numpy()) or jitgrad.from_dlpack(t), and a jitgrad "
            "tensor for torch with torch.from_numpy(x.numpy())")


def _overrides(kind: type) -> bool:
    found = _KIND.get(kind)
    if found is None:
        if _from_pytorch(kind):  # (its __torch_function__ would call the jitgrad function again)
            raise TypeError(mixed_with_pytorch(kind))
        method = getattr(kind, "__torch_function__", None)
        found = method is not None and getattr(method, "__func__", method) \
            is not _disabled_torch_function_impl
        _KIND[kind] = found
    return found


def _plain(kind: type) -> bool:
    return kind is registry.Tensor or kind in _PLAIN


_PLAIN = {int, float, bool, complex, str, type(None), slice, type(Ellipsis)}


def relevant(args: tuple, kwargs: dict | None = None, nested: bool = False) -> bool:
    """Whether ``args`` or ``kwargs`` (and the lists and tuples among them, one level deep, as
    ``overloaded_args`` looks) hold an object whose type takes part in the protocol (exact
    Tensors and Parameters do not)."""
    for a in args:
        kind = type(a)
        if kind is registry.Tensor or kind in _PLAIN:
            continue
        if kind is list or kind is tuple:
            if not nested and relevant(a, None, True):
                return True
        elif _overrides(kind):
            return True
    if kwargs:
        return relevant(tuple(kwargs.values()), None, nested)
    return False


def overloaded_args(args: Any) -> list:
    """The objects among ``args`` (one level into lists and tuples) whose overrides run, one per
    type, in torch's order: subclasses before their superclasses, else left to right."""
    out: list = []
    seen: set = set()

    def visit(a: Any) -> None:
        kind = type(a)
        if kind is list or kind is tuple:
            for b in a:
                if type(b) is not list and type(b) is not tuple:
                    visit(b)
            return
        if kind in seen or _plain(kind) or not _overrides(kind):
            return
        seen.add(kind)
        index = len(out)
        for i, old in enumerate(out):
            if issubclass(kind, type(old)):
                index = i
                break
        out.insert(index, a)

    for a in args:
        visit(a)
    return out


def needs_modes(args: tuple, kwargs: dict | None) -> bool:
    """``needs`` for the functions that import foreign arrays: only an active mode sees them."""
    return bool(busy) and not state.no_all and bool(state.modes)


def needs(args: tuple, kwargs: dict | None) -> bool:
    """Whether a call with these arguments goes to ``dispatch`` (the protocol is live)."""
    if not busy:  # (no mode and no disabling context anywhere: the arguments alone decide)
        return relevant(args, kwargs)
    st = state
    if st.no_all:
        return False
    if st.modes:
        return True
    return not st.no_subclass and relevant(args, kwargs)


# How many modes and Disable* contexts are active, in all threads: while 0, ``needs`` reads no
# thread-local state (``note_busy`` keeps it, under a lock: threads may enter them at once).
busy = 0
_busy_lock = threading.Lock()


def note_busy(delta: int) -> None:
    """Counts a mode or Disable* context entered (+1) or left (-1)."""
    global busy
    with _busy_lock:
        busy += delta


def dispatch(func: Callable, args: tuple, kwargs: dict | None, name: str | None = None,
             cpp: bool = True, relevant: tuple | None = None) -> Any:
    """Hands ``func(*args, **kwargs)`` to the active mode and to the overrides of the arguments
    (torch's ``handle_torch_function``); TypeError when they all return NotImplemented.
    ``name``: how the error names ``func`` (``torch.add``); ``cpp``: torch's text for its
    native functions, else its Python text (``handle_torch_function``'s); ``relevant``: the
    arguments whose overrides count (default: all of them, keyword values included)."""
    # (torch hands its native functions' overrides None for no keyword arguments)
    kwargs = (None if cpp else {}) if not kwargs else kwargs
    st = state
    explicit = relevant is not None  # (``handle_torch_function``: no plain-method warning)
    if not explicit:
        relevant = args + tuple(kwargs.values()) if kwargs else args
    overloaded = [] if st.no_subclass or st.no_all else overloaded_args(relevant)
    types = tuple(type(a) for a in overloaded)
    mode = None
    if st.modes and not st.no_all:
        mode = st.modes.pop()  # (the mode's own calls go to the modes below it)
        try:
            result = mode.__torch_function__(func, types, args, kwargs)
        finally:
            st.modes.append(mode)
        if result is not NotImplemented:
            return result
    for arg in overloaded:
        method = arg.__torch_function__
        if not explicit and getattr(method, "__self__", None) is arg:  # (a plain method)
            warnings.warn("Defining your `__torch_function__` as a plain method is deprecated "
                          "and will be an error in future, please define it as a classmethod.",
                          UserWarning, stacklevel=3)
        result = method(func, types, args, kwargs)
        if result is not NotImplemented:
            return result
    name = name or f"{func.__module__}.{getattr(func, '__name__', func)}"
    if not cpp:
        msg = (f"no implementation found for '{name}' on types that implement "
               f"__torch_function__: {list(types)}")
        if mode is not None:
            msg += f" nor in mode {mode}"
        raise TypeError(msg)
    lines = ([f"  - mode object {mode!r}"] if mode is not None else []) \
        + [f"  - tensor subclass {t}" for t in types]
    raise TypeError(f"Multiple dispatch failed for '{name}'; all __torch_function__ handlers "
                    "returned NotImplemented:\n\n" + "\n".join(lines)
                    + "\n\nFor more information, try re-running with TORCH_LOGS=not_implemented")


def first_sight(op: Any, args: tuple, params: dict) -> Any:
    """A Tensor-like object (no Tensor) reached the dispatcher's general path before the
    protocol was live: makes it live and hands the call of the op's public function to the
    overrides. Returns ``_MISSING`` when no argument takes part."""
    if not tensor_like_in(args):
        return _MISSING
    activate()
    pub = op.public
    name = (pub.names or pub.method or (op.name,))[0] if pub is not None else op.name
    func = getattr(package, name, None)
    if func is None:
        return _MISSING
    return dispatch(func, args, params, f"torch.{name}")


_MISSING = registry._NO_OVERRIDE


def tensor_like_in(args: tuple, kwargs: dict | None = None) -> bool:
    """Whether ``args`` or ``kwargs`` hold a Tensor-like object that is no Tensor (an instance
    of a class with its own ``__torch_function__``)."""
    tensor = registry.Tensor
    for a in args + tuple((kwargs or {}).values()):
        items = a if type(a) is list or type(a) is tuple else (a,)
        for b in items:
            if not isinstance(b, tensor) and not _plain(type(b)) and _overrides(type(b)):
                return True
    return False


def retry_public(name: str, args: tuple, kwargs: dict) -> Any:
    """Makes the protocol live and calls ``jitgrad.<name>`` again: a public function failed
    on a Tensor-like object before the protocol was in use (its first sight)."""
    activate()
    return getattr(package, name)(*args, **kwargs)


class DisableTorchFunctionSubclass:
    """torch's ``torch._C.DisableTorchFunctionSubclass``: inside it, Tensor subclasses' and
    Tensor-likes' ``__torch_function__`` are not consulted (modes still are)."""

    def __enter__(self) -> DisableTorchFunctionSubclass:
        state.no_subclass += 1
        note_busy(1)
        return self

    def __exit__(self, *exc: Any) -> None:
        state.no_subclass -= 1
        note_busy(-1)


class DisableTorchFunction:
    """torch's ``torch._C.DisableTorchFunction``: inside it, no ``__torch_function__`` (of
    subclasses, Tensor-likes or modes) is consulted."""

    def __enter__(self) -> DisableTorchFunction:
        state.no_all += 1
        note_busy(1)
        return self

    def __exit__(self, *exc: Any) -> None:
        state.no_all -= 1
        note_busy(-1)


def is_torch_function_enabled() -> bool:
    """torch's ``torch._C._is_torch_function_enabled``."""
    return not state.no_subclass and not state.no_all


def is_torch_function_mode_enabled() -> bool:
    """torch's ``torch._C._is_torch_function_mode_enabled``: a mode is active and not
    disabled."""
    return bool(state.modes) and not state.no_all


def default_nowrap_functions() -> set:
    """The functions whose results ``Tensor.__torch_function__`` leaves unconverted."""
    tensor = registry.Tensor
    return {tensor.__dict__["grad"].__get__}


def convert(ret: Any, cls: type) -> Any:
    """torch's ``torch._tensor._convert``: the tensors in ``ret`` (and its lists and tuples) as
    instances of ``cls``."""
    tensor = registry.Tensor
    if cls is tensor:
        return ret
    if isinstance(ret, tensor) and not isinstance(ret, cls):
        ret = ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)):
        items = [convert(r, cls) for r in ret]
        ret = type(ret)(*items) if hasattr(ret, "_fields") else type(ret)(items)
    return ret


def tensor_torch_function(cls: type, func: Callable, types: Any, args: Any = (),
                          kwargs: Any = None) -> Any:
    """``Tensor.__torch_function__``, the default override: runs ``func`` with subclasses'
    overrides off and gives its tensor results the class ``cls`` (NotImplemented when a type
    in ``types`` is no superclass of ``cls``)."""
    if kwargs is None:
        kwargs = {}
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    if _from_pytorch(func):  # (torch calling back with one of its own: it would call us again)
        raise TypeError(mixed_with_pytorch(func))
    with DisableTorchFunctionSubclass():
        ret = func(*args, **kwargs)
        if func in default_nowrap_functions():
            return ret
        return convert(ret, cls)


def make_subclass(cls: type, data: Any, require_grad: bool = False, **unused: Any) -> Any:
    """torch's ``Tensor._make_subclass(cls, data, require_grad=False)``: a leaf instance of
    ``cls`` sharing ``data``'s memory (``__init__`` is not called), requiring grad as asked."""
    tensor = registry.Tensor
    if not (isinstance(cls, type) and issubclass(cls, tensor)):
        raise TypeError(f"cls must be a type (got {type(cls).__name__})")
    if not isinstance(data, tensor):
        raise TypeError(f"_make_subclass(): argument 'data' (position 2) must be Tensor, not "
                        f"{type(data).__name__}")
    with DisableTorchFunction():
        out = data.detach().as_subclass(cls)
        if require_grad:
            out.requires_grad_(True)
    return out


def tensor_init_subclass(cls: type, **kwargs: Any) -> None:
    """``Tensor.__init_subclass__``: a subclass that takes part in the protocol makes it
    live."""
    super(registry.Tensor, cls).__init_subclass__(**kwargs)
    _KIND.pop(cls, None)
    if _overrides(cls):
        activate()


registry.torch_function_first_sight = first_sight
