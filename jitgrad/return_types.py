"""``torch.return_types``: the named-tuple classes that ops return (``topk``, ``max``, ``svd``,
``linalg_slogdet``, ...), for ``isinstance`` checks, annotations and pickling."""

from __future__ import annotations

from .ops.return_types import REGISTERED


def __getattr__(name: str) -> type:
    try:
        return REGISTERED[name]
    except KeyError:
        raise AttributeError(f"module 'jitgrad.return_types' has no attribute {name!r}") \
            from None


def __dir__() -> list[str]:
    return sorted(REGISTERED)
