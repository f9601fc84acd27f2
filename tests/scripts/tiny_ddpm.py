"""A denoising diffusion model (DDPM) that learns to draw 2-D points of the two moons, written
for these tests in the way small DDPM scripts for PyTorch (tanelp's tiny-diffusion among them)
are commonly written (modelled on the API usage of tiny-diffusion's ddpm.py, not a copy of it):

- time/coordinate embeddings: sinusoidal (``torch.Tensor([...])``, ``log``, ``exp``,
  ``arange``, ``sin``/``cos`` concatenated), linear, learnable (``nn.Linear`` on ``.float()``),
  zero and identity; an MLP of residual ``nn.GELU`` blocks;
- a noise schedule from ``torch.linspace(dtype=)`` (linear or quadratic ``** 2``),
  ``torch.cumprod(..., axis=0)``, ``F.pad(..., value=1.)``, ``torch.sqrt``, ``clip``, indexing
  by a timestep tensor, ``randn_like`` in the reverse step;
- ``TensorDataset`` of sklearn moons, ``DataLoader(shuffle=True, drop_last=True)``, AdamW,
  ``nn.utils.clip_grad_norm_``, ``F.mse_loss``, sampling under ``no_grad``;
- ``torch.save`` of the state dict, ``np.save`` of losses and frames, argparse from ``[]``,
  small stand-ins for ``tqdm`` and ``matplotlib.pyplot`` (neither is installed here);
- NumPy-drawn fixed weights whose schedule tables, gradients and AdamW steps torch must match.
"""
import argparse
import os
import tempfile

import numpy as np
from sklearn.datasets import make_moons

import jitgrad as torch
from jitgrad import nn
from jitgrad.nn import functional as F
from jitgrad.utils.data import DataLoader, TensorDataset


class tqdm:  # noqa: N801 (stand-in for tqdm.auto.tqdm: counts progress, keeps desc/postfix)
    bars = []

    def __init__(self, iterable=None, total=None):
        self.iterable, self.total = iterable, total
        self.n, self.desc, self.postfix = 0, "", {}
        type(self).bars.append(self)

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.n += 1

    def update(self, k=1):
        self.n += k

    def set_description(self, text):
        self.desc = text

    def set_postfix(self, **fields):
        self.postfix = fields

    def close(self):
        pass


class plt:  # noqa: N801 (stand-in for matplotlib.pyplot: remembers saved file names)
    saved = []

    @classmethod
    def savefig(cls, path):
        cls.saved.append(os.path.basename(path))

    @staticmethod
    def scatter(xs, ys):
        assert len(xs) == len(ys)

    figure = xlim = ylim = close = staticmethod(lambda *a, **k: None)


# ---- embeddings of a scalar per row ----
class Sinusoidal(nn.Module):
    def __init__(self, size, scale=1.0):
        super().__init__()
        self.size, self.scale = size, scale

    def forward(self, v):
        half = self.size // 2
        rate = torch.log(torch.Tensor([10000.0])) / (half - 1)
        freqs = torch.exp(-rate * torch.arange(half))
        angles = (v * self.scale).unsqueeze(-1) * freqs.unsqueeze(0)
        return torch.cat((torch.sin(angles), torch.cos(angles)), dim=-1)

    def __len__(self):
        return self.size


class Scaled(nn.Module):
    def __init__(self, size, scale=1.0):
        super().__init__()
        self.size, self.scale = size, scale

    def forward(self, v):
        return (v / self.size * self.scale).unsqueeze(-1)

    def __len__(self):
        return 1


class Learned(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.size = size
        self.proj = nn.Linear(1, size)

    def forward(self, v):
        return self.proj(v.unsqueeze(-1).float() / self.size)

    def __len__(self):
        return self.size


class Passthrough(nn.Module):
    def __init__(self, times=1):
        super().__init__()
        self.times = times  # 0 turns the embedding off

    def forward(self, v):
        return v.unsqueeze(-1) * self.times

    def __len__(self):
        return 1


def embedding(kind, size, scale=1.0):
    makers = {
        "sinusoidal": lambda: Sinusoidal(size, scale),
        "linear": lambda: Scaled(size, scale),
        "learnable": lambda: Learned(size),
        "zero": lambda: Passthrough(0),
        "identity": lambda: Passthrough(1),
    }
    if kind not in makers:
        raise ValueError(f"no embedding called {kind!r}")
    return makers[kind]()


class GeluResidual(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(width, width)
        self.gelu = nn.GELU()

    def forward(self, h):
        return h + self.gelu(self.lin(h))


class Denoiser(nn.Module):
    """Predicts the noise in a 2-D point from both coordinates and the timestep."""

    def __init__(self, width=128, depth=3, emb=128, t_kind="sinusoidal", x_kind="sinusoidal"):
        super().__init__()
        self.t_emb = embedding(t_kind, emb)
        self.x_emb = embedding(x_kind, emb, scale=25.0)
        self.y_emb = embedding(x_kind, emb, scale=25.0)
        width_in = len(self.t_emb) + len(self.x_emb) + len(self.y_emb)
        self.net = nn.Sequential(nn.Linear(width_in, width), nn.GELU(),
                                 *[GeluResidual(width) for _ in range(depth)],
                                 nn.Linear(width, 2))

    def forward(self, pts, t):
        feats = (self.x_emb(pts[:, 0]), self.y_emb(pts[:, 1]), self.t_emb(t))
        return self.net(torch.cat(feats, dim=-1))


def column(table, t):
    return table[t].reshape(-1, 1)


class Schedule:
    def __init__(self, num_timesteps=1000, beta_start=1e-4, beta_end=0.02, kind="linear"):
        self.num_timesteps = num_timesteps
        if kind == "quadratic":
            root = torch.linspace(beta_start ** 0.5, beta_end ** 0.5, num_timesteps,
                                  dtype=torch.float32)
            self.betas = root ** 2
        else:
            self.betas = torch.linspace(beta_start, beta_end, num_timesteps, dtype=torch.float32)
        self.alphas = 1.0 - self.betas
        self.alphas_cumprod = torch.cumprod(self.alphas, axis=0)
        self.alphas_cumprod_prev = F.pad(self.alphas_cumprod[:-1], (1, 0), value=1.)
        abar, abar_prev = self.alphas_cumprod, self.alphas_cumprod_prev
        self.sqrt_abar = abar ** 0.5
        self.sqrt_one_minus_abar = (1 - abar) ** 0.5
        self.sqrt_inv_abar = torch.sqrt(1 / abar)
        self.sqrt_inv_alphas_cumprod_minus_one = torch.sqrt(1 / abar - 1)
        self.posterior_mean_coef1 = self.betas * torch.sqrt(abar_prev) / (1.0 - abar)
        self.posterior_mean_coef2 = (1.0 - abar_prev) * torch.sqrt(self.alphas) / (1.0 - abar)

    def __len__(self):
        return self.num_timesteps

    def add_noise(self, x0, eps, t):
        return column(self.sqrt_abar, t) * x0 + column(self.sqrt_one_minus_abar, t) * eps

    def variance(self, t):
        if t == 0:
            return 0
        v = self.betas[t] * (1.0 - self.alphas_cumprod_prev[t]) / (1.0 - self.alphas_cumprod[t])
        return v.clip(1e-20)

    def step(self, eps_hat, t, x_t):
        x0_hat = column(self.sqrt_inv_abar, t) * x_t \
            - column(self.sqrt_inv_alphas_cumprod_minus_one, t) * eps_hat
        mean = column(self.posterior_mean_coef1, t) * x0_hat \
            + column(self.posterior_mean_coef2, t) * x_t
        if t > 0:
            mean = mean + self.variance(t) ** 0.5 * torch.randn_like(eps_hat)
        return mean


def moons_dataset(n=8000):
    pts, _ = make_moons(n_samples=n, random_state=42, noise=0.03)
    pts = (pts + 0.3) * np.array([2.0, 3.0]) - 1
    return TensorDataset(torch.from_numpy(pts.astype(np.float32)))


def compare_with_torch():
    """Schedule tables, an embedding, two AdamW steps with clipping and a final reverse step
    (t = 0 adds no noise), all from NumPy-drawn weights."""
    sched = Schedule(num_timesteps=16, kind="quadratic")
    out = {k: getattr(sched, k).clone() for k in (
        "betas", "alphas_cumprod", "alphas_cumprod_prev", "sqrt_inv_alphas_cumprod_minus_one",
        "posterior_mean_coef1", "posterior_mean_coef2")}
    out["variances"] = [float(sched.variance(t)) for t in range(16)]
    net = Denoiser(width=16, depth=2, emb=8)
    other = Denoiser(width=8, depth=1, emb=4, t_kind="learnable", x_kind="linear")
    gen = np.random.default_rng(0)
    everything = list(net.parameters()) + list(other.parameters())
    with torch.no_grad():
        for w in everything:
            w.copy_(torch.tensor(gen.normal(0.0, 0.3, tuple(w.shape)), dtype=torch.float32))
    pts = torch.from_numpy(moons_dataset(8).tensors[0].numpy())
    eps = torch.tensor(gen.normal(size=(8, 2)), dtype=torch.float32)
    ts = torch.tensor([0, 3, 5, 15, 7, 1, 9, 12]).long()
    out["embedding"] = net.x_emb(pts[:, 0])
    noisy = sched.add_noise(pts, eps, ts)
    out["noisy"] = noisy
    opt = torch.optim.AdamW(everything, lr=1e-2)
    out["steps"] = []
    for k in range(2):
        err = F.mse_loss(net(noisy, ts), eps) + F.mse_loss(other(noisy, ts), eps)
        err.backward()
        if k == 0:
            out["grads"] = {n: w.grad.clone() for n, w in net.named_parameters()}
            out["learnable_grads"] = {n: w.grad.clone() for n, w in other.named_parameters()}
        total_norm = nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
        out["steps"].append((err.item(), total_norm.item()))
    out["after"] = {k: v.clone() for k, v in net.state_dict().items()}
    with torch.no_grad():
        t0 = torch.from_numpy(np.repeat(0, 8)).long()
        out["last_step"] = sched.step(net(noisy, t0), t0[0], noisy)
    return out


cli = argparse.ArgumentParser()
cli.add_argument("--name", default="moons-run")
cli.add_argument("--batch", type=int, default=32)
cli.add_argument("--eval_batch", type=int, default=200)
cli.add_argument("--epochs", type=int, default=4)
cli.add_argument("--lr", type=float, default=3e-3)
cli.add_argument("--timesteps", type=int, default=16)
cli.add_argument("--schedule", default="linear", choices=["linear", "quadratic"])
cli.add_argument("--width", type=int, default=64)
cli.add_argument("--points", type=int, default=2560)
cfg = cli.parse_args([])

torch.manual_seed(0)
fixed_results = compare_with_torch()

loader = DataLoader(moons_dataset(cfg.points), batch_size=cfg.batch, shuffle=True,
                    drop_last=True)
model = Denoiser(width=cfg.width, depth=3, emb=cfg.width)
noise_scheduler = Schedule(num_timesteps=cfg.timesteps, kind=cfg.schedule)
optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)

losses, frames, seen = [], [], 0
for epoch in range(cfg.epochs):
    model.train()
    bar = tqdm(total=len(loader))
    bar.set_description(f"Epoch {epoch}")
    for (clean,) in loader:
        eps = torch.randn(clean.shape)
        ts = torch.randint(0, noise_scheduler.num_timesteps, (clean.shape[0],)).long()
        err = F.mse_loss(model(noise_scheduler.add_noise(clean, eps, ts), ts), eps)
        err.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(err.detach().item())
        bar.update(1)
        bar.set_postfix(loss=losses[-1], step=seen)
        seen += 1
    bar.close()

    model.eval()  # draw a frame of samples after every epoch
    pts = torch.randn(cfg.eval_batch, 2)
    for t in tqdm(list(reversed(range(len(noise_scheduler))))):
        t_vec = torch.from_numpy(np.repeat(t, cfg.eval_batch)).long()
        with torch.no_grad():
            eps_hat = model(pts, t_vec)
        pts = noise_scheduler.step(eps_hat, t_vec[0], pts)
    frames.append(pts.numpy())

outdir = os.path.join(tempfile.mkdtemp(), "runs", cfg.name)
os.makedirs(os.path.join(outdir, "images"), exist_ok=True)
torch.save(model.state_dict(), os.path.join(outdir, "model.pth"))
frames = np.stack(frames)
for k, frame in enumerate(frames):
    plt.figure(figsize=(10, 10))
    plt.scatter(frame[:, 0], frame[:, 1])
    plt.xlim(-6, 6)
    plt.ylim(-6, 6)
    plt.savefig(os.path.join(outdir, "images", f"{k:04}.png"))
    plt.close()
np.save(os.path.join(outdir, "loss.npy"), np.array(losses))
np.save(os.path.join(outdir, "frames.npy"), frames)
