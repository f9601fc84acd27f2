# ruff: noqa: N812 (the usual F alias)
"""Probabilistic forecasting of seasonal series, written for these tests the way DeepAR-style
torch code (GluonTS's and pytorch-forecasting's DeepAR, the many "DeepAR in PyTorch" ports)
and N-BEATS code write torch code (not a copy of any):

- synthetic daily series with a weekly season, of different lengths, and count series drawn
  through a gamma-Poisson mixture (``torch.poisson``, ``torch.distributions.Gamma``);
- ``nn.utils.rnn.pad_sequence`` (batch-first and time-first), ``pack_padded_sequence`` with
  ``enforce_sorted=False``, a two-layer ``nn.LSTM(batch_first=True)`` over the packed batch and
  ``pad_packed_sequence`` (``total_length``), masks from the lengths;
- covariates: ``torch.sin``/``torch.cos`` of the day of week, a scaled age feature, an
  ``nn.Embedding`` of the series id expanded along time; DeepAR's mean scaling ``1 + mean|z|``;
- likelihood heads: ``torch.distributions.StudentT`` (``F.softplus`` scales, dof ``2 +
  softplus``) and ``NegativeBinomial`` (``total_count = 1/alpha``, ``logits = log(mu alpha)``),
  the negative log-likelihood over the masked positions with teacher forcing;
- ancestral sampling: the context's final ``(h, c)`` ``repeat_interleave``-d over sample
  paths, a loop of one-step LSTM calls carrying ``(h, c)`` and ``dist.sample()``;
  ``torch.quantile`` over the samples (also ``interpolation=`` and ``keepdim``), the pinball
  (quantile) loss, the CRPS from samples, the coverage of the 80% interval, against a seasonal
  naive forecast;
- an N-BEATS-like MLP with generic blocks and a seasonality block on a fixed Fourier basis
  (``register_buffer``), residual backcasts and summed forecasts, windows cut by
  ``Tensor.unfold``, ``F.l1_loss``;
- ``torch.autograd.gradcheck`` of the two log-likelihoods and of the packed LSTM (float64),
  ``Adam``, ``clip_grad_norm_``, ``StepLR``.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.distributions import Gamma, NegativeBinomial, StudentT
from jitgrad.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

torch.manual_seed(0)
fixed_results = {}

PERIOD = 7
HORIZON = 7
QUANTILES = (0.1, 0.5, 0.9)


# ------------------------------------------------------------------------------ data


def time_features(start, length):
    """(length, 3): sin and cos of the day of week, and the age in years-ish units."""
    t = torch.arange(start, start + length, dtype=torch.float32)
    angle = 2 * math.pi * t / PERIOD
    return torch.stack([torch.sin(angle), torch.cos(angle), t / 100.0], dim=-1)


def make_series(n_series, counts=False):
    """Each series: level + amplitude * weekly profile + trend, then noise (or counts)."""
    lengths = torch.randint(36, 57, (n_series,))
    starts = torch.randint(0, PERIOD, (n_series,))
    series, covariates = [], []
    for i in range(n_series):
        total = int(lengths[i]) + HORIZON
        t = torch.arange(int(starts[i]), int(starts[i]) + total, dtype=torch.float32)
        level = 4.0 + 4.0 * torch.rand(())
        amplitude = 1.0 + 2.0 * torch.rand(())
        trend = 0.02 * torch.randn(())
        mean = level + amplitude * torch.sin(2 * math.pi * t / PERIOD) + trend * t / 10
        if counts:
            rate = mean.clamp(min=0.5) * Gamma(torch.tensor(20.0), torch.tensor(20.0)).sample(
                (total,))
            z = torch.poisson(rate)
        else:
            z = mean + 0.3 * torch.randn(total)
        series.append(z)
        covariates.append(time_features(int(starts[i]), total))
    return series, covariates, lengths


def training_batch(series, covariates, lengths):
    """Teacher forcing: the input at t holds z_{t-1}; the target is z_t (t = 1 .. L-1)."""
    scales = torch.stack([1.0 + z[:L].abs().mean() for z, L in zip(series, lengths.tolist())])
    prev = [z[:L - 1] / s for z, L, s in zip(series, lengths.tolist(), scales)]
    covs = [c[1:L] for c, L in zip(covariates, lengths.tolist())]
    targets = [z[1:L] for z, L in zip(series, lengths.tolist())]
    prev = pad_sequence(prev, batch_first=True)
    covs = pad_sequence(covs, batch_first=True)
    targets = pad_sequence(targets, batch_first=True, padding_value=-1.0)
    steps = lengths - 1
    mask = torch.arange(prev.shape[1])[None, :] < steps[:, None]
    return prev, covs, targets, steps, mask, scales


# ----------------------------------------------------------------------------- DeepAR


class DeepAR(nn.Module):
    def __init__(self, n_series, n_covariates=3, embedding_dim=4, hidden_size=24, num_layers=2,
                 likelihood="student_t"):
        super().__init__()
        self.likelihood = likelihood
        self.embedding = nn.Embedding(n_series, embedding_dim)
        self.rnn = nn.LSTM(1 + n_covariates + embedding_dim, hidden_size, num_layers=num_layers,
                           batch_first=True)
        self.head = nn.Linear(hidden_size, 3 if likelihood == "student_t" else 2)

    def rnn_inputs(self, prev, covs, ids):
        emb = self.embedding(ids)[:, None, :].expand(-1, prev.shape[1], -1)
        return torch.cat([prev[..., None], covs, emb], dim=-1)

    def distribution(self, out, scale):
        params = self.head(out)
        scale = scale.view(-1, *([1] * (params.dim() - 2)))
        if self.likelihood == "student_t":
            loc, sigma, dof = params.unbind(-1)
            return StudentT(df=2.0 + F.softplus(dof), loc=loc * scale,
                            scale=(F.softplus(sigma) + 1e-3) * scale)
        mu, alpha = params.unbind(-1)
        mu = (F.softplus(mu) + 1e-3) * scale
        alpha = (F.softplus(alpha) + 1e-3) / torch.sqrt(scale)
        return NegativeBinomial(total_count=1.0 / alpha, logits=torch.log(mu * alpha))

    def unroll(self, prev, covs, ids, steps):
        x = self.rnn_inputs(prev, covs, ids)
        packed = pack_padded_sequence(x, steps, batch_first=True, enforce_sorted=False)
        out, (h, c) = self.rnn(packed)
        out, out_lengths = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
        return out, (h, c), out_lengths

    def forward(self, prev, covs, ids, steps, scales):
        out, state, _ = self.unroll(prev, covs, ids, steps)
        return self.distribution(out, scales), state

    def nll(self, batch, ids):
        prev, covs, targets, steps, mask, scales = batch
        dist, _ = self(prev, covs, ids, steps, scales)
        # padded targets are -1: replace them by a valid value before log_prob, then mask
        safe = torch.where(mask, targets, torch.ones_like(targets))
        log_prob = dist.log_prob(safe)
        return -(log_prob * mask).sum() / mask.sum()

    @torch.no_grad()
    def forecast(self, series, covariates, lengths, ids, num_samples=100, horizon=HORIZON):
        """Ancestral sampling: num_samples paths per series, carrying (h, c)."""
        prev, covs, _, steps, _, scales = training_batch(series, covariates, lengths)
        _, (h, c), _ = self.unroll(prev, covs, ids, steps)
        h = h.repeat_interleave(num_samples, dim=1)
        c = c.repeat_interleave(num_samples, dim=1)
        last = torch.stack([z[L - 1] for z, L in zip(series, lengths.tolist())])
        z = last.repeat_interleave(num_samples) / scales.repeat_interleave(num_samples)
        rep_ids = ids.repeat_interleave(num_samples)
        rep_scales = scales.repeat_interleave(num_samples)
        future_covs = torch.stack([c_[L:L + horizon] for c_, L in zip(covariates,
                                                                         lengths.tolist())])
        future_covs = future_covs.repeat_interleave(num_samples, dim=0)
        samples = []
        for t in range(horizon):
            x = self.rnn_inputs(z[:, None], future_covs[:, t:t + 1], rep_ids)
            out, (h, c) = self.rnn(x, (h, c))
            draw = self.distribution(out[:, 0], rep_scales).sample()
            samples.append(draw)
            z = draw / rep_scales
        return torch.stack(samples, dim=1).view(len(series), num_samples, horizon)


# ------------------------------------------------------------------------------ metrics


def pinball_loss(quantile_forecasts, target, quantiles=QUANTILES):
    """quantile_forecasts (Q, B, H), target (B, H): the mean quantile loss."""
    q = torch.tensor(quantiles, dtype=target.dtype).view(-1, 1, 1)
    diff = target[None] - quantile_forecasts
    return torch.maximum(q * diff, (q - 1) * diff).mean()


def crps_from_samples(samples, target):
    """samples (B, S, H), target (B, H): E|X - y| - E|X - X'| / 2, averaged."""
    term1 = (samples - target[:, None]).abs().mean(dim=1)
    term2 = (samples[:, :, None] - samples[:, None, :]).abs().mean(dim=(1, 2))
    return (term1 - 0.5 * term2).mean()


def seasonal_naive(series, lengths, horizon=HORIZON):
    return torch.stack([z[L - PERIOD:L][torch.arange(horizon) % PERIOD]
                        for z, L in zip(series, lengths.tolist())])


# ---------------------------------------------------------------------------- N-BEATS


class GenericBlock(nn.Module):
    def __init__(self, backcast, forecast, hidden=64, theta=16):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(backcast, hidden), nn.ReLU(),
                                nn.Linear(hidden, hidden), nn.ReLU())
        self.theta_b = nn.Linear(hidden, theta, bias=False)
        self.theta_f = nn.Linear(hidden, theta, bias=False)
        self.backcast_basis = nn.Linear(theta, backcast)
        self.forecast_basis = nn.Linear(theta, forecast)

    def forward(self, x):
        h = self.fc(x)
        return self.backcast_basis(self.theta_b(h)), self.forecast_basis(self.theta_f(h))


class SeasonalityBlock(nn.Module):
    """Backcast and forecast are Fourier series of the period: a fixed basis (buffers)."""

    def __init__(self, backcast, forecast, hidden=64, harmonics=3):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(backcast, hidden), nn.ReLU())
        k = torch.arange(1, harmonics + 1, dtype=torch.float32)[:, None]
        for name, n, offset in (("b", backcast, -backcast), ("f", forecast, 0)):
            t = torch.arange(offset, offset + n, dtype=torch.float32)[None, :]
            basis = torch.cat([torch.ones(1, n), torch.cos(2 * math.pi * k * t / PERIOD),
                               torch.sin(2 * math.pi * k * t / PERIOD)])
            self.register_buffer(f"basis_{name}", basis)
        self.theta = nn.Linear(hidden, 2 * (2 * harmonics + 1))

    def forward(self, x):
        theta_b, theta_f = self.theta(self.fc(x)).chunk(2, dim=-1)
        return theta_b @ self.basis_b, theta_f @ self.basis_f


class NBeats(nn.Module):
    def __init__(self, backcast, forecast):
        super().__init__()
        self.blocks = nn.ModuleList([SeasonalityBlock(backcast, forecast),
                                     GenericBlock(backcast, forecast),
                                     GenericBlock(backcast, forecast)])

    def forward(self, x):
        residual, forecast = x, 0.0
        for block in self.blocks:
            backcast, block_forecast = block(residual)
            residual = residual - backcast
            forecast = forecast + block_forecast
        return forecast


def nbeats_windows(series, lengths, backcast):
    """Every (backcast + horizon) window of each context, scaled by its backcast mean."""
    windows = torch.cat([z[:L].unfold(0, backcast + HORIZON, 1)
                         for z, L in zip(series, lengths.tolist())])
    return windows[:, :backcast], windows[:, backcast:]


# ----------------------------------------------------- fixed-weight checks (recorded)

# pad_sequence both ways, packing with unsorted lengths, the LSTM on the packed batch
seqs = [torch.randn(L, 3) for L in (4, 6, 2)]
fixed_results["pad_time_first"] = pad_sequence(seqs)
fixed_results["pad_batch_first"] = pad_sequence(seqs, batch_first=True, padding_value=-2.0)
lstm = nn.LSTM(3, 5, num_layers=2, batch_first=True)
packed = pack_padded_sequence(fixed_results["pad_batch_first"], torch.tensor([4, 6, 2]),
                              batch_first=True, enforce_sorted=False)
fixed_results["packed_data"] = packed.data
fixed_results["packed_batch_sizes"] = packed.batch_sizes
fixed_results["packed_sorted_indices"] = packed.sorted_indices
fixed_results["packed_unsorted_indices"] = packed.unsorted_indices
packed_out, (h_n, c_n) = lstm(packed)
padded_out, out_lengths = pad_packed_sequence(packed_out, batch_first=True, total_length=7,
                                              padding_value=0.5)
fixed_results["lstm_packed_out"] = padded_out.detach()
fixed_results["lstm_out_lengths"] = out_lengths
fixed_results["lstm_h_n"], fixed_results["lstm_c_n"] = h_n.detach(), c_n.detach()
grads = torch.autograd.grad((padded_out ** 2).sum() + h_n.sum(), list(lstm.parameters()))
fixed_results["lstm_grads"] = {n: g for (n, _), g in zip(lstm.named_parameters(), grads)}

# the two likelihoods and their gradients
loc = torch.randn(6, requires_grad=True)
raw_scale = torch.randn(6, requires_grad=True)
raw_dof = torch.randn(6, requires_grad=True)
value = 2 * torch.randn(6)
student = StudentT(2.0 + F.softplus(raw_dof), loc, F.softplus(raw_scale))
student_lp = student.log_prob(value)
fixed_results["student_t_log_prob"] = student_lp.detach()
fixed_results["student_t_mean_var"] = (student.mean.detach(), student.variance.detach())
fixed_results["student_t_grads"] = torch.autograd.grad(student_lp.sum(),
                                                       (loc, raw_scale, raw_dof))
raw_mu = torch.randn(6, requires_grad=True)
raw_alpha = torch.randn(6, requires_grad=True)
counts = torch.tensor([0.0, 1.0, 3.0, 7.0, 12.0, 30.0])
mu, alpha = 5 * F.softplus(raw_mu), F.softplus(raw_alpha)
negbin = NegativeBinomial(total_count=1.0 / alpha, logits=torch.log(mu * alpha))
negbin_lp = negbin.log_prob(counts)
fixed_results["negbin_log_prob"] = negbin_lp.detach()
fixed_results["negbin_mean"] = negbin.mean.detach()
negbin_mean_error = (negbin.mean - mu).abs().max().item()
fixed_results["negbin_grads"] = torch.autograd.grad(negbin_lp.sum(), (raw_mu, raw_alpha))
negbin_probs = NegativeBinomial(total_count=torch.tensor([2.0, 4.5]),
                                probs=torch.tensor([0.3, 0.8]))
fixed_results["negbin_probs_log_prob"] = negbin_probs.log_prob(torch.tensor([[0.0, 2.0],
                                                                            [5.0, 9.0]]))

# quantiles, pinball and CRPS on fixed samples
draws = torch.randn(3, 50, 4) * 2 + 1
truth = torch.randn(3, 4)
q = torch.tensor(QUANTILES)
fixed_results["quantile"] = torch.quantile(draws, q, dim=1)
fixed_results["quantile_keepdim"] = torch.quantile(draws, 0.25, dim=1, keepdim=True)
fixed_results["quantile_interpolations"] = {
    mode: torch.quantile(draws[0, :, 0], q, interpolation=mode)
    for mode in ("linear", "lower", "higher", "midpoint", "nearest")}
fixed_results["nanquantile"] = torch.nanquantile(
    torch.tensor([1.0, float("nan"), 3.0, 2.0, 8.0]), 0.5)
fixed_results["pinball"] = pinball_loss(fixed_results["quantile"], truth)
fixed_results["crps"] = crps_from_samples(draws, truth)

# float64 gradient checks of the likelihoods and of the packed LSTM
gradcheck_results = {
    "student_t": torch.autograd.gradcheck(
        lambda d, m, s: StudentT(d, m, s).log_prob(torch.tensor([0.3, -1.2, 4.0],
                                                                dtype=torch.float64)),
        (torch.tensor([2.5, 3.0, 7.0], dtype=torch.float64, requires_grad=True),
         torch.tensor([0.1, -0.5, 2.0], dtype=torch.float64, requires_grad=True),
         torch.tensor([0.7, 1.5, 2.0], dtype=torch.float64, requires_grad=True))),
    "negbin": torch.autograd.gradcheck(
        lambda r, lg: NegativeBinomial(total_count=r, logits=lg).log_prob(
            torch.tensor([0.0, 3.0, 11.0], dtype=torch.float64)),
        (torch.tensor([0.8, 2.0, 5.0], dtype=torch.float64, requires_grad=True),
         torch.tensor([-0.3, 0.4, 1.1], dtype=torch.float64, requires_grad=True))),
}
lstm64 = nn.LSTM(2, 3, batch_first=True).double()


def packed_lstm(x):
    out, (h, _) = lstm64(pack_padded_sequence(x, torch.tensor([2, 3]), batch_first=True,
                                              enforce_sorted=False))
    return pad_packed_sequence(out, batch_first=True)[0], h


gradcheck_results["packed_lstm"] = torch.autograd.gradcheck(
    packed_lstm, (torch.randn(2, 3, 2, dtype=torch.float64, requires_grad=True),))

# a DeepAR model on fixed weights: packed log-likelihood, its gradient, a short forecast
torch.manual_seed(1)
fixed_series, fixed_covs, fixed_lengths = make_series(4)
fixed_ids = torch.arange(4)
fixed_model = DeepAR(4)
fixed_batch = training_batch(fixed_series, fixed_covs, fixed_lengths)
fixed_nll = fixed_model.nll(fixed_batch, fixed_ids)
fixed_results["deepar_nll"] = fixed_nll.item()
fixed_results["deepar_grads"] = dict(zip(
    [n for n, _ in fixed_model.named_parameters()],
    torch.autograd.grad(fixed_nll, list(fixed_model.parameters()))))
torch.manual_seed(2)
fixed_results["deepar_samples"] = fixed_model.forecast(fixed_series, fixed_covs, fixed_lengths,
                                                       fixed_ids, num_samples=8, horizon=3)
fixed_nb_model = DeepAR(4, likelihood="negative_binomial")
count_like = [z.round().clamp(min=0) for z in fixed_series]
fixed_results["deepar_negbin_nll"] = fixed_nb_model.nll(
    training_batch(count_like, fixed_covs, fixed_lengths), fixed_ids).item()

# the packed path equals each series run alone, unpadded (on these fixed weights)
prev, covs, _, steps, _, _ = fixed_batch
with torch.no_grad():
    packed_all, (h_all, c_all), packed_lengths = fixed_model.unroll(prev, covs, fixed_ids, steps)
    alone_out, alone_h, alone_c = [], [], []
    for i, n in enumerate(steps.tolist()):
        x_i = fixed_model.rnn_inputs(prev[i:i + 1, :n], covs[i:i + 1, :n], fixed_ids[i:i + 1])
        out_i, (h_i, c_i) = fixed_model.rnn(x_i)
        alone_out.append(out_i[0])
        alone_h.append(h_i[:, 0])
        alone_c.append(c_i[:, 0])
packed_vs_alone = max(
    max((packed_all[i, :n] - alone_out[i]).abs().max().item() for i, n in
        enumerate(steps.tolist())),
    (h_all - torch.stack(alone_h, dim=1)).abs().max().item(),
    (c_all - torch.stack(alone_c, dim=1)).abs().max().item())
padding_is_zero = bool(all((packed_all[i, n:] == 0).all() for i, n in enumerate(steps.tolist())))

# ------------------------------------------------------------------------------ training

torch.manual_seed(0)
N_SERIES = 16
series, covariates, lengths = make_series(N_SERIES)
ids = torch.arange(N_SERIES)
batch = training_batch(series, covariates, lengths)
model = DeepAR(N_SERIES)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=100, gamma=0.3)
epochs = 160
losses = []
for epoch in range(epochs):
    loss = model.nll(batch, ids)
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 10.0)
    optimizer.step()
    scheduler.step()
    losses.append(loss.item())
    if epoch % 40 == 0 or epoch == epochs - 1:
        print(f"epoch {epoch}: nll {loss.item():.4f}")

# probabilistic forecast of the held-out week
model.eval()
torch.manual_seed(3)
samples = model.forecast(series, covariates, lengths, ids, num_samples=100)
future = torch.stack([z[L:L + HORIZON] for z, L in zip(series, lengths.tolist())])
quantile_forecasts = torch.quantile(samples, torch.tensor(QUANTILES), dim=1)
lower, median, upper = quantile_forecasts
coverage_80 = ((future >= lower) & (future <= upper)).float().mean().item()
deepar_pinball = pinball_loss(quantile_forecasts, future).item()
deepar_crps = crps_from_samples(samples, future).item()
naive = seasonal_naive(series, lengths)
naive_pinball = pinball_loss(naive[None].expand(len(QUANTILES), -1, -1), future).item()
naive_crps = (naive - future).abs().mean().item()  # a point forecast's CRPS is its MAE
median_mae = (median - future).abs().mean().item()

# count series with the negative-binomial head
torch.manual_seed(4)
count_series, count_covariates, count_lengths = make_series(8, counts=True)
count_ids = torch.arange(8)
count_batch = training_batch(count_series, count_covariates, count_lengths)
count_model = DeepAR(8, likelihood="negative_binomial", hidden_size=16)
count_optimizer = torch.optim.Adam(count_model.parameters(), lr=1e-2)
count_losses = []
for _ in range(80):
    loss = count_model.nll(count_batch, count_ids)
    count_optimizer.zero_grad()
    loss.backward()
    count_optimizer.step()
    count_losses.append(loss.item())
torch.manual_seed(5)
count_samples = count_model.forecast(count_series, count_covariates, count_lengths, count_ids,
                                     num_samples=50)
count_samples_are_counts = bool(((count_samples >= 0)
                                 & (count_samples == count_samples.round())).all())

# the N-BEATS baseline on windows of the same contexts, scaled by each backcast's mean
BACKCAST = 3 * PERIOD
torch.manual_seed(6)
backcasts, forecasts = nbeats_windows(series, lengths, BACKCAST)
window_scale = backcasts.mean(dim=1, keepdim=True)
nbeats = NBeats(BACKCAST, HORIZON)
nbeats_optimizer = torch.optim.Adam(nbeats.parameters(), lr=2e-3)
nbeats_losses = []
for _ in range(150):
    index = torch.randint(0, backcasts.shape[0], (64,))
    prediction = nbeats(backcasts[index] / window_scale[index])
    loss = F.l1_loss(prediction, forecasts[index] / window_scale[index])
    nbeats_optimizer.zero_grad()
    loss.backward()
    nbeats_optimizer.step()
    nbeats_losses.append(loss.item())
with torch.no_grad():
    context = torch.stack([z[L - BACKCAST:L] for z, L in zip(series, lengths.tolist())])
    context_scale = context.mean(dim=1, keepdim=True)
    nbeats_forecast = nbeats(context / context_scale) * context_scale
nbeats_mae = (nbeats_forecast - future).abs().mean().item()

print(f"DeepAR nll {losses[0]:.3f} -> {losses[-1]:.3f}; coverage(80%) {coverage_80:.2f}, "
      f"pinball {deepar_pinball:.3f} vs naive {naive_pinball:.3f}, CRPS {deepar_crps:.3f} vs "
      f"{naive_crps:.3f}; counts nll {count_losses[0]:.3f} -> {count_losses[-1]:.3f}; "
      f"N-BEATS l1 {nbeats_losses[0]:.3f} -> {nbeats_losses[-1]:.3f}, MAE {nbeats_mae:.3f}")
