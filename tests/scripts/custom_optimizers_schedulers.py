# ruff: noqa: N812 (the usual F alias)
"""Custom optimizers written as ``torch.optim.Optimizer`` subclasses, the way public repositories
write them (lion-pytorch, transformers/fairseq's Adafactor, the Sophia repository, timm's
Lookahead), written for these tests (not a copy of any), with the built-in LR schedulers people
chain to them:

- ``Lion``: ``params: ParamsT`` annotations, a ``defaults`` dict and ``ValueError``
  validation, ``@torch.no_grad()`` ``step`` with ``with torch.enable_grad(): loss = closure()``,
  ``self.state[p]`` lazily initialised, ``mul_`` (decoupled weight decay),
  ``lerp_``/``sign_``/``add_(alpha=)`` in place, a ``filter`` over ``group['params']``, and a
  multi-tensor form (``torch._foreach_mul_/lerp_/sign_/add_``) chosen timm-style through
  ``_default_to_fused_or_foreach`` when the private helper exists;
- a simplified ``Adafactor``: factored second moments (row/column means of ``grad ** 2``,
  ``rsqrt``), the relative step size, ``RMS`` update clipping, ``clamp_(min=1.0)``, Python
  ``max`` of a float and a 0-d tensor;
- ``SophiaG``: a step counter as a tensor, ``__setstate__`` with ``setdefault`` and the
  conversion of an old float step, ``update_hessian`` (Gauss-Newton-Bartlett: labels sampled from
  ``torch.distributions.Categorical``), ``addcmul_`` with ``value=``, ``clamp(None, 1)``;
  ``register_step_pre_hook``/``register_step_post_hook``;
- ``Lookahead`` wrapping another optimizer without ``Optimizer.__init__`` (sharing its
  ``param_groups``, keeping its slow weights in the inner optimizer's state), around ``Adam``
  and around a 2019-style ``RAdam`` (Ranger: ``.data`` updates, the deprecated Number-first
  ``add_``/``addcmul_``/``addcdiv_`` overloads, a step-size cache in the param group);
- ``add_param_group`` (filling in defaults, the duplicate-parameter error), ``zero_grad``
  (``set_to_none=True``/``False``), ``state_dict()``/``load_state_dict()`` (integer keys, the
  dtype cast of the state to the parameters', ``copy.deepcopy``), ``repr``;
- the schedulers: ``LinearLR`` + ``CosineAnnealingLR`` under ``SequentialLR``, ``OneCycleLR``
  (cycling Lion's ``betas``, the error for an optimizer without momentum),
  ``CosineAnnealingWarmRestarts`` stepped with fractional epochs, ``ReduceLROnPlateau``,
  ``LambdaLR`` with a callable object (its ``__dict__`` in ``state_dict``), a user's
  ``LRScheduler`` subclass (``get_lr`` over ``base_lrs``/``last_epoch``, the
  ``_get_lr_called_within_step`` warning), ``get_last_lr``,
  ``scheduler.state_dict()`` resume, the warnings for a ``scheduler.step()`` before
  ``optimizer.step()`` and for ``get_lr()``;
- a checkpoint of model, optimizer, scheduler and RNG state (``get_rng_state``) through
  ``torch.save``/``torch.load`` (``weights_only`` by default) to ``io.BytesIO``, after which
  training continues exactly as without the interruption.

Sections marked "(recorded)" keep what the tests compare with the same script on torch.
"""
import copy
import io
import math
import warnings
from collections import OrderedDict

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.optim import Optimizer
from jitgrad.optim.lr_scheduler import (CosineAnnealingLR, CosineAnnealingWarmRestarts, LambdaLR,
                                        LinearLR, LRScheduler, OneCycleLR, ReduceLROnPlateau,
                                        SequentialLR)

from jitgrad.optim.optimizer import ParamsT

try:  # timm's guard for the private helpers of recent PyTorch
    from jitgrad.optim.optimizer import _default_to_fused_or_foreach
    has_recent_pt = True
except ImportError:
    has_recent_pt = False

torch.manual_seed(0)
fixed_results = {}

# ------------------------------------------------------------------------------ optimizers


class Lion(Optimizer):
    """EvoLved Sign Momentum (Chen et al., 2023): the sign of an interpolated momentum."""

    def __init__(self, params: ParamsT, lr: float = 1e-4, betas: tuple[float, float] = (0.9, 0.99),
                 weight_decay: float = 0.0, use_lerp: bool = True, foreach: bool = None):
        if not lr > 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = dict(lr=lr, betas=betas, weight_decay=weight_decay, use_lerp=use_lerp,
                        foreach=foreach)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()

        for group in self.param_groups:
            lr, wd = group["lr"], group["weight_decay"]
            beta1, beta2 = group["betas"]
            foreach = group["foreach"]
            if foreach is None:
                foreach = False
                if has_recent_pt:
                    _, foreach = _default_to_fused_or_foreach(group["params"], False, False)
            if foreach:
                self._foreach_step(group, lr, wd, beta1, beta2)
                continue
            for p in filter(lambda p: p.grad is not None, group["params"]):
                grad = p.grad
                state = self.state[p]
                if len(state) == 0:
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                exp_avg = state["exp_avg"]

                p.mul_(1 - lr * wd)  # decoupled weight decay
                if group["use_lerp"]:
                    update = exp_avg.clone().lerp_(grad, 1 - beta1).sign_()
                    p.add_(update, alpha=-lr)
                    exp_avg.lerp_(grad, 1 - beta2)
                else:
                    update = exp_avg.clone().mul_(beta1).add(grad, alpha=1 - beta1).sign_()
                    p.add_(update, alpha=-lr)
                    exp_avg.mul_(beta2).add_(grad, alpha=1 - beta2)
        return loss

    def _foreach_step(self, group, lr, wd, beta1, beta2):
        """The multi-tensor form (lion-pytorch's foreach variant)."""
        params = [p for p in group["params"] if p.grad is not None]
        grads = [p.grad for p in params]
        for p in params:
            if len(self.state[p]) == 0:
                self.state[p]["exp_avg"] = torch.zeros_like(p)
        exp_avgs = [self.state[p]["exp_avg"] for p in params]
        torch._foreach_mul_(params, 1.0 - lr * wd)
        updates = [t.clone() for t in exp_avgs]
        torch._foreach_lerp_(updates, grads, 1.0 - beta1)
        torch._foreach_sign_(updates)
        torch._foreach_add_(params, updates, alpha=-lr)
        torch._foreach_lerp_(exp_avgs, grads, 1.0 - beta2)


class Adafactor(Optimizer):
    """Adafactor (Shazeer & Stern, 2018) with factored second moments for matrices, the relative
    step size and update clipping, as transformers/fairseq write it (simplified: no fp16)."""

    def __init__(self, params, lr=None, eps=(1e-30, 1e-3), clip_threshold=1.0, decay_rate=-0.8,
                 beta1=None, weight_decay=0.0, scale_parameter=True, relative_step=True,
                 warmup_init=False):
        if lr is not None and relative_step:
            raise ValueError("Cannot combine manual `lr` and `relative_step=True` options")
        if warmup_init and not relative_step:
            raise ValueError("`warmup_init=True` requires `relative_step=True`")
        defaults = dict(lr=lr, eps=eps, clip_threshold=clip_threshold, decay_rate=decay_rate,
                        beta1=beta1, weight_decay=weight_decay, scale_parameter=scale_parameter,
                        relative_step=relative_step, warmup_init=warmup_init)
        super().__init__(params, defaults)

    @staticmethod
    def _get_lr(group, state):
        step_size = group["lr"]
        if group["relative_step"]:
            min_step = 1e-6 * state["step"] if group["warmup_init"] else 1e-2
            step_size = min(min_step, 1.0 / math.sqrt(state["step"]))
        scale = 1.0
        if group["scale_parameter"]:
            scale = max(group["eps"][1], state["RMS"])  # (a float against a 0-d tensor)
        return scale * step_size

    @staticmethod
    def _rms(tensor):
        return tensor.norm(2) / (tensor.numel() ** 0.5)

    @staticmethod
    def _approx_sq_grad(row, col):
        r_factor = (row / row.mean(dim=-1, keepdim=True)).rsqrt_().unsqueeze(-1)
        c_factor = col.unsqueeze(-2).rsqrt()
        return torch.mul(r_factor, c_factor)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()

        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                state = self.state[p]
                shape = grad.shape
                factored = len(shape) >= 2
                use_first_moment = group["beta1"] is not None
                if len(state) == 0:
                    state["step"] = 0
                    if use_first_moment:
                        state["exp_avg"] = torch.zeros_like(grad)
                    if factored:
                        state["exp_avg_sq_row"] = torch.zeros(shape[:-1]).to(grad)
                        state["exp_avg_sq_col"] = torch.zeros(shape[:-2] + shape[-1:]).to(grad)
                    else:
                        state["exp_avg_sq"] = torch.zeros_like(grad)
                    state["RMS"] = 0

                state["step"] += 1
                state["RMS"] = self._rms(p)
                lr = self._get_lr(group, state)

                beta2t = 1.0 - math.pow(state["step"], group["decay_rate"])
                update = grad ** 2 + group["eps"][0]
                if factored:
                    row, col = state["exp_avg_sq_row"], state["exp_avg_sq_col"]
                    row.mul_(beta2t).add_(update.mean(dim=-1), alpha=1.0 - beta2t)
                    col.mul_(beta2t).add_(update.mean(dim=-2), alpha=1.0 - beta2t)
                    update = self._approx_sq_grad(row, col)
                    update.mul_(grad)
                else:
                    exp_avg_sq = state["exp_avg_sq"]
                    exp_avg_sq.mul_(beta2t).add_(update, alpha=1.0 - beta2t)
                    update = exp_avg_sq.rsqrt().mul_(grad)

                update.div_((self._rms(update) / group["clip_threshold"]).clamp_(min=1.0))
                update.mul_(lr)
                if use_first_moment:
                    exp_avg = state["exp_avg"]
                    exp_avg.mul_(group["beta1"]).add_(update, alpha=1 - group["beta1"])
                    update = exp_avg
                if group["weight_decay"] != 0:
                    p.add_(p, alpha=-group["weight_decay"] * lr)
                p.add_(-update)
        return loss


class SophiaG(Optimizer):
    """Sophia with the Gauss-Newton-Bartlett Hessian estimate (Liu et al., 2023): a clipped
    ratio of momentum to a diagonal Hessian EMA that ``update_hessian`` refreshes."""

    def __init__(self, params, lr=1e-4, betas=(0.965, 0.99), rho=0.04, weight_decay=1e-1, *,
                 maximize=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= rho:
            raise ValueError(f"Invalid rho parameter: {rho}")
        defaults = dict(lr=lr, betas=betas, rho=rho, weight_decay=weight_decay,
                        maximize=maximize)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)
        state_values = list(self.state.values())
        step_is_tensor = len(state_values) != 0 and torch.is_tensor(state_values[0]["step"])
        if not step_is_tensor:
            for s in state_values:
                s["step"] = torch.tensor(float(s["step"]))

    def _init_state(self, p):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = torch.zeros((1,), dtype=torch.float)
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["hessian"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        return state

    @torch.no_grad()
    def update_hessian(self):
        for group in self.param_groups:
            _, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self._init_state(p)
                state["hessian"].mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)

    @torch.no_grad()
    def step(self, closure=None, bs=32):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()

        for group in self.param_groups:
            beta1, _ = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad if not group["maximize"] else -p.grad
                state = self._init_state(p)
                state["step"] += 1
                exp_avg, hess = state["exp_avg"], state["hessian"]

                p.mul_(1 - group["lr"] * group["weight_decay"])
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                ratio = (exp_avg.abs() / (group["rho"] * bs * hess + 1e-15)).clamp(None, 1)
                p.addcmul_(exp_avg.sign(), ratio, value=-group["lr"])
        return loss


class RAdam(Optimizer):
    """Rectified Adam (Liu et al., 2019) as its 2019 code and Ranger write it: ``.data``
    instead of ``no_grad``, the step sizes cached per step in the group, and the Number-first
    overloads ``add_(alpha, t)`` / ``addcmul_(value, t1, t2)`` / ``addcdiv_(value, t1, t2)``
    that PyTorch has deprecated since 1.5."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 degenerated_to_sgd=True):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        self.degenerated_to_sgd = degenerated_to_sgd
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        buffer=[[None, None, None] for _ in range(10)])
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = None
        if closure is not None:
            loss = closure()

        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad.data
                p_data = p.data
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p_data)
                    state["exp_avg_sq"] = torch.zeros_like(p_data)
                else:
                    state["exp_avg"] = state["exp_avg"].type_as(p_data)
                    state["exp_avg_sq"] = state["exp_avg_sq"].type_as(p_data)

                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                beta1, beta2 = group["betas"]
                exp_avg_sq.mul_(beta2).addcmul_(1 - beta2, grad, grad)
                exp_avg.mul_(beta1).add_(1 - beta1, grad)
                state["step"] += 1

                buffered = group["buffer"][int(state["step"] % 10)]
                if state["step"] == buffered[0]:
                    n_sma, step_size = buffered[1], buffered[2]
                else:
                    buffered[0] = state["step"]
                    beta2_t = beta2 ** state["step"]
                    n_sma_max = 2 / (1 - beta2) - 1
                    n_sma = n_sma_max - 2 * state["step"] * beta2_t / (1 - beta2_t)
                    buffered[1] = n_sma
                    if n_sma >= 5:
                        step_size = math.sqrt(
                            (1 - beta2_t) * (n_sma - 4) / (n_sma_max - 4) * (n_sma - 2) / n_sma
                            * n_sma_max / (n_sma_max - 2)) / (1 - beta1 ** state["step"])
                    elif self.degenerated_to_sgd:
                        step_size = 1.0 / (1 - beta1 ** state["step"])
                    else:
                        step_size = -1
                    buffered[2] = step_size

                if n_sma >= 5:
                    if group["weight_decay"] != 0:
                        p_data.add_(-group["weight_decay"] * group["lr"], p_data)
                    denom = exp_avg_sq.sqrt().add_(group["eps"])
                    p_data.addcdiv_(-step_size * group["lr"], exp_avg, denom)
                elif step_size > 0:
                    if group["weight_decay"] != 0:
                        p_data.add_(-group["weight_decay"] * group["lr"], p_data)
                    p_data.add_(-step_size * group["lr"], exp_avg)
        return loss


class Lookahead(Optimizer):
    """Lookahead (Zhang et al., 2019) around any optimizer, timm-style: it shares the inner
    optimizer's ``param_groups`` and keeps the slow weights in the inner optimizer's state."""

    def __init__(self, base_optimizer, alpha=0.5, k=6):
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"Invalid slow update rate: {alpha}")
        if not 1 <= k:
            raise ValueError(f"Invalid lookahead steps: {k}")
        defaults = dict(lookahead_alpha=alpha, lookahead_k=k, lookahead_step=0)
        self._base_optimizer = base_optimizer
        self.param_groups = base_optimizer.param_groups
        self.defaults = base_optimizer.defaults
        self.defaults.update(defaults)
        self.state = base_optimizer.state
        # Optimizer.__init__ is skipped: the hook dicts its step wrapper reads must exist
        # (zero_grad patches the class's step with that wrapper)
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        for name, default in defaults.items():
            for group in self._base_optimizer.param_groups:
                group.setdefault(name, default)

    @torch.no_grad()
    def update_slow(self, group):
        for fast_p in group["params"]:
            if fast_p.grad is None:
                continue
            param_state = self._base_optimizer.state[fast_p]
            if "lookahead_slow_buff" not in param_state:
                param_state["lookahead_slow_buff"] = torch.empty_like(fast_p)
                param_state["lookahead_slow_buff"].copy_(fast_p)
            slow = param_state["lookahead_slow_buff"]
            slow.add_(fast_p - slow, alpha=group["lookahead_alpha"])
            fast_p.copy_(slow)

    @torch.no_grad()
    def step(self, closure=None):
        loss = self._base_optimizer.step(closure)
        for group in self._base_optimizer.param_groups:
            group["lookahead_step"] += 1
            if group["lookahead_step"] % group["lookahead_k"] == 0:
                self.update_slow(group)
        return loss

    def state_dict(self):
        return self._base_optimizer.state_dict()

    def load_state_dict(self, state_dict):
        self._base_optimizer.load_state_dict(state_dict)
        self.param_groups = self._base_optimizer.param_groups
        self.state = self._base_optimizer.state


class WarmupCosineLR(LRScheduler):
    """A user's own scheduler: linear warm-up, then a cosine to ``min_ratio``."""

    def __init__(self, optimizer, warmup_steps, total_steps, min_ratio=0.1, last_epoch=-1):
        self.warmup_steps, self.total_steps, self.min_ratio = warmup_steps, total_steps, min_ratio
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, "
                          "please use `get_last_lr()`.", UserWarning, stacklevel=2)
        step = self.last_epoch
        if step < self.warmup_steps:
            factor = (step + 1) / self.warmup_steps
        else:
            progress = min(1.0, (step - self.warmup_steps) / max(1, self.total_steps
                                                                  - self.warmup_steps))
            factor = self.min_ratio + (1 - self.min_ratio) * 0.5 * (1 + math.cos(math.pi
                                                                                 * progress))
        return [base_lr * factor for base_lr in self.base_lrs]


# ---------------------------------------------------------------------------- data, model

# three classes: which of three centres a point is nearest to (float64 throughout, so that the
# sign-based updates cannot flip on rounding between libraries)
centres = torch.randn(3, 8, dtype=torch.float64)
points = torch.randn(96, 8, dtype=torch.float64)
classes = torch.cdist(points, centres).argmin(dim=1)
BATCH = 32


def batch(step):
    start = (step * BATCH) % points.shape[0]
    return points[start:start + BATCH], classes[start:start + BATCH]


class MLP(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, hidden), nn.Tanh())
        self.head = nn.Linear(hidden, 3)

    def forward(self, x):
        return self.head(self.body(x))


def make_model(seed=1):
    torch.manual_seed(seed)
    return MLP().double()


def flat_params(model):
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def train(model, optimizer, steps, scheduler=None, start=0, per_step=None):
    """Plain loop: one batch a step, the scheduler stepped per batch; returns the losses."""
    losses = []
    for step in range(start, start + steps):
        x, y = batch(step)
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        if per_step is not None:
            per_step(step)
        if scheduler is not None:
            scheduler.step()
        losses.append(loss.item())
    return losses


# ----------------------------------------------------------------- validation (recorded)


def error_of(fn):
    try:
        fn()
    except (ValueError, TypeError, RuntimeError) as e:
        return type(e).__name__, str(e)
    return None


_probe = nn.Linear(2, 2)
_w = _probe.weight
errors = {
    "lion_lr": error_of(lambda: Lion(_probe.parameters(), lr=-1.0)),
    "lion_beta": error_of(lambda: Lion(_probe.parameters(), betas=(0.9, 1.5))),
    "adafactor_lr": error_of(lambda: Adafactor(_probe.parameters(), lr=1e-3)),
    "adafactor_warmup": error_of(
        lambda: Adafactor(_probe.parameters(), lr=1e-3, relative_step=False, warmup_init=True)),
    "sophia_rho": error_of(lambda: SophiaG(_probe.parameters(), rho=-0.1)),
    "lookahead_alpha": error_of(lambda: Lookahead(Lion(_probe.parameters()), alpha=2.0)),
    "lookahead_k": error_of(lambda: Lookahead(Lion(_probe.parameters()), k=0)),
    # what Optimizer.__init__/add_param_group check before a subclass sees anything
    "empty": error_of(lambda: Lion([], lr=1e-3)),
    "tensor_not_iterable": error_of(lambda: Lion(_w, lr=1e-3)),
    "set_of_params": error_of(lambda: Lion([{"params": set(_probe.parameters())}], lr=1e-3)),
    "non_leaf": error_of(lambda: Lion([_w * 2], lr=1e-3)),
    "duplicate_groups": error_of(
        lambda: Lion([{"params": [_w]}, {"params": [_w, _probe.bias]}], lr=1e-3)),
}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    errors["duplicate_in_group"] = error_of(lambda: Lion([_w, _w], lr=1e-3))
duplicate_warnings = [str(w.message) for w in caught]

# OneCycleLR cycles "momentum" or "betas": optimizers without either are refused
errors["onecycle_no_momentum"] = error_of(
    lambda: OneCycleLR(torch.optim.Adagrad(_probe.parameters()), max_lr=0.1, total_steps=10))
errors["onecycle_adafactor"] = error_of(
    lambda: OneCycleLR(Adafactor(_probe.parameters(), lr=0.1, relative_step=False, beta1=0.9),
                       max_lr=0.1, total_steps=10))


def _fresh():
    return Lion(nn.Linear(2, 2).parameters(), lr=1e-2)


def _one_cycle_past_the_end():
    s = OneCycleLR(_fresh(), max_lr=0.1, total_steps=3)
    for _ in range(4):
        s.optimizer.step()
        s.step()


errors.update(
    onecycle_past_the_end=error_of(_one_cycle_past_the_end),
    sequential_milestones=error_of(lambda: (lambda o: SequentialLR(
        o, [LinearLR(o), CosineAnnealingLR(o, 5)], milestones=[2, 4]))(_fresh())),
    linear_start_factor=error_of(lambda: LinearLR(_fresh(), start_factor=0.0)),
    restarts_t0=error_of(lambda: CosineAnnealingWarmRestarts(_fresh(), T_0=0)),
    restarts_tmult=error_of(lambda: CosineAnnealingWarmRestarts(_fresh(), T_0=2, T_mult=1.5)),
    restarts_negative_epoch=error_of(lambda: CosineAnnealingWarmRestarts(_fresh(), 2).step(-1)),
    plateau_mode=error_of(lambda: ReduceLROnPlateau(_fresh(), mode="lowest")),
    plateau_factor=error_of(lambda: ReduceLROnPlateau(_fresh(), factor=1.0)),
    lambda_count=error_of(lambda: LambdaLR(_fresh(), [lambda e: 1.0, lambda e: 0.5])),
)
lion_repr = repr(Lion(_probe.parameters(), lr=3e-4, weight_decay=0.1))

# ------------------------------------------- Lion, warm-up + cosine through SequentialLR

STEPS = 24
model = make_model()
optimizer = Lion(model.parameters(), lr=1e-2, betas=(0.9, 0.99), weight_decay=0.1)
warmup = LinearLR(optimizer, start_factor=0.1, end_factor=1.0, total_iters=4)
cosine = CosineAnnealingLR(optimizer, T_max=STEPS - 4, eta_min=1e-4)
scheduler = SequentialLR(optimizer, schedulers=[warmup, cosine], milestones=[4])
lion_lrs = []
lion_losses = train(model, optimizer, STEPS, scheduler,
                    per_step=lambda step: lion_lrs.append(scheduler.get_last_lr()[0]))
lion_final = flat_params(model)
lion_state_keys = sorted(optimizer.state_dict()["state"].keys())
lion_group_keys = sorted(k for k in optimizer.state_dict()["param_groups"][0] if k != "params")

# with no weight decay every weight moves by exactly lr each step (the sign of the update)
model_nd = make_model()
opt_nd = Lion(model_nd.parameters(), lr=1e-2, weight_decay=0.0)
x0, y0 = batch(0)
steps_moved = []
for _ in range(3):
    w_before = model_nd.head.weight.detach().clone()
    opt_nd.zero_grad()
    F.cross_entropy(model_nd(x0), y0).backward()
    opt_nd.step()
    steps_moved.append((model_nd.head.weight.detach() - w_before).abs())



# the mul/add and foreach forms are the lerp form; a closure gives the same trajectory
def lion_trained(**kwargs):
    m = make_model()
    train(m, Lion(m.parameters(), lr=3e-3, weight_decay=0.1, **kwargs), 10)
    return flat_params(m)


lion_lerp = lion_trained()
lerp_vs_muladd = (lion_trained(use_lerp=False) - lion_lerp).abs().max().item()
foreach_difference = (lion_trained(foreach=True) - lion_lerp).abs().max().item()

model_cl = make_model()
opt_cl = Lion(model_cl.parameters(), lr=3e-3, weight_decay=0.1)
closure_losses = []
for step in range(10):
    x, y = batch(step)

    def closure(x=x, y=y):
        opt_cl.zero_grad()
        loss = F.cross_entropy(model_cl(x), y)
        loss.backward()
        return loss

    loss = opt_cl.step(closure)
    closure_losses.append(loss.item())
    closure_grad_enabled_after = torch.is_grad_enabled()
closure_difference = (flat_params(model_cl) - lion_lerp).abs().max().item()

# zero_grad: None (the default) or zeros
opt_cl.zero_grad(set_to_none=False)
grads_zeroed = [p.grad is not None and bool((p.grad == 0).all()) for p in model_cl.parameters()]
opt_cl.zero_grad()
grads_none = [p.grad is None for p in model_cl.parameters()]

# ------------------------------------------------------------- Adafactor (relative step)

model_af = make_model()
opt_af = Adafactor(model_af.parameters(), scale_parameter=True, relative_step=True,
                   warmup_init=False)
adafactor_losses = train(model_af, opt_af, STEPS)
adafactor_final = flat_params(model_af)
af_state = opt_af.state[model_af.body[0].weight]
adafactor_state_shapes = {k: tuple(v.shape) for k, v in af_state.items() if torch.is_tensor(v)}
adafactor_bias_state = sorted(opt_af.state[model_af.body[0].bias].keys())
adafactor_step = af_state["step"]

# explicit lr, a first moment and weight decay, under LambdaLR with a callable object


class WarmupInverseSqrt:
    """A picklable lr lambda: LambdaLR saves an object's ``__dict__`` in its state_dict."""

    def __init__(self, warmup):
        self.warmup = warmup
        self.calls = 0

    def __call__(self, step):
        self.calls += 1
        step = max(step, 1)
        return min(step / self.warmup, (self.warmup / step) ** 0.5)


model_af1 = make_model()
opt_af1 = Adafactor(model_af1.parameters(), lr=3e-2, relative_step=False, scale_parameter=False,
                    beta1=0.9, weight_decay=0.01)
sched_af1 = LambdaLR(opt_af1, lr_lambda=WarmupInverseSqrt(5))
af1_lrs = []
adafactor1_losses = train(model_af1, opt_af1, STEPS, sched_af1,
                          per_step=lambda s: af1_lrs.append(sched_af1.get_last_lr()[0]))
adafactor1_final = flat_params(model_af1)
lambda_state = sched_af1.state_dict()["lr_lambdas"]

# ------------------------------ Sophia-G, Hessian estimates, CosineAnnealingWarmRestarts

HESS_EVERY = 3
model_so = make_model()
opt_so = SophiaG(model_so.parameters(), lr=2e-2, betas=(0.9, 0.95), rho=0.05,
                 weight_decay=0.01)
iters_per_epoch = 3
sched_so = CosineAnnealingWarmRestarts(opt_so, T_0=2, T_mult=2, eta_min=1e-3)
hook_log = []
pre_handle = opt_so.register_step_pre_hook(
    lambda opt, args, kwargs: hook_log.append(("pre", opt.param_groups[0]["lr"])))
post_handle = opt_so.register_step_post_hook(
    lambda opt, args, kwargs: hook_log.append(("post", int(opt.state[model_so.head.bias]
                                                           ["step"].item()))))


def sophia_train(model, opt, sched, epochs, lrs, moves):
    losses = []
    for epoch in range(epochs):
        for i in range(iters_per_epoch):
            step = epoch * iters_per_epoch + i
            x, y = batch(step)
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            loss.backward()
            before = flat_params(model)
            opt.step(bs=BATCH)
            moves.append(((flat_params(model) - before).abs().max().item(),
                          opt.param_groups[0]["lr"]))
            sched.step(epoch + (i + 1) / iters_per_epoch)  # fractional epochs
            lrs.append(sched.get_last_lr()[0])
            opt.zero_grad(set_to_none=True)
            if step % HESS_EVERY == HESS_EVERY - 1:
                # Gauss-Newton-Bartlett: labels sampled from the model's own distribution
                logits = model(x)
                y_sample = torch.distributions.Categorical(logits=logits).sample()
                loss_sampled = F.cross_entropy(logits, y_sample)
                loss_sampled.backward()
                opt.update_hessian()
                opt.zero_grad(set_to_none=True)
            losses.append(loss.item())
    return losses


sophia_lrs, sophia_moves = [], []
torch.manual_seed(7)
sophia_losses = sophia_train(model_so, opt_so, sched_so, 8, sophia_lrs, sophia_moves)
sophia_final = flat_params(model_so)
pre_handle.remove()
post_handle.remove()
n_hooks_before = len(hook_log)
train(model_so, opt_so, 1)
hooks_removed = len(hook_log) == n_hooks_before
sophia_hessian = opt_so.state[model_so.head.weight]["hessian"].clone()

# an old checkpoint: Python float steps and no "maximize" in the groups; __setstate__ (which
# load_state_dict calls) converts it
old = opt_so.state_dict()
for s in old["state"].values():
    s["step"] = float(s["step"].item())
for g in old["param_groups"]:
    del g["maximize"]
model_so2 = make_model()
opt_so2 = SophiaG(model_so2.parameters(), lr=2e-2)
opt_so2.load_state_dict(old)
sophia_loaded_step = opt_so2.state[model_so2.head.weight]["step"]
sophia_loaded_maximize = [g["maximize"] for g in opt_so2.param_groups]
# deepcopy goes through __getstate__/__setstate__ too
opt_copy = copy.deepcopy(opt_so)
copy_step_is_tensor = all(torch.is_tensor(s["step"]) for s in opt_copy.state.values())
copy_shares_params = opt_copy.param_groups[0]["params"][0] is opt_so.param_groups[0]["params"][0]

# ------------------------------------------- Lookahead(Adam), ReduceLROnPlateau, groups

model_la = make_model()
inner = torch.optim.Adam([{"params": model_la.body.parameters()},
                          {"params": model_la.head.parameters(), "lr": 2e-2}], lr=1e-2)
opt_la = Lookahead(inner, alpha=0.5, k=4)
plateau = ReduceLROnPlateau(opt_la, mode="min", factor=0.5, patience=1, threshold=1e-2,
                            cooldown=1, min_lr=1e-3)
plateau_lrs = []
lookahead_synced = []
lookahead_losses = []
for epoch in range(6):
    epoch_loss = 0.0
    for i in range(4):
        x, y = batch(i)
        opt_la.zero_grad()
        loss = F.cross_entropy(model_la(x), y)
        loss.backward()
        opt_la.step()
        epoch_loss += loss.item() / 4
    # after k=4 inner steps the fast weights are the slow ones
    slow = opt_la.state[model_la.head.weight]["lookahead_slow_buff"]
    lookahead_synced.append(torch.equal(slow, model_la.head.weight.detach()))
    # a noisy validation metric that stalls: the plateau halves the lr
    metric = 1.0 if epoch >= 1 else 2.0
    plateau.step(metric)
    plateau_lrs.append([g["lr"] for g in opt_la.param_groups])
    lookahead_losses.append(epoch_loss)
lookahead_final = flat_params(model_la)
plateau_last_lr = plateau.get_last_lr()
lookahead_group_keys = sorted(k for k in opt_la.param_groups[0] if k != "params")
lookahead_state_keys = sorted(inner.state_dict()["state"][0].keys())

# Ranger: Lookahead around the 2019-style RAdam, under the user's own warm-up + cosine
model_rg = make_model()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    opt_rg = Lookahead(RAdam(model_rg.parameters(), lr=5e-2, betas=(0.9, 0.99), weight_decay=1e-3),
                       alpha=0.5, k=6)
    sched_rg = WarmupCosineLR(opt_rg, warmup_steps=4, total_steps=STEPS)
    ranger_lrs = []
    ranger_losses = train(model_rg, opt_rg, STEPS, sched_rg,
                          per_step=lambda s: ranger_lrs.append(sched_rg.get_last_lr()[0]))
    sched_rg.get_lr()
# (PyTorch warns once per process for a deprecated overload, naming the in-place method)
ranger_warnings = [(w.category.__name__, str(w.message)) for w in caught]
ranger_final = flat_params(model_rg)
ranger_state_keys = sorted(opt_rg.state_dict()["state"][0].keys())
ranger_step = opt_rg.state_dict()["state"][0]["step"]
ranger_buffer_steps = sorted(b[0] for b in opt_rg.param_groups[0]["buffer"])

# add_param_group: unfreeze a new layer into a running optimizer
model_pg = make_model()
extra = nn.Linear(3, 3).double()
opt_pg = Lion(model_pg.parameters(), lr=1e-3, weight_decay=0.0)
train(model_pg, opt_pg, 2)
opt_pg.add_param_group({"params": extra.parameters(), "lr": 5e-3})
added_group = {k: v for k, v in opt_pg.param_groups[1].items() if k != "params"}
errors["add_duplicate"] = error_of(lambda: opt_pg.add_param_group({"params": [extra.weight]}))
errors["add_not_dict"] = error_of(lambda: opt_pg.add_param_group([extra.weight]))
for step in range(3):
    x, y = batch(step)
    opt_pg.zero_grad()
    F.cross_entropy(extra(model_pg(x)), y).backward()
    opt_pg.step()
param_group_final = torch.cat([flat_params(model_pg), flat_params(extra)])
n_groups = len(opt_pg.param_groups)

# load_state_dict casts floating state to the parameters' dtype (float32 model here)
model_32 = make_model().float()
opt_32 = Lion(model_32.parameters(), lr=1e-3)
opt_32.load_state_dict(optimizer.state_dict())  # float64 exp_avg from the first Lion run
loaded_dtypes = sorted({str(s["exp_avg"].dtype) for s in opt_32.state.values()})
loaded_lr = opt_32.param_groups[0]["lr"]
loaded_initial_lr = opt_32.param_groups[0].get("initial_lr")

# ---------------------------------------------------- OneCycleLR cycling Lion's betas

model_oc = make_model()
opt_oc = Lion(model_oc.parameters(), lr=1e-3, betas=(0.95, 0.98), weight_decay=0.05)
onecycle = OneCycleLR(opt_oc, max_lr=1e-2, total_steps=STEPS, pct_start=0.25,
                      anneal_strategy="cos", base_momentum=0.85, max_momentum=0.95,
                      div_factor=10.0, final_div_factor=100.0)
onecycle_lrs, onecycle_betas = [], []
onecycle_losses = train(model_oc, opt_oc, STEPS, onecycle, per_step=lambda s: (
    onecycle_lrs.append(onecycle.get_last_lr()[0]),
    onecycle_betas.append(opt_oc.param_groups[0]["betas"])))
onecycle_final = flat_params(model_oc)
onecycle_group_keys = sorted(k for k in opt_oc.param_groups[0] if k != "params")

# ------------------------------------------------------- warnings the schedulers raise

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    m = make_model()
    o = Lion(m.parameters(), lr=1e-3)
    s = CosineAnnealingLR(o, T_max=5)
    s.step()  # before any optimizer.step()
    early_lr = s.get_last_lr()[0]
    s.get_lr()  # outside step()
    o.step()
    s.step(3)  # the deprecated epoch argument
    epoch_lr = s.get_last_lr()[0]
scheduler_warnings = [(w.category.__name__, str(w.message)) for w in caught]

# ----------------------------------------------------- checkpoint and resume, each kind


def build(kind, seed):
    """A model, optimizer and scheduler of one kind, built as a training script builds them."""
    m = make_model(seed)
    if kind == "lion_sequential":
        o = Lion(m.parameters(), lr=3e-3, weight_decay=0.1)
        s = SequentialLR(o, [LinearLR(o, start_factor=0.1, total_iters=3),
                             CosineAnnealingLR(o, T_max=9, eta_min=1e-4)], milestones=[3])
    elif kind == "lion_onecycle":
        o = Lion(m.parameters(), lr=1e-3, betas=(0.95, 0.98))
        s = OneCycleLR(o, max_lr=1e-2, total_steps=12)
    elif kind == "adafactor_lambda":
        o = Adafactor(m.parameters(), lr=3e-2, relative_step=False, beta1=0.9)
        s = LambdaLR(o, WarmupInverseSqrt(4))
    elif kind == "sophia_restarts":
        o = SophiaG(m.parameters(), lr=2e-2, betas=(0.9, 0.95), rho=0.05)
        s = CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=1e-3)
    elif kind == "ranger_warmup_cosine":
        o = Lookahead(RAdam(m.parameters(), lr=1e-2), alpha=0.5, k=5)
        s = WarmupCosineLR(o, warmup_steps=3, total_steps=12)
    else:  # lookahead_plateau
        o = Lookahead(torch.optim.Adam(m.parameters(), lr=1e-2), alpha=0.5, k=5)
        s = ReduceLROnPlateau(o, factor=0.5, patience=0, threshold=0.05, min_lr=1e-4)
    return m, o, s


def run_steps(kind, m, o, s, start, steps):
    losses = []
    for step in range(start, start + steps):
        x, y = batch(step)
        o.zero_grad(set_to_none=True)
        logits = m(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        o.step()
        if kind == "sophia_restarts" and step % 2 == 1:
            o.zero_grad(set_to_none=True)
            logits = m(x)
            sampled = torch.distributions.Categorical(logits=logits).sample()
            F.cross_entropy(logits, sampled).backward()
            o.update_hessian()
        if kind == "lookahead_plateau":
            s.step(round(loss.item(), 1))
        else:
            s.step()
        losses.append(loss.item())
    return losses


KINDS = ["lion_sequential", "lion_onecycle", "adafactor_lambda", "sophia_restarts",
         "lookahead_plateau", "ranger_warmup_cosine"]
resume = {}
for kind in KINDS:
    torch.manual_seed(11)
    m, o, s = build(kind, seed=3)
    straight = run_steps(kind, m, o, s, 0, 12)
    straight_params = flat_params(m)
    straight_lr = [g["lr"] for g in o.param_groups]

    torch.manual_seed(11)
    m, o, s = build(kind, seed=3)
    first = run_steps(kind, m, o, s, 0, 6)
    buffer = io.BytesIO()
    torch.save({"step": 6, "model": m.state_dict(), "optimizer": o.state_dict(),
                "scheduler": s.state_dict(), "rng": torch.get_rng_state()}, buffer)
    buffer.seek(0)
    torch.manual_seed(1234)  # the new process's own seed: the checkpoint's RNG state wins
    checkpoint = torch.load(buffer)  # (weights_only=True, the default)
    m2, o2, s2 = build(kind, seed=99)  # a fresh model: all comes from the checkpoint
    m2.load_state_dict(checkpoint["model"])
    o2.load_state_dict(checkpoint["optimizer"])
    s2.load_state_dict(checkpoint["scheduler"])
    torch.set_rng_state(checkpoint["rng"])
    second = run_steps(kind, m2, o2, s2, checkpoint["step"], 6)
    resume[kind] = {
        "straight_losses": straight,
        "resumed_losses": first + second,
        "straight": straight_params,
        "resumed": flat_params(m2),
        "straight_lr": straight_lr,
        "resumed_lr": [g["lr"] for g in o2.param_groups],
        "last_lr": s2.get_last_lr(),
        "scheduler_keys": sorted(checkpoint["scheduler"].keys()),
        "rng": checkpoint["rng"],
    }

# ---------------------------------------------------------------- (recorded) trajectories

fixed_results.update(
    lion_final=lion_final, lion_losses=lion_losses, lion_lrs=lion_lrs,
    adafactor_final=adafactor_final, adafactor_losses=adafactor_losses,
    adafactor1_final=adafactor1_final, adafactor1_losses=adafactor1_losses, af1_lrs=af1_lrs,
    sophia_final=sophia_final, sophia_losses=sophia_losses, sophia_lrs=sophia_lrs,
    sophia_hessian=sophia_hessian,
    lookahead_final=lookahead_final, lookahead_losses=lookahead_losses,
    plateau_lrs=plateau_lrs, param_group_final=param_group_final,
    onecycle_final=onecycle_final, onecycle_losses=onecycle_losses, onecycle_lrs=onecycle_lrs,
    onecycle_betas=onecycle_betas,
    resumed={kind: r["resumed"] for kind, r in resume.items()},
    resumed_rng={kind: r["rng"] for kind, r in resume.items()},
    ranger_final=ranger_final, ranger_losses=ranger_losses, ranger_lrs=ranger_lrs,
)

if __name__ == "__main__":
    print("final losses:", lion_losses[-1], adafactor1_losses[-1], sophia_losses[-1],
          lookahead_losses[-1], ranger_losses[-1], onecycle_losses[-1])
