"""A one-dimensional Fourier neural operator learning a smoothing convolution operator.

Written for these tests in the way Fourier-neural-operator code for PyTorch is commonly written
(modelled on the API usage of zongyi-li/fourier_neural_operator's 1-d example, not a copy of
it). It exercises:

- a spectral layer with complex weights (an nn.Parameter of torch.rand(..., dtype=torch.cfloat)
  times a scale): torch.fft.rfft, torch.einsum of complex tensors, slice assignment of the
  kept modes into a cfloat torch.zeros spectrum, torch.fft.irfft(n=...);
- blocks of spectral layer + 1x1 nn.Conv1d in nn.ModuleLists, F.gelu, nn.Linear lifting of
  (a(x), x) with a torch.linspace grid (torch.cat, permute, repeat) and projection;
- an Adam written as an optim.Optimizer subclass under @torch.no_grad() that keeps complex
  moments (add_ with alpha, addcmul_(grad, grad.conj()), complex sqrt, addcdiv_), with L2
  weight decay, under optim.lr_scheduler.StepLR;
- a relative L2 loss through torch.norm(x, 2, 1), F.mse_loss as a side metric,
  TensorDataset/DataLoader (shuffled for training), torch.view_as_real to count real
  parameters.

The data are synthetic: smooth random periodic inputs a(x) and u = a convolved with a fixed
kernel (applied in Fourier space with NumPy), on 64 points. Sections marked "(recorded)" keep
results for the tests; "(added)" marks a fixed-weight model's forward, loss, gradients (of the
complex weights too) and two optimizer steps, compared with torch.
"""

import math

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.optim import Optimizer
from jitgrad.optim.lr_scheduler import StepLR
from jitgrad.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cpu")


def relative_l2(pred, target):
    """Sum over the batch of ||pred - target|| / ||target||, each sample flattened."""
    b = pred.shape[0]
    diff = torch.norm(pred.reshape(b, -1) - target.reshape(b, -1), 2, 1)
    return (diff / torch.norm(target.reshape(b, -1), 2, 1)).sum()


def n_real_params(model):
    """Parameters counted as real numbers: a complex entry counts twice."""
    return sum(torch.view_as_real(p.detach()).numel() if p.is_complex() else p.numel()
               for p in model.parameters())


class ComplexAdam(Optimizer):
    """Adam with L2 weight decay whose moments may be complex: the second moment is the running
    mean of grad * conj(grad), so complex parameters take steps of the usual size."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps,
                                  "weight_decay": weight_decay})

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["step"] = 0
                    st["exp_avg"] = torch.zeros_like(p)
                    st["exp_avg_sq"] = torch.zeros_like(p)
                st["step"] += 1
                g = p.grad
                if group["weight_decay"]:
                    g = g.add(p, alpha=group["weight_decay"])
                st["exp_avg"].mul_(b1).add_(g, alpha=1 - b1)
                st["exp_avg_sq"].mul_(b2).addcmul_(g, g.conj(), value=1 - b2)
                correction2 = math.sqrt(1 - b2 ** st["step"])
                denom = (st["exp_avg_sq"].sqrt() / correction2).add_(group["eps"])
                p.addcdiv_(st["exp_avg"], denom, value=-group["lr"] / (1 - b1 ** st["step"]))
        return loss


class SpectralLayer(nn.Module):
    """Multiplies the lowest `modes` Fourier coefficients by learned complex matrices and
    zeroes the rest."""

    def __init__(self, channels_in, channels_out, modes):
        super().__init__()
        self.channels_out, self.modes = channels_out, modes
        scale = 1.0 / (channels_in * channels_out)
        self.weight = nn.Parameter(
            scale * torch.rand(channels_in, channels_out, modes, dtype=torch.cfloat))

    def forward(self, u):  # (batch, channels, points)
        points = u.shape[-1]
        spectrum = torch.fft.rfft(u)
        mixed = torch.zeros(u.shape[0], self.channels_out, points // 2 + 1, dtype=torch.cfloat,
                            device=u.device)
        mixed[:, :, :self.modes] = torch.einsum("bim,iom->bom", spectrum[:, :, :self.modes],
                                                self.weight)
        return torch.fft.irfft(mixed, n=points)


class FourierOperator(nn.Module):
    def __init__(self, modes, width, depth=4, hidden=128):
        super().__init__()
        self.lift = nn.Linear(2, width)
        self.spectral = nn.ModuleList(SpectralLayer(width, width, modes) for _ in range(depth))
        self.pointwise = nn.ModuleList(nn.Conv1d(width, width, 1) for _ in range(depth))
        self.head = nn.Linear(width, hidden)
        self.out = nn.Linear(hidden, 1)

    @staticmethod
    def with_coordinates(a):
        """(batch, points, 1) -> (batch, points, 2): the input next to its grid point."""
        b, points = a.shape[0], a.shape[1]
        x = torch.linspace(0, 1, points, device=a.device).reshape(1, points, 1).repeat(b, 1, 1)
        return torch.cat((a, x), dim=-1)

    def lifted(self, a):
        return self.lift(self.with_coordinates(a)).permute(0, 2, 1)

    def forward(self, a):
        h = self.lifted(a)
        last = len(self.spectral) - 1
        for k, (spec, point) in enumerate(zip(self.spectral, self.pointwise)):
            h = spec(h) + point(h)
            if k < last:
                h = F.gelu(h)
        return self.out(F.gelu(self.head(h.permute(0, 2, 1))))


# ------------------------------------------------------------------------------ the data

n_train, n_test, points, batch = 100, 20, 64, 20
fine = 512  # the inputs are made on a finer grid and subsampled to `points`


def make_pairs(n, seed=0):
    rng = np.random.default_rng(seed)
    x = np.arange(fine) / fine
    freqs = np.arange(1, 6)[:, None]
    amp = rng.normal(size=(n, 5, 1)) / freqs
    phase = rng.uniform(0, 2 * np.pi, size=(n, 5, 1))
    a = (amp * np.sin(2 * np.pi * freqs * x + phase)).sum(axis=1)
    k = np.arange(fine // 2 + 1)
    response = np.exp(-k**2 / 18.0 - 0.2j * np.pi * k)  # smoothing, then a shift
    u = np.fft.irfft(np.fft.rfft(a, axis=-1) * response, n=fine, axis=-1)
    step = fine // points
    return (torch.tensor(a[:, ::step], dtype=torch.float32),
            torch.tensor(u[:, ::step], dtype=torch.float32))


inputs, outputs = make_pairs(n_train + n_test)
a_train, u_train = inputs[:n_train].unsqueeze(-1), outputs[:n_train]
a_test, u_test = inputs[n_train:].unsqueeze(-1), outputs[n_train:]
train_loader = DataLoader(TensorDataset(a_train, u_train), batch_size=batch, shuffle=True)
test_loader = DataLoader(TensorDataset(a_test, u_test), batch_size=batch, shuffle=False)

# ------------------------------------------------------------------------------ training

model = FourierOperator(modes=8, width=16).to(device)
print("real parameters:", n_real_params(model))
optimizer = ComplexAdam(model.parameters(), lr=3e-3, weight_decay=1e-4)
scheduler = StepLR(optimizer, step_size=4, gamma=0.5)

losses, test_l2s = [], []  # (recorded)
for epoch in range(12):
    model.train()
    total_mse = total_l2 = 0.0
    for a, u in train_loader:
        a, u = a.to(device), u.to(device)
        optimizer.zero_grad()
        pred = model(a).squeeze(-1)
        loss = relative_l2(pred, u)
        loss.backward()
        optimizer.step()
        total_mse += F.mse_loss(pred.detach(), u).item()
        total_l2 += loss.item()
        losses.append(loss.item() / batch)  # (recorded)
    scheduler.step()
    model.eval()
    with torch.no_grad():
        held_out = sum(relative_l2(model(a).squeeze(-1), u).item() for a, u in test_loader)
    test_l2s.append(held_out / n_test)  # (recorded)
    print(epoch, total_mse / len(train_loader), total_l2 / n_train, test_l2s[-1])

# (recorded) one test sample at a time into a prediction table
pred = torch.zeros(n_test, points)
sample_l2s = []
with torch.no_grad():
    for i, (a, u) in enumerate(DataLoader(TensorDataset(a_test, u_test), batch_size=1)):
        pred[i] = model(a).reshape(-1)
        sample_l2s.append(relative_l2(pred[i:i + 1], u).item())


# (added) a fixed-weight operator (modes 3, width 4) with weights from NumPy, the complex
# spectral weights too: its output on fixed inputs, the loss, the gradients (the complex
# weights' are conjugate Wirtinger derivatives, as torch's), the lifted input's spectrum, and
# two optimizer steps with weight decay under StepLR
def fixed_run():
    rng = np.random.default_rng(1)
    net = FourierOperator(modes=3, width=4)
    with torch.no_grad():
        for p in net.parameters():
            shape = tuple(p.shape)
            if p.is_complex():
                value = rng.uniform(0, 0.1, shape) + 1j * rng.uniform(0, 0.1, shape)
                p.copy_(torch.tensor(value, dtype=torch.cfloat))
            else:
                p.copy_(torch.tensor(rng.normal(0, 0.4, shape), dtype=torch.float32))
    a = torch.tensor(rng.normal(size=(2, 16, 1)), dtype=torch.float32)
    u = torch.tensor(rng.normal(size=(2, 16)), dtype=torch.float32)
    out = {"complex": [n for n, p in net.named_parameters() if p.is_complex()],
           "losses": [], "lrs": []}
    opt = ComplexAdam(net.parameters(), lr=1e-2, weight_decay=1e-4)
    sched = StepLR(opt, step_size=1, gamma=0.5)
    for step in range(2):
        opt.zero_grad()
        y = net(a)
        loss = relative_l2(y.reshape(2, -1), u)
        loss.backward()
        if step == 0:
            out["out"] = y.detach().clone()
            out["x_ft"] = torch.fft.rfft(net.lifted(a)).detach()
            out["grads"] = {n: p.grad.clone() for n, p in net.named_parameters()}
        opt.step()
        sched.step()
        out["losses"].append(loss.item())
        out["lrs"].append(sched.get_last_lr()[0])
    out["weights"] = {n: p.detach().clone() for n, p in net.named_parameters()}
    out["exp_avg_sq"] = {n: opt.state[p]["exp_avg_sq"].clone() for n, p in net.named_parameters()}
    return out


fixed_results = fixed_run()  # (added)
