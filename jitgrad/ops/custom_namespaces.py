"""The namespaces of custom operators: ``jitgrad.ops.<namespace>.<name>``, as
``torch.ops.mylib.foo``. ``jitgrad.library.custom_op`` fills them; ``jitgrad.ops`` looks a
name up here only when it is none of its own modules or functions (``custom_op`` refuses a
namespace that is one of them)."""

from __future__ import annotations

from typing import Any

NAMESPACES: dict[str, OpNamespace] = {}


class OpNamespace:
    """``jitgrad.ops.<namespace>``: its operators as attributes."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._ops: dict[str, Any] = {}

    def add(self, opname: str, packet: Any) -> None:
        self._ops[opname] = packet

    def __getattr__(self, opname: str) -> Any:
        ops = self.__dict__.get("_ops", {})
        if opname in ops:
            return ops[opname]
        raise AttributeError(f"'_OpNamespace' '{self.__dict__.get('name')}' object has no "
                             f"attribute '{opname}'")

    def __dir__(self) -> list:
        return sorted(self._ops)

    def __repr__(self) -> str:
        return f"<module 'jitgrad.ops.{self.name}'>"


def namespace(name: str) -> OpNamespace:
    """The namespace ``name`` (created on first use)."""
    ns = NAMESPACES.get(name)
    if ns is None:
        ns = NAMESPACES[name] = OpNamespace(name)
    return ns
