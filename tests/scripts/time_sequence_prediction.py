"""Forecasting phase-shifted sine waves with stacked LSTM cells and L-BFGS, written for these
tests in the way pytorch/examples' time_sequence_prediction is commonly written (modelled on the
API usage of pytorch/examples' time_sequence_prediction, not a copy of it):

- a NumPy data set stored with ``torch.save`` to an open file and read back with
  ``torch.load(..., weights_only=False)``, then ``torch.from_numpy`` slices;
- two ``nn.LSTMCell`` layers and a ``nn.Linear`` head in float64 (``Module.double``), stepped
  over ``Tensor.split(1, dim=1)`` and fed their own output to extrapolate;
- ``optim.LBFGS`` with a closure (``max_iter``, ``history_size``, ``line_search_fn=
  "strong_wolfe"``), its ``state_dict`` counters, ``nn.MSELoss`` and ``torch.no_grad``;
- fixed-weight runs (``copy_``, ``view_as``, ``load_state_dict``) to compare with torch.
"""
import os
import tempfile

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.optim as optim

PERIOD, LENGTH, WAVES, WIDTH = 20, 48, 8, 51


def write_waves(folder):
    """Eight windows of sin(t / PERIOD), each starting at a random offset."""
    rng_offsets = np.random.randint(-4 * PERIOD, 4 * PERIOD, WAVES)
    ticks = np.arange(LENGTH)[None, :] + rng_offsets[:, None]
    waves = np.sin(ticks.astype("int64") / 1.0 / PERIOD).astype("float64")
    path = os.path.join(folder, "waves.pt")
    with open(path, "wb") as fh:
        torch.save(waves, fh)
    return path


class Forecaster(nn.Module):
    def __init__(self, width=WIDTH):
        super().__init__()
        self.width = width
        self.cell_a = nn.LSTMCell(1, width)
        self.cell_b = nn.LSTMCell(width, width)
        self.linear = nn.Linear(width, 1)

    def _blank(self, batch):
        return [torch.zeros(batch, self.width, dtype=torch.double) for _ in range(4)]

    def _tick(self, value, state):
        ha, ca, hb, cb = state
        ha, ca = self.cell_a(value, (ha, ca))
        hb, cb = self.cell_b(ha, (hb, cb))
        return self.linear(hb), [ha, ca, hb, cb]

    def forward(self, series, future=0):
        state = self._blank(series.size(0))
        preds = []
        for column in series.split(1, dim=1):
            guess, state = self._tick(column, state)
            preds.append(guess)
        for _ in range(future):  # keep going on our own guesses
            guess, state = self._tick(guess, state)
            preds.append(guess)
        return torch.cat(preds, dim=1)


def lbfgs_closure(opt, net, xs, ys, log=None):
    def closure():
        opt.zero_grad()
        err = loss_fn(net(xs), ys)
        if log is not None:
            log.append(err.item())
        err.backward()
        return err
    return closure


np.random.seed(2)
data = torch.load(write_waves(tempfile.mkdtemp()), weights_only=False)

np.random.seed(0)
torch.manual_seed(0)
train_x, train_y = torch.from_numpy(data[3:, :-1]), torch.from_numpy(data[3:, 1:])
held_x, held_y = torch.from_numpy(data[:3, :-1]), torch.from_numpy(data[:3, 1:])

seq = Forecaster()
seq.double()
loss_fn = nn.MSELoss()
optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=8)
HORIZON = 20
step_losses = []
test_losses = []  # held-out error of the teacher-forced part
closure_calls = []
for rnd in range(4):
    evals = []
    step_losses.append(optimizer.step(lbfgs_closure(optimizer, seq, train_x, train_y,
                                                    evals)).item())
    closure_calls.append(len(evals))
    with torch.no_grad():
        forecast = seq(held_x, future=HORIZON)
        test_losses.append(loss_fn(forecast[:, :-HORIZON], held_y).item())
    print(f"round {rnd}: {len(evals)} evaluations, held-out mse {test_losses[-1]:.5f}")
y = forecast.detach().numpy()
prediction_shape, prediction_dtype = y.shape, y.dtype
lbfgs_state = optimizer.state_dict()

# ---- fixed weights: one L-BFGS step, then the strong-Wolfe variant, to compare with torch ----
fixed = Forecaster().double()
with torch.no_grad():
    for idx, prm in enumerate(fixed.parameters()):
        ramp = torch.arange(prm.numel(), dtype=torch.double) * 0.3 + idx
        prm.copy_(torch.sin(ramp).view_as(prm) * 0.2)
fixed_before = fixed(held_x, future=3).tolist()
short_x, short_y = train_x[:, :10], train_y[:, :10]
fixed_opt = optim.LBFGS(fixed.parameters(), lr=0.8, max_iter=3, history_size=2)
fixed_first_loss = fixed_opt.step(lbfgs_closure(fixed_opt, fixed, short_x, short_y)).item()
fixed_after = fixed(held_x[:, :10], future=3).tolist()
counters = fixed_opt.state_dict()["state"][0]
fixed_counts = (counters["func_evals"], counters["n_iter"])

wolfe = Forecaster().double()
wolfe.load_state_dict(fixed.state_dict())
wolfe_opt = optim.LBFGS(wolfe.parameters(), lr=1, max_iter=4,
                        history_size=3, line_search_fn="strong_wolfe")
wolfe_step = lbfgs_closure(wolfe_opt, wolfe, short_x, short_y)
wolfe_losses = [wolfe_opt.step(wolfe_step).item(), wolfe_opt.step(wolfe_step).item()]
wolfe_losses.append(wolfe_step().item())
counters = wolfe_opt.state_dict()["state"][0]
wolfe_counts = (counters["func_evals"], counters["n_iter"])
wolfe_after = wolfe(held_x[:, :10], future=3).tolist()
