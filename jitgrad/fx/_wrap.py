"""What tracing shares with the graph and its code: ``wrap`` (functions to record rather
than trace through), the asserts ``concrete_args`` add, and ``PH``. Imports no other fx
module."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ..ops.surface24_info import _assert

# (globals dict, name) of every ``wrap``ped function
_wrapped_fns_to_patch: dict[tuple[int, str], dict] = {}


def _assert_is_none(value: Any, msg: str) -> None:
    """Raises ``AssertionError(msg)`` unless ``value`` is None (a ``None`` concrete arg)."""
    assert value is None, msg


_side_effectful_functions = {_assert, _assert_is_none}


class PHBase:
    """The class of ``PH``: a ``concrete_args`` leaf that stays a placeholder."""

    def __repr__(self) -> str:
        return "PH"


PH = PHBase()


def wrap(fn_or_name: str | Callable) -> str | Callable:
    """Makes calls of a module-level function (by name or the function itself) record a
    ``call_function`` node instead of being traced through; call it at module scope."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable "
                           "or string name")
    if callable(fn_or_name):
        assert not isinstance(fn_or_name, str)
        fn_name = fn_or_name.__name__
    else:
        fn_name = fn_or_name
    frame = inspect.currentframe()
    assert frame is not None
    f = frame.f_back
    assert f is not None
    if f.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped_fns_to_patch[(id(f.f_globals), fn_name)] = f.f_globals
    return fn_or_name
