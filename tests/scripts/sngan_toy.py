# ruff: noqa: N812 (the usual F alias)
"""An SN-GAN with the hinge loss on the 2-d eight-gaussians ring, written for these tests the
way SN-GAN reimplementations (Miyato et al.'s chainer code ported to PyTorch, mimicry-style
toy scripts) write torch code (not a copy of any):

- a ReLU MLP generator with ``nn.BatchNorm1d``, a LeakyReLU discriminator whose linear layers
  are wrapped by ``nn.utils.parametrizations.spectral_norm`` (one by the older hook,
  ``nn.utils.spectral_norm``), checked against ``torch.linalg.matrix_norm(ord=2)`` /
  ``torch.linalg.svdvals`` and against a hand-written ``W / (u @ W @ v)`` with detached
  power-iteration vectors;
- ``parametrize.cached()``, ``parametrize.is_parametrized``, ``remove_parametrizations`` with
  ``leave_parametrized=True``, eval mode (no power-iteration step);
- the hinge loss (``F.relu(1 - real).mean() + F.relu(1 + fake).mean()``, generator
  ``-fake.mean()``), ``n_dis`` critic steps, Adam with betas (0, 0.9), ``LinearLR`` decay,
  ``requires_grad_(False)`` on D for the generator's step, and an EMA generator by
  ``optim.swa_utils.AveragedModel`` with ``get_ema_multi_avg_fn``;
- mode coverage and sample quality measured with ``torch.cdist``.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn, optim
from jitgrad.nn.utils import parametrize
from jitgrad.nn.utils.parametrizations import spectral_norm

torch.manual_seed(0)
fixed_results = {}

SCALE, STD, N_MODES = 2.0, 0.02, 8
CENTERS = torch.tensor([[SCALE * math.cos(2 * math.pi * i / N_MODES),
                         SCALE * math.sin(2 * math.pi * i / N_MODES)] for i in range(N_MODES)])


def sample_ring(n):
    modes = torch.randint(0, N_MODES, (n,))
    return CENTERS[modes] + STD * torch.randn(n, 2)


class Generator(nn.Module):
    def __init__(self, z_dim=16, hidden=128):
        super().__init__()
        self.z_dim = z_dim
        self.net = nn.Sequential(
            nn.Linear(z_dim, hidden), nn.BatchNorm1d(hidden), nn.ReLU(inplace=True),
            nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(inplace=True),
            nn.Linear(hidden, 2),
        )

    def forward(self, z):
        return self.net(z)

    def sample(self, n):
        return self(torch.randn(n, self.z_dim))


class Discriminator(nn.Module):
    def __init__(self, hidden=128):
        super().__init__()
        self.l1 = spectral_norm(nn.Linear(2, hidden))
        self.l2 = spectral_norm(nn.Linear(hidden, hidden))
        self.l3 = nn.utils.spectral_norm(nn.Linear(hidden, 1))  # the older hook form
        self.act = nn.LeakyReLU(0.1)

    def forward(self, x):
        h = self.act(self.l1(x))
        h = self.act(self.l2(h))
        return self.l3(h).squeeze(1)


def d_hinge_loss(real_out, fake_out):
    return F.relu(1.0 - real_out).mean() + F.relu(1.0 + fake_out).mean()


def g_hinge_loss(fake_out):
    return -fake_out.mean()


def sigma_of(module):
    """The largest singular value of the weight the layer uses now."""
    return torch.linalg.matrix_norm(module.weight.detach(), ord=2).item()


# ----------------------------------------------------- fixed-weight checks (recorded)

G, D = Generator(), Discriminator()
fixed_results["u_init"] = D.l2.parametrizations.weight[0]._u.clone()
fixed_results["hook_u_init"] = D.l3.weight_u.clone()

# power iteration: one step per training forward; eval forwards leave u alone
x_fixed = sample_ring(64)
z_fixed = torch.randn(64, G.z_dim)
sigma_steps = []
for _ in range(20):
    D(x_fixed)
    sigma_steps.append(sigma_of(D.l2))
D.eval()
u_before = D.l2.parametrizations.weight[0]._u.clone()
eval_out = D(x_fixed)
eval_keeps_u = torch.equal(D.l2.parametrizations.weight[0]._u, u_before)
D.train()
fixed_results["eval_out"] = eval_out.detach()
raw_sigma = torch.linalg.svdvals(D.l2.parametrizations.weight.original.detach())[0].item()

# the parametrized weight by hand: W / (u^T W v), u and v detached
with torch.no_grad():
    D(x_fixed)  # one more power-iteration step
u = D.l2.parametrizations.weight[0]._u.clone()
v = D.l2.parametrizations.weight[0]._v.clone()
D.eval()
W = D.l2.parametrizations.weight.original
manual_weight = W / torch.dot(u, torch.mv(W, v))
manual_difference = (manual_weight - D.l2.weight).abs().max().item()
(grad_manual,) = torch.autograd.grad((manual_weight**2).sum() + manual_weight[0, 0], W)
(grad_param,) = torch.autograd.grad((D.l2.weight**2).sum() + D.l2.weight[0, 0], W)
fixed_results["sn_weight_grad"] = grad_param
manual_grad_difference = (grad_manual - grad_param).abs().max().item()

# cached(): the parametrization runs once for several uses of the weight
calls = []
handle = D.l2.parametrizations.weight[0].register_forward_hook(lambda *a: calls.append(1))
with parametrize.cached():
    w_a, w_b = D.l2.weight, D.l2.weight
cached_same, cached_calls = w_a is w_b, len(calls)
uncached_a, uncached_b = D.l2.weight, D.l2.weight
uncached_calls = len(calls) - cached_calls
handle.remove()
D.train()

# the hinge losses and their gradients on fixed weights
real_out, fake_out = D(x_fixed), D(G(z_fixed).detach())
d_loss = d_hinge_loss(real_out, fake_out)
D.zero_grad()
d_loss.backward()
fixed_results["real_out"] = real_out.detach()
fixed_results["fake_out"] = fake_out.detach()
fixed_results["d_loss"] = d_loss.item()
fixed_results["d_grads"] = {name: p.grad.clone() for name, p in D.named_parameters()}
D.requires_grad_(False)
fake = G(z_fixed)
g_loss = g_hinge_loss(D(fake))
G.zero_grad()
g_loss.backward()
D.requires_grad_(True)
fixed_results["g_loss"] = g_loss.item()
fixed_results["g_grads"] = {name: p.grad.clone() for name, p in G.named_parameters()
                            if name.endswith("weight")}
frozen_d_has_no_grad_from_g = all(torch.equal(p.grad, fixed_results["d_grads"][name])
                                  for name, p in D.named_parameters())
fixed_results["bn_running_mean"] = G.net[1].running_mean.clone()

# ------------------------------------------------------------------------------ training

torch.manual_seed(1)
G, D = Generator(), Discriminator()
g_ema = optim.swa_utils.AveragedModel(G, multi_avg_fn=optim.swa_utils.get_ema_multi_avg_fn(0.99),
                                      use_buffers=True)
iters, n_dis, batch = 1000, 1, 128
opt_g = optim.Adam(G.parameters(), lr=2e-3, betas=(0.0, 0.9))
opt_d = optim.Adam(D.parameters(), lr=2e-3, betas=(0.0, 0.9))
sched_g = optim.lr_scheduler.LinearLR(opt_g, start_factor=1.0, end_factor=0.1, total_iters=iters)
sched_d = optim.lr_scheduler.LinearLR(opt_d, start_factor=1.0, end_factor=0.1, total_iters=iters)

d_losses, g_losses, d_accuracy, sigmas = [], [], [], []
for it in range(iters):
    for _ in range(n_dis):
        real = sample_ring(batch)
        with torch.no_grad():
            fake = G.sample(batch)
        real_out, fake_out = D(real), D(fake)
        loss_d = d_hinge_loss(real_out, fake_out)
        opt_d.zero_grad()
        loss_d.backward()
        opt_d.step()
    d_losses.append(loss_d.item())
    d_accuracy.append(torch.cat([real_out > 0, fake_out < 0]).float().mean().item())

    D.requires_grad_(False)
    loss_g = g_hinge_loss(D(G.sample(batch)))
    opt_g.zero_grad()
    loss_g.backward()
    opt_g.step()
    D.requires_grad_(True)
    g_losses.append(loss_g.item())
    g_ema.update_parameters(G)
    sched_g.step()
    sched_d.step()
    sigmas.append(sigma_of(D.l2))
    if it % 250 == 0 or it == iters - 1:
        print(f"{it}: d {loss_d.item():.3f} g {loss_g.item():.3f} acc {d_accuracy[-1]:.2f} "
              f"sigma {sigmas[-1]:.4f}")


def ring_metrics(points):
    """The fraction within 10 std of a mode, and how many modes got at least 2% of points."""
    distances = torch.cdist(points, CENTERS)
    nearest, mode = distances.min(dim=1)
    quality = (nearest < 10 * STD).float().mean().item()
    counts = torch.bincount(mode[nearest < 0.5], minlength=N_MODES)
    return quality, int((counts >= 0.02 * len(points)).sum())


G.eval()
g_ema.eval()
with torch.no_grad():
    torch.manual_seed(2)
    z_eval = torch.randn(2000, G.z_dim)
    quality, modes_covered = ring_metrics(G(z_eval))
    ema_quality, ema_modes = ring_metrics(g_ema(z_eval))
    untrained_quality, untrained_modes = ring_metrics(Generator().eval()(z_eval))
final_lr = opt_g.param_groups[0]["lr"]

# remove the parametrization, keeping the normalized weight
weight_before_removal = D.l1.weight.detach().clone()
D.eval()
parametrize.remove_parametrizations(D.l1, "weight", leave_parametrized=True)
removed_plain = not parametrize.is_parametrized(D.l1) and isinstance(D.l1.weight, nn.Parameter)
nn.utils.remove_spectral_norm(D.l3)
print(f"quality {quality:.3f} ({untrained_quality:.3f} untrained), modes {modes_covered}, "
      f"ema {ema_quality:.3f}/{ema_modes}")
