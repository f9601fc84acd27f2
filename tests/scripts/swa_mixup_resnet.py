# ruff: noqa: N812 (the usual F alias)
"""A small ResNet trained with mixup/CutMix, then averaged with SWA and an EMA, written for these
tests the way torchvision's ResNet, its classification reference scripts and the SWA tutorials
write torch code (not a copy of any):

- ``BasicBlock`` (3x3 convs, ``nn.BatchNorm2d``, ``nn.ReLU(inplace=True)``, a 1x1-conv +
  BatchNorm downsample shortcut, ``out += identity``), ``nn.AdaptiveAvgPool2d((1, 1))``,
  ``torch.flatten``; initialisation by ``nn.init.kaiming_normal_(mode="fan_out",
  nonlinearity="relu")``, BatchNorm gamma/beta by ``nn.init.constant_``, the last BN gamma of
  each block zeroed (``zero_init_residual``);
- a tiny synthetic image set (stripes, checkers and blobs) in a ``TensorDataset`` and
  ``DataLoader`` (shuffled with a seeded ``torch.Generator``);
- mixup (``torch.distributions.Beta``, ``torch.randperm``) and CutMix (a box from
  ``torch.randint`` cut by index assignment ``x[:, :, y1:y2, x1:x2] = x[index, ...]``, lambda
  corrected by the box's area), the mixed loss ``lam * ce(y_a) + (1 - lam) * ce(y_b)`` with
  ``nn.CrossEntropyLoss(label_smoothing=0.1)``, soft-target cross-entropy by hand
  (``-(targets * F.log_softmax).sum(-1)``) and with probability targets to the criterion;
- ``torch.optim.SGD(momentum, nesterov=True, weight_decay)`` with parameter groups (no decay on
  BatchNorm weights and biases), ``OneCycleLR`` (cycling the momentum), ``SequentialLR`` of
  ``LinearLR`` and ``CosineAnnealingLR``;
- ``torch.optim.swa_utils``: ``AveragedModel`` (the SWA mean, an EMA through
  ``multi_avg_fn=get_ema_multi_avg_fn`` with ``use_buffers=True``, an EMA through a plain
  ``avg_fn``), ``SWALR`` (cosine annealing), ``update_bn`` checked against a manual pass of
  forward pre-hooks;
- ``model.eval()`` accuracy under ``torch.no_grad()``; ``state_dict`` round trips of the
  averaged model and the optimizer through ``torch.save``/``torch.load`` on an ``io.BytesIO``.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import copy
import io
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn, update_bn
from jitgrad.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
fixed_results = {}

# ------------------------------------------------------------------------------- model


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


def conv1x1(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=4, width=8, zero_init_residual=True):
        super().__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = self._make_layer(block, width, layers[0])
        self.layer2 = self._make_layer(block, 2 * width, layers[1], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(2 * width * block.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, BasicBlock) and m.bn2.weight is not None:
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * block.expansion, stride),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer2(self.layer1(x))
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.fc(x)


def resnet_tiny(**kwargs):
    return ResNet(BasicBlock, [1, 1], **kwargs)


# -------------------------------------------------------------------------------- data

NUM_CLASSES, SIZE = 4, 12


def make_images(n, generator):
    """Four classes: horizontal stripes, vertical stripes, a checkerboard, a centred blob;
    random contrast, colour and phase, plus noise."""
    labels = torch.randint(0, NUM_CLASSES, (n,), generator=generator)
    r = torch.arange(SIZE, dtype=torch.float32)
    rows, cols = r[:, None].expand(SIZE, SIZE), r[None, :].expand(SIZE, SIZE)
    phase = torch.rand(n, 1, 1, generator=generator) * 2 * math.pi
    patterns = torch.stack([
        torch.sin(rows[None] * 1.6 + phase),
        torch.sin(cols[None] * 1.6 + phase),
        torch.sin(rows[None] * 1.6 + phase) * torch.sin(cols[None] * 1.6 + phase),
        torch.exp(-((rows - 5.5) ** 2 + (cols - 5.5) ** 2)[None] / 8.0).expand(n, -1, -1)
        * 2 - 0.5,
    ], dim=1)  # (n, 4, H, W)
    picked = patterns[torch.arange(n), labels]  # (n, H, W)
    colour = 0.5 + torch.rand(n, 3, 1, 1, generator=generator)
    images = colour * picked[:, None] + 1.2 * torch.randn(n, 3, SIZE, SIZE, generator=generator)
    return images, labels


data_gen = torch.Generator().manual_seed(1234)
train_x, train_y = make_images(256, data_gen)
test_x, test_y = make_images(128, data_gen)
mean = train_x.mean(dim=(0, 2, 3), keepdim=True)
std = train_x.std(dim=(0, 2, 3), keepdim=True)
train_x, test_x = (train_x - mean) / std, (test_x - mean) / std
train_set = TensorDataset(train_x, train_y)
train_loader = DataLoader(train_set, batch_size=32, shuffle=True,
                          generator=torch.Generator().manual_seed(7))
bn_loader = DataLoader(train_set, batch_size=48, shuffle=False)  # (the last batch has 16)
test_loader = DataLoader(TensorDataset(test_x, test_y), batch_size=64)

# ------------------------------------------------------------------------ mixup / cutmix


def mixup_data(x, y, alpha=0.4):
    lam = torch.distributions.Beta(torch.tensor([alpha]), torch.tensor([alpha])).sample().item()
    index = torch.randperm(x.size(0))
    mixed_x = lam * x + (1 - lam) * x[index, :]
    return mixed_x, y, y[index], lam


def rand_bbox(size, lam):
    H, W = size[2], size[3]
    cut_rat = math.sqrt(1.0 - lam)
    cut_w, cut_h = int(W * cut_rat), int(H * cut_rat)
    cx = torch.randint(W, (1,)).item()
    cy = torch.randint(H, (1,)).item()
    x1 = max(cx - cut_w // 2, 0)
    y1 = max(cy - cut_h // 2, 0)
    x2 = min(cx + cut_w // 2, W)
    y2 = min(cy + cut_h // 2, H)
    return x1, y1, x2, y2


def cutmix_data(x, y, alpha=1.0):
    lam = torch.distributions.Beta(torch.tensor(alpha), torch.tensor(alpha)).sample().item()
    index = torch.randperm(x.size(0))
    x = x.clone()
    x1, y1, x2, y2 = rand_bbox(x.size(), lam)
    x[:, :, y1:y2, x1:x2] = x[index, :, y1:y2, x1:x2]
    lam = 1 - ((x2 - x1) * (y2 - y1) / (x.size(-1) * x.size(-2)))
    return x, y, y[index], lam


def mixup_criterion(criterion, pred, y_a, y_b, lam):
    return lam * criterion(pred, y_a) + (1 - lam) * criterion(pred, y_b)


def soft_target_cross_entropy(logits, target):
    return torch.sum(-target * F.log_softmax(logits, dim=-1), dim=-1).mean()


def mixed_targets(y_a, y_b, lam, smoothing=0.1):
    off = smoothing / NUM_CLASSES
    one_a = F.one_hot(y_a, NUM_CLASSES).float() * (1 - smoothing) + off
    one_b = F.one_hot(y_b, NUM_CLASSES).float() * (1 - smoothing) + off
    return lam * one_a + (1 - lam) * one_b


criterion = nn.CrossEntropyLoss(label_smoothing=0.1)


def parameter_groups(model, weight_decay):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        if p.ndim <= 1 or name.endswith(".bias"):
            no_decay.append(p)
        else:
            decay.append(p)
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0}]


# ----------------------------------------------------- fixed-weight checks (recorded)

model = resnet_tiny()
fixed_results["conv1_init"] = model.conv1.weight.detach().clone()
fixed_results["fc_init"] = model.fc.weight.detach().clone()
zero_gamma = all(bool((b.bn2.weight == 0).all()) for b in (model.layer1[0], model.layer2[0]))
init_std = model.layer1[0].conv1.weight.std().item()  # ~ sqrt(2 / (8 * 9))

xb, yb = train_x[:8], train_y[:8]
# zero-init residual: the blocks start as identity + shortcut, so perturb the gammas to see them
with torch.no_grad():
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.weight.uniform_(0.5, 1.5)
            m.bias.uniform_(-0.2, 0.2)
model.train()
logits = model(xb)
loss = criterion(logits, yb)
loss.backward()
fixed_results["train_logits"] = logits.detach()
fixed_results["ce_loss"] = loss.item()
fixed_results["grads"] = {n: p.grad.clone() for n, p in model.named_parameters()
                          if n in ("conv1.weight", "layer1.0.bn2.weight",
                                   "layer2.0.downsample.0.weight", "fc.weight", "fc.bias")}
fixed_results["running_mean"] = model.layer2[0].bn1.running_mean.clone()
fixed_results["running_var"] = model.layer2[0].downsample[1].running_var.clone()
model.zero_grad()
model.eval()
with torch.no_grad():
    eval_logits = model(xb)
fixed_results["eval_logits"] = eval_logits

# mixup, cutmix and the soft-target losses on those logits
torch.manual_seed(3)
mx, ya, yb2, lam_mix = mixup_data(xb, yb)
cx_, ca, cb, lam_cut = cutmix_data(xb, yb)
fixed_results["mixup_x"] = mx
fixed_results["cutmix_x"] = cx_
fixed_results["mix_lams"] = [lam_mix, lam_cut]
fixed_results["mix_perm"] = [yb2, cb]
cut_changed = (cx_ != xb).any(dim=1)  # (B, H, W): the pasted box
box_rows = cut_changed.any(dim=0).any(dim=1).nonzero().flatten()
box_cols = cut_changed.any(dim=0).any(dim=0).nonzero().flatten()
mixed_loss = mixup_criterion(criterion, eval_logits, ya, yb2, lam_mix)
soft = mixed_targets(ya, yb2, lam_mix)
soft_loss = soft_target_cross_entropy(eval_logits, soft)
prob_target_loss = nn.CrossEntropyLoss()(eval_logits, soft)
fixed_results["mixed_losses"] = [mixed_loss.item(), soft_loss.item(), prob_target_loss.item()]
fixed_results["smoothed_prob_target_loss"] = criterion(
    eval_logits, F.one_hot(yb, NUM_CLASSES).float()).item()

# the learning-rate schedules on a dummy two-group optimizer
dummy = [nn.Parameter(torch.zeros(1)), nn.Parameter(torch.zeros(1))]
sched_opt = torch.optim.SGD([{"params": dummy[:1]}, {"params": dummy[1:], "lr": 0.05}],
                            lr=0.1, momentum=0.9)
warmup = torch.optim.lr_scheduler.LinearLR(sched_opt, start_factor=0.1, total_iters=3)
cosine = torch.optim.lr_scheduler.CosineAnnealingLR(sched_opt, T_max=7, eta_min=1e-4)
sequential = torch.optim.lr_scheduler.SequentialLR(sched_opt, [warmup, cosine], milestones=[3])
sequential_lrs = []
for _ in range(10):
    sequential_lrs.append([g["lr"] for g in sched_opt.param_groups])
    sched_opt.step()
    sequential.step()
fixed_results["sequential_lrs"] = sequential_lrs
fixed_results["sequential_last_lr"] = sequential.get_last_lr()

# ------------------------------------------------------------------------------ training

torch.manual_seed(0)
model = resnet_tiny()
epochs, swa_epochs = 6, 4
optimizer = torch.optim.SGD(parameter_groups(model, 5e-4), lr=0.05, momentum=0.9,
                            nesterov=True)
scheduler = torch.optim.lr_scheduler.OneCycleLR(
    optimizer, max_lr=0.2, total_steps=epochs * len(train_loader), pct_start=0.25,
    base_momentum=0.85, max_momentum=0.95)
losses, soft_losses, lrs, momentums = [], [], [], []


def train_step(images, labels, step):
    if step % 2 == 0:
        images, y_a, y_b, lam = mixup_data(images, labels)
    else:
        images, y_a, y_b, lam = cutmix_data(images, labels)
    out = model(images)
    loss = mixup_criterion(criterion, out, y_a, y_b, lam)
    with torch.no_grad():
        soft_losses.append(soft_target_cross_entropy(out, mixed_targets(y_a, y_b, lam)).item())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def evaluate(net):
    net.eval()
    correct = total = 0
    with torch.no_grad():
        for images, labels in test_loader:
            correct += (net(images).argmax(dim=1) == labels).sum().item()
            total += labels.numel()
    return correct / total


step = 0
for epoch in range(epochs):
    model.train()
    for images, labels in train_loader:
        losses.append(train_step(images, labels, step))
        lrs.append(scheduler.get_last_lr()[0])
        momentums.append(optimizer.param_groups[0]["momentum"])
        scheduler.step()
        step += 1
    print(f"epoch {epoch}: loss {sum(losses[-8:]) / 8:.4f}")
accuracy = evaluate(model)

# ---------------------------------------------------------------------- SWA and the EMAs

swa_model = AveragedModel(model)
ema_decay = 0.9
ema_model = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(ema_decay), use_buffers=True)
ema_fn_model = AveragedModel(
    model, avg_fn=lambda averaged, current, num_averaged: ema_decay * averaged
    + (1 - ema_decay) * current)
swa_scheduler = SWALR(optimizer, swa_lr=0.02, anneal_epochs=2, anneal_strategy="cos")
swa_snapshots, swa_lrs = [], []
manual_ema = None
for _ in range(swa_epochs):
    model.train()
    for images, labels in train_loader:
        losses.append(train_step(images, labels, step))
        step += 1
        ema_model.update_parameters(model)
        ema_fn_model.update_parameters(model)
        current = [t.detach().clone() for t in list(model.parameters()) + list(model.buffers())]
        if manual_ema is None:
            manual_ema = current
        else:
            manual_ema = [ema_decay * a + (1 - ema_decay) * c if a.is_floating_point()
                          else (a * ema_decay + c * (1 - ema_decay)).to(a.dtype)
                          for a, c in zip(manual_ema, current)]
    swa_model.update_parameters(model)
    swa_snapshots.append([p.detach().clone() for p in model.parameters()])
    swa_lrs.append([g["lr"] for g in optimizer.param_groups])
    swa_scheduler.step()
swa_mean = [torch.stack(ps).mean(dim=0) for ps in zip(*swa_snapshots)]
n_averaged = int(swa_model.n_averaged)

# the averaged model's buffers follow the model until update_bn recomputes them
buffers_synced = all(torch.equal(a, b) for a, b in zip(swa_model.module.buffers(),
                                                          model.buffers()))
accuracy_before_bn = evaluate(swa_model)
update_bn(bn_loader, swa_model)
swa_accuracy = evaluate(swa_model)
ema_accuracy = evaluate(ema_model)

# update_bn by hand: each BN's input over the loader in train mode, the mean of batch stats
manual = copy.deepcopy(swa_model.module)
batch_stats = {}


def record_input(name):
    def hook(module, args):
        (inp,) = args
        batch_stats.setdefault(name, []).append(
            (inp.mean(dim=(0, 2, 3)), inp.var(dim=(0, 2, 3), unbiased=True)))
    return hook


handles = [m.register_forward_pre_hook(record_input(n)) for n, m in manual.named_modules()
           if isinstance(m, nn.BatchNorm2d)]
manual.train()
with torch.no_grad():
    for images, _ in bn_loader:
        manual(images)
for h in handles:
    h.remove()
manual_bn = {n: (torch.stack([s[0] for s in stats]).mean(0),
                 torch.stack([s[1] for s in stats]).mean(0))
             for n, stats in batch_stats.items()}
swa_bn = {n: (m.running_mean.clone(), m.running_var.clone(), int(m.num_batches_tracked),
              m.momentum)
          for n, m in swa_model.module.named_modules() if isinstance(m, nn.BatchNorm2d)}

# --------------------------------------------------------------- state_dict round trips

buffer = io.BytesIO()
torch.save({"swa": swa_model.state_dict(), "optimizer": optimizer.state_dict()}, buffer)
buffer.seek(0)
checkpoint = torch.load(buffer)
restored = AveragedModel(resnet_tiny())
restored.load_state_dict(checkpoint["swa"])
restored_optimizer = torch.optim.SGD(parameter_groups(restored.module, 5e-4), lr=0.05,
                                     momentum=0.9, nesterov=True)
restored_optimizer.load_state_dict(checkpoint["optimizer"])
state_keys = sorted(checkpoint["swa"].keys())
swa_model.eval()
restored.eval()
with torch.no_grad():
    swa_logits = swa_model(test_x[:16])
    restored_logits = restored(test_x[:16])
momentum_buffers_equal = all(
    torch.equal(optimizer.state[p]["momentum_buffer"], restored_optimizer.state[q]
                ["momentum_buffer"])
    for p, q in zip(optimizer.param_groups[0]["params"],
                    restored_optimizer.param_groups[0]["params"]))



# resuming mid-anneal: the SWALR state goes into a checkpoint (loaded with torch.load's default
# weights_only) and a scheduler built with the other strategy takes it over
def swalr_lrs(scheduler, opt, steps):
    out = []
    for _ in range(steps):
        opt.step()
        scheduler.step()
        out.append(opt.param_groups[0]["lr"])
    return out


resume_opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.1)
resume_sched = SWALR(resume_opt, swa_lr=0.01, anneal_epochs=4, anneal_strategy="cos")
swalr_lrs(resume_sched, resume_opt, 2)
scheduler_buffer = io.BytesIO()
torch.save({"optimizer": resume_opt.state_dict(), "swa_scheduler": resume_sched.state_dict()},
           scheduler_buffer)
scheduler_buffer.seek(0)
continued_lrs = swalr_lrs(resume_sched, resume_opt, 3)
try:
    scheduler_checkpoint = torch.load(scheduler_buffer)
    scheduler_checkpoint_error = None
except Exception as error:  # (recorded: the tests assert that there is none)
    scheduler_checkpoint, scheduler_checkpoint_error = None, f"{type(error).__name__}: {error}"
resumed_lrs = None
if scheduler_checkpoint is not None:
    resumed_opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.5)
    resumed_sched = SWALR(resumed_opt, swa_lr=0.3, anneal_epochs=1, anneal_strategy="linear")
    resumed_opt.load_state_dict(scheduler_checkpoint["optimizer"])
    resumed_sched.load_state_dict(scheduler_checkpoint["swa_scheduler"])
    resumed_lrs = swalr_lrs(resumed_sched, resumed_opt, 3)

print(f"accuracy {accuracy:.3f}, swa {swa_accuracy:.3f} (before update_bn "
      f"{accuracy_before_bn:.3f}), ema {ema_accuracy:.3f}; loss {losses[0]:.3f} -> "
      f"{sum(losses[-8:]) / 8:.3f}")
