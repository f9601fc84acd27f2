"""``Optimizer``: the base class holding param_groups and per-parameter state (torch.optim)."""

from __future__ import annotations

import functools
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable
from copy import deepcopy
from itertools import chain
from typing import Any

from ..autograd.grad_mode import enable_grad, no_grad, set_grad_enabled
from ..dtypes import float32, float64, get_default_dtype
from ..ops import registry
from ..ops.creation import tensor
from ..tensor import Tensor
from ..nn.module import _typename, zero_grads
from ..nn.parameter import Parameter
from . import _compiling
from ._optimizer_hooks import (OptimizerHooks, register_optimizer_step_post_hook,
                               register_optimizer_step_pre_hook)

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """Marks a hyper-parameter that every param group must give."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer(OptimizerHooks):
    """Base class of optimizers (``torch.optim.Optimizer``).

    Args:
        params: an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts that define
            parameter groups (``{"params": [...], "lr": ...}``).
        defaults: the default hyper-parameters of a param group.
    """

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._init_hooks()
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                "dicts, but got " + _typename(params))
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(dict(group))

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_hooks()  # (an unpickled optimizer has none)

    def _steps_to_tensors(self) -> None:
        # state saved by older versions keeps "step" as a number; torch 2.x holds a float32 tensor
        for group in self.param_groups:
            for p in group["params"]:
                s = self.state.get(p, {})
                if s and not isinstance(s["step"], Tensor):
                    s["step"] = tensor(float(s["step"]), dtype=float32)

    def __repr__(self) -> str:
        out = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            out += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    out += f"    {key}: {group[key]}\n"
        return out + ")"

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Adds a group of parameters with its own hyper-parameters (defaults fill the rest)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list instead.")
        else:
            params = list(params)
        tensors, names = [], []
        for p in params:
            if isinstance(p, tuple):
                names.append(p[0])
                tensors.append(p[1])
            else:
                tensors.append(p)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError(
                    "all optimizer params should be with/without names. Some param names are "
                    "missing")
            param_group["param_names"] = names
        for p in tensors:
            if not isinstance(p, Tensor):
                raise TypeError(
                    "optimizer can only optimize Tensors, but one of the params is "
                    + _typename(p))
            if not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    "parameter group didn't specify a value of required optimization parameter "
                    f"{name}")
            param_group.setdefault(name, default)
        if len(tensors) != len({id(p) for p in tensors}):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, this "
                "will cause an error; see github.com/pytorch/pytorch/issues/40967 for more "
                "information", stacklevel=3)
        seen: set = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                txt = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. cannot add param "
                    f"group {txt} to the optimizer")
        if any(id(p) in seen for p in tensors):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets the gradients of all optimized tensors (to None, or zeros in place)."""
        zero_grads((p for group in self.param_groups for p in group["params"]), set_to_none)

    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}``.

        Parameters are replaced by their index in the order of the groups; the state tensors
        are the optimizer's own (not copies), as in torch.
        """
        self._run_state_dict_pre_hooks()
        mapping: dict[int, int] = {}
        start = 0

        def pack(group: dict[str, Any]) -> dict[str, Any]:
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            mapping.update({id(p): i for i, p in enumerate(group["params"], start)
                            if id(p) not in mapping})
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        groups = [pack(g) for g in self.param_groups]
        state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v
                 for k, v in self.state.items()}
        return self._run_state_dict_post_hooks({"state": state, "param_groups": groups})

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Loads a ``state_dict()``: hyper-parameters per group and per-parameter state."""
        state_dict = self._run_load_state_dict_pre_hooks(state_dict.copy())
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of "
                "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param: Tensor, value: Any, key: Any = None) -> Any:
            if isinstance(value, Tensor):
                if key != "step" and param.is_floating_point():
                    return value.to(param.dtype)
                return value
            if isinstance(value, dict):
                return {k: cast(param, v, k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v) for v in value)
            return value

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = cast(param, v)
            else:
                state[k] = v
        new_groups = []
        for g, ng in zip(groups, saved_groups):
            ng["params"] = g["params"]
            if "param_names" in g and "param_names" not in ng:
                ng["param_names"] = g["param_names"]
            new_groups.append(ng)
        self.__setstate__({"state": state, "param_groups": new_groups})
        self._run_load_state_dict_post_hooks()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Performs one optimization step; ``closure`` re-evaluates the loss (run with grad)."""
        loss = None
        _compiling.check_not_deferred(self)
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                if registry.sparse_live and not self._sparse_grads:
                    self._refuse_sparse(group)
                self._update_group(group)
                _compiling.track(self, group)  # (only while jit traces the step)
        return loss

    # Whether the update takes sparse gradients (SGD, Adagrad, SparseAdam); the others raise
    # torch's error for one, with ``_sparse_error`` or "<torch's class name> does not ...".
    _sparse_grads = False
    _sparse_error: str | None = None

    def _refuse_sparse(self, group: dict[str, Any]) -> None:
        for p in group["params"]:
            g = p._grad
            if g is not None and getattr(g, "is_sparse", False):
                name = next(c.__name__ for c in type(self).__mro__
                            if c.__module__.startswith("jitgrad.optim"))
                raise RuntimeError(self._sparse_error
                                   or f"{name} does not support sparse gradients")

    def _update_group(self, group: dict[str, Any]) -> None:
        raise NotImplementedError


# ---------------------------------------------- helpers that third-party optimizers import
# (torch.optim.optimizer's names: timm's, gsplat's and other custom optimizers use them)

ParamsT = Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]]

_foreach_doc = r"""foreach (bool, optional): whether foreach implementation of optimizer
            is used. If unspecified by the user (so foreach is None), we will try to use
            foreach over the for-loop implementation on CUDA, since it is usually
            significantly more performant. (default: None)"""
_fused_doc = r"""fused (bool, optional): whether the fused implementation is used.
            Currently, `torch.float64`, `torch.float32`, `torch.float16`, and `torch.bfloat16`
            are supported. (default: None)"""
_capturable_doc = r"""capturable (bool, optional): whether this instance is safe to
            capture in a graph, whether for CUDA graphs or for torch.compile support.
            Tensors are only capturable when on supported :ref:`accelerators<accelerators>`.
            Passing True can impair ungraphed performance, so if you don't intend to graph
            capture this instance, leave it False (default: False)"""
_differentiable_doc = r"""differentiable (bool, optional): whether autograd should
            occur through the optimizer step in training. Otherwise, the step()
            function runs in a torch.no_grad() context. Setting to True can impair
            performance, so leave it False if you don't intend to run autograd
            through this instance (default: False)"""
_maximize_doc = r"""maximize (bool, optional): maximize the objective with respect to the
            params, instead of minimizing (default: False)"""
_params_doc = r"""params (iterable): iterable of parameters or named_parameters to optimize
            or iterable of dicts defining parameter groups. When using named_parameters,
            all parameters in all groups should be named"""

# where torch has multi-tensor (foreach) and fused kernels: foreach on accelerators only, fused
# on the CPU too
_FOREACH_DEVICES = ("cuda", "xpu", "mtia")
_FUSED_DEVICES = ("mps", "cuda", "xpu", "hpu", "cpu", "mtia")


def _use_grad_for_differentiable(func: Callable) -> Callable:
    """Runs ``step`` with grad mode on only if the optimizer is ``differentiable``."""
    @functools.wraps(func)
    def _use_grad(self: Any, *args: Any, **kwargs: Any) -> Any:
        prev = registry.state.grad_enabled
        try:
            set_grad_enabled(self.defaults["differentiable"])
            return func(self, *args, **kwargs)
        finally:
            set_grad_enabled(prev)
    return _use_grad


def _get_value(x: Any) -> Any:
    """A 0-d tensor's number (the optimizers' ``step`` counts); anything else as it is (and
    the tensor itself inside a jit trace, as torch's under ``torch.compile``)."""
    if registry.state.traces:
        return x
    return x.item() if isinstance(x, Tensor) else x


def _get_scalar_dtype(is_fused: bool | None = None) -> Any:
    """The dtype of the optimizers' ``step`` tensors: float32 when fused, else float64 only
    where the default dtype is float64."""
    if is_fused:
        return float32
    return float64 if get_default_dtype() is float64 else float32


def _default_to_fused_or_foreach(params: list, differentiable: bool,
                                 use_fused: bool = False) -> tuple[bool, bool]:
    """(fused, foreach) as torch picks them when the user gives neither: fused only if asked
    and every parameter is a floating tensor on a fused device; foreach where every parameter
    lives on an accelerator (never on the CPU)."""
    if differentiable:
        return False, False
    fused = use_fused and all(p is None or (type(p) in (Tensor, Parameter) and p.device.type
                                            in _FUSED_DEVICES and p.is_floating_point())
                              for p in params)
    foreach = not fused and all(p is None or (type(p) in (Tensor, Parameter) and
                                              p.device.type in _FOREACH_DEVICES)
                                for p in params)
    return fused, foreach
