# ruff: noqa: N812 (the usual F alias)
"""BYOL and SimSiam self-supervised training on tiny synthetic images, written for these tests
the way public PyTorch code of the kind writes it (the BYOL re-implementations with an EMA
target network, facebookresearch's SimSiam ``builder.py``/``main_simsiam.py`` and the
Barlow Twins LARS; not a copy of any of them):

- tiny 1x12x12 images of four pattern families (stripes three ways and a blob) built from
  ``torch.meshgrid``/``torch.sin``/``torch.exp``, seeded; augmentations by tensor ops only:
  random crop by ``F.pad`` + per-sample slicing at ``torch.randint`` offsets, horizontal flip
  by ``torch.where`` over ``flip(-1)``, brightness by ``mul``, additive ``randn_like`` noise;
- a small conv encoder (``nn.Conv2d``, ``nn.BatchNorm2d``, ``nn.AdaptiveAvgPool2d``,
  ``nn.Flatten``), MLP projector/predictor heads with ``nn.BatchNorm1d`` (SimSiam's last
  projector BN with ``affine=False``);
- BYOL: the target network by ``copy.deepcopy`` of the online one with
  ``requires_grad_(False)``, the loss ``2 - 2 cos`` from ``F.normalize``, symmetrised; the EMA
  update under ``torch.no_grad`` three ways (``mul_(m).add_(p, alpha=1 - m)``,
  ``torch._foreach_mul_``/``torch._foreach_add_``, ``lerp_``), buffers copied, the momentum
  raised to one along a cosine (and ``torch.optim.swa_utils.AveragedModel`` with
  ``get_ema_multi_avg_fn``); LARS as a ``torch.optim.Optimizer`` subclass with biases and
  norms excluded from the adaptation and the decay;
- SimSiam: ``-F.cosine_similarity(p, z.detach(), dim=-1).mean()`` both ways, ``SGD`` with
  momentum and ``CosineAnnealingLR``; the collapse monitor (std of the normalised outputs,
  near ``1/sqrt(d)`` when not collapsed);
- a cosine k-NN probe of the frozen representations (``torch.topk``, ``scatter_add_``-free
  voting with ``F.one_hot``).

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

SIZE = 12
N_CLASSES = 4


def make_images(n, generator):
    """Stripes (rows, columns, diagonals) at a random phase, and a blob at a random place."""
    yy, xx = torch.meshgrid(torch.arange(SIZE).float(), torch.arange(SIZE).float(),
                            indexing="ij")
    labels = torch.randint(0, N_CLASSES, (n,), generator=generator)
    phase = torch.rand(n, 1, 1, generator=generator) * 2 * math.pi
    centre = torch.rand(n, 2, 1, 1, generator=generator) * (SIZE - 4) + 2
    rows = torch.sin(yy * (2 * math.pi / 4) + phase)
    cols = torch.sin(xx * (2 * math.pi / 4) + phase)
    diag = torch.sin((xx + yy) * (2 * math.pi / 6) + phase)
    blob = 2 * torch.exp(-((xx - centre[:, 0]) ** 2 + (yy - centre[:, 1]) ** 2) / 4) - 0.5
    stacked = torch.stack([rows, cols, diag, blob], dim=1)  # (n, 4, H, W)
    images = stacked[torch.arange(n), labels]
    images = images + 0.3 * torch.randn(images.shape, generator=generator)
    return images.unsqueeze(1), labels


def random_crop_loop(padded, offsets):
    return torch.stack([padded[i, :, int(dy):int(dy) + SIZE, int(dx):int(dx) + SIZE]
                        for i, (dy, dx) in enumerate(offsets.tolist())])


def random_crop_indexed(padded, offsets):
    """All crops at once: advanced indices around a slice put their (n, H, W) dims first."""
    n = padded.shape[0]
    rows = offsets[:, 0, None] + torch.arange(SIZE)  # (n, H)
    cols = offsets[:, 1, None] + torch.arange(SIZE)  # (n, W)
    crops = padded[torch.arange(n)[:, None, None], :, rows[:, :, None], cols[:, None, :]]
    return crops.permute(0, 3, 1, 2)  # (n, H, W, C) -> (n, C, H, W)


def augment(x, pad=2, noise_std=0.2, brightness=0.3, crop=random_crop_indexed):
    n = x.shape[0]
    # random crop of the original size from a reflect-padded image
    padded = F.pad(x, (pad, pad, pad, pad), mode="reflect")
    offsets = torch.randint(0, 2 * pad + 1, (n, 2))
    crops = crop(padded, offsets)
    # random horizontal flip
    flip = torch.rand(n) < 0.5
    crops = torch.where(flip[:, None, None, None], crops.flip(-1), crops)
    # brightness and additive noise
    scale = 1 + brightness * (2 * torch.rand(n, 1, 1, 1) - 1)
    return crops * scale + noise_std * torch.randn_like(crops)


# ----------------------------------------------------------------------------- models


class Encoder(nn.Module):
    def __init__(self, width=16, out_dim=32):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1, bias=False), nn.BatchNorm2d(width),
            nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(width, out_dim, 3, padding=1, bias=False), nn.BatchNorm2d(out_dim),
            nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.out_dim = out_dim

    def forward(self, x):
        return self.features(x)


def mlp(in_dim, hidden, out_dim, last_bn=False):
    layers = [nn.Linear(in_dim, hidden), nn.BatchNorm1d(hidden), nn.ReLU(inplace=True),
              nn.Linear(hidden, out_dim)]
    if last_bn:
        layers.append(nn.BatchNorm1d(out_dim, affine=False))
    return nn.Sequential(*layers)


class OnlineNetwork(nn.Module):
    def __init__(self, proj_dim=32, hidden=64):
        super().__init__()
        self.encoder = Encoder()
        self.projector = mlp(self.encoder.out_dim, hidden, proj_dim)

    def forward(self, x):
        return self.projector(self.encoder(x))


def byol_loss_fn(x, y):
    x = F.normalize(x, dim=-1, p=2)
    y = F.normalize(y, dim=-1, p=2)
    return 2 - 2 * (x * y).sum(dim=-1)


class BYOL(nn.Module):
    def __init__(self, proj_dim=32, hidden=64, base_momentum=0.99):
        super().__init__()
        self.online = OnlineNetwork(proj_dim, hidden)
        self.predictor = mlp(proj_dim, hidden, proj_dim)
        self.target = copy.deepcopy(self.online)
        self.target.requires_grad_(False)
        self.base_momentum = base_momentum
        self.momentum = base_momentum

    def forward(self, x1, x2):
        p1 = self.predictor(self.online(x1))
        p2 = self.predictor(self.online(x2))
        with torch.no_grad():
            z1 = self.target(x1)
            z2 = self.target(x2)
        loss = byol_loss_fn(p1, z2.detach()) + byol_loss_fn(p2, z1.detach())
        return loss.mean()

    def set_momentum(self, step, total_steps):
        """tau = 1 - (1 - tau_base) (cos(pi k / K) + 1) / 2."""
        self.momentum = 1 - (1 - self.base_momentum) * (
            math.cos(math.pi * step / total_steps) + 1) / 2

    def update_target(self):
        ema_update(self.target, self.online, self.momentum)


@torch.no_grad()
def ema_update(target, online, m):
    for param_t, param_o in zip(target.parameters(), online.parameters()):
        param_t.mul_(m).add_(param_o, alpha=1 - m)
    for buffer_t, buffer_o in zip(target.buffers(), online.buffers()):
        buffer_t.copy_(buffer_o)


@torch.no_grad()
def ema_foreach(target, online, m):
    target_params = list(target.parameters())
    online_params = list(online.parameters())
    torch._foreach_mul_(target_params, m)
    torch._foreach_add_(target_params, online_params, alpha=1 - m)


@torch.no_grad()
def ema_lerp(target, online, m):
    for param_t, param_o in zip(target.parameters(), online.parameters()):
        param_t.lerp_(param_o, 1 - m)


class SimSiam(nn.Module):
    def __init__(self, dim=32, pred_dim=16):
        super().__init__()
        self.encoder = Encoder()
        prev_dim = self.encoder.out_dim
        self.projector = nn.Sequential(
            nn.Linear(prev_dim, prev_dim, bias=False), nn.BatchNorm1d(prev_dim),
            nn.ReLU(inplace=True),
            nn.Linear(prev_dim, dim, bias=False), nn.BatchNorm1d(dim, affine=False))
        self.predictor = nn.Sequential(
            nn.Linear(dim, pred_dim, bias=False), nn.BatchNorm1d(pred_dim),
            nn.ReLU(inplace=True), nn.Linear(pred_dim, dim))

    def forward(self, x1, x2):
        z1 = self.projector(self.encoder(x1))
        z2 = self.projector(self.encoder(x2))
        p1 = self.predictor(z1)
        p2 = self.predictor(z2)
        return p1, p2, z1.detach(), z2.detach()


def simsiam_loss(p1, p2, z1, z2):
    return -(F.cosine_similarity(p1, z2, dim=-1).mean()
             + F.cosine_similarity(p2, z1, dim=-1).mean()) * 0.5


class LARS(torch.optim.Optimizer):
    def __init__(self, params, lr, weight_decay=0.0, momentum=0.9, eta=0.001,
                 weight_decay_filter=None, lars_adaptation_filter=None):
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, eta=eta,
                        weight_decay_filter=weight_decay_filter,
                        lars_adaptation_filter=lars_adaptation_filter)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        for g in self.param_groups:
            for p in g["params"]:
                dp = p.grad
                if dp is None:
                    continue
                if g["weight_decay_filter"] is None or not g["weight_decay_filter"](p):
                    dp = dp.add(p, alpha=g["weight_decay"])
                if g["lars_adaptation_filter"] is None or not g["lars_adaptation_filter"](p):
                    param_norm = torch.norm(p)
                    update_norm = torch.norm(dp)
                    one = torch.ones_like(param_norm)
                    q = torch.where(param_norm > 0.0,
                                    torch.where(update_norm > 0,
                                                (g["eta"] * param_norm / update_norm), one),
                                    one)
                    dp = dp.mul(q)
                param_state = self.state[p]
                if "mu" not in param_state:
                    param_state["mu"] = torch.zeros_like(p)
                mu = param_state["mu"]
                mu.mul_(g["momentum"]).add_(dp)
                p.add_(mu, alpha=-g["lr"])


def exclude_bias_and_norm(p):
    return p.ndim == 1


@torch.no_grad()
def knn_accuracy(encoder, train_x, train_y, test_x, test_y, k=5):
    encoder.eval()
    train_f = F.normalize(encoder(train_x), dim=1)
    test_f = F.normalize(encoder(test_x), dim=1)
    encoder.train()
    sim = test_f @ train_f.t()
    sim_weight, sim_idx = sim.topk(k, dim=1)
    votes = F.one_hot(train_y[sim_idx], N_CLASSES).float() * sim_weight.exp()[..., None]
    pred = votes.sum(dim=1).argmax(dim=1)
    return (pred == test_y).float().mean().item()


def collapse_std(z):
    """Std over the batch of the l2-normalised outputs, averaged over channels."""
    return F.normalize(z, dim=1).std(dim=0).mean().item()


# ----------------------------------------------------- fixed-weight checks (recorded)

gen = torch.Generator().manual_seed(1234)
train_x, train_y = make_images(256, gen)
test_x, test_y = make_images(128, gen)
fixed_results["images_head"] = train_x[:2, 0]
fixed_results["labels_head"] = train_y[:16]

torch.manual_seed(1)
views = augment(train_x[:8])
fixed_results["augmented"] = views
torch.manual_seed(1)
views_loop = augment(train_x[:8], crop=random_crop_loop)
crop_forms_agree = torch.equal(views, views_loop)
# a crop at offset (pad, pad) without flip, scale or noise is the image itself
plain = augment(train_x[:4], noise_std=0.0, brightness=0.0)
crop_keeps_shape = tuple(plain.shape) == (4, 1, SIZE, SIZE)

torch.manual_seed(2)
byol = BYOL()
target_frozen = all(not p.requires_grad for p in byol.target.parameters())
target_is_copy = all(torch.equal(a, b) for a, b in zip(byol.target.parameters(),
                                                       byol.online.parameters()))
target_shares_no_storage = all(a.data_ptr() != b.data_ptr() for a, b in zip(
    byol.target.parameters(), byol.online.parameters()))
torch.manual_seed(3)
x1, x2 = augment(train_x[:32]), augment(train_x[:32])
loss = byol(x1, x2)
loss.backward()
fixed_results["byol_loss"] = loss.item()
fixed_results["byol_grads"] = {
    "encoder.features.0.weight": byol.online.encoder.features[0].weight.grad.clone(),
    "projector.3.weight": byol.online.projector[3].weight.grad.clone(),
    "predictor.0.weight": byol.predictor[0].weight.grad.clone(),
    "predictor.1.bias": byol.predictor[1].bias.grad.clone(),
}
target_grads_none = all(p.grad is None for p in byol.target.parameters())
# BN running statistics moved in both networks (the target runs in train mode too)
fixed_results["target_running_mean"] = byol.target.encoder.features[1].running_mean.clone()

# the three EMA updates agree; and the momentum schedule
online_copy = copy.deepcopy(byol.online)
# a deep copy of a Parameter is a new leaf: its .grad is not copied
deepcopy_grads = [p.grad is not None for p in online_copy.parameters()]
with torch.no_grad():
    for p in online_copy.parameters():
        p.add_(0.1 * torch.randn_like(p))
ema_targets = {name: copy.deepcopy(byol.target) for name in ("loop", "foreach", "lerp")}
ema_update(ema_targets["loop"], online_copy, 0.9)
ema_foreach(ema_targets["foreach"], online_copy, 0.9)
ema_lerp(ema_targets["lerp"], online_copy, 0.9)
# torch.optim.swa_utils' EMA: its first update copies, the next ones lerp
averaged = torch.optim.swa_utils.AveragedModel(
    byol.online, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(0.9))
averaged.update_parameters(byol.online)
averaged.update_parameters(online_copy)
ema_targets["averaged"] = averaged.module
averaged_count = averaged.n_averaged.item()
ema_results = {name: [p.detach().clone() for p in t.parameters()]
               for name, t in ema_targets.items()}
fixed_results["ema_first"] = ema_results["loop"][0]
fixed_results["ema_last"] = ema_results["loop"][-1]
ema_gaps = {name: max((a - b).abs().max().item()
                      for a, b in zip(ema_results[name], ema_results["loop"]))
            for name in ("foreach", "lerp", "averaged")}
ema_target_still_frozen = all(not p.requires_grad for p in ema_targets["lerp"].parameters())
momentum_schedule = []
for k in (0, 25, 50, 75, 100):
    byol.set_momentum(k, 100)
    momentum_schedule.append(byol.momentum)
fixed_results["momentum_schedule"] = momentum_schedule

# one LARS step on the fixed gradients
lars = LARS([p for p in byol.parameters() if p.requires_grad], lr=0.2, weight_decay=1e-4,
            weight_decay_filter=exclude_bias_and_norm,
            lars_adaptation_filter=exclude_bias_and_norm)
before = byol.online.encoder.features[0].weight.detach().clone()
lars.step()
lars_update = byol.online.encoder.features[0].weight.detach() - before
fixed_results["lars_update"] = lars_update
fixed_results["lars_conv_mu"] = lars.state[byol.online.encoder.features[0].weight]["mu"].clone()
# the adapted step's norm is lr * eta * |w| (the trust ratio) up to the decay term
lars_ratio = (lars_update.norm() / (0.2 * 0.001 * before.norm())).item()
fixed_results["lars_bias_update_mu"] = lars.state[byol.predictor[1].bias]["mu"].clone()
lars_state_size = len(lars.state)

# SimSiam: the loss, and what the stop-gradient changes
torch.manual_seed(4)
simsiam = SimSiam()
p1, p2, z1, z2 = simsiam(x1, x2)
loss = simsiam_loss(p1, p2, z1, z2)
loss.backward()
fixed_results["simsiam_loss"] = loss.item()
fixed_results["simsiam_grad_conv"] = simsiam.encoder.features[0].weight.grad.clone()
fixed_results["simsiam_grad_pred"] = simsiam.predictor[3].weight.grad.clone()
grad_with_stop = simsiam.encoder.features[0].weight.grad.clone()
simsiam.zero_grad()
z1_live = simsiam.projector(simsiam.encoder(x1))
z2_live = simsiam.projector(simsiam.encoder(x2))
loss_no_stop = simsiam_loss(simsiam.predictor(z1_live), simsiam.predictor(z2_live),
                            z1_live, z2_live)
loss_no_stop.backward()
grad_without_stop = simsiam.encoder.features[0].weight.grad.clone()
fixed_results["simsiam_grad_conv_no_stop"] = grad_without_stop
stop_gradient_changes_grad = (grad_with_stop - grad_without_stop).abs().max().item()
simsiam.zero_grad()
# F.cosine_similarity equals the dot product of F.normalize'd rows
cos_gap = (F.cosine_similarity(p1, z2, dim=-1)
           - (F.normalize(p1, dim=-1) * F.normalize(z2, dim=-1)).sum(-1)).abs().max().item()
# BYOL's 2 - 2 cos is the squared distance of the normalised vectors
mse_gap = (byol_loss_fn(p1, z2) - (F.normalize(p1, dim=-1) - F.normalize(z2, dim=-1))
           .pow(2).sum(-1)).abs().max().item()

# ------------------------------------------------------------------------------ training

random_knn = knn_accuracy(Encoder(), train_x, train_y, test_x, test_y)

# BYOL with LARS and the EMA target
torch.manual_seed(10)
byol = BYOL(base_momentum=0.9)
byol_opt = LARS([p for p in byol.parameters() if p.requires_grad], lr=0.5, weight_decay=1e-5,
                weight_decay_filter=exclude_bias_and_norm,
                lars_adaptation_filter=exclude_bias_and_norm, eta=0.02)
byol_steps, batch_size = 120, 64
byol_losses, momentums = [], []
for step in range(byol_steps):
    idx = torch.randint(0, train_x.shape[0], (batch_size,))
    x = train_x[idx]
    loss = byol(augment(x), augment(x))
    byol_opt.zero_grad()
    loss.backward()
    byol_opt.step()
    byol.set_momentum(step, byol_steps)
    byol.update_target()
    byol_losses.append(loss.item())
    momentums.append(byol.momentum)
byol_knn = knn_accuracy(byol.online.encoder, train_x, train_y, test_x, test_y)
with torch.no_grad():
    byol.online.eval()
    byol_std = collapse_std(byol.online(test_x))
    byol.online.train()
target_online_gap = max((t - o).abs().max().item() for t, o in zip(
    byol.target.parameters(), byol.online.parameters()))

# SimSiam with SGD + momentum, cosine-annealed
torch.manual_seed(20)
simsiam = SimSiam()
init_lr = 0.05 * batch_size / 32
simsiam_opt = torch.optim.SGD(simsiam.parameters(), lr=init_lr, momentum=0.9,
                              weight_decay=5e-4)
simsiam_steps = 120
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(simsiam_opt, T_max=simsiam_steps)
simsiam_losses, simsiam_stds, simsiam_lrs = [], [], []
for _ in range(simsiam_steps):
    idx = torch.randint(0, train_x.shape[0], (batch_size,))
    x = train_x[idx]
    p1, p2, z1, z2 = simsiam(augment(x), augment(x))
    loss = simsiam_loss(p1, p2, z1, z2)
    simsiam_opt.zero_grad()
    loss.backward()
    simsiam_opt.step()
    scheduler.step()
    simsiam_losses.append(loss.item())
    simsiam_stds.append(collapse_std(z1))
    simsiam_lrs.append(scheduler.get_last_lr()[0])
simsiam_knn = knn_accuracy(simsiam.encoder, train_x, train_y, test_x, test_y)

print(f"BYOL loss {byol_losses[0]:.3f} -> {byol_losses[-1]:.3f}, kNN {byol_knn:.2f}, "
      f"std {byol_std:.3f}; SimSiam {simsiam_losses[0]:.3f} -> {simsiam_losses[-1]:.3f}, "
      f"kNN {simsiam_knn:.2f}, std {simsiam_stds[-1]:.3f}; random kNN {random_knn:.2f}; "
      f"1/sqrt(d) {1 / math.sqrt(32):.3f}")
