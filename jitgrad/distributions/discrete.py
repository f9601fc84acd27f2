"""Discrete distributions: Bernoulli, Categorical, OneHotCategorical, Geometric, Poisson and
Binomial, composed from jitgrad ops."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

import jitgrad
import jitgrad.nn.functional as F
from jitgrad.distributions import constraints
from jitgrad.ops import lgamma, xlogy
from jitgrad.distributions.distribution import _EMPTY, Distribution
from jitgrad.distributions.exp_family import ExponentialFamily
from jitgrad.distributions.utils import (
    _finfo,
    broadcast_all,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)

__all__ = ["Bernoulli", "Binomial", "Categorical", "Geometric", "OneHotCategorical", "Poisson"]

_BOTH = "Either `probs` or `logits` must be specified, but not both."


def _bce_logits(logits: Any, target: Any) -> Any:
    return F.binary_cross_entropy_with_logits(logits, target, reduction="none")


def _numel(shape: Any) -> int:
    return math.prod(tuple(shape))


class _ProbsOrLogits(Distribution):
    """Shared ``probs=``/``logits=`` handling of the binary families."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}

    def _init_param(self, probs: Any, logits: Any) -> Any:
        if (probs is None) == (logits is None):
            raise ValueError(_BOTH)
        if probs is not None:
            is_scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
        else:
            is_scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        return jitgrad.Size() if is_scalar else self._param.size()

    def _expand_param(self, new: Any, batch_shape: Any) -> None:
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits

    @lazy_property
    def logits(self) -> Any:
        """Log-odds of success."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Any:
        """Probability of success."""
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Any:
        """Shape of the parameter tensor."""
        return self._param.size()


class Bernoulli(_ProbsOrLogits, ExponentialFamily):
    """Bernoulli distribution over ``{0, 1}``, parameterized by ``probs`` or ``logits``.

    Args:
        probs: Probability of sampling ``1``.
        logits: Log-odds of sampling ``1``.
        validate_args: Whether to validate parameters and values.
    """

    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None):
        batch_shape = self._init_param(probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._get_checked_instance(Bernoulli, _instance)
        batch_shape = jitgrad.Size(batch_shape)
        self._expand_param(new, batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Any:
        return self.probs

    @property
    def mode(self) -> Any:
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return jitgrad.where(self.probs == 0.5, jitgrad.full_like(mode, math.nan), mode)

    @property
    def variance(self) -> Any:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = _EMPTY) -> Any:
        shape = self._extended_shape(sample_shape)
        with jitgrad.no_grad():
            return jitgrad.bernoulli(self.probs.expand(shape))

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -_bce_logits(logits, value)  # (as torch: an integer value is refused there)

    def entropy(self) -> Any:
        return _bce_logits(self.logits, self.probs)

    @property
    def _natural_params(self) -> tuple[Any, ...]:
        return (jitgrad.logit(self.probs),)

    def _log_normalizer(self, x: Any) -> Any:
        return jitgrad.log1p(jitgrad.exp(x))

    def enumerate_support(self, expand: bool = True) -> Any:
        values = jitgrad.arange(2, dtype=self._param.dtype)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values


class Geometric(_ProbsOrLogits):
    """Number of failures before the first success of Bernoulli trials with ``probs``.

    Args:
        probs: Probability of success (in ``(0, 1]``).
        logits: Log-odds of success.
        validate_args: Whether to validate parameters and values.
    """

    support = constraints.nonnegative_integer

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None):
        batch_shape = self._init_param(probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            value = self.probs
            valid = value > 0
            if not bool(valid.all()):
                invalid_value = value.detach()[~valid]
                raise ValueError(
                    "Expected parameter probs "
                    f"({type(value).__name__} of shape {tuple(value.shape)}) "
                    f"of distribution {repr(self)} "
                    f"to be positive but found invalid values:\n{invalid_value}"
                )

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._get_checked_instance(Geometric, _instance)
        batch_shape = jitgrad.Size(batch_shape)
        self._expand_param(new, batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Any:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Any:
        return jitgrad.zeros_like(self.probs)

    @property
    def variance(self) -> Any:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: Any = _EMPTY) -> Any:
        shape = self._extended_shape(sample_shape)
        tiny = _finfo(self.probs)[0]
        with jitgrad.no_grad():
            u = jitgrad.rand(tuple(shape), dtype=self.probs.dtype).clamp(min=tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # P(0) = 1 when probs == 1: value * log1p(-1) would be 0 * -inf there.
        safe = jitgrad.where((probs == 1) & (value == 0), jitgrad.zeros_like(probs), probs)
        return value * (-safe).log1p() + self.probs.log()

    def entropy(self) -> Any:
        return _bce_logits(self.logits, self.probs) / self.probs


class Categorical(Distribution):
    """Categorical distribution over ``{0, ..., K-1}``, parameterized by ``probs`` or ``logits``.

    ``probs`` are normalized over the last dimension (they need not sum to one); ``logits`` are
    unnormalized log-probabilities.

    Args:
        probs: Event probabilities (non-negative), last dimension ``K``.
        logits: Event log-probabilities, last dimension ``K``.
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(
        constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None):
        if (probs is None) == (logits is None):
            raise ValueError(_BOTH)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size()[-1]
        batch_shape = self._param.size()[:-1] if self._param.dim() > 1 else jitgrad.Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = jitgrad.Size(batch_shape)
        param_shape = tuple(batch_shape) + (self._num_events,)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(param_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(param_shape)
            new._param = new.logits
        new._num_events = self._num_events
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> Any:
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Any:
        """Normalized log-probabilities."""
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Any:
        """Normalized probabilities."""
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> Any:
        """Shape of the parameter tensor."""
        return self._param.size()

    @property
    def mean(self) -> Any:
        return jitgrad.full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    @property
    def mode(self) -> Any:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Any:
        return jitgrad.full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    def sample(self, sample_shape: Any = _EMPTY) -> Any:
        if not isinstance(sample_shape, jitgrad.Size):
            sample_shape = jitgrad.Size(sample_shape)
        with jitgrad.no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            samples_2d = jitgrad.multinomial(probs_2d, _numel(sample_shape), True).T
        return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = jitgrad.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self) -> Any:
        min_real = -_FLOAT_MAX.get(self.logits.dtype, _FLOAT_MAX[jitgrad.float32])
        logits = jitgrad.clamp(self.logits, min=min_real)
        p_log_p = logits * self.probs
        return -p_log_p.sum(-1)

    def enumerate_support(self, expand: bool = True) -> Any:
        values = jitgrad.arange(self._num_events, dtype=jitgrad.int64)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values


_FLOAT_MAX = {
    jitgrad.float16: 65504.0,
    jitgrad.float32: 3.4028234663852886e38,
    jitgrad.float64: 1.7976931348623157e308,
}


class OneHotCategorical(Distribution):
    """Categorical distribution whose samples are one-hot vectors of size ``K``.

    Args:
        probs: Event probabilities (non-negative), last dimension ``K``.
        logits: Event log-probabilities, last dimension ``K``.
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None):
        self._categorical = Categorical(probs, logits)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._get_checked_instance(OneHotCategorical, _instance)
        batch_shape = jitgrad.Size(batch_shape)
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def _param(self) -> Any:
        return self._categorical._param

    @property
    def probs(self) -> Any:
        """Normalized probabilities."""
        return self._categorical.probs

    @property
    def logits(self) -> Any:
        """Normalized log-probabilities."""
        return self._categorical.logits

    @property
    def mean(self) -> Any:
        return self._categorical.probs

    @property
    def mode(self) -> Any:
        probs = self._categorical.probs
        return F.one_hot(probs.argmax(-1), probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self) -> Any:
        return self._categorical.probs * (1 - self._categorical.probs)

    @property
    def param_shape(self) -> Any:
        """Shape of the parameter tensor."""
        return self._categorical.param_shape

    def sample(self, sample_shape: Any = _EMPTY) -> Any:
        probs = self._categorical.probs
        num_events = self._categorical._num_events
        indices = self._categorical.sample(sample_shape)
        return F.one_hot(indices, num_events).to(probs.dtype)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        indices = value.max(-1)[1]
        return self._categorical.log_prob(indices)

    def entropy(self) -> Any:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Any:
        n = self.event_shape[0]
        values = jitgrad.eye(n, dtype=self._param.dtype)
        values = values.view((n,) + (1,) * len(self.batch_shape) + (n,))
        if expand:
            values = values.expand((n,) + tuple(self.batch_shape) + (n,))
        return values


class Poisson(ExponentialFamily):
    """Poisson distribution with rate ``rate``.

    Samples come from the inverse CDF over a fixed number of terms, a composition of jitgrad
    ops driven by ``jitgrad.rand``.

    Args:
        rate: Rate (non-negative).
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Any, validate_args: bool | None = None):
        (self.rate,) = broadcast_all(rate)
        batch_shape = jitgrad.Size() if isinstance(rate, Number) else self.rate.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._get_checked_instance(Poisson, _instance)
        batch_shape = jitgrad.Size(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Any:
        return self.rate

    @property
    def mode(self) -> Any:
        return self.rate.floor()

    @property
    def variance(self) -> Any:
        return self.rate

    def sample(self, sample_shape: Any = _EMPTY) -> Any:
        shape = self._extended_shape(sample_shape)
        if self.rate._trace is None and self.rate.device.type == "cpu":
            with jitgrad.no_grad():  # (torch's sampler and draws)
                return jitgrad.poisson(self.rate.expand(shape))
        with jitgrad.no_grad():  # (traced: the inverse CDF at uniform draws)
            rate = self.rate.expand(shape).to(jitgrad.float64)
            top = float(rate.max()) if rate.numel() else 0.0
            terms = int(top + 12 * math.sqrt(top) + 20)
            k = jitgrad.arange(terms, dtype=jitgrad.float64)
            r = rate.unsqueeze(-1)
            log_pmf = xlogy(k, r) - r - lgamma(k + 1)
            cdf = log_pmf.exp().cumsum(-1)
            u = jitgrad.rand(tuple(shape), dtype=jitgrad.float64).unsqueeze(-1)
            return (cdf < u).sum(-1).to(self.rate.dtype)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        value = value.to(rate.dtype)
        return xlogy(value, rate) - rate - lgamma(value + 1)

    @property
    def _natural_params(self) -> tuple[Any, ...]:
        return (jitgrad.log(self.rate),)

    def _log_normalizer(self, x: Any) -> Any:
        return jitgrad.exp(x)


class Binomial(_ProbsOrLogits):
    """Number of successes in ``total_count`` Bernoulli trials with ``probs`` or ``logits``.

    Args:
        total_count: Number of trials (non-negative integers).
        probs: Probability of success per trial.
        logits: Log-odds of success per trial.
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {
        "total_count": constraints.nonnegative_integer,
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True

    def __init__(self, total_count: Any = 1, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None):
        if (probs is None) == (logits is None):
            raise ValueError(_BOTH)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._get_checked_instance(Binomial, _instance)
        batch_shape = jitgrad.Size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        self._expand_param(new, batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> Any:
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Any:
        return self.total_count * self.probs

    @property
    def mode(self) -> Any:
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> Any:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = _EMPTY) -> Any:
        shape = self._extended_shape(sample_shape)
        if self.probs._trace is None and self.probs.device.type == "cpu":
            with jitgrad.no_grad():  # (torch's sampler and draws)
                return jitgrad.binomial(self.total_count.expand(shape).to(self.probs.dtype),
                                        self.probs.expand(shape))
        with jitgrad.no_grad():  # (traced: Bernoulli trials)
            n = self.total_count.expand(shape)
            top = int(float(n.max())) if n.numel() else 0
            probs = self.probs.expand(shape).unsqueeze(-1).expand(tuple(shape) + (top,))
            trials = jitgrad.bernoulli(probs.contiguous())
            live = jitgrad.arange(top, dtype=n.dtype) < n.unsqueeze(-1)
            return (trials * live.to(trials.dtype)).sum(-1)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_factorial_n = lgamma(n + 1)
        log_factorial_k = lgamma(value + 1)
        log_factorial_nmk = lgamma(n - value + 1)
        # k * log(p) + (n - k) * log(1 - p) in a form stable for large |logits|.
        normalize_term = (n * self.logits.clamp(min=0) + n * jitgrad.log1p(
            jitgrad.exp(-jitgrad.abs(self.logits))) - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def entropy(self) -> Any:
        total_count = int(float(self.total_count.max()))
        if not bool((self.total_count == total_count).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(jitgrad.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Any:
        total_count = int(float(self.total_count.max()))
        if not bool((self.total_count == total_count).all()):
            raise NotImplementedError(
                "Inhomogeneous total count not supported by `enumerate_support`."
            )
        values = jitgrad.arange(1 + total_count, dtype=self._param.dtype)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values

