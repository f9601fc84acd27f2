"""``functional_call``: run a module with some parameters and buffers replaced (torch.func)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...tensor import Tensor

__all__ = ["functional_call", "stack_module_state"]


def _owner(module: Any, name: str) -> tuple[Any, str] | None:
    """(the owning submodule, the attribute name) for a dotted name, or None."""
    *path, leaf = name.split(".")
    m = module
    for part in path:
        m = m.__dict__.get("_modules", {}).get(part)
        if m is None:
            return None
    return m, leaf


def _slot(module: Any, name: str) -> tuple[Any, str, dict] | None:
    """(the owning submodule, the attribute name, its table) for a dotted name, or None."""
    owner = _owner(module, name)
    if owner is None:
        return None
    m, leaf = owner
    for table in ("_parameters", "_buffers"):
        d = m.__dict__.get(table, {})
        if leaf in d:
            return m, leaf, d
    return None


def functional_call(module: Any, parameter_and_buffer_dicts: Any, args: Any = None,
                    kwargs: dict | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """Calls ``module(*args, **kwargs)`` with its parameters and buffers replaced by the given
    tensors for the duration of the call (torch.func.functional_call).

    Args:
        module: the ``nn.Module`` to call.
        parameter_and_buffer_dicts: a dict ``{dotted name: tensor}``, or a tuple/list of them
            (their keys must be disjoint).
        args: the positional arguments (a tuple, or a single argument).
        kwargs: the keyword arguments.
        tie_weights: a parameter registered under several names (tied weights) is replaced
            under all of them when one is given.
        strict: every parameter and buffer must be given, and no other names.

    Returns:
        The module's result.
    """
    if isinstance(parameter_and_buffer_dicts, Mapping):
        values = dict(parameter_and_buffer_dicts)
    elif isinstance(parameter_and_buffer_dicts, (tuple, list)):
        values = {}
        for d in parameter_and_buffer_dicts:
            values.update(d)
        seen: dict = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                seen[k] = seen.get(k, 0) + 1
        repeated = [k for k, n in seen.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             "functional call is ambiguous")
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple "
                         f"of dicts, but got {type(parameter_and_buffer_dicts)}")
    named = dict(module.named_parameters(remove_duplicate=False)) \
        if _takes_remove_duplicate(module) else dict(module.named_parameters())
    named.update(dict(module.named_buffers()))
    if strict:
        missing = [k for k in named if k not in values]
        unexpected = [k for k in values if k not in named]
        if missing or unexpected:
            msg = f"Error(s) in reparametrizing for {type(module).__name__}:"
            if unexpected:
                msg += "\n\tUnexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected) + "."
            if missing:
                msg += "\n\tMissing key(s): " + ", ".join(f"'{k}'" for k in missing) + "."
            raise RuntimeError(msg)
    if tie_weights:  # every name of a given tensor gets the new value
        by_id: dict = {}
        for k, t in named.items():
            by_id.setdefault(id(t), []).append(k)
        for names in by_id.values():
            given = [k for k in names if k in values]
            if len({id(values[k]) for k in given}) > 1:
                raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, "
                                 "which are tied. Consider using tie_weights=False")
        for k in list(values):
            if k in named:
                for alias in by_id[id(named[k])]:
                    values.setdefault(alias, values[k])
    saved, originals = [], []
    try:
        for k, v in values.items():
            slot = _slot(module, k)
            if slot is None:
                _set_other(module, k, v, originals)
                continue
            m, leaf, table = slot
            if v is not None and not isinstance(v, Tensor):
                raise TypeError(f"functional_call: the value for {k!r} must be a Tensor, got "
                                f"{type(v).__name__}")
            saved.append((table, leaf, table[leaf]))
            table[leaf] = v
        if args is None:
            args = ()
        elif not isinstance(args, tuple):
            args = (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for table, leaf, old in reversed(saved):
            table[leaf] = old
        for original, old in reversed(originals):
            with _no_grad():
                original.copy_(old)


def _set_other(module: Any, name: str, value: Any, originals: list) -> None:
    """A name that is no parameter or buffer, as torch's: a parametrized tensor takes ``value``
    through its ``right_inverse`` (its originals, kept in ``originals``, are restored after the
    call), a submodule refuses it, any other name has no effect."""
    from .parametrize import is_parametrized

    owner = _owner(module, name)
    if owner is None:
        return
    m, leaf = owner
    if is_parametrized(m, leaf):
        plist = m.parametrizations[leaf]
        names = ["original"] if plist.is_tensor else [f"original{i}"
                                                      for i in range(plist.ntensors)]
        for n in names:
            original = getattr(plist, n)
            originals.append((original, original.detach().clone()))
        plist.right_inverse(value)
    elif leaf in m.__dict__.get("_modules", {}):
        raise TypeError(f"attribute `{leaf}`: {m._modules[leaf]!r} is not an instance of "
                        "jitgrad.Tensor")


def _no_grad():
    from ...autograd.grad_mode import no_grad

    return no_grad()


def _takes_remove_duplicate(module: Any) -> bool:
    import inspect

    try:
        return "remove_duplicate" in inspect.signature(module.named_parameters).parameters
    except (TypeError, ValueError):
        return False


def stack_module_state(models: Any) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """The parameters and buffers of same-class ``models`` stacked along a new dim 0, keyed
    by their ``state_dict`` names, for ``vmap``-ed ``functional_call`` ensembles. Stacked
    parameters are new leaves (requiring grad when the originals do).

    Args:
        models: a sequence of modules of one class, all in training or all in eval mode.

    Returns:
        ``(params, buffers)``, two dicts of stacked tensors.
    """
    from ...ops.movement import stack

    models = list(models)
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def leaf(tensors: list[Tensor], name: str) -> Tensor:
        flags = {t.requires_grad for t in tensors}
        if len(flags) > 1:
            raise RuntimeError(f"Expected {name} from each model to have the same "
                               ".requires_grad")
        out = stack(tensors)
        return out.detach().requires_grad_() if flags == {True} else out

    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {k: leaf([p[k] for p in all_params], k) for k in all_params[0]}
    buffers = {k: leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers
