"""torch's global switches: deterministic algorithms (``torch.use_deterministic_algorithms``
& co) and the float32 matmul precision.

jitgrad's CPU kernels are deterministic already: a reduction's order depends only on the shape
and the thread count (``set_num_threads``), never on timing, so every op qualifies. The switches
record the mode, as torch's do, for code that reads it back (``are_deterministic_algorithms_
enabled``) or sets it for reproducibility, like the DCGAN tutorial.
"""

from __future__ import annotations

import builtins

_state = {"mode": False, "warn_only": False}
_NAMES = {"default": 0, "warn": 1, "error": 2}


def use_deterministic_algorithms(mode: builtins.bool, *, warn_only: builtins.bool = False) -> None:
    """Sets whether only deterministic algorithms may run (all of jitgrad's are).

    Args:
        mode: on or off.
        warn_only: with ``mode``, a nondeterministic op would warn instead of raising.

    Raises:
        TypeError: ``mode`` or ``warn_only`` is not a bool (torch's message).
    """
    if type(mode) is not builtins.bool:
        raise TypeError("_set_deterministic_algorithms(): argument 'mode' (position 1) must be "
                        f"bool, not {type(mode).__name__}")
    if type(warn_only) is not builtins.bool:
        raise TypeError("_set_deterministic_algorithms(): argument 'warn_only' must be bool, not "
                        f"{type(warn_only).__name__}")
    _state["mode"] = mode
    _state["warn_only"] = mode and warn_only


def are_deterministic_algorithms_enabled() -> builtins.bool:
    """Whether ``use_deterministic_algorithms(True)`` is in effect."""
    return _state["mode"]


def is_deterministic_algorithms_warn_only_enabled() -> builtins.bool:
    """Whether it is in effect with ``warn_only=True``."""
    return _state["warn_only"]


def set_deterministic_debug_mode(debug_mode: builtins.int | str) -> None:
    """The same switch as a level: ``"default"``/0 off, ``"warn"``/1 warn only, ``"error"``/2 on.

    Raises:
        TypeError: ``debug_mode`` is neither a str nor an int.
        RuntimeError: it is not one of the three levels (torch's messages).
    """
    if isinstance(debug_mode, str):
        if debug_mode not in _NAMES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = _NAMES[debug_mode]
    elif not isinstance(debug_mode, builtins.int):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError("invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> builtins.int:
    """0, 1 or 2, as ``set_deterministic_debug_mode`` takes them."""
    if not _state["mode"]:
        return 0
    return 1 if _state["warn_only"] else 2


_PRECISIONS = ("highest", "high", "medium")
_precision = {"value": "highest"}


def set_float32_matmul_precision(precision: str) -> None:
    """Records the float32 matrix-product precision torch may lower to TF32/bf16 on GPUs
    (``"highest"``, ``"high"``, ``"medium"``); jitgrad computes float32 products in float32
    always, which every level allows. Another value warns and changes nothing, as in torch."""
    if precision not in _PRECISIONS:
        import warnings

        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _precision["value"] = precision


def get_float32_matmul_precision() -> str:
    """The value ``set_float32_matmul_precision`` last set (default ``"highest"``)."""
    return _precision["value"]
