"""``Fuzzer``, ``FuzzedParameter``, ``ParameterAlias`` and ``FuzzedTensor``: random benchmark
inputs as ``torch.utils.benchmark`` makes them.

Parameters are drawn from a NumPy ``RandomState(seed)`` in torch's order, so a seed gives the
same sizes, steps, layouts and parameter values as torch; the tensors' values come from
jitgrad's generator (seeded from that state), so they differ from torch's.
"""

from __future__ import annotations

import functools
import itertools as it
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .... import dtypes
from .... import random as _random

__all__ = ["Fuzzer", "FuzzedParameter", "ParameterAlias", "FuzzedTensor"]

_DISTRIBUTIONS = ("loguniform", "uniform")


class FuzzedParameter:
    """Specification for a parameter to be generated during fuzzing.

    Args:
        name: The name tensors' specifications use for the parameter.
        minval: Lower bound (inclusive); ints with ``"uniform"`` draw integers.
        maxval: Upper bound (inclusive).
        distribution: ``"loguniform"``, ``"uniform"`` or a dict of choice -> probability
            (then ``minval`` and ``maxval`` stay None).
        strict: A strict parameter keeps its first value while the Fuzzer resamples the others
            to meet the constraints.
    """

    def __init__(self, name: str, minval: int | float | None = None,
                 maxval: int | float | None = None,
                 distribution: str | dict[Any, float] | None = None,
                 strict: bool = False) -> None:
        self._name = name
        self._minval = minval
        self._maxval = maxval
        self._distribution = self._check_distribution(distribution)
        self.strict = strict

    @property
    def name(self) -> str:
        """The parameter's name."""
        return self._name

    def sample(self, state: np.random.RandomState) -> Any:
        """One value drawn from ``state``."""
        if self._distribution == "loguniform":
            return self._loguniform(state)
        if self._distribution == "uniform":
            return self._uniform(state)
        return self._custom_distribution(state)

    def _check_distribution(self, distribution: Any) -> Any:
        if not isinstance(distribution, dict):
            if distribution not in _DISTRIBUTIONS:
                raise AssertionError(f"Unknown distribution: {distribution}")
            return distribution
        if any(p < 0 for p in distribution.values()):
            raise AssertionError("Probabilities cannot be negative")
        # (torch 2.13 inverts this test and refuses every normalized dict: BinaryOpFuzzer fails)
        if abs(sum(distribution.values()) - 1) > 1e-5:
            raise AssertionError("Distribution is not normalized")
        if self._minval is not None:
            raise AssertionError("When passing a custom distribution, 'minval' must be None")
        if self._maxval is not None:
            raise AssertionError("When passing a custom distribution, 'maxval' must be None")
        return distribution

    def _loguniform(self, state: np.random.RandomState) -> int:
        output = int(2 ** state.uniform(
            low=np.log2(self._minval) if self._minval is not None else None,
            high=np.log2(self._maxval) if self._maxval is not None else None))
        if self._minval is not None and output < self._minval:
            return self._minval
        if self._maxval is not None and output > self._maxval:
            return self._maxval
        return output

    def _uniform(self, state: np.random.RandomState) -> int | float:
        if isinstance(self._minval, int) and isinstance(self._maxval, int):
            return int(state.randint(low=self._minval, high=self._maxval + 1))
        return state.uniform(low=self._minval, high=self._maxval)

    def _custom_distribution(self, state: np.random.RandomState) -> Any:
        # (choosing an index keeps the keys Python objects, not NumPy scalars)
        index = state.choice(np.arange(len(self._distribution)),
                             p=tuple(self._distribution.values()))
        return list(self._distribution.keys())[index]


class ParameterAlias:
    """A parameter value that takes the value of the parameter ``alias_to`` (chains allowed,
    cycles not), e.g. as one choice of a custom distribution, so that a fuzzed tensor sometimes
    matches another's size."""

    def __init__(self, alias_to: str) -> None:
        self.alias_to = alias_to

    def __repr__(self) -> str:
        return f"ParameterAlias[alias_to: {self.alias_to}]"


def dtype_size(dtype: dtypes.dtype) -> int:
    """The bytes of one element of ``dtype``."""
    return int(dtype.itemsize)


def prod(values: Any, base: int = 1) -> int:
    """The product in Python ints (NumPy's can overflow and pass a size check)."""
    return functools.reduce(lambda x, y: int(x) * int(y), values, base)


class FuzzedTensor:
    """Specification for a tensor the Fuzzer creates from the drawn parameters.

    Args:
        name: The key of the tensor in each case.
        size: Sizes, ints or parameter names.
        steps: Strides of a slice taken from a larger allocation (ints or parameter names).
        probability_contiguous: The chance that the memory layout is contiguous (otherwise the
            tensor is made contiguous in a permuted order and permuted back).
        min_elements: The fewest elements a valid case has.
        max_elements: The most elements a valid case has.
        max_allocation_bytes: The most bytes allocated before slicing.
        dim_parameter: A parameter that truncates ``size`` and ``steps`` to its value.
        roll_parameter: Accepted as torch's signature has it (unused there too).
        dtype: The tensor's dtype.
        cuda: Whether to move the tensor to the GPU.
        tensor_constructor: Called as ``f(size=..., dtype=..., **params)`` instead of rand or
            randint.
    """

    def __init__(self, name: str, size: tuple[str | int, ...],
                 steps: tuple[str | int, ...] | None = None,
                 probability_contiguous: float = 0.5, min_elements: int | None = None,
                 max_elements: int | None = None, max_allocation_bytes: int | None = None,
                 dim_parameter: str | None = None, roll_parameter: str | None = None,
                 dtype: dtypes.dtype = dtypes.float32, cuda: bool = False,
                 tensor_constructor: Callable | None = None) -> None:
        self._name = name
        self._size = size
        self._steps = steps
        self._probability_contiguous = probability_contiguous
        self._min_elements = min_elements
        self._max_elements = max_elements
        self._max_allocation_bytes = max_allocation_bytes
        self._dim_parameter = dim_parameter
        self._dtype = dtype
        self._cuda = cuda
        self._tensor_constructor = tensor_constructor

    @property
    def name(self) -> str:
        """The tensor's name."""
        return self._name

    @staticmethod
    def default_tensor_constructor(size: tuple[int, ...], dtype: dtypes.dtype,
                                   **kwargs: Any) -> Any:
        """``rand`` for floating and complex dtypes, ``randint(1, 127)`` otherwise."""
        if dtype.is_floating_point or dtype.is_complex:
            return _random.rand(size=size, dtype=dtype, device="cpu")
        return _random.randint(1, 127, size=size, dtype=dtype, device="cpu")

    def _make_tensor(self, params: dict, state: np.random.RandomState) -> tuple[Any, dict]:
        size, steps, allocation_size = self._get_size_and_steps(params)
        constructor = self._tensor_constructor or self.default_tensor_constructor
        raw_tensor = constructor(size=allocation_size, dtype=self._dtype, **params)
        if self._cuda:
            raw_tensor = raw_tensor.cuda()
        dim = len(size)
        order = np.arange(dim)
        if state.rand() > self._probability_contiguous:
            while dim > 1 and np.all(order == np.arange(dim)):
                order = state.permutation(raw_tensor.dim())
            raw_tensor = raw_tensor.permute(tuple(order)).contiguous()
            raw_tensor = raw_tensor.permute(tuple(np.argsort(order)))
        slices = [slice(0, n * step, step) for n, step in zip(size, steps, strict=True)]
        tensor = raw_tensor[tuple(slices)]
        properties = {"numel": int(tensor.numel()), "order": order, "steps": steps,
                      "is_contiguous": tensor.is_contiguous(), "dtype": str(self._dtype)}
        return tensor, properties

    def _get_size_and_steps(self, params: dict) -> tuple[tuple, tuple, tuple]:
        dim = params[self._dim_parameter] if self._dim_parameter is not None else len(self._size)

        def resolve(values: tuple, dim: int) -> tuple:
            values = tuple(params.get(i, i) for i in values)
            values = values[:dim]
            return values + (1,) * (dim - len(values))

        size = resolve(self._size, dim)
        steps = resolve(self._steps or (), dim)
        allocation_size = tuple(n * step for n, step in zip(size, steps, strict=True))
        return size, steps, allocation_size

    def satisfies_constraints(self, params: dict) -> bool:
        """Whether the sizes ``params`` give respect the element and allocation bounds."""
        size, _, allocation_size = self._get_size_and_steps(params)
        num_elements = prod(size)
        if num_elements < 0:
            raise AssertionError("Computed number of elements is negative")
        allocation_bytes = prod(allocation_size, base=dtype_size(self._dtype))

        def nullable_greater(left: Any, right: Any) -> bool:
            return left is not None and right is not None and left > right

        return not (nullable_greater(num_elements, self._max_elements)
                    or nullable_greater(self._min_elements, num_elements)
                    or nullable_greater(allocation_bytes, self._max_allocation_bytes))


class Fuzzer:
    """Draws parameters and builds tensors from them, reproducibly for a seed.

    Args:
        parameters: FuzzedParameters (lists of them are unpacked one level).
        tensors: FuzzedTensors (lists of them are unpacked one level).
        constraints: Callables taking the parameters as keywords; a False rejects the draw.
        seed: Seeds the NumPy RandomState and, from it, jitgrad's generator.
    """

    def __init__(self, parameters: list, tensors: list,
                 constraints: list[Callable] | None = None, seed: int | None = None) -> None:
        if seed is None:
            seed = int(np.random.RandomState().randint(0, 2 ** 32 - 1, dtype=np.int64))
        self._seed = seed
        self._parameters = Fuzzer._unpack(parameters, FuzzedParameter)
        self._tensors = Fuzzer._unpack(tensors, FuzzedTensor)
        self._constraints = constraints or ()
        overlap = {p.name for p in self._parameters} & {t.name for t in self._tensors}
        if overlap:
            raise ValueError(f"Duplicate names in parameters and tensors: {overlap}")
        self._rejections = 0
        self._total_generated = 0

    @staticmethod
    def _unpack(values: list, cls: type) -> tuple:
        return tuple(it.chain.from_iterable([[i] if isinstance(i, cls) else i for i in values]))

    def take(self, n: int) -> Iterator[tuple[dict, dict, dict]]:
        """``n`` cases of ``(tensors, tensor_properties, params)``, each a dict by name."""
        state = np.random.RandomState(self._seed)
        _random.manual_seed(int(state.randint(low=0, high=2 ** 63, dtype=np.int64)))
        for _ in range(n):
            params = self._generate(state)
            tensors, tensor_properties = {}, {}
            for t in self._tensors:
                tensors[t.name], tensor_properties[t.name] = t._make_tensor(params, state)
            yield tensors, tensor_properties, params

    @property
    def rejection_rate(self) -> float:
        """The fraction of drawn parameter sets that failed a constraint."""
        if not self._total_generated:
            return 0.0
        return self._rejections / self._total_generated

    def _generate(self, state: np.random.RandomState) -> dict:
        strict_params: dict[str, Any] = {}
        for _ in range(1000):
            candidate: dict[str, Any] = {}
            for p in self._parameters:
                if p.strict and p.name in strict_params:
                    candidate[p.name] = strict_params[p.name]
                else:
                    candidate[p.name] = p.sample(state)
                    if p.strict:
                        strict_params[p.name] = candidate[p.name]
            candidate = self._resolve_aliases(candidate)
            self._total_generated += 1
            if not all(f(candidate) for f in self._constraints) \
                    or not all(t.satisfies_constraints(candidate) for t in self._tensors):
                self._rejections += 1
                continue
            return candidate
        raise ValueError("Failed to generate a set of valid parameters.")

    @staticmethod
    def _resolve_aliases(params: dict) -> dict:
        params = dict(params)
        alias_count = sum(isinstance(v, ParameterAlias) for v in params.values())
        while alias_count:
            for k in list(params):
                if isinstance(params[k], ParameterAlias):
                    params[k] = params[params[k].alias_to]
            new_count = sum(isinstance(v, ParameterAlias) for v in params.values())
            if new_count == alias_count:
                raise ValueError(f"ParameterAlias cycle detected\n{params}")
            alias_count = new_count
        return params
