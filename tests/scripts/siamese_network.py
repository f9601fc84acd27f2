"""A siamese "same digit or not?" classifier on a shared residual backbone, written for these
tests in the way pytorch/examples' siamese_network is commonly written (modelled on the API usage
of pytorch/examples' siamese_network, not a copy of it):

- a narrow torchvision-style ResNet-18 written out (BasicBlock with ``out += identity``,
  ``ReLU(inplace=True)``, ``BatchNorm2d``, 1x1 downsample ``Sequential``, ``kaiming_normal_``
  with ``mode="fan_out"``, ``constant_``), its stem swapped for a 1-channel ``Conv2d`` and its
  head cut off via ``nn.Sequential(*list(children())[:-1])``;
- a pair ``Dataset`` over a synthetic MNIST-like set (uint8 ``data``, int64 ``targets``) drawing
  with Python's ``random`` and grouping with ``np.array(tensor, dtype=None, copy=None)``;
- ``Module.apply`` with ``xavier_uniform_`` and ``bias.data.fill_``, ``nn.Sigmoid`` +
  ``nn.BCELoss``, ``torch.where(cond, 1, 0)``, Adadelta with ``StepLR.get_last_lr``,
  ``torch.accelerator``, a state dict saved to and loaded from ``io.BytesIO``;
- a fixed-weight train-mode forward/backward (batch-norm statistics included) for torch.
"""
import io
import random

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.optim as optim
from jitgrad.optim.lr_scheduler import StepLR
from jitgrad.utils.data import DataLoader, Dataset


def conv3x3(cin, cout, stride=1):
    return nn.Conv2d(cin, cout, kernel_size=3, stride=stride, padding=1, bias=False)


class Residual(nn.Module):
    expansion = 1

    def __init__(self, cin, cout, stride=1, shortcut=None):
        super().__init__()
        self.conv_a, self.norm_a = conv3x3(cin, cout, stride), nn.BatchNorm2d(cout)
        self.conv_b, self.norm_b = conv3x3(cout, cout), nn.BatchNorm2d(cout)
        self.act = nn.ReLU(inplace=True)
        self.shortcut = shortcut

    def forward(self, x):
        skip = x if self.shortcut is None else self.shortcut(x)
        y = self.act(self.norm_a(self.conv_a(x)))
        y = self.norm_b(self.conv_b(y))
        y += skip
        return self.act(y)


class TinyResNet(nn.Module):
    """Stem, four one-block stages, global pooling and a linear classifier."""

    def __init__(self, widths=(8, 16, 32, 32), n_out=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, widths[0], kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        cin = widths[0]
        for k, w in enumerate(widths, start=1):
            stride = 1 if k == 1 else 2
            shortcut = None
            if stride != 1 or cin != w:
                shortcut = nn.Sequential(nn.Conv2d(cin, w, kernel_size=1, stride=stride,
                                                   bias=False), nn.BatchNorm2d(w))
            setattr(self, f"layer{k}", nn.Sequential(Residual(cin, w, stride, shortcut)))
            cin = w
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(cin * Residual.expansion, n_out)
        for mod in self.modules():
            if isinstance(mod, nn.Conv2d):
                nn.init.kaiming_normal_(mod.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(mod, nn.BatchNorm2d):
                nn.init.constant_(mod.weight, 1)
                nn.init.constant_(mod.bias, 0)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        for k in range(1, 5):
            x = getattr(self, f"layer{k}")(x)
        return self.fc(torch.flatten(self.avgpool(x), 1))


class SyntheticDigits:
    """16x16 uint8 images: one fixed pattern per class plus noise; classes cycle 0..9."""

    PATTERNS = np.random.default_rng(0).integers(0, 256, size=(10, 16, 16))

    def __init__(self, train=True):
        gen = np.random.default_rng(0 if train else 1)
        size = 256 if train else 64
        labels = np.arange(size) % 10
        noisy = self.PATTERNS[labels] + gen.normal(0, 25, size=(size, 16, 16))
        self.data = torch.from_numpy(np.clip(noisy, 0, 255).astype(np.uint8))
        self.targets = torch.from_numpy(labels.astype(np.int64))


class PairSet(Dataset):
    """Even index: two different images of one class (label 1); odd: two classes (label 0)."""

    def __init__(self, train):
        super().__init__()
        base = SyntheticDigits(train)
        self.data = base.data.unsqueeze(1).clone()
        labels = np.array(base.targets.clone(), dtype=None, copy=None)
        self.grouped_examples = {c: np.where(labels == c)[0] for c in range(10)}

    def __len__(self):
        return len(self.data)

    def _image(self, cls, avoid=None):
        members = self.grouped_examples[cls]
        pos = random.randint(0, len(members) - 1)
        while pos == avoid:
            pos = random.randint(0, len(members) - 1)
        return pos, self.data[members[pos]].clone().float()

    def __getitem__(self, index):
        first = random.randint(0, 9)
        pos, img_a = self._image(first)
        if index % 2 == 0:
            _, img_b = self._image(first, avoid=pos)
            return img_a, img_b, torch.tensor(1, dtype=torch.float)
        second = first
        while second == first:
            second = random.randint(0, 9)
        _, img_b = self._image(second)
        return img_a, img_b, torch.tensor(0, dtype=torch.float)


class Siamese(nn.Module):
    def __init__(self):
        super().__init__()
        trunk = TinyResNet()
        trunk.conv1 = nn.Conv2d(1, trunk.conv1.out_channels, kernel_size=(7, 7), stride=(2, 2),
                                padding=(3, 3), bias=False)
        self.fc_in_features = trunk.fc.in_features
        self.resnet = nn.Sequential(*list(trunk.children())[:-1])  # everything but the head
        self.fc = nn.Sequential(nn.Linear(2 * self.fc_in_features, 256), nn.ReLU(inplace=True),
                                nn.Linear(256, 1))
        self.sigmoid = nn.Sigmoid()
        self.resnet.apply(self._init)
        self.fc.apply(self._init)

    @staticmethod
    def _init(mod):
        if isinstance(mod, nn.Linear):
            nn.init.xavier_uniform_(mod.weight)
            mod.bias.data.fill_(0.01)

    def embed(self, img):
        feats = self.resnet(img)
        return feats.view(feats.size()[0], -1)

    def forward(self, left, right):
        both = torch.cat((self.embed(left), self.embed(right)), 1)
        return self.sigmoid(self.fc(both))


def run_epoch(net, loader, opt):
    net.train()
    bce = nn.BCELoss()
    for step, (a, b, same) in enumerate(loader):
        a, b, same = a.to(device), b.to(device), same.to(device)
        opt.zero_grad()
        loss = bce(net(a, b).squeeze(), same)
        loss.backward()
        opt.step()
        train_losses.append(loss.item())
        if step % 4 == 0:
            print(f"  batch {step}: bce {loss.item():.4f}")


def evaluate(net, loader):
    net.eval()
    bce = nn.BCELoss()
    total, right = 0.0, 0
    with torch.no_grad():
        for a, b, same in loader:
            a, b, same = a.to(device), b.to(device), same.to(device)
            p = net(a, b).squeeze()
            total += bce(p, same).sum().item()
            guess = torch.where(p > 0.5, 1, 0)
            right += guess.eq(same.view_as(guess)).sum().item()
    n = len(loader.dataset)
    test_results.append((total / n, right / n))
    print(f"test: loss {total / n:.4f}, accuracy {right}/{n}")


accel = torch.accelerator.is_available()
torch.manual_seed(1)
random.seed(1)
device = torch.accelerator.current_accelerator() if accel else torch.device("cpu")
extra = {"num_workers": 1, "pin_memory": True, "shuffle": True} if accel else {}
train_set, test_dataset = PairSet(train=True), PairSet(train=False)
train_loader = DataLoader(train_set, batch_size=32, **extra)
test_loader = DataLoader(test_dataset, batch_size=64, **extra)

model = Siamese().to(device)
optimizer = optim.Adadelta(model.parameters(), lr=1.0)
scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
train_losses, test_results = [], []
lrs = []  # the rate each epoch ran with
for epoch in range(5):
    print(f"epoch {epoch + 1}")
    run_epoch(model, train_loader, optimizer)
    evaluate(model, test_loader)
    lrs.append(scheduler.get_last_lr()[0])
    scheduler.step()

blob = io.BytesIO()
torch.save(model.state_dict(), blob)
blob.seek(0)
reloaded = Siamese()
reloaded.load_state_dict(torch.load(blob))
reloaded.eval()
img_a, img_b, label = test_dataset[0]
with torch.no_grad():
    one_pair = (img_a.unsqueeze(0), img_b.unsqueeze(0))
    reloaded_same = torch.equal(reloaded(*one_pair), model(*one_pair))
item_shapes = (tuple(img_a.shape), img_a.dtype, tuple(label.shape), label.dtype)
group_sizes = [len(idx) for idx in test_dataset.grouped_examples.values()]
backbone_children = [m.__class__.__name__ for m in model.resnet.children()]

# ---- fixed weights, train mode (batch norms use and update batch statistics) ----
fixed = Siamese()
with torch.no_grad():
    for j, w in enumerate(fixed.parameters()):
        ramp = torch.arange(w.numel(), dtype=torch.float32) * 0.77 + j
        w.copy_(torch.cos(ramp).view_as(w) * 0.2)
grid = torch.arange(1024, dtype=torch.float32)
left, right = torch.sin(grid).view(4, 1, 16, 16), torch.cos(grid * 0.3).view(4, 1, 16, 16)
scores = fixed(left, right).squeeze()
bce_fixed = nn.BCELoss()(scores, torch.tensor([1.0, 0.0, 1.0, 0.0]))
bce_fixed.backward()
fixed_out = scores.tolist()
fixed_loss = bce_fixed.item()
fixed_fc_grad = fixed.fc[0].weight.grad.tolist()
stem_norm = fixed.resnet[1]
fixed_running_mean = stem_norm.running_mean.tolist()
fixed_num_batches = stem_norm.num_batches_tracked.item()
fixed_lrs = lrs
