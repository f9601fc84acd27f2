"""Mixed-precision training on the CPU, written for these tests the way PyTorch users write
it (AMP recipes, trainer loops, and the fp16 optimizers of Megatron/fairseq-era code; not a
copy of any of them):

- ``torch.autocast(device_type="cpu", dtype=torch.float16 / torch.bfloat16)``, its
  deprecated spelling ``torch.cpu.amp.autocast``, as a decorator, nested with
  ``enabled=False``; which ops run in the lower precision and which in float32
  (``torch.is_autocast_enabled``, ``torch.get_autocast_dtype``); ``torch.amp.custom_fwd`` /
  ``custom_bwd`` on an ``autograd.Function``;
- ``torch.amp.GradScaler("cpu", ...)`` (and ``torch.cpu.amp.GradScaler``'s FutureWarning):
  ``scaler.scale(loss).backward()``, ``scaler.unscale_(optimizer)`` before
  ``clip_grad_norm_``, ``scaler.step`` / ``scaler.update`` with inf and NaN gradients injected
  (the step is skipped and the scale halves), ``growth_interval`` / ``growth_factor`` /
  ``backoff_factor`` and the float32 ceiling of the scale, ``get_scale()``,
  ``state_dict()`` / ``load_state_dict`` through ``torch.save``/``torch.load``, pickling,
  the errors of a misordered loop, several losses and optimizers on one scaler, gradient
  accumulation, ``update(new_scale)``, a disabled scaler; the "skipped step" idiom with an LR
  scheduler (and its warning);
- manual dynamic loss scaling: a float16 model with float32 master weights, gradients copied
  and checked with ``torch.isfinite`` (and ``torch._amp_foreach_non_finite_check_and_unscale_``
  where the library has it), ``torch._foreach_mul_`` / ``_foreach_add_`` / ``_foreach_norm``,
  a hand-written momentum update, weights copied back into the float16 model;
- ``model.half()`` / ``model.to(torch.bfloat16)`` / ``model.float()`` round trips (the
  Parameter objects kept, buffers cast), ``load_state_dict`` across dtypes, optimizer state
  dtypes on float16/bfloat16 parameters and ``Optimizer.load_state_dict`` casting them.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import copy
import io
import math
import pickle
import warnings

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn

torch.manual_seed(0)
fixed_results = {}


def dtype_name(dtype):
    return str(dtype).split(".")[-1]


def make_mlp(n_in=6, hidden=16, n_out=3):
    return nn.Sequential(nn.Linear(n_in, hidden), nn.GELU(), nn.Linear(hidden, hidden),
                         nn.ReLU(), nn.Linear(hidden, n_out))


def set_fixed_weights(model, spread=0.4):
    """Weights by formula, so that torch and jitgrad start from the same model."""
    with torch.no_grad():
        for k, param in enumerate(model.parameters(), start=1):
            ramp = torch.linspace(-spread, spread, param.numel())
            wiggle = 0.05 * torch.sin(torch.arange(param.numel(), dtype=torch.float32) * 1.7 + k)
            param.copy_((ramp / math.sqrt(k) + wiggle).reshape(param.shape))
    return model


def fixed_data(n=32, n_in=6, n_out=3):
    """Inputs by formula, class labels from a fixed linear rule, regression targets."""
    grid = torch.arange(n * n_in, dtype=torch.float32).reshape(n, n_in)
    x = torch.sin(grid * 0.37) + 0.5 * torch.cos(grid * 0.11)
    rule = torch.linspace(-1, 1, n_in * n_out).reshape(n_in, n_out)
    labels = (x @ rule).argmax(dim=1)
    targets = torch.tanh(x @ rule)
    return x, labels, targets


X, LABELS, TARGETS = fixed_data()


# ------------------------------------------------------------ autocast op dtypes (recorded)


def autocast_dtype_table(low):
    x = torch.linspace(-1, 1, 24).reshape(4, 6)
    w = torch.linspace(-0.5, 0.7, 18).reshape(3, 6)
    table = {}
    with torch.autocast(device_type="cpu", dtype=low):
        table["enabled"] = torch.is_autocast_enabled("cpu")
        table["autocast_dtype"] = dtype_name(torch.get_autocast_dtype("cpu"))
        y = F.linear(x, w)
        ops = {
            "linear": y, "matmul": x @ w.t(), "bmm": torch.bmm(x[None], w.t()[None]),
            "addmm": torch.addmm(torch.zeros(3), x, w.t()),
            "baddbmm": torch.baddbmm(torch.zeros(1, 4, 3), x[None], w.t()[None]),
            "einsum": torch.einsum("ij,kj->ik", x, w),
            "conv1d": F.conv1d(x.t()[None], w[:, :, None]),
            "conv2d": F.conv2d(x[None, None], w[None, None, :2, :2]),
            "sdpa": F.scaled_dot_product_attention(x[None], x[None], x[None]),
            "relu": F.relu(y), "gelu": F.gelu(y), "softmax": torch.softmax(y, -1),
            "layer_norm": F.layer_norm(y, (3,)), "sum": y.sum(),
            "add_float32": y + x[:, :3],
            "mse_loss": F.mse_loss(y, torch.zeros(4, 3)),
            "cross_entropy": F.cross_entropy(y, torch.tensor([0, 1, 2, 0])),
            "bce_with_logits": F.binary_cross_entropy_with_logits(y, torch.ones(4, 3)),
            "smooth_l1": F.smooth_l1_loss(y, torch.zeros(4, 3)),
            "group_norm": F.group_norm(x[None], 2), "prod": torch.prod(y),
            "cdist": torch.cdist(x, w),
        }
        with torch.autocast(device_type="cpu", enabled=False):
            table["inner_enabled"] = torch.is_autocast_enabled("cpu")
            ops["disabled_region"] = y.float() @ w[:, :3]
        table.update({name: dtype_name(out.dtype) for name, out in ops.items()})
    table["enabled_after"] = torch.is_autocast_enabled("cpu")
    return table


autocast_dtypes = {dtype_name(low): autocast_dtype_table(low)
                   for low in (torch.float16, torch.bfloat16)}
fixed_results["autocast_dtypes"] = autocast_dtypes


@torch.autocast(device_type="cpu", dtype=torch.bfloat16)
def decorated_forward(model, x):
    return model(x)


class ScaledMatmul(torch.autograd.Function):
    """A custom op that wants float32 whatever the autocast region says."""

    @staticmethod
    @torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.float32)
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b * 0.5

    @staticmethod
    @torch.amp.custom_bwd(device_type="cpu")
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ctx_dtypes.append((dtype_name(grad.dtype), torch.is_autocast_enabled("cpu")))
        return grad @ b.t() * 0.5, a.t() @ grad * 0.5


ctx_dtypes = []
probe = set_fixed_weights(make_mlp())
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with torch.cpu.amp.autocast(dtype=torch.bfloat16):
        legacy_out = probe(X[:4])
    legacy_scaler = torch.cpu.amp.GradScaler(init_scale=8.0)
deprecations = [(w.category.__name__, str(w.message)) for w in caught]
decorated_out = decorated_forward(probe, X[:4])
a_in = torch.linspace(-1, 1, 12).reshape(3, 4).requires_grad_()
b_in = torch.linspace(0.5, -0.5, 8).reshape(4, 2).requires_grad_()
with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
    custom_out = ScaledMatmul.apply(a_in.bfloat16(), b_in)
    plain_out = a_in @ b_in
custom_out.sum().backward()
fixed_results["custom_fwd"] = {
    "out": custom_out.detach(), "a_grad": a_in.grad, "b_grad": b_in.grad,
}
custom_dtypes = {"custom": dtype_name(custom_out.dtype), "plain": dtype_name(plain_out.dtype),
                 "backward": ctx_dtypes[0][0], "backward_autocast": ctx_dtypes[0][1],
                 "legacy": dtype_name(legacy_out.dtype),
                 "decorated": dtype_name(decorated_out.dtype)}
fixed_results["legacy_bf16_out"] = legacy_out.detach().float()


# ------------------------------------------------ fixed forward/backward in autocast (recorded)


def autocast_forward_backward(low, loss_scale):
    model = set_fixed_weights(make_mlp())
    with torch.autocast(device_type="cpu", dtype=low):
        logits = model(X)
        loss = F.cross_entropy(logits, LABELS)
    (loss * loss_scale).backward()
    grads = {name: p.grad / loss_scale for name, p in model.named_parameters()}
    return {"logits": logits.detach().float(), "loss": loss.detach(), "grads": grads,
            "dtypes": [dtype_name(logits.dtype), dtype_name(loss.dtype),
                       dtype_name(model[0].weight.grad.dtype)]}


fixed_results["fp16_autocast"] = autocast_forward_backward(torch.float16, 1024.0)
fixed_results["bf16_autocast"] = autocast_forward_backward(torch.bfloat16, 1.0)
with torch.no_grad():
    reference_logits = set_fixed_weights(make_mlp())(X)
autocast_error = {
    name: float((fixed_results[name]["logits"] - reference_logits).abs().max())
    for name in ("fp16_autocast", "bf16_autocast")}


# -------------------------------------- GradScaler: skipped steps and the scale (recorded)


def amp_train(n_steps, bad_steps, scaler, model, optimizer, scheduler=None, max_norm=1.0,
              history=None, start=0):
    """The AMP loop, with an inf or a NaN written into one gradient on ``bad_steps``."""
    history = history if history is not None else {
        "loss": [], "scale": [], "skipped": [], "grad_norm": [], "tracker": [], "lr": []}
    for step in range(start, start + n_steps):
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cpu", dtype=torch.float16):
            logits = model(X)
            loss = F.cross_entropy(logits, LABELS)
        scaler.scale(loss).backward()
        if step in bad_steps:  # an overflow, as a too-large scale gives one
            with torch.no_grad():
                model[0].weight.grad[1, 2] = bad_steps[step]
        scaler.unscale_(optimizer)
        grad_norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        scale_before = scaler.get_scale()
        scaler.step(optimizer)
        scaler.update()
        skipped = scaler.get_scale() < scale_before  # the trainer's "optimizer was not run"
        if scheduler is not None:
            scheduler.step()
            history["lr"].append(scheduler.get_last_lr()[0])
        history["loss"].append(loss.item())
        history["scale"].append(scale_before)
        history["skipped"].append(skipped)
        history["grad_norm"].append(float(grad_norm))
        history["tracker"].append(scaler.state_dict()["_growth_tracker"])
    return history


amp_model = set_fixed_weights(make_mlp())
amp_opt = torch.optim.AdamW(amp_model.parameters(), lr=3e-2, weight_decay=0.01)
amp_sched = torch.optim.lr_scheduler.LambdaLR(amp_opt, lambda s: min(1.0, (s + 1) / 4))
amp_scaler = torch.amp.GradScaler("cpu", init_scale=2.0**12, growth_interval=3)
BAD_STEPS = {0: float("inf"), 5: float("nan"), 6: float("-inf")}
first_weight = amp_model[0].weight.detach().clone()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    amp_history = amp_train(14, BAD_STEPS, amp_scaler, amp_model, amp_opt, amp_sched)
scheduler_warnings = [str(w.message)[:60] for w in caught]
amp_steps_taken = int(amp_opt.state[amp_model[0].weight]["step"])
amp_state_dict = amp_scaler.state_dict()
fixed_results["amp_history"] = {key: amp_history[key] for key in ("scale", "tracker", "lr")}
fixed_results["amp_losses"] = amp_history["loss"]
fixed_results["amp_weights"] = {n: p.detach().clone() for n, p in amp_model.named_parameters()}

# a skipped step changes nothing: weights and the optimizer's moments stay as they were
skip_model = set_fixed_weights(make_mlp())
skip_opt = torch.optim.SGD(skip_model.parameters(), lr=0.1, momentum=0.9)
skip_scaler = torch.amp.GradScaler("cpu", init_scale=256.0)
amp_train(2, {}, skip_scaler, skip_model, skip_opt)
before_skip = copy.deepcopy((skip_model.state_dict(), skip_opt.state_dict()))
amp_train(1, {2: float("nan")}, skip_scaler, skip_model, skip_opt, start=2)
after_skip = (skip_model.state_dict(), skip_opt.state_dict())
skip_left_weights = all(torch.equal(before_skip[0][k], after_skip[0][k]) for k in after_skip[0])
skip_left_momentum = all(
    torch.equal(before_skip[1]["state"][i]["momentum_buffer"],
                after_skip[1]["state"][i]["momentum_buffer"]) for i in after_skip[1]["state"])

# the fused AdamW (HF's "adamw_torch_fused") and the foreach one under the same scaler: an
# optimizer that unscales inside its own step must skip the same steps
fused_weights, fused_scales = {}, {}
for kind in ("fused", "foreach"):
    fused_model = set_fixed_weights(make_mlp())
    fused_opt = torch.optim.AdamW(fused_model.parameters(), lr=2e-2, **{kind: True})
    fused_scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=2)
    for step in range(5):
        fused_opt.zero_grad()
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            fused_loss = F.cross_entropy(fused_model(X), LABELS)
        fused_scaler.scale(fused_loss).backward()
        if step == 2:
            with torch.no_grad():
                fused_model[2].weight.grad[0, 0] = float("inf")
        fused_scaler.step(fused_opt)
        fused_scaler.update()
    fused_scales[kind] = fused_scaler.get_scale()
    fused_weights[kind] = [p.detach().clone() for p in fused_model.parameters()]
    fused_weights[kind + "_steps"] = float(fused_opt.state[fused_model[0].weight]["step"])
fixed_results["fused_adamw"] = fused_weights


# ---------------------------------------- growth_interval, growth/backoff factors (recorded)


def scale_trajectory(scaler, pattern, param=None):
    """The scale after each iteration of a loop whose gradient is finite unless ``pattern``
    says False; a tiny gradient, so that even a scale near float32's limit stays finite."""
    param = param if param is not None else torch.ones(3, requires_grad=True)
    opt = torch.optim.SGD([param], lr=1e-3)
    scales, trackers = [], []
    for finite in pattern:
        opt.zero_grad()
        loss = (param * 1e-6).sum() if finite else param.sum() * float("inf")
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        trackers.append(scaler._get_growth_tracker())
    return scales, trackers


growth = {}
growth["default"] = scale_trajectory(
    torch.amp.GradScaler("cpu", init_scale=4.0, growth_interval=2), [True] * 7)
growth["factors"] = scale_trajectory(
    torch.amp.GradScaler("cpu", init_scale=8.0, growth_factor=4.0, backoff_factor=0.25,
                         growth_interval=2), [True, True, True, False, True, True, False, False])
changed = torch.amp.GradScaler("cpu", init_scale=2.0, growth_interval=3)
first = scale_trajectory(changed, [True] * 4)
changed.set_growth_interval(1)
changed.set_backoff_factor(0.125)
second = scale_trajectory(changed, [True, True, False, True])
growth["setters"] = (first[0] + second[0], first[1] + second[1])
growth["setter_values"] = [changed.get_growth_interval(), changed.get_growth_factor(),
                           changed.get_backoff_factor()]
ceiling = torch.amp.GradScaler("cpu", init_scale=2.0**126, growth_interval=1)
growth["ceiling"] = scale_trajectory(ceiling, [True, True, True, False, True])
fixed_results["growth"] = growth

# a scale too large for float16: autocast's backward overflows until the scale has backed off
overflow_model = set_fixed_weights(make_mlp())
overflow_opt = torch.optim.SGD(overflow_model.parameters(), lr=0.05)
overflow_scaler = torch.amp.GradScaler("cpu", init_scale=2.0**22, growth_interval=1000)
overflow_history = amp_train(9, {}, overflow_scaler, overflow_model, overflow_opt,
                             max_norm=math.inf)
fixed_results["overflow_scales"] = overflow_history["scale"]
fixed_results["overflow_skipped"] = overflow_history["skipped"]


# ---------------------------------------------------- misuse of the scaler: its errors


def error_of(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the script records what each library raises
        return type(exc).__name__, str(exc)
    return None


err_model = set_fixed_weights(make_mlp())
err_opt = torch.optim.SGD(err_model.parameters(), lr=0.01)
err_scaler = torch.amp.GradScaler("cpu", init_scale=64.0)
scaler_errors = {"step_before_scale": error_of(lambda: err_scaler.step(err_opt)),
                 "update_before_scale": error_of(lambda: err_scaler.update())}
with torch.autocast(device_type="cpu", dtype=torch.float16):
    err_loss = F.mse_loss(err_model(X), TARGETS)
err_scaler.scale(err_loss).backward()
err_scaler.unscale_(err_opt)
scaler_errors["unscale_twice"] = error_of(lambda: err_scaler.unscale_(err_opt))
scaler_errors["pickle_mid_iteration"] = error_of(lambda: pickle.dumps(err_scaler))
scaler_errors["closure"] = error_of(lambda: err_scaler.step(err_opt, closure=lambda: 0.0))
err_scaler.step(err_opt)
scaler_errors["step_twice"] = error_of(lambda: err_scaler.step(err_opt))
scaler_errors["unscale_after_step"] = error_of(lambda: err_scaler.unscale_(err_opt))
err_scaler.update()
scaler_errors["update_twice"] = error_of(lambda: err_scaler.update())
scaler_errors["growth_factor"] = error_of(lambda: torch.amp.GradScaler("cpu", growth_factor=1.0))
scaler_errors["backoff_factor"] = error_of(
    lambda: torch.amp.GradScaler("cpu", backoff_factor=1.0))
scaler_errors["load_empty"] = error_of(lambda: err_scaler.load_state_dict({}))
half_model = set_fixed_weights(make_mlp()).half()
half_opt = torch.optim.SGD(half_model.parameters(), lr=0.01)
half_scaler = torch.amp.GradScaler("cpu")
half_scaler.scale(half_model(X.half()).float().pow(2).mean()).backward()
scaler_errors["fp16_grads"] = error_of(lambda: half_scaler.unscale_(half_opt))
err_scaler.update(new_scale=128.0)
new_scales = [err_scaler.get_scale()]
err_scaler.update(torch.tensor(32.0))
new_scales.append(err_scaler.get_scale())
err_scaler.update(new_scale=0.5)
new_scales.append(err_scaler.get_scale())
disabled = torch.amp.GradScaler("cpu", enabled=False)
disabled_info = {"same_loss": disabled.scale(err_loss) is err_loss,
                 "scale": disabled.get_scale(), "state": disabled.state_dict(),
                 "enabled": disabled.is_enabled()}
disabled.step(err_opt)  # a plain optimizer.step()
disabled.update()
scaled_outputs = amp_scaler.scale([err_loss, (err_loss * 2, err_loss)])
scaled_structure = [type(scaled_outputs).__name__, type(scaled_outputs[1]).__name__]
fixed_results["scaled_outputs"] = [scaled_outputs[0].detach(), scaled_outputs[1][0].detach()]


# ---------------------------------------------------- checkpoint and resume (recorded)


def fresh_run():
    model = set_fixed_weights(make_mlp())
    opt = torch.optim.Adam(model.parameters(), lr=2e-2)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=2)
    return model, opt, scaler


RESUME_BAD = {1: float("inf"), 6: float("nan")}
model_a, opt_a, scaler_a = fresh_run()
history_a = amp_train(4, RESUME_BAD, scaler_a, model_a, opt_a)
buffer = io.BytesIO()
torch.save({"model": model_a.state_dict(), "optimizer": opt_a.state_dict(),
            "scaler": scaler_a.state_dict(), "step": 4}, buffer)
pickled_scaler = pickle.dumps(scaler_a)  # at the end of an iteration: allowed
history_a = amp_train(4, RESUME_BAD, scaler_a, model_a, opt_a, history=history_a, start=4)

buffer.seek(0)
checkpoint = torch.load(buffer)
model_b, opt_b, scaler_b = fresh_run()
model_b.load_state_dict(checkpoint["model"])
opt_b.load_state_dict(checkpoint["optimizer"])
scaler_b.load_state_dict(checkpoint["scaler"])
loaded_scaler_state = scaler_b.state_dict()
history_b = amp_train(4, RESUME_BAD, scaler_b, model_b, opt_b, start=checkpoint["step"])
resume_matches = (history_b["loss"] == history_a["loss"][4:]
                  and history_b["scale"] == history_a["scale"][4:]
                  and all(torch.equal(p, q) for p, q in zip(model_a.parameters(),
                                                            model_b.parameters())))
unpickled = pickle.loads(pickled_scaler)
copied = copy.deepcopy(scaler_a)
scaler_copies = {"unpickled": unpickled.state_dict(), "deepcopy": copied.state_dict()}
fixed_results["resume_history"] = {"scale": history_a["scale"], "tracker": history_a["tracker"],
                                   "skipped": history_a["skipped"]}
fixed_results["resume_losses"] = history_a["loss"]


# ------------------------------------- several losses and optimizers, accumulation (recorded)

torch.manual_seed(0)
trunk_a = set_fixed_weights(make_mlp(n_out=4))
trunk_b = set_fixed_weights(make_mlp(n_out=2), spread=0.3)
opt_trunk_a = torch.optim.Adam(trunk_a.parameters(), lr=1e-2)
opt_trunk_b = torch.optim.SGD(trunk_b.parameters(), lr=5e-2, momentum=0.9)
multi_scaler = torch.amp.GradScaler("cpu", init_scale=2.0**8, growth_interval=2)
multi = {"scale": [], "stepped_a": [], "stepped_b": [], "loss": []}
for step in range(6):
    opt_trunk_a.zero_grad()
    opt_trunk_b.zero_grad()
    with torch.autocast(device_type="cpu", dtype=torch.float16):
        out_a = trunk_a(X)
        out_b = trunk_b(X)
        loss_a = F.mse_loss(out_a[:, :2] * 0.5 + out_b * 0.5, TARGETS[:, :2])
        loss_b = F.cross_entropy(out_a[:, :3] + out_b.mean(), LABELS)
    multi_scaler.scale(loss_a).backward(retain_graph=True)
    multi_scaler.scale(loss_b).backward()
    if step == 2:  # only trunk_b overflows: its optimizer skips, trunk_a's still steps
        with torch.no_grad():
            trunk_b[4].bias.grad[0] = float("inf")
    multi_scaler.unscale_(opt_trunk_a)
    nn.utils.clip_grad_norm_(trunk_a.parameters(), 0.5)
    before_a = trunk_a[0].weight.detach().clone()
    before_b = trunk_b[0].weight.detach().clone()
    multi["scale"].append(multi_scaler.get_scale())
    multi_scaler.step(opt_trunk_a)
    multi_scaler.step(opt_trunk_b)
    multi_scaler.update()
    multi["stepped_a"].append(not torch.equal(before_a, trunk_a[0].weight))
    multi["stepped_b"].append(not torch.equal(before_b, trunk_b[0].weight))
    multi["loss"].append(loss_a.item() + loss_b.item())
multi["final_scale"] = multi_scaler.get_scale()
fixed_results["multi"] = {"scale": multi["scale"], "loss": multi["loss"]}

accum_model = set_fixed_weights(make_mlp())
accum_opt = torch.optim.SGD(accum_model.parameters(), lr=0.1)
accum_scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
accum_steps = 4
for micro in range(accum_steps):
    rows = slice(8 * micro, 8 * micro + 8)
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        micro_loss = F.cross_entropy(accum_model(X[rows]), LABELS[rows]) / accum_steps
    accum_scaler.scale(micro_loss).backward()
accum_scaler.unscale_(accum_opt)
accum_grads = {n: p.grad.clone() for n, p in accum_model.named_parameters()}
accum_scaler.step(accum_opt)
accum_scaler.update()
whole_model = set_fixed_weights(make_mlp())
with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
    whole_loss = F.cross_entropy(whole_model(X), LABELS)
whole_loss.backward()
whole_grads = {n: p.grad.clone() for n, p in whole_model.named_parameters()}
fixed_results["accum_grads"] = accum_grads


# ------------------------ manual loss scaling: float16 model, float32 master weights (recorded)


class DynamicLossScaler:
    """The dynamic loss scaler of the fp16 optimizers that came before torch.amp."""

    def __init__(self, init_scale=2.0**16, scale_factor=2.0, scale_window=3, min_scale=1.0):
        self.loss_scale = init_scale
        self.scale_factor = scale_factor
        self.scale_window = scale_window
        self.min_scale = min_scale
        self.last_overflow_iter = -1
        self.iter = 0

    def update(self, overflow):
        if overflow:
            self.loss_scale = max(self.loss_scale / self.scale_factor, self.min_scale)
            self.last_overflow_iter = self.iter
        elif (self.iter - self.last_overflow_iter) % self.scale_window == 0:
            self.loss_scale *= self.scale_factor
        self.iter += 1


def unscale_and_check(grads, inv_scale):
    """Multiplies the gradients by ``inv_scale`` and returns 1.0 if one is not finite, with
    the fused kernel of torch.amp."""
    found_inf = torch.zeros(1)
    torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, torch.full((1,), inv_scale))
    return found_inf.item()


fp16_model = set_fixed_weights(make_mlp()).half()
model_params = list(fp16_model.parameters())
master_params = [p.detach().clone().float().requires_grad_(True) for p in model_params]
momentum_bufs = [torch.zeros_like(p) for p in master_params]
loss_scaler = DynamicLossScaler(init_scale=2.0**20, scale_window=3)
lr, momentum, max_norm = 0.1, 0.9, 1.0
manual = {"scale": [], "overflow": [], "loss": [], "grad_norm": [], "isfinite_agrees": []}
for step in range(12):
    for p in model_params:
        p.grad = None
    logits = fp16_model(X.half())
    loss = F.cross_entropy(logits.float(), LABELS)
    (loss * loss_scaler.loss_scale).backward()
    if step == 8:
        model_params[2].grad[0, 0] = float("inf")
    grads = [p.grad.detach().float() for p in model_params]
    by_isfinite = not all(bool(torch.isfinite(g).all()) for g in grads)
    overflow = unscale_and_check(grads, 1.0 / loss_scaler.loss_scale) > 0
    manual["isfinite_agrees"].append(by_isfinite == overflow)
    manual["scale"].append(loss_scaler.loss_scale)
    manual["overflow"].append(overflow)
    manual["loss"].append(loss.item())
    loss_scaler.update(overflow)
    if overflow:
        manual["grad_norm"].append(math.nan)
        continue
    norms = torch._foreach_norm(grads)
    total_norm = torch.linalg.vector_norm(torch.stack(norms))
    clip = min(1.0, max_norm / (float(total_norm) + 1e-6))
    torch._foreach_mul_(grads, clip)
    manual["grad_norm"].append(float(total_norm))
    with torch.no_grad():
        torch._foreach_mul_(momentum_bufs, momentum)
        torch._foreach_add_(momentum_bufs, grads)
        torch._foreach_add_(master_params, momentum_bufs, alpha=-lr)
        for p, master in zip(model_params, master_params):
            p.copy_(master)  # the float16 model gets the rounded master weights
fixed_results["manual_history"] = {"scale": manual["scale"], "overflow": manual["overflow"]}
fixed_results["manual_losses"] = manual["loss"]
fixed_results["manual_master"] = [m.detach().clone() for m in master_params]
master_rounding = max(float((p.detach().float() - m.detach()).abs().max())
                      for p, m in zip(model_params, master_params))
model_is_rounded_master = all(torch.equal(p, m.half()) for p, m in zip(model_params,
                                                                         master_params))


def update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, interval):
    """The scale update of a sharded/custom scaler: torch.amp's kernel."""
    return torch._amp_update_scale_(scale, growth_tracker, found_inf, growth_factor,
                                    backoff_factor, interval)


kernel_scale = torch.full((1,), 2.0**10)
kernel_tracker = torch.zeros(1, dtype=torch.int32)
kernel_history = []
for finite in (True, True, False, True, True, True, True, False, False, True):
    kernel_found = torch.full((1,), 0.0 if finite else 1.0)
    update_scale_(kernel_scale, kernel_tracker, kernel_found, 2.0, 0.5, 3)
    kernel_history.append((kernel_scale.item(), int(kernel_tracker)))
fixed_results["kernel_history"] = kernel_history


# ------------------------------ dtype round trips, optimizer state dtypes (recorded)

torch.manual_seed(0)
rt_model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 3))
set_fixed_weights(rt_model)
rt_model.train()
rt_model(X)  # running statistics that are not round numbers
ids_before = [id(p) for p in rt_model.parameters()]
fp32_state = {k: v.clone() for k, v in rt_model.state_dict().items()}
rt_opt = torch.optim.Adam(rt_model.parameters(), lr=1e-2)
rt_model.half()
round_trip = {
    "ids_kept": [id(p) for p in rt_model.parameters()] == ids_before,
    "is_parameter": all(isinstance(p, nn.Parameter) for p in rt_model.parameters()),
    "half_state": {k: dtype_name(v.dtype) for k, v in rt_model.state_dict().items()},
}
half_weight = rt_model[0].weight.detach().clone()
rt_model.to(torch.bfloat16)
round_trip["bf16_state"] = {k: dtype_name(v.dtype) for k, v in rt_model.state_dict().items()}
bf16_of_half = rt_model[0].weight.detach().clone()
rt_model.float()
round_trip["float_equals_rounded"] = torch.equal(
    rt_model[0].weight, fp32_state["0.weight"].half().bfloat16().float())
round_trip["half_equals_rounded"] = torch.equal(half_weight, fp32_state["0.weight"].half())
fixed_results["round_trip"] = {"half": half_weight.float(), "bf16": bf16_of_half.float(),
                               "running_var": rt_model[1].running_var.clone()}
rt_model.half()
rt_model.load_state_dict(fp32_state)  # a float32 checkpoint into a float16 model: copied, cast
round_trip["loaded_dtype"] = dtype_name(rt_model[0].weight.dtype)
round_trip["loaded_equal"] = torch.equal(rt_model[0].weight, fp32_state["0.weight"].half())
round_trip["param_count"] = sum(p.numel() for p in rt_model.parameters())


def optimizer_steps(dtype, opt_name, steps=3):
    torch.manual_seed(1)
    model = set_fixed_weights(nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 3)))
    model.to(dtype)
    if opt_name == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=0.05)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    for _ in range(steps):
        opt.zero_grad()
        F.mse_loss(model(X[:8].to(dtype)).float(), TARGETS[:8]).backward()
        opt.step()
    state = opt.state[model[0].weight]
    dtypes = {k: dtype_name(v.dtype) for k, v in state.items() if torch.is_tensor(v)}
    return model, opt, dtypes


bf16_adam_model, bf16_adam, state_dtypes_bf16 = optimizer_steps(torch.bfloat16, "adam")
fp16_sgd_model, fp16_sgd, state_dtypes_fp16_sgd = optimizer_steps(torch.float16, "sgd")
fp16_adam_model, fp16_adam, state_dtypes_fp16 = optimizer_steps(torch.float16, "adam")
fp32_adam_model, fp32_adam, _ = optimizer_steps(torch.float32, "adam")
state_dtypes = {"bf16_adam": state_dtypes_bf16, "fp16_sgd": state_dtypes_fp16_sgd,
                "fp16_adam": state_dtypes_fp16,
                "adam_step_value": float(fp16_adam.state[fp16_adam_model[0].weight]["step"])}
# float32 moments loaded into the optimizer of a bfloat16 model are cast to bfloat16 (but
# "step" stays float32); into a float32 model they stay float32
fp32_state_dict = fp32_adam.state_dict()
reloaded = torch.optim.Adam(bf16_adam_model.parameters(), lr=0.05)
reloaded.load_state_dict(fp32_state_dict)
state_dtypes["loaded_into_bf16"] = {
    k: dtype_name(v.dtype) for k, v in reloaded.state[bf16_adam_model[0].weight].items()}
fixed_results["optimizer_steps"] = {
    "bf16_adam": [p.detach().float() for p in bf16_adam_model.parameters()],
    "bf16_adam_exp_avg_sq": bf16_adam.state[bf16_adam_model[0].weight]["exp_avg_sq"].float(),
    "loaded_exp_avg": reloaded.state[bf16_adam_model[0].weight]["exp_avg"].float(),
}
fixed_results["fp16_optimizer_steps"] = {
    "fp16_sgd": [p.detach().float() for p in fp16_sgd_model.parameters()],
    "fp16_adam": [p.detach().float() for p in fp16_adam_model.parameters()],
}


print("autocast fp16 logits error", autocast_error)
print("amp scales", amp_history["scale"])
print("amp skipped", [i for i, s in enumerate(amp_history["skipped"]) if s],
      "steps taken", amp_steps_taken)
print("overflow scales", overflow_history["scale"])
print("manual scales", manual["scale"])
print(f"loss {amp_history['loss'][0]:.4f} -> {amp_history['loss'][-1]:.4f}, "
      f"manual {manual['loss'][0]:.4f} -> {manual['loss'][-1]:.4f}")
