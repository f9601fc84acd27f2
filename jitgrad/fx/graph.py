"""``torch.fx.Graph``: a doubly linked list of ``Node``s (inputs, calls, output) with an
insertion point, surgery (erase, copy, dead code elimination), a checker (``lint``) and the
Python code ``GraphModule`` runs."""

from __future__ import annotations

import copy
import inspect
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from ._codegen import PythonCode, _Namespace, _snake_case, gen_python_code
from .node import Argument, Node, Target, _legal_ops, _public_name, map_arg


class _NodeList:
    """The nodes of a graph in order (``graph.nodes``), or in reverse."""

    def __init__(self, graph: Graph, direction: str = "_next") -> None:
        self.graph = graph
        self.direction = direction

    def __len__(self) -> int:
        return self.graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self.graph._root
        cur = getattr(root, self.direction)
        while cur is not root:
            nxt = getattr(cur, self.direction)  # (the loop body may erase cur)
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self) -> Iterator[Node]:
        return iter(_NodeList(self.graph, "_prev" if self.direction == "_next" else "_next"))


class _InsertPoint:
    def __init__(self, graph: Graph, new_insert: Callable[[Node], None]) -> None:
        self.graph = graph
        self.orig_insert, graph._insert = graph._insert, new_insert

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        self.graph._insert = self.orig_insert


class Graph:
    """The intermediate representation of torch.fx (``torch.fx.Graph``): a list of nodes;
    ``placeholder``/``call_function``/... append at the insertion point (the end, unless
    ``inserting_before``/``inserting_after`` moved it)."""

    def __init__(self, owning_module: Any = None, tracer_cls: type | None = None,
                 tracer_extras: dict[str, Any] | None = None) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._insert = self._root.prepend
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras

    @property
    def owning_module(self) -> Any:
        """The ``GraphModule`` this graph belongs to (None for a free graph)."""
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod: Any) -> None:
        self._owning_module = mod

    @property
    def nodes(self) -> _NodeList:
        """The nodes, in order (``len`` and ``reversed`` work)."""
        return _NodeList(self)

    def find_nodes(self, *, op: str, target: Target | None = None,
                   sort: bool = True) -> list[Node]:
        """The nodes with this ``op`` (and ``target``, when given), in graph order."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # ------------------------------------------------------------------ creation
    def create_node(self, op: str, target: Target, args: tuple[Argument, ...] | None = None,
                    kwargs: dict[str, Argument] | None = None, name: str | None = None,
                    type_expr: Any | None = None) -> Node:
        """Creates a node and inserts it at the insertion point."""
        if op not in _legal_ops or op == "root":
            raise AssertionError(f"op '{op}' is not in _legal_ops")
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        # (a function that records while a trace stands in for it: the node calls the function)
        target = getattr(target, "__fx_original__", target)
        if not isinstance(args, tuple):
            raise AssertionError(f"args must be a tuple, got {type(args)}")
        if not isinstance(kwargs, dict):
            raise AssertionError(f"kwargs must be a dict, got {type(kwargs)}")
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._graph_namespace.associate_name_with_obj(name, n)
        self._insert(n)
        self._len += 1
        return n

    def placeholder(self, name: str, type_expr: Any | None = None,
                    default_value: Any = inspect.Signature.empty) -> Node:
        """An input named ``name`` (with ``default_value`` when the caller may omit it)."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any | None = None) -> Node:
        """Fetches ``qualified_name`` (``"sub.weight"``) from the owning module."""
        if self.owning_module is not None \
                and _attr_missing(self.owning_module, qualified_name):
            warnings.warn("Attempted to insert a get_attr Node with no underlying reference "
                          "in the owning GraphModule! Call GraphModule.add_submodule to add "
                          "the necessary submodule, GraphModule.add_parameter to add the "
                          "necessary Parameter, or nn.Module.register_buffer to add the "
                          "necessary buffer", stacklevel=2)
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple[Argument, ...] | None = None,
                    kwargs: dict[str, Argument] | None = None,
                    type_expr: Any | None = None) -> Node:
        """Calls the owning module's submodule ``module_name``."""
        if self.owning_module is not None and _attr_missing(self.owning_module, module_name):
            warnings.warn("Attempted to insert a call_module Node with no underlying "
                          "reference in the owning GraphModule! Call "
                          "GraphModule.add_submodule to add the necessary submodule",
                          stacklevel=2)
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple[Argument, ...] | None = None,
                    kwargs: dict[str, Argument] | None = None,
                    type_expr: Any | None = None) -> Node:
        """Calls ``args[0].method_name(*args[1:], **kwargs)``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable[..., Any],
                      args: tuple[Argument, ...] | None = None,
                      kwargs: dict[str, Argument] | None = None,
                      type_expr: Any | None = None, name: str | None = None) -> Node:
        """Calls ``the_function(*args, **kwargs)``."""
        return self.create_node("call_function", the_function, args, kwargs, name=name,
                                type_expr=type_expr)

    def output(self, result: Argument, type_expr: Any | None = None) -> Node:
        """The graph's return value."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def _target_to_str(self, target: Target | None) -> str:
        if callable(target):
            public = _public_name(target)  # (zeros_like, not its factory's ``make``)
            op = public.rsplit(".", 1)[1] if public else target.__name__
        else:
            op = target
            if op.startswith("__") and op.endswith("__"):
                op = op[2:-2]
        return _snake_case(op)

    # ------------------------------------------------------------------ surgery
    def erase_node(self, to_erase: Node) -> None:
        """Removes a node that has no users."""
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            warnings.warn(f"erase_node({to_erase}) on an already erased node", stacklevel=2)
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase.args = ()
        to_erase.kwargs = {}

    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        """A context manager: nodes created inside go right before ``n`` (the graph's start
        when ``n`` is None)."""
        if n is None:
            return self.inserting_after(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert before is not in graph.")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        """A context manager: nodes created inside go right after ``n`` (in creation order;
        the graph's end when ``n`` is None)."""
        if n is None:
            return self.inserting_before(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert after is not in graph.")
        return _InsertPoint(self, n.append)

    def node_copy(self, node: Node,
                  arg_transform: Callable[[Node], Argument] = lambda x: x) -> Node:
        """Copies ``node`` (from any graph) into this one; ``arg_transform`` maps the nodes
        among its arguments to this graph's values."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result_node = self.create_node(node.op, node.target, args, kwargs, node.name,
                                       node.type)
        result_node.meta = copy.copy(node.meta)
        return result_node

    def graph_copy(self, g: Graph, val_map: dict[Node, Node],
                   return_output_node: bool = False) -> Any:
        """Appends copies of ``g``'s nodes (its output excepted) to this graph; ``val_map``
        (filled in) maps ``g``'s nodes to their copies. Returns the value ``g`` returns
        (mapped), or None when ``g`` has no output."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return rv if not return_output_node else (rv, node)
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo: dict | None = None) -> Graph:
        memo = memo if memo else {}
        g = Graph(tracer_cls=self._tracer_cls)
        output_vals = g.graph_copy(self, val_map=memo, return_output_node=True)
        if output_vals is not None:
            output_val, old_output_node = output_vals
            new_output_node = g.output(output_val, type_expr=getattr(old_output_node, "type",
                                                                     None))
            new_output_node.meta = copy.copy(old_output_node.meta)
        return g

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_owning_module"] = None
        state["_insert"] = None  # (bound to a node: restored as the end of the graph)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._insert = self._root.prepend

    def eliminate_dead_code(self,
                            is_impure_node: Callable[[Node], bool] | None = None) -> bool:
        """Erases the nodes nobody uses that have no side effect (``Node.is_impure``, or
        ``is_impure_node``); returns whether the graph changed."""
        self.lint()
        changed = False
        for node in reversed(self.nodes):
            impure = is_impure_node(node) if is_impure_node is not None else node.is_impure()
            if not impure and len(node.users) == 0:
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Checks that nodes belong to this graph, are in topological order and have unique
        names, and that ``get_attr``/``call_module`` targets exist in the owning module."""
        seen_names: set[str] = set()
        seen_values: set[Node] = set()

        def check_arg(arg: Node, n: Node | None = None) -> None:
            context_str = f" of Node '{n}' " if n else " "
            if arg.graph is not self:
                raise RuntimeError(
                    f"Argument '{arg}'{context_str}does not belong to this Graph, but was used "
                    "as an argument! If you are copying nodes from another graph, make sure to "
                    f"use ``arg_transform`` on node_copy() to remap values\n{self}")
            if arg not in seen_values:
                raise RuntimeError(
                    f"Argument '{arg}'{context_str}was used before it has been defined! "
                    f"Please check that Nodes in the graph are topologically ordered\n{self}")

        for node in self.nodes:
            if node.op not in _legal_ops:
                raise RuntimeError(f"Node {node} had unknown opcode {node.op}!")
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            for arg in node._input_nodes:
                check_arg(arg, node)
            seen_values.add(node)
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)
        if self.owning_module is None:
            return
        import jitgrad

        for node in self.nodes:
            if node.op in ("get_attr", "call_module"):
                atoms = node.target.split(".")
                m_itr = self.owning_module
                for i, atom in enumerate(atoms):
                    new_m_itr = getattr(m_itr, atom, None)
                    seen_qualname = ".".join(atoms[:i])
                    if new_m_itr is None:
                        raise RuntimeError(
                            f"Node {node} target {node.target} references nonexistent "
                            f"attribute {atom} of {seen_qualname}")
                    if node.op == "call_module" \
                            and not isinstance(new_m_itr, jitgrad.nn.Module):
                        raise RuntimeError(
                            f"Node {node} target {node.target} {atom} of {seen_qualname} "
                            "does not reference an nn.Module")
                    m_itr = new_m_itr

    # ------------------------------------------------------------------ printing
    def python_code(self, root_module: str, *, verbose: bool = False) -> PythonCode:
        """The source of ``forward(self, ...)`` for this graph (``root_module`` names the
        module that holds the attributes and submodules: ``"self"``)."""
        return gen_python_code(self, root_module, verbose=verbose)

    def __str__(self) -> str:
        placeholder_names: list[str] = []
        maybe_return_typename = [""]
        node_strs = [node.format_node(placeholder_names) for node in self.nodes]
        s = f"graph({', '.join(placeholder_names)}){maybe_return_typename[0]}:"
        for node_str in node_strs:
            if node_str:
                s += "\n    " + node_str
        return s

    def print_tabular(self) -> None:
        """Prints the nodes as a table (needs the ``tabulate`` package, as torch's does)."""
        try:
            from tabulate import tabulate
        except ImportError:
            print("`print_tabular` relies on the library `tabulate`, which could not be found "
                  "on this machine. Run `pip install tabulate` to install the library.")
            raise
        node_specs = [[n.op, n.name, n.target, n.args, n.kwargs] for n in self.nodes]
        print(tabulate(node_specs, headers=["opcode", "name", "target", "args", "kwargs"]))


def _attr_missing(module: Any, qualified_name: str) -> bool:
    cur = module
    for atom in qualified_name.split("."):
        if not hasattr(cur, atom):
            return True
        cur = getattr(cur, atom)
    return False
