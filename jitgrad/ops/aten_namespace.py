"""``jitgrad.ops.aten``: torch's ``torch.ops.aten`` names for jitgrad's operations.

``aten.<name>`` is an ``OpOverloadPacket``, callable, made once per name; ``aten.<name>.default``
(and torch's other common overload names: ``.Tensor``, ``.Scalar``, ``.dim_IntList`` ...) an
``OpOverload``, made once per (name, overload), so that ``op in [aten.mm.default]`` and
``counts[aten.mm]`` compare as they do in torch. A call runs the jitgrad function of that name
(``jitgrad.<name>``, ``jitgrad.nn.functional.<name>``, the Tensor method, or the registered
op), with the arguments torch's aten op takes where they agree, as they do for the common ops;
every overload of a name calls the same function, which tells them apart by their arguments.

These are the keys ``utils.flop_counter`` counts under and the ops a selective-checkpoint
policy (``utils.checkpoint.create_selective_checkpoint_contexts``) is asked about: each
registered op is ``aten.<op.name>.default`` there (``op_key``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import registry
from .registry import OPS, apply

# the overload names torch's aten ops commonly have (any other is refused, as torch refuses an
# overload the op does not have)
OVERLOAD_NAMES = frozenset({
    "default", "Tensor", "Scalar", "out", "Tensor_out", "Scalar_out", "int", "float", "bool",
    "complex", "dim", "dim_IntList", "dim_int", "dims", "self", "other", "input", "using_ints",
    "using_sizes", "correction", "names", "dimname", "dtype", "t", "Tensor_Tensor",
    "Tensor_Scalar", "Scalar_Tensor", "vec", "List", "values", "dim_max", "dim_min", "src",
    "value", "reduce", "Tensor_mode", "Scalar_mode", "str", "list", "start", "start_step",
    "start_out", "memory_format", "device", "dtype_layout", "prim_dtype", "other_dtype"})

# what ``install`` hands over: jitgrad's namespace (no import of jitgrad from here)
_NAMESPACE: dict = {}


def install(namespace: dict) -> None:
    """Gives the namespace the names it resolves: jitgrad's top-level one."""
    _NAMESPACE.update(namespace=namespace)


def _function_of(name: str) -> Callable | None:
    """The jitgrad function ``aten::name`` runs, or None."""
    namespace = _NAMESPACE.get("namespace", {})
    fn = namespace.get(name)
    if callable(fn) and not isinstance(fn, type):
        return fn
    lazy = namespace.get("__getattr__")  # (jitgrad loads jitgrad.nn when first asked for)
    nn = namespace.get("nn") or (lazy("nn") if lazy is not None else None)
    fn = getattr(getattr(nn, "functional", None), name, None)
    if callable(fn) and not isinstance(fn, type):
        return fn
    method = getattr(registry.Tensor, name, None)
    if callable(method) and not name.startswith("__"):
        return method  # (its first argument is the tensor, as aten's ``self``)
    op = OPS.get(name)
    if op is not None:
        def run(*args: Any, **params: Any) -> Any:
            return apply(op, *args, **params)
        return run
    return None


class OpOverload:
    """``aten.<name>.<overload>``: callable; equal only to itself (one object per overload)."""

    def __init__(self, packet: OpOverloadPacket, overload: str) -> None:
        self.overloadpacket = packet
        self._overloadname = overload
        self.__name__ = f"{packet.__name__}.{overload}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.overloadpacket(*args, **kwargs)

    def name(self) -> str:
        """``aten::mm`` (``aten::add.Tensor`` for an overload other than the default)."""
        suffix = "" if self._overloadname == "default" else f".{self._overloadname}"
        return f"aten::{self.overloadpacket.__name__}{suffix}"

    def __repr__(self) -> str:
        return f"aten.{self.__name__}"


class OpOverloadPacket:
    """``aten.<name>``: callable (the function of that name); its overloads as attributes."""

    def __init__(self, name: str, fn: Callable | None) -> None:
        self.__name__ = name
        self._fn = fn
        self._overloads: dict[str, OpOverload] = {}

    @property
    def _qualified_op_name(self) -> str:
        return f"aten::{self.__name__}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._fn is None:
            raise NotImplementedError(f"jitgrad has no function for aten::{self.__name__} to "
                                      "call (it is only a key here: flop counts)")
        return self._fn(*args, **kwargs)

    def __getattr__(self, overload: str) -> OpOverload:
        if overload.startswith("__") or overload not in OVERLOAD_NAMES:
            raise AttributeError(f"The underlying op of 'aten.{self.__dict__.get('__name__')}' "
                                 f"has no overload name '{overload}'")
        found = self._overloads.get(overload)
        if found is None:
            found = self._overloads[overload] = OpOverload(self, overload)
        return found

    def overloads(self) -> list[str]:
        """The overload names asked for so far (torch lists the op's schema's)."""
        return list(self._overloads)

    def __str__(self) -> str:
        return f"aten.{self.__name__}"

    def __repr__(self) -> str:
        return f"<OpOverloadPacket(op='aten.{self.__name__}')>"


class AtenNamespace:
    """``jitgrad.ops.aten``."""

    def __init__(self) -> None:
        self._packets: dict[str, OpOverloadPacket] = {}

    def __getattr__(self, name: str) -> OpOverloadPacket:
        packets = self.__dict__.get("_packets", {})
        found = packets.get(name)
        if found is None:
            fn = None if name.startswith("__") else _function_of(name)
            if fn is None:
                raise AttributeError(f"'_OpNamespace' 'aten' object has no attribute '{name}'")
            found = packets[name] = OpOverloadPacket(name, fn)
        return found

    def key(self, name: str) -> OpOverloadPacket:
        """``aten.<name>`` even where jitgrad has no function of that name (a counting key)."""
        found = self._packets.get(name)
        if found is None:
            found = self._packets[name] = OpOverloadPacket(name, _function_of(name))
        return found

    def __repr__(self) -> str:
        return "<module 'jitgrad.ops.aten'>"


ATEN = AtenNamespace()


# registered ops whose aten name or overload differs from ``<op.name>.default``: (name,
# overload), or (name, overload with a Tensor operand, overload with a number)
_KEYS = {
    "add": ("add", "Tensor"), "sub": ("sub", "Tensor"), "mul": ("mul", "Tensor"),
    "div": ("div", "Tensor"), "pow": ("pow", "Tensor_Tensor"),
    "pow_scalar": ("pow", "Tensor_Scalar"), "sum_dim": ("sum", "dim_IntList"),
    "mean_dim": ("mean", "dim"), "max_dim": ("max", "dim"), "min_dim": ("min", "dim"),
    "max_all": ("max", "default"), "min_all": ("min", "default"),
    "softmax": ("_softmax", "default"), "log_softmax": ("_log_softmax", "default"),
    "transpose": ("transpose", "int"), "select": ("select", "int"),
    "to_copy": ("_to_copy", "default"),
    **{name: (name, "Tensor", "Scalar") for name in ("eq", "ne", "lt", "le", "gt", "ge")}}


def op_key(op: Any, args: tuple = ()) -> OpOverload:
    """What a registered op called on ``args`` (its impl's arrays) is as a key: torch's
    ``aten.<name>.<overload>`` for the common ops (``aten.mul.Tensor``, ``aten.sum.dim_IntList``,
    ``aten.eq.Scalar`` for a 0-d second operand), else ``aten.<op.name>.default``
    (selective checkpointing's policies are asked about these)."""
    entry = _KEYS.get(op.name)
    if entry is None:
        return ATEN.key(op.name).default
    overload = entry[1]
    if len(entry) == 3 and len(args) > 1 and getattr(args[1], "ndim", 0) == 0:
        overload = entry[2]
    return getattr(ATEN.key(entry[0]), overload)
