"""Contrastive self-supervised learning (SimCLR, Chen et al. 2020) on synthetic textures, written
for these tests in the way common SimCLR implementations (sthalles/SimCLR, Spijkervet/SimCLR)
commonly write torch code (modelled on their API usage, not a copy of either):

- a synthetic set of four texture classes made with torch.meshgrid, torch.sin/torch.exp,
  ``uniform_(..., generator=g)``, ``torch.randint(..., generator=g)`` and fancy indexing;
- augmentations written with tensor ops on a batch: reflect-padded random crops by slicing at
  ``torch.randint`` offsets, horizontal flips with ``torch.flip`` chosen by ``torch.where``,
  brightness/contrast jitter with ``uniform_``, a random grayscale by ``expand_as``,
  ``torch.roll`` shifts and ``torch.randn_like`` noise; a two-view generator;
- a small conv backbone whose ``fc`` is swapped for an MLP projection head
  (``nn.Sequential(nn.Linear, nn.ReLU, backbone.fc)``);
- the NT-Xent loss three ways: sthalles' ``info_nce_loss`` (F.normalize, ``features @ features.T``,
  ``torch.eye(..., dtype=torch.bool)``, ``[~mask].view(...)``, positives and negatives
  ``torch.cat``'ed, ``torch.zeros(N, dtype=torch.long)`` labels, cross entropy of logits over a
  temperature), Spijkervet's ``NT_Xent`` module (``nn.CosineSimilarity(dim=2)`` of
  ``unsqueeze``'d views, ``fill_diagonal_`` mask, ``torch.diag(sim, k)``,
  ``CrossEntropyLoss(reduction="sum")``) and a ``masked_fill(-inf)`` + ``roll`` variant;
- top-k accuracy with ``topk`` + ``t()`` + ``eq`` + ``expand_as`` + ``mul_``;
- a LARS optimizer as a ``torch.optim.Optimizer`` subclass (``@torch.no_grad() def step(self,
  closure=None)``, ``self.state[p]``, a ``torch.where`` trust ratio, exclusion of biases and
  norms), CosineAnnealingLR stepped per iteration, a DataLoader over a TensorDataset;
- a checkpoint through ``torch.save``/``torch.load``, its backbone keys renamed and loaded with
  ``load_state_dict(strict=False)`` (missing ``fc`` keys), the backbone frozen with
  ``requires_grad_(False)``, features under ``torch.no_grad()`` and a linear probe with Adam;
- fixed-weight results (views, the three losses, gradients, accuracies, LARS steps, the
  schedule, probe logits) for the torch comparison.
"""
import math
import os
import tempfile

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.optim import Optimizer
from jitgrad.optim.lr_scheduler import CosineAnnealingLR
from jitgrad.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = True
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
SIZE, N_CLASSES = 16, 4


def make_textures(n, seed):
    """Horizontal, vertical and diagonal stripes and a blob, in random colours, with noise."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, N_CLASSES, (n,), generator=g)
    ys, xs = torch.meshgrid(torch.arange(SIZE, dtype=torch.float32),
                            torch.arange(SIZE, dtype=torch.float32), indexing="ij")
    freq = torch.empty(n, 1, 1).uniform_(0.7, 1.3, generator=g)
    phase = torch.rand(n, 1, 1, generator=g) * 2 * math.pi
    centre = torch.randint(4, SIZE - 4, (2, n, 1, 1), generator=g).float()
    blob = torch.exp(-((xs - centre[1]) ** 2 + (ys - centre[0]) ** 2) / 10.0) * 2 - 1
    patterns = torch.stack([torch.sin(freq * ys + phase), torch.sin(freq * xs + phase),
                            torch.sin(freq * (xs + ys) / math.sqrt(2) + phase), blob], dim=1)
    images = patterns[torch.arange(n), labels].unsqueeze(1)
    colour = torch.rand(n, 3, 1, 1, generator=g) * 0.6 + 0.4
    images = 0.5 + 0.45 * images * colour + 0.05 * torch.randn(n, 3, SIZE, SIZE, generator=g)
    return images.clamp(0.0, 1.0), labels


class TensorAugment:
    """SimCLR's augmentations, on a whole batch at once and with tensor ops only."""

    def __init__(self, size, pad=2, jitter=0.3, p_flip=0.5, p_gray=0.1, max_shift=2, noise=0.03):
        self.size, self.pad, self.jitter = size, pad, jitter
        self.p_flip, self.p_gray, self.max_shift, self.noise = p_flip, p_gray, max_shift, noise
        self.gray_weights = torch.tensor([0.299, 0.587, 0.114]).view(1, 3, 1, 1)

    def random_crop(self, x):
        padded = F.pad(x, (self.pad,) * 4, mode="reflect")
        offsets = torch.randint(0, 2 * self.pad + 1, (x.size(0), 2))
        out = torch.empty_like(x)
        for i, (dy, dx) in enumerate(offsets.tolist()):
            out[i] = padded[i, :, dy:dy + self.size, dx:dx + self.size]
        return out

    def random_resized_crop(self, x, scale=(0.8, 1.0), ratio=(3 / 4, 4 / 3)):
        """A batched RandomResizedCrop: an affine sampling grid per image."""
        n = x.size(0)
        area = torch.empty(n).uniform_(*scale)
        log_ratio = torch.empty(n).uniform_(math.log(ratio[0]), math.log(ratio[1]))
        aspect = torch.exp(log_ratio)
        w = torch.sqrt(area * aspect).clamp(max=1.0)
        h = torch.sqrt(area / aspect).clamp(max=1.0)
        centre = (torch.rand(n, 2) * 2 - 1) * torch.stack([1 - w, 1 - h], dim=1)
        theta = torch.zeros(n, 2, 3)
        theta[:, 0, 0] = w
        theta[:, 1, 1] = h
        theta[:, :, 2] = centre
        grid = F.affine_grid(theta, list(x.shape), align_corners=False)
        return F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection",
                             align_corners=False)

    def random_flip(self, x):
        flip = torch.rand(x.size(0)) < self.p_flip
        return torch.where(flip[:, None, None, None], torch.flip(x, dims=[3]), x)

    def color_jitter(self, x):
        n = x.size(0)
        brightness = torch.empty(n, 1, 1, 1).uniform_(1 - self.jitter, 1 + self.jitter)
        contrast = torch.empty(n, 1, 1, 1).uniform_(1 - self.jitter, 1 + self.jitter)
        saturation = torch.empty(n, 1, 1, 1).uniform_(1 - self.jitter, 1 + self.jitter)
        x = x * brightness
        mean = x.mean(dim=(1, 2, 3), keepdim=True)
        x = ((x - mean) * contrast + mean).clamp(0, 1)
        gray = (x * self.gray_weights).sum(dim=1, keepdim=True)
        return torch.lerp(gray.expand_as(x), x, saturation).clamp(0, 1)

    def random_grayscale(self, x):
        gray = (x * self.gray_weights).sum(dim=1, keepdim=True).expand_as(x)
        keep = torch.rand(x.size(0), 1, 1, 1) >= self.p_gray
        return torch.where(keep, x, gray)

    def gaussian_blur(self, x, kernel_size=3, sigma=(0.1, 1.0)):
        """One random sigma per batch; a separable kernel applied per channel (groups=3)."""
        s = torch.empty(1).uniform_(*sigma).item()
        r = torch.arange(kernel_size, dtype=torch.float32) - kernel_size // 2
        kernel = torch.exp(-r.pow(2) / (2 * s ** 2))
        kernel = kernel / kernel.sum()
        channels = x.size(1)
        x = F.pad(x, (kernel_size // 2,) * 4, mode="reflect")
        x = F.conv2d(x, kernel.view(1, 1, -1, 1).repeat(channels, 1, 1, 1), groups=channels)
        return F.conv2d(x, kernel.view(1, 1, 1, -1).repeat(channels, 1, 1, 1), groups=channels)

    def random_shift(self, x):
        shifts = torch.randint(-self.max_shift, self.max_shift + 1, (2,))
        return torch.roll(x, shifts=tuple(shifts.tolist()), dims=(2, 3))

    def __call__(self, x):
        x = self.random_resized_crop(self.random_crop(x))
        x = self.random_flip(x)
        x = self.color_jitter(x)
        x = self.random_grayscale(x)
        x = self.gaussian_blur(x)
        x = self.random_shift(x)
        return x + self.noise * torch.randn_like(x)


class ContrastiveLearningViewGenerator:
    """Take two random views of the same batch."""

    def __init__(self, base_transform, n_views=2):
        self.base_transform = base_transform
        self.n_views = n_views

    def __call__(self, x):
        return [self.base_transform(x) for i in range(self.n_views)]


class ConvBackbone(nn.Module):
    def __init__(self, num_classes=10, width=16):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1, bias=False), nn.BatchNorm2d(width),
            nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1, bias=False), nn.BatchNorm2d(2 * width),
            nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten())
        self.fc = nn.Linear(2 * width, num_classes)

    def forward(self, x):
        return self.fc(self.features(x))


class ResNetSimCLR(nn.Module):
    def __init__(self, out_dim):
        super().__init__()
        self.backbone = ConvBackbone(num_classes=out_dim)
        dim_mlp = self.backbone.fc.in_features
        # add an MLP projection head
        self.backbone.fc = nn.Sequential(nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.backbone.fc)

    def forward(self, x):
        return self.backbone(x)


def info_nce_loss(features, batch_size, n_views=2, temperature=0.2):
    labels = torch.cat([torch.arange(batch_size) for i in range(n_views)], dim=0)
    labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float()

    features = F.normalize(features, dim=1)
    similarity_matrix = torch.matmul(features, features.T)

    # discard the main diagonal from both the labels and the similarities
    mask = torch.eye(labels.shape[0], dtype=torch.bool)
    labels = labels[~mask].view(labels.shape[0], -1)
    similarity_matrix = similarity_matrix[~mask].view(similarity_matrix.shape[0], -1)

    positives = similarity_matrix[labels.bool()].view(labels.shape[0], -1)
    negatives = similarity_matrix[~labels.bool()].view(similarity_matrix.shape[0], -1)

    logits = torch.cat([positives, negatives], dim=1)
    labels = torch.zeros(logits.shape[0], dtype=torch.long)
    return logits / temperature, labels


class NT_Xent(nn.Module):  # noqa: N801 (the name such code gives it)
    def __init__(self, batch_size, temperature):
        super().__init__()
        self.batch_size = batch_size
        self.temperature = temperature
        self.mask = self.mask_correlated_samples(batch_size)
        self.criterion = nn.CrossEntropyLoss(reduction="sum")
        self.similarity_f = nn.CosineSimilarity(dim=2)

    def mask_correlated_samples(self, batch_size):
        n = 2 * batch_size
        mask = torch.ones((n, n), dtype=bool)
        mask = mask.fill_diagonal_(0)
        for i in range(batch_size):
            mask[i, batch_size + i] = 0
            mask[batch_size + i, i] = 0
        return mask

    def forward(self, z_i, z_j):
        n = 2 * self.batch_size
        z = torch.cat((z_i, z_j), dim=0)
        sim = self.similarity_f(z.unsqueeze(1), z.unsqueeze(0)) / self.temperature
        sim_i_j = torch.diag(sim, self.batch_size)
        sim_j_i = torch.diag(sim, -self.batch_size)
        positive_samples = torch.cat((sim_i_j, sim_j_i), dim=0).reshape(n, 1)
        negative_samples = sim[self.mask].reshape(n, -1)
        labels = torch.zeros(n).to(positive_samples.device).long()
        logits = torch.cat((positive_samples, negative_samples), dim=1)
        loss = self.criterion(logits, labels)
        return loss / n


def nt_xent_masked(z, temperature=0.2):
    """The positives are the other view, at index (i + B) mod 2B; the self-similarities masked."""
    z = F.normalize(z, dim=1)
    sim = z @ z.T / temperature
    self_mask = torch.eye(z.shape[0], dtype=torch.bool, device=z.device)
    sim = sim.masked_fill(self_mask, float("-inf"))
    targets = torch.arange(z.shape[0], device=z.device).roll(z.shape[0] // 2)
    return F.cross_entropy(sim, targets)


def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions for the specified values of k"""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)

        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))

        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


def exclude_bias_and_norm(p):
    return p.ndim == 1


class LARS(Optimizer):
    def __init__(self, params, lr, weight_decay=0, momentum=0.9, eta=0.001,
                 weight_decay_filter=None, lars_adaptation_filter=None):
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, eta=eta,
                        weight_decay_filter=weight_decay_filter,
                        lars_adaptation_filter=lars_adaptation_filter)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
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
                    q = torch.where(param_norm > 0.,
                                    torch.where(update_norm > 0,
                                                (g["eta"] * param_norm / update_norm), one), one)
                    dp = dp.mul(q)
                param_state = self.state[p]
                if "mu" not in param_state:
                    param_state["mu"] = torch.zeros_like(p)
                mu = param_state["mu"]
                mu.mul_(g["momentum"]).add_(dp)
                p.add_(mu, alpha=-g["lr"])
        return loss


class SimCLR:
    def __init__(self, model, optimizer, scheduler, batch_size, n_views=2, temperature=0.2,
                 fp16_precision=False):
        self.model, self.optimizer, self.scheduler = model.to(device), optimizer, scheduler
        self.fp16_precision = fp16_precision
        self.batch_size, self.n_views, self.temperature = batch_size, n_views, temperature
        self.criterion = nn.CrossEntropyLoss()
        self.views = ContrastiveLearningViewGenerator(TensorAugment(SIZE), n_views)

    def train(self, train_loader, epochs):
        self.losses, self.top1, self.lrs = [], [], []
        scaler = torch.amp.GradScaler(device.type, enabled=self.fp16_precision)
        n_iter = 0
        for epoch_counter in range(epochs):
            for images, _ in train_loader:
                images = torch.cat(self.views(images), dim=0).to(device)
                with torch.autocast(device.type, enabled=self.fp16_precision):
                    features = self.model(images)
                    logits, labels = info_nce_loss(features, self.batch_size, self.n_views,
                                                   self.temperature)
                    loss = self.criterion(logits, labels.to(device))

                self.optimizer.zero_grad()
                scaler.scale(loss).backward()
                scaler.step(self.optimizer)
                scaler.update()
                self.lrs.append(self.scheduler.get_last_lr()[0])
                self.scheduler.step()

                top1, top5 = accuracy(logits, labels, topk=(1, 5))
                self.losses.append(loss.item())
                self.top1.append(top1[0].item())
                n_iter += 1
            print(f"Epoch: {epoch_counter}\tLoss: {loss.item():.4f}\tTop1 accuracy: "
                  f"{top1[0].item():.1f}\tlr: {self.scheduler.get_last_lr()[0]:.4f}")
        return n_iter


@torch.no_grad()
def knn_predict(feature, feature_bank, feature_labels, classes, knn_k=20, knn_t=0.1):
    """The weighted kNN monitor of contrastive training: the k most similar bank features
    vote for their labels with weights exp(similarity / t)."""
    sim_matrix = torch.mm(feature, feature_bank)  # [B, N]
    sim_weight, sim_indices = sim_matrix.topk(k=knn_k, dim=-1)
    sim_labels = torch.gather(feature_labels.expand(feature.size(0), -1), dim=-1,
                              index=sim_indices)
    sim_weight = (sim_weight / knn_t).exp()
    one_hot_label = torch.zeros(feature.size(0) * knn_k, classes, device=sim_labels.device)
    one_hot_label = one_hot_label.scatter(dim=-1, index=sim_labels.view(-1, 1), value=1.0)
    pred_scores = torch.sum(one_hot_label.view(feature.size(0), -1, classes)
                            * sim_weight.unsqueeze(dim=-1), dim=1)
    return pred_scores.argsort(dim=-1, descending=True), pred_scores


def knn_monitor(net, x_bank, y_bank, x_test, y_test, knn_k=20, knn_t=0.1):
    net.eval()
    with torch.no_grad():
        feature_bank = F.normalize(net(x_bank), dim=1).t().contiguous()
        feature = F.normalize(net(x_test), dim=1)
        pred_labels, _ = knn_predict(feature, feature_bank, y_bank, N_CLASSES, knn_k, knn_t)
    net.train()
    return (pred_labels[:, 0] == y_test).float().mean().item() * 100


def linear_probe(backbone_state, x_train, y_train, x_test, y_test, epochs=40):
    """Load the backbone without its head, freeze it and fit a linear classifier on top."""
    model = ConvBackbone(num_classes=N_CLASSES)
    state_dict = dict(backbone_state)
    for k in list(state_dict.keys()):
        if k.startswith("backbone."):
            if not k.startswith("backbone.fc"):
                # remove prefix
                state_dict[k[len("backbone."):]] = state_dict[k]
        del state_dict[k]
    log = model.load_state_dict(state_dict, strict=False)
    assert log.missing_keys == ["fc.weight", "fc.bias"]

    model.features.requires_grad_(False)
    parameters = list(filter(lambda p: p.requires_grad, model.parameters()))
    assert len(parameters) == 2  # fc.weight, fc.bias
    model.eval()
    with torch.no_grad():
        train_features = model.features(x_train)
        test_features = model.features(x_test)

    optimizer = torch.optim.Adam(parameters, lr=3e-2, weight_decay=1e-4)
    loader = DataLoader(TensorDataset(train_features, y_train), batch_size=64, shuffle=True)
    losses = []
    for _epoch in range(epochs):
        for xb, yb in loader:
            loss = F.cross_entropy(model.fc(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    with torch.no_grad():
        logits = model.fc(test_features)
        top1, top2 = accuracy(logits, y_test, topk=(1, 2))
    return model, losses, top1.item(), top2.item()


# -------------------------------------------------------------------- contrastive pretraining
x_train, y_train = make_textures(384, seed=1)
x_test, y_test = make_textures(256, seed=2)
batch_size, epochs = 32, 10
train_loader = DataLoader(TensorDataset(x_train, y_train), batch_size=batch_size, shuffle=True,
                          drop_last=True)

model = ResNetSimCLR(out_dim=32)
optimizer = LARS(model.parameters(), lr=1.0, weight_decay=1e-5, eta=0.05,
                 weight_decay_filter=exclude_bias_and_norm,
                 lars_adaptation_filter=exclude_bias_and_norm)
scheduler = CosineAnnealingLR(optimizer, T_max=epochs * len(train_loader), eta_min=0,
                              last_epoch=-1)
simclr = SimCLR(model, optimizer, scheduler, batch_size)
n_iter = simclr.train(train_loader, epochs)
losses, top1_history, lrs = simclr.losses, simclr.top1, simclr.lrs

# the backbone's features without the projection head: fc swapped for nn.Identity
encoder = ConvBackbone(num_classes=32)
encoder.fc = nn.Identity()
encoder.load_state_dict({k[len("backbone."):]: v for k, v in model.state_dict().items()
                         if not k.startswith("backbone.fc")}, strict=False)
knn_accuracy = knn_monitor(encoder, x_train, y_train, x_test, y_test)
random_encoder = ConvBackbone()
random_encoder.fc = nn.Identity()
random_knn_accuracy = knn_monitor(random_encoder, x_train, y_train, x_test, y_test)
print(f"kNN accuracy {knn_accuracy:.1f} (random backbone {random_knn_accuracy:.1f})")

checkpoint_dir = tempfile.mkdtemp()
checkpoint_path = os.path.join(checkpoint_dir, "checkpoint_0010.pth.tar")
torch.save({"epoch": epochs, "arch": "convnet", "state_dict": model.state_dict(),
            "optimizer": optimizer.state_dict()}, checkpoint_path)

# ------------------------------------------------------------------------- linear evaluation
checkpoint = torch.load(checkpoint_path, map_location="cpu", weights_only=False)
probe, probe_losses, probe_top1, probe_top2 = linear_probe(
    checkpoint["state_dict"], x_train, y_train, x_test, y_test)
random_state = ResNetSimCLR(out_dim=32).state_dict()
_, random_probe_losses, random_top1, _ = linear_probe(
    random_state, x_train, y_train, x_test, y_test)
print(f"linear probe: top1 {probe_top1:.1f} top2 {probe_top2:.1f} "
      f"(random backbone {random_top1:.1f})")

# ----------------------------------------------------------------- (recorded) fixed weights
torch.manual_seed(7)
fixed_model = ResNetSimCLR(out_dim=16)
fixed_views = ContrastiveLearningViewGenerator(TensorAugment(SIZE))(x_test[:8])
z = fixed_model(torch.cat(fixed_views, dim=0))
logits, labels = info_nce_loss(z, 8, temperature=0.5)
loss = F.cross_entropy(logits, labels)
loss_spijkervet = NT_Xent(8, 0.5)(z[:8], z[8:])
loss_masked = nt_xent_masked(z, 0.5)
top1, top5 = accuracy(logits, labels, topk=(1, 5))
loss.backward()
fixed_results = {
    "views": torch.stack(fixed_views).detach().clone(),
    "z": z.detach().clone(),
    "logits": logits.detach().clone(),
    "loss": loss.item(),
    "loss_spijkervet": loss_spijkervet.item(),
    "loss_masked": loss_masked.item(),
    "top1": top1.item(),
    "top5": top5.item(),
    "grads": {n: p.grad.clone() for n, p in fixed_model.named_parameters()},
}
fixed_opt = LARS(fixed_model.parameters(), lr=0.5, weight_decay=1e-4, eta=0.01,
                 weight_decay_filter=exclude_bias_and_norm,
                 lars_adaptation_filter=exclude_bias_and_norm)
fixed_opt.step()
fixed_model.zero_grad()
nt_xent_masked(fixed_model(torch.cat(fixed_views, dim=0)), 0.5).backward()
fixed_opt.step()
fixed_results["after_steps"] = {n: p.detach().clone() for n, p in fixed_model.named_parameters()}
fixed_results["momentum"] = {n: fixed_opt.state[p]["mu"].clone()
                             for n, p in fixed_model.named_parameters()}
fixed_sched = CosineAnnealingLR(LARS([nn.Parameter(torch.zeros(2))], lr=0.3), T_max=10,
                                eta_min=0.01)
schedule = []
for _ in range(12):
    schedule.append(fixed_sched.get_last_lr()[0])
    fixed_sched.optimizer.step()
    fixed_sched.step()
fixed_results["schedule"] = schedule
with torch.no_grad():
    bank = F.normalize(fixed_model.backbone.features(x_train[:40]), dim=1)
    query = F.normalize(fixed_model.backbone.features(x_test[:8]), dim=1)
    knn_labels, knn_scores = knn_predict(query, bank.t().contiguous(), y_train[:40], N_CLASSES,
                                         knn_k=5, knn_t=0.1)
fixed_results["knn_scores"] = knn_scores
fixed_results["knn_labels"] = knn_labels
