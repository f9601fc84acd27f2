"""Operator schemas: inferred from a function's type hints (``infer_schema``, as torch's, with
torch's error texts) or parsed from a schema string (the argument names, which are
keyword-only, and which are written to: ``Tensor(a0!) x``)."""

from __future__ import annotations

import ast
import collections.abc
import inspect
import typing
from types import GenericAlias
from typing import Any

import jitgrad
from jitgrad import Tensor

__all__ = ["infer_schema", "parse_schema_args", "signature_of"]

Number = int | float | bool  # (torch.types.Number)
UNKNOWN_MUTATES = "unknown"


def _derived_types(base: Any, cpp: str, list_base: bool, optional_base_list: bool,
                   optional_list_base: bool) -> list:
    out: list = [(base, cpp), (typing.Optional[base], f"{cpp}?")]  # noqa: UP045

    def seqs(t: Any) -> tuple:
        return (typing.Sequence[t], typing.List[t],  # noqa: UP006
                GenericAlias(collections.abc.Sequence, (t,)), GenericAlias(list, (t,)))

    if list_base:
        out.extend((s, f"{cpp}[]") for s in seqs(base))
    if optional_base_list:
        out.extend((s, f"{cpp}?[]") for s in seqs(typing.Optional[base]))  # noqa: UP045
    if optional_list_base:
        out.extend((typing.Optional[s], f"{cpp}[]?") for s in seqs(base))  # noqa: UP045
    return out


def _supported_param_types() -> dict:
    data = [(Tensor, "Tensor", True, True, False), (int, "SymInt", True, False, True),
            (float, "float", True, False, True), (bool, "bool", True, False, True),
            (str, "str", False, False, False), (Number, "Scalar", True, False, False),
            (jitgrad.dtype, "ScalarType", False, False, False),
            (jitgrad.device, "Device", False, False, False)]
    out: dict = {}
    for line in data:
        out.update(_derived_types(*line))
    return out


SUPPORTED_PARAM_TYPES = _supported_param_types()
SUPPORTED_RETURN_TYPES = {Tensor: "Tensor", typing.List[Tensor]: "Tensor[]",  # noqa: UP006
                          list[Tensor]: "Tensor[]", int: "SymInt", float: "float",
                          bool: "bool", Number: "Scalar"}


def _tuple_to_list(tuple_type: Any) -> Any:
    args = typing.get_args(tuple_type)
    if tuple_type is typing.Tuple or tuple_type is tuple or not args:  # noqa: UP006
        return list
    if len(args) == 1 or (len(args) == 2 and args[1] is Ellipsis):
        return list[args[0]]
    return list[typing.Union[tuple(args)]]  # noqa: UP007


def infer_schema(prototype_function: Any, /, *, mutates_args: Any,
                 op_name: str | None = None) -> str:
    """The operator schema of ``prototype_function`` from its type hints, as torch's.

    Args:
        prototype_function: the function (every parameter annotated; positional-or-keyword
            or keyword-only).
        mutates_args: the names of the arguments it writes to, or ``"unknown"`` (every
            tensor argument).
        op_name: the name to put before the arguments.

    Returns:
        The schema, e.g. ``"(Tensor x, SymInt n=3, *, Tensor(a2!) out) -> Tensor"``.

    Raises:
        ValueError: an unsupported parameter or annotation, or a bad ``mutates_args``
            (torch's texts).
    """
    sig = inspect.signature(prototype_function)
    pf_globals = getattr(prototype_function, "__globals__", {})
    if type(mutates_args) is not str:
        mutates_args = tuple(mutates_args)

    def error_fn(what: str) -> typing.NoReturn:
        raise ValueError(f"infer_schema(func): {what} Got func with signature {sig})")

    def unstringify(ty: Any) -> Any:
        if isinstance(ty, str):
            try:
                return eval(ty, pf_globals)  # noqa: S307 - a type annotation, as torch does
            except NameError as e:
                error_fn(f"Unsupported type annotation {ty}. It is not a type. ({e}). If you "
                         "are using 'from __future__ import annotations', note that "
                         "annotations are evaluated lazily as strings; make sure all types "
                         "referenced in annotations are importable at module scope, not only "
                         "inside a local function.")
            except Exception as e:  # noqa: BLE001
                error_fn(f"Unsupported type annotation {ty}. It is not a type. "
                         f"({type(e).__name__}: {e})")
        origin = typing.get_origin(ty)
        if origin:
            args = typing.get_args(ty)
            new = tuple(unstringify(a) for a in args)
            if any(a is not b for a, b in zip(args, new)):
                return GenericAlias(origin, new)
        return ty

    params = []
    seen_args = set()
    saw_kwarg_only = False
    for idx, (name, param) in enumerate(sig.parameters.items()):
        if param.kind not in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                              inspect.Parameter.KEYWORD_ONLY):
            error_fn("We do not support positional-only args, varargs, or varkwargs.")
        if param.kind == inspect.Parameter.KEYWORD_ONLY and not saw_kwarg_only:
            params.append("*")
            saw_kwarg_only = True
        if param.annotation is inspect.Parameter.empty:
            error_fn(f"Parameter {name} must have a type annotation.")
        annotation_type = unstringify(param.annotation)
        if annotation_type not in SUPPORTED_PARAM_TYPES:
            if getattr(annotation_type, "__origin__", None) is tuple:
                list_type = _tuple_to_list(annotation_type)
                example = "\n\n"
                if list_type in SUPPORTED_PARAM_TYPES:
                    example = f"For example, {list_type}.\n\n"
                error_fn(f"Parameter {name} has unsupported type {param.annotation}. We do not "
                         "support Tuple inputs in schema. As a workaround, please try to use "
                         f"List instead. {example}"
                         f"The valid types are: {SUPPORTED_PARAM_TYPES.keys()}.")
            error_fn(f"Parameter {name} has unsupported type {param.annotation}. "
                     f"The valid types are: {SUPPORTED_PARAM_TYPES.keys()}.")
        schema_type = SUPPORTED_PARAM_TYPES[annotation_type]
        if type(mutates_args) is str:
            if mutates_args != UNKNOWN_MUTATES:
                raise ValueError("mutates_args must either be a sequence of the names of the "
                                 "arguments that are mutated or the string 'unknown'. ")
            if schema_type.startswith("Tensor"):
                schema_type = f"Tensor(a{idx}!){schema_type[len('Tensor'):]}"
        elif name in mutates_args:
            if not schema_type.startswith("Tensor"):
                error_fn(f"Parameter {name} is in mutable_args but only Tensors or collections "
                         "of Tensors can be mutated")
            schema_type = f"Tensor(a{idx}!){schema_type[len('Tensor'):]}"
        seen_args.add(name)
        if param.default is inspect.Parameter.empty:
            params.append(f"{schema_type} {name}")
        else:
            d = param.default
            if d is None or isinstance(d, (int, float, bool)):
                default_repr = str(d)
            elif isinstance(d, (str, jitgrad.device)):
                default_repr = f'"{d}"'
            elif isinstance(d, jitgrad.dtype):
                default_repr = str(d)[len("jitgrad."):] if str(d).startswith("jitgrad.") \
                    else str(d)[len("torch."):]
            else:
                error_fn(f"Parameter {name} has an unsupported default value type {type(d)}. "
                         "Please file an issue on GitHub so we can prioritize this.")
            params.append(f"{schema_type} {name}={default_repr}")
    if mutates_args != UNKNOWN_MUTATES:
        not_seen = set(mutates_args) - seen_args
        if not_seen:
            error_fn(f"{not_seen} in mutates_args were not found in the custom op's signature. "
                     "mutates_args should contain the names of all args that the custom op "
                     "mutates, or just the string 'unknown' if you don't know.")
    ret = _parse_return(unstringify(sig.return_annotation), error_fn)
    if op_name is not None:
        return f"{op_name}({', '.join(params)}) -> {ret}"
    return f"({', '.join(params)}) -> {ret}"


def _parse_return(annotation: Any, error_fn: Any) -> str:
    if annotation is None:
        return "()"
    if annotation is inspect.Parameter.empty:
        error_fn("No return type annotation was provided. Please add one.")
    if typing.get_origin(annotation) is not tuple:
        if annotation not in SUPPORTED_RETURN_TYPES:
            error_fn(f"Return has unsupported type {annotation}. "
                     f"The valid types are: {SUPPORTED_RETURN_TYPES}.")
        return SUPPORTED_RETURN_TYPES[annotation]
    args = typing.get_args(annotation)
    for arg in args:
        if arg not in SUPPORTED_RETURN_TYPES:
            error_fn(f"Return has unsupported type {annotation}. "
                     f"The valid types are: {SUPPORTED_RETURN_TYPES}.")
    out = ", ".join(SUPPORTED_RETURN_TYPES[a] for a in args)
    if len(args) == 1:
        out = "(" + out + ")"
    return "(" + out + ")"


def _split_top(s: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


_NO_DEFAULT = inspect.Parameter.empty


def _default(text: str) -> Any:
    text = text.strip()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return getattr(jitgrad, text, text)  # (a dtype: ``ScalarType dt=float32``)


def parse_schema_args(schema: str) -> list[tuple[str, str, bool, bool, Any]]:
    """``[(name, type, keyword_only, written, default)]`` of a schema string's arguments
    (``"(Tensor(a0!) x, *, float s=1.0) -> ()"``, with or without an op name before it;
    ``inspect.Parameter.empty`` for no default).

    Raises:
        RuntimeError: the string is not a schema.
    """
    try:
        start = schema.index("(")
        depth, end = 0, None
        for i in range(start, len(schema)):
            depth += {"(": 1, ")": -1}.get(schema[i], 0)
            if depth == 0:
                end = i
                break
        if end is None or "->" not in schema[end:]:
            raise ValueError
    except ValueError:
        raise RuntimeError(f"Expected a schema like '(Tensor x) -> Tensor', got: {schema}") \
            from None
    out, kw_only = [], False
    for part in _split_top(schema[start + 1:end]):
        if part == "*":
            kw_only = True
            continue
        decl, eq, default = part.partition("=")
        typ, _, name = decl.strip().rpartition(" ")
        if not typ or not name.isidentifier():
            raise RuntimeError(f"Expected a schema like '(Tensor x) -> Tensor', got: {schema}")
        out.append((name, typ, kw_only, "!" in typ, _default(default) if eq else _NO_DEFAULT))
    return out


def signature_of(args: list) -> inspect.Signature:
    """A Python signature for a schema's arguments (from :func:`parse_schema_args`)."""
    return inspect.Signature([inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY if kw else inspect.Parameter.POSITIONAL_OR_KEYWORD,
        default=default) for name, _, kw, _, default in args])
