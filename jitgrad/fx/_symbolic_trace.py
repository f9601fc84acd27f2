"""``torch.fx.Tracer`` and ``symbolic_trace``: run a module's ``forward`` on proxies and record
what it does into a ``Graph``.

torch records free-function calls through ``__torch_function__``; jitgrad's fx does not use
that protocol (``jitgrad.overrides``), so while tracing the public functions of ``jitgrad``,
``jitgrad.nn.functional``, ``jitgrad.linalg``, ``jitgrad.special`` and ``jitgrad.fft`` (and the
traced code's globals that hold them) are patched with wrappers that record a
``call_function`` node when a proxy is among their arguments, as ``fx.wrap`` does for any
function, and ``Tensor``'s methods and operators record a ``call_method`` node when given a
proxy (``self.buf * x``); everything is restored after."""

from __future__ import annotations

import builtins
import functools
import importlib
import inspect
import math
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any

from ._wrap import (
    PH,
    PHBase,
    _assert,
    _assert_is_none,
    _side_effectful_functions,
    _wrapped_fns_to_patch,
    wrap,
)
from .graph import Graph
from .node import Argument
from .proxy import Proxy, TracerBase, _find_proxy

__all__ = ["PH", "PHBase", "Tracer", "_side_effectful_functions", "symbolic_trace", "wrap"]

_CO_VARARGS = inspect.CO_VARARGS
_CO_VARKEYWORDS = inspect.CO_VARKEYWORDS
_LAZY_ALIAS_MODULES = ("jitgrad._nn_aliases", "jitgrad._aten_nn", "jitgrad._aten_rnn")
_PATCHED_MODULES = ("jitgrad", "jitgrad.nn.functional", "jitgrad.linalg", "jitgrad.special",
                    "jitgrad.fft")
# ``tensor <op> proxy``: the method torch's node calls (its __torch_function__ sees these)
_TENSOR_OPERATOR_METHODS = {
    "__add__": "add", "__sub__": "sub", "__mul__": "mul", "__truediv__": "div",
    "__floordiv__": "__floordiv__", "__mod__": "remainder", "__pow__": "pow",
    "__matmul__": "matmul", "__and__": "__and__", "__or__": "__or__", "__xor__": "__xor__",
    "__lshift__": "__lshift__", "__rshift__": "__rshift__", "__eq__": "eq", "__ne__": "ne",
    "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge",
    "__getitem__": "__getitem__"}


class _Recording:
    """A function made to record a ``call_function`` node of ``orig`` when a proxy is among
    its arguments (else it calls ``orig``). It compares and hashes as ``orig``
    (``target == jitgrad.sigmoid`` and dict lookups work while it stands in for ``orig``);
    nodes record ``orig`` itself."""

    def __init__(self, orig: Callable, wrapped: bool = False) -> None:
        orig = getattr(orig, "__fx_original__", orig)  # (a trace inside a trace)
        functools.update_wrapper(self, orig)
        self.__fx_original__ = orig
        self._wrapped = wrapped

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        proxy = _find_proxy(args, kwargs)
        if proxy is not None:
            out = proxy.tracer.create_proxy("call_function", self.__fx_original__, args, kwargs)
            if self._wrapped:
                out.node.meta["is_wrapped"] = True
            return out
        return self.__fx_original__(*args, **kwargs)

    def __eq__(self, other: object) -> bool:
        return getattr(other, "__fx_original__", other) is self.__fx_original__

    def __hash__(self) -> int:
        return hash(self.__fx_original__)

    def __repr__(self) -> str:
        return repr(self.__fx_original__)


def _recording(orig: Callable, wrapped: bool = False) -> Callable:
    """``orig``, recording a ``call_function`` node when a proxy is among its arguments."""
    return _Recording(orig, wrapped)


def _method_recording(name: str, orig: Callable) -> Callable:
    """A ``Tensor`` method (or operator) that records a ``call_method`` node of ``name``
    when a proxy is among its arguments (``self.buf.add(x)``, ``self.buf * x``,
    ``self.buf[i]``), as torch's ``__torch_function__`` does."""
    @functools.wraps(orig)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        proxy = _find_proxy(args, kwargs)
        if proxy is None:
            return orig(self, *args, **kwargs)
        return proxy.tracer.create_proxy("call_method", name, (self, *args), kwargs)

    return method


class _Patcher:
    """Sets attributes and dict entries for the time of a trace and restores them after."""

    _MISSING = object()

    def __init__(self) -> None:
        self._undo: list[tuple[Any, str, Any, bool]] = []
        self._visited: set[int] = set()

    def set(self, obj: Any, name: str, value: Any, is_dict: bool = False) -> None:
        if is_dict:
            old = obj.get(name, self._MISSING)
            obj[name] = value
        else:
            old = obj.__dict__.get(name, self._MISSING) if hasattr(obj, "__dict__") \
                else self._MISSING
            setattr(obj, name, value)
        self._undo.append((obj, name, old, is_dict))

    def restore(self) -> None:
        for obj, name, old, is_dict in reversed(self._undo):
            if is_dict:
                if old is self._MISSING:
                    obj.pop(name, None)
                else:
                    obj[name] = old
            elif old is self._MISSING:
                delattr(obj, name)
            else:
                setattr(obj, name, old)
        self._undo.clear()
        self._visited.clear()

    def visit_once(self, thing: Any) -> bool:
        if id(thing) in self._visited:
            return False
        self._visited.add(id(thing))
        return True


def _patch_public_functions(patcher: _Patcher, wrappers: dict[int, Callable]) -> None:
    """Makes jitgrad's public functions (``jitgrad.*``, ``F.*``, ..., the lazily served
    aliases) and ``Tensor``'s methods and operators record nodes when given a proxy; fills
    ``wrappers`` (id of a function -> its recording wrapper)."""
    import jitgrad

    for name, orig in list(jitgrad.Tensor.__dict__.items()):
        if isinstance(orig, types.FunctionType) and (not name.startswith("_")
                                                     or name in _TENSOR_OPERATOR_METHODS):
            method = _TENSOR_OPERATOR_METHODS.get(name, name)
            patcher.set(jitgrad.Tensor, name, _method_recording(method, orig))

    def patch(mod: Any, name: str, value: Any) -> None:
        wrapper = wrappers.get(id(value))
        if wrapper is None:
            wrapper = wrappers[id(value)] = _recording(value)
        patcher.set(mod, name, wrapper)

    for mod_name in _PATCHED_MODULES:
        mod = sys.modules.get(mod_name)
        if mod is None:
            continue
        for name, value in list(mod.__dict__.items()):
            if not name.startswith("__") and callable(value) \
                    and not isinstance(value, (type, types.ModuleType)):
                patch(mod, name, value)
    for alias_mod in _LAZY_ALIAS_MODULES:  # (jitgrad.conv2d ...: served by __getattr__)
        aliases = importlib.import_module(alias_mod)
        for name in aliases.__all__:
            if name not in jitgrad.__dict__:
                patch(jitgrad, name, getattr(aliases, name))


class Tracer(TracerBase):
    """Symbolic tracer (``torch.fx.Tracer``): ``trace(root)`` runs ``root`` on proxies and
    returns the recorded ``Graph``. Override ``is_leaf_module`` to choose which submodules are
    recorded as ``call_module`` rather than traced through."""

    def __init__(self, autowrap_modules: tuple[types.ModuleType, ...] = (math,),
                 autowrap_functions: tuple[Callable, ...] = (),
                 param_shapes_constant: bool = False) -> None:
        super().__init__()
        self._autowrap_function_ids = {
            id(value) for name, value in
            ((n, getattr(m, n)) for m in autowrap_modules for n in dir(m))
            if not name.startswith("_") and callable(value)}
        self._autowrap_function_ids.update(id(f) for f in autowrap_functions)
        self._autowrap_modules = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.scope = None
        self.module_stack = {}
        self.node_name_to_scope = {}

    # ------------------------------------------------------------------ arguments
    def create_arg(self, a: Any) -> Argument:
        """Also turns the root's parameters and tensors into ``get_attr`` nodes (a tensor the
        root does not hold becomes a new ``_tensor_constant<N>`` attribute)."""
        import jitgrad

        if isinstance(a, jitgrad.nn.Parameter):
            for n_, p_ in self.root.named_parameters():
                if a is p_:
                    return self.create_node("get_attr", n_, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, jitgrad.Tensor):
            for n_, p_ in self.root.named_buffers():
                if a is p_:
                    return self.create_node("get_attr", n_, (), {})
            qualname = self.tensor_attrs.get(id(a))
            if not qualname:
                i = 0
                while True:
                    qualname = f"_tensor_constant{i}"
                    if not hasattr(self.root, qualname):
                        break
                    i += 1
                self.tensor_attrs[id(a)] = qualname
                object.__setattr__(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        if isinstance(a, jitgrad.nn.Module):
            raise NotImplementedError(f"argument of type: {type(a)}")
        return super().create_arg(a)

    # ------------------------------------------------------------------ modules
    def is_leaf_module(self, m: Any, module_qualified_name: str) -> bool:
        """Whether ``m`` is recorded as one ``call_module`` node: jitgrad's own ``nn`` modules
        are (``nn.Sequential`` is traced through), user modules are not."""
        import jitgrad

        return type(m).__module__.startswith("jitgrad.nn") \
            and not isinstance(m, jitgrad.nn.Sequential)

    def path_of_module(self, mod: Any) -> str:
        """The dotted name of ``mod`` in the root module."""
        path = self.submodule_paths.get(id(mod)) if self.submodule_paths else None
        if path is None:
            for n, p in self.root.named_modules():
                if mod is p:
                    return n
            raise NameError("module is not installed as a submodule")
        return path

    def call_module(self, m: Any, forward: Callable[..., Any], args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> Any:
        """A submodule call: a ``call_module`` node for a leaf, else traced through
        ``forward``."""
        module_qualified_name = self.path_of_module(m)
        if not self.is_leaf_module(m, module_qualified_name):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", module_qualified_name, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Any]) -> Any:
        """A module attribute read during tracing: a parameter becomes a ``get_attr`` proxy
        (one per parameter); other values are returned as they are."""
        import jitgrad

        if isinstance(attr_val, jitgrad.nn.Parameter):
            for n, p in self.root.named_parameters():
                if attr_val is p:
                    if n not in parameter_proxy_cache:
                        parameter_proxy_cache[n] = self.create_proxy("get_attr", n, (), {})
                    return parameter_proxy_cache[n]
        return attr_val

    # ------------------------------------------------------------------ inputs
    def create_args_for_root(self, root_fn: Callable, is_module: bool,
                             concrete_args: dict[str, Any] | tuple | None = None
                             ) -> tuple[Callable, list[Any]]:
        """Placeholders for ``root_fn``'s parameters (``*args`` and ``**kwargs`` too); the
        ``concrete_args`` given are passed as values (guarded by an assert in the graph)."""
        fn_for_analysis = inspect.unwrap(root_fn)
        co = fn_for_analysis.__code__
        total_args = co.co_argcount + co.co_kwonlyargcount
        names_iter = iter(co.co_varnames)
        args: list[Any] = []
        skip_arg_idx = 0
        if is_module:
            if total_args == 0:
                raise RuntimeError("``self`` argument cannot be part of *args expansion!")
            skip_arg_idx = 1
            next(names_iter)
            args.append(self.root)
        sig = inspect.signature(fn_for_analysis)
        arg_names = [next(names_iter) for _ in range(skip_arg_idx, total_args)]
        if isinstance(concrete_args, tuple):
            if len(arg_names) != len(concrete_args):
                raise RuntimeError(f"Tracing expected {len(arg_names)} arguments but got "
                                   f"{len(concrete_args)} concrete arguments")
            concrete_args = dict(zip(arg_names, concrete_args))
        args.extend(self._proxy_placeholder(name, concrete_args, sig) for name in arg_names)
        if co.co_kwonlyargcount > 0 or co.co_flags & (_CO_VARARGS | _CO_VARKEYWORDS):
            if co.co_flags & _CO_VARARGS:
                args.append(self._proxy_placeholder("*" + next(names_iter), None, sig))
            if co.co_flags & _CO_VARKEYWORDS:
                args.append(self._proxy_placeholder("**" + next(names_iter), None, sig))
            root_fn = _patch_function(root_fn, len(args))
        return root_fn, args

    def _proxy_placeholder(self, name: str, concrete_args: dict[str, Any] | None,
                           sig: inspect.Signature) -> Any:
        if concrete_args is not None and name in concrete_args:
            x = concrete_args[name]
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)
            out = self.create_proxy("placeholder", f"{name}_1", default, {})
            if isinstance(x, PHBase):
                return out
            if type(x) in (bool, int, float, str, complex):
                self.create_proxy("call_function", _assert,
                                  (out == x, f"{name} has been specialized to have value {x} "
                                   "but got another value"), {})
            elif x is None:
                self.create_proxy("call_function", _assert_is_none,
                                  (out, f"{name} has been specialized to have value None but "
                                   "got another value"), {})
            else:
                warnings.warn(f"Was not able to add assertion to guarantee correct input {name} "
                              "to specialized function. It is up to the user to make sure that "
                              "your inputs match the inputs you specialized the function with.",
                              stacklevel=3)
            return x
        if name[0] == "*":
            default: tuple = ()
        else:
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)
        annotation = getattr(sig.parameters.get(name.lstrip("*")), "annotation", None)
        if annotation is inspect.Parameter.empty or isinstance(annotation, str):
            annotation = None  # (a string annotation would print quoted)
        return self.create_proxy("placeholder", name, default, {}, type_expr=annotation)

    # ------------------------------------------------------------------ the trace
    def trace(self, root: Any, concrete_args: dict[str, Any] | None = None) -> Graph:
        """Traces ``root`` (a module's ``forward``, or a function) and returns the graph;
        ``self.root`` is the module the graph's attributes refer to."""
        import jitgrad

        if isinstance(root, jitgrad.nn.Module):
            self.root = root
            fn = type(root).forward
            self.traced_func_name = "forward"
        else:
            self.root = jitgrad.nn.Module()
            fn = root
            self.traced_func_name = getattr(fn, "__name__", "forward")
        self.graph = Graph(tracer_cls=getattr(self, "__class__", None))
        self.tensor_attrs: dict[int, str] = {}
        self.submodule_paths = {id(mod): name for name, mod in self.root.named_modules()}
        self._collect_tensor_attrs(self.root, [])
        fn_globals = getattr(inspect.unwrap(fn), "__globals__", {})
        fn, args = self.create_args_for_root(fn, isinstance(root, jitgrad.nn.Module),
                                             concrete_args)
        parameter_proxy_cache: dict[str, Proxy] = {}
        patcher = _Patcher()
        try:
            self._patch(patcher, fn_globals, parameter_proxy_cache)
            self.create_node("output", "output", (self.create_arg(fn(*args)),), {})
        finally:
            patcher.restore()
        self.submodule_paths = None
        return self.graph

    def _collect_tensor_attrs(self, m: Any, prefix_atoms: list[str]) -> None:
        import jitgrad

        for k, v in m.__dict__.items():
            if isinstance(v, jitgrad.Tensor):
                self.tensor_attrs[id(v)] = ".".join(prefix_atoms + [k])
        for k, v in m.named_children():
            self._collect_tensor_attrs(v, prefix_atoms + [k])

    def _patch(self, patcher: _Patcher, fn_globals: dict, parameter_proxy_cache: dict) -> None:
        import jitgrad

        tracer = self
        module_cls = jitgrad.nn.Module
        orig_call = module_cls.__call__
        orig_getattr = module_cls.__getattr__

        def module_getattr_wrapper(mod: Any, attr: str) -> Any:
            return tracer.getattr(attr, orig_getattr(mod, attr), parameter_proxy_cache)

        def module_call_wrapper(mod: Any, *args: Any, **kwargs: Any) -> Any:
            def forward(*args: Any, **kwargs: Any) -> Any:
                return orig_call(mod, *args, **kwargs)

            fwd = getattr(type(mod), "forward", None)
            tracer._patch_globals(patcher, getattr(fwd, "__globals__", None))
            return tracer.call_module(mod, forward, args, kwargs)

        patcher.set(module_cls, "__getattr__", module_getattr_wrapper)
        patcher.set(module_cls, "__call__", module_call_wrapper)
        self._wrappers: dict[int, Callable] = {}
        _patch_public_functions(patcher, self._wrappers)
        for (_, name), globals_ in _wrapped_fns_to_patch.items():
            if name not in globals_ and hasattr(builtins, name):
                orig_fn = getattr(builtins, name)
            else:
                orig_fn = globals_[name]
            patcher.set(globals_, name, _recording(orig_fn, wrapped=True), is_dict=True)
        self._patch_globals(patcher, fn_globals)
        for module in self._autowrap_modules:  # (math.sqrt(proxy) records, as in torch)
            self._patch_globals(patcher, module.__dict__)

    def _patch_globals(self, patcher: _Patcher, globals_: dict | None) -> None:
        """Patches the names of a traced function's globals that hold a patched jitgrad
        function (``from jitgrad.nn.functional import relu``) or an autowrapped one."""
        if globals_ is None or not patcher.visit_once(globals_):
            return
        for name, value in list(globals_.items()):
            if name.startswith("__") or not callable(value) or isinstance(value, type):
                continue
            wrapper = self._wrappers.get(id(value))
            if wrapper is None and id(value) in self._autowrap_function_ids:
                wrapper = _recording(value, wrapped=True)
            if wrapper is not None:
                patcher.set(globals_, name, wrapper, is_dict=True)


def _patch_function(fn: Callable, nargs: int) -> Callable:
    """``fn`` with ``*args``/``**kwargs`` turned into plain parameters (so placeholders for
    them can be passed positionally)."""
    co = fn.__code__
    co_flags = co.co_flags & ~(_CO_VARARGS | _CO_VARKEYWORDS)
    new_code = co.replace(co_argcount=nargs, co_posonlyargcount=0, co_kwonlyargcount=0,
                          co_flags=co_flags)
    return types.FunctionType(new_code, fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)


def symbolic_trace(root: Any, concrete_args: dict[str, Any] | None = None) -> Any:
    """Traces ``root`` (a module or a function) into a ``GraphModule``
    (``torch.fx.symbolic_trace``); ``concrete_args`` fixes some arguments to values."""
    import jitgrad

    from .graph_module import GraphModule

    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = root.__class__.__name__ if isinstance(root, jitgrad.nn.Module) else root.__name__
    return GraphModule(tracer.root, graph, name)

