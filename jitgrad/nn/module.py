"""``Module``: the base class of layers and models, with torch.nn.Module's registration rules."""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from .. import dtypes
from ..autograd.node import RemovableHandle
from ..tensor import Tensor
from . import _module_hooks
from ._module_state import STATE_DICT_HOOK_TABLES, StateDictMixin
from .parameter import Parameter

__all__ = ["Module"]


def _typename(obj: Any) -> str:
    if isinstance(obj, Tensor):
        return f"jitgrad.{obj.dtype._legacy}"
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in (None, "builtins") else f"{module}.{name}"


def _addindent(s: str, n: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


def zero_grads(tensors: Any, set_to_none: bool = True) -> None:
    """Sets each tensor's ``.grad`` to None, or zeroes it in place (detached), as torch does."""
    for p in tensors:
        if p.grad is None:
            continue
        if set_to_none:
            p.grad = None
        else:
            g = p.grad
            if g.grad_fn is not None:
                g.detach_()
            else:
                g.requires_grad_(False)
            g.zero_()

class Module(StateDictMixin):
    """Base class for all neural network modules (``torch.nn.Module``).

    Assigning a ``Parameter`` or a ``Module`` as an attribute registers it; ``parameters()``,
    ``state_dict()``, ``train()``/``eval()`` and ``zero_grad()`` then walk the registered tree.
    Subclasses call ``super().__init__()`` first and define ``forward``.
    """

    training: bool
    dump_patches: bool = False
    call_super_init: bool = False

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_forward_hooks", {})
        object.__setattr__(self, "_forward_pre_hooks", {})
        object.__setattr__(self, "_backward_hooks", {})
        object.__setattr__(self, "_backward_pre_hooks", {})
        for name in STATE_DICT_HOOK_TABLES:  # (torch's attributes: libraries read them)
            object.__setattr__(self, name, OrderedDict())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation of the module; subclasses override it."""
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        d = self.__dict__
        compiled = d.get("_compiled_call_impl")
        if compiled is not None:  # Module.compile
            return compiled(*args, **kwargs)
        return self._call_impl(*args, **kwargs)

    def _call_impl(self, *args: Any, **kwargs: Any) -> Any:
        d = self.__dict__
        if not (self._forward_pre_hooks or self._forward_hooks or d.get("_backward_hooks")
                or d.get("_backward_pre_hooks") or d.get("_legacy_backward_hooks")
                or _module_hooks.GLOBAL_FORWARD_PRE_HOOKS or _module_hooks.GLOBAL_FORWARD_HOOKS):
            return self.forward(*args, **kwargs)
        return _module_hooks.call_with_hooks(self, args, kwargs)

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """Compiles this module's calls in place with ``jitgrad.compile`` (its arguments);
        parameters and state dict keys stay as they are."""
        # the public ``jitgrad.compile``, looked up at run time: the JIT is layers above nn
        # (the package's lazy ``__getattr__`` imports it on first use)
        compile_fn = sys.modules[__name__.split(".")[0]].compile
        object.__setattr__(self, "_compiled_call_impl",
                           compile_fn(self._call_impl, *args, **kwargs))

    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Registers ``hook(module, args) -> None | new args``, run before ``forward``
        (``hook(module, args, kwargs) -> None | (new_args, new_kwargs)`` with ``with_kwargs``;
        ``prepend`` runs it before the hooks already registered)."""
        handle = _module_hooks.add_hook(self._forward_pre_hooks, hook, prepend)
        if with_kwargs:
            self.__dict__.setdefault("_forward_pre_hooks_with_kwargs", set()).add(handle.id)
        return handle

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False,
                              with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """Registers ``hook(module, args, output) -> None | new output``, run after ``forward``
        (``hook(module, args, kwargs, output)`` with ``with_kwargs``; with ``always_call`` it
        runs, with output None, even when ``forward`` raised)."""
        handle = _module_hooks.add_hook(self._forward_hooks, hook, prepend)
        if with_kwargs:
            self.__dict__.setdefault("_forward_hooks_with_kwargs", set()).add(handle.id)
        if always_call:
            self.__dict__.setdefault("_forward_hooks_always_called", set()).add(handle.id)
        return handle

    def register_full_backward_hook(self, hook: Callable,
                                    prepend: bool = False) -> RemovableHandle:
        """Registers ``hook(module, grad_input, grad_output) -> None | new grad_input``, run
        when the gradients w.r.t. the module's inputs are computed (see ``_module_hooks``)."""
        self._check_backward_hook_kind(full=True)
        return _module_hooks.add_hook(self.__dict__.setdefault("_backward_hooks", {}), hook,
                                      prepend)

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """Registers ``hook(module, grad_input, grad_output) -> None | new grad_input`` on the
        autograd node that made the output (torch's deprecated form: ``grad_input`` is that
        node's, which torch warns about when the forward has several nodes; prefer
        ``register_full_backward_hook``)."""
        self._check_backward_hook_kind(full=False)
        return _module_hooks.add_hook(self.__dict__.setdefault("_legacy_backward_hooks", {}),
                                      hook, False)

    def _check_backward_hook_kind(self, full: bool) -> None:
        kind = self.__dict__.get("_is_full_backward_hook")
        if kind is not None and kind is not full:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                               "on a single Module. Please use only one of them.")
        object.__setattr__(self, "_is_full_backward_hook", full)

    def register_full_backward_pre_hook(self, hook: Callable,
                                        prepend: bool = False) -> RemovableHandle:
        """Registers ``hook(module, grad_output) -> None | new grad_output``, run when the
        gradients w.r.t. the module's outputs are computed."""
        return _module_hooks.add_hook(self.__dict__.setdefault("_backward_pre_hooks", {}), hook,
                                      prepend)

    # ------------------------------------------------------------------ registration
    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Adds a parameter (or a None placeholder) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name("parameter", name, self._parameters)
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                "(torch.nn.Parameter or None required)")
        elif param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                f"created explicitly. To express '{name}' as a function of another Tensor, "
                "compute the value in the forward() method.")
        else:
            self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Adds a non-parameter tensor (saved in ``state_dict`` when ``persistent``)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name("buffer", name, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Adds a child module under ``name``."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def _check_name(self, kind: str, name: Any, table: dict) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in table:
            raise KeyError(f"attribute '{name}' already exists")

    def __setstate__(self, state: dict) -> None:
        """Restores a pickled module's attributes (what ``super().__setstate__(state)`` in a
        subclass's own ``__setstate__`` calls, as torch's)."""
        self.__dict__.update(state)

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, d, self._buffers, self._modules)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as parameter '{name}' "
                    "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = d.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                self._remove_from(name, d, self._parameters, self._buffers)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(
                        f"cannot assign '{_typename(value)}' as child module '{name}' "
                        "(torch.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = d.get("_buffers")
                if getattr(value, "_is_buffer", False) and buffers is not None:  # nn.Buffer
                    self.register_buffer(name, value, value.persistent)
                elif buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(
                            f"cannot assign '{_typename(value)}' as buffer '{name}' "
                            "(torch.nn.Buffer, torch.Tensor or None expected)")
                    buffers[name] = value
                else:
                    object.__setattr__(self, name, value)

    def _remove_from(self, name: str, *tables: dict) -> None:
        for t in tables:
            t.pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list:
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers)
                      | set(self._modules))

    # ------------------------------------------------------------------ traversal
    def _named_members(self, get: Callable, prefix: str, recurse: bool,
                       remove_duplicate: bool) -> Iterator[tuple[str, Any]]:
        memo: set = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for k, v in get(mod):
                if v is None or (remove_duplicate and id(v) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (mod_prefix + ("." if mod_prefix else "") + k), v

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """Yields ``(name, parameter)`` pairs, names dotted through submodules."""
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                   remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Yields the module's parameters (each once), submodules' too when ``recurse``."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """Yields ``(name, buffer)`` pairs."""
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                   remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Yields the module's buffers."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """Yields ``(name, module)`` for the immediate children."""
        memo: set = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in memo:
                memo.add(id(m))
                yield name, m

    def children(self) -> Iterator[Module]:
        """Yields the immediate child modules."""
        for _, m in self.named_children():
            yield m

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """Yields ``(name, module)`` for this module and every descendant (pre-order)."""
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name,
                                       remove_duplicate)

    def modules(self, remove_duplicate: bool = True) -> Iterator[Module]:
        """Yields this module and every descendant (a shared one once, unless
        ``remove_duplicate`` is False)."""
        for _, m in self.named_modules(remove_duplicate=remove_duplicate):
            yield m

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path ``target`` ("" is the module itself)."""
        mod = self
        if target == "":
            return mod
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Puts ``module`` at dotted path ``target`` (its parent must exist; with ``strict``,
        so must a submodule at ``target``)."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(f"{parent._get_name()} has no attribute `{atoms[-1]}`")
        if hasattr(parent, atoms[-1]) and not isinstance(getattr(parent, atoms[-1]), Module):
            raise AttributeError(f"`{atoms[-1]}` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target`` (``"0.weight"``)."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path ``target`` (``"1.running_mean"``)."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return getattr(mod, name)

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Calls ``fn`` on every submodule (children first) and on self; returns self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ modes and grads
    def train(self, mode: bool = True) -> Module:
        """Sets training mode on this module and its descendants; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self) -> Module:
        """Sets evaluation mode (``train(False)``); returns self."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Sets ``requires_grad`` on every parameter; returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets the gradients of all parameters (to None, or to zeros in place)."""
        zero_grads(self.parameters(), set_to_none)

    def share_memory(self) -> Module:
        """Moves parameters, their gradients and buffers to shared memory
        (``Tensor.share_memory_``); returns self."""
        for m in self.modules():
            for t in (*m._parameters.values(), *m._buffers.values()):
                if t is not None:
                    t.share_memory_()
                    if t._grad is not None:
                        t._grad.share_memory_()
        return self

    def to_empty(self, *, device: Any, recurse: bool = True) -> Module:
        """Moves parameters and buffers to ``device`` without copying their values (their
        memory there is uninitialized); returns self."""
        from ..ops.creation import empty_like

        for m in (self.modules() if recurse else (self,)):
            for table in (m._parameters, m._buffers):
                for t in table.values():
                    if t is not None:
                        t.data = empty_like(t, device=device)
        return self

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Module:
        """Replaces each parameter's data (and its gradient's), and each buffer, by ``fn`` of
        it, in this module and (with ``recurse``) every submodule: what ``to``/``half``/...
        are in torch, and what libraries call with their own ``fn``. Returns self."""
        from ..autograd.grad_mode import no_grad

        if recurse:
            for m in self.children():
                m._apply(fn)
        with no_grad():
            for p in self._parameters.values():
                if p is None:
                    continue
                p.data = fn(p)
                if p._grad is not None:
                    p._grad.data = fn(p._grad)
            for key, b in self._buffers.items():
                if b is not None:
                    self._buffers[key] = fn(b)
        return self

    def _apply_dtype(self, dt: dtypes.dtype, with_complex: bool = False) -> Module:
        # (``to(dtype)`` casts complex tensors too; ``half()``, ``double()``... floating ones)
        for m in self.modules():
            for table in (m._parameters, m._buffers):
                for t in table.values():
                    if t is not None and (t.is_floating_point() or with_complex and
                                          t.is_complex()) and t.dtype is not dt:
                        t.data = t.detach().to(dt)
                        if t._grad is not None:
                            t._grad = t._grad.detach().to(dt)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Moves parameters and buffers to a device and/or casts the floating-point ones to a
        dtype (``to(device)``, ``to(dtype)``, ``to(device, dtype)``), in place; with
        ``memory_format=jitgrad.channels_last`` its 4-d ones are laid out channels-last."""
        from ..device import check_device

        dt = kwargs.get("dtype")
        dev = kwargs.get("device")
        fmt = kwargs.get("memory_format")
        for a in args:
            if isinstance(a, dtypes.dtype):
                dt = a
            elif isinstance(a, Tensor):  # to(tensor): its device and dtype
                dev, dt = a.device, a.dtype
            else:
                dev = a
        if dt is not None and not (dt.is_floating_point or dt.is_complex):
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but got "
                            f"desired dtype={dt}")
        if dt is not None and dt.is_complex:
            import warnings

            from ..errors import user_stacklevel

            warnings.warn(
                "Complex modules are a new feature under active development whose design may "
                "change, and some modules might not work as expected when using complex tensors "
                "as parameters or buffers. Please file an issue at https://github.com/pytorch/"
                "pytorch/issues/new?template=bug-report.yml if a complex module does not work as "
                "expected.", UserWarning, stacklevel=user_stacklevel())
        if dev is not None:
            self._apply_device(check_device(dev))
        if fmt is not None:  # 4-d (5-d) parameters and buffers in that layout, in place
            rank = 5 if fmt.name == "channels_last_3d" else 4
            for m in self.modules():
                for table in (m._parameters, m._buffers):
                    for t in table.values():
                        if t is not None and (t.dim() == rank or fmt.name in (
                                "contiguous_format", "preserve_format")):
                            t.data = t.detach().contiguous(memory_format=fmt) \
                                if fmt.name != "preserve_format" else t.detach()
        return self._apply_dtype(dt, with_complex=True) if dt is not None else self

    def _apply_device(self, d: Any) -> Module:
        for m in self.modules():
            for table in (m._parameters, m._buffers):
                for t in table.values():
                    if t is not None and t.device != d:
                        t.data = t.detach().to(d)
                        if t._grad is not None:
                            t._grad = t._grad.detach().to(d)
        return self

    def cuda(self, device: Any = None) -> Module:
        """Moves parameters and buffers to the cuda device."""
        return self.to("cuda" if device is None else device)

    def float(self) -> Module:
        """Casts floating-point parameters and buffers to float32."""
        return self._apply_dtype(dtypes.float32)

    def double(self) -> Module:
        """Casts floating-point parameters and buffers to float64."""
        return self._apply_dtype(dtypes.float64)

    def half(self) -> Module:
        """Casts floating-point parameters and buffers to float16."""
        return self._apply_dtype(dtypes.float16)

    def bfloat16(self) -> Module:
        """Casts floating-point parameters and buffers to bfloat16."""
        return self._apply_dtype(dtypes.bfloat16)

    def type(self, dst_type: Any) -> Module:  # noqa: A003 - torch's name
        """Casts all parameters and buffers to ``dst_type`` (a dtype, a tensor type's name or
        class, as ``Tensor.type`` takes)."""
        for m in self.modules():
            for table in (m._parameters, m._buffers):
                for t in table.values():
                    if t is not None:
                        new = t.detach().type(dst_type)
                        if new.dtype is not t.dtype:
                            t.data = new
        return self

    def cpu(self) -> Module:
        """Moves parameters and buffers to the CPU."""
        return self.to("cpu")

    # ------------------------------------------------------------------ printing
    def extra_repr(self) -> str:
        """The module-specific part of ``repr`` (e.g. ``in_features=2, ...``)."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(m), 2) for key, m in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"
