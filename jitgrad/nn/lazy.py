"""Lazy modules (torch.nn.modules.lazy): ``UninitializedParameter``/``UninitializedBuffer``,
``LazyModuleMixin`` and LazyLinear, LazyConv1d/2d/3d, LazyConvTranspose1d/2d/3d,
LazyBatchNorm1d/2d/3d and LazyInstanceNorm1d/2d/3d; also ``nn.Buffer``.

A lazy module holds uninitialized parameters until its first forward: a forward pre-hook
infers the input's features, materializes them in place (the same ``Parameter`` objects, so an
optimizer made before or after the dry run holds them), resets them as the eager module does,
and the module's class becomes the eager one (``cls_to_become``). Loading a state dict
materializes them to the loaded shapes.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from .. import dtypes
from ..autograd.grad_mode import no_grad
from ..ops.creation import empty, tensor
from ..tensor import Tensor
from .batchnorm import BatchNorm1d, BatchNorm2d
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d
from .conv3t import BatchNorm3d, ConvTranspose3d
from .instance_norm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .layers import Linear
from .parameter import Parameter
from .._torch_function import _disabled_torch_function_impl

__all__ = ["Buffer", "UninitializedParameter", "UninitializedBuffer",
           "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class _BufferMeta(type):
    def __instancecheck__(cls, instance: Any) -> bool:
        if cls is Buffer and isinstance(instance, Tensor) and \
                getattr(instance, "_is_buffer", False):
            return True
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """A tensor that registers as a buffer when assigned as a Module attribute
    (``torch.nn.Buffer``): ``self.b = nn.Buffer(t, persistent=False)``.

    Args:
        data: the buffer's tensor (detached); an empty float tensor when None.
        persistent: whether the buffer is part of the module's ``state_dict``. Default: True.
    """

    # (no part in the __torch_function__ protocol, as torch's own subclasses)
    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True) -> Tensor:
        if data is None:
            data = empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


_SHAPE_ERROR = ("Can't access the shape of an uninitialized parameter or buffer. This error "
                "usually happens in `load_state_dict` when trying to load an uninitialized "
                "parameter into an initialized one. Call `forward` to initialize the parameters "
                "before accessing their attributes.")


class UninitializedTensorMixin:
    """The behaviour of an uninitialized parameter or buffer: no shape until ``materialize``."""

    __slots__ = ()
    cls_to_become: type = Tensor

    def materialize(self, shape: Any, device: Any = None,
                    dtype: dtypes.dtype | None = None) -> None:
        """Gives the tensor data of ``shape`` (uninitialized values, this tensor's dtype and
        device unless given) and turns it into a ``cls_to_become`` in place.

        Args:
            shape: the materialized shape.
            device: the device of the data (default: this tensor's).
            dtype: the dtype of the data (default: this tensor's).
        """
        data = empty(tuple(shape), dtype=dtype or self._dtype,
                     device=device if device is not None else self.device)
        self._data, self._dtype = data._data, data._dtype
        self.__class__ = self.cls_to_become

    @property
    def shape(self) -> Any:
        raise RuntimeError(_SHAPE_ERROR)

    def size(self, dim: int | None = None) -> Any:
        raise RuntimeError(_SHAPE_ERROR)

    def share_memory_(self) -> Any:
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call "
                           "`forward` to initialize the parameters before calling "
                           "`module.share_memory()`.")

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, protocol: Any) -> tuple:
        return (type(self), (self.requires_grad,))

    def __deepcopy__(self, memo: dict) -> Any:
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, dtype=self._dtype)
        return memo[id(self)]


def is_lazy(param: Any) -> bool:
    """Whether ``param`` is an ``UninitializedParameter`` or ``UninitializedBuffer``."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape is not known yet (``torch.nn.UninitializedParameter``); it
    becomes a ``Parameter`` by ``materialize``.

    Args:
        requires_grad: whether the parameter requires gradient. Default: True.
        device: the device it will be materialized on.
        dtype: the dtype it will be materialized in (default: the default float dtype).
    """

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device: Any = None,
                dtype: dtypes.dtype | None = None) -> UninitializedParameter:
        data = empty(0, dtype=dtype, device=device)
        p = Tensor.__new__(cls)
        p._init(data._data, data._dtype, bool(requires_grad))
        return p

    def __init__(self, requires_grad: bool = True, device: Any = None,
                 dtype: dtypes.dtype | None = None) -> None:
        pass


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (``torch.nn.UninitializedBuffer``); it becomes a
    ``Tensor`` by ``materialize``.

    Args:
        requires_grad: whether the buffer requires gradient. Default: False.
        device: the device it will be materialized on.
        dtype: the dtype it will be materialized in (default: the default float dtype).
        persistent: whether the buffer is part of the ``state_dict``. Default: True.
    """

    cls_to_become = Tensor
    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, requires_grad: bool = False, device: Any = None,
                dtype: dtypes.dtype | None = None, persistent: bool = True
                ) -> UninitializedBuffer:
        data = empty(0, dtype=dtype, device=device)
        b = Tensor.__new__(cls)
        b._init(data._data, data._dtype, bool(requires_grad))
        b.persistent = persistent
        b._is_buffer = True
        return b

    def __init__(self, requires_grad: bool = False, device: Any = None,
                 dtype: dtypes.dtype | None = None, persistent: bool = True) -> None:
        pass


class LazyModuleMixin:
    """torch's LazyModuleMixin: infers the uninitialized parameters from the first input,
    then the module's class becomes ``cls_to_become``.

    Subclasses define ``initialize_parameters(*args, **kwargs)``, which materializes them.
    """

    cls_to_become: type | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        """Materializes the uninitialized parameters from the forward's arguments."""
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer of this module is still uninitialized."""
        return any(is_lazy(t) for t in (*self._parameters.values(), *self._buffers.values()))

    def _infer_parameters(self, module: Any, args: tuple, kwargs: dict | None = None) -> None:
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        del module.__dict__["_initialize_hook"]
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def state_dict(self, *, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> OrderedDict:
        """As ``Module.state_dict``, with the uninitialized tensors themselves (as torch)."""
        out = super().state_dict(destination=destination, prefix=prefix, keep_vars=keep_vars)
        for table in (self._parameters, self._buffers):
            for name, t in table.items():
                if is_lazy(t) and prefix + name in out:
                    out[prefix + name] = t
        return out

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: dict,
                              strict: bool, missing: list, unexpected: list,
                              errors: list) -> None:
        # torch's _lazy_load_hook: materialize to the loaded shapes first
        skipped = {}
        for table in (self._parameters, self._buffers):
            for name, t in list(table.items()):
                key = prefix + name
                if t is None or not is_lazy(t) or key not in state_dict:
                    continue
                if is_lazy(state_dict[key]):  # both uninitialized: nothing to copy
                    skipped[name] = (table, table.pop(name))
                else:
                    with no_grad():
                        t.materialize(state_dict[key].shape)
        try:
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing,
                                          unexpected, errors)
        finally:
            for name, (table, t) in skipped.items():
                table[name] = t
        for name in skipped:  # (not unexpected: the module has them)
            if prefix + name in unexpected:
                unexpected.remove(prefix + name)


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose ``in_features`` is inferred from the first input
    (``torch.nn.LazyLinear``); it then becomes a ``Linear``.

    Args:
        out_features: size of each output sample.
        bias: whether to learn an additive bias. Default: True.
        device, dtype: where and in which dtype the parameters will live.
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: Any = None,
                 dtype: dtypes.dtype | None = None) -> None:
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        """Linear's initialization, once the parameters are materialized."""
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:  # noqa: A002
        """Materializes ``weight (out_features, input.shape[-1])`` and ``bias``."""
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class _LazyConvXdMixin(LazyModuleMixin):
    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:  # noqa: A002
        if not self.has_uninitialized_params():
            return
        n = self._dims
        if input.ndim not in (n + 1, n + 2):
            raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: {input.shape}")
        self.in_channels = input.shape[1] if input.ndim == n + 2 else input.shape[0]
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        with no_grad():
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups)
            else:
                shape = (self.out_channels, self.in_channels // self.groups)
            self.weight.materialize(shape + tuple(self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()


def _lazy_conv(base: type, transposed: bool) -> type:
    n = base._dims

    if transposed:
        def init(self, out_channels: int, kernel_size: Any, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     bias: bool = True, dilation: Any = 1, padding_mode: str = "zeros",
                     device: Any = None, dtype: dtypes.dtype | None = None) -> None:
            super(cls, self).__init__(0, 0, kernel_size, stride, padding, output_padding,
                                      groups, False, dilation, padding_mode, device, dtype)
            _finish(self, out_channels, bias, device, dtype)
    else:
        def init(self, out_channels: int, kernel_size: Any, stride: Any = 1,
                     padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                     padding_mode: str = "zeros", device: Any = None,
                     dtype: dtypes.dtype | None = None) -> None:
            super(cls, self).__init__(0, 0, kernel_size, stride, padding, dilation, groups,
                                      False, padding_mode, device, dtype)
            _finish(self, out_channels, bias, device, dtype)

    name = f"Lazy{base.__name__}"
    cls = type(name, (_LazyConvXdMixin, base), {
        "__init__": init, "cls_to_become": base, "__module__": __name__,
        "__doc__": f"""A {base.__name__} whose ``in_channels`` is inferred from the first input
    (``torch.nn.{name}``); it then becomes a ``{base.__name__}``. The arguments are
    {base.__name__}'s without ``in_channels`` ({n}-d)."""})
    init.__name__, init.__qualname__ = "__init__", f"{name}.__init__"
    return cls


def _finish(self: Any, out_channels: int, bias: bool, device: Any, dtype: Any) -> None:
    self.weight = UninitializedParameter(device=device, dtype=dtype)
    self.out_channels = out_channels
    if bias:
        self.bias = UninitializedParameter(device=device, dtype=dtype)


LazyConv1d = _lazy_conv(Conv1d, False)
LazyConv2d = _lazy_conv(Conv2d, False)
LazyConv3d = _lazy_conv(Conv3d, False)
LazyConvTranspose1d = _lazy_conv(ConvTranspose1d, True)
LazyConvTranspose2d = _lazy_conv(ConvTranspose2d, True)
LazyConvTranspose3d = _lazy_conv(ConvTranspose3d, True)


class _LazyNormBase(LazyModuleMixin):
    """torch's _LazyNormBase: ``num_features`` from the first input's dim 1."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None,
                 dtype: dtypes.dtype | None = None, *, bias: bool = True) -> None:
        super().__init__(0, eps, momentum, False, False, device, dtype)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
            else:
                self.register_parameter("bias", None)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = tensor(0, dtype=dtypes.int64, device=device)

    def reset_parameters(self) -> None:
        """The eager module's reset, once the parameters are materialized."""
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:  # noqa: A002
        """Materializes weight, bias and the running statistics to ``input.shape[1]``."""
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[1]
        with no_grad():
            if self.affine:
                self.weight.materialize((self.num_features,))
                if self.bias is not None:
                    self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


def _lazy_norm(base: type) -> type:
    name = f"Lazy{base.__name__}"
    return type(name, (_LazyNormBase, base), {
        "cls_to_become": base, "__module__": __name__,
        "__doc__": f"""A {base.__name__} whose ``num_features`` is inferred from the first
    input's dim 1 (``torch.nn.{name}``); it then becomes a ``{base.__name__}``.

    Args:
        eps: added to the variance. Default: 1e-5.
        momentum: the running statistics' update weight. Default: 0.1.
        affine: learn a per-channel weight and bias. Default: True.
        track_running_stats: keep running statistics. Default: True.
        device, dtype: where and in which dtype the parameters will live.
    """})


LazyBatchNorm1d = _lazy_norm(BatchNorm1d)
LazyBatchNorm2d = _lazy_norm(BatchNorm2d)
LazyBatchNorm3d = _lazy_norm(BatchNorm3d)
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d)
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d)
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d)
