# ruff: noqa: N812 (the usual F alias)
"""A capsule network (Sabour, Frosst and Hinton's dynamic routing) and a self-routing capsule
layer (Hahn et al.), written for these tests the way public CapsNet code in torch writes them
(not a copy of any):

- primary capsules from an ``nn.Conv2d`` whose channels are split into capsule types and
  reshaped into vectors (``view``, ``permute``, ``reshape``); ``squash`` (``sum`` of squares
  with ``keepdim``, ``torch.sqrt`` with an epsilon);
- routing by agreement: predictions ``torch.matmul(W[None], u[:, None, :, :, None])``
  broadcast over the batch, ``torch.squeeze``, routing logits ``b`` updated three times with
  ``F.softmax`` over the output capsules, ``u_hat.detach()`` in the inner iterations (as most
  implementations do) and without it (for ``torch.autograd.gradcheck``);
- the margin loss (``F.relu(0.9 - v) ** 2``, ``torch.clamp``), a reconstruction decoder masked
  by the true class (``torch.eye(n)[labels]``) or by the predicted one
  (``torch.eye(n).index_select(0, lengths.argmax(1))``), ``nn.Sigmoid``, ``F.mse_loss``;
- a self-routing layer: per-capsule routing by ``torch.einsum`` and ``F.softmax``, activations
  weighted by the routing coefficients;
- scikit-learn's bundled 8x8 digits (synthetic strokes when scikit-learn is absent) in a
  ``TensorDataset``/``DataLoader``, ``Adam`` with ``ExponentialLR``; ``model.eval()`` accuracy.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
fixed_results = {}
NUM_CLASSES = 10

# ----------------------------------------------------------------------------- capsules


def squash(s, dim=-1, eps=1e-8):
    squared_norm = (s ** 2).sum(dim=dim, keepdim=True)
    scale = squared_norm / (1 + squared_norm)
    return scale * s / torch.sqrt(squared_norm + eps)


def dynamic_routing(u_hat, num_iterations=3, detach=True):
    """u_hat: (B, out_caps, in_caps, out_dim) predictions. Returns the output capsules
    (B, out_caps, out_dim) and the last coupling coefficients (B, out_caps, in_caps)."""
    batch, out_caps, in_caps, _ = u_hat.shape
    b = torch.zeros(batch, out_caps, in_caps, dtype=u_hat.dtype)
    u_hat_detached = u_hat.detach() if detach else u_hat
    for i in range(num_iterations):
        c = F.softmax(b, dim=1)  # each input capsule shares itself among the outputs
        if i == num_iterations - 1:
            v = squash(torch.sum(c[:, :, :, None] * u_hat, dim=-2, keepdim=True))
        else:
            v = squash(torch.sum(c[:, :, :, None] * u_hat_detached, dim=-2, keepdim=True))
            b = b + torch.sum(v * u_hat_detached, dim=-1)
    return torch.squeeze(v, dim=-2), c


class PrimaryCapsules(nn.Module):
    def __init__(self, in_channels, num_types, caps_dim, kernel_size, stride=1):
        super().__init__()
        self.num_types, self.caps_dim = num_types, caps_dim
        self.conv = nn.Conv2d(in_channels, num_types * caps_dim, kernel_size, stride)

    def forward(self, x):
        out = self.conv(x)
        B, _, H, W = out.shape
        out = out.view(B, self.num_types, self.caps_dim, H, W).permute(0, 1, 3, 4, 2)
        return squash(out.reshape(B, -1, self.caps_dim))


class DigitCapsules(nn.Module):
    def __init__(self, in_caps, in_dim, out_caps, out_dim, routings=3):
        super().__init__()
        self.routings = routings
        self.weight = nn.Parameter(0.05 * torch.randn(out_caps, in_caps, out_dim, in_dim))
        self.detach = True

    def forward(self, u):
        u_hat = torch.squeeze(torch.matmul(self.weight[None], u[:, None, :, :, None]), dim=-1)
        v, self.coupling = dynamic_routing(u_hat, self.routings, self.detach)
        return v


class CapsNet(nn.Module):
    def __init__(self, image_size=8, conv_channels=32, primary_types=8, primary_dim=8,
                 digit_dim=16, routings=3):
        super().__init__()
        self.image_size = image_size
        self.conv1 = nn.Conv2d(1, conv_channels, kernel_size=3)
        self.primary = PrimaryCapsules(conv_channels, primary_types, primary_dim, 3)
        side = image_size - 4
        self.digits = DigitCapsules(primary_types * side * side, primary_dim, NUM_CLASSES,
                                    digit_dim, routings)
        self.decoder = nn.Sequential(
            nn.Linear(digit_dim * NUM_CLASSES, 128), nn.ReLU(inplace=True),
            nn.Linear(128, 256), nn.ReLU(inplace=True),
            nn.Linear(256, image_size * image_size), nn.Sigmoid())

    def forward(self, x, y=None):
        v = self.digits(self.primary(F.relu(self.conv1(x))))
        lengths = v.norm(dim=-1)
        if y is None:  # mask by the prediction
            mask = torch.eye(NUM_CLASSES).index_select(dim=0, index=lengths.argmax(dim=1))
        else:
            mask = torch.eye(NUM_CLASSES)[y]
        reconstruction = self.decoder((v * mask[:, :, None]).view(x.size(0), -1))
        return lengths, reconstruction.view(-1, 1, self.image_size, self.image_size)


def margin_loss(lengths, labels, m_plus=0.9, m_minus=0.1, lam=0.5):
    T = F.one_hot(labels, NUM_CLASSES).float()
    present = F.relu(m_plus - lengths) ** 2
    absent = torch.clamp(lengths - m_minus, min=0) ** 2
    return (T * present + lam * (1 - T) * absent).sum(dim=1).mean()


def capsule_loss(images, labels, lengths, reconstruction, lam_recon=0.392):
    margin = margin_loss(lengths, labels)
    recon = F.mse_loss(reconstruction, images)
    return margin + lam_recon * recon, margin, recon


# ------------------------------------------------------------------------ self-routing


class SelfRouting(nn.Module):
    """Each input capsule routes itself with its own small linear classifier (no iterations);
    the outputs' activations are the activation-weighted routing coefficients."""

    def __init__(self, in_caps, in_dim, out_caps, out_dim):
        super().__init__()
        self.W = nn.Parameter(0.1 * torch.randn(in_caps, out_caps, out_dim, in_dim))
        self.W_route = nn.Parameter(0.1 * torch.randn(in_caps, out_caps, in_dim))
        self.b_route = nn.Parameter(torch.zeros(1, in_caps, out_caps))

    def forward(self, u, a):
        """u: (B, in_caps, in_dim) poses, a: (B, in_caps) activations in (0, 1)."""
        u_hat = torch.einsum("iokd,bid->biok", self.W, u)
        logits = torch.einsum("iod,bid->bio", self.W_route, u) + self.b_route
        c = F.softmax(logits, dim=2)
        ar = c * a[:, :, None]
        a_out = ar.sum(dim=1) / a.sum(dim=1, keepdim=True)
        pose = (ar[:, :, :, None] * u_hat).sum(dim=1) / ar.sum(dim=1)[:, :, None]
        return pose, a_out, c


class SelfRoutingNet(nn.Module):
    def __init__(self, image_size=8, channels=16, caps_dim=4, types=4):
        super().__init__()
        self.types, self.caps_dim = types, caps_dim
        self.conv1 = nn.Conv2d(1, channels, 3)
        self.pose = nn.Conv2d(channels, types * caps_dim, 3)
        self.act = nn.Conv2d(channels, types, 3)
        side = image_size - 4
        self.route = SelfRouting(types * side * side, caps_dim, NUM_CLASSES, caps_dim)

    def forward(self, x):
        h = F.relu(self.conv1(x))
        B = x.size(0)
        pose = self.pose(h).view(B, self.types, self.caps_dim, -1).transpose(2, 3)
        pose = pose.reshape(B, -1, self.caps_dim)
        act = torch.sigmoid(self.act(h)).view(B, -1)
        _, a_out, _ = self.route(pose, act)
        return a_out


# -------------------------------------------------------------------------------- data


def synthetic_digits(n, generator):
    """Ten 8x8 stroke templates with noise: a stand-in for the bundled digits."""
    templates = torch.zeros(NUM_CLASSES, 8, 8)
    for k in range(NUM_CLASSES):
        templates[k, k % 8, :] = 1.0
        templates[k, :, (3 * k) % 8] = 1.0
    labels = torch.randint(0, NUM_CLASSES, (n,), generator=generator)
    images = templates[labels] + 0.2 * torch.rand(n, 8, 8, generator=generator)
    return images.clamp(0, 1)[:, None], labels


try:
    from sklearn.datasets import load_digits
except ImportError:  # pragma: no cover - scikit-learn is a test dependency
    load_digits = None

if load_digits is not None:
    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32)[:, None] / 16.0
    labels = torch.tensor(digits.target, dtype=torch.long)
    data_source = "sklearn"
else:
    images, labels = synthetic_digits(1500, torch.Generator().manual_seed(0))
    data_source = "synthetic"
order = torch.randperm(images.size(0), generator=torch.Generator().manual_seed(42))
train_idx, test_idx = order[:1000], order[1000:1500]
train_loader = DataLoader(TensorDataset(images[train_idx], labels[train_idx]), batch_size=50,
                          shuffle=True, generator=torch.Generator().manual_seed(5))
test_x, test_y = images[test_idx], labels[test_idx]

# ----------------------------------------------------- fixed-weight checks (recorded)

model = CapsNet()
xb, yb = images[train_idx[:6]], labels[train_idx[:6]]
lengths, reconstruction = model(xb, yb)
loss, margin, recon = capsule_loss(xb, yb, lengths, reconstruction)
loss.backward()
fixed_results["lengths"] = lengths.detach()
fixed_results["reconstruction"] = reconstruction.detach()
fixed_results["coupling"] = model.digits.coupling
fixed_results["losses"] = [loss.item(), margin.item(), recon.item()]
fixed_results["grads"] = {n: p.grad.clone() for n, p in model.named_parameters()
                          if n in ("conv1.weight", "primary.conv.bias", "digits.weight",
                                   "decoder.4.bias")}
detached_grad = model.digits.weight.grad.clone()
model.zero_grad()

# without the detach: the same outputs, a gradient that also flows through the routing
model.digits.detach = False
lengths_nd, reconstruction_nd = model(xb, yb)
capsule_loss(xb, yb, lengths_nd, reconstruction_nd)[0].backward()
model.digits.detach = True
full_grad = model.digits.weight.grad.clone()
fixed_results["full_routing_grad"] = full_grad
detach_forward_difference = (lengths_nd - lengths).abs().max().item()
detach_grad_difference = ((full_grad - detached_grad).abs().max() / full_grad.abs().max()).item()
model.zero_grad()

# masking by the prediction
with torch.no_grad():
    pred_lengths, pred_reconstruction = model(xb)
fixed_results["predicted_mask_reconstruction"] = pred_reconstruction
masks_agree = torch.equal(torch.eye(NUM_CLASSES)[yb],
                          torch.eye(NUM_CLASSES).index_select(0, yb))

# squash and routing in float64
s = torch.randn(3, 5, 4, dtype=torch.float64)
s[0, 0] = 0.0  # a zero vector: the epsilon keeps it finite
squashed = squash(s)
fixed_results["squash"] = squashed
u_hat64 = torch.randn(2, 3, 6, 4, dtype=torch.float64)
v64, c64 = dynamic_routing(u_hat64, detach=False)
fixed_results["routing_v"] = v64
fixed_results["routing_c"] = c64


def predict_and_route(u, W, detach=False):
    u_hat = torch.squeeze(torch.matmul(W[None], u[:, None, :, :, None]), dim=-1)
    return dynamic_routing(u_hat, 3, detach=detach)[0]


u64 = torch.randn(2, 5, 3, dtype=torch.float64, requires_grad=True)
W64 = (0.5 * torch.randn(3, 5, 4, 3, dtype=torch.float64)).requires_grad_()
gradcheck_results = {
    "squash": torch.autograd.gradcheck(squash, (torch.randn(2, 3, 4, dtype=torch.float64,
                                                            requires_grad=True),)),
    "routing": torch.autograd.gradcheck(lambda u: dynamic_routing(u, 3, False)[0],
                                        (u_hat64[:1, :, :4].clone().requires_grad_(),)),
    "predict_and_route": torch.autograd.gradcheck(predict_and_route, (u64, W64)),
}
routing_grads = torch.autograd.grad(predict_and_route(u64, W64).pow(2).sum(), (u64, W64))
fixed_results["routing_grads"] = dict(zip("uW", routing_grads))
routed_detached = predict_and_route(u64, W64, detach=True)
detached_routing_grads = torch.autograd.grad(routed_detached.pow(2).sum(), (u64, W64))
fixed_results["detached_routing_grads"] = dict(zip("uW", detached_routing_grads))
routing_detach_forward_difference = (
    routed_detached - predict_and_route(u64, W64)).abs().max().item()

# the self-routing layer in float64
self_routing = SelfRouting(5, 3, 4, 2).double()
with torch.no_grad():
    self_routing.b_route.normal_()
a64 = torch.rand(2, 5, dtype=torch.float64, requires_grad=True)
sr_pose, sr_act, sr_c = self_routing(u64, a64)
fixed_results["self_routing"] = {"pose": sr_pose.detach(), "act": sr_act.detach(),
                                 "c": sr_c.detach()}
gradcheck_results["self_routing"] = torch.autograd.gradcheck(
    lambda u, a: self_routing(u, a)[:2], (u64, a64))

# ------------------------------------------------------------------------------ training


def evaluate(net, x, y):
    net.eval()
    with torch.no_grad():
        lengths, _ = net(x)
    net.train()
    return (lengths.argmax(dim=1) == y).float().mean().item(), lengths


torch.manual_seed(0)
model = CapsNet()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.8)
epochs = 3
losses, margins, recons = [], [], []
for epoch in range(epochs):
    model.train()
    for x, y in train_loader:
        lengths, reconstruction = model(x, y)
        loss, margin, recon = capsule_loss(x, y, lengths, reconstruction)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        margins.append(margin.item())
        recons.append(recon.item())
    scheduler.step()
    print(f"epoch {epoch}: loss {sum(losses[-20:]) / 20:.4f}")
accuracy, test_lengths = evaluate(model, test_x, test_y)
coupling = model.digits.coupling  # from the evaluation pass

# the self-routing network: a short run with the margin loss on its activations
torch.manual_seed(0)
sr_model = SelfRoutingNet()
sr_optimizer = torch.optim.Adam(sr_model.parameters(), lr=1e-2)
sr_losses = []
for _ in range(2):
    for x, y in train_loader:
        loss = margin_loss(sr_model(x), y)
        sr_optimizer.zero_grad()
        loss.backward()
        sr_optimizer.step()
        sr_losses.append(loss.item())
sr_model.eval()
with torch.no_grad():
    sr_accuracy = (sr_model(test_x).argmax(dim=1) == test_y).float().mean().item()

print(f"{data_source} digits: capsnet accuracy {accuracy:.3f} (loss {losses[0]:.3f} -> "
      f"{sum(losses[-20:]) / 20:.3f}), self-routing {sr_accuracy:.3f}")
