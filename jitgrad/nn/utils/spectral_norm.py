"""``torch.nn.utils.spectral_norm`` / ``remove_spectral_norm``, the hook form of spectral
normalization: ``weight = weight_orig / sigma``, ``sigma`` the largest singular value of the
weight (as a matrix over ``dim``) estimated by power iteration, one step per training
forward, with the vectors kept in the buffers ``weight_u`` and ``weight_v``."""

from __future__ import annotations

from typing import Any

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ..parameter import Parameter

__all__ = ["spectral_norm", "remove_spectral_norm"]


def _normalize(x: Tensor, eps: float) -> Tensor:
    return x / x.norm().clamp(min=eps)


class SpectralNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_orig``."""

    _version = 1

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        self.name, self.dim, self.eps = name, dim, eps
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        """``weight`` with ``dim`` first, flattened to ``(size(dim), -1)``."""
        mat = weight
        if self.dim != 0:
            mat = mat.permute(self.dim, *[d for d in range(mat.ndim) if d != self.dim])
        return mat.reshape(mat.shape[0], -1)

    def compute_weight(self, module: Any, do_power_iteration: bool) -> Tensor:
        """``weight_orig / sigma``; with ``do_power_iteration`` the buffers ``u``, ``v``
        first take ``n_power_iterations`` steps (in place, without grad)."""
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(_normalize(weight_mat.t().mv(u), self.eps))
                    u.copy_(_normalize(weight_mat.mv(v), self.eps))
                u, v = u.clone(), v.clone()
        sigma = u.dot(weight_mat.mv(v))
        return weight / sigma

    def remove(self, module: Any) -> None:
        """Puts back a plain parameter ``name`` (the last normalized value)."""
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Any, inputs: Any) -> None:
        setattr(module, self.name,
                self.compute_weight(module, do_power_iteration=module.training))

    def _solve_v_and_rescale(self, weight_mat: Tensor, u: Tensor, target_sigma: Any) -> Tensor:
        """A ``v`` with ``u = normalize(W v)`` and ``u . W v = sigma`` (through the
        pseudo-inverse of ``W^T W``), for checkpoints saved before ``v`` was kept."""
        from ...linalg import multi_dot

        v = multi_dot([weight_mat.t().mm(weight_mat).pinverse(), weight_mat.t(),
                       u.unsqueeze(1)]).squeeze(1)
        return v.mul_(target_sigma / u.dot(weight_mat.mv(v)))

    @staticmethod
    def apply(module: Any, name: str, n_power_iterations: int, dim: int,
              eps: float) -> SpectralNorm:
        """Moves the parameter to ``name_orig``, draws ``u`` and ``v`` from N(0, 1)
        (normalized) and registers the hook."""
        from ...random import randn

        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(
                    f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = _normalize(randn(h, dtype=weight.dtype), fn.eps)
            v = _normalize(randn(w, dtype=weight.dtype), fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        module.register_state_dict_post_hook(SpectralNormStateDictHook(fn))
        module.register_load_state_dict_pre_hook(SpectralNormLoadStateDictPreHook(fn))
        return fn


class SpectralNormStateDictHook:
    """Records ``spectral_norm: {"<name>.version": 1}`` in the module's state-dict metadata."""

    def __init__(self, fn: SpectralNorm) -> None:
        self.fn = fn

    def __call__(self, module: Any, state_dict: Any, prefix: str, local_metadata: dict) -> None:
        entries = local_metadata.setdefault("spectral_norm", {})
        key = self.fn.name + ".version"
        if key in entries:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        entries[key] = self.fn._version


class SpectralNormLoadStateDictPreHook:
    """Loads a checkpoint saved before version 1 (``<name>``, ``<name>_orig`` and ``<name>_u``,
    no ``<name>_v``): ``v`` is solved for from ``u`` and ``sigma = mean(orig / weight)``."""

    def __init__(self, fn: SpectralNorm) -> None:
        self.fn = fn

    def __call__(self, module: Any, state_dict: Any, prefix: str, local_metadata: dict,
                 strict: bool, missing_keys: list, unexpected_keys: list,
                 error_msgs: list) -> None:
        fn = self.fn
        version = local_metadata.get("spectral_norm", {}).get(fn.name + ".version")
        if version is not None and version >= 1:
            return
        key = prefix + fn.name
        if version is None and key not in state_dict and \
                all(key + s in state_dict for s in ("_orig", "_u", "_v")):
            return  # (today's entries without the metadata: as they are)
        missing = [key + s for s in ("_orig", "", "_u") if key + s not in state_dict]
        if missing:
            if strict:
                missing_keys.extend(missing)
            return
        with no_grad():
            weight_orig = state_dict[key + "_orig"]
            sigma = (weight_orig / state_dict.pop(key)).mean()
            weight_mat = fn.reshape_weight_to_matrix(weight_orig)
            state_dict[key + "_v"] = fn._solve_v_and_rescale(weight_mat, state_dict[key + "_u"],
                                                              sigma)


def spectral_norm(module: Any, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Any:
    """Divides ``module.<name>`` by its spectral norm, estimated by power iteration before
    every forward (one step per training forward; none in eval).

    Args:
        module: the module holding the parameter.
        name: the parameter's name. Default: ``'weight'``.
        n_power_iterations: power-iteration steps per training forward. Default: 1.
        eps: the floor of the norms in the normalizations. Default: 1e-12.
        dim: the output dim of the weight; default 0, or 1 for transposed convolutions.

    Returns:
        ``module``.
    """
    if dim is None:
        from ..conv import _ConvTransposeNd

        dim = 1 if isinstance(module, _ConvTransposeNd) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Any, name: str = "weight") -> Any:
    """Undoes ``spectral_norm``: ``module.<name>`` becomes a plain parameter again."""
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
