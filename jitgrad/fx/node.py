"""``torch.fx.Node``: one instruction of an fx ``Graph`` (a placeholder, a call, an attribute
fetch or the output), with its arguments, its users and a ``meta`` dict."""

from __future__ import annotations

import builtins
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .graph import Graph

Target = Callable[..., Any] | str
Argument = Any  # (a Node, a base value, or a tuple/list/dict/slice of arguments)

_legal_ops = frozenset(["placeholder", "call_method", "call_module", "call_function",
                        "get_attr", "output", "root"])

# the public namespaces whose functions print (and generate code) by their public name,
# searched in this order (``jitgrad.relu`` before ``jitgrad.nn.functional.relu``)
_PUBLIC_MODULES = ("jitgrad", "jitgrad.nn.functional", "jitgrad.linalg", "jitgrad.special",
                   "jitgrad.fft")


_public_names: dict[int, str] = {}
_public_names_from: list[tuple[str, ...]] = [()]


def _public_name(obj: Any) -> str | None:
    """``"jitgrad.sum"`` for a function that one of jitgrad's public namespaces holds (under
    its own ``__name__`` when it has several names; ``zeros_like``, made by a factory, is
    found by identity)."""
    import sys

    name = getattr(obj, "__name__", None)
    if isinstance(name, str):
        for mod_name in _PUBLIC_MODULES:
            mod = sys.modules.get(mod_name)
            if mod is not None and getattr(mod, name, None) is obj:  # (lazy names too)
                return f"{mod_name}.{name}"
    loaded = tuple(m for m in _PUBLIC_MODULES if m in sys.modules)
    if loaded != _public_names_from[0]:  # (a namespace was imported since: map again)
        _public_names.clear()
        for mod_name in loaded:
            for k, v in list(sys.modules[mod_name].__dict__.items()):
                v = getattr(v, "__fx_original__", v)  # (mapped during a trace: unwrap)
                if not k.startswith("_") and callable(v) and not isinstance(v, type):
                    _public_names.setdefault(id(v), f"{mod_name}.{k}")
        _public_names_from[0] = loaded
    return _public_names.get(id(obj))


def _find_module_of_method(orig_method: Callable[..., Any]) -> str:
    module = orig_method.__module__
    if module is not None:
        return module
    raise RuntimeError(f"cannot find module for {orig_method}")


def _get_qualified_name(func: Callable[..., Any]) -> str:
    """The dotted name generated code reaches ``func`` by (``getattr``, ``jitgrad.sum``)."""
    if getattr(builtins, func.__name__, None) is func:
        return func.__name__
    public = _public_name(func)
    if public is not None:
        return public
    name = func.__name__
    if name == "<lambda>":
        import inspect

        try:
            name = inspect.getsource(func).split("=")[0].strip()
        except Exception as e:
            raise RuntimeError("Unable to represent lambda") from e
    return f"{_find_module_of_method(func)}.{name}"


def _typename(obj: Any) -> str:
    """``torch.typename``: the dotted name of ``obj`` (a function, a class) or its type."""
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def _type_repr(obj: Any) -> str:
    if isinstance(obj, type):
        if obj.__module__ == "builtins":
            return obj.__qualname__
        return f"{obj.__module__}.{obj.__qualname__}"
    if obj is ...:
        return "..."
    if isinstance(obj, types.FunctionType):
        return obj.__name__
    return repr(obj)


def _format_arg(arg: object, max_list_len: float = float("inf")) -> str:
    if isinstance(arg, list):
        items = ", ".join(_format_arg(a) for idx, a in enumerate(arg) if idx < max_list_len)
        maybe_len = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        return f"[{items}{maybe_len}]"
    if isinstance(arg, tuple):
        items = ", ".join(_format_arg(a) for idx, a in enumerate(arg) if idx < max_list_len)
        maybe_len = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        maybe_comma = "," if len(arg) == 1 else ""
        return f"({items}{maybe_comma}{maybe_len})"
    if isinstance(arg, dict):
        items_str = ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items())
        return f"{{{items_str}}}"
    if isinstance(arg, Node):
        return "%" + str(arg)
    return str(arg)


def map_aggregate(a: Argument, fn: Callable[[Argument], Argument]) -> Argument:
    """Applies ``fn`` to each leaf of ``a`` (through tuples, named tuples, lists, dicts and
    slices), rebuilding the containers."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(elem, fn) for elem in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)
    if isinstance(a, list):
        return [map_aggregate(elem, fn) for elem in a]
    if isinstance(a, dict):
        return type(a)((k, map_aggregate(v, fn)) for k, v in a.items())
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Argument, fn: Callable[[Node], Argument]) -> Argument:
    """Applies ``fn`` to each ``Node`` in ``a`` (through the containers ``map_aggregate``
    walks)."""
    if not callable(fn):
        raise AssertionError("torch.fx.map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _nodes_in(a: Argument) -> list[Node]:
    found: dict[Node, None] = {}
    map_arg(a, found.setdefault)
    return list(found)


class Node:
    """One instruction of a ``Graph`` (``torch.fx.Node``).

    ``op`` is one of ``placeholder`` (an input; ``target`` is the argument's name, ``args``
    its default), ``get_attr`` (``target``: a dotted attribute of the owning module),
    ``call_function`` (``target``: a callable), ``call_method`` (``target``: a method name,
    ``args[0]`` the object), ``call_module`` (``target``: a dotted submodule) and ``output``
    (``args[0]``: the returned value). ``users`` are the nodes that take this one as an
    argument.
    """

    def __init__(self, graph: Graph, name: str, op: str, target: Target,
                 args: tuple[Argument, ...], kwargs: dict[str, Argument],
                 return_type: Any | None = None) -> None:
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has "
                             f"type {_typename(target)} but a Callable is expected")
        if op not in ("call_function", "root") and not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has "
                             f"type {_typename(target)} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict[Node, None] = {}
        self._args: tuple[Argument, ...] = ()
        self._kwargs: dict[str, Argument] = {}
        self.users: dict[Node, None] = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self.meta: dict[str, Any] = {}
        self.__update_args_kwargs(args, kwargs)

    # ------------------------------------------------------------------ the linked list
    @property
    def next(self) -> Node:
        """The node after this one in the graph."""
        return self._next

    @property
    def prev(self) -> Node:
        """The node before this one in the graph."""
        return self._prev

    def prepend(self, x: Node) -> None:
        """Moves ``x`` right before this node (``x`` leaves its old place)."""
        if self.graph is not x.graph:
            raise AssertionError("Attempting to move a Node into a different Graph")
        if self is x:
            raise AssertionError("Cannot prepend a node to itself")
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: Node) -> None:
        """Moves ``x`` right after this node."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # ------------------------------------------------------------------ arguments
    @property
    def args(self) -> tuple[Argument, ...]:
        """The positional arguments (assigning them updates the users of the nodes in them)."""
        return self._args

    @args.setter
    def args(self, a: tuple[Argument, ...]) -> None:
        self.__update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict[str, Argument]:
        """The keyword arguments (assigning them updates the users of the nodes in them)."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k: dict[str, Argument]) -> None:
        self.__update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list[Node]:
        """The nodes among ``args`` and ``kwargs``, each once, in order of appearance."""
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg: Argument) -> None:
        """Sets ``args[idx]`` to ``arg``."""
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def insert_arg(self, idx: int, arg: Argument) -> None:
        """Inserts ``arg`` into ``args`` at ``idx``."""
        args = list(self.args)
        args.insert(idx, arg)
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg: Argument) -> None:
        """Sets ``kwargs[key]`` to ``arg``."""
        self.kwargs = {**self.kwargs, key: arg}

    def __update_args_kwargs(self, new_args: tuple[Argument, ...],
                             new_kwargs: dict[str, Argument]) -> None:
        for old_use in self._input_nodes:
            old_use.users.pop(self)
        self._args = map_aggregate(tuple(new_args), lambda x: x)
        self._kwargs = map_aggregate(dict(new_kwargs), lambda x: x)
        self._input_nodes = dict.fromkeys(_nodes_in((self._args, self._kwargs)))
        for new_use in self._input_nodes:
            new_use.users.setdefault(self)

    # ------------------------------------------------------------------ rewriting
    def replace_all_uses_with(self, replace_with: Node,
                              delete_user_cb: Callable[[Node], bool] | None = None, *,
                              propagate_meta: bool = False) -> list[Node]:
        """Makes every user of this node use ``replace_with`` instead (those users for which
        ``delete_user_cb`` says True; all by default); returns the users changed."""
        if propagate_meta:
            if len(replace_with.meta) != 0:
                raise AssertionError("Called node.replace_all_uses_with(replace_with, "
                                     "propagate_meta=True), but replace_with already has "
                                     "stuff in .meta, skipping")
            for k, v in self.meta.items():
                replace_with.meta[k] = v
        to_process = list(self.users)
        skipped = []
        for use_node in to_process:
            if delete_user_cb is not None and not delete_user_cb(use_node):
                skipped.append(use_node)
                continue
            use_node._replace_input(self, replace_with)
        if len(self.users) - len(skipped) != 0:
            raise AssertionError(f"Expected all uses of {self} to be replaced")
        return [n for n in to_process if n not in skipped]

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Uses ``new_input`` wherever this node's arguments use ``old_input``."""
        self._replace_input(old_input, new_input)

    def _replace_input(self, old: Node, new: Node) -> None:
        def swap(n: Node) -> Node:
            return new if n is old else n

        self.__update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    @property
    def stack_trace(self) -> str | None:
        """Where the node was traced from (``meta['stack_trace']``; None: tracing records no
        stack traces)."""
        return self.meta.get("stack_trace", None)

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    def _rename(self, candidate: str) -> None:
        if candidate == self.name:
            return
        name = self.graph._graph_namespace.create_name(candidate, None)
        self.name = name
        self.graph._graph_namespace._rename_object(self, name)

    def is_impure(self, impure_random: bool = True) -> bool:
        """Whether dead code elimination must keep this node (inputs, the output, asserts,
        in-place calls, random ops, modules marked ``_is_impure``)."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_module":
            if self.graph.owning_module is None:
                raise AssertionError("self.graph.owning_module not set for purity check")
            return getattr(self.graph.owning_module.get_submodule(self.target),
                           "_is_impure", False)
        if self.op == "call_function":
            from ._wrap import _side_effectful_functions

            if self.target in _side_effectful_functions:
                return True
            name = getattr(self.target, "__name__", "")
            if name.endswith("_") and not name.startswith("_"):
                return True  # (in place: jitgrad.relu_, F.relu_)
            if impure_random and name in _RANDOM_OPS:
                return True
            return bool(self.kwargs.get("inplace", False))
        if self.op == "call_method":
            return isinstance(self.target, str) and self.target.endswith("_") \
                and not self.target.startswith("_")
        return False

    # ------------------------------------------------------------------ printing
    def __repr__(self) -> str:
        return self.name

    @staticmethod
    def _pretty_print_target(target: object) -> str:
        if isinstance(target, str):
            return target
        if hasattr(target, "__module__"):
            name = getattr(target, "__name__", None)
            if name is None:
                return _get_qualified_name(target)  # type: ignore[arg-type]
            if target.__module__ == "builtins":
                return f"builtins.{name}"
            if target.__module__ == "_operator":
                return f"operator.{name}"
        return _get_qualified_name(target)  # type: ignore[arg-type]

    def format_node(self, placeholder_names: list[str] | None = None,
                    maybe_return_typename: list[str] | None = None) -> str | None:
        """The line ``str(graph)`` prints for this node (None for a placeholder when
        ``placeholder_names`` collects the signature)."""
        if self.op == "placeholder":
            arg_str = self.target
            arg_str += arg_str + f": {_type_repr(self.type)}" if self.type else ""
            if placeholder_names:
                placeholder_names.append(arg_str)
                return None
            maybe_typename = f"{_type_repr(self.type)} " if self.type else ""
            default_val = "(default=" + str(self.args[0]) + ")" if self.args else ""
            return (f"%{self.name} : {maybe_typename}[num_users={len(self.users)}] = "
                    f"{self.op}[target={self.target}]{default_val}")
        if self.op == "get_attr":
            maybe_typename = f"{_type_repr(self.type)} " if self.type is not None else ""
            return (f"%{self.name} : {maybe_typename}[num_users={len(self.users)}] = "
                    f"{self.op}[target={self._pretty_print_target(self.target)}]")
        if self.op == "output":
            if self.type and maybe_return_typename:
                maybe_return_typename[0] = f" -> {_type_repr(self.type)}"
            return f"return {self.args[0]}"
        type_annotation = f"{_type_repr(self.type)} " if self.type is not None else ""
        return (f"%{self.name} : {type_annotation}[num_users={len(self.users)}] = "
                f"{self.op}[target={self._pretty_print_target(self.target)}]("
                f"args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})")


_RANDOM_OPS = frozenset(["rand", "randn", "randint", "randperm", "rand_like", "randn_like",
                         "randint_like", "bernoulli", "multinomial", "normal", "poisson",
                         "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
                         "feature_alpha_dropout", "rrelu"])
