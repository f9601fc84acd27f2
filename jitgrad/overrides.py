"""``jitgrad.overrides``: torch's ``torch.overrides``, the ``__torch_function__`` protocol.

A Tensor subclass or a Tensor-like class defines ``__torch_function__(cls, func, types, args=(),
kwargs=None)`` to take over every public function, Tensor method, operator and property called
with one of its instances; a ``TorchFunctionMode`` takes over every call while it is active.
``func`` is the public function (``jitgrad.add``, ``Tensor.add``, ``Tensor.__getitem__``,
``Tensor.shape.__get__``; the operators pass the method torch passes: ``x + y`` gives
``Tensor.add``). The protocol costs nothing until it is used: see ``jitgrad._torch_function``.
"""

from __future__ import annotations

import functools
import types as _types
from collections.abc import Callable, Iterable
from typing import Any

from . import _torch_function as _tf
from .ops import registry
from ._torch_function import DisableTorchFunction, DisableTorchFunctionSubclass
from .errors import TRAMPOLINE_FILE

__all__ = ["TorchFunctionMode", "enable_reentrant_dispatch", "get_default_nowrap_functions",
           "get_ignored_functions", "get_overridable_functions", "handle_torch_function",
           "has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
           "is_tensor_like", "is_tensor_method_or_property", "resolve_name"]


def has_torch_function(relevant_args: Iterable[Any]) -> bool:
    """Whether an element of ``relevant_args`` has a ``__torch_function__`` that takes part (not
    an exact Tensor or a Parameter), or a mode is active."""
    if _tf.state.no_all:
        return False
    return bool(_tf.state.modes) or (not _tf.state.no_subclass
                                     and _tf.relevant(tuple(relevant_args)))


def has_torch_function_unary(arg: Any) -> bool:
    """``has_torch_function((arg,))``."""
    return has_torch_function((arg,))


def has_torch_function_variadic(*args: Any) -> bool:
    """``has_torch_function(args)``."""
    return has_torch_function(args)


def handle_torch_function(public_api: Callable, relevant_args: Iterable[Any], *args: Any,
                          **kwargs: Any) -> Any:
    """Calls the active mode's and ``relevant_args``' overrides for
    ``public_api(*args, **kwargs)``; TypeError when all return NotImplemented."""
    return _tf.dispatch(public_api, args, kwargs, cpp=False, relevant=tuple(relevant_args))


def is_tensor_like(inp: Any) -> bool:
    """Whether ``inp`` is a Tensor (or subclass instance), or an object or class with a
    ``__torch_function__``."""
    return type(inp) is registry.Tensor or hasattr(inp, "__torch_function__")


def is_tensor_method_or_property(func: Callable) -> bool:
    """Whether ``func`` is a Tensor method or property getter as ``__torch_function__`` receives
    it (``Tensor.add``, ``Tensor.shape.__get__``)."""
    tensor = registry.Tensor
    name = getattr(func, "__name__", None)
    if name == "__get__":
        return isinstance(getattr(func, "__self__", None), property) and any(
            func.__self__ is v for v in vars(tensor).values())
    return name is not None and getattr(tensor, name, None) is func


def get_default_nowrap_functions() -> set:
    """The functions whose results ``Tensor.__torch_function__`` does not convert to the
    subclass (``Tensor.grad.__get__``)."""
    return _tf.default_nowrap_functions()


def get_ignored_functions() -> set:
    """Public functions that never dispatch to ``__torch_function__`` (they take no tensor:
    ``jitgrad.is_tensor``-like predicates and the dtype and mode helpers)."""
    jitgrad = _tf.package
    return {getattr(jitgrad, n) for n in _IGNORED if hasattr(jitgrad, n)}


def get_overridable_functions() -> dict:
    """Namespace (the ``jitgrad`` module, ``jitgrad.nn.functional``, ``Tensor``, ...) -> the
    list of its functions that dispatch to ``__torch_function__`` (wrapped once the protocol
    is live; the unwrapped functions before)."""
    out: dict = {}
    for owner, names in _surface().items():
        out[owner] = [getattr(owner, n) for n in names if hasattr(owner, n)]
    return out


def resolve_name(f: Callable) -> str | None:
    """The public name of an overridable function (``"torch.add"``, ``"torch.Tensor.add"``),
    or None."""
    name = getattr(f, "_tf_name", None)
    if name is None and getattr(f, "__name__", None) in ("__get__", "__set__"):
        for attr, member in vars(registry.Tensor).items():  # (a property's getter or setter)
            if member is getattr(f, "__self__", None):
                return f"torch.Tensor.{attr}.{f.__name__}"
    return name


def enable_reentrant_dispatch():  # noqa: ANN201 - a context manager
    """torch's ``enable_reentrant_dispatch``: a context manager; jitgrad has no dispatcher
    snapshot to restore, so it only marks the region."""
    import contextlib

    return contextlib.nullcontext()


class TorchFunctionMode:
    """A context manager whose ``__torch_function__(self, func, types, args=(), kwargs=None)``
    receives every call of a public function, Tensor method or property made while it is active,
    with plain tensors too. Inside it, the mode is off (its own calls go to the modes below);
    ``func(*args, **kwargs)`` runs the call."""

    inner: Any = None

    def __init__(self) -> None:
        pass

    def __torch_function__(self, func: Callable, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        raise NotImplementedError

    def __enter__(self) -> TorchFunctionMode:
        _tf.activate()
        _tf.state.modes.append(self)
        _tf.note_busy(1)
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        modes = _tf.state.modes
        for i in range(len(modes) - 1, -1, -1):
            if modes[i] is self:
                del modes[i]
                _tf.note_busy(-1)
                break

    @classmethod
    def push(cls, *args: Any, **kwargs: Any) -> TorchFunctionMode:
        """Deprecated in torch: ``cls(*args, **kwargs)`` (enter it with ``with``)."""
        return cls(*args, **kwargs)


def _get_current_function_mode() -> TorchFunctionMode | None:
    return _tf.state.modes[-1] if _tf.state.modes else None


def _get_current_function_mode_stack() -> list:
    return list(_tf.state.modes)


# ---------------------------------------------------------------- the checking wrappers

# (torch lists its factories too: modes see them, Tensor-likes cannot be their arguments)
_IGNORED = ("is_tensor", "is_storage", "get_default_dtype", "set_default_dtype",
            "is_grad_enabled", "promote_types", "can_cast", "result_type", "manual_seed",
            "seed", "initial_seed", "get_rng_state", "set_rng_state", "tensor", "as_tensor",
            "from_numpy", "zeros", "ones", "empty", "full", "rand", "randn", "arange")
# (never wrapped: they take no tensor and answer questions about the library's state)
_UNWRAPPED = ("is_tensor", "is_storage", "get_default_dtype", "set_default_dtype",
              "is_grad_enabled", "promote_types", "can_cast", "result_type", "manual_seed",
              "seed", "initial_seed", "get_rng_state", "set_rng_state")
# (they import foreign arrays, a PyTorch tensor among them, which the arguments' check would
# refuse: only an active mode sees them, as torch's modes see torch.tensor)
_IMPORTERS = ("tensor", "as_tensor", "asarray", "from_numpy", "frombuffer", "from_dlpack")
# Tensor members that never dispatch (object machinery, or what the wrappers themselves use)
_TENSOR_SKIP = {"__init__", "__new__", "__init_subclass__", "__torch_function__", "__hash__",
                "__getattribute__", "__getattr__", "__setattr__", "__delattr__", "__class__",
                "__dict__", "__weakref__", "__slots__", "__module__", "__doc__",
                "__array_priority__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
                "__array_wrap__", "__array_ufunc__", "__array_function__", "__class_getitem__",
                "__subclasshook__", "__reduce__", "__getstate__", "__setstate__", "__sizeof__",
                "__copy__"}
# operators torch hands to overrides as another method (``x * y``: ``Tensor.mul``)
_OPERATOR_FUNC = {"__add__": "add", "__radd__": "add", "__sub__": "sub", "__mul__": "mul",
                  "__rmul__": "mul", "__truediv__": "div", "__rtruediv__": "__rdiv__",
                  "__pow__": "pow", "__matmul__": "matmul", "__ne__": "ne", "__lt__": "lt",
                  "__le__": "le", "__gt__": "gt", "__ge__": "ge", "__mod__": "remainder",
                  "__neg__": "neg", "__abs__": "abs"}
_BINARY_OPERATORS = {f"__{p}{n}__" for p in ("", "r") for n in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
    "lshift", "rshift", "div")}
_PUBLIC: dict = {}


def _function_wrapper(orig: Callable, name: str, public_name: str, cpp: bool = True,
                      func_of: Callable | None = None) -> Callable:
    """``orig`` behind the protocol's check; ``func_of()``: the function overrides receive (the
    wrapper itself by default)."""
    needs = _tf.needs
    dispatch = _tf.dispatch
    operator = name in _BINARY_OPERATORS

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if needs(args, kwargs):
            func = wrapper if func_of is None else func_of()
            if not operator:
                return dispatch(func, args, kwargs, public_name, cpp)
            try:  # (torch: a binary operator's TypeError lets Python try the other operand)
                return dispatch(func, args, kwargs, public_name, cpp)
            except TypeError:
                return NotImplemented
        return orig(*args, **kwargs)

    try:
        functools.update_wrapper(wrapper, orig)
    except AttributeError:  # (a builtin without some attributes)
        pass
    wrapper.__name__ = name
    wrapper.__qualname__ = public_name.rsplit(".", 1)[-1] if "Tensor." not in public_name \
        else f"Tensor.{name}"
    wrapper._tf_name = public_name
    wrapper._tf_wrapped = orig
    return wrapper


_TRAMPOLINES: dict[int, Any] = {}


def _trampoline_code(nfree: int) -> _types.CodeType:
    """The code a wrapped function runs: the check (``_tf_needs``), then the dispatch
    (``_tf_call``) or the original (``_tf_inner``), all three keyword defaults of the function;
    with ``nfree`` unused free variables (a function's code can only be swapped for one with as
    many as its closure)."""
    code = _TRAMPOLINES.get(nfree)
    if code is None:
        names = [f"_v{i}" for i in range(nfree)]
        src = "def _outer():\n" + "".join(f"    {n} = None\n" for n in names) \
            + "    def trampoline(*args, _tf_inner=None, _tf_needs=None, _tf_call=None,"\
            + " **kwargs):\n" \
            + (f"        if False:\n            ({', '.join(names)},)\n" if names else "") \
            + "        if _tf_needs(args, kwargs):\n            return _tf_call(args, kwargs)\n" \
            + "        return _tf_inner(*args, **kwargs)\n    return trampoline\n"
        env: dict = {}
        exec(compile(src, TRAMPOLINE_FILE, "exec"), env)  # noqa: S102
        code = _TRAMPOLINES[nfree] = env["_outer"]().__code__
    return code


def _swap_in_place(fn: _types.FunctionType, public_name: str, cpp: bool = True,
                   needs: Callable | None = None) -> None:
    """Puts the protocol's check into ``fn`` itself (its code becomes a trampoline to a copy of
    the original), so every reference to it, taken before or after, dispatches and overrides
    receive this very object (``func is jitgrad.add``, ``HANDLED[jitgrad.mean]``)."""
    inner = _types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                                fn.__closure__)
    inner.__kwdefaults__ = fn.__kwdefaults__
    inner.__dict__.update(fn.__dict__)
    inner.__qualname__ = fn.__qualname__
    inner.__doc__ = fn.__doc__
    dispatch = _tf.dispatch
    operator = fn.__name__ in _BINARY_OPERATORS

    def call(args: tuple, kwargs: dict) -> Any:
        if not operator:
            return dispatch(fn, args, kwargs, public_name, cpp)
        try:  # (torch: a binary operator's TypeError lets Python try the other operand)
            return dispatch(fn, args, kwargs, public_name, cpp)
        except TypeError:
            return NotImplemented

    fn.__code__ = _trampoline_code(len(fn.__closure__ or ()))
    fn.__defaults__ = None
    fn.__kwdefaults__ = {"_tf_inner": inner, "_tf_needs": needs or _tf.needs, "_tf_call": call}
    fn.__wrapped__ = inner  # (inspect.signature shows the original's)
    fn._tf_name = public_name
    _SWAPPED.add(id(fn))


_SWAPPED: set = set()


def _property_wrapper(prop: property, name: str) -> property:
    fget, fset = prop.fget, prop.fset
    needs = _tf.needs
    dispatch = _tf.dispatch
    holder: list = []

    def getter(self: Any) -> Any:
        if needs((self,), None):
            return dispatch(holder[0].__get__, (self,), None, f"torch.Tensor.{name}.__get__")
        return fget(self)

    def setter(self: Any, value: Any) -> None:
        if needs((self, value), None):
            dispatch(holder[0].__set__, (self, value), None, f"torch.Tensor.{name}.__set__")
            return
        fset(self, value)

    new = property(getter, setter if fset is not None else None, prop.fdel, prop.__doc__)
    holder.append(new)
    return new


def _public_functions(module: Any, names: Iterable[str] | None = None) -> list[str]:
    if names is None:
        names = getattr(module, "__all__", None) or [n for n in vars(module)
                                                      if not n.startswith("_")]
    out = []
    for n in names:
        fn = vars(module).get(n)
        if isinstance(fn, _types.FunctionType) and not n.startswith("_") and n not in _UNWRAPPED \
                and (fn.__module__ or "").startswith("jitgrad"):
            out.append(n)
    return out


def _surface() -> dict:
    """Namespace -> the names in it that dispatch (found once)."""
    if _PUBLIC.get("surface") is None:
        from . import autograd, fft, linalg, special
        from .nn import functional
        from .ops import surface

        jitgrad = _tf.package
        tensor = registry.Tensor
        members = [n for n, v in vars(tensor).items() if n not in _TENSOR_SKIP
                   and (not n.startswith("_") or n.startswith("__") and n.endswith("__"))
                   and (isinstance(v, (property, _types.FunctionType)))]
        _PUBLIC["surface"] = {
            jitgrad: _public_functions(jitgrad, list(surface.functions())),
            functional: _public_functions(functional),
            linalg: _public_functions(linalg),
            special: _public_functions(special),
            fft: _public_functions(fft),
            autograd: _public_functions(autograd, ["backward", "grad"]),
            tensor: members,
        }
    return _PUBLIC["surface"]


def _install() -> None:
    """Puts the protocol's check into the public surface (once, when it becomes live)."""
    jitgrad = _tf.package
    tensor = registry.Tensor
    surface = _surface()
    lanes = {id(f) for f in registry.LANES.values()}
    for owner, names in surface.items():
        if owner is tensor:
            continue
        prefix = "torch" if owner is jitgrad else owner.__name__.replace("jitgrad", "torch")
        cpp = owner.__name__ not in ("jitgrad.nn.functional", "jitgrad.autograd")
        for n in names:
            fn = vars(owner)[n]
            if id(fn) not in _SWAPPED and id(fn) not in lanes:
                needs = _tf.needs_modes if owner is jitgrad and n in _IMPORTERS else None
                _swap_in_place(fn, f"{prefix}.{n}", cpp, needs)
    for n in surface[tensor]:
        member = vars(tensor)[n]
        if isinstance(member, property):
            setattr(tensor, n, _property_wrapper(member, n))
            continue
        target = _OPERATOR_FUNC.get(n)
        if target is not None and not isinstance(vars(tensor).get(target), _types.FunctionType):
            target = None
        # (in place where the function is the method's own: not a lane, which the dispatcher
        # calls too, nor a helper shared under another name)
        if target is None and id(member) not in lanes and member.__name__ == n:
            if id(member) not in _SWAPPED:
                _swap_in_place(member, f"torch.Tensor.{n}")
            continue
        func_of = None if target is None else functools.partial(getattr, tensor, target)
        setattr(tensor, n, _function_wrapper(member, n, f"torch.Tensor.{target or n}",
                                             func_of=func_of))

_tf.install = _install
__all__ += ["DisableTorchFunction", "DisableTorchFunctionSubclass"]
