# ruff: noqa: N812 (the usual F alias)
"""N-BEATS on synthetic seasonal series, written for these tests the way N-BEATS code (the
paper authors' ElementAI repository, its many PyTorch ports, darts/neuralforecast-style
blocks) writes torch code (not a copy of any):

- synthetic monthly series (level + trend + a 12-step season + noise) built from
  ``torch.arange``/``torch.sin``/``torch.randn``, windows cut by ``Tensor.unfold``, a time
  split into training and validation windows, ``torch.randint`` batches, an input mask;
- N-BEATS blocks: a ``nn.ModuleList`` of ``nn.Linear`` + ``torch.relu`` and a linear
  ``theta`` head; a generic basis (slicing theta), a polynomial trend basis held as frozen
  parameters (``nn.Parameter(..., requires_grad=False)``: ``torch.stack`` of ``t ** i`` and
  ``torch.pow`` of a float row by a long column) and a Fourier seasonality basis held as
  buffers (``register_buffer``, ``torch.cos``/``torch.sin`` of an outer product,
  ``torch.cat``), projected with ``torch.einsum('bp,pt->bt', ...)``;
- doubly residual stacking over the flipped input (``Tensor.flip``): ``residuals =
  (residuals - backcast) * mask``, summed forecasts starting at the last level; stacks whose
  blocks share weights (``[block] * n`` in a ``ModuleList``; ``parameters()`` counts them once),
  per-stack forecasts for the interpretable (trend + seasonality) model;
- the M4 losses: ``divide_no_nan`` with in-place boolean-mask assignment
  (``result[result != result] = 0``, ``result[result == inf] = 0``), sMAPE on ``.data``
  denominators, MAPE, MASE scaled by the in-sample seasonal naive error;
- missing history as NaN: ``torch.isnan`` masks, ``torch.nan_to_num``;
- ``Adam``, ``clip_grad_norm_``, ``OneCycleLR`` stepped per batch (cycling Adam's beta1; also
  ``three_phase``/``anneal_strategy='linear'``, ``epochs``/``steps_per_epoch``,
  ``cycle_momentum=False``); evaluation under ``torch.no_grad`` and ``model.eval()`` against a
  seasonal naive forecast; a checkpoint through ``torch.save``/``torch.load`` on
  ``io.BytesIO`` and ``load_state_dict``;
- ``torch.autograd.gradcheck`` of a float64 trend/seasonality block.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import io
import math

import jitgrad as torch
from jitgrad import nn

torch.manual_seed(0)
fixed_results = {}

# ---------------------------------------------------------------------------------- data

PERIOD = 12
HORIZON = 6
LOOKBACK = 4 * HORIZON  # two seasons of history
N_SERIES = 8
LENGTH = 96


def make_series(n_series, length, noise=0.05):
    """Level + linear trend + a yearly (12 step) season with a random phase, all positive."""
    t = torch.arange(length, dtype=torch.float32)
    level = 2.0 + 3.0 * torch.rand(n_series, 1)
    slope = 0.02 * torch.randn(n_series, 1)
    amplitude = 0.5 + torch.rand(n_series, 1)
    phase = 2 * math.pi * torch.rand(n_series, 1)
    season = amplitude * torch.sin(2 * math.pi * t / PERIOD + phase)
    return level + slope * t + season + noise * torch.randn(n_series, length)


series = make_series(N_SERIES, LENGTH)
windows = series.unfold(1, LOOKBACK + HORIZON, 1)  # (series, windows, L + H)
n_windows = windows.size(1)
n_val = 12  # the last windows of each series are kept for validation
train_windows = windows[:, : n_windows - n_val - HORIZON].reshape(-1, LOOKBACK + HORIZON)
val_windows = windows[:, n_windows - n_val:].reshape(-1, LOOKBACK + HORIZON)
x_train, y_train = train_windows[:, :LOOKBACK], train_windows[:, LOOKBACK:]
x_val, y_val = val_windows[:, :LOOKBACK], val_windows[:, LOOKBACK:]
train_shapes = (tuple(x_train.shape), tuple(y_train.shape))


# ---------------------------------------------------------------------------------- losses


def divide_no_nan(a, b):
    """a / b with 0/0 and x/0 set to zero (the M4 losses' helper)."""
    result = a / b
    result[result != result] = 0.0
    result[result == math.inf] = 0.0
    return result


def mape_loss(forecast, target, mask):
    weights = divide_no_nan(mask, target)
    return torch.mean(torch.abs((forecast - target) * weights))


def smape_2_loss(forecast, target, mask):
    return 200 * torch.mean(divide_no_nan(torch.abs(forecast - target),
                                          torch.abs(forecast.data) + torch.abs(target.data)) * mask)


def mase_loss(insample, freq, forecast, target, mask):
    masep = torch.mean(torch.abs(insample[:, freq:] - insample[:, :-freq]), dim=1)
    masked_masep_inv = divide_no_nan(mask, masep[:, None])
    return torch.mean(torch.abs(target - forecast) * masked_masep_inv)


# ---------------------------------------------------------------------------------- N-BEATS


class NBeatsBlock(nn.Module):
    """Fully connected stack, then theta, then a basis that maps theta to backcast/forecast."""

    def __init__(self, input_size, theta_size, basis_function, layers, layer_size):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(input_size, layer_size)]
                                    + [nn.Linear(layer_size, layer_size)
                                       for _ in range(layers - 1)])
        self.basis_parameters = nn.Linear(layer_size, theta_size)
        self.basis_function = basis_function

    def forward(self, x):
        block_input = x
        for layer in self.layers:
            block_input = torch.relu(layer(block_input))
        basis_parameters = self.basis_parameters(block_input)
        return self.basis_function(basis_parameters)


class GenericBasis(nn.Module):
    def __init__(self, backcast_size, forecast_size):
        super().__init__()
        self.backcast_size = backcast_size
        self.forecast_size = forecast_size

    def forward(self, theta):
        return theta[:, : self.backcast_size], theta[:, -self.forecast_size:]


class TrendBasis(nn.Module):
    """Polynomial trend: theta holds the coefficients of 1, t, t^2, ... on [0, 1)."""

    def __init__(self, degree_of_polynomial, backcast_size, forecast_size, dtype=torch.float32):
        super().__init__()
        self.polynomial_size = degree_of_polynomial + 1
        back_t = torch.arange(backcast_size, dtype=dtype) / backcast_size
        fore_t = torch.arange(forecast_size, dtype=dtype) / forecast_size
        # frozen parameters, as the reference code holds its bases (Adam and clipping skip
        # them: they never get a gradient)
        self.backcast_time = nn.Parameter(
            torch.stack([back_t ** i for i in range(self.polynomial_size)]), requires_grad=False)
        powers = torch.arange(self.polynomial_size)[:, None]
        self.forecast_time = nn.Parameter(torch.pow(fore_t[None, :], powers), requires_grad=False)

    def forward(self, theta):
        backcast = torch.einsum("bp,pt->bt", theta[:, self.polynomial_size:], self.backcast_time)
        forecast = torch.einsum("bp,pt->bt", theta[:, : self.polynomial_size], self.forecast_time)
        return backcast, forecast


class SeasonalityBasis(nn.Module):
    """Fourier season: a constant plus cos/sin harmonics of the period, over both windows."""

    def __init__(self, harmonics, period, backcast_size, forecast_size, dtype=torch.float32):
        super().__init__()
        frequency = torch.cat([torch.zeros(1, dtype=dtype),
                               torch.arange(1, harmonics + 1, dtype=dtype)]) / period
        # the block sees the flipped input: backcast time runs backwards from the forecast origin
        back_grid = -2 * math.pi * torch.arange(1, backcast_size + 1, dtype=dtype)[:, None] \
            * frequency[None, :]
        fore_grid = 2 * math.pi * torch.arange(forecast_size, dtype=dtype)[:, None] \
            * frequency[None, :]
        self.register_buffer("backcast_cos_template", torch.cos(back_grid).t().contiguous())
        self.register_buffer("backcast_sin_template", torch.sin(back_grid).t().contiguous())
        self.register_buffer("forecast_cos_template", torch.cos(fore_grid).t().contiguous())
        self.register_buffer("forecast_sin_template", torch.sin(fore_grid).t().contiguous())
        self.n_freq = frequency.numel()

    def forward(self, theta):
        p = self.n_freq
        backcast_harmonics_cos = torch.einsum("bp,pt->bt", theta[:, 2 * p: 3 * p],
                                              self.backcast_cos_template)
        backcast_harmonics_sin = torch.einsum("bp,pt->bt", theta[:, 3 * p:],
                                              self.backcast_sin_template)
        backcast = backcast_harmonics_sin + backcast_harmonics_cos
        forecast_harmonics_cos = torch.einsum("bp,pt->bt", theta[:, :p],
                                              self.forecast_cos_template)
        forecast_harmonics_sin = torch.einsum("bp,pt->bt", theta[:, p: 2 * p],
                                              self.forecast_sin_template)
        forecast = forecast_harmonics_sin + forecast_harmonics_cos
        return backcast, forecast


class NBeats(nn.Module):
    def __init__(self, blocks, stack_sizes=None):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.stack_sizes = stack_sizes or [len(blocks)]

    def forward(self, x, input_mask, return_stacks=False):
        residuals = x.flip(dims=(1,))
        input_mask = input_mask.flip(dims=(1,))
        forecast = x[:, -1:]
        stacks, stack_forecast, in_stack, stack_id = [], 0, 0, 0
        for block in self.blocks:
            backcast, block_forecast = block(residuals)
            residuals = (residuals - backcast) * input_mask
            forecast = forecast + block_forecast
            stack_forecast = stack_forecast + block_forecast
            in_stack += 1
            if in_stack == self.stack_sizes[stack_id]:
                stacks.append(stack_forecast)
                stack_forecast, in_stack, stack_id = 0, 0, stack_id + 1
        if return_stacks:
            return forecast, stacks, residuals
        return forecast


def generic_nbeats(stacks=2, layers=2, layer_size=32):
    return NBeats([NBeatsBlock(LOOKBACK, LOOKBACK + HORIZON,
                               GenericBasis(LOOKBACK, HORIZON), layers, layer_size)
                   for _ in range(stacks)])


def interpretable_nbeats(trend_blocks=2, seasonality_blocks=2, layers=2, layer_size=32,
                         degree=2, harmonics=2, dtype=torch.float32):
    trend_block = NBeatsBlock(LOOKBACK, 2 * (degree + 1),
                              TrendBasis(degree, LOOKBACK, HORIZON, dtype), layers, layer_size)
    seasonality_block = NBeatsBlock(LOOKBACK, 4 * (harmonics + 1),
                                    SeasonalityBasis(harmonics, PERIOD, LOOKBACK, HORIZON, dtype),
                                    layers, layer_size)
    # the paper shares weights within each interpretable stack: the same block, n times
    return NBeats([trend_block] * trend_blocks + [seasonality_block] * seasonality_blocks,
                  stack_sizes=[trend_blocks, seasonality_blocks])


# ------------------------------------------------------------------ bases, losses (recorded)

trend_basis = TrendBasis(2, LOOKBACK, HORIZON)
season_basis = SeasonalityBasis(2, PERIOD, LOOKBACK, HORIZON)
buffer_names = sorted(name for name, _ in season_basis.named_buffers())
fixed_results["trend_backcast_time"] = trend_basis.backcast_time.clone()
fixed_results["season_forecast_cos"] = season_basis.forecast_cos_template.clone()
fixed_results["season_backcast_sin"] = season_basis.backcast_sin_template.clone()

# a trend theta of (a, b, c) gives a + b t + c t^2 on the forecast grid
theta = torch.tensor([[1.0, 2.0, -1.0, 0.0, 0.0, 0.0]])
trend_forecast = trend_basis(theta)[1]
fore_t = torch.arange(HORIZON, dtype=torch.float32) / HORIZON
trend_basis_error = float((trend_forecast[0] - (1 + 2 * fore_t - fore_t ** 2)).abs().max())

# a seasonality theta on the first harmonic's cosine is a cosine of the period
theta = torch.zeros(1, 4 * 3)
theta[0, 1] = 1.0
season_forecast = season_basis(theta)[1]
expected = torch.cos(2 * math.pi * torch.arange(HORIZON, dtype=torch.float32) / PERIOD)
season_basis_error = float((season_forecast[0] - expected).abs().max())

# losses on fixed values, including the zeros divide_no_nan exists for
forecast = torch.tensor([[1.0, 2.0, 0.0, 4.0], [0.5, 0.0, 3.0, -1.0]], requires_grad=True)
target = torch.tensor([[1.5, 2.0, 0.0, 3.0], [0.0, 1.0, 2.5, -2.0]])
mask = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
insample = torch.tensor([[1.0, 2.0, 3.0, 1.5, 2.5, 3.5], [2.0, 2.0, 2.0, 2.0, 2.0, 2.0]])
loss_values = {}
loss_grads = {}
for loss_name, fn in (("smape", lambda: smape_2_loss(forecast, target, mask)),
                      ("mape", lambda: mape_loss(forecast, target, mask)),
                      ("mase", lambda: mase_loss(insample, 3, forecast, target, mask))):
    forecast.grad = None
    value = fn()
    value.backward()
    loss_values[loss_name] = value.detach().clone()
    loss_grads[loss_name] = forecast.grad.clone()
fixed_results["loss_values"] = loss_values
fixed_results["loss_grads"] = loss_grads
fixed_results["divide_no_nan"] = divide_no_nan(torch.tensor([1.0, 0.0, -2.0, 3.0]),
                                               torch.tensor([0.0, 0.0, 4.0, 2.0]))


# ---------------------------------------------------------------------- fixed weights (recorded)

torch.manual_seed(1)
fixed_generic = generic_nbeats()
fixed_interp = interpretable_nbeats()
n_generic_params = sum(p.numel() for p in fixed_generic.parameters())
n_interp_params = sum(p.numel() for p in fixed_interp.parameters())
n_interp_blocks = len(fixed_interp.blocks)
n_interp_state = len(fixed_interp.state_dict())
xb, yb = x_train[:16], y_train[:16]
full_mask = torch.ones_like(xb)
part_mask = full_mask.clone()
part_mask[:4, :6] = 0.0  # the first six steps of four windows are missing
for name, model in (("generic", fixed_generic), ("interpretable", fixed_interp)):
    model.zero_grad()
    out, stacks, residuals = model(xb, part_mask, return_stacks=True)
    loss = mase_loss(xb, PERIOD, out, yb, torch.ones_like(yb))
    loss.backward()
    fixed_results[name] = {
        "forecast": out.detach().clone(),
        "stacks": torch.stack(stacks).detach(),  # (stack, batch, horizon)
        "residuals": residuals.detach().clone(),
        "loss": loss.detach().clone(),
        "grads": {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad},
    }
frozen_names = [n for n, p in fixed_interp.named_parameters() if not p.requires_grad]
frozen_grads_none = all(p.grad is None for p in fixed_interp.parameters() if not p.requires_grad)

# missing values: NaNs in the history become zeros, and the mask drops them from the residuals
with torch.no_grad():
    x_missing = xb.clone()
    x_missing[:4, :6] = float("nan")
    missing_mask = (~torch.isnan(x_missing)).float()
    x_filled = torch.nan_to_num(x_missing, nan=0.0)
    filled_forecast = fixed_interp(x_filled, missing_mask)
fixed_results["missing_forecast"] = filled_forecast
missing_mask_matches = bool(torch.equal(missing_mask, part_mask))
masked_residual_zero = bool((fixed_results["interpretable"]["residuals"][:4, -6:] == 0).all())

# the shared stack: the same block's gradient collects both uses
shared_twice = fixed_interp.blocks[0] is fixed_interp.blocks[1]

# gradcheck of the trend/seasonality model in float64
torch.manual_seed(2)
model64 = interpretable_nbeats(trend_blocks=1, seasonality_blocks=1, layers=1, layer_size=8,
                               dtype=torch.float64).double()
x64 = torch.randn(1, LOOKBACK, dtype=torch.float64, requires_grad=True)
mask64 = torch.ones(1, LOOKBACK, dtype=torch.float64)
gradcheck_nbeats = torch.autograd.gradcheck(lambda inp: model64(inp, mask64), (x64,))


# ---------------------------------------------------------------------------------- training


def seasonal_naive(x, horizon=HORIZON):
    """Repeat the last season: the forecast for t is the value one period earlier."""
    last = x[:, -PERIOD:]
    reps = math.ceil(horizon / PERIOD)
    return last.repeat(1, reps)[:, :horizon]


def train(model, loss_kind, steps=100, batch_size=32, max_lr=1e-2, seed=3):
    torch.manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=max_lr / 25)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=max_lr, total_steps=steps,
                                                    pct_start=0.3)
    losses, lrs, betas = [], [], []
    for _ in range(steps):
        model.train()
        idx = torch.randint(0, x_train.size(0), (batch_size,))
        x, y = x_train[idx], y_train[idx]
        forecast = model(x, torch.ones_like(x))
        if loss_kind == "mase":
            loss = mase_loss(x, PERIOD, forecast, y, torch.ones_like(y))
        else:
            loss = smape_2_loss(forecast, y, torch.ones_like(y))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        lrs.append(scheduler.get_last_lr()[0])
        betas.append(optimizer.param_groups[0]["betas"][0])
    model.eval()
    with torch.no_grad():
        val_forecast = model(x_val, torch.ones_like(x_val))
        val_smape = smape_2_loss(val_forecast, y_val, torch.ones_like(y_val)).item()
        val_mase = mase_loss(x_val, PERIOD, val_forecast, y_val, torch.ones_like(y_val)).item()
    return losses, lrs, betas, val_smape, val_mase


torch.manual_seed(4)
generic_model = generic_nbeats()
generic_losses, generic_lrs, generic_betas, generic_val_smape, generic_val_mase = train(
    generic_model, "smape")
torch.manual_seed(5)
interp_model = interpretable_nbeats()
interp_losses, interp_lrs, interp_betas, interp_val_smape, interp_val_mase = train(
    interp_model, "mase")

with torch.no_grad():
    naive = seasonal_naive(x_val)
    naive_val_smape = smape_2_loss(naive, y_val, torch.ones_like(y_val)).item()
    naive_val_mase = mase_loss(x_val, PERIOD, naive, y_val, torch.ones_like(y_val)).item()
    interp_forecast, interp_stacks, _ = interp_model(x_val, torch.ones_like(x_val),
                                                     return_stacks=True)
    # the trend stack's forecast is smooth: its second differences are small next to the
    # seasonal stack's
    trend_curvature = float(interp_stacks[0].diff(n=2, dim=1).abs().mean())
    season_curvature = float(interp_stacks[1].diff(n=2, dim=1).abs().mean())

# the frozen bases did not move, the trained weights did
trend_basis_unchanged = bool(torch.equal(interp_model.blocks[0].basis_function.backcast_time,
                                         TrendBasis(2, LOOKBACK, HORIZON).backcast_time))

# ------------------------------------------------------------- checkpoint, schedules (recorded)

buffer = io.BytesIO()
torch.save({"model": interp_model.state_dict(), "step": len(interp_losses)}, buffer)
buffer.seek(0)
checkpoint = torch.load(buffer)
restored = interpretable_nbeats()
load_result = restored.load_state_dict(checkpoint["model"])
restored.eval()
with torch.no_grad():
    restored_forecast = restored(x_val, torch.ones_like(x_val))
restored_matches = bool(torch.equal(restored_forecast, interp_forecast))
checkpoint_keys = sorted(checkpoint["model"].keys())


def schedule(steps=12, **kwargs):
    """OneCycleLR's learning rates and Adam beta1 over a dry run of ``steps`` steps."""
    weight = nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.Adam([weight], lr=1e-3, betas=(0.9, 0.99))
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, **kwargs)
    lrs, betas = [optimizer.param_groups[0]["lr"]], [optimizer.param_groups[0]["betas"][0]]
    for _ in range(steps - 1):
        optimizer.step()
        scheduler.step()
        lrs.append(scheduler.get_last_lr()[0])
        betas.append(optimizer.param_groups[0]["betas"][0])
    return {"lr": lrs, "beta1": betas}


one_cycle_schedules = {
    "cos": schedule(total_steps=12),
    "linear_three_phase": schedule(total_steps=12, anneal_strategy="linear", three_phase=True),
    "epochs": schedule(epochs=3, steps_per_epoch=4, pct_start=0.25, div_factor=10.0,
                       final_div_factor=100.0, base_momentum=0.8, max_momentum=0.95),
    "no_momentum": schedule(total_steps=12, cycle_momentum=False),
}

if __name__ == "__main__":
    print(f"generic: smape {generic_losses[0]:.2f} -> {generic_losses[-1]:.2f}, "
          f"val smape {generic_val_smape:.2f} (naive {naive_val_smape:.2f})")
    print(f"interpretable: mase {interp_losses[0]:.3f} -> {interp_losses[-1]:.3f}, "
          f"val mase {interp_val_mase:.3f} (naive {naive_val_mase:.3f})")
    print(f"curvature trend {trend_curvature:.4f} season {season_curvature:.4f}")
