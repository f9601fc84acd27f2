"""``clone(memory_format=)``, torch's memory-format objects, and the ``new_*`` factories."""

from __future__ import annotations

import numpy as np

from . import registry
from .creation import check_format_rank
from .memory_formats import channels_last_array
from .surface import public


from .memory_formats import (  # noqa: F401 - (re-exported)
    channels_last,
    channels_last_3d,
    contiguous_format,
    memory_format,
    preserve_format,
)

CLONE_CONTIGUOUS = registry.defop(
    "clone_contiguous", lambda x: np.array(x, copy=True, order="C"), kind=registry.POINTWISE,
    node_name="CloneBackward0", vjp=(lambda g, ans, x: g,), jvp=registry.ELEMENTWISE,
    template="{0}")


CLONE_CHANNELS_LAST = registry.defop(
    "clone_channels_last", lambda x: channels_last_array(x), kind=registry.POINTWISE,
    node_name="CloneBackward0", vjp=(lambda g, ans, x: g,), jvp=registry.ELEMENTWISE,
    template="{0}")


@public("clone", method=True)
def clone(input, *, memory_format: memory_format = preserve_format):  # noqa: A002
    """A copy of ``input`` that is recorded by autograd (``CloneBackward0``); with
    ``memory_format=contiguous_format`` the copy is C-contiguous, with ``preserve_format`` it
    keeps the input's layout, with ``channels_last`` (4-d) or ``channels_last_3d`` (5-d) its
    channels are the innermost dim in memory."""
    from .elementwise import CLONE

    if memory_format is preserve_format or memory_format is None:
        return registry.apply(CLONE, input)
    if memory_format is contiguous_format:
        return registry.apply(CLONE_CONTIGUOUS, input)
    if not isinstance(memory_format, globals()["memory_format"]):
        raise TypeError(f"clone(): argument 'memory_format' must be torch.memory_format, not "
                        f"{type(memory_format).__name__}")
    check_format_rank(input.ndim, memory_format)
    return registry.apply(CLONE_CHANNELS_LAST, input)


def _new_factory(fill, name):
    def make(self, *sizes, size=None, dtype=None, device=None, requires_grad=False):
        from ..device import check_device
        from ..tensor import _new
        from .creation import _shape

        if size is not None and sizes:  # (torch takes the size positionally or as size=)
            raise TypeError(f"{name}() received an invalid combination of arguments")
        size = sizes if size is None else (size,)
        dt = dtype or self.dtype
        dev = check_device(self.device if device is None else device)  # (self's, as torch)
        if dev.type == "meta":
            from .creation import meta_empty as empty

            return empty(_shape(size, name), dt, requires_grad)
        return _new(fill(_shape(size, name), dt.np), dt, requires_grad, dev)
    return make


@public(method="new_full")
def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    from .creation import full

    return full(size, fill_value, dtype=dtype or self.dtype, requires_grad=requires_grad,
                device=self.device if device is None else device)


@public(method="new_tensor")
def _new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    from ..errors import called_by_user
    from .creation import tensor, warn_copy_construct

    if isinstance(data, registry.Tensor) and called_by_user():
        warn_copy_construct("tensor.new_tensor")

    return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad,
                  device=self.device if device is None else device)


for _name, _fill in (("new_zeros", np.zeros), ("new_ones", np.ones), ("new_empty", np.empty)):
    public(method=_name)(_new_factory(_fill, _name))


def _apply_python(self, values: list):
    """Writes the flat Python ``values`` into ``self`` in place (cast as torch casts them)."""
    from ..autograd.grad_mode import no_grad
    from .creation import tensor

    for v in values:
        if not isinstance(v, (bool, int, float, complex, np.generic)):
            raise TypeError(f"must be real number, not {type(v).__name__}")
    arr = np.asarray(values).reshape(tuple(self.shape))
    with no_grad():
        self.copy_(tensor(arr.astype(self.dtype.np), device=self.device))
    return self


@public(method="apply_")
def _apply_(self, callable):  # noqa: A002 - torch's name
    """Applies the Python function ``callable`` to each element, in place (CPU tensors that do
    not require grad; slow, as in torch)."""
    if self.requires_grad:
        raise RuntimeError("Can't call apply_() on Variable that requires grad. Use "
                           "var.detach().apply_() instead.")
    return _apply_python(self, [callable(v) for v in self.reshape(-1).tolist()])


@public(method="map_")
def _map_(self, tensor, callable):  # noqa: A002 - torch's name
    """``self[i] = callable(self[i], tensor[i])`` for each element, ``tensor`` broadcast to
    ``self``'s shape, in place."""
    if self.requires_grad or tensor.requires_grad:
        raise RuntimeError("Can't call map_() on Variable that requires grad. Use "
                           "var.detach().map_() instead.")
    other = tensor.expand(tuple(self.shape)).reshape(-1).tolist()
    return _apply_python(self, [callable(a, b) for a, b in
                                zip(self.reshape(-1).tolist(), other)])


def install_factories(Tensor: type) -> None:  # noqa: N803
    """The legacy ``Tensor.type()``."""
    from .. import _legacy

    Tensor.type = _legacy.tensor_type
