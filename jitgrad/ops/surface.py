"""The public surface, generated from declarations: ``jitgrad.*``, ``jitgrad.ops.*``, the
``Tensor`` methods and their in-place variants, and ``jitgrad.nn.functional.*``.

Two kinds of declarations feed it, both kept next to the code they expose:

* an op's ``public=`` field (``defop(..., public=Public("exp", method=True, inplace=True))``):
  the function is generated, ``exp(input) -> apply(EXP, input)``, with the declared argument
  names and keyword parameters (``params={"beta": 1.0}`` becomes ``beta=1.0``, passed to the
  op as a param);
* ``@public(...)`` on a plain Python function that wraps one or several ops or has a special
  signature (``add(input, other, *, alpha=1)``).

``install_*`` puts every declared name in its namespace; a name declared twice for one
namespace is an error (one op, one place).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ..dtypes import takes_python_types
from .registry import LANES, OPS, OpDef, Public, apply

# plain functions declared with @public, in declaration order
_FUNCTIONS: list[tuple[Callable, Public]] = []
_GENERATED: dict[tuple[OpDef, Callable | None], Callable] = {}


def public(names: Any = (), *, method: Any = (), inplace: Any = (),
           functional: Any = ()) -> Callable:
    """Declares a plain function public. See ``Public`` for the fields: ``method=True`` uses
    the function names as Tensor method names, ``inplace=True`` adds ``<first method>_``."""
    def register(fn: Callable) -> Callable:
        first = (names,) if isinstance(names, str) else names
        if first and "<locals>" in getattr(fn, "__qualname__", ""):  # (a factory's closure:
            fn.__name__ = fn.__qualname__ = first[0]  # Python's TypeErrors name the function)
        fn = takes_python_types(fn)  # (``dtype=float``, where fn has a dtype)
        _FUNCTIONS.append((fn, Public(names, method, inplace, functional)))
        return fn
    return register


def _operand(x: Any) -> Any:
    if isinstance(x, np.ndarray):  # a copy of it as a tensor (``tensor(x)``)
        from .._data import to_array
        from ..tensor import _new

        return _new(*to_array(x, None))
    return x


def need_tensor(fname: str, arg: str, position: int, value: Any) -> None:
    """torch's argument-parser error for a number (or other non-tensor) where only a Tensor is
    taken: ``igamma(): argument 'other' (position 2) must be Tensor, not float``."""
    from ..tensor import Tensor

    if not isinstance(value, Tensor):
        raise TypeError(f"{fname}(): argument '{arg}' (position {position}) must be Tensor, "
                        f"not {type(value).__name__}")


def tensor_operands(op: OpDef, fname: str, method: bool) -> Callable:
    """The public function (``method``: the Tensor method) of a binary op whose torch
    signature takes two Tensors and no number (``maximum``, ``fmax``, ``igamma``): torch's
    TypeError for a number operand, positions counted as torch counts them."""
    def fn(input, other):  # noqa: A002
        input, other = _operand(input), _operand(other)
        if not method:
            need_tensor(fname, "input", 1, input)
        need_tensor(fname, "other", 1 if method else 2, other)
        return apply(op, input, other)
    fn.__name__ = fn.__qualname__ = fname
    return fn


def op_function(op: OpDef, write_out: Callable | None = None) -> Callable:
    """The public function of ``op`` (from its ``public`` declaration), made once; with
    ``write_out`` (``out_arg.write_out``), its variant with torch's ``out=`` argument."""
    fn = _GENERATED.get((op, write_out))
    if fn is not None:
        return fn
    pub = op.public
    name = (pub.names or pub.functional or pub.method or (op.name,))[0]
    args = ", ".join(pub.args)
    # operands of an op with several inputs may be NumPy arrays (as torch accepts them)
    passed = args if len(pub.args) == 1 else ", ".join(f"_operand({a})" for a in pub.args)
    sig = args + "".join(f", {k}=_D[{k!r}]" for k in pub.params)
    call = passed + "".join(f", {k}={k}" for k in pub.params)
    # (one operand and no params: the op's lane, ``registry.lane``, where it has one)
    entry = "LANE" if len(pub.args) == 1 and not pub.params and op in LANES else "apply"
    result = f"{entry}({'' if entry == 'LANE' else 'OP, '}{call})"
    if write_out is None:
        src = f"def {name}({sig}):\n    return {result}\n"
    else:
        src = (f"def {name}({sig}, *, out=None):\n    if out is None:\n        return {result}\n"
               f"    return _OUT({name!r}, out, {result})\n")
    env = {"apply": apply, "LANE": LANES.get(op), "OP": op, "_D": dict(pub.params),
           "_operand": _operand, "_OUT": write_out}
    # (a file name inside the package: jit's source lines skip it, as any jitgrad frame)
    code = compile(src, os.path.join(os.path.dirname(__file__), f"<public {name}>"), "exec")
    exec(code, env)  # noqa: S102 - a signature built from the op's declaration
    fn = env[name]
    fn.__doc__ = pub.doc or f"``{op.name}`` of ``{pub.args[0]}`` (``{op.node_name}``)."
    fn.__module__ = "jitgrad"
    fn.__qualname__ = name
    _GENERATED[(op, write_out)] = fn
    return fn


def generated_op(fn: Callable) -> OpDef | None:
    """The op whose generated public function ``fn`` is (None for a plain function)."""
    for (op, write_out), made in _GENERATED.items():
        if made is fn and write_out is None:
            return op
    return None


def declarations() -> list[tuple[Callable, Public]]:
    """Every public function with its declaration: the ops' first, then the plain ones."""
    out = [(op_function(op), op.public) for op in OPS.values() if op.public is not None]
    return out + _FUNCTIONS


def _names(kind: str) -> dict[str, Callable]:
    found: dict[str, Callable] = {}
    for fn, pub in declarations():
        for name in getattr(pub, kind):
            if name in found and found[name] is not fn:
                raise RuntimeError(f"public name {name!r} ({kind}) is declared twice: "
                                   f"{found[name].__qualname__} and {fn.__qualname__}")
            found[name] = fn
    return found


def functions() -> dict[str, Callable]:
    """``jitgrad.<name>`` (and ``jitgrad.ops.<name>``) -> function."""
    return _names("names")


def functional() -> dict[str, Callable]:
    """``jitgrad.nn.functional.<name>`` -> function."""
    return _names("functional")


def install_namespace(namespace: dict, kind: str = "names",
                      variant: Callable[[str, Callable], Callable] | None = None) -> None:
    """Puts the declared functions of ``kind`` ("names" or "functional") in ``namespace``,
    each as ``variant(name, fn)`` when given (``out_arg.out_variant``); a name the module
    defines itself is an error (declared twice)."""
    for name, fn in _names(kind).items():
        have = namespace.get(name)
        if have is not None and have is not fn and kind == "functional":
            raise RuntimeError(f"nn.functional.{name} is defined by hand and declared public by "
                               f"{fn.__qualname__}: keep one")
        namespace[name] = fn if variant is None else variant(name, fn)


def install_tensor(tensor_type: type, inplace: Callable) -> None:
    """The declared Tensor methods and their in-place variants (run by ``inplace(self,
    compute, *args)``, ``ops.inplace.inplace``)."""
    for name, fn in _names("method").items():
        setattr(tensor_type, name, fn)
    for name, compute in _names("inplace").items():
        setattr(tensor_type, name, _inplace_method(inplace, name, compute))


def _inplace_method(inplace: Callable, name: str, compute: Callable) -> Callable:
    def fn(self, *args, **kwargs):
        def run(s, *a):
            return compute(s, *a, **kwargs)
        run.inplace_name = name  # (read by inplace's error ordering)
        return inplace(self, run, *args)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"In-place version of :meth:`{name[:-1]}`."
    return fn
