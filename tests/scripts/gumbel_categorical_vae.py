# ruff: noqa: N806, N812 (the usual F alias, the upper-case sizes)
"""A categorical VAE with Gumbel-softmax latents, written for these tests the way public
Gumbel-softmax VAE code (Jang et al.'s reference notebooks ported to PyTorch, the
``VAE_gumbel`` examples, ``torch.distributions`` users) writes torch code (not a copy):

- ``sample_gumbel`` from ``torch.rand`` (``-log(-log(U + eps) + eps)``) and a hand-written
  ``gumbel_softmax`` with the straight-through ``hard`` option (``max`` -> ``scatter_`` ->
  ``(y_hard - y).detach() + y``), beside ``F.gumbel_softmax(hard=True)`` and the same draw by
  ``exponential_`` noise;
- an encoder to ``(B, N, K)`` logits, a decoder from the flattened one-hot codes to Bernoulli
  logits, ``F.binary_cross_entropy_with_logits`` reconstruction, the KL to the uniform prior
  by hand (``q * log(q * K + 1e-20)``) and by ``torch.distributions.kl_divergence`` between
  ``Categorical``\\ s (wrapped in ``Independent``);
- ``OneHotCategorical`` (``sample``, ``log_prob``, ``entropy``), ``RelaxedOneHotCategorical``
  (``rsample``, the Concrete ``log_prob``: a relaxed KL estimate),
  ``OneHotCategoricalStraightThrough``;
- temperature annealing ``max(tau0 * exp(-r * step), tau_min)``, ``Adam``, soft then hard
  samples; exact ``log p(x)`` by enumerating all ``K ** N`` codes (``torch.cartesian_prod``,
  ``torch.logsumexp``) to bound the ELBO, and reconstructions at the posterior's mode.

Sections marked "(recorded)" keep what the tests compare, on fixed weights and seeded noise,
with the same script on torch.
"""
import math

import numpy as np

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.distributions import (Categorical, Independent, OneHotCategorical,
                                   OneHotCategoricalStraightThrough, RelaxedOneHotCategorical,
                                   kl_divergence)

torch.manual_seed(0)
fixed_results = {}

N_LATENT = 4  # categorical variables
K = 4  # categories each
D = 64  # 8x8 binary images

# ------------------------------------------------------------------------- the sampler


def sample_gumbel(shape, eps=1e-20, generator=None):
    U = torch.rand(shape, generator=generator)
    return -torch.log(-torch.log(U + eps) + eps)


def gumbel_softmax_sample(logits, temperature, generator=None):
    y = logits + sample_gumbel(logits.size(), generator=generator)
    return F.softmax(y / temperature, dim=-1)


def gumbel_softmax(logits, temperature, hard=False, generator=None):
    """(B, N, K) logits -> (B, N * K) relaxed (or straight-through one-hot) codes."""
    y = gumbel_softmax_sample(logits, temperature, generator=generator)
    if not hard:
        return y.view(-1, N_LATENT * K)
    shape = y.size()
    _, ind = y.max(dim=-1)
    y_hard = torch.zeros_like(y).view(-1, shape[-1])
    y_hard.scatter_(1, ind.view(-1, 1), 1)
    y_hard = y_hard.view(*shape)
    y_hard = (y_hard - y).detach() + y  # forward: one-hot; backward: the soft sample's grad
    return y_hard.view(-1, N_LATENT * K)


# ---------------------------------------------------------------------------- the model


class VAEGumbel(nn.Module):
    def __init__(self, hidden=128):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Linear(D, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden // 2), nn.ReLU(),
            nn.Linear(hidden // 2, N_LATENT * K))
        self.decoder = nn.Sequential(
            nn.Linear(N_LATENT * K, hidden // 2), nn.ReLU(),
            nn.Linear(hidden // 2, hidden), nn.ReLU(),
            nn.Linear(hidden, D))

    def encode(self, x):
        return self.encoder(x.view(-1, D)).view(-1, N_LATENT, K)

    def decode(self, z):
        return self.decoder(z)  # Bernoulli logits

    def forward(self, x, temp, hard=False, generator=None):
        logits_y = self.encode(x)
        z = gumbel_softmax(logits_y, temp, hard, generator=generator)
        return self.decode(z), logits_y


def kl_to_uniform(logits_y):
    """KL(q(y|x) || Uniform(K)) summed over the latents, averaged over the batch."""
    qy = F.softmax(logits_y, dim=-1)
    log_ratio = torch.log(qy * K + 1e-20)
    return torch.sum(qy * log_ratio, dim=(-2, -1)).mean()


def loss_function(recon_logits, x, logits_y):
    bce = F.binary_cross_entropy_with_logits(recon_logits, x.view(-1, D),
                                             reduction="sum") / x.shape[0]
    return bce + kl_to_uniform(logits_y), bce


# ---------------------------------------------------------------------------------- data

# four 4x4 quadrants, each showing one of four (disjoint) strokes: a 4^4-code mixture with
# bit noise
STROKES = torch.tensor([
    [[1, 1, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]],  # top bar
    [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1]],  # bottom bar
    [[0, 0, 0, 0], [1, 0, 0, 1], [1, 0, 0, 1], [0, 0, 0, 0]],  # side ticks
    [[0, 0, 0, 0], [0, 1, 1, 0], [0, 1, 1, 0], [0, 0, 0, 0]],  # block
], dtype=torch.float32)


def render(codes):
    """(B, 4) stroke indices -> (B, 8, 8) images."""
    q = STROKES[codes]  # (B, 4, 4, 4)
    top = torch.cat([q[:, 0], q[:, 1]], dim=2)
    bottom = torch.cat([q[:, 2], q[:, 3]], dim=2)
    return torch.cat([top, bottom], dim=1)


def make_data(n, generator, flip=0.03):
    codes = torch.randint(0, K, (n, N_LATENT), generator=generator)
    images = render(codes).view(n, D)
    noise = torch.rand(n, D, generator=generator) < flip
    return torch.where(noise, 1 - images, images), codes


# ------------------------------------------------- samplers and distributions (recorded)

logits = torch.randn(3, N_LATENT, K)
gen = torch.Generator().manual_seed(42)
soft = gumbel_softmax(logits, 0.5, generator=gen)
gen = torch.Generator().manual_seed(42)
hard = gumbel_softmax(logits, 0.5, hard=True, generator=gen)
fixed_results["manual_soft"] = soft
fixed_results["manual_hard"] = hard
hard_is_one_hot = bool(((hard == 0) | (hard == 1)).all()) and torch.equal(
    hard.view(3, N_LATENT, K).sum(-1), torch.ones(3, N_LATENT))
hard_is_argmax_of_soft = torch.equal(hard.view(3, N_LATENT, K).argmax(-1),
                                     soft.view(3, N_LATENT, K).argmax(-1))
soft_rows_sum = soft.view(3, N_LATENT, K).sum(-1)

# straight-through: the gradient through the hard sample is the soft sample's
lg = logits.clone().requires_grad_()
w = torch.randn(N_LATENT * K)
gen = torch.Generator().manual_seed(7)
(gumbel_softmax(lg, 0.7, generator=gen) * w).sum().backward()
soft_grad = lg.grad.clone()
lg.grad = None
gen = torch.Generator().manual_seed(7)
(gumbel_softmax(lg, 0.7, hard=True, generator=gen) * w).sum().backward()
straight_through_grad_equal = torch.allclose(lg.grad, soft_grad, rtol=1e-6, atol=1e-7)
fixed_results["st_grad"] = lg.grad.clone()

# F.gumbel_softmax on the global generator; the same draw written with exponential_ noise
torch.manual_seed(123)
f_soft = F.gumbel_softmax(logits, tau=0.5, dim=-1)
torch.manual_seed(123)
f_hard = F.gumbel_softmax(logits, tau=0.5, hard=True)
torch.manual_seed(123)
gumbels = -torch.empty_like(logits).exponential_().log()
by_exponential = ((logits + gumbels) / 0.5).softmax(-1)
fixed_results["F_gumbel_soft"] = f_soft
fixed_results["F_gumbel_hard"] = f_hard
fixed_results["exponential_gumbels"] = gumbels
F_matches_exponential = torch.allclose(f_soft, by_exponential, rtol=1e-6, atol=1e-7)
F_hard_is_argmax = torch.equal(f_hard.argmax(-1), f_soft.argmax(-1))
lf = logits.clone().requires_grad_()
torch.manual_seed(5)
(F.gumbel_softmax(lf, tau=1.0, hard=True) * w.view(N_LATENT, K)).sum().backward()
fixed_results["F_gumbel_hard_grad"] = lf.grad.clone()

# the distributions
q_logits = logits[0]  # (N, K)
q_onehot = OneHotCategorical(logits=q_logits)
torch.manual_seed(9)
onehot_samples = q_onehot.sample((5,))  # (5, N, K)
fixed_results["onehot_samples"] = onehot_samples
fixed_results["onehot_log_prob"] = q_onehot.log_prob(onehot_samples)
onehot_log_prob_by_hand = (onehot_samples * F.log_softmax(q_logits, -1)).sum(-1)
fixed_results["onehot_entropy"] = q_onehot.entropy()
fixed_results["onehot_probs"] = q_onehot.probs
fixed_results["onehot_batch_event"] = (tuple(q_onehot.batch_shape), tuple(q_onehot.event_shape))
fixed_results["onehot_mode"] = q_onehot.mode
fixed_results["onehot_support"] = q_onehot.enumerate_support(expand=False)  # (K, 1, K)
fixed_results["onehot_kl_uniform"] = kl_divergence(
    q_onehot, OneHotCategorical(probs=torch.full((N_LATENT, K), 1.0 / K)))

uniform_prior = Categorical(probs=torch.full((N_LATENT, K), 1.0 / K))
posterior = Categorical(logits=q_logits)
kl_per_latent = kl_divergence(posterior, uniform_prior)
fixed_results["kl_per_latent"] = kl_per_latent
kl_independent = kl_divergence(Independent(posterior, 1),
                               Independent(uniform_prior, 1))
kl_by_hand = kl_to_uniform(q_logits[None])
fixed_results["kl_independent"] = kl_independent

temperature = torch.tensor(0.5)
relaxed = RelaxedOneHotCategorical(temperature, logits=q_logits)
relaxed_prior = RelaxedOneHotCategorical(temperature, probs=torch.full((N_LATENT, K), 1.0 / K))
torch.manual_seed(11)
z_relaxed = relaxed.rsample((6,))
fixed_results["relaxed_sample"] = z_relaxed
fixed_results["relaxed_log_prob"] = relaxed.log_prob(z_relaxed)
fixed_results["relaxed_prior_log_prob"] = relaxed_prior.log_prob(z_relaxed)
relaxed_kl_estimate = (relaxed.log_prob(z_relaxed) - relaxed_prior.log_prob(z_relaxed)).mean(0)
fixed_results["relaxed_kl_estimate"] = relaxed_kl_estimate

st_dist = OneHotCategoricalStraightThrough(logits=lg)
torch.manual_seed(13)
st_sample = st_dist.rsample()
(st_sample * w.view(N_LATENT, K)).sum().backward()
fixed_results["st_dist_sample"] = st_sample.detach()
st_dist_grad_nonzero = bool((lg.grad != 0).any())

# -------------------------------------------------- the model on fixed weights (recorded)

data_gen = torch.Generator().manual_seed(2024)
X_train, codes_train = make_data(2048, data_gen)
X_test, codes_test = make_data(256, data_gen)

torch.manual_seed(1)
model = VAEGumbel(256)
xb = X_train[:64]
noise_gen = torch.Generator().manual_seed(99)
recon, logits_y = model(xb, 1.0, hard=False, generator=noise_gen)
loss, bce = loss_function(recon, xb, logits_y)
loss.backward()
fixed_results["recon_logits"] = recon.detach()
fixed_results["loss"] = loss.item()
fixed_results["bce"] = bce.item()
fixed_results["kl"] = kl_to_uniform(logits_y).item()
fixed_results["grads"] = {n: p.grad.clone() for n, p in model.named_parameters()
                          if n.endswith("weight")}
# the KL by torch.distributions (summed over the latents, batch mean) equals the one by hand
kl_dist = Independent(Categorical(logits=logits_y), 1)
kl_prior = Independent(Categorical(logits=torch.zeros_like(logits_y)), 1)
kl_model_by_distributions = kl_divergence(kl_dist, kl_prior).mean().item()
model.zero_grad()

# ---------------------------------------------------------------------------- training

tau0, temp_min, anneal_rate = 1.0, 0.5, 1e-3
temp = tau0
kl_warmup = 600  # steps over which the KL weight rises from 0 to 1
batch_size, epochs = 32, 20
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
train_gen = torch.Generator().manual_seed(3)
losses, bces, temps, step = [], [], [], 0
for epoch in range(epochs):
    model.train()
    perm = torch.randperm(X_train.shape[0], generator=train_gen)
    total = total_bce = 0.0
    hard = epoch >= epochs // 2  # soft relaxations first, straight-through one-hots after
    for i in range(0, X_train.shape[0], batch_size):
        x = X_train[perm[i:i + batch_size]]
        optimizer.zero_grad()
        recon, logits_y = model(x, temp, hard=hard, generator=train_gen)
        elbo_loss, bce = loss_function(recon, x, logits_y)
        beta = min(1.0, step / kl_warmup)
        loss = bce + beta * (elbo_loss - bce)
        loss.backward()
        optimizer.step()
        total += elbo_loss.item() * len(x)
        total_bce += bce.item() * len(x)
        step += 1
        if step % 32 == 0:
            temp = float(np.maximum(tau0 * np.exp(-anneal_rate * step), temp_min))
    losses.append(total / X_train.shape[0])  # the negative ELBO (full KL) per example
    bces.append(total_bce / X_train.shape[0])
    temps.append(temp)
    print(f"epoch {epoch}: loss {losses[-1]:.3f} temp {temp:.3f} hard {hard}")

# --------------------------------------------------------------------------- evaluation

model.eval()
with torch.no_grad():
    logits_y = model.encode(X_test)
    q = F.softmax(logits_y, dim=-1)
    # the decoder at the posterior's mode: a one-hot code per latent
    mode = F.one_hot(logits_y.argmax(-1), K).float().view(-1, N_LATENT * K)
    recon_mode = torch.sigmoid(model.decode(mode))
    pixel_error = ((recon_mode > 0.5).float() != X_test).float().mean().item()
    # each latent should pick out one quadrant's stroke: the codes agree with the truth up
    # to a permutation of the latents and of their categories
    predicted = logits_y.argmax(-1)

    # exact log p(x) and the exact ELBO by enumerating all K ** N codes
    grid = torch.cartesian_prod(*[torch.arange(K)] * N_LATENT)  # (K^N, N)
    all_codes = F.one_hot(grid, K).float().view(-1, N_LATENT * K)
    decoded = model.decode(all_codes)  # (K^N, D)
    x_sub = X_test[:64]
    log_px_given_z = -F.binary_cross_entropy_with_logits(
        decoded[None].expand(x_sub.shape[0], -1, -1),
        x_sub[:, None].expand(-1, decoded.shape[0], -1), reduction="none").sum(-1)
    log_prior = -N_LATENT * math.log(K)
    log_px = torch.logsumexp(log_px_given_z + log_prior, dim=1)
    q_sub = q[:64]
    log_q_codes = torch.log(q_sub[:, torch.arange(N_LATENT), grid]).sum(-1)  # (64, K^N)
    q_codes = log_q_codes.exp()
    exact_elbo = (q_codes * (log_px_given_z + log_prior - log_q_codes)).sum(-1)
    q_total_mass = q_codes.sum(-1)
elbo_gap = (log_px - exact_elbo).min().item()
mean_log_px = log_px.mean().item()
mean_elbo = exact_elbo.mean().item()

latent_recovery = []
for n in range(N_LATENT):
    best = 0.0
    for m in range(N_LATENT):  # the code of latent n against the true stroke of quadrant m
        table = torch.zeros(K, K)
        table.index_put_((predicted[:, n], codes_test[:, m]), torch.ones(len(codes_test)),
                         accumulate=True)
        best = max(best, (table.max(dim=1).values.sum() / len(codes_test)).item())
    latent_recovery.append(best)

print("losses", [round(v, 3) for v in losses])
print("pixel error", pixel_error, "log p(x)", mean_log_px, "elbo", mean_elbo)
print("latent recovery", latent_recovery)
