"""``Module``'s state dict: ``state_dict``, ``load_state_dict``, the per-module steps they run
(``_save_to_state_dict``, ``_load_from_state_dict``, with torch's signatures, so subclasses that
override them as in torch work), extra state, and the four state-dict hooks."""

from __future__ import annotations

import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Mapping
from typing import Any

from .._hooks import RemovableHandle, add_hook
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from .parameter import Parameter

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _hooks(module: Any, name: str) -> dict:
    return module.__dict__.setdefault(name, OrderedDict())


STATE_DICT_HOOK_TABLES = ("_state_dict_hooks", "_state_dict_pre_hooks",
                          "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks")


class _WithoutModule:
    """A load pre-hook registered by ``_register_load_state_dict_pre_hook(hook,
    with_module=False)``: called without the module, as torch's ``_WrappedHook``."""

    def __init__(self, hook: Callable) -> None:
        self.hook = hook

    def __call__(self, module: Any, *args: Any) -> Any:
        return self.hook(*args)


class StateDictMixin:
    """The state-dict half of ``Module`` (see the module docstring)."""

    _version: int = 1

    # ------------------------------------------------------------------ extra state
    def get_extra_state(self) -> Any:
        """What ``state_dict`` stores under ``<prefix>_extra_state`` when a subclass overrides
        this (and ``set_extra_state``, which ``load_state_dict`` then calls with it)."""
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called. "
            "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template="
            "bug-report.yml to report this bug.")

    def set_extra_state(self, state: Any) -> None:
        """Restores what ``get_extra_state`` returned (see there)."""
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called. "
            "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template="
            "bug-report.yml to report this bug.")

    def _has_extra_state(self, method: str) -> bool:
        return getattr(type(self), method) is not getattr(StateDictMixin, method)

    # ------------------------------------------------------------------ hooks
    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Registers ``hook(module, prefix, keep_vars)``, run before ``state_dict`` saves this
        module's entries."""
        return add_hook(_hooks(self, "_state_dict_pre_hooks"), hook)

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Registers ``hook(module, state_dict, prefix, local_metadata) -> None``, run after
        ``state_dict`` saved this module and its children (change ``state_dict`` in place)."""
        hook._from_public_api = True  # (as torch marks it: it must return None)
        return add_hook(_hooks(self, "_state_dict_hooks"), hook)

    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        """torch's older post-hook: ``hook(module, state_dict, prefix, local_metadata)`` may
        return a new state dict, taken where it is the root module's."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError(
                "Cannot register the same function as the state dict post hook that was "
                "previously registered via register_state_dict_post_hook")
        return add_hook(_hooks(self, "_state_dict_hooks"), hook)

    def _register_load_state_dict_pre_hook(self, hook: Callable,
                                           with_module: bool = False) -> RemovableHandle:
        """``register_load_state_dict_pre_hook``; without ``with_module`` the hook is called
        without the module (``hook(state_dict, prefix, ...)``)."""
        return add_hook(_hooks(self, "_load_state_dict_pre_hooks"),
                        hook if with_module else _WithoutModule(hook))

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Registers ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)``, run before this module's entries are loaded."""
        return add_hook(_hooks(self, "_load_state_dict_pre_hooks"), hook)

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Registers ``hook(module, incompatible_keys) -> None``, run after ``load_state_dict``
        loaded this module and its children (change ``incompatible_keys`` in place)."""
        return add_hook(_hooks(self, "_load_state_dict_post_hooks"), hook)

    # ------------------------------------------------------------------ saving
    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if self._has_extra_state("get_extra_state"):
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args: Any, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by dotted name (detached unless ``keep_vars``),
        plus each module's extra state; ``destination._metadata`` holds each module's
        ``version``, as torch's (``args``: torch's deprecated positional form)."""
        if args:
            warnings.warn(
                "Positional args are being deprecated, use kwargs instead. Refer to "
                "https://pytorch.org/docs/main/generated/torch.nn.Module.html"
                "#torch.nn.Module.state_dict for details.", FutureWarning, stacklevel=2)
            if destination is None:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self.__dict__.get("_state_dict_pre_hooks", {}).values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".",
                             keep_vars=keep_vars)
        for hook in self.__dict__.get("_state_dict_hooks", {}).values():
            result = hook(self, destination, prefix, local_metadata)
            if not getattr(hook, "_from_public_api", False):
                if result is not None:  # (_register_state_dict_hook's may replace it)
                    destination = result
            elif result is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return destination

    # ------------------------------------------------------------------ loading
    def _local_state(self) -> dict:
        out = {k: v for k, v in self._parameters.items() if v is not None}
        out.update((k, v) for k, v in self._buffers.items()
                   if v is not None and k not in self._non_persistent_buffers_set)
        return out

    def _load_from_state_dict(self, state_dict: Mapping, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        """Loads this module's own entries of ``state_dict`` (torch's signature; subclasses
        override it to migrate old checkpoints, using ``local_metadata["version"]``)."""
        for hook in self.__dict__.get("_load_state_dict_pre_hooks", {}).values():
            hook(self, state_dict, prefix, local_metadata, strict, missing_keys,
                 unexpected_keys, error_msgs)
        assign = local_metadata.get("assign_to_params_buffers", False)
        local = self._local_state()
        for name, param in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(
                    f'While copying the parameter named "{key}", expected torch.Tensor or '
                    f"Tensor-like object from checkpoint but received {type(value)}")
                continue
            if param.ndim == 0 and value.ndim == 1:  # (torch's rule for old checkpoints)
                value = value[0]
            if tuple(value.shape) != tuple(param.shape):
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape {value.shape} from "
                    f"checkpoint, the shape in current model is {param.shape}.")
                continue
            try:
                with no_grad():
                    if assign:
                        if name in self._parameters:
                            if isinstance(value, Parameter):  # (kept, as torch)
                                value.requires_grad_(param.requires_grad)
                            else:
                                value = Parameter(value, param.requires_grad)
                            setattr(self, name, value)
                        else:
                            self._buffers[name] = value
                    else:
                        if param.is_meta and not value.is_meta:
                            warnings.warn(
                                f"for {key}: copying from a non-meta parameter in the checkpoint "
                                "to a meta parameter in the current model, which is a no-op. "
                                "(Did you mean to pass `assign=True` to assign items in the state "
                                "dictionary to their corresponding key in the module instead of "
                                "copying them in place?)", UserWarning, stacklevel=2)
                        param.copy_(value)
            except Exception as e:  # noqa: BLE001 - reported like torch does
                error_msgs.append(
                    f'While copying the parameter named "{key}", whose dimensions in the model '
                    f"are {param.shape} and whose dimensions in the checkpoint are "
                    f"{value.shape}, an exception occurred : {e.args}.")
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        has_extra = self._has_extra_state("set_extra_state")
        if has_extra:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if not key.startswith(prefix) or key == extra_key:
                    continue
                parts = key[len(prefix):].split(".", 1)
                if len(parts) > 1:
                    if parts[0] not in self._modules:
                        unexpected_keys.append(key)
                elif parts[0] not in local:
                    unexpected_keys.append(key)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copies parameters and buffers from ``state_dict`` into this module.

        Args:
            state_dict: a mapping from dotted names to tensors (as ``state_dict()`` returns).
            strict: when True, missing and unexpected keys are errors.
            assign: when True, the tensors are assigned instead of copied in place.

        Returns:
            ``(missing_keys, unexpected_keys)`` as a named tuple.

        Raises:
            RuntimeError: with torch's "Error(s) in loading state_dict for ..." text.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list = []
        unexpected: list = []
        errors: list = []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)

        def load(module: Any, local_state_dict: Mapping, prefix: str) -> None:
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True,
                                         missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local_state_dict.items()
                                 if k.startswith(child_prefix)}, child_prefix)
            incompatible = _IncompatibleKeys(missing, unexpected)
            for hook in module.__dict__.get("_load_state_dict_post_hooks", {}).values():
                if hook(module, incompatible) is not None:
                    raise AssertionError(
                        "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                        "expected to return new values, if incompatible_keys need to be "
                        "modified, it should be done inplace.")

        load(self, state_dict, "")
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)
