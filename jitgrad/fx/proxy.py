"""``torch.fx.Proxy``: the value symbolic tracing passes through a program. Operators and
method calls on a proxy record nodes into the tracer's graph; control flow on a proxy's value
raises ``TraceError``."""

from __future__ import annotations

import dis
import inspect
import operator
import sys
from collections.abc import Callable, Iterator
from typing import Any

from ._codegen import magic_methods, reflectable_magic_methods
from .graph import Graph
from .node import Argument, Node, Target, map_aggregate


class TraceError(ValueError):
    """Raised when a traced program does something symbolic tracing cannot record
    (``torch.fx.proxy.TraceError``)."""


class TracerBase:
    """What ``Proxy`` needs of a tracer: a graph to record into and ``create_proxy``."""

    graph: Graph
    record_stack_traces: bool = False
    check_mutable_operations: bool = False
    trace_asserts: bool = False
    proxy_buffer_attributes: bool = False
    traced_func_name: str = "forward"
    scope: Any = None
    module_stack: Any = None
    node_name_to_scope: dict[str, tuple[str, type]]

    def create_node(self, kind: str, target: Target, args: tuple[Argument, ...],
                    kwargs: dict[str, Argument], name: str | None = None,
                    type_expr: Any | None = None) -> Node:
        """Inserts a node into the graph (a hook subclasses override to change nodes)."""
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> Proxy:
        """The proxy standing for ``node``."""
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Target, args: tuple[Any, ...],
                     kwargs: dict[str, Any], name: str | None = None,
                     type_expr: Any | None = None,
                     proxy_factory_fn: Callable[[Node], Proxy] | None = None) -> Proxy:
        """Records ``kind`` (``call_function``, ...) of ``target`` on ``args``/``kwargs``
        (proxies and other values, turned into node arguments by ``create_arg``) and returns
        the proxy of the new node."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        assert isinstance(args_, tuple)
        assert isinstance(kwargs_, dict)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a: Any) -> Argument:
        """A value as a node argument: proxies become their nodes, containers are mapped,
        base values stay; anything else raises ``NotImplementedError``."""
        import jitgrad

        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, tuple):
            args = tuple(self.create_arg(elem) for elem in a)
            return type(a)(*args) if hasattr(a, "_fields") else type(a)(args)
        if isinstance(a, list):
            return [self.create_arg(elem) for elem in a]
        if isinstance(a, dict):
            r = {}
            for k, v in a.items():
                k = self.create_arg(k)
                if isinstance(k, Node):
                    raise RuntimeError("Keys for dictionaries used as an argument cannot "
                                       f"contain a Node. Got key: {k}")
                r[k] = self.create_arg(v)
            return r
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, (str, int, float, bool, complex, type(None), type(...),
                          jitgrad.dtype, jitgrad.device, Node)):
            return a
        if isinstance(a, jitgrad.memory_format) or isinstance(a, jitgrad.layout):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: Proxy) -> bool:
        """``bool(proxy)``: control flow on a traced value cannot be recorded."""
        raise TraceError("symbolically traced variables cannot be used as inputs to control "
                         "flow")

    def iter(self, obj: Proxy) -> Iterator:
        """``iter(proxy)``: iterating a traced value cannot be recorded."""
        raise TraceError(
            "Proxy object cannot be iterated. This can be attempted when the Proxy is used in "
            "a loop or as a *args or **kwargs function argument. See the torch.fx docs on "
            "pytorch.org for a more detailed explanation of what types of control flow can be "
            "traced, and check out the Proxy docstring for help troubleshooting Proxy "
            "iteration errors")

    def keys(self, obj: Proxy) -> Any:
        """``proxy.keys()`` (``**proxy``): recorded as a ``keys`` method call."""
        return Attribute(obj, "keys")()


class Proxy:
    """A traced value (``torch.fx.Proxy``): ``proxy.node`` is the node that computes it.
    Operators, attribute reads and method calls on it record nodes."""

    def __init__(self, node: Node, tracer: TracerBase | None = None) -> None:
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> Attribute:
        if k.startswith("__") and k.endswith("__"):  # (copy/pickle probing: not a record)
            raise AttributeError(k)
        return Attribute(self, k)

    def __getstate__(self) -> dict:
        return self.__dict__

    def __setstate__(self, d: dict) -> None:
        self.__dict__ = d

    def __deepcopy__(self, memo: dict) -> Proxy:
        import copy

        new_dict = {k: copy.deepcopy(v, memo) for k, v in self.__dict__.items()}
        new_proxy = Proxy.__new__(Proxy)
        new_proxy.__dict__ = new_dict
        return new_proxy

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self, *args), kwargs)

    def __iter__(self) -> Iterator[Proxy]:
        frame = inspect.currentframe()
        assert frame is not None and frame.f_back is not None
        calling_frame = frame.f_back
        inst_list = list(dis.get_instructions(calling_frame.f_code))
        if sys.version_info >= (3, 11):
            from bisect import bisect_left

            inst_idx = bisect_left(inst_list, calling_frame.f_lasti, key=lambda x: x.offset)
        else:
            inst_idx = calling_frame.f_lasti // 2
        inst = inst_list[inst_idx]
        if inst.opname == "UNPACK_SEQUENCE":  # (a, b = proxy: its items, one by one)
            return (self[i] for i in range(inst.argval))  # type: ignore[index]
        return self.tracer.iter(self)

    def __abs__(self) -> Proxy:
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def keys(self) -> Any:
        """``proxy.keys()``."""
        return self.tracer.keys(self)

    @classmethod
    def __torch_function__(cls, orig_method: Callable, types: Any, args: Any = None,
                           kwargs: Any = None) -> Proxy:
        """A jitgrad function or Tensor method called on proxies outside ``symbolic_trace``
        (whose patched functions record directly), e.g. on a ``Proxy`` made from a raw node
        or a traced module called with one, records a node in the proxies' graph, as torch's
        ``Proxy.__torch_function__`` does."""
        from ..overrides import is_tensor_method_or_property

        args = args if args else ()
        kwargs = kwargs if kwargs else {}
        tracers: dict = {}

        def find_tracer(a: Any) -> None:
            if isinstance(a, cls):
                tracers[a.tracer] = None

        map_aggregate(args, find_tracer)
        map_aggregate(kwargs, find_tracer)
        if len(tracers) > 1:
            raise RuntimeError(f"Found multiple different tracers {list(tracers.keys())} while "
                               f"trying to trace operations {orig_method}")
        tracer = next(iter(tracers))
        if is_tensor_method_or_property(orig_method):
            return tracer.create_proxy("call_method", orig_method.__name__, args, kwargs)
        return tracer.create_proxy("call_function", orig_method, args, kwargs)

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call torch.fx.wrap('len') at "
                           "module scope")


class Attribute(Proxy):
    """``proxy.name``: a method call when called, else (on first use as a value) a
    ``getattr`` node."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:  # type: ignore[override]
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root, *args), kwargs)


class GraphAppendingTracer(TracerBase):
    """A tracer that appends to an existing graph (for proxies made from its nodes)."""

    def __init__(self, graph: Graph) -> None:
        from .._torch_function import activate

        super().__init__()
        self.graph = graph
        # (its proxies record jitgrad's functions through ``Proxy.__torch_function__``, as
        # torch's do: the protocol is made live now, or a function's first sight of a proxy
        # would reach its eager path; symbolic_trace's own tracer records through its patched
        # functions and leaves the protocol off)
        activate()
        self.scope = None
        self.module_stack = {}
        self.node_name_to_scope = {}


def _define_magic(method: str) -> None:
    def impl(*args: Any, **kwargs: Any) -> Proxy:
        tracer = args[0].tracer
        target = getattr(operator, method)
        return tracer.create_proxy("call_function", target, args, kwargs)

    impl.__name__ = method
    as_magic = f'__{method.strip("_")}__'
    setattr(Proxy, as_magic, impl)


def _define_reflectable(orig_method_name: str) -> None:
    method_name = f'__r{orig_method_name.strip("_")}__'

    def impl(self: Proxy, rhs: Any) -> Proxy:
        target = getattr(operator, orig_method_name)
        return self.tracer.create_proxy("call_function", target, (rhs, self), {})

    impl.__name__ = method_name
    impl.__qualname__ = method_name
    setattr(Proxy, method_name, impl)


for _method in magic_methods:
    _define_magic(_method)
for _orig in reflectable_magic_methods:
    _define_reflectable(_orig)


def _find_proxy(*objects_to_search: Any) -> Proxy | None:
    """The first proxy among ``objects_to_search`` (through containers), or None."""
    found: list[Proxy] = []

    def find(x: Any) -> None:
        if not found and isinstance(x, Proxy):
            found.append(x)

    map_aggregate(objects_to_search, find)
    return found[0] if found else None
