"""``torch.nn.utils.weight_norm`` / ``remove_weight_norm``, the (deprecated in torch) hook
form of weight normalization: ``weight = g * v / ||v||`` recomputed before every forward,
the norm taken over every dim but ``dim``."""

from __future__ import annotations

import warnings
from typing import Any

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ..parameter import Parameter

__all__ = ["weight_norm", "remove_weight_norm", "norm_except_dim"]


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:  # noqa: A002
    """The ``pow``-norm of ``v`` over every dim but ``dim`` (kept, the others of size 1);
    ``dim=-1``: the norm of the whole tensor (0-d)."""
    if dim == -1:
        return v.norm(pow)
    dims = tuple(d for d in range(v.ndim) if d != dim)
    return v.norm(pow, dim=dims, keepdim=True) if dims else v.abs()


def _weight_norm(v: Tensor, g: Tensor, dim: int) -> Tensor:
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_g`` and
    ``<name>_v``."""

    def __init__(self, name: str, dim: int | None) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Any) -> Tensor:
        """``g * v / ||v||`` of the module's current ``<name>_g`` and ``<name>_v``."""
        return _weight_norm(getattr(module, self.name + "_v"),
                            getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module: Any, name: str, dim: int | None) -> WeightNorm:
        """Replaces the parameter ``name`` by ``name_g`` and ``name_v`` and registers the
        hook."""
        # (torch's apply is @deprecated: the warning names the line that calls apply, in
        # weight_norm for its users, so the default filter shows it once a process)
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning,
                      stacklevel=2)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(
                    f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        with no_grad():
            g = norm_except_dim(weight, 2, fn.dim)
        module.register_parameter(name + "_g", Parameter(g.detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Any) -> None:
        """Puts back a plain parameter ``name`` with the current normalized value."""
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module: Any, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Any, name: str = "weight", dim: int | None = 0) -> Any:
    """Reparametrizes ``module.<name>`` as ``g * v / ||v||`` (``<name>_g`` holds the norms
    over every dim but ``dim``, ``None`` for the whole tensor, ``<name>_v`` the direction),
    recomputed before every forward.

    Args:
        module: the module holding the parameter.
        name: the parameter's name. Default: ``'weight'``.
        dim: the dim kept by the norm. Default: 0.

    Returns:
        ``module``.
    """
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Any, name: str = "weight") -> Any:
    """Undoes ``weight_norm``: ``module.<name>`` becomes a plain parameter again."""
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
