"""``torch.nn.utils.stateless``: the deprecated ``functional_call`` (now
``jitgrad.func.functional_call``)."""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["functional_call"]


def functional_call(module: Any, parameters_and_buffers: dict, args: Any = None,
                    kwargs: dict | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """Deprecated: ``jitgrad.func.functional_call`` (warns a FutureWarning, as torch).

    Args:
        module: the module to call.
        parameters_and_buffers: ``{dotted name: tensor}`` used for the call.
        args: the positional arguments (a tuple, or one argument).
        kwargs: the keyword arguments.
        tie_weights: tied parameters are replaced under all their names.
        strict: every parameter and buffer must be given, and nothing else.

    Returns:
        The module's result.
    """
    from ._functional_call import functional_call as _functional_call

    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)
