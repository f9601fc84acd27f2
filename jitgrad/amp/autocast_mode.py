"""``autocast``: torch.amp's mixed precision, for CPU and cuda tensors.

While an ``autocast`` region is active, the ops torch's autocast lists as lower-precision ops
(``mm``, ``addmm``, ``bmm``, ``matmul``, ``linear``, the convolutions, ``prelu``,
``scaled_dot_product_attention``, ...) cast their floating inputs to the region's dtype, and
the ops it lists as float32 ops (the losses, ``prod``, ``cdist``, the FFTs, ...) cast theirs
to float32; see ``ops/autocast_policy.py``. Casts are ordinary ``to`` ops, so gradients flow
back to float32 parameters in their own dtype.

On CPU, autocast runs in bfloat16 by default (or float16), as torch's; on cuda in float16
(jitgrad's cuda tensors have no bfloat16). An unsupported dtype warns and disables the region,
as torch does.
"""

from __future__ import annotations

import builtins
import functools
import threading
import warnings
from collections.abc import Callable
from typing import Any

from .. import dtypes
from ..ops.registry import state

_DEVICE_TYPES = ("cpu", "cuda")
_ALL_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                     "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                     "privateuseone")
# the dtype each device type's autocast uses by default (torch.set_autocast_dtype changes it)
_default_dtypes = {"cpu": dtypes.bfloat16, "cuda": dtypes.float16}
_SUPPORTED = {"cpu": (dtypes.bfloat16, dtypes.float16), "cuda": (dtypes.float16,)}


def _check_device_type(device_type: Any) -> str:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in _ALL_DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_ALL_DEVICE_TYPES)} device type at start "
                           f"of device string: {device_type}")
    return device_type


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast works on ``device_type`` (``"cpu"``; ``"cuda"`` where CUDA is)."""
    if device_type == "cuda":
        from .. import cuda

        return cuda.is_available()
    return device_type == "cpu"


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` in this thread (``"cuda"`` if None, as
    torch)."""
    device_type = "cuda" if device_type is None else device_type
    return any(on == device_type for on, _ in state.autocast)


def get_autocast_dtype(device_type: str) -> dtypes.dtype:
    """The dtype autocast on ``device_type`` casts lower-precision ops to."""
    for on, dtype in state.autocast:
        if on == device_type:
            return dtype
    return _default_dtypes.get(device_type, dtypes.float16)


def set_autocast_dtype(device_type: str, dtype: dtypes.dtype) -> None:
    """Sets the dtype ``autocast(device_type)`` uses when it is given none."""
    _default_dtypes[_check_device_type(device_type)] = dtype


def set_autocast_enabled(device_type: str, enabled: bool) -> None:
    """Turns autocast on ``device_type`` on or off for this thread (as torch's C function:
    prefer the ``autocast`` context manager, which restores the state)."""
    _set(device_type, get_autocast_dtype(device_type) if enabled else None)


def _set(device_type: str, dtype: dtypes.dtype | None) -> None:
    others = tuple(pair for pair in state.autocast if pair[0] != device_type)
    state.autocast = others if dtype is None else others + ((device_type, dtype),)


def get_autocast_cpu_dtype() -> dtypes.dtype:
    """``get_autocast_dtype("cpu")`` (torch's older name, deprecated)."""
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def get_autocast_gpu_dtype() -> dtypes.dtype:
    """``get_autocast_dtype("cuda")`` (torch's older name, deprecated)."""
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def is_autocast_cpu_enabled() -> bool:
    """``is_autocast_enabled("cpu")`` (torch's older name, deprecated)."""
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def _check_enabled(enabled: Any) -> None:
    if not isinstance(enabled, builtins.bool):
        raise TypeError(f"enabled must be a bool (got {type(enabled).__name__})")


def _check_dtype(dtype: Any) -> None:
    if not isinstance(dtype, dtypes.dtype):
        raise TypeError(f"dtype must be a torch.dtype (got {type(dtype).__name__})")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """``set_autocast_enabled("cpu", enabled)`` (torch's deprecated name, with its warning)."""
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    _check_enabled(enabled)
    set_autocast_enabled("cpu", enabled)


def set_autocast_cpu_dtype(dtype: dtypes.dtype) -> None:
    """``set_autocast_dtype("cpu", dtype)`` (torch's deprecated name, with its warning)."""
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    _check_dtype(dtype)
    set_autocast_dtype("cpu", dtype)


def set_autocast_gpu_dtype(dtype: dtypes.dtype) -> None:
    """``set_autocast_dtype("cuda", dtype)`` (torch's deprecated name, with its warning)."""
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    _check_dtype(dtype)
    set_autocast_dtype("cuda", dtype)


# this thread's autocast bookkeeping, as torch's: whether regions may cache casts, and how
# many ``autocast`` regions are open (leaving the outermost clears the cache)
_local = threading.local()


def is_autocast_cache_enabled() -> bool:
    """Whether autocast regions opened without ``cache_enabled`` may cache casts (True until
    ``set_autocast_cache_enabled(False)``). jitgrad casts a weight in each op that uses it, so
    no cache holds anything either way; the setting is kept for torch's API."""
    return getattr(_local, "cache_enabled", True)


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Sets ``is_autocast_cache_enabled`` for this thread."""
    _check_enabled(enabled)
    _local.cache_enabled = enabled


def clear_autocast_cache() -> None:
    """Empties autocast's cache of casts: jitgrad keeps none (each op casts its inputs), so
    there is nothing to free."""


def autocast_increment_nesting() -> int:
    """Counts one more open autocast region in this thread; returns the new count."""
    _local.nesting = getattr(_local, "nesting", 0) + 1
    return _local.nesting


def autocast_decrement_nesting() -> int:
    """Counts one autocast region less in this thread; returns the new count (as torch's, it
    may go below 0)."""
    _local.nesting = getattr(_local, "nesting", 0) - 1
    return _local.nesting


class autocast:  # noqa: N801 - torch's name
    """A context manager (or decorator) that runs a region in mixed precision.

    Args:
        device_type: ``"cpu"`` or ``"cuda"``: the tensors whose ops are cast.
        dtype: the lower-precision dtype (bfloat16 or float16 on CPU, float16 on cuda); None:
            ``get_autocast_dtype(device_type)``.
        enabled: False makes the region run as it would without autocast (and, nested, turns
            an outer region off).
        cache_enabled: accepted for torch's signature; jitgrad casts a weight in each op that
            uses it (no cache of casts).

    Example::

        with jitgrad.autocast("cpu", dtype=jitgrad.float16):
            loss = loss_fn(model(x), y)   # matmuls in float16, the loss in float32
        loss.backward()
    """

    def __init__(self, device_type: str, dtype: dtypes.dtype | None = None,
                 enabled: bool = True, cache_enabled: bool | None = None) -> None:
        self.device = _check_device_type(device_type)
        self.fast_dtype = get_autocast_dtype(self.device) if dtype is None else dtype
        self._cache_enabled = cache_enabled
        self._enabled = enabled
        if not enabled:
            return
        if self.device == "cuda" and not is_autocast_available("cuda"):
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                          stacklevel=2)
            self._enabled = False
        elif self.device in _SUPPORTED and self.fast_dtype not in _SUPPORTED[self.device]:
            name = "CPU" if self.device == "cpu" else "CUDA"
            supported = ", ".join(str(d) for d in _SUPPORTED[self.device])
            warnings.warn(
                f"In {name} autocast, but the target dtype is not supported. Disabling "
                f"autocast.\n{name} Autocast only supports dtypes of {supported} currently.",
                stacklevel=2)
            self._enabled = False
        elif self.device not in _SUPPORTED:
            warnings.warn(f"jitgrad has no autocast for device type {self.device!r}. "
                          "Disabling autocast.", stacklevel=2)
            self._enabled = False

    def __enter__(self) -> autocast:
        self._previous = state.autocast
        self._previous_cache = is_autocast_cache_enabled()
        if self._cache_enabled is not None:
            _local.cache_enabled = bool(self._cache_enabled)
        autocast_increment_nesting()
        _set(self.device, self.fast_dtype if self._enabled else None)
        return self

    def __exit__(self, *exc: Any) -> None:
        state.autocast = self._previous
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        _local.cache_enabled = self._previous_cache

    def __call__(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def decorated(*args: Any, **kwargs: Any) -> Any:
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return func(*args, **kwargs)

        return decorated


def custom_fwd(fwd: Callable | None = None, *, device_type: str,
               cast_inputs: dtypes.dtype | None = None) -> Callable:
    """Decorates a custom ``Function``'s ``forward``: with ``cast_inputs``, the forward (and
    then the backward) runs with autocast off and, when autocast is on, its floating inputs
    cast to ``cast_inputs``; without, it runs in the caller's autocast state, which
    ``custom_bwd`` restores for the backward."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    _check_device_type(device_type)

    @functools.wraps(fwd)
    def decorate_fwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False  # the forward runs without autocast: so does backward
        if not is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        previous = state.autocast
        _set(device_type, None)
        try:
            return fwd(*_cast_floating(args, device_type, cast_inputs),
                       **_cast_floating(kwargs, device_type, cast_inputs))
        finally:
            state.autocast = previous

    return decorate_fwd


def custom_bwd(bwd: Callable | None = None, *, device_type: str) -> Callable:
    """Decorates a custom ``Function``'s ``backward``: it runs in the autocast state its
    ``forward`` ran in."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    _check_device_type(device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        with autocast(device_type, dtype=ctx._dtype, enabled=ctx._fwd_used_autocast):
            return bwd(*args, **kwargs)

    return decorate_bwd


def _cast_floating(value: Any, device_type: str, dtype: dtypes.dtype) -> Any:
    from ..tensor import Tensor

    if isinstance(value, Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type
        return value.to(dtype) if eligible else value
    if isinstance(value, dict):
        return {k: _cast_floating(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_floating(v, device_type, dtype) for v in value)
    return value
