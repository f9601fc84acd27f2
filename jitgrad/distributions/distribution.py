"""The ``Distribution`` base class, as ``torch.distributions.Distribution``."""

from __future__ import annotations

import warnings
from typing import Any

import jitgrad
from jitgrad.distributions import constraints
from jitgrad.distributions.utils import lazy_property

__all__ = ["Distribution"]

_EMPTY = ()


class Distribution:
    """Base class of probability distributions.

    Subclasses set ``arg_constraints``, ``support`` and ``has_rsample`` and implement
    ``sample``/``rsample``, ``log_prob``, ``entropy`` and the moments.
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Sets whether validation is enabled or disabled by default.

        Args:
            value: Whether to validate parameters and sample values.
        """
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape: Any = _EMPTY, event_shape: Any = _EMPTY,
                 validate_args: bool | None = None):
        self._batch_shape = jitgrad.Size(batch_shape)
        self._event_shape = jitgrad.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(
                    f"{self.__class__} does not define `arg_constraints`. Please set "
                    "`arg_constraints = {}` or initialize the distribution with "
                    "`validate_args=False` to turn off validation.",
                    stacklevel=2,
                )
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # skip constraints that cannot be checked
                if param not in self.__dict__ and isinstance(
                    getattr(type(self), param), lazy_property
                ):
                    continue  # skip checking lazily-constructed args
                value = getattr(self, param)
                valid = constraint.check(value)
                if not jitgrad._is_all_true(valid):
                    raise ValueError(
                        f"Expected parameter {param} "
                        f"({type(value).__name__} of shape {tuple(value.shape)}) "
                        f"of distribution {repr(self)} "
                        f"to satisfy the constraint {repr(constraint)}, "
                        f"but found invalid values:\n{value}"
                    )
        super().__init__()

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        """Returns a new distribution with batch dimensions expanded to ``batch_shape``."""
        raise NotImplementedError

    @property
    def batch_shape(self) -> Any:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Any:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        """Maps each argument name to the constraint it must satisfy."""
        raise NotImplementedError

    @property
    def support(self) -> Any:
        """The constraint object for the support of this distribution."""
        raise NotImplementedError

    @property
    def mean(self) -> Any:
        """The mean of the distribution."""
        raise NotImplementedError  # (torch's: no text, unlike mode's)

    @property
    def mode(self) -> Any:
        """The mode of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Any:
        """The variance of the distribution."""
        raise NotImplementedError

    @property
    def stddev(self) -> Any:
        """The standard deviation of the distribution."""
        return self.variance.sqrt()

    def sample(self, sample_shape: Any = _EMPTY) -> Any:
        """Draws a sample of shape ``sample_shape + batch_shape + event_shape`` (no grad)."""
        with jitgrad.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = _EMPTY) -> Any:
        """Draws a reparameterized sample (gradients flow to the parameters)."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Any:
        """Draws ``n`` samples (deprecated in torch; use ``sample((n,))``)."""
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
                      FutureWarning, stacklevel=2)
        return self.sample(jitgrad.Size((n,)))

    def log_prob(self, value: Any) -> Any:
        """Returns the log of the probability density/mass evaluated at ``value``."""
        raise NotImplementedError

    def cdf(self, value: Any) -> Any:
        """Returns the cumulative distribution function evaluated at ``value``."""
        raise NotImplementedError

    def icdf(self, value: Any) -> Any:
        """Returns the inverse cumulative distribution function evaluated at ``value``."""
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Any:
        """Returns the support values of a discrete distribution."""
        raise NotImplementedError

    def entropy(self) -> Any:
        """Returns the entropy, batched over ``batch_shape``."""
        raise NotImplementedError

    def perplexity(self) -> Any:
        """Returns ``exp(entropy)``."""
        return jitgrad.exp(self.entropy())

    def _extended_shape(self, sample_shape: Any = _EMPTY) -> Any:
        """Returns ``sample_shape + batch_shape + event_shape``."""
        if not isinstance(sample_shape, tuple):
            sample_shape = jitgrad.Size(sample_shape)
        return jitgrad.Size(tuple(sample_shape) + tuple(self._batch_shape)
                            + tuple(self._event_shape))

    def _validate_sample(self, value: Any) -> None:
        """Checks ``value``'s type, shape and support, raising torch's ``ValueError``s."""
        if not jitgrad.is_tensor(value):
            raise ValueError("The value argument to log_prob must be a Tensor")

        event_dim_start = len(value.shape) - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(
                f"The right-most size of value must match event_shape: {value.size()} vs "
                f"{self._event_shape}."
            )

        actual_shape = value.size()
        expected_shape = self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(
                    f"Value is not broadcastable with batch_shape+event_shape: "
                    f"{actual_shape} vs {expected_shape}."
                )
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(
                f"{self.__class__} does not define `support` to enable "
                "sample validation. Please initialize the distribution with "
                "`validate_args=False` to turn off validation.",
                stacklevel=2,
            )
            return
        assert support is not None
        valid = support.check(value)
        if not jitgrad._is_all_true(valid):
            raise ValueError(
                "Expected value argument "
                f"({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({repr(support)}) "
                f"of the distribution {repr(self)}, "
                f"but found invalid values:\n{value}"
            )

    def _get_checked_instance(self, cls: type, _instance: Any = None) -> Any:
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method."
            )
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        param_names = [k for k, _ in self.arg_constraints.items() if k in self.__dict__]
        args_string = ", ".join(
            [
                f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"  # noqa: E501
                for p in param_names
            ]
        )
        return self.__class__.__name__ + "(" + args_string + ")"
