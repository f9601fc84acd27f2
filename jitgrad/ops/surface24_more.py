"""torch's ``*_copy`` functions (a view op's result as a new tensor), ``resize_`` /
``resize_as_``, ``nonzero_static``, and the in-place samplers ``exponential_``,
``geometric_``, ``cauchy_``, ``log_normal_`` with the top-level ``poisson`` and ``binomial``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .extras import contiguous_format
from .random_nodes import BINOMIAL_NODE, POISSON_NODE, record_draws
from .surface import public
from .surface24 import fn

# torch's <view>_copy -> the Tensor method whose result it copies
COPIES = ("alias", "as_strided", "detach", "diagonal", "expand", "narrow", "permute", "select",
          "slice", "split", "split_with_sizes", "squeeze", "t", "transpose", "unbind", "unfold",
          "unsqueeze", "view", "view_as_real", "view_as_complex")


def _slice_view(input: Any, dim: int = 0, start: Any = None, end: Any = None,  # noqa: A002
                step: int = 1) -> Any:
    key = [slice(None)] * input.ndim
    key[dim] = slice(start, end, step)
    return input[tuple(key)]


def _copy_fn(name: str):
    def copy(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        if name == "alias":
            view = input.view(tuple(input.shape))
        elif name == "slice":
            view = _slice_view(input, *args, **kwargs)
        elif hasattr(input, name):
            view = getattr(input, name)(*args, **kwargs)
        else:
            view = fn(name)(input, *args, **kwargs)
        if isinstance(view, (tuple, list)):
            return tuple(v.clone(memory_format=contiguous_format) for v in view)
        return view.clone(memory_format=contiguous_format)
    copy.__name__ = copy.__qualname__ = f"{name}_copy"
    copy.__doc__ = f"``{name}``'s result as a new (contiguous) tensor."
    copy.__module__ = "jitgrad"
    return copy


@public(method="narrow_copy")
def _narrow_copy(input: Any, dim: int, start: int, length: int) -> Any:  # noqa: A002
    """``narrow``'s result as a new tensor."""
    return input.narrow(dim, start, length).clone()


def resize_(self: Any, *sizes: Any, memory_format: Any = None) -> Any:
    """Gives ``self`` the shape ``sizes`` in place: the first elements (in memory order) are
    kept, new ones are zero (torch leaves them uninitialized)."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    shape = tuple(int(s) for s in sizes)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: "
                           f"{list(shape)}")
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if self._base is not None and int(np.prod(shape)) > self.numel():
        raise RuntimeError("resize_ of a view to more elements than it has is not supported")
    n = int(np.prod(shape))
    if tuple(self.shape) == shape:
        return self
    if self.is_cuda:
        raise RuntimeError("resize_ of a cuda tensor is not supported")
    flat = self._data.reshape(-1)  # (a copy when the data is not contiguous)
    if n <= flat.size and np.shares_memory(flat, self._data):
        self._data = flat[:n].reshape(shape)
    else:
        new = np.zeros(n, dtype=self._data.dtype)
        k = min(n, flat.size)
        new[:k] = flat[:k]
        self._data = new.reshape(shape)
    self._vc[0] += 1
    return self


def resize_as_(self: Any, the_template: Any, *, memory_format: Any = None) -> Any:
    """``resize_`` to ``the_template``'s shape."""
    return resize_(self, tuple(the_template.shape))


@public("nonzero_static", method=True)
def nonzero_static(input: Any, *, size: int, fill_value: int = -1) -> Any:  # noqa: A002
    """``nonzero(input)`` cut or padded (with ``fill_value``) to ``size`` rows."""
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    nz = fn("nonzero")(input)
    if nz.shape[0] >= size:
        return nz[:size]
    pad = fn("full")((size - nz.shape[0], nz.shape[1]), fill_value, dtype=nz.dtype,
                       device=nz.device)
    return fn("cat")([nz, pad])


# ---------------------------------------------------------------- in-place samplers
def _draw(self: Any, generator: Any, draw: Any) -> Any:
    """Fills ``self`` with ``draw(stream, count)`` (float64 values of torch's sampler), in
    torch's order."""
    from .inplace import _fill_from_stream

    return _fill_from_stream(self, generator, lambda stream, n, dt: draw(stream, n))


def _num(v: Any) -> str:
    """A number as torch's messages print it (C++'s default: ``-1``, ``0.5``)."""
    return f"{float(v):g}"


_C_NAMES = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
            "uint8": "unsigned char", "bool": "bool"}


def _float_only(self: Any, name: str) -> None:
    """torch's texts for a continuous sampler on an integer tensor."""
    if self.dtype.is_floating_point:
        return
    legacy = self.dtype._scalar_name
    if name == "exponential_":
        raise RuntimeError("Exponential distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified {legacy}")
    if name == "cauchy_":
        raise RuntimeError("Cauchy distribution is a continuous probability distribution. dtype "
                           "must be a floating point but you specified "
                           f"{_C_NAMES.get(self.dtype.name, self.dtype.name)}")
    raise NotImplementedError(f"\"{name[:-1]}_cpu\" not implemented for '{legacy}'")


def exponential_(self: Any, lambd: float = 1.0, *, generator: Any = None) -> Any:
    """Fills ``self`` with draws of an exponential distribution of rate ``lambd``."""
    _float_only(self, "exponential_")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_num(lambd)}")
    return _draw(self, generator, lambda g, n: g.exponential(n, float(lambd)))


def geometric_(self: Any, p: float, *, generator: Any = None) -> Any:
    """Fills ``self`` with the number of Bernoulli(``p``) trials to the first success."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_num(p)}")
    return _draw(self, generator, lambda g, n: g.geometric(n, float(p)))


def cauchy_(self: Any, median: float = 0.0, sigma: float = 1.0, *,
            generator: Any = None) -> Any:
    """Fills ``self`` with Cauchy(``median``, ``sigma``) draws."""
    _float_only(self, "cauchy_")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_num(sigma)}")
    return _draw(self, generator, lambda g, n: g.cauchy(n, float(median), float(sigma)))


def log_normal_(self: Any, mean: float = 1.0, std: float = 2.0, *,
                generator: Any = None) -> Any:
    """Fills ``self`` with ``exp(N(mean, std))`` draws."""
    _float_only(self, "log_normal_")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_num(std)}")
    return _draw(self, generator, lambda g, n: g.log_normal(n, float(mean), float(std)))


@public("poisson")
def poisson(input: Any, generator: Any = None) -> Any:  # noqa: A002
    """Poisson draws with the rates ``input`` (same dtype; a zero gradient, as torch's)."""
    from .._generator import default_generator
    from ..tensor import _new

    rates = input.detach().numpy()
    if (rates < 0).any():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    stream = (generator or default_generator())._host()  # (torch's sampler and draws)
    draws = stream.poisson(rates.astype(np.float64)).reshape(rates.shape)
    return record_draws(POISSON_NODE, (input,), _new(draws.astype(input.dtype.np), input.dtype))


@public("binomial")
def binomial(count: Any, prob: Any, generator: Any = None) -> Any:
    """Binomial(``count``, ``prob``) draws elementwise (``count``'s dtype; torch's node
    without a derivative when a parameter requires grad)."""
    from .._generator import default_generator
    from ..tensor import _new

    if not (count.dtype.is_floating_point and prob.dtype.is_floating_point):
        bad = count if not count.dtype.is_floating_point else prob
        raise ValueError(f"binomial only supports floating-point dtypes for "
                         f"{'count' if bad is count else 'prob'}, got: "
                         f"{bad.dtype._scalar_name}")
    stream = (generator or default_generator())._host()  # (torch's sampler and draws)
    n, p = np.broadcast_arrays(count.detach().numpy(), prob.detach().numpy())
    single = count.dtype.itemsize <= 4
    draws = stream.binomial(n.astype(np.float64), p.astype(np.float64), single)
    draws = _new(draws.reshape(n.shape).astype(count.dtype.np), count.dtype)
    return record_draws(BINOMIAL_NODE, (count, prob), draws)


METHODS = {"resize_": resize_, "resize_as_": resize_as_, "exponential_": exponential_,
           "geometric_": geometric_, "cauchy_": cauchy_, "log_normal_": log_normal_}


def install(namespace: dict, tensor_type: type) -> None:
    """The ``*_copy`` functions in ``namespace`` and this module's methods on the Tensor."""
    for name, method in METHODS.items():
        if name not in tensor_type.__dict__:
            setattr(tensor_type, name, method)
    for name in COPIES:
        namespace.setdefault(f"{name}_copy", _copy_fn(name))
    namespace.setdefault("resize_as_", resize_as_)
