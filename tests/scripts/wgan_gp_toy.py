"""A Wasserstein GAN with gradient penalty (Gulrajani et al.) on 2-d toy data, written for these
tests in the way old-style PyTorch WGAN-GP toy scripts (e.g. caogang/wgan-gp's gan_toy.py) are
commonly written (modelled on the API usage of that code, not a copy of it):

- ReLU MLP generator and critic (``nn.ReLU(True)``), ``Module.apply`` with a class-name based
  init through ``.data.normal_`` / ``.data.fill_``, Adam with betas (0.5, 0.9);
- pre-0.4 idioms: ``autograd.Variable(..., volatile=True)``, ``Variable(x,
  requires_grad=True)``, ``torch.Tensor(ndarray)``, ``.data``, ``.cpu().data.numpy()`` of 0-dim
  costs, ``use_cuda`` branches;
- the penalty: ``torch.rand(B, 1).expand(size())`` interpolation and ``autograd.grad(outputs=,
  inputs=, grad_outputs=torch.ones(size()), create_graph=True, retain_graph=True,
  only_inputs=True)``, ``norm(2, dim=1)``, then its double backward;
- ``backward(one)`` / ``backward(mone)`` with 0-dim weights, freezing the critic
  (``requires_grad = False``) for the generator's step;
- 8-gaussians, 25-gaussians and swiss-roll samplers (numpy + ``random``), a small logger that
  keeps the series it would plot, and critic maps / samples kept instead of drawn.
"""
import collections
import random

import numpy as np

import jitgrad as torch
from jitgrad import autograd, nn, optim

torch.manual_seed(1)
random.seed(1)
np.random.seed(1)

DATASET = "8gaussians"
WIDTH = 64
PENALTY_WEIGHT = 0.1  # small works better on toy data
CRITIC_STEPS = 5
BATCH = 64
GEN_STEPS = 60
FIXED_GENERATOR = False  # True: the "generator" is the data plus its noise
use_cuda = False


class Scribe:
    """Collects scalar series per name, printing their means every flush."""

    def __init__(self):
        self.step = 0
        self.history = collections.defaultdict(dict)
        self.pending = collections.defaultdict(dict)
        self.flushed = []

    def log(self, name, value):
        self.pending[name][self.step] = value

    def flush(self):
        parts = []
        for name, series in self.pending.items():
            parts.append(f"{name} {np.mean(list(series.values())):.4f}")
            self.history[name].update(series)
        self.pending.clear()
        self.flushed.append(self.step)
        print(f"step {self.step}: " + ", ".join(parts))

    def tick(self):
        self.step += 1


# ---- toy data, each an endless stream of float32 batches
def eight_gaussians():
    angles = np.arange(8) * np.pi / 4
    centres = [(2 * np.cos(a), 2 * np.sin(a)) for a in angles]
    while True:
        picked = np.array([random.choice(centres) for _ in range(BATCH)])
        pts = picked + 0.02 * np.random.randn(BATCH, 2)
        yield (pts / 1.414).astype("float32")


def twenty_five_gaussians():
    grid = np.array([(2 * i, 2 * j) for i in range(-2, 3) for j in range(-2, 3)], dtype=float)
    cloud = np.tile(grid, (40, 1)) + 0.05 * np.random.randn(1000, 2)
    np.random.shuffle(cloud)
    cloud = (cloud / 2.828).astype("float32")
    while True:
        for start in range(0, len(cloud) - BATCH + 1, BATCH):
            yield cloud[start:start + BATCH]


def swiss_roll():
    while True:
        turn = 1.5 * np.pi * (1 + 2 * np.random.rand(BATCH))
        pts = np.stack([turn * np.cos(turn), turn * np.sin(turn)], 1)
        pts += 0.25 * np.random.randn(BATCH, 2)
        yield (pts / 7.5).astype("float32")


SAMPLERS = {"8gaussians": eight_gaussians, "25gaussians": twenty_five_gaussians,
            "swissroll": swiss_roll}


def relu_mlp(n_in, n_out):
    return nn.Sequential(nn.Linear(n_in, WIDTH), nn.ReLU(True), nn.Linear(WIDTH, WIDTH),
                         nn.ReLU(True), nn.Linear(WIDTH, WIDTH), nn.ReLU(True),
                         nn.Linear(WIDTH, n_out))


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = relu_mlp(2, 2)

    def forward(self, z, real):
        return z + real if FIXED_GENERATOR else self.net(z)


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = relu_mlp(2, 1)

    def forward(self, pts):
        return self.net(pts).view(-1)


def small_normal_init(module):
    kind = type(module).__name__
    if "Linear" in kind:
        module.weight.data.normal_(0.0, 0.02)
        module.bias.data.fill_(0)
    elif "BatchNorm" in kind:
        module.weight.data.normal_(1.0, 0.02)
        module.bias.data.fill_(0)


def gradient_penalty(net, real, fake):
    mix = torch.rand(BATCH, 1).expand(real.size())
    if use_cuda:
        mix = mix.cuda()
    between = autograd.Variable(mix * real + (1 - mix) * fake, requires_grad=True)
    scores = net(between)
    ones = torch.ones(scores.size())
    slopes = autograd.grad(outputs=scores, inputs=between,
                           grad_outputs=ones.cuda() if use_cuda else ones,
                           create_graph=True, retain_graph=True, only_inputs=True)[0]
    return PENALTY_WEIGHT * ((slopes.norm(2, dim=1) - 1) ** 2).mean()


frames = []  # (critic map on a 32 x 32 grid, generator samples) per snapshot
n_snapshots = 0


def snapshot(real_batch, size=32, extent=3.0):
    global n_snapshots
    axis = np.linspace(-extent, extent, size, dtype="float32")
    xy = np.stack(np.meshgrid(axis, axis, indexing="ij"), -1).reshape(-1, 2)
    grid_v = autograd.Variable(torch.Tensor(xy), volatile=True)
    heat = critic(grid_v).cpu().data.numpy().reshape(size, size).T
    z = autograd.Variable(torch.randn(BATCH, 2), volatile=True)
    real_v = autograd.Variable(torch.Tensor(real_batch))
    frames.append((heat, gen(z, real_v).cpu().data.numpy()))
    n_snapshots += 1


gen, critic = Generator(), Critic()
gen.apply(small_normal_init)
critic.apply(small_normal_init)
print(gen, critic, sep="\n")
if use_cuda:
    gen, critic = gen.cuda(), critic.cuda()
opt_c = optim.Adam(critic.parameters(), lr=1e-4, betas=(0.5, 0.9))
opt_g = optim.Adam(gen.parameters(), lr=1e-4, betas=(0.5, 0.9))

one = torch.tensor(1, dtype=torch.float)  # 0-dim, like the means they weigh
mone = -1 * one
stream = SAMPLERS[DATASET]()
scribe = Scribe()
series = f"{DATASET}/"

for it in range(GEN_STEPS):
    for prm in critic.parameters():
        prm.requires_grad = True
    for _ in range(CRITIC_STEPS):
        last_batch = next(stream)
        real_v = autograd.Variable(torch.Tensor(last_batch))
        critic.zero_grad()
        score_real = critic(real_v).mean()
        score_real.backward(mone)  # ascend on real points
        z = autograd.Variable(torch.randn(BATCH, 2), volatile=True)
        fake_v = autograd.Variable(gen(z, real_v).data)  # no graph back into the generator
        score_fake = critic(fake_v).mean()
        score_fake.backward(one)
        gp = gradient_penalty(critic, real_v.data, fake_v.data)
        gp.backward()
        critic_cost = score_fake - score_real + gp
        w_estimate = score_real - score_fake
        opt_c.step()

    if not FIXED_GENERATOR:
        for prm in critic.parameters():
            prm.requires_grad = False
        gen.zero_grad()
        real_v = autograd.Variable(torch.Tensor(next(stream)))
        judged = critic(gen(autograd.Variable(torch.randn(BATCH, 2)), real_v)).mean()
        judged.backward(mone)
        gen_cost = -judged
        opt_g.step()

    scribe.log(series + "critic cost", critic_cost.cpu().data.numpy())
    scribe.log(series + "wasserstein estimate", w_estimate.cpu().data.numpy())
    if not FIXED_GENERATOR:
        scribe.log(series + "generator cost", gen_cost.cpu().data.numpy())
    if it % 20 == 19:
        scribe.flush()
        snapshot(last_batch)
    scribe.tick()

# ---- fixed numbers for the comparison with torch: weights and data from numpy, one critic
# step and one generator step; the penalty is taken at the real points (fake = real), where
# the random mix cancels up to rounding
rng = np.random.default_rng(0)
ref_critic, ref_gen = Critic(), Generator()
with torch.no_grad():
    for prm in [*ref_critic.parameters(), *ref_gen.parameters()]:
        prm.copy_(torch.tensor(rng.normal(0.0, 0.3, tuple(prm.shape)), dtype=torch.float32))
ref_opt = optim.Adam(ref_critic.parameters(), lr=1e-4, betas=(0.5, 0.9))
ref_real = autograd.Variable(torch.Tensor(rng.normal(size=(BATCH, 2)).astype("float32")))
ref_z = autograd.Variable(torch.Tensor(rng.normal(size=(BATCH, 2)).astype("float32")))


def grads_of(module):
    return [prm.grad.clone() for prm in module.parameters()]


ref_critic.zero_grad()
r_score = ref_critic(ref_real).mean()
r_score.backward(mone)
fixed_results = {"D_real_grads": grads_of(ref_critic)}
f_score = ref_critic(autograd.Variable(ref_gen(ref_z, ref_real).data)).mean()
f_score.backward(one)
ref_gp = gradient_penalty(ref_critic, ref_real.data, ref_real.data)
ref_gp.backward()
fixed_results.update(penalty=ref_gp.item(), D_grads=grads_of(ref_critic),
                     D_cost=(f_score - r_score + ref_gp).item())
ref_opt.step()
fixed_results["D_stepped"] = [prm.detach().clone() for prm in ref_critic.parameters()]
for prm in ref_critic.parameters():
    prm.requires_grad = False
ref_gen.zero_grad()
ref_critic(ref_gen(ref_z, ref_real)).mean().backward(mone)
fixed_results["G_grads"] = grads_of(ref_gen)
fixed_results["D_grads_after_G"] = [prm.grad for prm in ref_critic.parameters()]  # untouched
# the first batch of the other two toy sets, as the training loop would wrap it
fixed_results["other_batches"] = {name: torch.Tensor(next(SAMPLERS[name]()))
                                  for name in ("25gaussians", "swissroll")}
