# ruff: noqa: N812 (the usual F alias)
"""Energy-based models and score matching on 2-D toy data, written for these tests the way
public PyTorch code of the kind writes it (JEM/IGEBM-style SGLD with a replay buffer, the
"deep energy models" tutorial's in-place Langevin loop, and the denoising / sliced score
matching losses of the score-based generative modelling code; not a copy of any of them):

- toy data: a seeded ring of eight gaussians (``torch.cos``/``torch.sin`` of ``torch.arange``
  centres, ``torch.randint`` picks) and two moons (``torch.rand`` angles, ``torch.cat``);
- an MLP energy ``E(x)`` (``nn.Sequential`` with ``nn.SiLU``) and an MLP score net;
- SGLD through ``torch.autograd.grad(energy.sum(), x)`` with ``x.requires_grad_()``,
  ``x.detach()``, ``torch.randn_like`` and ``clamp_``; the same chain written in place on
  ``.data`` with ``.backward()`` on the input, ``inp.grad.data.clamp_`` and
  ``inp.grad.zero_()`` while the parameters are frozen by ``requires_grad_(False)``;
- a replay buffer: 95 % of the chains restart from stored samples (``torch.randint``
  indices, ``torch.rand`` mask, ``torch.where``), the rest from uniform noise, and the
  buffer is refreshed with ``index_copy_``; contrastive divergence with an L2 energy
  penalty, ``Adam``;
- denoising score matching (a single sigma and a noise-conditional geometric ladder of sigmas
  weighted by sigma**2) and annealed Langevin sampling from the trained score net;
- sliced score matching (and its variance-reduced form) with ``create_graph=True`` and a
  second ``torch.autograd.grad`` through the first, both on a score net and on the score
  ``-dE/dx`` of an energy (a third derivative reaches the parameters); the exact score
  matching objective with the Jacobian's trace, dimension by dimension, as a check;
  ``gradcheck``/``gradgradcheck`` of the energy in float64.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import copy
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn

torch.manual_seed(0)
fixed_results = {}


# ------------------------------------------------------------------------------ data


def ring_of_gaussians(n, n_modes=8, radius=2.0, std=0.1, generator=None):
    angles = 2 * math.pi * torch.arange(n_modes, dtype=torch.float32) / n_modes
    centres = radius * torch.stack([torch.cos(angles), torch.sin(angles)], dim=1)
    which = torch.randint(0, n_modes, (n,), generator=generator)
    noise = torch.randn(n, 2, generator=generator)
    return centres[which] + std * noise, which


def two_moons(n, noise=0.05):
    n_out = n // 2
    n_in = n - n_out
    t_out = torch.rand(n_out) * math.pi
    t_in = torch.rand(n_in) * math.pi
    outer = torch.stack([torch.cos(t_out), torch.sin(t_out)], dim=1)
    inner = torch.stack([1 - torch.cos(t_in), 0.5 - torch.sin(t_in)], dim=1)
    x = torch.cat([outer, inner], dim=0)
    x = x + noise * torch.randn_like(x)
    return (x - torch.tensor([0.5, 0.25])) * 1.5  # roughly centred, in [-2.5, 2.5]


# ----------------------------------------------------------------------------- models


class EnergyNet(nn.Module):
    def __init__(self, dim=2, hidden=64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(dim, hidden), nn.SiLU(),
            nn.Linear(hidden, hidden), nn.SiLU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x):
        return self.net(x).squeeze(-1)


class ScoreNet(nn.Module):
    """s(x) ~ grad log p(x); with ``n_sigmas`` it is conditioned on the noise level (NCSN)."""

    def __init__(self, dim=2, hidden=64, n_sigmas=0):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, dim)
        self.embed = nn.Embedding(n_sigmas, hidden) if n_sigmas else None

    def forward(self, x, labels=None):
        h = F.softplus(self.fc1(x))
        if self.embed is not None:
            h = h * self.embed(labels)  # a gain per noise level
        h = F.softplus(self.fc2(h))
        return self.out(h)


# ------------------------------------------------------------------------------ SGLD


def sgld(energy_fn, x, n_steps, step_size, noise_std, clamp=3.0):
    """x_{k+1} = x_k - step/2 grad E(x_k) + noise * N(0, I), through ``autograd.grad``."""
    x = x.clone().detach()
    for _ in range(n_steps):
        x.requires_grad_(True)
        energy = energy_fn(x)
        grad_x = torch.autograd.grad(energy.sum(), x)[0]
        x = x.detach() - 0.5 * step_size * grad_x + noise_std * torch.randn_like(x)
        x.clamp_(-clamp, clamp)
    return x.detach()


def sgld_in_place(model, inp, n_steps, step_size, noise_std, grad_clip=0.03, clamp=3.0):
    """The same chain, tutorial style: frozen parameters, ``.backward()`` on the input, the
    input's gradient clipped and applied to ``.data`` in place."""
    is_training = model.training
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    inp = inp.clone()
    inp.requires_grad = True
    noise = torch.randn(inp.shape, device=inp.device)
    for _ in range(n_steps):
        noise.normal_(0, noise_std)
        inp.data.add_(noise.data)
        inp.data.clamp_(min=-clamp, max=clamp)
        out = model(inp)
        out.sum().backward()
        inp.grad.data.clamp_(-grad_clip, grad_clip)
        inp.data.add_(-step_size * inp.grad.data)
        inp.grad.detach_()
        inp.grad.zero_()
        inp.data.clamp_(min=-clamp, max=clamp)
    for p in model.parameters():
        p.requires_grad_(True)
    model.train(is_training)
    return inp.detach()


class ReplayBuffer:
    def __init__(self, size, dim=2, bound=3.0, reinit_freq=0.05):
        self.bound = bound
        self.reinit_freq = reinit_freq
        self.buffer = self.uniform(size, dim)

    def uniform(self, n, dim=2):
        return (torch.rand(n, dim) * 2 - 1) * self.bound

    def sample(self, n):
        idx = torch.randint(0, self.buffer.size(0), (n,))
        stored = self.buffer[idx]
        fresh = self.uniform(n, stored.size(1))
        reinit = (torch.rand(n) < self.reinit_freq).unsqueeze(1)
        return torch.where(reinit, fresh, stored), idx

    def push(self, samples, idx):
        self.buffer.index_copy_(0, idx, samples.detach())


# ------------------------------------------------------------------- score matching


def dsm_loss(score_net, x, sigma):
    """Denoising score matching: s(x + sigma z) ~ -z / sigma."""
    noise = torch.randn_like(x) * sigma
    perturbed = x + noise
    target = -noise / sigma ** 2
    scores = score_net(perturbed)
    return 0.5 * ((scores - target) ** 2).sum(dim=-1).mean()


def anneal_dsm_loss(score_net, x, sigmas, anneal_power=2.0):
    labels = torch.randint(0, len(sigmas), (x.shape[0],), device=x.device)
    used_sigmas = sigmas[labels].view(x.shape[0], *([1] * len(x.shape[1:])))
    perturbed = x + torch.randn_like(x) * used_sigmas
    target = -1 / (used_sigmas ** 2) * (perturbed - x)
    scores = score_net(perturbed, labels)
    target = target.view(target.shape[0], -1)
    scores = scores.view(scores.shape[0], -1)
    loss = 0.5 * ((scores - target) ** 2).sum(dim=-1) * used_sigmas.squeeze() ** anneal_power
    return loss.mean(dim=0)


def sliced_score_matching(score_net, samples, n_particles=1, variance_reduced=False):
    dup = samples.unsqueeze(0).expand(n_particles, *samples.shape).contiguous()
    dup = dup.view(-1, *samples.shape[1:])
    dup.requires_grad_(True)
    vectors = torch.randn_like(dup)
    vectors = vectors / torch.norm(vectors, dim=-1, keepdim=True)
    grad1 = score_net(dup)
    gradv = torch.sum(grad1 * vectors)
    if variance_reduced:
        loss1 = torch.sum(grad1 * grad1, dim=-1) / 2.0
    else:
        loss1 = torch.sum(grad1 * vectors, dim=-1) ** 2 * 0.5
    grad2 = torch.autograd.grad(gradv, dup, create_graph=True)[0]
    loss2 = torch.sum(vectors * grad2, dim=-1)
    loss1 = loss1.view(n_particles, -1).mean(dim=0)
    loss2 = loss2.view(n_particles, -1).mean(dim=0)
    loss = loss1 + loss2
    return loss.mean(), loss1.mean(), loss2.mean()


def energy_score(energy_net):
    """The model's score, -dE/dx, kept differentiable (for score matching on an energy)."""
    def score(x):
        energy = energy_net(x)
        return -torch.autograd.grad(energy.sum(), x, create_graph=True)[0]
    return score


def exact_score_matching(score_net, samples):
    """0.5 |s|^2 + tr(ds/dx), the trace one input dimension at a time."""
    x = samples.detach().requires_grad_(True)
    s = score_net(x)
    trace = torch.zeros(x.shape[0], dtype=x.dtype)
    for i in range(x.shape[1]):
        trace = trace + torch.autograd.grad(s[:, i].sum(), x, create_graph=True)[0][:, i]
    return (0.5 * (s ** 2).sum(dim=-1) + trace).mean()


@torch.no_grad()
def annealed_langevin(score_net, x, sigmas, n_steps_each=20, step_lr=2e-3):
    for c, sigma in enumerate(sigmas):
        labels = torch.full((x.shape[0],), c, dtype=torch.long)
        step_size = step_lr * (sigma / sigmas[-1]) ** 2
        for _ in range(n_steps_each):
            noise = torch.randn_like(x) * torch.sqrt(step_size * 2)
            grad = score_net(x, labels)
            x = x + step_size * grad + noise
    return x


# ----------------------------------------------------- fixed-weight checks (recorded)

data_gen = torch.Generator().manual_seed(1234)
ring, ring_modes = ring_of_gaussians(512, generator=data_gen)
fixed_results["ring_head"] = ring[:6]
moons = two_moons(512)
fixed_results["moons_head"] = moons[:6]

torch.manual_seed(1)
energy_net = EnergyNet()
probe = torch.randn(16, 2)
fixed_results["energy"] = energy_net(probe).detach()
x_probe = probe.clone().requires_grad_()
e = energy_net(x_probe)
(grad_x,) = torch.autograd.grad(e.sum(), x_probe, create_graph=True)
fixed_results["energy_grad_x"] = grad_x.detach()
# the Hessian's diagonal through a second grad, and a parameter gradient of |dE/dx|^2
hess_diag = torch.stack(
    [torch.autograd.grad(grad_x[:, i].sum(), x_probe, retain_graph=True)[0][:, i]
     for i in range(2)], dim=1)
fixed_results["energy_hess_diag"] = hess_diag
grad_penalty = grad_x.pow(2).sum(dim=1).mean()
# (the last bias shifts E, not dE/dx: it is unused, and its gradient None)
param_grads = torch.autograd.grad(grad_penalty, list(energy_net.parameters()), allow_unused=True)
unused_grad_names = [n for (n, _), g in zip(energy_net.named_parameters(), param_grads)
                     if g is None]
fixed_results["grad_penalty"] = grad_penalty.item()
fixed_results["grad_penalty_param_grads"] = {
    n: g for (n, _), g in zip(energy_net.named_parameters(), param_grads) if g is not None}

# float64 gradcheck and gradgradcheck of the energy (what SSM on an energy differentiates)
energy64 = copy.deepcopy(energy_net).double()
x64 = torch.randn(3, 2, dtype=torch.float64, requires_grad=True)
gradchecks = {
    "grad": torch.autograd.gradcheck(energy64, (x64,)),
    "gradgrad": torch.autograd.gradgradcheck(energy64, (x64,)),
    "score_grad": torch.autograd.gradcheck(energy_score(energy64), (x64,)),
}

# SGLD two ways from the same start with the same noise stream
torch.manual_seed(2)
start = torch.rand(8, 2) * 4 - 2
torch.manual_seed(3)
chain = sgld(energy_net, start, n_steps=10, step_size=0.1, noise_std=0.01)
fixed_results["sgld_chain"] = chain
torch.manual_seed(3)
chain_in_place = sgld_in_place(energy_net, start, n_steps=10, step_size=0.05,
                               noise_std=0.01, grad_clip=10.0)
fixed_results["sgld_in_place_chain"] = chain_in_place
frozen_restored = all(p.requires_grad for p in energy_net.parameters())
params_untouched_by_sampling = all(p.grad is None for p in energy_net.parameters())

# score-matching losses on a fixed score net, and their parameter gradients
torch.manual_seed(4)
score_net = ScoreNet()
batch = ring[:64]
torch.manual_seed(5)
dsm = dsm_loss(score_net, batch, sigma=0.3)
dsm.backward()
fixed_results["dsm_loss"] = dsm.item()
fixed_results["dsm_grad_fc1"] = score_net.fc1.weight.grad.clone()
score_net.zero_grad()

torch.manual_seed(6)
ssm, ssm_1, ssm_2 = sliced_score_matching(score_net, batch, n_particles=2)
ssm.backward()
fixed_results["ssm"] = [ssm.item(), ssm_1.item(), ssm_2.item()]
fixed_results["ssm_grad_fc1"] = score_net.fc1.weight.grad.clone()
fixed_results["ssm_grad_out_bias"] = score_net.out.bias.grad.clone()
score_net.zero_grad()

torch.manual_seed(6)
ssm_vr, _, _ = sliced_score_matching(score_net, batch, n_particles=2, variance_reduced=True)
fixed_results["ssm_vr"] = ssm_vr.item()

# sliced score matching on an energy's score: the parameters get a third derivative
torch.manual_seed(7)
ssm_energy, _, _ = sliced_score_matching(energy_score(energy_net), batch[:32])
ssm_energy_grads = torch.autograd.grad(ssm_energy, list(energy_net.parameters()),
                                       allow_unused=True, materialize_grads=True)
fixed_results["ssm_energy"] = ssm_energy.item()
fixed_results["ssm_energy_grads"] = {
    n: g for (n, _), g in zip(energy_net.named_parameters(), ssm_energy_grads)}

# the exact objective equals the sliced one averaged over many unit directions times d
esm = exact_score_matching(score_net, batch)
fixed_results["esm"] = esm.item()
torch.manual_seed(8)
ssm_many, _, _ = sliced_score_matching(score_net, batch, n_particles=400, variance_reduced=True)
# E[v v^T] = I/d for unit v: d * (loss2 part) + 0.5|s|^2 is the exact objective
ssm_many_detached = ssm_many.item()
with torch.no_grad():
    half_sq_norm = (0.5 * score_net(batch).pow(2).sum(-1)).mean().item()
esm_from_ssm = half_sq_norm + 2 * (ssm_many_detached - half_sq_norm)
esm_gap = abs(esm_from_ssm - esm.item())

# ------------------------------------------------------------------------------ training
# (1) an EBM on the ring with SGLD chains from a replay buffer, contrastive divergence

grid = torch.stack(torch.meshgrid(torch.linspace(-3, 3, 41), torch.linspace(-3, 3, 41),
                                  indexing="ij"), dim=-1).view(-1, 2)
cell_area = (6 / 40) ** 2


@torch.no_grad()
def grid_nll(model, data):
    """-log p(data) with Z from a Riemann sum of exp(-E) over the grid."""
    log_z = torch.logsumexp(-model(grid), dim=0) + math.log(cell_area)
    return (model(data).mean() + log_z).item()


torch.manual_seed(10)
ebm = EnergyNet()
ebm_opt = torch.optim.Adam(ebm.parameters(), lr=1e-3, betas=(0.0, 0.999))
buffer = ReplayBuffer(2000)
alpha = 0.1
ebm_losses, cd_gaps, nll_curve = [], [], [grid_nll(ebm, ring)]
for it in range(300):
    idx = torch.randint(0, ring.shape[0], (128,))
    real = ring[idx] + 0.01 * torch.randn(128, 2)
    init, buf_idx = buffer.sample(128)
    fake = sgld(ebm, init, n_steps=15, step_size=0.05, noise_std=0.05)
    buffer.push(fake, buf_idx)
    energies = ebm(torch.cat([real, fake], dim=0))
    real_e, fake_e = energies.chunk(2, dim=0)
    cd = real_e.mean() - fake_e.mean()
    reg = alpha * (real_e ** 2 + fake_e ** 2).mean()
    loss = cd + reg
    ebm_opt.zero_grad()
    loss.backward()
    ebm_opt.step()
    ebm_losses.append(loss.item())
    cd_gaps.append(cd.item())
    if it % 50 == 49:
        nll_curve.append(grid_nll(ebm, ring))

with torch.no_grad():
    grid_energy = ebm(grid)
    radius = grid.norm(dim=1)
    on_ring = ((radius - 2.0).abs() < 0.3)
    off_ring = (radius < 0.8) | (radius > 2.8)
    ring_energy_gap = (grid_energy[off_ring].mean() - grid_energy[on_ring].mean()).item()
torch.manual_seed(11)
long_chains = sgld(ebm, buffer.uniform(256), n_steps=200, step_size=0.05, noise_std=0.05)
chain_radius = long_chains.norm(dim=1)
chain_on_ring = ((chain_radius - 2.0).abs() < 0.5).float().mean().item()

# (2) a noise-conditional score net on two moons by annealed DSM, then annealed Langevin

torch.manual_seed(20)
sigmas = torch.tensor(
    [math.exp(v) for v in torch.linspace(math.log(1.0), math.log(0.05), 6).tolist()])
ncsn = ScoreNet(n_sigmas=len(sigmas))
nn.init.ones_(ncsn.embed.weight)
ncsn_opt = torch.optim.Adam(ncsn.parameters(), lr=5e-3)


def dsm_eval(model):
    """The annealed DSM loss on a fixed draw of labels and noise (its own generator)."""
    gen = torch.Generator().manual_seed(99)
    x = moons.repeat(4, 1)
    labels = torch.randint(0, len(sigmas), (x.shape[0],), generator=gen)
    used = sigmas[labels][:, None]
    noise = torch.randn(x.shape, generator=gen) * used
    with torch.no_grad():
        scores = model(x + noise, labels)
    return (0.5 * ((scores + noise / used ** 2) ** 2).sum(-1) * used[:, 0] ** 2).mean().item()


dsm_eval_before = dsm_eval(ncsn)
dsm_losses = []
for _ in range(300):
    idx = torch.randint(0, moons.shape[0], (128,))
    loss = anneal_dsm_loss(ncsn, moons[idx], sigmas)
    ncsn_opt.zero_grad()
    loss.backward()
    ncsn_opt.step()
    dsm_losses.append(loss.item())

dsm_eval_after = dsm_eval(ncsn)
torch.manual_seed(21)
langevin_samples = annealed_langevin(ncsn, torch.rand(256, 2) * 6 - 3, sigmas)
# distance of each sample to its nearest data point: small when the samples lie on the moons
nearest = torch.cdist(langevin_samples, moons).min(dim=1).values
uniform_nearest = torch.cdist(torch.rand(256, 2) * 6 - 3, moons).min(dim=1).values
langevin_fit = nearest.median().item()
uniform_fit = uniform_nearest.median().item()

# (3) sliced score matching on the ring with a plain score net

torch.manual_seed(30)
ssm_net = ScoreNet()
ssm_opt = torch.optim.Adam(ssm_net.parameters(), lr=3e-3)
ssm_losses = []
for _ in range(200):
    idx = torch.randint(0, ring.shape[0], (128,))
    loss, _, _ = sliced_score_matching(ssm_net, ring[idx], n_particles=1,
                                       variance_reduced=True)
    ssm_opt.zero_grad()
    loss.backward()
    ssm_opt.step()
    ssm_losses.append(loss.item())
# outside the ring the learned score points back inwards
with torch.no_grad():
    directions = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
    outside = ssm_net(directions * 2.5)
    score_points_inward = ((outside * directions).sum(-1) < 0).all().item()

print(f"EBM loss {ebm_losses[0]:.3f} -> {ebm_losses[-1]:.3f}, ring gap {ring_energy_gap:.2f}, "
      f"chains on ring {chain_on_ring:.2f}; DSM {dsm_losses[0]:.3f} -> {dsm_losses[-1]:.3f}, "
      f"Langevin fit {langevin_fit:.3f} (uniform {uniform_fit:.3f}); "
      f"SSM {ssm_losses[0]:.3f} -> {ssm_losses[-1]:.3f}; esm gap {esm_gap:.3f}")
