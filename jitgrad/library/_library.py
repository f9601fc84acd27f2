"""``Library``, ``define`` and ``impl``: operators declared by a schema string and given kernels
per dispatch key, as ``torch.library``'s lower-level API, on the same ``CustomOpDef`` as
``custom_op``.

The dispatch keys jitgrad honours: a device's backend key (``"CPU"``, ``"CUDA"``) or
``"CompositeExplicitAutograd"`` (all devices): the kernel computes, and autograd comes from
``register_autograd`` (as for ``custom_op``); ``"CompositeImplicitAutograd"`` (the default of
``Library.impl``): the kernel is made of jitgrad ops and is differentiated (and traced by the
jit) through them; ``"Autograd"``/``"AutogradCPU"``/``"AutogradCUDA"``: the kernel does its own
autograd (e.g. calls an ``autograd.Function``); ``"Meta"``: the fake function. Other keys
raise ``NotImplementedError``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..ops import custom_namespaces
from ._custom_ops import OPDEFS, CustomOpDef, OpOverload

__all__ = ["Library", "define", "impl", "fallthrough_kernel"]

_RESERVED_NAMESPACES = ["prim"]
_NAMELESS_SCHEMA = re.compile(r"\(.*\) -> .*")
_BACKEND_KEYS = {"CPU": "cpu", "CUDA": "cuda", "CompositeExplicitAutograd": None}
_AUTOGRAD_KEYS = {"Autograd": None, "AutogradCPU": "cpu", "AutogradCUDA": "cuda"}
_DEVICE_KEYS = {"cpu": "CPU", "cuda": "CUDA", "default": "CompositeExplicitAutograd"}
_KEEP_ALIVE: list = []


def fallthrough_kernel() -> None:
    """torch's marker for a fallthrough registration (jitgrad has no dispatcher to fall
    through: ``impl`` with it raises)."""
    raise NotImplementedError("fallthrough_kernel() should never be called.")


class Library:
    """A set of operator definitions and kernels in namespace ``ns``.

    Args:
        ns: the namespace (``jitgrad.ops.<ns>``).
        kind: ``"DEF"`` (new operators), ``"FRAGMENT"`` (more of a namespace) or ``"IMPL"``
            (kernels for operators defined elsewhere).
        dispatch_key: the default key of :meth:`impl`.

    Raises:
        ValueError: an unknown kind, or a reserved namespace.
    """

    def __init__(self, ns: str, kind: str, dispatch_key: str = "") -> None:
        if kind not in ("IMPL", "DEF", "FRAGMENT"):
            raise ValueError(f"Unsupported kind: {kind}")
        if ns in _RESERVED_NAMESPACES and kind in ("DEF", "FRAGMENT"):
            raise ValueError(f"{ns} is a reserved namespace. Please try creating a library with "
                             "another name.")
        self.ns = ns
        self.kind = kind
        self.dispatch_key = dispatch_key
        self._op_defs: set[str] = set()
        self._destroyed = False

    def __repr__(self) -> str:
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def define(self, schema: str, alias_analysis: str = "", *, tags: Any = ()) -> str:
        """Define the operator ``schema`` (``"name(Tensor x, float s=1.0) -> Tensor"``) in this
        library's namespace; returns its name.

        Raises:
            RuntimeError: a bad ``alias_analysis``, the library destroyed, or an operator of
                that name already defined.
        """
        if alias_analysis not in ["", "FROM_SCHEMA", "CONSERVATIVE"]:
            raise RuntimeError(f"Invalid alias_analysis type {alias_analysis}")
        if self._destroyed:
            raise AssertionError("Library object has been destroyed")
        name = schema.split("(")[0].strip()
        if "." in name:
            raise NotImplementedError(f"define({schema!r}): jitgrad operators have one "
                                      "overload (.default); no named overloads")
        qualname = f"{self.ns}::{name}"
        if qualname in OPDEFS:
            raise RuntimeError(f"Tried to register an operator ({qualname}{schema[len(name):]}) "
                               "with the same name and overload name multiple times.")
        _check_namespace(self.ns)
        CustomOpDef(self.ns, name, schema[len(name):].strip(), None)
        self._op_defs.add(qualname)
        return name

    def impl(self, op_name: Any, fn: Callable, dispatch_key: str = "", *,
             with_keyset: bool = False, allow_override: bool = True) -> None:
        """Register ``fn`` as the kernel of ``op_name`` (a name in this namespace, or the op)
        for ``dispatch_key`` (see the module docstring; default: the library's, else
        ``"CompositeImplicitAutograd"``).

        Raises:
            TypeError: ``fn`` is not callable.
            NotImplementedError: a key jitgrad does not dispatch on, or ``with_keyset``.
        """
        if not callable(fn):
            raise TypeError(f"Input function is required to be a callable but found type "
                            f"{type(fn)}")
        if fn is fallthrough_kernel or with_keyset:
            raise NotImplementedError("jitgrad has no dispatcher keysets: fallthrough kernels "
                                      "and with_keyset=True are not supported")
        key = dispatch_key or self.dispatch_key or "CompositeImplicitAutograd"
        opdef = _lookup(op_name if isinstance(op_name, (OpOverload, CustomOpDef)) or
                        "::" in str(op_name) else f"{self.ns}::{op_name}")
        if not allow_override and _has_kernel(opdef, key):
            raise RuntimeError(
                "This is not allowed since there's already a kernel registered from python "
                f"overriding {opdef._name}'s behavior for {key} dispatch key and {self.ns} "
                "namespace.")
        if key in _BACKEND_KEYS:
            opdef._backend_fns[_BACKEND_KEYS[key]] = fn
        elif key in _AUTOGRAD_KEYS:
            opdef._autograd_fns[_AUTOGRAD_KEYS[key]] = fn
        elif key == "CompositeImplicitAutograd":
            opdef._composite_fns[None] = fn
        elif key == "Meta":
            opdef.register_fake(fn)
        else:
            raise NotImplementedError(
                f"impl(..., dispatch_key={key!r}): jitgrad dispatches on CPU, CUDA, "
                "CompositeExplicitAutograd, CompositeImplicitAutograd, Autograd(CPU/CUDA) and "
                "Meta only")

    def _destroy(self) -> None:
        """Remove the operators this library defined."""
        for qualname in self._op_defs:
            opdef = OPDEFS.pop(qualname, None)
            if opdef is not None:
                custom_namespaces.namespace(opdef._namespace)._ops.pop(opdef._name, None)
        self._op_defs.clear()
        self._destroyed = True


def _has_kernel(opdef: CustomOpDef, key: str) -> bool:
    if key in _BACKEND_KEYS:
        return _BACKEND_KEYS[key] in opdef._backend_fns
    if key in _AUTOGRAD_KEYS:
        return _AUTOGRAD_KEYS[key] in opdef._autograd_fns
    if key == "CompositeImplicitAutograd":
        return None in opdef._composite_fns
    return key == "Meta" and opdef._abstract_fn is not None


def _lookup(op: Any) -> CustomOpDef:
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, OpOverload):
        return op._opdef
    if op not in OPDEFS:
        raise RuntimeError(f"operator {op} does not exist (define it first with "
                           "jitgrad.library.define or custom_op)")
    return OPDEFS[op]


def _check_namespace(ns: str) -> None:
    from .. import ops

    if ns in vars(ops):
        raise ValueError(f"the namespace {ns!r} is jitgrad.ops.{ns}, one of jitgrad's own op "
                         "modules or functions; please use your project's name as the "
                         "namespace.")


def define(qualname: Any, schema: str, *, lib: Library | None = None, tags: Any = (),
           alias_analysis: str = "") -> Any:
    """Define the operator ``qualname`` (``"mylib::name"``) with ``schema``
    (``"(Tensor x) -> Tensor"``); give it kernels with :func:`impl`. (Called as
    ``define(lib, schema)``, torch's older form, it returns a decorator registering the
    decorated function as the kernel.)

    Raises:
        ValueError: ``qualname`` is not a string, or ``schema`` has a name.
    """
    if isinstance(qualname, Library):  # (the old form: define(lib, "name(...) -> ..."))
        old_lib = qualname

        def wrap(f: Callable) -> Callable:
            name = old_lib.define(schema, alias_analysis)
            old_lib.impl(name, f)
            return f
        return wrap
    if not isinstance(qualname, str):
        raise ValueError(f"define(qualname, schema): expected qualname to be instance of str, "
                         f"got {type(qualname)}")
    namespace, name = _parse_namespace(qualname)
    if lib is None:
        lib = Library(namespace, "FRAGMENT")
        _KEEP_ALIVE.append(lib)
    if not _NAMELESS_SCHEMA.fullmatch(schema):
        raise ValueError(f"define(qualname, schema, ...): expected schema to look like e.g. "
                         f'"(Tensor x) -> Tensor" but got "{schema}"')
    lib.define(name + schema, alias_analysis="", tags=tags)
    return None


def _parse_namespace(qualname: str) -> tuple[str, str]:
    splits = qualname.split("::")
    if len(splits) != 2:
        raise ValueError(f"Expected `qualname` to be of the form \"namespace::name\", but got "
                         f"{qualname}. The qualname passed to the torch.library APIs must "
                         "consist of a namespace and a name, e.g. aten::sin")
    return splits[0], splits[1]


def impl(qualname: Any, types: Any, func: Callable | None = None, *,
         lib: Library | None = None) -> Any:
    """Register ``func`` as the kernel of ``qualname`` for device type(s) ``types`` (``"cpu"``,
    ``"cuda"``, ``"default"`` for all devices, or a dispatch key); a decorator without
    ``func``. Also torch's older form ``impl(lib, name, dispatch_key="")`` (a decorator)."""
    if isinstance(qualname, Library):  # (the old form)
        old_lib, name = qualname, types
        key = func if isinstance(func, str) else ""

        def wrap(f: Callable) -> Callable:
            old_lib.impl(name, f, key)
            return f
        return wrap
    keys = [_DEVICE_KEYS.get(t, t) for t in ((types,) if isinstance(types, str) else types)]

    def register(f: Callable) -> None:
        namespace, _ = _parse_namespace(qualname)
        use_lib = lib if lib is not None else Library(namespace, "FRAGMENT")
        for key in keys:
            use_lib.impl(qualname, f, key)

    if func is None:
        return register
    register(func)
    return None
