"""``jitgrad.library``: Python custom operators, as ``torch.library``.

``custom_op("mylib::name", mutates_args=...)`` makes a type-annotated function an operator
(reachable as ``jitgrad.ops.mylib.name``) with kernels per device, an autograd formula
(``register_autograd``, built on ``jitgrad.autograd.Function``) and a fake function
(``register_fake``); ``opcheck`` tests a registration. See ``_custom_ops`` for how calls run
(eagerly, under autograd, and under ``jitgrad.jit``). ``Library``/``define``/``impl`` declare an
operator by its schema string and give it kernels per dispatch key (``_library``). Not
provided: ``register_vmap``, ``register_torch_dispatch``, ``register_autocast``, tags.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ._custom_ops import OPDEFS, CustomOpDef, OpOverload, OpOverloadPacket
from ._library import Library, _check_namespace, define, fallthrough_kernel, impl
from ._opcheck import OpCheckError, opcheck
from ._schema import infer_schema

__all__ = ["custom_op", "CustomOpDef", "register_autograd", "register_fake", "register_kernel",
           "infer_schema", "opcheck", "OpCheckError", "Library", "define", "impl",
           "fallthrough_kernel"]


def custom_op(name: str, fn: Callable | None = None, /, *, mutates_args: str | Iterable[str],
              device_types: str | Sequence[str] | None = None,
              schema: str | None = None) -> Any:
    """Wrap a function into a custom operator (usable as a decorator).

    Args:
        name: ``"namespace::opname"``; the op is also ``jitgrad.ops.namespace.opname``.
        fn: the function (every parameter and the return type annotated: Tensor, int, float,
            bool, str, dtype, device, lists and optionals of these; see ``infer_schema``).
        mutates_args: the names of the arguments the function writes to (must be accurate),
            or ``"unknown"`` (all tensor arguments).
        device_types: the device type(s) ``fn`` is the kernel for (None: all).
        schema: the schema string, instead of inferring it from the annotations.

    Returns:
        A :class:`CustomOpDef` (or a decorator making one).

    Raises:
        ValueError: a bad name, schema or ``mutates_args`` (torch's texts), or a namespace
            that is one of ``jitgrad.ops``'s own names.
    """
    def inner(fn: Callable) -> CustomOpDef:
        schema_str = infer_schema(fn, mutates_args=mutates_args) if schema is None else schema
        namespace, opname = name.split("::")
        _check_namespace(namespace)
        result = CustomOpDef(namespace, opname, schema_str, fn)
        if schema is not None:
            expected = set(result._mutated)
            if expected != set(mutates_args):
                raise ValueError(
                    f"Attempted to create a custom op with `mutates_args={mutates_args}` and "
                    f"`schema={schema}. The schema suggests that the op mutates {expected}"
                    "which is different from what was provided to us in `mutates_args`. "
                    "Please make these consistent.")
        result.register_kernel(device_types)(fn)
        return result

    return inner if fn is None else inner(fn)


def _opdef(op: Any, what: str) -> CustomOpDef:
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, OpOverload):
        return op._opdef
    if isinstance(op, str) and op in OPDEFS:
        return OPDEFS[op]
    raise ValueError(f"{what}({op!r}): expected a custom op (made by jitgrad.library.custom_op) "
                     "or its \"namespace::name\"; jitgrad defines no other operators through "
                     "torch.library.")


def register_kernel(op: Any, device_types: str | Sequence[str] | None,
                    func: Callable | None = None, /, *, lib: Any = None) -> Any:
    """Register ``func`` as ``op``'s kernel for ``device_types`` (a decorator without
    ``func``); ``op`` is a custom op or its ``"namespace::name"``."""
    return _opdef(op, "register_kernel").register_kernel(device_types, func)


def register_fake(op: Any, func: Callable | None = None, /, *, lib: Any = None,
                  _stacklevel: int = 1) -> Any:
    """Register ``op``'s fake (meta) function (a decorator without ``func``)."""
    opdef = _opdef(op, "register_fake")
    if func is None:
        return opdef.register_fake
    return opdef.register_fake(func)


def register_autograd(op: Any, backward: Callable, /, *, setup_context: Callable | None = None,
                      lib: Any = None) -> None:
    """Register ``op``'s backward formula (see :meth:`CustomOpDef.register_autograd`)."""
    _opdef(op, "register_autograd").register_autograd(backward, setup_context=setup_context)


__all__ += ["OpOverload", "OpOverloadPacket"]
