"""``GradScaler``: dynamic loss scaling for mixed-precision training (``torch.amp.GradScaler``).

The loss is multiplied by a scale factor before ``backward()`` so that small float16
gradients do not underflow; ``step`` divides the gradients by it again (``unscale_``), skips
the optimizer's step when a gradient holds an inf or NaN, and ``update`` halves the scale after
such a step and doubles it after ``growth_interval`` clean steps in a row.

The scale and the growth tracker are 0-d tensors on the loss's device, and every check and
update is made of jitgrad ops on that device (one ``isfinite`` count per gradient, combined per
device and dtype), so neither ``unscale_`` nor ``update`` copies a value to the host: only
``step`` reads one flag per device to decide whether to call the optimizer, as torch does.
"""

from __future__ import annotations

import inspect
import warnings
from collections import abc, defaultdict
from enum import Enum
from typing import Any

from .. import cuda as _cuda
from ..autograd.grad_mode import no_grad
from ..dtypes import float16, float32, int32
from ..ops import isfinite, logical_and, logical_not, logical_or, stack, where
from ..ops.creation import full
from ..tensor import Tensor

__all__ = ["OptState", "GradScaler"]

# the float64 values from which rounding to float32 gives inf: 2**128 - 2**103, halfway between
# float32's largest value and 2**128 (a tie, which rounds to the even, infinite, neighbour)
_F32_OVERFLOW = 2.0**128 - 2.0**103
_FIX = ("This may indicate your script did not use scaler.scale(loss or outputs) earlier in the "
        "iteration.")


class _MultiDeviceReplicator:
    """Serves copies of one tensor on the devices asked for, each made once."""

    def __init__(self, master_tensor: Tensor) -> None:
        self.master = master_tensor
        self._per_device_tensors: dict[Any, Tensor] = {}

    def get(self, device: Any) -> Tensor:
        """The copy of the master tensor on ``device`` (made on the first request)."""
        found = self._per_device_tensors.get(device)
        if found is None:
            found = self.master.to(device=device, non_blocking=True, copy=True)
            self._per_device_tensors[device] = found
        return found


class OptState(Enum):
    """Where an optimizer is in the current iteration: not unscaled yet, unscaled, stepped."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict[str, Any]:
    # (a module-level function, not a lambda, so that a scaler's defaultdict pickles)
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _check_and_unscale_(grads: list[Tensor], found_inf: Tensor, inv_scale: Tensor | None) -> None:
    """Sets ``found_inf`` to 1 if a tensor of ``grads`` (one device, one dtype) holds an inf or
    NaN, and multiplies each by ``inv_scale`` in place unless it is None (a scale of 1): torch's
    ``_amp_foreach_non_finite_check_and_unscale_``, with one count of finite values per tensor
    (compared with the sizes, known on the host) and no host copy."""
    counts = [isfinite(g).sum() for g in grads]  # (the finite values of each)
    finite = counts[0] if len(counts) == 1 else stack(counts).sum()
    found_inf.copy_(where(finite != sum(g.numel() for g in grads), 1.0, found_inf))
    if inv_scale is None:
        return
    for g in grads:  # (never float16 here: unscale_ refuses float16 gradients)
        g.mul_(inv_scale)


def _amp_foreach_non_finite_check_and_unscale_(scaled_grads: list[Tensor], found_inf: Tensor,
                                               inv_scale: Tensor) -> None:
    """torch's private kernel: each of ``scaled_grads`` multiplied by ``inv_scale`` in place,
    and ``found_inf`` set to 1 if any holds an inf or a NaN."""
    if scaled_grads:
        _check_and_unscale_(list(scaled_grads), found_inf, inv_scale)


def _amp_update_scale_(scale: Tensor, growth_tracker: Tensor, found_inf: Tensor,
                       growth_factor: float, backoff_factor: float,
                       growth_interval: int) -> Tensor:
    """torch's private kernel: the scale and growth tracker updated in place (see
    ``_update_scale_``); returns ``scale``."""
    _update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                   growth_interval)
    return scale


def _update_scale_(scale: Tensor, growth_tracker: Tensor, found_inf: Tensor,
                   growth_factor: float, backoff_factor: float, growth_interval: int) -> None:
    """torch's ``_amp_update_scale_`` with tensor ops (no host copy): after a step that found
    an inf or NaN, the scale is multiplied by ``backoff_factor`` and the tracker reset; after
    ``growth_interval`` clean steps in a row, it is multiplied by ``growth_factor`` unless that
    overflows float32, and the tracker reset. The products are taken in float64 and rounded to
    float32, as the kernel does."""
    found = found_inf != 0
    successful = growth_tracker + 1
    due = logical_and(logical_not(found), successful == growth_interval)
    grown = scale.double() * growth_factor
    # (float32(grown) is inf from this magnitude on: tested in float64, so no overflowing cast)
    grow = logical_and(due, logical_not(grown.abs() >= _F32_OVERFLOW))
    backed = scale.double() * backoff_factor
    new_scale = where(found, backed, where(grow, grown, scale.double())).float()
    new_tracker = where(logical_or(found, due), 0, successful).to(int32)
    scale.copy_(new_scale)
    growth_tracker.copy_(new_tracker)


class GradScaler:
    """Scales the loss, unscales the gradients, skips steps whose gradients are not finite,
    and adapts the scale (``torch.amp.GradScaler``).

    * ``scaler.scale(loss)`` multiplies the loss by the current scale factor.
    * ``scaler.step(optimizer)`` unscales the gradients and calls ``optimizer.step()`` unless
      one of them holds an inf or NaN.
    * ``scaler.update()`` updates the scale factor.

    Example::

        scaler = GradScaler("cpu")
        for input, target in data:
            optimizer.zero_grad()
            loss = loss_fn(model(input), target)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)  # optional: to clip or inspect the real gradients
            jitgrad.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            scaler.step(optimizer)
            scaler.update()

    Args:
        device: the device type of the tensors scaled, ``"cuda"`` (the default) or ``"cpu"``.
            ``"cuda"`` while CUDA is unavailable warns and disables the scaler, as torch.
        init_scale: the initial scale factor.
        growth_factor: what ``update`` multiplies the scale by after ``growth_interval``
            consecutive steps without inf or NaN gradients (must be > 1).
        backoff_factor: what ``update`` multiplies the scale by after a step with inf or NaN
            gradients (must be < 1).
        growth_interval: the number of consecutive clean steps before the scale grows.
        enabled: if False, ``step`` just calls ``optimizer.step()`` and the other methods do
            nothing (``scale`` returns its argument, ``get_scale`` 1.0).
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if self._device == "cuda" and enabled and not _cuda.is_available():
            warnings.warn(
                "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                stacklevel=2)
            self._enabled = False
        if not self._enabled:
            return
        if growth_factor <= 1.0:
            raise AssertionError("The growth factor must be > 1.0.")
        if backoff_factor >= 1.0:
            raise AssertionError("The backoff factor must be < 1.0.")
        self._init_scale = init_scale
        self._scale: Tensor | None = None  # (made on the first scale(), on the loss's device)
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._init_growth_tracker = 0
        self._growth_tracker: Tensor | None = None
        self._per_optimizer_states: dict[int, dict[str, Any]] = defaultdict(
            _refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname: str) -> tuple[Tensor, Tensor]:
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + _FIX)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + _FIX)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev: Any) -> None:
        if self._growth_tracker is not None:
            raise AssertionError("_growth_tracker initialized before _scale")
        self._scale = full((), self._init_scale, dtype=float32, device=dev)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=int32, device=dev)

    def scale(self, outputs: Tensor | abc.Iterable) -> Tensor | abc.Iterable:
        """Multiplies a tensor, or the tensors of a (nested) list, tuple or iterable, by the
        scale factor.

        Args:
            outputs: a tensor or an iterable of tensors (lists and tuples keep their type; any
                other iterable comes back as a lazy ``map``).

        Returns:
            The scaled outputs; ``outputs`` itself when the scaler is disabled.

        Raises:
            ValueError: if an element is neither a tensor nor an iterable.
        """
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device, non_blocking=True)

        stash: list[_MultiDeviceReplicator] = []  # (the scale's copies, made on first use)

        def apply_scale(val):
            if isinstance(val, Tensor):
                if not stash:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(val.device)
                    stash.append(_MultiDeviceReplicator(self._scale))
                return val * stash[0].get(val.device)
            if isinstance(val, abc.Iterable):
                scaled = map(apply_scale, val)
                return type(val)(scaled) if isinstance(val, (list, tuple)) else scaled
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer: Any, inv_scale: Tensor | None, found_inf: Tensor,
                        allow_fp16: bool) -> dict[Any, Tensor]:
        """Checks (and multiplies by ``inv_scale`` unless None) the gradients of the
        optimizer's parameters, grouped by device and dtype; returns the found-inf flag of each
        device."""
        per_device_inv_scale = None if inv_scale is None else _MultiDeviceReplicator(inv_scale)
        per_device_found_inf = _MultiDeviceReplicator(found_inf)
        grads: dict[Any, dict[Any, list[Tensor]]] = defaultdict(lambda: defaultdict(list))
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if not isinstance(param, Tensor):
                        raise AssertionError(
                            f"expected param to be torch.Tensor, got {type(param).__name__}")
                    grad = param.grad
                    if grad is None:
                        continue
                    if not allow_fp16 and grad.dtype == float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    grads[grad.device][grad.dtype].append(grad)
            for device, per_dtype in grads.items():
                inv = None if per_device_inv_scale is None else per_device_inv_scale.get(device)
                for same in per_dtype.values():
                    _check_and_unscale_(same, per_device_found_inf.get(device), inv)
        return per_device_found_inf._per_device_tensors

    def unscale_(self, optimizer: Any) -> None:
        """Divides the gradients of the optimizer's parameters by the scale factor, in place,
        and records whether one holds an inf or NaN.

        Optional: ``step`` unscales when this was not called. Call it once per optimizer per
        iteration, after every gradient was accumulated, to clip or inspect the real gradients
        before ``step``. Gradients that are None are left alone.

        Args:
            optimizer: the optimizer whose parameters' gradients are unscaled.

        Raises:
            RuntimeError: if it was already called for this optimizer since the last
                ``update()``, or is called after ``step()``.
            ValueError: if a gradient is float16 (scale a float32 model's loss instead).
        """
        if not self._enabled:
            return
        scale, _ = self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # (the reciprocal in float64: a float32 division can be inexact under some compilers)
        inv_scale = scale.double().reciprocal().float()
        found_inf = full((), 0.0, dtype=float32, device=scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf,
                                                             False)
        state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer: Any, optimizer_state: dict[str, Any], *args: Any,
                        **kwargs: Any) -> Any:
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscales the gradients (unless ``unscale_`` already did) and calls
        ``optimizer.step(*args, **kwargs)`` if none of them holds an inf or NaN.

        An optimizer with ``_step_supports_amp_scaling = True`` unscales itself: its ``step``
        gets the scaler as a ``grad_scaler`` keyword if it takes one (deprecated, with a
        FutureWarning), else finds ``optimizer.grad_scale`` and ``optimizer.found_inf`` set.

        Args:
            optimizer: the optimizer that applies the gradients.
            *args: passed to ``optimizer.step``.
            **kwargs: passed to ``optimizer.step`` (a ``closure`` is not supported).

        Returns:
            What ``optimizer.step`` returned, or None when the step was skipped.

        Raises:
            RuntimeError: if a ``closure`` is given, or ``step`` was already called for this
                optimizer since the last ``update()``.
        """
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if getattr(optimizer, "_step_supports_amp_scaling", False):
            return self._custom_step(optimizer, state, args, kwargs)
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def _custom_step(self, optimizer: Any, state: dict[str, Any], args: tuple,
                     kwargs: dict) -> Any:
        """``step`` for an optimizer that handles the scale itself."""
        has_kwarg = "grad_scaler" in inspect.signature(optimizer.step).parameters
        if has_kwarg:
            warnings.warn(
                "GradScaler is going to stop passing itself as a keyword argument to the passed "
                "optimizer. In the near future GradScaler registers `grad_scale: Tensor` and "
                "`found_inf: Tensor` to the passed optimizer and let the optimizer use them "
                "directly.", FutureWarning, stacklevel=3)
            kwargs.update({"grad_scaler": self})
        else:
            if state["stage"] is OptState.READY:
                self._check_inf_per_device(optimizer)
            scale = self._scale
            found = [t.to(scale.device, non_blocking=True)
                     for t in state["found_inf_per_device"].values()]
            # (the product of the scales if the user already set optimizer.grad_scale)
            optimizer.grad_scale = (getattr(optimizer, "grad_scale", None)
                                    if state["stage"] is OptState.UNSCALED
                                    else scale * getattr(optimizer, "grad_scale", 1))
            optimizer.found_inf = sum(found)
        retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        if not has_kwarg:
            del optimizer.grad_scale
            del optimizer.found_inf
        return retval

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Updates the scale factor, at the end of an iteration (after every ``step``).

        If a step of this iteration was skipped, the scale is multiplied by
        ``backoff_factor``; after ``growth_interval`` consecutive unskipped iterations, by
        ``growth_factor``. ``new_scale`` sets the scale instead (its value is copied: a tensor
        changed later does not change the scale).

        Args:
            new_scale: a float, or a 1-element float tensor on the scaler's device that does
                not require grad.

        Raises:
            AssertionError: if ``new_scale`` is a tensor on another device type, with more
                than one element or requiring grad, or no inf check was recorded.
        """
        if not self._enabled:
            return
        scale, growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                if new_scale.device.type != self._device:
                    raise AssertionError(reason)
                if new_scale.numel() != 1:
                    raise AssertionError(reason)
                if new_scale.requires_grad is True:
                    raise AssertionError(reason)
                scale.copy_(new_scale)
        else:
            found_infs = [found_inf.to(device=scale.device, non_blocking=True)
                          for state in self._per_optimizer_states.values()
                          for found_inf in state["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            combined = found_infs[0]
            for other in found_infs[1:]:
                combined = combined + other
            _update_scale_(scale, growth_tracker, combined, self._growth_factor,
                           self._backoff_factor, self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _get_scale_async(self) -> Tensor | None:
        return self._scale

    def get_scale(self) -> float:
        """The current scale as a Python float (the initial scale before the first ``scale``),
        or 1.0 if the scaler is disabled; reads the value from the device."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale.item()

    def get_growth_factor(self) -> float:
        """The scale growth factor."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Sets the scale growth factor.

        Args:
            new_factor: the new growth factor.
        """
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        """The scale backoff factor."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Sets the scale backoff factor.

        Args:
            new_factor: the new backoff factor.
        """
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        """The growth interval."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Sets the growth interval.

        Args:
            new_interval: the new number of consecutive clean steps before the scale grows.
        """
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return self._growth_tracker.item()

    def is_enabled(self) -> bool:
        """Whether the scaler is enabled."""
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """The scaler's state: ``"scale"``, ``"growth_factor"``, ``"backoff_factor"``,
        ``"growth_interval"`` and ``"_growth_tracker"`` (the number of recent consecutive
        unskipped steps); an empty dict if the scaler is disabled. Take it after ``update()``."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Loads a state given by ``state_dict()``; does nothing if the scaler is disabled.

        Args:
            state_dict: the scaler state.

        Raises:
            RuntimeError: if ``state_dict`` is empty (saved from a disabled scaler).
        """
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError(
                    "A GradScaler instance may only be pickled at the beginning "
                    "of an iteration, or at the end after scaler.update().")
            # (the unpickled scaler makes its tensors again on its first scale())
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def _check_inf_per_device(self, optimizer: Any) -> dict[Any, Tensor]:
        scale, _ = self._check_scale_growth_tracker("_check_inf_per_device")
        found_inf = full((), 0.0, dtype=float32, device=scale.device)
        state = self._per_optimizer_states[id(optimizer)]
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, None, found_inf, True)
        return state["found_inf_per_device"]

    def _found_inf_per_device(self, optimizer: Any) -> dict[Any, Tensor]:
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
