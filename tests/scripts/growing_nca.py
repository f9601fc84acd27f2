# ruff: noqa: N812, N806 (the usual F alias, the Distill notebook's upper-case constants)
"""Growing Neural Cellular Automata (Mordvintsev et al., Distill 2020), written for these tests
the way the public PyTorch ports of the Distill notebook write torch code (not a copy of any):

- the perception step: fixed Sobel and identity 3x3 filters (``torch.tensor``, ``.T``,
  ``torch.stack``, ``Tensor.repeat``), applied depthwise by ``F.conv2d(..., padding=1,
  groups=channel_n)``; the rotated-Sobel variant (``math.cos``/``math.sin`` of an angle) and
  the per-filter form (``view(1, 1, 3, 3).repeat(channel_n, 1, 1, 1)``, one ``F.conv2d`` per
  filter, ``torch.cat`` on the channel axis), circular padding by ``F.pad(mode='circular')``;
- the update rule as 1x1 ``nn.Conv2d`` layers with ``nn.ReLU``, the last one without bias and
  zero-initialised under ``torch.no_grad`` (``weight.zero_()``); a channels-last ``nn.Linear``
  form of the same rule (``permute``) that must agree with it;
- the stochastic update mask ``torch.rand(...) <= fire_rate`` (``.float()``), the alive mask
  ``F.max_pool2d(x[:, 3:4], 3, stride=1, padding=1) > 0.1``, ``pre & post`` life masks;
- a seed (``torch.zeros`` with one live pixel), a small RGBA target pattern made
  analytically and padded by ``F.pad``, ``to_rgba``/``to_rgb`` with ``clamp``;
- the sample pool: ``torch.randperm`` batches, per-sample ``F.mse_loss(..., reduction='none')
  .mean([1, 2, 3])``, ``argsort(descending=True)``, reseeding the worst sample, damage by a
  circular mask from ``torch.meshgrid``, writing the batch back by index assignment
  (``pool[batch_idx] = x.detach()``);
- training: ``torch.randint`` steps per iteration, ``F.mse_loss`` to the target,
  per-parameter gradient normalisation ``p.grad / (p.grad.norm() + 1e-8)`` before
  ``torch.optim.Adam.step()``, ``torch.optim.lr_scheduler.StepLR``; growing from the seed
  with the trained rule under ``torch.no_grad``.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn

torch.manual_seed(0)
fixed_results = {}

CHANNEL_N = 12  # number of CA state channels
TARGET_SIZE = 8
TARGET_PADDING = 2
CELL_FIRE_RATE = 0.5
POOL_SIZE = 16
BATCH_SIZE = 4


# ---------------------------------------------------------------- the target pattern


def make_target(size=TARGET_SIZE):
    """A small 'emoji': a red disc with a yellow centre, premultiplied alpha, RGBA first."""
    ys, xs = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    c = (size - 1) / 2.0
    r = torch.sqrt((ys - c) ** 2 + (xs - c) ** 2)
    alpha = torch.clamp(size / 2.0 - r, 0.0, 1.0)
    inner = (r < size / 5.0).float()
    red = torch.ones(size, size)
    green = 0.2 + 0.7 * inner
    blue = 0.1 * torch.ones(size, size)
    rgb = torch.stack([red, green, blue], 0) * alpha  # premultiplied
    return torch.cat([rgb, alpha[None]], 0)  # (4, H, W)


target_img = make_target()
pad_target = F.pad(target_img, [TARGET_PADDING] * 4)
h, w = pad_target.shape[1:]
pad_target = pad_target.unsqueeze(0)  # (1, 4, H, W)


def to_rgba(x):
    return x[:, :4]


def to_alpha(x):
    return torch.clamp(x[:, 3:4], 0.0, 1.0)


def to_rgb(x):
    # assume rgb premultiplied by alpha
    rgb, a = x[:, :3], to_alpha(x)
    return 1.0 - a + rgb


def make_seed(size_h, size_w, n=1, channel_n=CHANNEL_N):
    x = torch.zeros(n, channel_n, size_h, size_w)
    x[:, 3:, size_h // 2, size_w // 2] = 1.0
    return x


seed = make_seed(h, w)


# ---------------------------------------------------------------- the model


def get_living_mask(x):
    alpha = x[:, 3:4, :, :]
    return F.max_pool2d(alpha, kernel_size=3, stride=1, padding=1) > 0.1


class CAModel(nn.Module):
    def __init__(self, channel_n=CHANNEL_N, fire_rate=CELL_FIRE_RATE, hidden_size=64):
        super().__init__()
        self.channel_n = channel_n
        self.fire_rate = fire_rate

        ident = torch.tensor([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
        sobel_x = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]) / 8.0
        sobel_y = sobel_x.T
        kernel = torch.stack([ident, sobel_x, sobel_y], 0)  # (3, 3, 3)
        kernel = kernel.repeat(channel_n, 1, 1)[:, None]  # (3 * channel_n, 1, 3, 3)
        self.register_buffer("kernel", kernel)

        self.dmodel = nn.Sequential(
            nn.Conv2d(channel_n * 3, hidden_size, kernel_size=1),
            nn.ReLU(),
            nn.Conv2d(hidden_size, channel_n, kernel_size=1, bias=False),
        )
        with torch.no_grad():
            self.dmodel[2].weight.zero_()

    def perceive(self, x):
        return F.conv2d(x, self.kernel, padding=1, groups=self.channel_n)

    def update(self, x, fire_rate=None):
        fire_rate = self.fire_rate if fire_rate is None else fire_rate
        pre_life_mask = get_living_mask(x)

        y = self.perceive(x)
        dx = self.dmodel(y)
        update_mask = (torch.rand(x[:, :1, :, :].shape) <= fire_rate).float()
        x = x + dx * update_mask

        post_life_mask = get_living_mask(x)
        life_mask = (pre_life_mask & post_life_mask).float()
        return x * life_mask

    def forward(self, x, steps=1, fire_rate=None):
        for _ in range(steps):
            x = self.update(x, fire_rate)
        return x


class CAModelLinear(nn.Module):
    """The channels-last port: rotated Sobel filters, one conv per filter, nn.Linear rule."""

    def __init__(self, channel_n=CHANNEL_N, fire_rate=CELL_FIRE_RATE, hidden_size=64):
        super().__init__()
        self.channel_n = channel_n
        self.fire_rate = fire_rate
        self.fc0 = nn.Linear(channel_n * 3, hidden_size)
        self.fc1 = nn.Linear(hidden_size, channel_n, bias=False)
        with torch.no_grad():
            self.fc1.weight.zero_()

    def alive(self, x):
        return F.max_pool2d(x[:, 3:4, :, :], kernel_size=3, stride=1, padding=1) > 0.1

    def _perceive_with(self, x, weight):
        conv_weights = weight.view(1, 1, 3, 3).repeat(self.channel_n, 1, 1, 1)
        return F.conv2d(x, conv_weights, padding=1, groups=self.channel_n)

    def perceive(self, x, angle):
        dx = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]) / 8.0
        dy = dx.T
        c, s = math.cos(angle), math.sin(angle)
        w1 = c * dx - s * dy
        w2 = s * dx + c * dy

        y1 = self._perceive_with(x, w1)
        y2 = self._perceive_with(x, w2)
        # interleave per channel: [x_c, dx_c, dy_c] as the grouped conv orders its outputs
        y = torch.stack([x, y1, y2], 2).reshape(x.shape[0], -1, x.shape[2], x.shape[3])
        return y

    def update(self, x, fire_rate, angle):
        x = x.transpose(1, 3)  # (B, W, H, C) as the port keeps its state
        pre_life_mask = self.alive(x.transpose(1, 3))

        dx = self.perceive(x.transpose(1, 3), angle)
        dx = dx.transpose(1, 3)
        dx = self.fc0(dx)
        dx = F.relu(dx)
        dx = self.fc1(dx)

        if fire_rate is None:
            fire_rate = self.fire_rate
        stochastic = torch.rand([dx.size(0), dx.size(1), dx.size(2), 1]) <= fire_rate
        stochastic = stochastic.float()
        dx = dx * stochastic

        x = x + dx
        post_life_mask = self.alive(x.transpose(1, 3))
        life_mask = (pre_life_mask & post_life_mask).float()
        x = x.transpose(1, 3) * life_mask
        return x

    def forward(self, x, steps=1, fire_rate=None, angle=0.0):
        for _ in range(steps):
            x = self.update(x, fire_rate, angle)
        return x


# ---------------------------------------------------------------- fixed-weight checks

# (recorded) perception of a random state; the Sobel filters are antisymmetric
torch.manual_seed(0)
state_fixed = torch.rand(2, CHANNEL_N, h, w)
ca_fixed = CAModel()
perceived = ca_fixed.perceive(state_fixed)
fixed_results["perceived"] = perceived
identity_residual = float((perceived[:, 0::3] - state_fixed).abs().max())
# a constant field has no gradient inside the grid
flat = ca_fixed.perceive(torch.ones(1, CHANNEL_N, h, w))
flat_interior_gradient = float(flat[:, 1::3, 1:-1, 1:-1].abs().max()
                               + flat[:, 2::3, 1:-1, 1:-1].abs().max())
# a ramp along x has a Sobel-x response of one in the interior
ramp = torch.arange(w, dtype=torch.float32).expand(1, CHANNEL_N, h, w)
ramp_response = ca_fixed.perceive(ramp)[:, 1::3, 1:-1, 1:-1]
# circular padding (the "torus" world of some ports) matches wrap-around by torch.roll
state_c = state_fixed[:1, :2]
kernel_c = ca_fixed.kernel[:6]
circular = F.conv2d(F.pad(state_c, [1, 1, 1, 1], mode="circular"), kernel_c, groups=2)
rolled_sobel_x = (torch.roll(state_c, -1, 3) - torch.roll(state_c, 1, 3)) * 2 / 8 + \
    (torch.roll(state_c, (-1, -1), (2, 3)) - torch.roll(state_c, (-1, 1), (2, 3))) / 8 + \
    (torch.roll(state_c, (1, -1), (2, 3)) - torch.roll(state_c, (1, 1), (2, 3))) / 8
circular_residual = float((circular[:, 1::3] - rolled_sobel_x).abs().max())
fixed_results["circular"] = circular

# the zero-initialised last layer: the first update changes nothing
torch.manual_seed(0)
with torch.no_grad():
    untouched = ca_fixed(seed.clone(), steps=3)
zero_init_change = float((untouched - seed).abs().max())
# the alive mask of the seed: its 3x3 neighbourhood
seed_alive = int(get_living_mask(seed).sum())

# (recorded) a randomly initialised last layer: a few stochastic steps and their gradients
torch.manual_seed(1)
ca_rand = CAModel()
with torch.no_grad():
    nn.init.normal_(ca_rand.dmodel[2].weight, std=0.05)
torch.manual_seed(2)
x_rand = ca_rand(seed.repeat(2, 1, 1, 1), steps=6)
loss_rand = F.mse_loss(to_rgba(x_rand), pad_target.expand(2, -1, -1, -1))
loss_rand.backward()
fixed_results["rand_steps"] = x_rand.detach()
fixed_results["rand_loss"] = loss_rand.detach()
fixed_results["rand_grads"] = {name: p.grad.clone() for name, p in ca_rand.named_parameters()}
alive_after = int(get_living_mask(x_rand).sum())
dead_cells_zero = bool((x_rand.detach() * (~get_living_mask(x_rand)).float()).abs().max() == 0)

# fire_rate=1 makes the rule deterministic; the Linear port with the same weights agrees
ca_lin = CAModelLinear()
with torch.no_grad():
    ca_lin.fc0.weight.copy_(ca_rand.dmodel[0].weight[:, :, 0, 0])
    ca_lin.fc0.bias.copy_(ca_rand.dmodel[0].bias)
    ca_lin.fc1.weight.copy_(ca_rand.dmodel[2].weight[:, :, 0, 0])
with torch.no_grad():
    x_conv = ca_rand(seed.repeat(2, 1, 1, 1), steps=5, fire_rate=1.0)
    x_lin = ca_lin(seed.repeat(2, 1, 1, 1), steps=5, fire_rate=1.0, angle=0.0)
    x_lin_rot = ca_lin(seed.repeat(2, 1, 1, 1), steps=5, fire_rate=1.0, angle=math.pi / 2)
ports_difference = float((x_conv - x_lin).abs().max())
rotation_changes = float((x_lin_rot - x_lin).abs().max())
fixed_results["deterministic_steps"] = x_conv


# ---------------------------------------------------------------- training with a pool

torch.manual_seed(0)
ca = CAModel(hidden_size=64)
lr = 1e-2
lr_gamma = 0.5
betas = (0.5, 0.5)
optimizer = torch.optim.Adam(ca.parameters(), lr=lr, betas=betas)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=40, gamma=lr_gamma)

pool = seed.repeat(POOL_SIZE, 1, 1, 1)
target_batch = pad_target.repeat(BATCH_SIZE, 1, 1, 1)


def loss_f(x, target):
    return F.mse_loss(to_rgba(x), target, reduction="none").mean([1, 2, 3])


def make_circle_masks(n, h, w):
    x = torch.linspace(-1.0, 1.0, w)[None, None, :]
    y = torch.linspace(-1.0, 1.0, h)[None, :, None]
    center = torch.rand(2, n, 1, 1) - 0.5
    r = 0.3 * torch.rand(n, 1, 1) + 0.1
    x, y = (x - center[0]) / r, (y - center[1]) / r
    mask = (x * x + y * y < 1.0).float()
    return mask


def train(x, target, steps, optimizer, scheduler):
    x = ca(x, steps=steps)
    loss = F.mse_loss(to_rgba(x), target)
    optimizer.zero_grad()
    loss.backward()
    for p in ca.parameters():
        p.grad = p.grad / (p.grad.norm() + 1e-8)  # normalize gradients
    optimizer.step()
    scheduler.step()
    return x, loss


n_epoch = 80
loss_log, lr_log, pool_losses = [], [], []
grad_norms_after = []
for i in range(n_epoch):
    batch_idx = torch.randperm(POOL_SIZE)[:BATCH_SIZE]
    x0 = pool[batch_idx]
    loss_rank = loss_f(x0, target_batch).argsort(descending=True)
    x0 = x0[loss_rank]
    x0[:1] = seed  # replace the worst with the seed
    if i >= 40:  # damage the best samples once the pattern has started to form
        damage = 1.0 - make_circle_masks(1, h, w)[:, None]
        x0[-1:] = x0[-1:] * damage

    steps = int(torch.randint(10, 16, (1,)))
    x, loss = train(x0, target_batch, steps, optimizer, scheduler)
    pool[batch_idx] = x.detach()

    loss_log.append(loss.item())
    lr_log.append(scheduler.get_last_lr()[0])
    grad_norms_after.append(max(float(p.grad.norm()) for p in ca.parameters()))
    pool_losses.append(float(loss_f(pool, pad_target.expand(POOL_SIZE, -1, -1, -1)).mean()))

# grow from the seed with the trained rule
torch.manual_seed(7)
with torch.no_grad():
    grown = ca(seed.clone(), steps=14)
grown_loss = float(F.mse_loss(to_rgba(grown), pad_target))
seed_loss = float(F.mse_loss(to_rgba(seed), pad_target))
grown_rgb = to_rgb(grown)
grown_alive = int(get_living_mask(grown).sum())
target_alive = int((pad_target[:, 3:4] > 0.1).sum())

if __name__ == "__main__":
    print(f"identity {identity_residual:.1e}, flat {flat_interior_gradient:.1e}, circular "
          f"{circular_residual:.1e}, zero-init change {zero_init_change}, ports "
          f"{ports_difference:.1e}, rotation {rotation_changes:.3f}")
    print(f"seed alive {seed_alive}, after rand steps {alive_after}, dead zero {dead_cells_zero}")
    print(f"loss {loss_log[0]:.4f} -> {loss_log[-1]:.4f}, pool {pool_losses[0]:.4f} -> "
          f"{pool_losses[-1]:.4f}, lr {lr_log[-1]:.1e}")
    print(f"grown loss {grown_loss:.4f} (seed {seed_loss:.4f}), alive {grown_alive} "
          f"(target {target_alive})")
