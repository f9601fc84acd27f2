"""``jitgrad.utils``: data loading (``jitgrad.utils.data``), activation checkpointing
(``jitgrad.utils.checkpoint``), hooks' handles (``hooks``), pytrees (``_pytree``), timing
(``benchmark``), FLOP counting (``flop_counter``, ``module_tracker``), ``weak``, ``dlpack``,
``model_zoo``, TensorBoard event files (``tensorboard``) and ``swap_tensors``. Each submodule
loads on first use (``jitgrad.func`` needs ``_pytree`` only)."""

import copyreg
import importlib
import weakref
from typing import Any

_POISONED = (
    "Trying to execute AccumulateGrad node that was poisoned by swap_tensors this can happen "
    "when you try to run backward on a tensor that was swapped. For a module m with "
    "`torch.__future__.set_swap_module_params_on_conversion(True)` you should not change the "
    "device or dtype of the module (e.g. `m.cpu()` or `m.half()`) between running forward and "
    "backward. To resolve this, please only change the device/dtype before running forward "
    "(or after both forward and backward).")


def swap_tensors(t1: Any, t2: Any) -> None:
    """Swaps the contents of two tensors, so that each keeps its identity (``id``, the
    references others hold) with the other's data, dtype, class, attributes and gradient, as
    ``torch.utils.swap_tensors``.

    A leaf's gradient accumulator from before the swap is poisoned: a backward through a graph
    recorded before the swap raises instead of writing into the wrong tensor. torch also
    refuses tensors that its C++ side still references (saved for a backward); jitgrad has no
    such count, so do not swap a tensor that a pending graph saved.

    Args:
        t1: A tensor.
        t2: A tensor whose class has the same slots.

    Raises:
        RuntimeError: if either tensor has a weak reference, or their slots differ.
    """
    if weakref.getweakrefs(t1):
        raise RuntimeError("Cannot swap t1 because it has weakref associated with it")
    if weakref.getweakrefs(t2):
        raise RuntimeError("Cannot swap t2 because it has weakref associated with it")
    t1_slots = set(copyreg._slotnames(t1.__class__))
    t2_slots = set(copyreg._slotnames(t2.__class__))
    if t1_slots != t2_slots:
        raise RuntimeError("Cannot swap t1 and t2 if they have different slots")

    def poison(t: Any) -> None:
        acc = t.__dict__.pop("_accumulator", None)
        if acc is not None:
            def error_pre_hook(grad_outputs: Any) -> None:
                raise RuntimeError(_POISONED)

            acc.register_prehook(error_pre_hook)

    poison(t1)
    poison(t2)
    t1.__class__, t2.__class__ = t2.__class__, t1.__class__
    t1.__dict__, t2.__dict__ = t2.__dict__, t1.__dict__
    for slot in t1_slots:
        has1, has2 = hasattr(t1, slot), hasattr(t2, slot)
        v1, v2 = getattr(t1, slot, None), getattr(t2, slot, None)
        if has2:
            setattr(t1, slot, v2)
        elif has1:
            delattr(t1, slot)
        if has1:
            setattr(t2, slot, v1)
        elif has2:
            delattr(t2, slot)


_SUBMODULES = ("_pytree", "benchmark", "checkpoint", "data", "dlpack", "flop_counter", "hooks",
               "model_zoo", "module_tracker", "tensorboard", "weak")


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(_SUBMODULES))
