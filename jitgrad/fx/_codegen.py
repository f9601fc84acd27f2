"""Python source for an fx ``Graph`` (``Graph.python_code``): the ``forward`` a
``GraphModule`` runs, printed as torch.fx prints it, with names reaching jitgrad's public
functions (``jitgrad.sum``) and every other object through the code's globals."""

from __future__ import annotations

import builtins
import keyword
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .node import Node, _get_qualified_name, _type_repr

if TYPE_CHECKING:
    from .graph import Graph

reflectable_magic_methods = {
    "add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}",
    "truediv": "{} / {}", "div": "{} / {}", "mod": "{} % {}", "pow": "{} ** {}",
    "lshift": "{} << {}", "rshift": "{} >> {}", "and_": "{} & {}", "or_": "{} | {}",
    "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}",
}

magic_methods = {
    "eq": "{} == {}", "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}", "le": "{} <= {}",
    "ge": "{} >= {}", "pos": "+{}", "neg": "-{}", "invert": "~{}",
    **reflectable_magic_methods,
}

inplace_methods = {
    "iadd": "{} += {}", "iand": "{} &= {}", "ifloordiv": "{} //= {}", "ilshift": "{} <<= {}",
    "imod": "{} %= {}", "imul": "{} *= {}", "imatmul": "{} @= {}", "ior": "{} |= {}",
    "ipow": "{} **= {}", "irshift": "{} >>= {}", "isub": "{} -= {}", "itruediv": "{} /= {}",
    "ixor": "{} ^= {}", "setitem": "{}[{}] = {}",
}

dtype_abbrs = {
    "bfloat16": "bf16", "float64": "f64", "float32": "f32", "float16": "f16",
    "complex32": "c32", "complex64": "c64", "complex128": "c128", "int8": "i8",
    "int16": "i16", "int32": "i32", "int64": "i64", "bool": "b8", "uint8": "u8",
}

_illegal_char_regex = re.compile("[^0-9a-zA-Z_]+")
_name_regex = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")
_snake_case_sub = re.compile(r"(?<=[a-z])([A-Z])")

# names generated code must not shadow (a builtin only stays when the object is that builtin)
_illegal_names = {k: object() for k in keyword.kwlist}
_illegal_names.update(builtins.__dict__)


def _snake_case(s: str) -> str:
    """``mod.pascalCase`` -> ``mod.pascal_case``, ``ALL_CAPS`` -> ``all_caps``."""
    return _snake_case_sub.sub(r"_\1", s).lower()


class _Namespace:
    """Unique Python identifiers for a graph's values (and for its code's globals): each object
    gets one name, no two the same, none shadowing a builtin or keyword."""

    def __init__(self) -> None:
        self._obj_to_name: dict[int, str] = {}
        self._used_names: set[str] = set()
        self._base_count: dict[str, int] = {}

    def create_name(self, candidate: str, obj: object | None) -> str:
        """A unique name built from ``candidate`` (``sum`` -> ``sum_1``), tied to ``obj``."""
        if obj is not None and id(obj) in self._obj_to_name:
            return self._obj_to_name[id(obj)]
        match = _name_regex.match(candidate)
        if match is None:
            candidate = _illegal_char_regex.sub("_", candidate)
            if not candidate:
                candidate = "_unnamed"
            if candidate[0].isdigit():
                candidate = f"_{candidate}"
            match = _name_regex.match(candidate)
            assert match is not None
        base, num = match.group(1, 2)
        if num is None or candidate in self._used_names:
            num = self._base_count.get(base, 0)
            if _illegal_names.get(candidate, obj) is not obj:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num)
        while candidate in self._used_names:
            num += 1
            candidate = f"{base}_{num}"
        self._used_names.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[id(obj)] = candidate
        return candidate

    def associate_name_with_obj(self, name: str, obj: object) -> None:
        """Ties ``name`` (already created) to ``obj``."""
        self._obj_to_name.setdefault(id(obj), name)

    def _rename_object(self, obj: object, name: str) -> None:
        self._obj_to_name[id(obj)] = name
        self._used_names.add(name)


@dataclass
class PythonCode:
    """The source of a graph's ``forward`` and the globals it runs with
    (``torch.fx.graph.PythonCode``)."""

    src: str
    globals: dict[str, Any]
    _lineno_map: dict[int, int | None] | None = None


def _format_target(base: str, target: str) -> str:
    r = base
    for e in target.split("."):
        r = f'getattr({r}, "{e}")' if not e.isidentifier() else f"{r}.{e}"
    return r


def _is_from_jitgrad(obj: Any) -> bool:
    module = getattr(obj, "__module__", None)
    return isinstance(module, str) and (module == "jitgrad" or module.startswith("jitgrad."))


def _resolves(dotted: str, obj: Any) -> bool:
    """Whether ``dotted`` (``jitgrad.nn.functional.relu``) reaches ``obj`` from ``jitgrad``."""
    import jitgrad

    parts = dotted.split(".")
    if parts[0] != "jitgrad" or len(parts) < 2:
        return False
    cur: Any = jitgrad
    for p in parts[1:]:
        cur = getattr(cur, p, None)
        if cur is None:
            return False
    return cur is obj


def _custom_builtins() -> dict[str, Any]:
    import jitgrad

    return {"inf": math.inf, "nan": math.nan, "NoneType": type(None), "jitgrad": jitgrad,
            "device": jitgrad.device}


def gen_python_code(graph: Graph, root_module: str, *, verbose: bool = False) -> PythonCode:
    """The ``forward(self, ...)`` source of ``graph`` (torch.fx's ``CodeGen._gen_python_code``:
    values are freed after their last use; ``verbose`` adds the stack-trace comment and the
    ``tensor_meta`` annotations ``print_readable`` shows)."""
    namespace = graph._graph_namespace.__class__()
    for node in graph.nodes:  # (the nodes keep their names; globals avoid them)
        namespace.create_name(node.name, node)
    free_vars: list[str] = []
    body: list[str] = []
    globals_: dict[str, Any] = {}
    wrapped_fns: dict[str, None] = {}
    maybe_return_annotation = [""]

    def add_global(name_hint: str, obj: Any) -> str:
        if _is_from_jitgrad(obj) and _resolves(name_hint, obj):
            return name_hint
        global_name = namespace.create_name(name_hint, obj)
        if global_name in globals_:
            assert globals_[global_name] is obj, \
                f"Global name {global_name} already assigned to different object"
            return global_name
        globals_[global_name] = obj
        return global_name

    for name, obj in _custom_builtins().items():
        add_global(name, obj)

    def type_repr(o: Any) -> str:
        return add_global(_type_repr(o), o)

    def _get_repr(arg: Any) -> str:
        import jitgrad

        if isinstance(arg, Node):
            return repr(arg)
        if isinstance(arg, tuple) and hasattr(arg, "_fields"):
            global_name = add_global(_get_qualified_name(type(arg)), type(arg))
            return f"{global_name}{repr(tuple(arg))}"
        if isinstance(arg, jitgrad.Tensor):
            dtype = str(arg.dtype).split(".")[-1]
            return f"jitgrad.Tensor(size={list(arg.size())}, dtype={dtype})"
        if isinstance(arg, tuple):
            if len(arg) == 1:
                return f"({_get_repr(arg[0])},)"
            return "(" + ", ".join(_get_repr(a) for a in arg) + ")"
        if isinstance(arg, list):
            return "[" + ", ".join(_get_repr(a) for a in arg) + "]"
        if isinstance(arg, dict):
            return "{" + ", ".join(f"{k!r}: {_get_repr(v)}" for k, v in arg.items()) + "}"
        if isinstance(arg, slice):
            return (f"slice({_get_repr(arg.start)}, {_get_repr(arg.stop)}, "
                    f"{_get_repr(arg.step)})")
        return repr(arg)

    def _format_args(args: tuple, kwargs: dict) -> str:
        res = [_get_repr(a) for a in args]
        res.extend([f"{k} = {_get_repr(v)}" for k, v in kwargs.items()])
        return ", ".join(res)

    nodes = list(graph.nodes)
    node_to_last_use: dict[Node, Node] = {}
    user_to_last_uses: dict[Node, list[Node]] = {}
    for node in reversed(nodes):
        for input_node in node._input_nodes:
            if input_node not in node_to_last_use:
                node_to_last_use[input_node] = node
                user_to_last_uses.setdefault(node, []).append(input_node)

    def delete_unused_values(user: Node) -> None:
        if user.op == "placeholder":
            return
        if user.op == "output":
            body.append("\n")
            return
        nodes_to_delete = user_to_last_uses.get(user, [])
        if len(user.users) == 0:
            nodes_to_delete.append(user)
        if nodes_to_delete:
            body.append(f";  {' = '.join([repr(n) for n in nodes_to_delete] + ['None'])}\n")
        else:
            body.append("\n")

    prev_summary = [None]

    def tensor_annotation(node: Node) -> str | None:
        meta = node.meta.get("tensor_meta")
        if meta is None or not hasattr(meta, "shape"):
            return None
        dt = str(meta.dtype).split(".")[-1]
        return f'"{dtype_abbrs.get(dt, dt)}[{", ".join(str(s) for s in meta.shape)}]"'

    def emit_node(node: Node) -> None:
        ann = "" if node.type is None else f" : {type_repr(node.type)}"
        if verbose:
            if node.op not in ("placeholder", "output"):
                summary = "\n# No stacktrace found for following nodes\n"
                if summary != prev_summary[0]:
                    prev_summary[0] = summary
                    body.append(summary)
            t_ann = tensor_annotation(node)
            if t_ann is not None:
                ann = f": {t_ann}"
        if node.op == "placeholder":
            default = "" if not node.args else f" = {_get_repr(node.args[0])}"
            free_vars.append(f"{node.target}{ann}{default}")
            raw_name = node.target.replace("*", "")
            if raw_name != repr(node):
                body.append(f"{repr(node)} = {raw_name}\n")
            return
        if node.op == "call_method":
            body.append(f"{repr(node)}{ann} = "
                        f"{_format_target(_get_repr(node.args[0]), node.target)}"
                        f"({_format_args(node.args[1:], node.kwargs)})")
            return
        if node.op == "call_function":
            target = node.target
            if getattr(target, "__module__", "") == "_operator" \
                    and target.__name__ in magic_methods:
                body.append(f"{repr(node)}{ann} = "
                            + magic_methods[target.__name__].format(
                                *(_get_repr(a) for a in node.args)))
                return
            if getattr(target, "__module__", "") == "_operator" \
                    and target.__name__ in inplace_methods:
                body.append(inplace_methods[target.__name__].format(
                    *(_get_repr(a) for a in node.args))
                    + f";  {repr(node)}{ann} = {_get_repr(node.args[0])}")
                return
            global_name = add_global(_get_qualified_name(target), target)
            if global_name == "getattr" and len(node.args) == 2 \
                    and isinstance(node.args[1], str) and node.args[1].isidentifier():
                body.append(f"{repr(node)}{ann} = "
                            f"{_format_target(_get_repr(node.args[0]), node.args[1])}")
                return
            body.append(f"{repr(node)}{ann} = {global_name}"
                        f"({_format_args(node.args, node.kwargs)})")
            if node.meta.get("is_wrapped", False):
                wrapped_fns.setdefault(global_name)
            return
        if node.op == "call_module":
            body.append(f"{repr(node)}{ann} = {_format_target(root_module, node.target)}"
                        f"({_format_args(node.args, node.kwargs)})")
            return
        if node.op == "get_attr":
            body.append(f"{repr(node)}{ann} = {_format_target(root_module, node.target)}")
            return
        if node.op == "output":
            if node.type is not None:
                maybe_return_annotation[0] = f" -> {type_repr(node.type)}"
            body.append(f"return {_get_repr(node.args[0])}")
            return
        raise NotImplementedError(f"node: {node.op} {node.target}")

    for node in nodes:
        emit_node(node)
        delete_unused_values(node)
    if not body:
        body.append("pass\n")
    if wrapped_fns:
        from ._wrap import wrap

        wrap_name = "jitgrad.fx._symbolic_trace.wrap"  # (where torch's code reaches it)
        if not _resolves(wrap_name, wrap):
            wrap_name = add_global(_get_qualified_name(wrap), wrap)
        wrap_stmts = "\n".join(f'{wrap_name}("{name}")' for name in wrapped_fns)
    else:
        wrap_stmts = ""
    if not free_vars or free_vars[0] != "self":
        free_vars.insert(0, "self")
    prologue = f"def forward({', '.join(free_vars)}){maybe_return_annotation[0]}:"
    code = "".join(body).lstrip("\n")
    code = "\n".join("    " + line for line in code.split("\n"))
    return PythonCode(f"\n{wrap_stmts}\n\n{prologue}\n{code}", globals_)
