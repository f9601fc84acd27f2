"""Seeded random tensors: ``Generator``, manual_seed/seed, rand, randn, randint, randperm,
normal and ``Tensor.random_`` (one default ``Generator``, reseeded in place).

``Generator`` and the default generator live below, in ``jitgrad._generator`` (the ``rng`` op
reads it there at run time); this module re-exports them."""

from __future__ import annotations

import contextlib

from typing import Any

import numpy as np

from . import dtypes
from .device import check_device
from .ops.arg_errors import invalid_combination
from .ops.random_nodes import BERNOULLI_NODE, BERNOULLI_P_NODE, record_draws
from .ops.creation import _OPTS, _shape, check_layout, like_memory_format
from ._generator import Generator, _default
from ._generator import default_generator as default_generator  # (re-exported)
from .ops.rng import sample
from .ops.surface import public
from .tensor import Tensor


@public("manual_seed")
def manual_seed(seed: int) -> Generator:
    """Seeds jitgrad's default generator (rand, randn, randint, dropout); returns it."""
    return _default.manual_seed(seed)


_FLOAT_ONLY = {"rand": "check_uniform_bounds", "randn": "normal_kernel_cpu"}


def _float_dtype(fname: str, dtype: Any) -> dtypes.dtype:
    dt = dtype or dtypes.get_default_dtype()
    if not (dt.is_floating_point or dt.is_complex):
        raise NotImplementedError(
            f'"{_FLOAT_ONLY[fname]}" not implemented for \'{dt._scalar_name}\'')
    return dt


def _sample_size(fname: str, size: tuple, kwargs: dict) -> tuple:
    """``rand(2, 3)``, ``rand((2, 3))`` or ``rand(size=(2, 3))``, with torch's errors."""
    check_layout(fname, kwargs.pop("layout", None))
    kwargs.pop("pin_memory", None)  # (host memory is what jitgrad's CPU tensors live in)
    if "size" in kwargs:
        if size:
            raise TypeError(f"{fname}() got multiple values for argument 'size'")
        size = (kwargs.pop("size"),)
    if kwargs:
        raise TypeError(f"{fname}() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if not size:
        sig = "tuple of ints size, " + _OPTS
        raise invalid_combination(fname, (), {}, (sig.format(gen="jitgrad.Generator generator, "),
                                                   sig.format(gen="")))
    return _shape(size, fname)


@public("rand")
def rand(*size: Any, dtype: dtypes.dtype | None = None, device: Any = None,
         requires_grad: bool = False, generator: Any = None, **kwargs: Any):
    """Uniform samples on [0, 1): ``rand(2, 3)``, ``rand((2, 3))`` or ``rand(size=(2, 3))``."""
    dev = check_device(device)
    shape = _sample_size("rand", size, kwargs)
    dt = _float_dtype("rand", dtype)
    return sample("uniform", shape, dt, generator, requires_grad, dev)


@public("randn")
def randn(*size: Any, dtype: dtypes.dtype | None = None, device: Any = None,
          requires_grad: bool = False, generator: Any = None, **kwargs: Any):
    """Standard normal samples: ``randn(2, 3)``, ``randn((2, 3))`` or ``randn(size=(2, 3))``."""
    dev = check_device(device)
    shape = _sample_size("randn", size, kwargs)
    dt = _float_dtype("randn", dtype)
    return sample("normal", shape, dt, generator, requires_grad, dev)


_RANDINT_SIGS = tuple(
    head + _OPTS.format(gen=gen)
    for head in ("int high, tuple of ints size, ", "int low, int high, tuple of ints size, ")
    for gen in ("jitgrad.Generator generator, ", ""))
_MISSING = object()


def _is_int(v: Any) -> bool:
    """An int argument of torch's parser: a Python or NumPy int, or a one-element integer
    tensor (``randint(0, lengths.max(), ...)``)."""
    if isinstance(v, Tensor):
        return not v.dtype.is_floating_point and not v.dtype.is_complex and \
            v.dtype is not dtypes.bool and v.numel() == 1
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _is_size(v: Any) -> bool:
    return isinstance(v, (tuple, list)) and all(_is_int(s) for s in v)


@public("randint")
def randint(*args: Any, low: Any = _MISSING, high: Any = _MISSING, size: Any = _MISSING,
            dtype: Any = None, layout: Any = None, device: Any = None,
            requires_grad: bool = False, generator: Any = None, pin_memory: bool = False) -> Any:
    """Integers uniformly drawn from [low, high), torch's two overloads:
    ``randint(high, size)`` and ``randint(low=0, high, size)``."""
    check_layout("randint", layout)
    given = {k: v for k, v in (("low", low), ("high", high), ("size", size))
             if v is not _MISSING}
    if len(args) > 3 or len(args) == 3 and given:
        raise invalid_combination("randint", args, given, _RANDINT_SIGS)
    # which overload: (low, high, size) when three values are given (or low= is named)
    names = (("low", "high", "size") if len(args) + len(given) >= 3 or "low" in given
             else ("high", "size"))
    bound = dict(given)
    for name, value in zip([n for n in names if n not in given], args):
        bound[name] = value
    missing = [n for n in names if n not in bound]
    if len(missing) == len(names) or missing and not given:
        raise invalid_combination("randint", args, given, _RANDINT_SIGS)
    if missing:
        raise TypeError(f"randint() missing {len(missing)} required positional argument: "
                        + ", ".join(f'"{n}"' for n in missing))
    for pos, name in enumerate(names, 1):
        value = bound[name]
        ok = _is_size(value) if name == "size" else _is_int(value)
        if not ok:
            what = "tuple of ints" if name == "size" else "int"
            if name in given or pos > len(args) or isinstance(value, Tensor) or \
                    isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
                raise invalid_combination("randint", args, given, _RANDINT_SIGS)
            raise TypeError(f"randint(): argument '{name}' (position {pos}) must be {what}, "
                            f"not {type(value).__name__}")
    lo, hi = int(bound.get("low", 0)), int(bound["high"])
    shape = _shape((tuple(int(n) for n in bound["size"]),))
    dev = check_device(device)
    if lo >= hi:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={lo} >= to={hi}")
    dt = dtype or dtypes.int64
    if requires_grad and not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                           "gradients")
    return sample("integers", shape, dt, generator, requires_grad, dev, low=lo, high=hi)


@public("rand_like")
def rand_like(input: Any, *, generator: Any = None, dtype: Any = None,  # noqa: A002
              layout: Any = None, device: Any = None, requires_grad: bool = False,
              memory_format: Any = None) -> Any:
    """Uniform samples on [0, 1) with ``input``'s shape (and dtype and device, unless
    given)."""
    check_layout("rand_like", layout)
    laid = _strided_empty_like(input, dtype, device, memory_format)
    if laid is not None and laid.dtype.is_floating_point:
        return laid.uniform_(generator=generator).requires_grad_(requires_grad)
    out = rand(tuple(input.shape), dtype=dtype or input.dtype,
               device=input.device if device is None else device,
               requires_grad=requires_grad, generator=generator)
    return like_memory_format(out, input, memory_format, "rand_like")


@public("randn_like")
def randn_like(input: Any, *, generator: Any = None, dtype: Any = None,  # noqa: A002
               layout: Any = None, device: Any = None, requires_grad: bool = False,
               memory_format: Any = None) -> Any:
    """Standard normal samples with ``input``'s shape (and dtype and device, unless
    given)."""
    check_layout("randn_like", layout)
    laid = _strided_empty_like(input, dtype, device, memory_format)
    if laid is not None and laid.dtype.is_floating_point:
        return laid.normal_(generator=generator).requires_grad_(requires_grad)
    out = randn(tuple(input.shape), dtype=dtype or input.dtype,
                device=input.device if device is None else device,
                requires_grad=requires_grad, generator=generator)
    return like_memory_format(out, input, memory_format, "randn_like")


@public("randint_like")
def randint_like(input: Any, low: int = 0, high: Any = None, *, dtype: Any = None,  # noqa: A002
                 layout: Any = None, device: Any = None, requires_grad: bool = False,
                 generator: Any = None, memory_format: Any = None) -> Any:
    """Integers uniformly drawn from [low, high) with ``input``'s shape (and dtype and device,
    unless given); ``randint_like(input, high)`` draws from [0, high)."""
    check_layout("randint_like", layout)
    if high is None:
        low, high = 0, low
    laid = _strided_empty_like(input, dtype, device, memory_format)
    if laid is not None and int(low) < int(high):
        return laid.random_(int(low), int(high), generator=generator) \
            .requires_grad_(requires_grad)
    out = randint(int(low), int(high), tuple(input.shape), dtype=dtype or input.dtype,
                  device=input.device if device is None else device,
                  requires_grad=requires_grad, generator=generator)
    return like_memory_format(out, input, memory_format, "randint_like")


def _strided_empty_like(input: Any, dtype: Any, device: Any, memory_format: Any) -> Any:  # noqa: A002
    """torch's ``empty_like(input, ...)`` when it is laid out other than row-major on the CPU
    (a transposed or channels-last ``input``): ``*_like`` samplers fill it in place, drawing in
    its memory order as torch's do; ``None`` otherwise (the row-major draw is the same)."""
    from .ops.creation import empty_like

    if not _eager(input) or input.is_cuda or (device is not None and str(device) != "cpu"):
        return None
    laid = empty_like(input, dtype=dtype, memory_format=memory_format)
    data = laid._data
    return laid if isinstance(data, np.ndarray) and not data.flags.c_contiguous else None


@public("seed")
def seed() -> int:
    """Seeds the default generator non-deterministically; returns the seed."""
    return _default.seed()


@public("initial_seed")
def initial_seed() -> int:
    """The seed of the default generator."""
    return _default.initial_seed()


@public("get_rng_state")
def get_rng_state():
    """The default generator's state (a uint8 tensor)."""
    return _default.get_state()


@public("set_rng_state")
def set_rng_state(new_state: Any) -> None:
    """Restores the default generator's state."""
    _default.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices: Any = None, enabled: bool = True, _caller: str = "fork_rng",
             _devices_kw: str = "devices", device_type: str | None = None) -> Any:
    """A context in which random draws do not disturb the default (CPU) generator: its state
    is restored on exit (``torch.random.fork_rng``). The cuda device's generators are not
    forked (``devices`` is accepted and ignored). ``enabled=False`` forks nothing."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


# ---------------------------------------------------------------- normal, randperm, random_


def _noise(shape: tuple, dt: dtypes.dtype, generator: Any, device: Any = None):
    return randn(shape, dtype=dt, generator=generator, device=device)


def _normal_zero_vjp(g, ans, *args):
    return g * 0


def _normal_op(name: str, node_name: str, vjp: tuple):
    from .ops.registry import OPAQUE, broadcast_shapes, defop

    def meta(mean, std, noise):
        shape = broadcast_shapes(*(tuple(a.shape) for a in (mean, std) if hasattr(a, "shape")))
        return shape, noise.dtype

    return defop(name, lambda mean, std, noise: np.asarray(mean + std * noise, noise.dtype),
                 kind=OPAQUE, meta=meta, node_name=node_name, vjp=vjp,
                 jvp=lambda tangents, ans, *args: ans * 0)


# torch's gradient of normal() with respect to mean and std is zero (the draw is not
# reparameterized): one node per overload, as torch names them
NORMAL_TENSOR_FLOAT = _normal_op("normal_tensor_float", "NormalBackward1",
                                 (_normal_zero_vjp, None, None))
NORMAL_FLOAT_TENSOR = _normal_op("normal_float_tensor", "NormalBackward2",
                                 (None, _normal_zero_vjp, None))
NORMAL_TENSOR_TENSOR = _normal_op("normal_tensor_tensor", "NormalBackward3",
                                  (_normal_zero_vjp, _normal_zero_vjp, None))


def _check_std(std: Any) -> None:
    from .ops.registry import Tensor

    if isinstance(std, Tensor):
        if std._trace is None and std.numel() and bool((std._data < 0).any()):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")


@public("normal")
def normal(mean: Any, std: Any = 1.0, size: Any = None, *, generator: Any = None,
           out: Any = None, dtype: Any = None, device: Any = None,
           requires_grad: bool = False):
    """Normal samples with the given ``mean`` and ``std`` (tensors broadcast, or numbers with a
    ``size``). The gradient with respect to tensor ``mean``/``std`` is zero, as in torch."""
    from .ops.registry import Tensor, apply

    mean_t, std_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    _check_std(std)
    if not mean_t and not std_t:
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments - got "
                            "(float, float), but expected a size when mean and std are numbers")
        dt = dtype or dtypes.get_default_dtype()
        noise = _noise(_shape((size,)), dt, generator, device)
        out_t = noise * std + mean if (std != 1 or mean != 0) else noise
        if requires_grad:
            out_t = out_t.detach().requires_grad_()
        return out_t
    if mean_t and std_t:
        from .ops.registry import broadcast_shapes

        shape = broadcast_shapes(tuple(mean.shape), tuple(std.shape))
        dt = dtypes.result_type(mean, std)
        op = NORMAL_TENSOR_TENSOR
    else:
        t = mean if mean_t else std
        shape, dt = tuple(t.shape), t.dtype
        op = NORMAL_TENSOR_FLOAT if mean_t else NORMAL_FLOAT_TENSOR
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"normal_kernel_cpu\" not implemented for "
                                  f"'{dt._scalar_name}'")
    return apply(op, mean, std, _noise(shape, dt, generator,
                                       (mean if mean_t else std).device))


@public("randperm")
def randperm(n: int, *, generator: Any = None, dtype: Any = None, layout: Any = None,
             device: Any = None, requires_grad: bool = False, pin_memory: bool = False):
    """A random permutation of ``0 .. n-1``: torch's Fisher-Yates on the CPU (the same draw in
    eager mode and under ``jit``); on a cuda device, the order of ``n`` uniform draws."""
    check_layout("randperm", layout)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dt = dtype or dtypes.int64
    dev = check_device(device)
    if dev is not None and dev.type == "cuda":
        from .ops.sorting import argsort

        perm = argsort(rand(n, dtype=dtypes.float64, generator=generator, device=dev))
        return perm if dt is dtypes.int64 else perm.to(dt)
    return sample("permutation", (n,), dt, generator, requires_grad, dev)


def _random_bounds(t: Any, from_: int, to: int | None) -> tuple[int, int]:
    if to is None:
        if from_ != 0:
            return 0, from_
        d = t.dtype
        if d is dtypes.bool:
            return 0, 2
        if d.is_floating_point:
            return 0, 2 ** {"float16": 11, "float32": 24, "float64": 53}[d.name] + 1
        return 0, int(np.iinfo(d.np).max) + 1
    if from_ >= to:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_} "
                           f">= to={to}")
    return from_, to


@public(method="random_")
def random_(self: Any, from_: int = 0, to: int | None = None, *, generator: Any = None):
    """Fills ``self`` in place with integers drawn uniformly from ``[from, to)`` (``random_(to)``
    is ``[0, to)``; with no bounds, every integer the dtype represents exactly)."""
    lo, hi = _random_bounds(self, from_, to)
    data = self._data if _eager(self) and not self.is_cuda else None
    if isinstance(data, np.ndarray) and not data.flags.c_contiguous \
            and not self.dtype.is_complex:
        from .ops.inplace import _fill_from_stream  # (drawn in memory order, as torch's)

        return _fill_from_stream(self, generator, lambda s, n, dt: s.integers(n, dt, lo, hi))
    return self.copy_(randint(lo, hi, tuple(self.shape), dtype=self.dtype, generator=generator))


def uniforms_like(input: Any, dtype: dtypes.dtype = dtypes.float64) -> Any:  # noqa: A002
    """Uniforms of ``input``'s shape drawn as torch fills a mask ``empty_like(input)``: in the
    memory order of that layout (``laid_out_like``: a transposed CPU input's), row-major
    otherwise (and under ``jit``, where the draw is staged)."""
    data = input._data if _eager(input) and not input.is_cuda else None
    if isinstance(data, np.ndarray) and not data.flags.c_contiguous:
        from ._torch_stream import in_memory_order
        from .ops.memory_formats import laid_out_like

        layout = laid_out_like(np.empty(data.shape, np.int8), data)
        if not layout.flags.c_contiguous:
            flat = rand(data.size, dtype=dtype).numpy()
            return Tensor(in_memory_order(flat, data.shape, layout.strides))
    return rand(tuple(input.shape), dtype=dtype, device=input.device)


def _eager(t: Any) -> bool:
    """Whether ``t`` has values to check (not traced, not on the meta device)."""
    from .ops.registry import state

    return not state.traces and t._trace is None and not t.is_meta


@public("multinomial", method=True)
def multinomial(input: Any, num_samples: int, replacement: bool = False, *,  # noqa: A002
                generator: Any = None) -> Any:
    """``num_samples`` category indices per row of ``input`` (1-D or 2-D non-negative weights,
    not necessarily normalized), drawn with or without ``replacement``, as torch draws them:
    with replacement, the inverse of each row's cumulative distribution at uniform draws;
    without (or for one sample), the ``num_samples`` largest ``w / q`` for exponential ``q``."""
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{input.dtype._scalar_name}")
    n = input.shape[-1]
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    w = input.detach()
    if _eager(w):
        if replacement and num_samples > 1:  # (torch's check, element by element, in order)
            bad = (~(w >= 0) | w.isinf()).reshape(-1).numpy()
            if bad.any():
                first = float(w.reshape(-1)[int(bad.argmax())])
                raise RuntimeError("invalid multinomial distribution (encountering probability "
                                   + ("entry < 0)" if not first >= 0 else
                                      "entry = infinity or NaN)"))
        elif bool((~w.isfinite() | (w < 0)).any()):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if bool((w.sum(-1) <= 0).any()):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement or num_samples == 1:
        # torch's: the largest w / q for q ~ Exp(1) (the exponential race, which samples in
        # proportion to the weights without replacement)
        if input.is_cuda:  # (drawn on the device, from its uniforms)
            q = -(-rand(tuple(w.shape), dtype=w.dtype, generator=generator,
                        device=input.device)).log1p()
        else:
            q = sample("exponential", tuple(w.shape), w.dtype, generator, device=input.device)
        q = w / q
        if num_samples == 1:
            return q.argmax(-1, keepdim=True)
        return q.topk(num_samples, dim=-1).indices
    # torch's: per row, the normalized cumulative weights (in the weights' precision, at least
    # float32) searched with one float64 uniform per sample
    rows = w if w.ndim == 2 else w.unsqueeze(0)
    if rows.dtype.itemsize < 4:
        rows = rows.to(dtypes.float32)
    u = rand(rows.shape[0], num_samples, dtype=dtypes.float64, generator=generator,
             device=input.device)
    cdf = rows.cumsum(-1)
    cdf = cdf / cdf[:, -1:]
    idx = (cdf[:, :-1].unsqueeze(1) < u.unsqueeze(-1)).sum(-1)
    return idx if input.ndim == 2 else idx.squeeze(0)


def _check_probabilities(p: Any) -> None:
    if not isinstance(p, Tensor):
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
        return
    if _eager(p) and bool(((p < 0) | (p > 1)).any()):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could "
                           "this error message be improved?  If so, please report an "
                           "enhancement request to PyTorch.)")


@public("bernoulli", method=True)
def bernoulli(input: Any, p: Any = None, *, generator: Any = None) -> Any:  # noqa: A002
    """0 or 1 in ``input``'s dtype, 1 with probability ``input`` (or the number ``p``). Its
    node (when ``input`` requires grad) gives a zero gradient, as torch's (none with ``p``)."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for "
                                  f"'{input.dtype._scalar_name}'")
    probs = input.detach() if p is None else p
    _check_probabilities(probs)
    u = _bernoulli_uniforms(tuple(input.shape), probs, generator, input.device)
    node = BERNOULLI_NODE if p is None else BERNOULLI_P_NODE
    return record_draws(node, (input,), (u < probs).to(input.dtype))


@public(method="bernoulli_")
def bernoulli_(self: Any, p: Any = 0.5, *, generator: Any = None) -> Any:
    """Fills ``self`` in place with 0 or 1, 1 with probability ``p`` (a number or a tensor)."""
    _check_probabilities(p)
    return self.copy_(_bernoulli_uniforms(tuple(self.shape), p, generator, self.device) < p)


def _bernoulli_uniforms(shape: tuple, p: Any, generator: Any, device: Any) -> Any:
    """torch's uniforms for Bernoulli draws: float64 ones, or float32 ones for a float32 (or
    smaller) tensor of probabilities."""
    narrow = isinstance(p, Tensor) and p.dtype is not dtypes.float64
    return rand(shape, dtype=dtypes.float32 if narrow else dtypes.float64, generator=generator,
                device=device)
