"""``functionalize`` and ``replace_all_batch_norm_modules_`` (torch.func).

torch's ``functionalize`` runs a function with its in-place and ``out=`` ops replaced by their
out-of-place forms (for tracing into a graph without mutation), then copies any mutation of
an input back into that input: the values it returns, and the inputs after the call, are the
function's own. jitgrad's ``jit`` already traces mutation into a functional program, so
``functionalize(f)`` is ``f`` with torch's argument check: same values, same input updates.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["functionalize", "replace_all_batch_norm_modules_"]


def functionalize(func: Callable, *, remove: str = "mutations") -> Callable:
    """A function computing what ``func`` computes (torch.func.functionalize).

    Args:
        func: the function.
        remove: ``'mutations'`` or ``'mutations_and_views'``.

    Returns:
        The wrapped function.
    """
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for "
            f"remove={remove}. Valid options are:\n"
            "     remove='mutations': all inplace and out= operators will be removed from the "
            "program, and replaced with their out-of-place equivalents.\n"
            "     remove='mutations_and_views': In addition to the above, all aliasing operators "
            "{view} will be replaced with their non-aliasing counterparts, {view}_copy.\n")

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return wrapped


def replace_all_batch_norm_modules_(root: Any) -> Any:
    """Sets ``running_mean`` / ``running_var`` / ``num_batches_tracked`` to None and
    ``track_running_stats`` to False on every BatchNorm in ``root``, in place (so ``vmap``
    over a model does not write per-sample statistics into shared buffers).

    Args:
        root: the module.

    Returns:
        ``root``.
    """
    from ..nn.batchnorm import _BatchNorm

    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
