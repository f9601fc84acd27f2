"""``torch.nn.utils.parametrize``: ``register_parametrization``, ``is_parametrized``,
``remove_parametrizations`` and ``ParametrizationList``. A parametrized tensor becomes a
property of a ``Parametrized<Class>`` subclass injected into the module, computed from the
originals under ``module.parametrizations.<name>`` (state_dict keys
``parametrizations.<name>.original`` or ``original0``, ``original1`` ...). Inside
``with cached():`` each parametrized tensor is computed once."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ..container import ModuleDict, ModuleList
from ..module import Module
from ..parameter import Parameter

__all__ = ["register_parametrization", "is_parametrized", "remove_parametrizations",
           "ParametrizationList", "type_before_parametrizations", "cached"]

_cache_enabled = 0
_cache: dict = {}  # (id(module), tensor name) -> its value, inside ``cached()``


@contextmanager
def cached() -> Iterator[None]:
    """Within this context, a parametrized tensor is computed the first time it is read and
    the same value is returned after (torch.nn.utils.parametrize.cached): useful when a
    parametrization is costly and read several times in one forward pass."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_parameter_or_buffer(module: Module, name: str, x: Tensor) -> None:
    if isinstance(x, Parameter):
        module.register_parameter(name, x)
    else:
        module.register_buffer(name, x)


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and its original(s): ``forward()`` is the
    parametrized value, ``right_inverse(value)`` sets the originals from a value."""

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        shape, dtype = tuple(original.shape), original.dtype
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {original.dtype}\nright_inverse(original).dtype: "
                    f"{new.dtype}")
            if new is not original:
                with no_grad():
                    original.copy_(new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, item in enumerate(new):
                if not isinstance(item, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors (list, "
                        f"tuple...). Got element {i} of the sequence with type "
                        f"{type(item).__name__}.")
                item = item.detach().clone()
                if isinstance(original, Parameter):
                    item = Parameter(item, original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", item)
        if not self.unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(z).__name__}.")
            if z.dtype != dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, "
                    "unless `unsafe` flag is enabled.\n"
                    f"unparametrized dtype: {dtype}\nparametrized dtype: {z.dtype}")
            if tuple(z.shape) != shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, "
                    "unless `unsafe` flag is enabled.\n"
                    f"unparametrized shape: {original.shape}\nparametrized shape: {z.shape}")

    def right_inverse(self, value: Tensor) -> None:
        """Sets the originals so that the parametrized value is ``value`` (through each
        parametrization's ``right_inverse``, last first)."""
        with no_grad():
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                else:
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       "implement right_inverse.")
            if self.is_tensor:
                self.original.copy_(value)
            else:
                for i, v in enumerate(value):
                    getattr(self, f"original{i}").copy_(v)

    def forward(self) -> Tensor:  # type: ignore[override]
        mods = list(self)
        if self.is_tensor:
            x = mods[0](self.original)
        else:
            x = mods[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in mods[1:]:
            x = module(x)
        return x


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name``, when given)."""
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def type_before_parametrizations(module: Module) -> type:
    """The module's class before ``register_parametrization`` injected its subclass."""
    return type(module).__bases__[0] if is_parametrized(module) else type(module)


def _refuse_pickling(self: Module) -> None:
    raise RuntimeError(
        "Serialization of parametrized modules is only supported through state_dict(). See:\n"
        "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
        "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")


def _deepcopy_module(self: Module, memo: dict) -> Module:
    import copy

    replica = self.__new__(type(self))
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    return replica


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Makes ``module.<tensor_name>`` the output of ``parametrization`` applied to the
    original tensor (or to what its ``right_inverse`` returned), chaining onto earlier
    parametrizations of the same tensor.

    Args:
        module: the module holding the parameter or buffer.
        tensor_name: its name.
        parametrization: a module whose ``forward`` maps the original(s) to the value.
        unsafe: skip the dtype and shape checks.

    Returns:
        ``module``.
    """
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        if not unsafe:
            z = parametrization(getattr(module, tensor_name))
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(z).__name__}.")
        plist.append(parametrization)
        plist.unsafe = plist.unsafe or unsafe
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    original = getattr(module, tensor_name)
    plist = ParametrizationList([parametrization], original, unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        cls = module.__class__
        fields = {"__getstate__": _refuse_pickling}
        if not hasattr(cls, "__deepcopy__"):  # (deepcopy would call __getstate__ otherwise)
            fields["__deepcopy__"] = _deepcopy_module
        module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), fields)
        module.parametrizations = ModuleDict()

    def get_parametrized(self: Module) -> Tensor:
        if not _cache_enabled:
            return self.parametrizations[tensor_name]()
        key = (id(self), tensor_name)
        if _cache.get(key) is None:
            _cache[key] = self.parametrizations[tensor_name]()
        return _cache[key]

    def set_original(self: Module, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))
    module.parametrizations[tensor_name] = plist
    return module


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Undoes the parametrizations of ``tensor_name``: it becomes a plain parameter (or
    buffer) holding the current parametrized value (``leave_parametrized``) or the original.
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
                original.copy_(value)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        with no_grad():
            value = getattr(module, tensor_name)
        first = plist.original0
        original = Parameter(value.detach(), first.requires_grad) \
            if isinstance(first, Parameter) else value.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module
