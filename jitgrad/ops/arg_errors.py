"""torch's argument-parser error for a call that matches none of an op's overloads."""

from __future__ import annotations

from typing import Any


def invalid_combination(fname: str, args: tuple, kwargs: dict, signatures: tuple) -> TypeError:
    """torch's argument-parser error: what was passed (its keywords last to first, as torch
    lists them), and every overload of ``fname``."""
    keywords = [f"{k}={_type_name(v)}" for k, v in reversed(kwargs.items())]
    got = ", ".join([_type_name(a) for a in args] + keywords)
    if keywords and not args:  # (torch's text: "got (other=Tensor, )")
        got += ", "
    lines = "".join(f" * ({sig})\n" for sig in signatures)
    return TypeError(f"{fname}() received an invalid combination of arguments - got "
                     f"({got}), but expected one of:\n{lines}")


def _type_name(value: Any) -> str:
    kind = type(value)
    if kind.__module__.startswith("jitgrad") and kind.__name__ in (
            "dtype", "device", "layout", "memory_format", "Generator"):
        return f"jitgrad.{kind.__name__}"
    return kind.__name__
